/* SPDX-License-Identifier: MIT */
/*
 * restore_timers.c - the timers of the image, before the point of no return:
 * is every POSIX timer possible here with its id, clock and target thread,
 * and the blob's arguments that make them again (restorer_timers_rt.c).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/restore/restore_internal.h"
#include "format/sc_log.h"

#ifndef PR_TIMER_CREATE_RESTORE_IDS
#define PR_TIMER_CREATE_RESTORE_IDS 77
#define PR_TIMER_CREATE_RESTORE_IDS_OFF 0
#define PR_TIMER_CREATE_RESTORE_IDS_ON 1
#endif

/* Without a chosen id, the blob makes and deletes timers until the id comes: so many at most. */
#define ID_WALK_MAX 65536

static int thread_index(const struct image *im, int32_t tid)
{
	for (size_t i = 0; i < im->n_threads; i++)
		if (im->threads[i].tid == tid)
			return (int)i;
	return -1;
}

/* With chosen ids: make each timer once, on its clock, and delete it. */
static int try_each(const struct image *im)
{
	struct sigevent ev = { .sigev_notify = SIGEV_NONE };
	int err = 0;

	if (prctl(PR_TIMER_CREATE_RESTORE_IDS, PR_TIMER_CREATE_RESTORE_IDS_ON, 0, 0, 0) < 0)
		return sc_err(SELFCKPT_EHOST, "cannot ask for chosen POSIX timer ids: %s",
			      strerror(errno));
	for (uint32_t i = 0; !err && i < im->timers.n; i++) {
		const struct sc_timer *t = &im->timers.t[i];
		int id = t->id;

		if (syscall(SYS_timer_create, t->clock, &ev, &id) < 0)
			err = sc_err(SELFCKPT_EHOST, "'%s' has POSIX timer %d on clock %d, which "
				     "this system cannot make: %s", im->path, t->id, t->clock,
				     strerror(errno));
		else
			syscall(SYS_timer_delete, id);
	}
	prctl(PR_TIMER_CREATE_RESTORE_IDS, PR_TIMER_CREATE_RESTORE_IDS_OFF, 0, 0, 0);
	return err;
}

int sc_timers_probe(const struct image *im, bool *restore_ids)
{
	const struct sc_timers *s = &im->timers;

	*restore_ids = false;
	for (uint32_t i = 0; i < s->n; i++)
		if ((s->t[i].notify & SC_TIMER_THREAD_ID) && thread_index(im, s->t[i].tid) < 0)
			return sc_err(SELFCKPT_ELENGTH, "POSIX timer %d of '%s' signals thread %d, "
				      "which has no thread record", s->t[i].id, im->path,
				      s->t[i].tid);
	if (!s->n)
		return 0;
	if (prctl(PR_TIMER_CREATE_RESTORE_IDS, PR_TIMER_CREATE_RESTORE_IDS_OFF, 0, 0, 0) == 0) {
		*restore_ids = true;
		return try_each(im);
	}
	if (s->t[s->n - 1].id >= ID_WALK_MAX)
		return sc_err(SELFCKPT_EHOST, "'%s' has POSIX timer %d; this kernel cannot make a "
			      "timer with a chosen id (PR_TIMER_CREATE_RESTORE_IDS, Linux 6.16), "
			      "and making timers until that id comes is done only below %d",
			      im->path, s->t[s->n - 1].id, ID_WALK_MAX);
	sc_log(SC_LOG_DEBUG, "restore: POSIX timer ids come by making timers until each comes");
	return 0;
}

static void to_timeval(const struct sc_itimer *it, int64_t *v)
{
	uint64_t us = (it->interval.nsec + 999) / 1000;

	v[0] = (int64_t)it->interval.sec + (us >= 1000000);
	v[1] = (int64_t)(us % 1000000);
	us = (it->value.nsec + 999) / 1000;
	v[2] = (int64_t)it->value.sec + (us >= 1000000);
	v[3] = (int64_t)(us % 1000000);
}

void sc_timers_fill(const struct image *im, struct sc_restorer_args *a, struct sc_timer_args *t)
{
	const struct sc_timers *s = &im->timers;

	for (int i = 0; i < SC_ITIMERS; i++)
		to_timeval(&s->it[i], a->itimers[i]);
	for (uint32_t i = 0; i < s->n; i++) {
		const struct sc_timer *r = &s->t[i];

		t[i] = (struct sc_timer_args){
			.id = r->id, .clock = r->clock, .notify = (int32_t)r->notify,
			.signo = (int32_t)r->signo, .value = r->value, .thread = -1,
			.left = { (int64_t)r->left.sec, (int64_t)r->left.nsec },
			.interval = { (int64_t)r->interval.sec, (int64_t)r->interval.nsec } };
		if (r->notify & SC_TIMER_THREAD_ID)
			t[i].thread = thread_index(im, r->tid);
	}
	a->timers = t;
	a->n_timers = s->n;
}
