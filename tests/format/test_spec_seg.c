/* SPDX-License-Identifier: MIT */
/*
 * test_spec_seg.c - the segment record (spec §9.5): the meta a writer writes,
 * what sc_segment_read() refuses and with which error (R-SEG-1 to R-SEG-4), the
 * windows a checkpoint writes, and the layouts selfckpt-restore refuses
 * (R-SEG-5 to R-SEG-7). Metas are made byte by byte from the spec's tables, not with the
 * encoder, so that the decoder is held to the spec.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compress/sc_compress.h"
#include "core/sc_records.h"
#include "format/sc_format.h"
#include "format/sc_log.h"
#include "selfckpt.h"
#include "tests/core/roundtrip_harness.h"

#define PAGE 4096ull
#define FIXED 88       /* the 1.0 fixed part, which these metas use */
#define FIXED_1_3 96   /* with the memory flags of 1.3, which the writer writes */
#define RUN 16
#define RUNS_MAX 8
#define Z SC_RUN_ZERO
#define E (-SELFCKPT_ELENGTH)
#define BASE 0x100000000ull /* a page-aligned address */

static void quiet(void)
{
	sc_log_set_level(SC_LOG_NONE);
}

TestSuite(spec_seg, .init = quiet);

/* A segment meta's fields, as spec §9.5 lays them out. */
struct seg {
	uint64_t start, length, vma_start, vma_end;
	uint32_t prot, flags;
	uint64_t offset, dev, inode, size, mtime;
	uint32_t n_runs;
	struct {
		uint64_t first;
		uint32_t count;
		uint8_t kind;
	} runs[RUNS_MAX];
	const char *path;
};

/* Its meta into @m; the meta's length. */
static uint32_t seg_meta(uint8_t *m, const struct seg *s)
{
	size_t path = strlen(s->path);
	uint8_t *v = m + FIXED;

	memset(m, 0, FIXED + RUN * RUNS_MAX + 256);
	sc_put_le64(m + 0, s->start);
	sc_put_le64(m + 8, s->length);
	sc_put_le32(m + 16, s->prot);
	sc_put_le32(m + 20, s->flags);
	sc_put_le64(m + 24, s->offset);
	sc_put_le64(m + 32, s->dev);
	sc_put_le64(m + 40, s->inode);
	sc_put_le64(m + 48, s->size);
	sc_put_le64(m + 56, s->mtime);
	sc_put_le32(m + 64, s->n_runs);
	sc_put_le16(m + 68, (uint16_t)path);
	sc_put_le64(m + 72, s->vma_start);
	sc_put_le64(m + 80, s->vma_end);
	for (uint32_t i = 0; i < s->n_runs; i++, v += RUN) {
		sc_put_le64(v, s->runs[i].first);
		sc_put_le32(v + 8, s->runs[i].count);
		v[12] = s->runs[i].kind;
	}
	memcpy(v, s->path, path);
	return (uint32_t)(FIXED + RUN * s->n_runs + path);
}

/* A private file mapping of 4 pages, one stored, two zero, one from the file. */
static struct seg good(void)
{
	return (struct seg){ .start = BASE, .length = 4 * PAGE, .vma_start = BASE,
			     .vma_end = BASE + 4 * PAGE, .prot = 5, .flags = SC_SEG_FILE,
			     .offset = 8192, .dev = 0x803, .inode = 12345, .size = 40000,
			     .mtime = 1700000000123456789ull, .n_runs = 3,
			     .runs = { { 0, 1, SC_RUN_STORED }, { 1, 2, SC_RUN_ZERO },
				       { 3, 1, SC_RUN_FILE } },
			     .path = "/usr/lib/libx.so" };
}

static uint64_t stored_bytes(const struct seg *s)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < s->n_runs; i++)
		n += s->runs[i].kind == SC_RUN_STORED ? s->runs[i].count * PAGE : 0;
	return n;
}

static char img[] = "/tmp/sc-spec-seg-XXXXXX";
static bool img_made;

/* The test's image file, made on first use. */
static const char *img_path(void)
{
	if (!img_made) {
		cr_assert_geq(mkstemp(img), 0);
		img_made = true;
	}
	return img;
}

