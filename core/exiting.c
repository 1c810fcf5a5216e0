/* SPDX-License-Identifier: MIT */
/*
 * exiting.c - no checkpoint starts once the program is exiting.
 *
 * exit() runs the atexit handlers, then ends every thread at once: a
 * checkpoint that another thread (the interval or a signal trigger) began in
 * between would be cut off midway, its temporary image left behind. The
 * handler registered here marks the process as exiting, then waits for the
 * checkpoint under way; one that begins after the mark is refused. Handlers
 * run in the reverse order of registration, so this one runs after those the
 * program registers later, and a checkpoint they start is still waited for.
 *
 * A child made by fork() has none of its parent's checkpoints under way: the
 * state it copied is reset in it (checkpoint.c), and it waits only for its
 * own, as a process of the job.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/sc_exiting.h"
#include "format/sc_log.h"

static bool exiting;
static void (*wait_idle_fn)(void);
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void at_exit(void)
{
	void (*wait_idle)(void) = __atomic_load_n(&wait_idle_fn, __ATOMIC_ACQUIRE);

	__atomic_store_n(&exiting, true, __ATOMIC_SEQ_CST);
	if (wait_idle)
		wait_idle();
}

static void register_at_exit(void)
{
	if (atexit(at_exit))
		sc_log(SC_LOG_WARN, "cannot watch for the program's exit (%s): a checkpoint "
		       "under way at exit may leave its temporary file behind",
		       strerror(ENOMEM));
}

void sc_exiting_watch(void (*wait_idle)(void))
{
	void (*none)(void) = NULL;

	__atomic_compare_exchange_n(&wait_idle_fn, &none, wait_idle, false, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
	pthread_once(&once, register_at_exit);
}

bool sc_exiting(void)
{
	return __atomic_load_n(&exiting, __ATOMIC_SEQ_CST);
}

int sc_exiting_refuse(const char *path)
{
	if (!sc_exiting())
		return 0;
	sc_log(SC_LOG_INFO, "no checkpoint to '%s': the program is exiting", path);
	return sc_err_quiet(ECANCELED, "no checkpoint to '%s': the program is exiting", path);
}
