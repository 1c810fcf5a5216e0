/* SPDX-License-Identifier: MIT */
/*
 * test_timers_record.c - the timers record (spec §9.10): what the writer
 * writes comes back field for field, and the decoder refuses each broken
 * meta with its error (R-TYP-16, R-TYP-17, R-TYP-18); the parser of
 * /proc/self/timers reads what the kernel prints, in ascending ids.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/sc_timers.h"
#include "format/sc_format.h"
#include "format/sc_log.h"
#include "selfckpt.h"

#define FIXED 104
#define ENTRY 64

static char path[] = "/tmp/sc-timers-XXXXXX";

static void setup(void)
{
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	sc_log_set_level(SC_LOG_NONE);
}

static void teardown(void)
{
	unlink(path);
}

TestSuite(timers_record, .init = setup, .fini = teardown);

static struct sc_timer sample_timers[3] = {
	{ .id = 0, .clock = CLOCK_MONOTONIC, .notify = SC_TIMER_SIGNAL, .signo = 35,
	  .value = 0xabcdef, .overrun = 2, .left = { 0, 5000000 }, .interval = { 0, 15000000 } },
	{ .id = 3, .clock = CLOCK_REALTIME, .notify = SC_TIMER_SIGNAL | SC_TIMER_THREAD_ID,
	  .signo = 36, .value = 0xffffffff00000001ull, .tid = 4242, .left = { 7, 1 } },
	{ .id = 70000, .clock = CLOCK_BOOTTIME, .notify = SC_TIMER_NONE, .left = { 999, 0 } },
};

static struct sc_timers sample(void)
{
	struct sc_timers s = { .t = sample_timers, .n = 3 };

	s.it[0] = (struct sc_itimer){ { 0, 20000000 }, { 0, 20000000 } };
	s.it[2] = (struct sc_itimer){ { 1, 999999000 }, { 0, 0 } };
	return s;
}

static void write_timers(const struct sc_timers *s)
{
	struct sc_write_opts o;
	struct sc_writer *w;
	FILE *f = fopen(path, "wb");

	cr_assert_not_null(f);
	sc_write_opts_init(&o);
	o.threads = 1;
	cr_assert_eq(sc_writer_new(&w, fileno(f), path, &o), 0);
	cr_assert_eq(sc_timers_write(w, s), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	fclose(f);
}

/* The meta of a record of @s, to break, and written back as it is. */
static uint8_t *meta_of(const struct sc_timers *s, uint32_t *len)
{
	struct sc_reader *r;
	struct sc_record rec;
	uint8_t *m;

	write_timers(s);
	cr_assert_eq(sc_reader_open(&r, path, NULL), 0);
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	cr_assert_eq(rec.type, SC_REC_TIMERS);
	cr_assert_eq(rec.flags & SC_RF_REQUIRED, SC_RF_REQUIRED, "[R-TYP-1] written REQUIRED");
	cr_assert_eq(rec.raw_len, 0, "no payload");
	*len = rec.meta_len;
	m = malloc(*len + 64);
	memcpy(m, rec.meta, *len);
	sc_reader_free(r);
	return m;
}