/* Write one segment record of @meta and @raw_len payload bytes; decode it. */
static int decode(const uint8_t *meta, uint32_t meta_len, uint64_t raw_len,
		  struct sc_segment_info *out)
{
	static uint8_t zeros[8 * PAGE];
	struct sc_read_opts ro = { .threads = 1 };
	struct sc_write_opts wo;
	struct sc_writer *w;
	struct sc_reader *r;
	struct sc_record rec;
	FILE *f;
	int err;

	cr_assert_leq(raw_len, sizeof(zeros));
	f = fopen(img_path(), "w");
	cr_assert_not_null(f);
	sc_write_opts_init(&wo);
	wo.threads = 1;
	cr_assert_eq(sc_writer_new(&w, fileno(f), img, &wo), 0);
	cr_assert_eq(sc_writer_record(w, SC_REC_SEGMENT, SC_RF_REQUIRED, meta, meta_len, zeros,
				      raw_len), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(sc_reader_open(&r, img, &ro), 0, "%s", selfckpt_last_error());
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	err = sc_segment_read(r, &rec, PAGE, out);
	sc_reader_free(r);
	if (err)
		cr_assert(strstr(selfckpt_last_error(),
				 "bad segment record 0 in '/tmp/sc-spec-seg-"),
			  "the message names no record: %s", selfckpt_last_error());
	return err;
}

/* Decode @s with the payload its stored runs need, and expect @err. */
static void expect(const struct seg *s, int err, const char *what)
{
	uint8_t m[FIXED + RUN * RUNS_MAX + 256];
	struct sc_segment_info info;
	uint32_t len = seg_meta(m, s);
	int got = decode(m, len, stored_bytes(s), &info);

	cr_assert_eq(got, err, "%s: %d (%s)", what, got, got ? selfckpt_last_error() : "");
	if (!got)
		sc_segment_free(&info);
}

static void cleanup(void)
{
	if (img_made)
		unlink(img);
}

/*
 * [R-SEG-1] [R-SEG-4] [R-TYP-3] [R-REC-10] A meta laid out as the spec says
 * decodes to its fields, its runs and its path, before any payload is read: the
 * meta is what plans the record. The variable part is at the meta's end, so a
 * longer fixed part (a newer minor) still reads.
 */
Test(spec_seg, a_meta_decodes_to_its_fields, .fini = cleanup)
{
	struct seg s = good();
	uint8_t m[FIXED + RUN * RUNS_MAX + 256 + 16], grown[sizeof(m)];
	struct sc_segment_info info;
	uint32_t len = seg_meta(m, &s);

	/*
	 * the same meta with the memory flags of 1.3 and 8 bytes of unknown fields
	 * before its variable part
	 */
	memcpy(grown, m, FIXED);
	sc_put_le32(grown + FIXED, SC_VMF_KNOWN | SC_VMF_LOCKED | SC_VMF_DONTFORK);
	sc_put_le32(grown + FIXED + 4, 0);
	memset(grown + FIXED_1_3, 0xee, 8);
	memcpy(grown + FIXED + 16, m + FIXED, len - FIXED);
	for (int pass = 0; pass < 2; pass++) {
		cr_assert_eq(decode(pass ? grown : m, len + 16 * pass, PAGE, &info), 0, "%s",
			     selfckpt_last_error());
		cr_assert(info.start == BASE && info.length == 4 * PAGE);
		cr_assert(info.vma_start == BASE && info.vma_end == BASE + 4 * PAGE);
		cr_assert(info.prot == 5 && info.flags == SC_SEG_FILE && info.offset == 8192);
		cr_assert(info.dev == 0x803 && info.inode == 12345 && info.file_size == 40000);
		cr_assert_eq(info.mtime_ns, 1700000000123456789ull);
		cr_assert_eq(info.n_runs, 3);
		for (uint32_t i = 0; i < 3; i++)
			cr_assert(info.runs[i].first == s.runs[i].first &&
				  info.runs[i].count == s.runs[i].count &&
				  info.runs[i].kind == s.runs[i].kind, "run %u", i);
		cr_assert_str_eq(info.path, "/usr/lib/libx.so");
		cr_assert_eq(sc_segment_stored_pages(&info), 1);
		/* a 1.0 fixed part: the memory flags were not recorded */
		cr_assert_eq(info.vmflags, pass ? SC_VMF_KNOWN | SC_VMF_LOCKED | SC_VMF_DONTFORK
					       : 0u);
		sc_segment_free(&info);
	}
	/* every flag and prot bit this version defines */
	s.flags = SC_SEG_KNOWN;
	s.prot = 7;
	expect(&s, 0, "every known flag");
}

/* [R-SEG-1] reserved: the u16 at 70, each run's bytes 13-15, flag bits 8-31, prot bits 3-31 */
Test(spec_seg, reserved_fields_are_refused, .fini = cleanup)
{
	uint8_t m[FIXED + RUN * RUNS_MAX + 256];
	struct sc_segment_info info;
	struct seg s = good();
	uint32_t len = seg_meta(m, &s);
	const int at[] = { 70, 71, FIXED + 13, FIXED + 14, FIXED + 15, FIXED + 2 * RUN + 13 };

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		uint8_t old = m[at[i]];

		m[at[i]] = 0x01;
		cr_assert_eq(decode(m, len, PAGE, &info), -SELFCKPT_ERESERVED, "byte %d", at[i]);
		m[at[i]] = 0x80;
		cr_assert_eq(decode(m, len, PAGE, &info), -SELFCKPT_ERESERVED, "byte %d", at[i]);
		m[at[i]] = old;
	}
	for (unsigned bit = 9; bit < 32; bit++) { /* bit 7 is 1.3's (R-SEG-7), 8 1.5's (R-SEG-8) */
		s = good();
		s.flags |= 1u << bit;
		expect(&s, -SELFCKPT_ERESERVED, "flag bit");
	}
	for (unsigned bit = 3; bit < 32; bit++) {
		s = good();
		s.prot |= 1u << bit;
		expect(&s, -SELFCKPT_ERESERVED, "prot bit");
	}
}

