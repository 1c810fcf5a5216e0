/* SPDX-License-Identifier: MIT */
/*
 * test_locks_record.c - the locks record (spec §9.11): every field comes
 * back, and a broken entry is refused with its error (R-TYP-20).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sc_locks.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"

static char path[64];

static void setup(void)
{
	snprintf(path, sizeof(path), "/tmp/sc-locks-%d.sckpt", (int)getpid());
	sc_log_set_level(SC_LOG_NONE);
}

static void teardown(void)
{
	unlink(path);
}

/* Write a record of type locks with meta @m (@len bytes), and decode it. */
static int decode(const uint8_t *m, uint32_t len, struct sc_lock **out, size_t *n)
{
	struct sc_write_opts o;
	struct sc_writer *w;
	struct sc_reader *r;
	struct sc_record rec;
	FILE *f = fopen(path, "wb");
	int err;

	cr_assert_not_null(f);
	sc_write_opts_init(&o);
	o.threads = 1;
	cr_assert_eq(sc_writer_new(&w, fileno(f), path, &o), 0);
	cr_assert_eq(sc_writer_record(w, SC_REC_LOCKS, SC_RF_REQUIRED, m, len, NULL, 0), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	fclose(f);
	cr_assert_eq(sc_reader_open(&r, path, NULL), 0);
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	err = sc_locks_read(r, &rec, out, n);
	sc_reader_free(r);
	return err;
}

/* The meta sc_locks_write() makes of @locks. */
static uint8_t *meta_of(const struct sc_lock *locks, size_t n, uint32_t *len)
{
	struct sc_write_opts o;
	struct sc_writer *w;
	struct sc_reader *r;
	struct sc_record rec;
	FILE *f = fopen(path, "wb");
	uint8_t *m;

	sc_write_opts_init(&o);
	o.threads = 1;
	cr_assert_eq(sc_writer_new(&w, fileno(f), path, &o), 0);
	cr_assert_eq(sc_locks_write(w, locks, n), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	fclose(f);
	cr_assert_eq(sc_reader_open(&r, path, NULL), 0);
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	cr_assert_eq(rec.type, SC_REC_LOCKS);
	cr_assert_eq(rec.flags & SC_RF_REQUIRED, SC_RF_REQUIRED);
	*len = rec.meta_len;
	m = malloc(rec.meta_len + 16);
	memcpy(m, rec.meta, rec.meta_len);
	sc_reader_free(r);
	return m;
}

static const struct sc_lock two[] = {
	{ .fd = 4, .kind = SC_LOCK_POSIX, .type = SC_LOCK_WRITE, .start = 10, .end = 19 },
	{ .fd = 7, .kind = SC_LOCK_FLOCK, .type = SC_LOCK_READ, .start = 0,
	  .end = SC_LOCK_TO_EOF },
};

Test(locks_record, every_field_comes_back, .init = setup, .fini = teardown)
{
	struct sc_lock *got;
	size_t n;
	uint32_t len;
	uint8_t *m = meta_of(two, 2, &len);

	cr_assert_eq(len, 8 + 2 * 32);
	cr_assert_eq(decode(m, len, &got, &n), 0, "%s", selfckpt_last_error());
	cr_assert_eq(n, 2);
	cr_assert(!memcmp(got, two, sizeof(two)));
	free(got);
	free(m);
}

/* R-TYP-20, R-VER-9 */
Test(locks_record, broken_entries_are_refused, .init = setup, .fini = teardown)
{
	static const struct {
		uint32_t off, value;
		int err;
	} cases[] = {
		{ 0, 3, -SELFCKPT_ELENGTH },            /* more entries than fit */
		{ 4, 1, -SELFCKPT_ERESERVED },          /* reserved field of the fixed part */
		{ 8 + 0, 0x80000000u, -SELFCKPT_ELENGTH }, /* descriptor out of range */
		{ 8 + 4, 5, -SELFCKPT_EUNKNOWN },       /* kind */
		{ 8 + 8, 2, -SELFCKPT_EUNKNOWN },       /* type */
		{ 8 + 12, 1, -SELFCKPT_ERESERVED },     /* reserved field of an entry */
		{ 8 + 16, 20, -SELFCKPT_ELENGTH },      /* first byte after the last */
	};
	struct sc_lock *got;
	size_t n;
	uint32_t len;
	uint8_t *m = meta_of(two, 2, &len), *b = malloc(len + 8);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(b, m, len);
		sc_put_le32(b + cases[i].off, cases[i].value);
		cr_assert_eq(decode(b, len, &got, &n), cases[i].err, "case %zu: %s", i,
			     selfckpt_last_error());
		cr_assert(strstr(selfckpt_last_error(), "locks record"), "%s",
			  selfckpt_last_error());
	}
	cr_assert_eq(decode(m, 7, &got, &n), -SELFCKPT_ELENGTH, "a meta shorter than 8 bytes");
	/* a longer fixed part of a newer minor: the entries end the meta */
	memset(b, 0, 8);
	memcpy(b, m, 8);
	memcpy(b + 16, m + 8, len - 8);
	cr_assert_eq(decode(b, len + 8, &got, &n), 0, "%s", selfckpt_last_error());
	cr_assert(n == 2 && !memcmp(got, two, sizeof(two)));
	free(got);
	free(b);
	free(m);
}