static int decode_meta(const uint8_t *m, uint32_t len, struct sc_timers *out)
{
	struct sc_write_opts o;
	struct sc_writer *w;
	struct sc_reader *r;
	struct sc_record rec;
	FILE *f = fopen(path, "wb");
	int err;

	sc_write_opts_init(&o);
	o.threads = 1;
	cr_assert_eq(sc_writer_new(&w, fileno(f), path, &o), 0);
	cr_assert_eq(sc_writer_record(w, SC_REC_TIMERS, SC_RF_REQUIRED, m, len, NULL, 0), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	fclose(f);
	cr_assert_eq(sc_reader_open(&r, path, NULL), 0);
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	err = sc_timers_read(r, &rec, out);
	sc_reader_free(r);
	return err;
}

Test(timers_record, every_field_comes_back)
{
	struct sc_timers in = sample(), out;
	uint32_t len;
	uint8_t *m = meta_of(&in, &len);

	cr_assert_eq(len, FIXED + 3 * ENTRY);
	cr_assert_eq(decode_meta(m, len, &out), 0, "%s", selfckpt_last_error());
	cr_assert_eq(out.n, 3);
	cr_assert(!memcmp(out.it, in.it, sizeof(in.it)));
	cr_assert(!memcmp(out.t, in.t, 3 * sizeof(*in.t)));
	sc_timers_free(&out);
	free(m);
}

/* [R-VER-9] a longer fixed part of a newer minor is skipped: the entries end the meta. */
Test(timers_record, a_longer_fixed_part_is_skipped)
{
	struct sc_timers in = sample(), out;
	uint32_t len;
	uint8_t *m = meta_of(&in, &len), *grown = calloc(1, len + 16);

	memcpy(grown, m, FIXED);
	memcpy(grown + FIXED + 16, m + FIXED, len - FIXED);
	cr_assert_eq(decode_meta(grown, len + 16, &out), 0, "%s", selfckpt_last_error());
	cr_assert_eq(out.n, 3);
	cr_assert_eq(out.t[2].id, 70000);
	sc_timers_free(&out);
	free(grown);
	free(m);
}

typedef void (*breaker)(uint8_t *m, uint32_t *len);

static void short_meta(uint8_t *m, uint32_t *len) { (void)m; *len = FIXED - 1; }
static void reserved_4(uint8_t *m, uint32_t *len) { (void)len; m[5] = 1; }
static void too_many(uint8_t *m, uint32_t *len) { (void)len; sc_put_le32(m, 4); }
static void huge_count(uint8_t *m, uint32_t *len) { (void)len; sc_put_le32(m, 0xffffffffu); }
static void itimer_nsec(uint8_t *m, uint32_t *len) { (void)len; sc_put_le64(m + 16, 1000000000u); }
static void itimer_sec(uint8_t *m, uint32_t *len) { (void)len; sc_put_le64(m + 40, 1ull << 63); }
static void notify_2(uint8_t *m, uint32_t *len) { (void)len; sc_put_le32(m + FIXED + 8, 2); }
static void notify_5(uint8_t *m, uint32_t *len) { (void)len; sc_put_le32(m + FIXED + 8, 5); }
static void clock_3(uint8_t *m, uint32_t *len) { (void)len; sc_put_le32(m + FIXED + 4, 3); }
static void clock_neg(uint8_t *m, uint32_t *len) { (void)len; sc_put_le32(m + FIXED + 4, -6); }
static void tid_unasked(uint8_t *m, uint32_t *len) { (void)len; sc_put_le32(m + FIXED + 24, 9); }
static void tid_zero(uint8_t *m, uint32_t *len) { (void)len; sc_put_le32(m + FIXED + 88, 0); }
static void signal_0(uint8_t *m, uint32_t *len) { (void)len; sc_put_le32(m + FIXED + 12, 0); }
static void signal_65(uint8_t *m, uint32_t *len) { (void)len; sc_put_le32(m + FIXED + 12, 65); }
static void left_nsec(uint8_t *m, uint32_t *len) { (void)len; sc_put_le64(m + FIXED + 40, ~0ull); }
static void interval_nsec(uint8_t *m, uint32_t *len)
{
	(void)len;
	sc_put_le64(m + FIXED + 56, 1000000000u);
}
static void id_repeated(uint8_t *m, uint32_t *len) { (void)len; sc_put_le32(m + FIXED + 64, 0); }
static void id_negative(uint8_t *m, uint32_t *len) { (void)len; sc_put_le32(m + FIXED, ~0u); }
static void overrun_neg(uint8_t *m, uint32_t *len) { (void)len; sc_put_le32(m + FIXED + 28, ~0u); }

/* [R-TYP-16] [R-TYP-17] [R-TYP-18] each broken meta is refused with its error */
Test(timers_record, broken_metas_are_refused)
{
	static const struct { const char *what; breaker fn; int err; } cases[] = {
		{ "meta shorter than the fixed part", short_meta, SELFCKPT_ELENGTH },
		{ "reserved u32 at 4", reserved_4, SELFCKPT_ERESERVED },
		{ "more timers than the meta holds", too_many, SELFCKPT_ELENGTH },
		{ "a count of 2^32 - 1", huge_count, SELFCKPT_ELENGTH },
		{ "itimer nanoseconds of 10^9", itimer_nsec, SELFCKPT_ELENGTH },
		{ "itimer seconds past a time_t", itimer_sec, SELFCKPT_ELENGTH },
		{ "SIGEV_THREAD", notify_2, SELFCKPT_EUNKNOWN },
		{ "SIGEV_NONE | SIGEV_THREAD_ID", notify_5, SELFCKPT_EUNKNOWN },
		{ "a thread's CPU clock", clock_3, SELFCKPT_EUNKNOWN },
		{ "another process's CPU clock", clock_neg, SELFCKPT_EUNKNOWN },
		{ "a thread where no thread is signalled", tid_unasked, SELFCKPT_ERESERVED },
		{ "SIGEV_THREAD_ID without a thread", tid_zero, SELFCKPT_ELENGTH },
		{ "signal 0", signal_0, SELFCKPT_ELENGTH },
		{ "signal 65", signal_65, SELFCKPT_ELENGTH },
		{ "time left with nanoseconds past 10^9", left_nsec, SELFCKPT_ELENGTH },
		{ "interval with nanoseconds of 10^9", interval_nsec, SELFCKPT_ELENGTH },
		{ "ids not ascending", id_repeated, SELFCKPT_ELENGTH },
		{ "a negative id", id_negative, SELFCKPT_ELENGTH },
		{ "a negative overrun", overrun_neg, SELFCKPT_ELENGTH },
	};
	struct sc_timers in = sample(), out;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t len;
		uint8_t *m = meta_of(&in, &len);
		int err;

		cases[i].fn(m, &len);
		err = decode_meta(m, len, &out);
		cr_assert_eq(err, -cases[i].err, "%s: got %d (%s)", cases[i].what, err,
			     selfckpt_last_error());
		cr_assert(strstr(selfckpt_last_error(), "bad timers record 0"), "%s: '%s'",
			  cases[i].what, selfckpt_last_error());
		cr_assert_null(out.t, "%s: nothing kept", cases[i].what);
		free(m);
	}
}