/* The meta of good() with a 1.3 fixed part: memory flags @vmflags, @reserved at 92. */
static uint32_t meta_1_3(uint8_t *m, uint32_t vmflags, uint32_t reserved)
{
	uint8_t old[FIXED + RUN * RUNS_MAX + 256];
	struct seg s = good();
	uint32_t len = seg_meta(old, &s);

	memcpy(m, old, FIXED);
	sc_put_le32(m + FIXED, vmflags);
	sc_put_le32(m + FIXED + 4, reserved);
	memcpy(m + FIXED_1_3, old + FIXED, len - FIXED);
	return len + FIXED_1_3 - FIXED;
}

/*
 * [R-SEG-1] 1.3: memory flag bits 14-31 and the u32 at 92 are reserved; every
 * bit 0-13 is a setting the reader takes as it is.
 */
Test(spec_seg, memory_flags_decode_and_their_reserved_bits_are_refused, .fini = cleanup)
{
	uint8_t m[FIXED_1_3 + RUN * RUNS_MAX + 256];
	struct sc_segment_info info;
	uint32_t len = meta_1_3(m, SC_VMF_DEFINED, 0);

	cr_assert_eq(SC_VMF_DEFINED, 0x3fffu);
	cr_assert_eq(decode(m, len, PAGE, &info), 0, "%s", selfckpt_last_error());
	cr_assert_eq(info.vmflags, SC_VMF_DEFINED);
	cr_assert_eq(info.n_runs, 3);
	cr_assert_str_eq(info.path, "/usr/lib/libx.so");
	sc_segment_free(&info);
	for (unsigned bit = 14; bit < 32; bit++) {
		len = meta_1_3(m, SC_VMF_KNOWN | 1u << bit, 0);
		cr_assert_eq(decode(m, len, PAGE, &info), -SELFCKPT_ERESERVED, "bit %u", bit);
	}
	for (unsigned bit = 0; bit < 32; bit++) {
		len = meta_1_3(m, SC_VMF_KNOWN, 1u << bit);
		cr_assert_eq(decode(m, len, PAGE, &info), -SELFCKPT_ERESERVED, "92: bit %u", bit);
	}
}

