/* SPDX-License-Identifier: MIT */
/*
 * sc_timers.h - the process's timers across a checkpoint: the three interval
 * timers (setitimer, alarm) and every POSIX timer (timer_create). They are
 * read at the instant of the snapshot (timers_rt.c), written as the timers
 * record (spec §9.10, timers_record.c) and made again by the restorer, each
 * POSIX timer with its old id, armed with the time it had left.
 */
#ifndef SC_TIMERS_H
#define SC_TIMERS_H

#include <stdint.h>

#include "format/sc_format.h"

#define SC_ITIMERS 3         /* ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF */
#define SC_TIMERS_MAX 4096   /* POSIX timers a checkpoint takes, and a record may hold */

/* How a POSIX timer tells its expiry: the kernel's sigev_notify values. */
#define SC_TIMER_SIGNAL 0    /* SIGEV_SIGNAL: a signal to the process */
#define SC_TIMER_NONE 1      /* SIGEV_NONE: nothing; timer_gettime() only */
#define SC_TIMER_THREAD 2    /* SIGEV_THREAD as the kernel sees it: never restored */
#define SC_TIMER_THREAD_ID 4 /* SIGEV_THREAD_ID: a signal to one thread */

struct sc_time {
	uint64_t sec, nsec;
};

struct sc_itimer {
	struct sc_time value, interval; /* value 0: disarmed */
};

struct sc_timer {
	int32_t id;
	int32_t clock;     /* the clock id timer_create() was given */
	uint32_t notify;   /* SC_TIMER_* */
	uint32_t signo;
	uint64_t value;    /* sigev_value */
	int32_t tid;       /* SC_TIMER_THREAD_ID: the target thread's id at the checkpoint */
	int32_t overrun;   /* timer_getoverrun() at the instant */
	struct sc_time left, interval; /* timer_gettime(); left 0: disarmed */
};

struct sc_timers {
	struct sc_itimer it[SC_ITIMERS];
	struct sc_timer *t; /* ascending ids */
	uint32_t n;
};

/** sc_timers_empty() - nothing to restore: no POSIX timer and no armed itimer. */
int sc_timers_empty(const struct sc_timers *s);

/** sc_timer_clock_ok() - can a timer on @clock come back (not a thread's CPU clock)? */
int sc_timer_clock_ok(int32_t clock);

/* timers_record.c */
/** sc_timers_write() - write @s as a timers record (REQUIRED). Return: 0 or an error. */
int sc_timers_write(struct sc_writer *w, const struct sc_timers *s);
/**
 * sc_timers_read() - decode and check a timers record into @s (R-TYP-16 to
 * R-TYP-18); sc_timers_free() releases it. Return: 0 or an error (reported).
 */
int sc_timers_read(struct sc_reader *r, const struct sc_record *rec, struct sc_timers *s);
void sc_timers_free(struct sc_timers *s);

/* The timers at the instant of the snapshot. */
struct sc_timers_frozen {
	struct sc_timers timers; /* timers.t prepared with room for cap entries */
	uint32_t cap;
	char *text;              /* /proc/self/timers, read at the instant */
	long text_size;
	int err;                 /* 0, or -errno of the first failure at the instant */
	int err_id;              /* the timer it concerns, or -1 */
};

/* timers.c */
/**
 * sc_timers_prepare() - room in @z for the POSIX timers this process has, and
 * more. Ordinary libc: call it before the threads stop.
 * Return: 0 or a negative error (reported).
 */
int sc_timers_prepare(struct sc_timers_frozen *z);
void sc_timers_frozen_free(struct sc_timers_frozen *z);
/**
 * sc_timers_check() - refuse (reported) what cannot come back: a failure at the
 * instant, a timer on a thread's CPU clock, a notification this version does
 * not restore, a target thread that is not among the @n_tids threads @tids.
 */
int sc_timers_check(const struct sc_timers_frozen *z, const int32_t *tids, int n_tids);

/* timers_rt.c: raw, while every other thread is stopped */
/**
 * sc_timers_parse() - the POSIX timers listed in the @len bytes of
 * /proc/self/timers at @text into @t (room for @cap), in ascending ids.
 * Return: their count, -E2BIG when more than @cap, -EPROTO when malformed.
 */
long sc_timers_parse(const char *text, long len, struct sc_timer *t, uint32_t cap);
/**
 * sc_timers_freeze() - read the itimers and every POSIX timer with its setting
 * and overrun into @z. Never fails: a failure is kept in z->err.
 */
void sc_timers_freeze(struct sc_timers_frozen *z);

#endif /* SC_TIMERS_H */