Test(timers_record, none_and_disarmed_itimers_are_empty)
{
	struct sc_timers s = { 0 };

	cr_assert(sc_timers_empty(&s));
	s.it[1].interval.sec = 1; /* an interval alone is disarmed */
	cr_assert(sc_timers_empty(&s));
	s.it[1].value.nsec = 1;
	cr_assert(!sc_timers_empty(&s));
}

static const char proc_text[] =
	"ID: 12\n"
	"signal: 36/0000000000001234\n"
	"notify: signal/tid.9591\n"
	"ClockID: 1\n"
	"ID: 7\n"
	"signal: 14/ffffffff00000007\n"
	"notify: none/pid.9590\n"
	"ClockID: 7\n"
	"ID: 9\n"
	"signal: 14/0000000000000009\n"
	"notify: signal/pid.9590\n"
	"ClockID: -6\n";

/* The kernel lists the newest first; the parser gives ascending ids. */
Test(timers_record, proc_self_timers_is_parsed_in_ascending_ids)
{
	struct sc_timer t[4];
	long n = sc_timers_parse(proc_text, (long)strlen(proc_text), t, 4);

	cr_assert_eq(n, 3);
	cr_assert_eq(t[0].id, 7);
	cr_assert_eq(t[0].notify, SC_TIMER_NONE);
	cr_assert_eq(t[0].value, 0xffffffff00000007ull);
	cr_assert_eq(t[0].clock, CLOCK_BOOTTIME);
	cr_assert_eq(t[0].tid, 0);
	cr_assert_eq(t[1].id, 9);
	cr_assert_eq(t[1].clock, -6);
	cr_assert_eq(t[1].signo, 14);
	cr_assert_eq(t[2].id, 12);
	cr_assert_eq(t[2].notify, SC_TIMER_SIGNAL | SC_TIMER_THREAD_ID);
	cr_assert_eq(t[2].tid, 9591);
	cr_assert_eq(t[2].value, 0x1234);
	cr_assert_eq(t[2].signo, 36);
	cr_assert_eq(sc_timers_parse(proc_text, (long)strlen(proc_text), t, 2), -E2BIG);
	cr_assert_eq(sc_timers_parse("ID: x\n", 6, t, 4), -EPROTO);
	cr_assert_eq(sc_timers_parse("ID: 1\nnotify: bogus/pid.1\n", 26, t, 4), -EPROTO);
	cr_assert_eq(sc_timers_parse("", 0, t, 4), 0);
}

/* This process's own timers, read as at the instant of a snapshot. */
Test(timers_record, a_process_reads_its_own_timers)
{
	struct sc_timers_frozen z;
	struct itimerspec its = { { 2, 0 }, { 30, 0 } };
	struct sigevent ev = { .sigev_notify = SIGEV_NONE };
	timer_t t;
	int32_t me = (int32_t)gettid();

	cr_assert_eq(timer_create(CLOCK_MONOTONIC, &ev, &t), 0);
	cr_assert_eq(timer_settime(t, 0, &its, NULL), 0);
	cr_assert_eq(sc_timers_prepare(&z), 0);
	sc_timers_freeze(&z);
	cr_assert_eq(z.err, 0);
	cr_assert_eq(z.timers.n, 1);
	cr_assert_eq(z.timers.t[0].id, (int32_t)(intptr_t)t);
	cr_assert_eq(z.timers.t[0].notify, SC_TIMER_NONE);
	cr_assert_eq(z.timers.t[0].interval.sec, 2);
	cr_assert(z.timers.t[0].left.sec >= 28 && z.timers.t[0].left.sec <= 30);
	cr_assert_eq(sc_timers_check(&z, &me, 1), 0, "%s", selfckpt_last_error());
	sc_timers_frozen_free(&z);
	timer_delete(t);
}

/* A timer on a thread's CPU clock cannot come back: refused, named. */
Test(timers_record, a_thread_cpu_clock_timer_is_refused_by_name)
{
	struct sc_timers_frozen z;
	struct sigevent ev = { .sigev_notify = SIGEV_NONE };
	timer_t t;
	int32_t me = (int32_t)gettid();
	char want[64];

	cr_assert_eq(timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t), 0);
	cr_assert_eq(sc_timers_prepare(&z), 0);
	sc_timers_freeze(&z);
	cr_assert_eq(sc_timers_check(&z, &me, 1), -SELFCKPT_EHOST);
	snprintf(want, sizeof(want), "POSIX timer %d", (int)(intptr_t)t);
	cr_assert(strstr(selfckpt_last_error(), want), "%s", selfckpt_last_error());
	sc_timers_frozen_free(&z);
	timer_delete(t);
}