/*
 * [R-SEG-2] the window's start is page-aligned, its length a non-zero multiple
 * of the page, and it lies inside its page-aligned mapping
 */
Test(spec_seg, window_bounds, .fini = cleanup)
{
	static const struct {
		uint64_t start, length, vma_start, vma_end;
		int err;
	} cases[] = {
		{ BASE, 4 * PAGE, BASE, BASE + 4 * PAGE, 0 },
		{ BASE + 2 * PAGE, 4 * PAGE, BASE, BASE + 6 * PAGE, 0 },  /* the last window */
		{ BASE + 2 * PAGE, 4 * PAGE, BASE, BASE + 9 * PAGE, 0 },  /* one in the middle */
		{ BASE + 1, 4 * PAGE, BASE, BASE + 5 * PAGE, -SELFCKPT_ELENGTH },
		{ BASE + 2048, 4 * PAGE, BASE, BASE + 5 * PAGE, -SELFCKPT_ELENGTH },
		{ BASE, 0, BASE, BASE + 4 * PAGE, -SELFCKPT_ELENGTH },
		{ BASE, 4 * PAGE + 1, BASE, BASE + 5 * PAGE, -SELFCKPT_ELENGTH },
		{ BASE, 4 * PAGE - 512, BASE, BASE + 4 * PAGE, -SELFCKPT_ELENGTH },
		{ BASE, 4 * PAGE, BASE + PAGE, BASE + 5 * PAGE, -SELFCKPT_ELENGTH },
		{ BASE, 4 * PAGE, BASE, BASE + 3 * PAGE, -SELFCKPT_ELENGTH },
		{ BASE + PAGE, 4 * PAGE, BASE + 1, BASE + 5 * PAGE, -SELFCKPT_ELENGTH },
		{ BASE, 4 * PAGE, BASE, BASE + 5 * PAGE - 1, -SELFCKPT_ELENGTH },
		{ BASE, 4 * PAGE, BASE + 5 * PAGE, BASE + 9 * PAGE, -SELFCKPT_ELENGTH },
		{ -4 * PAGE, 4 * PAGE, -4 * PAGE, 0, -SELFCKPT_ELENGTH },  /* the end wraps */
		{ -2 * PAGE, 4 * PAGE, -2 * PAGE, -PAGE, -SELFCKPT_ELENGTH },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct seg s = good();
		char what[32];

		s.start = cases[i].start;
		s.length = cases[i].length;
		s.vma_start = cases[i].vma_start;
		s.vma_end = cases[i].vma_end;
		/* runs that cover the window when its length is whole pages */
		s.n_runs = s.length / PAGE ? 1 : 0;
		s.runs[0].first = 0;
		s.runs[0].count = (uint32_t)(s.length / PAGE);
		s.runs[0].kind = SC_RUN_ZERO;
		snprintf(what, sizeof(what), "case %zu", i);
		expect(&s, cases[i].err, what);
	}
}

/*
 * [R-SEG-3] the runs start at page 0, follow each other without gap or
 * overlap, hold a page at least each and end at the window's end; a run kind
 * other than stored, zero, file, (1.5) guard and (1.7) parent is unknown;
 * [R-INC-5] a parent run in an image that is not incremental is refused
 */
