/* SPDX-License-Identifier: MIT */
/*
 * interpose.c - the signal calls as the program sees them while the library
 * is preloaded or linked as a shared library.
 *
 * The stop signal (SELFCKPT_STOP_SIGNAL) is the library's: a thread that
 * blocks it can never be stopped for a checkpoint. So it is kept unblocked
 * underneath what the program asks: sigprocmask(), pthread_sigmask(),
 * sigsuspend() and the masks of sigaction() never block it, and a thread that
 * asked to block it is told that it is blocked. An action the program sets
 * for it is kept by the library and run for every instance of the signal that
 * a checkpoint did not send (stop_rt.c).
 *
 * Trigger signals are the program's to take: its action replaces ours, as it
 * would without the library, with a warning once per signal that
 * checkpointing on it is now up to the program. The warning goes through
 * sc_log(), whose formatting is not promised to be async-signal-safe: a
 * program that sets a trigger signal's action from inside a signal handler
 * takes that risk, once per signal.
 *
 * Built into the shared library only: in a static link these definitions
 * would meet the C library's own.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "core/core_internal.h"
#include "core/sc_trigger.h"
#include "core/trigger_internal.h"
#include "selfckpt_errors.h"

typedef int sigaction_fn(int, const struct sigaction *, struct sigaction *);
typedef void (*handler_fn)(int);
typedef handler_fn signal_fn(int, handler_fn);
typedef int sigmask_fn(int, const sigset_t *, sigset_t *);
typedef int sigsuspend_fn(const sigset_t *);

static sigaction_fn *next_sigaction;
static signal_fn *next_signal;
static sigmask_fn *next_sigprocmask, *next_pthread_sigmask;
static sigsuspend_fn *next_sigsuspend;
static int stop_sig;

/* The program's view of the stop signal: its action, and whether this thread blocks it. */
static struct sigaction program_action = { .sa_handler = SIG_DFL };
static __thread int program_blocks;

/* Early, while one thread runs: dlsym() is no call for a signal handler. */
__attribute__((constructor)) static void resolve(void)
{
	if (!next_sigaction)
		next_sigaction = (sigaction_fn *)dlsym(RTLD_NEXT, "sigaction");
	if (!next_signal)
		next_signal = (signal_fn *)dlsym(RTLD_NEXT, "signal");
	if (!next_sigprocmask)
		next_sigprocmask = (sigmask_fn *)dlsym(RTLD_NEXT, "sigprocmask");
	if (!next_pthread_sigmask)
		next_pthread_sigmask = (sigmask_fn *)dlsym(RTLD_NEXT, "pthread_sigmask");
	if (!next_sigsuspend)
		next_sigsuspend = (sigsuspend_fn *)dlsym(RTLD_NEXT, "sigsuspend");
	if (!stop_sig)
		stop_sig = sc_stop_signal();
}

/* @set without the stop signal, in @copy; @set itself when it does not hold it. */
static const sigset_t *without_stop(const sigset_t *set, sigset_t *copy)
{
	if (!set || !sigismember(set, stop_sig))
		return set;
	*copy = *set;
	sigdelset(copy, stop_sig);
	return copy;
}

/* Keep the program's wish for the stop signal, and show it in @old. */
static void track_mask(int how, const sigset_t *set, sigset_t *old, int was_blocked)
{
	if (old && was_blocked)
		sigaddset(old, stop_sig);
	if (!set)
		return;
	if (how == SIG_SETMASK)
		program_blocks = sigismember(set, stop_sig);
	else if (sigismember(set, stop_sig))
		program_blocks = how == SIG_BLOCK;
}

/* Both return 0 on success: sigprocmask() -1 and errno, pthread_sigmask() the error. */
static int masked(sigmask_fn *next, int how, const sigset_t *set, sigset_t *old)
{
	int was = program_blocks, ret;
	sigset_t copy;

	ret = next(how, without_stop(set, &copy), old);
	if (ret == 0)
		track_mask(how, set, old, was);
	return ret;
}

SELFCKPT_API int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	resolve();
	if (!next_sigprocmask) {
		errno = ENOSYS;
		return -1;
	}
	return masked(next_sigprocmask, how, set, old);
}

SELFCKPT_API int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	resolve();
	return next_pthread_sigmask ? masked(next_pthread_sigmask, how, set, old) : ENOSYS;
}

SELFCKPT_API int sigsuspend(const sigset_t *mask)
{
	sigset_t copy;

	resolve();
	if (!next_sigsuspend) {
		errno = ENOSYS;
		return -1;
	}
	return next_sigsuspend(without_stop(mask, &copy));
}

static void chain_program_action(void)
{
	struct sc_stop_chain c = { NULL };
	handler_fn h = program_action.sa_handler;

	if (program_action.sa_flags & SA_SIGINFO)
		c.handler = program_action.sa_sigaction;
	else if (h != SIG_DFL && h != SIG_IGN)
		c.handler = (void (*)(int, siginfo_t *, void *))(void (*)(void))h;
	sc_stop_chain_set(&c);
}

/* The program sets the stop signal's action: the library keeps it, and its own handler stays. */
static int stop_signal_action(const struct sigaction *act, struct sigaction *old)
{
	struct sigaction prev = program_action;
	int err = act ? sc_stop_handler_install() : 0;

	if (err < 0) {
		errno = -err < 4096 ? -err : EINVAL;
		return -1;
	}
	if (act) {
		program_action = *act;
		chain_program_action();
	}
	if (old)
		*old = prev;
	return 0;
}

SELFCKPT_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction copy;
	int ret;

	resolve();
	if (!next_sigaction) {
		errno = ENOSYS;
		return -1;
	}
	if (sig == stop_sig && (!act || act->sa_sigaction != sc_stop_handler))
		return stop_signal_action(act, old);
	if (act && sigismember(&act->sa_mask, stop_sig)) {
		copy = *act;
		sigdelset(&copy.sa_mask, stop_sig);
		act = &copy;
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
	struct sigaction act = { .sa_handler = handler, .sa_flags = SA_RESTART }, old;
	handler_fn ret;

	resolve();
	if (sig == stop_sig)
		return stop_signal_action(&act, &old) ? SIG_ERR : old.sa_handler;
	if (!next_signal) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	ret = next_signal(sig, handler);
	if (ret != SIG_ERR)
		sc_trigger_note_action(sig, handler);
	return ret;
}
