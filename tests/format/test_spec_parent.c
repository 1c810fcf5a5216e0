/* SPDX-License-Identifier: MIT */
/*
 * The parent record of an incremental image (spec §9.14): what a reader
 * refuses in it, and the header flag it goes with. The chain's own checks
 * (R-INC-4) and the writer's choice (R-INC-7) are tried end to end in
 * tests/core/test_incremental.c.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sc_records.h"
#include "format/sc_format.h"
#include "format/sc_log.h"
#include "selfckpt.h"

#define FIXED 48

static char img[] = "/tmp/sc-spec-parent-XXXXXX";

static void setup(void)
{
	sc_log_set_level(SC_LOG_NONE);
	strcpy(img, "/tmp/sc-spec-parent-XXXXXX");
	cr_assert_geq(mkstemp(img), 0);
}

static void cleanup(void)
{
	unlink(img);
}

TestSuite(spec_parent, .init = setup, .fini = cleanup);

/* A parent meta: @path of @len bytes, @depth. */
static uint32_t meta(uint8_t *m, const char *path, uint32_t len, uint32_t depth)
{
	memset(m, 0, FIXED);
	sc_put_le64(m, 1234);
	sc_put_le64(m + 8, 5678);
	sc_put_le64(m + 16, 0x9abc);
	sc_put_le32(m + 24, depth);
	sc_put_le32(m + 28, len);
	memcpy(m + FIXED, path, len);
	return FIXED + len;
}

/* Write one parent record (@incremental: the header's flag) and decode it. */
static int decode(bool incremental, const uint8_t *m, uint32_t len, uint64_t raw_len,
		  struct sc_parent_info *out)
{
	static uint8_t payload[16];
	struct sc_write_opts wo;
	struct sc_writer *w;
	struct sc_reader *r;
	struct sc_record rec;
	FILE *f = fopen(img, "w");
	int err;

	cr_assert_not_null(f);
	sc_write_opts_init(&wo);
	wo.threads = 1;
	wo.incremental = incremental;
	cr_assert_eq(sc_writer_new(&w, fileno(f), img, &wo), 0);
	cr_assert_eq(sc_writer_record(w, SC_REC_PARENT, SC_RF_REQUIRED, m, len, payload,
				      raw_len), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(sc_reader_open(&r, img, NULL), 0, "%s", selfckpt_last_error());
	cr_assert_eq(!!(sc_reader_header(r)->flags & SC_HF_INCREMENTAL), incremental);
	cr_assert_eq(sc_reader_header(r)->minor, incremental ? 7 : 6);
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	err = sc_parent_read(r, &rec, out);
	sc_reader_free(r);
	return err;
}

/* [R-INC-1] [R-HDR-8] [R-WR-2] a parent record is read in an incremental image (minor 7) */
Test(spec_parent, a_parent_record_names_the_parent)
{
	uint8_t m[FIXED + 64];
	struct sc_parent_info p;

	cr_assert_eq(decode(true, m, meta(m, "img.1.sckpt", 11, 2), 0, &p), 0, "%s",
		     selfckpt_last_error());
	cr_assert_eq(p.created_ns, 1234);
	cr_assert_eq(p.size, 5678);
	cr_assert_eq(p.file_sum, 0x9abc);
	cr_assert_eq(p.depth, 2);
	cr_assert_str_eq(p.path, "img.1.sckpt");
	sc_parent_free(&p);
}

/* [R-INC-1] only in an incremental image; no payload; the fixed part whole; reserved zero */
Test(spec_parent, the_record_is_refused_out_of_place_or_short)
{
	uint8_t m[FIXED + 64];
	struct sc_parent_info p;
	uint32_t len = meta(m, "a", 1, 1);

	cr_assert_eq(decode(false, m, len, 0, &p), -SELFCKPT_ELENGTH);
	cr_assert_eq(decode(true, m, len, 8, &p), -SELFCKPT_ELENGTH);
	cr_assert_eq(decode(true, m, 40, 0, &p), -SELFCKPT_ELENGTH);
	m[40] = 1;
	cr_assert_eq(decode(true, m, len, 0, &p), -SELFCKPT_ERESERVED);
}

/* [R-INC-2] the path: 1 to 4095 bytes, no NUL, within the meta */
Test(spec_parent, the_path_is_checked)
{
	static uint8_t m[FIXED + 4200];
	static char longpath[4097];
	struct sc_parent_info p;

	cr_assert_eq(decode(true, m, meta(m, "", 0, 1), 0, &p), -SELFCKPT_ELENGTH);
	cr_assert_eq(decode(true, m, meta(m, "a\0b", 3, 1), 0, &p), -SELFCKPT_ELENGTH);
	memset(longpath, 'x', 4096);
	cr_assert_eq(decode(true, m, meta(m, longpath, 4096, 1), 0, &p), -SELFCKPT_ELENGTH);
	cr_assert_eq(decode(true, m, meta(m, longpath, 4095, 1), 0, &p), 0);
	sc_parent_free(&p);
	meta(m, "abc", 3, 1);
	sc_put_le32(m + 28, 9); /* more than the meta holds */
	cr_assert_eq(decode(true, m, FIXED + 3, 0, &p), -SELFCKPT_ELENGTH);
}

/* [R-INC-3] the depth: 1 to 64 */
Test(spec_parent, the_depth_is_checked)
{
	uint8_t m[FIXED + 8];
	struct sc_parent_info p;

	cr_assert_eq(decode(true, m, meta(m, "a", 1, 0), 0, &p), -SELFCKPT_ELENGTH);
	cr_assert_eq(decode(true, m, meta(m, "a", 1, 65), 0, &p), -SELFCKPT_ELENGTH);
	cr_assert_eq(decode(true, m, meta(m, "a", 1, 64), 0, &p), 0);
	sc_parent_free(&p);
}