Test(spec_seg, run_table, .fini = cleanup)
{
	static const struct {
		uint32_t n;
		struct { uint64_t first; uint32_t count; uint8_t kind; } runs[4];
		int err;
	} cases[] = {
		{ 1, { { 0, 4, SC_RUN_ZERO } }, 0 },
		{ 4, { { 0, 1, SC_RUN_FILE }, { 1, 1, SC_RUN_ZERO }, { 2, 1, SC_RUN_FILE },
		       { 3, 1, SC_RUN_ZERO } }, 0 },
		{ 0, { { 0 } }, E },                                      /* none */
		{ 1, { { 1, 3, Z } }, E },                                /* not at page 0 */
		{ 2, { { 0, 0, Z }, { 0, 4, Z } }, E },                   /* an empty run */
		{ 2, { { 0, 1, Z }, { 2, 2, Z } }, E },                   /* a gap */
		{ 2, { { 0, 2, Z }, { 1, 3, Z } }, E },                   /* an overlap */
		{ 2, { { 2, 2, Z }, { 0, 2, Z } }, E },                   /* unsorted */
		{ 1, { { 0, 3, Z } }, E },                                /* short */
		{ 1, { { 0, 5, Z } }, E },                                /* past the end */
		{ 2, { { 0, 4, Z }, { 4, 0xffffffffu, Z } }, E },
		{ 2, { { 0, 0xffffffffu, Z }, { 0xffffffffull, 0xffffffffu, Z } }, E },
		{ 2, { { 0, 1, SC_RUN_ZERO }, { 1, 3, SC_RUN_GUARD } }, 0 }, /* 1.5 */
		{ 1, { { 0, 4, SC_RUN_PARENT } }, E },                    /* not incremental */
		{ 1, { { 0, 4, 5 } }, -SELFCKPT_EUNKNOWN },
		{ 2, { { 0, 1, SC_RUN_ZERO }, { 1, 3, 0xff } }, -SELFCKPT_EUNKNOWN },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct seg s = good();
		char what[32];

		s.n_runs = cases[i].n;
		for (uint32_t k = 0; k < cases[i].n; k++) {
			s.runs[k].first = cases[i].runs[k].first;
			s.runs[k].count = cases[i].runs[k].count;
			s.runs[k].kind = cases[i].runs[k].kind;
		}
		snprintf(what, sizeof(what), "case %zu", i);
		expect(&s, cases[i].err, what);
	}
}

/* [R-SEG-4] raw_len is the page size times the stored runs' pages */
Test(spec_seg, raw_len_is_the_stored_pages, .fini = cleanup)
{
	uint8_t m[FIXED + RUN * RUNS_MAX + 256];
	struct sc_segment_info info;
	struct seg s = good();
	uint32_t len;

	/* stored, zero, stored, file: 3 pages of payload */
	s.length = 5 * PAGE;
	s.vma_end = BASE + 5 * PAGE;
	s.n_runs = 4;
	s.runs[0] = (typeof(s.runs[0])){ 0, 1, SC_RUN_STORED };
	s.runs[1] = (typeof(s.runs[0])){ 1, 1, SC_RUN_ZERO };
	s.runs[2] = (typeof(s.runs[0])){ 2, 2, SC_RUN_STORED };
	s.runs[3] = (typeof(s.runs[0])){ 4, 1, SC_RUN_FILE };
	len = seg_meta(m, &s);
	for (uint64_t raw = 0; raw <= 5 * PAGE; raw += PAGE / 2) {
		int err = decode(m, len, raw, &info);

		cr_assert_eq(err, raw == 3 * PAGE ? 0 : -SELFCKPT_ELENGTH, "raw_len %llu: %s",
			     (unsigned long long)raw, selfckpt_last_error());
		if (!err)
			sc_segment_free(&info);
	}
	/* no stored run: no payload */
	s.runs[0].kind = s.runs[2].kind = SC_RUN_ZERO;
	len = seg_meta(m, &s);
	cr_assert_eq(decode(m, len, 0, &info), 0);
	sc_segment_free(&info);
	cr_assert_eq(decode(m, len, PAGE, &info), -SELFCKPT_ELENGTH);
}

/* [R-TYP-3] [R-SAFE-5] the variable part must fit the meta; the fixed part is 88 bytes */
Test(spec_seg, variable_part_fits_the_meta, .fini = cleanup)
{
	uint8_t m[FIXED + RUN * RUNS_MAX + 256];
	struct sc_segment_info info;
	struct seg s = good();
	uint32_t len = seg_meta(m, &s);

	cr_assert_eq(decode(m, len - 1, PAGE, &info), -SELFCKPT_ELENGTH);
	cr_assert_eq(decode(m, FIXED - 1, PAGE, &info), -SELFCKPT_ELENGTH);
	sc_put_le32(m + 64, 0xffffffffu); /* runs: far more than the meta holds */
	cr_assert_eq(decode(m, len, PAGE, &info), -SELFCKPT_ELENGTH);
	sc_put_le32(m + 64, 3);
	sc_put_le16(m + 68, 0xffff); /* the path */
	cr_assert_eq(decode(m, len, PAGE, &info), -SELFCKPT_ELENGTH);
}

