/* SPDX-License-Identifier: MIT */
/*
 * trigger_rt.c - the handler of the trigger signals.
 *
 * Stage contract: a signal handler, run in whatever thread the kernel picks
 * (never the checkpoint thread, which blocks these signals), interrupting
 * anything, malloc and stdio included. sc_trigger.sig_soon and sig_now are set
 * before the handler is installed. It records the request in static memory and
 * wakes the checkpoint thread with a raw futex call: no libc, no locks, and no
 * errno (the raw call does not touch it, so the interrupted code finds its own).
 */
#include <stddef.h>

#include "core/job.h"
#include "core/sc_sys.h"
#include "core/trigger_internal.h"

struct sc_trigger sc_trigger;

/* A request queued (SI_QUEUE) with @magic in the top bits of its value: the job's. */
static int is_job(const siginfo_t *info, uint64_t magic)
{
	uint64_t v = (uint64_t)(uintptr_t)info->si_value.sival_ptr;

	return info->si_code == SI_QUEUE && (v >> 48) == magic;
}

void sc_trigger_handler(int sig, siginfo_t *info, void *uc)
{
	unsigned bit = sig == sc_trigger.sig_now ? SC_TRIGGER_NOW : SC_TRIGGER_SOON;

	(void)uc;
	if (info && is_job(info, SC_JOB_MAGIC)) { /* the coordinator asks to join (job.c) */
		sc_trigger.join_from = info->si_pid;
		__atomic_store_n(&sc_trigger.join, (uint64_t)(uintptr_t)info->si_value.sival_ptr,
				 __ATOMIC_RELEASE);
		bit = SC_TRIGGER_JOIN;
	} else if (info && is_job(info, SC_JOB_SAVE_MAGIC)) { /* job_save.c */
		__atomic_store_n(&sc_trigger.save, (uint64_t)(uintptr_t)info->si_value.sival_ptr,
				 __ATOMIC_RELEASE);
		bit = SC_TRIGGER_SAVE;
	}

	__atomic_or_fetch(&sc_trigger.pending, bit, __ATOMIC_RELEASE);
	__atomic_add_fetch(&sc_trigger.seq, 1, __ATOMIC_RELEASE);
	sc_futex_wake(&sc_trigger.seq, 1);
}
