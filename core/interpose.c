/* SPDX-License-Identifier: MIT */
/*
 * interpose.c - sigaction() and signal() as the program sees them while the
 * library is preloaded: the C library's, plus a warning when the program sets
 * the action of a trigger signal.
 *
 * The program's action replaces ours, as it would without the library: the
 * program asked for it, and a program that saves the old action and chains to
 * it keeps checkpointing. The warning says once per signal that checkpointing
 * on it is now up to the program, and how to pick another signal.
 *
 * The warning goes through sc_log(), whose formatting is not promised to be
 * async-signal-safe: a program that sets a trigger signal's action from inside
 * a signal handler takes that risk, once per signal.
 *
 * Built into the shared library only: in a static link these definitions
 * would meet the C library's own.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>

#include "core/trigger_internal.h"
#include "selfckpt_errors.h"

typedef int sigaction_fn(int, const struct sigaction *, struct sigaction *);
typedef void (*handler_fn)(int);
typedef handler_fn signal_fn(int, handler_fn);

static sigaction_fn *next_sigaction;
static signal_fn *next_signal;

/* Early, while one thread runs: dlsym() is no call for a signal handler. */
__attribute__((constructor)) static void resolve(void)
{
	if (!next_sigaction)
		next_sigaction = (sigaction_fn *)dlsym(RTLD_NEXT, "sigaction");
	if (!next_signal)
		next_signal = (signal_fn *)dlsym(RTLD_NEXT, "signal");
}

SELFCKPT_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int ret;

	resolve();
	if (!next_sigaction) {
		errno = ENOSYS;
		return -1;
	}
	ret = next_sigaction(sig, act, old);
	if (ret == 0 && act)
		sc_trigger_note_action(sig, act->sa_flags & SA_SIGINFO
						    ? (handler_fn)(void (*)(void))act->sa_sigaction
						    : act->sa_handler);
	return ret;
}

SELFCKPT_API handler_fn signal(int sig, handler_fn handler)
{
	handler_fn ret;

	resolve();
	if (!next_signal) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	ret = next_signal(sig, handler);
	if (ret != SIG_ERR)
		sc_trigger_note_action(sig, handler);
	return ret;
}