/*
 * [R-SEG-1] [R-SEG-4] [R-WR-7] What the writer writes: the meta of the spec's
 * layout with every reserved byte zero, and as payload the stored pages, run by
 * run, in order.
 */
Test(spec_seg, the_writer_writes_the_stored_pages_in_run_order, .fini = cleanup)
{
	struct sc_run runs[] = { { 0, 2, SC_RUN_STORED }, { 2, 1, SC_RUN_ZERO },
				 { 3, 1, SC_RUN_STORED }, { 4, 2, SC_RUN_FILE } };
	struct sc_segment_info s = { .start = BASE + PAGE, .length = 6 * PAGE, .vma_start = BASE,
				     .vma_end = BASE + 7 * PAGE, .prot = 3, .flags = SC_SEG_FILE,
				     .offset = PAGE, .runs = runs, .n_runs = 4, .path = "/f",
				     .vmflags = SC_VMF_KNOWN | SC_VMF_HUGEPAGE };
	struct sc_read_opts ro = { .threads = 1 };
	static uint8_t pages[3 * PAGE], back[3 * PAGE];
	struct sc_write_opts wo;
	struct sc_writer *w;
	struct sc_reader *r;
	struct sc_record rec;
	const uint8_t *m;
	FILE *f;

	for (size_t i = 0; i < sizeof(pages); i++)
		pages[i] = (uint8_t)(i / PAGE + 1);
	f = fopen(img_path(), "w");
	sc_write_opts_init(&wo);
	wo.threads = 1;
	cr_assert_eq(sc_writer_new(&w, fileno(f), img, &wo), 0);
	cr_assert_eq(sc_segment_begin(w, &s, PAGE), 0);
	cr_assert_eq(sc_writer_append(w, pages, sizeof(pages)), 0);
	cr_assert_eq(sc_writer_end(w), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	fclose(f);

	cr_assert_eq(sc_reader_open(&r, img, &ro), 0);
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	m = rec.meta;
	cr_assert_eq(rec.type, SC_REC_SEGMENT);
	cr_assert_eq(rec.meta_len, FIXED_1_3 + 4 * RUN + 2);
	cr_assert_eq(rec.raw_len, 3 * PAGE);
	cr_assert(sc_get_le64(m) == BASE + PAGE && sc_get_le64(m + 8) == 6 * PAGE);
	cr_assert(sc_get_le32(m + 16) == 3 && sc_get_le32(m + 20) == SC_SEG_FILE);
	cr_assert(sc_get_le64(m + 24) == PAGE && sc_get_le32(m + 64) == 4);
	cr_assert(sc_get_le16(m + 68) == 2 && sc_get_le16(m + 70) == 0);
	cr_assert(sc_get_le64(m + 72) == BASE && sc_get_le64(m + 80) == BASE + 7 * PAGE);
	cr_assert(sc_get_le32(m + 88) == (SC_VMF_KNOWN | SC_VMF_HUGEPAGE) &&
		  sc_get_le32(m + 92) == 0);
	for (int i = 0; i < 4; i++) {
		const uint8_t *run = m + FIXED_1_3 + RUN * i;

		cr_assert(sc_get_le64(run) == runs[i].first && sc_get_le32(run + 8) ==
			  runs[i].count && run[12] == runs[i].kind, "run %d", i);
		cr_assert(!run[13] && !run[14] && !run[15], "run %d: reserved bytes", i);
	}
	cr_assert(!memcmp(m + FIXED_1_3 + 4 * RUN, "/f", 2));
	cr_assert_eq(sc_reader_read(r, back, sizeof(back)), 0);
	cr_assert(!memcmp(back, pages, sizeof(pages)));
	sc_reader_free(r);
}

/* ---- a checkpoint's windows, and the layouts a restore refuses ---- */

/* The segment windows of @path, in record order. */
static size_t read_windows(const char *path, struct sc_segment_info *win, size_t cap)
{
	struct sc_read_opts ro = { .threads = 1 };
	struct sc_reader *r;
	struct sc_record rec;
	size_t n = 0;
	int ret;

	cr_assert_eq(sc_reader_open(&r, path, &ro), 0, "%s", selfckpt_last_error());
	while ((ret = sc_reader_next(r, &rec)) == 1) {
		if (rec.type != SC_REC_SEGMENT)
			continue;
		cr_assert_lt(n, cap);
		cr_assert_eq(sc_segment_read(r, &rec, PAGE, &win[n]), 0, "%s",
			     selfckpt_last_error());
		n++;
	}
	cr_assert_eq(ret, 0, "%s", selfckpt_last_error());
	sc_reader_free(r);
	return n;
}

/*
 * [R-SEG-5] [R-SEG-2] The windows a checkpoint writes: consecutive records per
 * mapping, in address order, the first at the mapping's start, each next one
 * where the last ended, the last at the mapping's end; mappings in address
 * order, not overlapping. The heap program's 80 MiB of data is more than one
 * window holds.
 */
Test(roundtrip, checkpoint_windows_tile_their_mappings)
{
	static struct sc_segment_info win[4096];
	const char *argv[MAX_ARGS];
	size_t n, split = 0;
	struct run r;

	prog_argv(argv, "heap", in_base("ck/img.sckpt"), in_base("ck"),
		  (const char *[]){ "80", NULL });
	run(argv, &r);
	expect_killed(&r, "heap checkpoint");
	run_free(&r);
	n = read_windows(in_base("ck/img.sckpt"), win, sizeof(win) / sizeof(win[0]));
	cr_assert_gt(n, 0);
	for (size_t i = 0; i < n; i++) {
		bool first = !i || win[i].vma_start != win[i - 1].vma_start;
		bool last = i + 1 == n || win[i + 1].vma_start != win[i].vma_start;

		cr_assert(win[i].vma_start <= win[i].start &&
			  win[i].start + win[i].length <= win[i].vma_end, "window %zu", i);
		if (first) {
			cr_assert_eq(win[i].start, win[i].vma_start, "window %zu", i);
			cr_assert(!i || win[i].vma_start >= win[i - 1].vma_end, "mapping of %zu",
				  i);
		} else {
			cr_assert_eq(win[i].vma_end, win[i - 1].vma_end, "window %zu", i);
			cr_assert_eq(win[i].start, win[i - 1].start + win[i - 1].length, "%zu", i);
			split++;
		}
		if (last)
			cr_assert_eq(win[i].start + win[i].length, win[i].vma_end, "window %zu", i);
	}
	cr_assert_gt(split, 0, "no mapping of the heap program was written in several windows");
	for (size_t i = 0; i < n; i++)
		sc_segment_free(&win[i]);
}

struct window {
	uint64_t start, length, vma_start, vma_end;
	uint32_t vmflags, flags;
};

/* An image of a process whose mappings are @w (zero pages only), at @path. */
static void layout_image(const char *path, const struct window *w, size_t n)
{
	static char cwd[] = "/", exe[] = "/bin/true";
	static uint8_t auxv[16];
	struct sc_process_info p = { .pid = 1, .cwd = cwd, .exe = exe, .auxv = auxv,
				     .auxv_len = sizeof(auxv) };
	struct sc_thread_record t = { .tid = 1, .flags = 1 };
	struct sc_write_opts wo;
	struct sc_writer *wr;
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	sc_write_opts_init(&wo);
	wo.threads = 1;
	cr_assert_eq(sc_writer_new(&wr, fileno(f), path, &wo), 0);
	cr_assert_eq(sc_process_write(wr, &p), 0);
	cr_assert_eq(sc_thread_write(wr, &t), 0);
	for (size_t i = 0; i < n; i++) {
		struct sc_run run = { 0, (uint32_t)(w[i].length / PAGE), SC_RUN_ZERO };
		struct sc_segment_info s = { .start = w[i].start, .length = w[i].length,
					     .vma_start = w[i].vma_start, .vma_end = w[i].vma_end,
					     .prot = 3, .runs = &run, .n_runs = 1, .path = "",
					     .vmflags = w[i].vmflags, .flags = w[i].flags,
					     .dev = 1, .inode = 4242 };

		cr_assert_eq(sc_segment_begin(wr, &s, PAGE), 0);
		cr_assert_eq(sc_writer_end(wr), 0);
	}
	cr_assert_eq(sc_writer_finish(wr), 0);
	sc_writer_free(wr);
	cr_assert_eq(fclose(f), 0);
}

/*
 * [R-SEG-5] selfckpt-restore refuses windows that do not tile their mapping,
 * and mappings out of address order or overlapping, with SELFCKPT_ELENGTH (exit
 * 65), before anything of the image runs; [R-SEG-6] windows of one mapping
 * with different memory flags; [R-SEG-7] a mapping of a descriptor's file that
 * no descriptor of the image holds; [R-SEG-8] an attach of a System V segment
 * that no sysv-ipc record of the image holds.
 */
Test(roundtrip, restore_refuses_windows_that_do_not_tile)
{
	const uint64_t a = BASE, b = BASE + 16 * PAGE;
	static const struct {
		const char *what, *named;
		size_t n;
		struct window w[3];
	} cases[] = {
		{ "a gap between windows", "leaves a gap in the mapping", 2,
		  { { a, PAGE, a, a + 3 * PAGE }, { a + 2 * PAGE, PAGE, a, a + 3 * PAGE } } },
		{ "windows that overlap", "leaves a gap in the mapping", 2,
		  { { a, 2 * PAGE, a, a + 3 * PAGE }, { a + PAGE, 2 * PAGE, a, a + 3 * PAGE } } },
		{ "windows out of order", "does not start its mapping", 2,
		  { { a + PAGE, PAGE, a, a + 2 * PAGE }, { a, PAGE, a, a + 2 * PAGE } } },
		{ "a first window after the start", "does not start its mapping", 1,
		  { { a + PAGE, PAGE, a, a + 2 * PAGE } } },
		{ "a mapping not covered to its end", "is not covered by its segment records", 1,
		  { { a, PAGE, a, a + 2 * PAGE } } },
		{ "a window of a mapping after another mapping", "out of order", 3,
		  { { a, PAGE, a, a + 2 * PAGE }, { b, PAGE, b, b + PAGE },
		    { a + PAGE, PAGE, a, a + 2 * PAGE } } },
		{ "mappings out of address order", "out of order", 2,
		  { { b, PAGE, b, b + PAGE }, { a, PAGE, a, a + PAGE } } },
		{ "windows with different memory flags", "memory flags 0x9, its first window 0x1",
		  2, { { a, PAGE, a, a + 2 * PAGE, SC_VMF_KNOWN },
		       { a + PAGE, PAGE, a, a + 2 * PAGE, SC_VMF_KNOWN | SC_VMF_LOCKED } } },
		{ "a mapping of a descriptor's file that no descriptor holds",
		  "maps the file of a descriptor at 0x100000000 (device 0x1, inode 4242)", 1,
		  { { a, PAGE, a, a + PAGE, 0, SC_SEG_HELD | SC_SEG_SHARED } } },
		{ "an attach of a System V segment the image does not hold",
		  "attaches System V segment 4242", 1,
		  { { a, PAGE, a, a + PAGE, 0, SC_SEG_SYSV | SC_SEG_SHARED } } },
		{ "overlapping mappings", "overlaps the mapping before it", 2,
		  { { a, 2 * PAGE, a, a + 2 * PAGE }, { a + PAGE, 2 * PAGE, a + PAGE,
							a + 3 * PAGE } } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *path = in_base("ck/layout-%zu.sckpt", i);

		layout_image(path, cases[i].w, cases[i].n);
		expect_refused(path, 65, cases[i].named, cases[i].what);
	}
}
