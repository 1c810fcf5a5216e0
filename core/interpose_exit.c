/* SPDX-License-Identifier: MIT */
/*
 * interpose_exit.c - _exit() and _Exit() as the program sees them while the
 * library is loaded: they wait for the checkpoint this process is writing.
 *
 * exit() waits for it already, in its atexit handler (exiting.c). A process
 * that ends by _exit() (a shell's subshell, os._exit() in Python, a child
 * after fork()) skips the handlers: ended while its image of a job's
 * checkpoint is written, it would take that image with it, and the job's
 * checkpoint would fail. The thread that writes the image never waits for
 * itself (a held checkpoint ends the program from that thread).
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "core/core_internal.h"
#include "core/sc_exiting.h"
#include "selfckpt.h"

static __attribute__((noreturn)) void end(int status)
{
	sc_checkpoint_wait_idle();
	for (;;)
		syscall(SYS_exit_group, status);
}

SELFCKPT_API void _exit(int status)
{
	end(status);
}

SELFCKPT_API void _Exit(int status)
{
	end(status);
}
