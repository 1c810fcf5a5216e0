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

__attribute__((noreturn)) void sc_reaper_main(long child);

void sc_reaper_main(long child)
{
	while (sc_sys4(SYS_wait4, child, 0, __WALL, 0) == -EINTR)
		;
	for (;;)
		sc_sys1(SYS_exit, 0);
}

/*
 * long reaper_clone(uint64_t stack, long child): the thread, on @stack,
 * reaping @child. It has the caller's registers but rax and rsp, so @child
 * travels in r9, which clone() does not take.
 */
long reaper_clone(uint64_t stack, long child);
__asm__(".text\n"
	".hidden reaper_clone\n"
	".type reaper_clone,@function\n"
	"reaper_clone:\n"
	"	mov %rsi, %r9\n"
	"	mov %rdi, %rsi\n"
	"	mov $0x350f00, %edi\n" /* VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|PARENT_SETTID|CHILD_CLEARTID */
	"	lea sc_reaper_tid(%rip), %rdx\n"
	"	mov %rdx, %r10\n"
	"	xor %r8d, %r8d\n"
	"	mov $56, %eax\n"        /* SYS_clone */
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 1f\n"
	"	mov %r9, %rdi\n"
	"	call sc_reaper_main\n"
	"1:	ret\n"
	".size reaper_clone, .-reaper_clone\n");

long sc_reaper_start(pid_t child)
{
	return reaper_clone((uint64_t)(uintptr_t)(reaper_stack + REAPER_STACK), child);
}
