/* SPDX-License-Identifier: MIT */
/*
 * timers_record.c - encoding and checking the timers record (spec §9.10):
 * the three itimers in the fixed part, then one 64-byte entry per POSIX
 * timer, in ascending ids.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sc_timers.h"
#include "format/sc_log.h"

#define TIMERS_FIXED 104
#define TIMER_SIZE 64
#define NSEC 1000000000u

static int timers_err(struct sc_reader *r, const struct sc_record *rec, int code,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int timers_err(struct sc_reader *r, const struct sc_record *rec, int code,
		      const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return sc_err(code, "bad timers record %u in '%s' at offset %llu: %s", rec->seq,
		      sc_reader_name(r), (unsigned long long)rec->offset, why);
}

static void put_time(uint8_t *m, const struct sc_time *t)
{
	sc_put_le64(m, t->sec);
	sc_put_le64(m + 8, t->nsec);
}

static void put_timer(uint8_t *m, const struct sc_timer *t)
{
	sc_put_le32(m, (uint32_t)t->id);
	sc_put_le32(m + 4, (uint32_t)t->clock);
	sc_put_le32(m + 8, t->notify);
	sc_put_le32(m + 12, t->signo);
	sc_put_le64(m + 16, t->value);
	sc_put_le32(m + 24, (uint32_t)t->tid);
	sc_put_le32(m + 28, (uint32_t)t->overrun);
	put_time(m + 32, &t->left);
	put_time(m + 48, &t->interval);
}

int sc_timers_write(struct sc_writer *w, const struct sc_timers *s)
{
	size_t size = TIMERS_FIXED + (size_t)TIMER_SIZE * s->n;
	uint8_t *m = calloc(1, size);
	int err;

	if (!m)
		return sc_err(ENOMEM, "out of memory writing the timers record");
	sc_put_le32(m, s->n);
	for (int i = 0; i < SC_ITIMERS; i++) {
		put_time(m + 8 + 32 * i, &s->it[i].value);
		put_time(m + 8 + 32 * i + 16, &s->it[i].interval);
	}
	for (uint32_t i = 0; i < s->n; i++)
		put_timer(m + TIMERS_FIXED + TIMER_SIZE * i, &s->t[i]);
	err = sc_writer_record(w, SC_REC_TIMERS, SC_RF_REQUIRED, m, (uint32_t)size, NULL, 0);
	free(m);
	return err;
}

/* [R-TYP-17] seconds that fit a time_t, nanoseconds below 10^9. */
static int get_time(const uint8_t *m, struct sc_time *t)
{
	t->sec = sc_get_le64(m);
	t->nsec = sc_get_le64(m + 8);
	return t->sec <= INT64_MAX && t->nsec < NSEC;
}

static int get_timer(struct sc_reader *r, const struct sc_record *rec, const uint8_t *m,
		     struct sc_timer *t, uint32_t i)
{
	t->id = (int32_t)sc_get_le32(m);
	t->clock = (int32_t)sc_get_le32(m + 4);
	t->notify = sc_get_le32(m + 8);
	t->signo = sc_get_le32(m + 12);
	t->value = sc_get_le64(m + 16);
	t->tid = (int32_t)sc_get_le32(m + 24);
	t->overrun = (int32_t)sc_get_le32(m + 28);
	if (t->notify != SC_TIMER_SIGNAL && t->notify != SC_TIMER_NONE &&
	    t->notify != (SC_TIMER_SIGNAL | SC_TIMER_THREAD_ID))
		return timers_err(r, rec, SELFCKPT_EUNKNOWN, "timer %u has unknown notification "
				  "%u", i, t->notify);
	if (!sc_timer_clock_ok(t->clock))
		return timers_err(r, rec, SELFCKPT_EUNKNOWN, "timer %u has unknown clock %d", i,
				  t->clock);
	if (!(t->notify & SC_TIMER_THREAD_ID) && t->tid)
		return timers_err(r, rec, SELFCKPT_ERESERVED, "timer %u names a thread but "
				  "signals none", i);
	if (t->id < 0 || t->overrun < 0 || (t->notify != SC_TIMER_NONE &&
	    (t->signo < 1 || t->signo > 64)) || ((t->notify & SC_TIMER_THREAD_ID) && t->tid <= 0))
		return timers_err(r, rec, SELFCKPT_ELENGTH, "timer %u: id %d, overrun %d, signal "
				  "%u or thread %d out of range", i, t->id, t->overrun, t->signo,
				  t->tid);
	if (!get_time(m + 32, &t->left) || !get_time(m + 48, &t->interval))
		return timers_err(r, rec, SELFCKPT_ELENGTH, "timer %u has a time out of range", i);
	return 0;
}

/* [R-TYP-16] the fixed part, the count and the itimers. */
static int read_fixed(struct sc_reader *r, const struct sc_record *rec, struct sc_timers *s)
{
	const uint8_t *m = rec->meta;

	if (rec->meta_len < TIMERS_FIXED)
		return timers_err(r, rec, SELFCKPT_ELENGTH, "%u bytes of metadata, at least %d "
				  "expected", rec->meta_len, TIMERS_FIXED);
	if (sc_get_le32(m + 4))
		return timers_err(r, rec, SELFCKPT_ERESERVED, "reserved field at 4 is set");
	s->n = sc_get_le32(m);
	if (s->n > SC_TIMERS_MAX || (uint64_t)TIMER_SIZE * s->n > rec->meta_len - TIMERS_FIXED)
		return timers_err(r, rec, SELFCKPT_ELENGTH, "%u timers do not fit in %u bytes "
				  "(or more than %d)", s->n, rec->meta_len, SC_TIMERS_MAX);
	for (int i = 0; i < SC_ITIMERS; i++)
		if (!get_time(m + 8 + 32 * i, &s->it[i].value) ||
		    !get_time(m + 8 + 32 * i + 16, &s->it[i].interval))
			return timers_err(r, rec, SELFCKPT_ELENGTH, "itimer %d has a time out of "
					  "range", i);
	return 0;
}

int sc_timers_read(struct sc_reader *r, const struct sc_record *rec, struct sc_timers *s)
{
	const uint8_t *v;
	int err;

	memset(s, 0, sizeof(*s));
	if ((err = read_fixed(r, rec, s)) < 0)
		return err;
	s->t = calloc(s->n ? s->n : 1, sizeof(*s->t));
	if (!s->t)
		return sc_err(ENOMEM, "out of memory reading '%s'", sc_reader_name(r));
	/* The entries end the meta: newer minors grow the fixed part. */
	v = (const uint8_t *)rec->meta + rec->meta_len - (size_t)TIMER_SIZE * s->n;
	for (uint32_t i = 0; !err && i < s->n; i++) {
		err = get_timer(r, rec, v + TIMER_SIZE * i, &s->t[i], i);
		if (!err && i > 0 && s->t[i].id <= s->t[i - 1].id)
			err = timers_err(r, rec, SELFCKPT_ELENGTH, "timer %u has id %d, not above "
					 "the %d before it", i, s->t[i].id, s->t[i - 1].id);
	}
	if (err)
		sc_timers_free(s);
	return err;
}

void sc_timers_free(struct sc_timers *s)
{
	free(s->t);
	s->t = NULL;
	s->n = 0;
}
