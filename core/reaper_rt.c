/* SPDX-License-Identifier: MIT */
/*
 * reaper_rt.c - a thread that waits for the snapshot process to end (snapshot.c).
 *
 * Stage contract: a raw thread of this process, made by clone() without glibc,
 * so that no thread stack is mapped for it and the process's memory map is
 * the same before and after it ran. Its stack is this file's own memory. It
 * has every signal blocked and the TLS register of the thread that made it,
 * which it must never use: raw system calls only, no errno, no libc. It waits
 * for one child and exits; the kernel then zeroes sc_reaper_tid and wakes
 * whoever waits on it (CLONE_CHILD_CLEARTID).
 */
#include <errno.h>
#include <sys/wait.h>

#include "core/core_internal.h"
#include "core/sc_sys.h"

#define REAPER_STACK 16384

int sc_reaper_tid;
static uint8_t reaper_stack[REAPER_STACK] __attribute__((aligned(64)));

__attribute__((noreturn)) static void reap(void *child)
{
	while (sc_sys4(SYS_wait4, (long)(intptr_t)child, 0, __WALL, 0) == -EINTR)
		;
	for (;;)
		sc_sys1(SYS_exit, 0);
}

long sc_reaper_start(pid_t child)
{
	return sc_raw_thread(SC_RAW_THREAD_CLONE, (uint64_t)(uintptr_t)(reaper_stack + REAPER_STACK),
			     &sc_reaper_tid, reap, (void *)(intptr_t)child);
}
