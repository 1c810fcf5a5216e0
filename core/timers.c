/* SPDX-License-Identifier: MIT */
/*
 * timers.c - the checkpoint's side of the timers, in ordinary libc: room for
 * the instant (timers_rt.c reads them there), and the refusal of timers that
 * cannot come back, named, before any image is written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/sc_timers.h"
#include "format/sc_log.h"

#define TIMERS_FILE "/proc/self/timers"
#define SPARE_TIMERS 64  /* timers the program may make before its threads stop */
#define TEXT_PER_TIMER 160 /* bytes of TIMERS_FILE per timer, with room for longer lines */

int sc_timers_empty(const struct sc_timers *s)
{
	for (int i = 0; i < SC_ITIMERS; i++)
		if (s->it[i].value.sec || s->it[i].value.nsec)
			return 0;
	return s->n == 0;
}

int sc_timer_clock_ok(int32_t clock)
{
	switch (clock) {
	case CLOCK_REALTIME:
	case CLOCK_MONOTONIC:
	case CLOCK_PROCESS_CPUTIME_ID:
	case CLOCK_BOOTTIME:
	case CLOCK_REALTIME_ALARM:
	case CLOCK_BOOTTIME_ALARM:
	case CLOCK_TAI:
		return 1;
	default:
		return 0; /* a thread's CPU clock, or another process's */
	}
}

/* How many POSIX timers the process has now: "ID:" lines; -errno. */
static int count_timers(void)
{
	char buf[4096];
	int fd = open(TIMERS_FILE, O_RDONLY | O_CLOEXEC), n = 0;
	ssize_t got;
	char last = '\n';

	if (fd < 0)
		return -errno;
	while ((got = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < got; last = buf[i++])
			n += last == '\n' && buf[i] == 'I';
	close(fd);
	return got < 0 ? -errno : n;
}

int sc_timers_prepare(struct sc_timers_frozen *z)
{
	int n = count_timers();

	memset(z, 0, sizeof(*z));
	z->err_id = -1;
	if (n < 0) {
		/* A kernel built without it: the itimers are still saved. */
		sc_log(SC_LOG_WARN, "cannot read '%s' (%s): the process's POSIX timers, if it "
		       "has any, are not saved", TIMERS_FILE, strerror(-n));
		return 0;
	}
	z->cap = (uint32_t)n + SPARE_TIMERS;
	if (z->cap > SC_TIMERS_MAX)
		z->cap = SC_TIMERS_MAX;
	z->text_size = (long)z->cap * TEXT_PER_TIMER + 4096;
	z->timers.t = calloc(z->cap, sizeof(*z->timers.t));
	z->text = malloc((size_t)z->text_size);
	if (!z->timers.t || !z->text) {
		sc_timers_frozen_free(z);
		return sc_err(ENOMEM, "out of memory preparing room for %u POSIX timers", z->cap);
	}
	return 0;
}

void sc_timers_frozen_free(struct sc_timers_frozen *z)
{
	free(z->timers.t);
	free(z->text);
	z->timers.t = NULL;
	z->text = NULL;
	z->cap = 0;
	z->timers.n = 0;
}

static int instant_error(const struct sc_timers_frozen *z)
{
	if (z->err == -E2BIG)
		return sc_err(E2BIG, "the process has more POSIX timers than the %u a checkpoint "
			      "can take (at most %d)", z->cap, SC_TIMERS_MAX);
	if (z->err_id >= 0)
		return sc_err(-z->err, "cannot read POSIX timer %d at the instant of the "
			      "snapshot: %s", z->err_id, strerror(-z->err));
	return sc_err(-z->err, "cannot read '%s' at the instant of the snapshot: %s",
		      TIMERS_FILE, strerror(-z->err));
}

static int has_tid(const int32_t *tids, int n, int32_t tid)
{
	for (int i = 0; i < n; i++)
		if (tids[i] == tid)
			return 1;
	return 0;
}

int sc_timers_check(const struct sc_timers_frozen *z, const int32_t *tids, int n_tids)
{
	if (z->err)
		return instant_error(z);
	for (uint32_t i = 0; i < z->timers.n; i++) {
		const struct sc_timer *t = &z->timers.t[i];
		uint32_t how = t->notify & ~(uint32_t)SC_TIMER_THREAD_ID;

		if (!sc_timer_clock_ok(t->clock))
			return sc_err(SELFCKPT_EHOST, "POSIX timer %d counts the CPU time of one "
				      "thread or of another process (clock %d), which cannot come "
				      "back after a restore", t->id, t->clock);
		if (how == SC_TIMER_THREAD || (how == SC_TIMER_NONE && t->notify != how))
			return sc_err(SELFCKPT_EHOST, "POSIX timer %d notifies in a way that "
				      "cannot come back (sigev_notify %u)", t->id, t->notify);
		if ((t->notify & SC_TIMER_THREAD_ID) && !has_tid(tids, n_tids, t->tid))
			return sc_err(SELFCKPT_EHOST, "POSIX timer %d signals thread %d, which is "
				      "not a thread of the process", t->id, t->tid);
	}
	return 0;
}
