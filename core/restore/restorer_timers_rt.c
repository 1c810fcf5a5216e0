/* SPDX-License-Identifier: MIT */
/*
 * restorer_timers_rt.c - the restorer blob makes the process's timers again.
 *
 * Stage contract: runs in the blob (restorer_rt.c) once the memory, the
 * signal actions and every thread are back, with every signal blocked; raw
 * system calls only, position-independent, no data of its own. Stage 1
 * checked that each timer is possible here (restore_timers.c). A timer armed
 * here has the time it had left at the checkpoint: the time the process did
 * not exist does not count. A signal it raises before the program runs waits,
 * blocked, until the threads' own masks are back.
 */
#include "core/restore/restorer.h"
#include "core/sc_sys.h"

#define PR_TIMER_CREATE_RESTORE_IDS_ 77
#define SIGEV_THREAD_ID_ 4
#define EEXIST_ 17

/* The kernel's struct sigevent. */
struct kernel_sigevent {
	uint64_t value;
	int32_t signo, notify;
	int32_t tid;
	int32_t pad[11];
};

/* Make timer @t where the kernel takes a chosen id. */
static long make_with_id(const struct sc_timer_args *t, struct kernel_sigevent *ev)
{
	int32_t id = t->id;
	long r = sc_sys3(SYS_timer_create, t->clock, (long)ev, (long)&id);

	return r < 0 ? r : id;
}

/* Elsewhere: ids come one after the other; make and delete timers until @t's comes. */
static long make_by_walk(const struct sc_timer_args *t, struct kernel_sigevent *ev)
{
	for (;;) {
		int32_t id = -1;
		long r = sc_sys3(SYS_timer_create, t->clock, (long)ev, (long)&id);

		if (r < 0)
			return r;
		if (id == t->id)
			return id;
		sc_sys1(SYS_timer_delete, id);
		if (id > t->id)
			return -EEXIST_; /* the kernel's next id had passed it */
	}
}

static long make_one(const struct sc_restorer_args *a, const struct sc_timer_args *t)
{
	struct kernel_sigevent ev = { .value = t->value, .signo = t->signo,
				      .notify = t->notify };
	struct { int64_t interval[2], value[2]; } its = {
		{ t->interval[0], t->interval[1] }, { t->left[0], t->left[1] } };
	long r;

	if (t->notify & SIGEV_THREAD_ID_)
		ev.tid = (uint32_t)t->thread == a->self ? (int32_t)sc_gettid()
							 : a->threads[t->thread].new_tid;
	r = a->timer_restore_ids ? make_with_id(t, &ev) : make_by_walk(t, &ev);
	if (r < 0 || (!t->left[0] && !t->left[1]))
		return r;
	return sc_sys4(SYS_timer_settime, t->id, 0, (long)&its, 0);
}

long sc_restorer_timers(struct sc_restorer_args *a, int32_t *failed)
{
	long r = 0;

	for (int which = 0; which < 3 && r >= 0; which++)
		if (a->itimers[which][2] || a->itimers[which][3])
			r = sc_sys3(SYS_setitimer, which, (long)a->itimers[which], 0);
	if (r < 0) {
		*failed = -1;
		return r;
	}
	if (a->timer_restore_ids && a->n_timers)
		r = sc_sys5(SYS_prctl, PR_TIMER_CREATE_RESTORE_IDS_, 1, 0, 0, 0);
	for (uint32_t i = 0; i < a->n_timers && r >= 0; i++) {
		r = make_one(a, &a->timers[i]);
		*failed = a->timers[i].id;
	}
	if (a->timer_restore_ids && a->n_timers)
		sc_sys5(SYS_prctl, PR_TIMER_CREATE_RESTORE_IDS_, 0, 0, 0, 0);
	return r < 0 ? r : 0;
}
