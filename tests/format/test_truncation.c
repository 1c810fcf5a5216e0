/* SPDX-License-Identifier: MIT */
/*
 * Damaged images in bulk: an image cut at every length, every single-bit flip
 * of a small image, and lengths that claim more than the input holds. None of
 * them may read as complete, crash, or make the reader allocate for bytes the
 * input does not have. Requirement IDs are those of spec/image-format.md.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "compress/sc_compress.h"
#include "format/format_internal.h"
#include "format/sc_format.h"
#include "format/sc_log.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static void setup(void)
{
	sc_log_set_level(SC_LOG_NONE);
}

TestSuite(truncation, .init = setup);

struct image {
	uint8_t *b;
	size_t n;
};

static bool is_ours(int err)
{
	return err <= -SELFCKPT_EFIRST && err > -SELFCKPT_ELAST;
}

/* ---- making images ---- */

static void fill(uint8_t *p, size_t n, unsigned seed, bool text)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		p[i] = text ? (uint8_t)("selfckpt truncation "[i % 20]) : (uint8_t)x;
	}
}

struct rec_plan {
	uint32_t type;
	uint16_t flags;
	uint32_t meta_len;
	size_t raw_len;
	bool text; /* compresses (zstd chunks) or random (raw chunks) */
};

static struct image make_image(const struct rec_plan *plan, size_t n)
{
	struct sc_write_opts o;
	struct sc_writer *w;
	struct image img;
	struct stat st;
	int fd = memfd_create("img", MFD_CLOEXEC);

	cr_assert(fd >= 0);
	sc_write_opts_init(&o);
	o.level = SC_LEVEL_DEFAULT;
	o.threads = 1;
	o.chunk_shift = 12;
	o.created_ns = 1;
	o.producer = "truncation";
	o.kernel = "test";
	cr_assert_eq(sc_writer_new(&w, fd, "img", &o), 0);
	for (size_t i = 0; i < n; i++) {
		uint8_t *meta = malloc(plan[i].meta_len + 1), *data = malloc(plan[i].raw_len + 1);

		fill(meta, plan[i].meta_len, 100 + (unsigned)i, true);
		fill(data, plan[i].raw_len, (unsigned)i, plan[i].text);
		int err = sc_writer_record(w, plan[i].type, plan[i].flags, meta,
					   plan[i].meta_len, data, plan[i].raw_len);

		cr_assert_eq(err, 0, "%s", selfckpt_last_error());
		free(meta);
		free(data);
	}
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	cr_assert_eq(fstat(fd, &st), 0);
	img.n = (size_t)st.st_size;
	img.b = malloc(img.n);
	cr_assert_eq(pread(fd, img.b, img.n, 0), (ssize_t)img.n);
	close(fd);
	return img;
}

/* Several records: meta only, multi-chunk raw and zstd, empty, optional unknown, partial chunk. */
static struct image several_records(void)
{
	static const struct rec_plan plan[] = {
		{ SC_REC_PROCESS, SC_RF_REQUIRED, 120, 0, true },
		{ SC_REC_SEGMENT, SC_RF_REQUIRED, 88, 2 * 4096 + 700, false },
		{ SC_REC_FD, SC_RF_REQUIRED, 80, 0, true },
		{ 0x8001, 0, 8, 700, true },
		{ SC_REC_THREAD, SC_RF_REQUIRED, 112, 5000, true },
		{ SC_REC_DEVMEM, SC_RF_REQUIRED, 48, 4096, true },
	};

	return make_image(plan, sizeof(plan) / sizeof(plan[0]));
}

/* Where offset @at lies, for messages: "chunk 1 of record 2 (offset 5000)". */
static void describe(const struct image *img, size_t at, char *buf, size_t len)
{
	size_t off = SC_HEADER_SIZE, seq = 0;

	if (at < SC_HEADER_SIZE) {
		snprintf(buf, len, "the header (offset %zu)", at);
		return;
	}
	while (off + SC_RECORD_HEADER_SIZE <= img->n - SC_TRAILER_SIZE) {
		const uint8_t *h = img->b + off;
		uint64_t raw = sc_get_le64(h + 16), chunks = sc_chunk_count(raw, h[7]);
		size_t meta = off + SC_RECORD_HEADER_SIZE, end = meta + sc_get_le32(h + 8);

		if (at < meta || at < end) {
			snprintf(buf, len, "the %s of record %zu (offset %zu)",
				 at < meta ? "header" : "meta", seq, at);
			return;
		}
		for (uint64_t c = 0; c < chunks; c++) {
			end += SC_CHUNK_HEADER_SIZE + sc_get_le32(img->b + end);
			if (at < end) {
				snprintf(buf, len, "chunk %llu of record %zu (offset %zu)",
					 (unsigned long long)c, seq, at);
				return;
			}
		}
		off = end;
		seq++;
	}
	snprintf(buf, len, "the trailer (offset %zu)", at);
}

/* ---- reading ---- */

/* A memfd holding @n bytes of @b: a regular file, so seekable unless SC_RD_STREAM. */
static int memfd_with(const uint8_t *b, size_t n)
{
	int fd = memfd_create("cut", MFD_CLOEXEC);

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, b, n), (ssize_t)n);
	return fd;
}

/*
 * Everything a reader can be asked: every record, every payload byte (@read),
 * or every chunk skipped with verification, and the whole-file checksum.
 */
static int read_everything(int fd, bool stream, bool read, unsigned flags)
{
	struct sc_read_opts o = { .flags = flags | (stream ? SC_RD_STREAM : 0), .threads = 1 };
	static uint8_t buf[3000];
	struct sc_reader *r;
	struct sc_record rec;
	int err;

	lseek(fd, 0, SEEK_SET);
	err = sc_reader_open_fd(&r, fd, "cut", &o);
	if (err < 0)
		return err;
	while ((err = sc_reader_next(r, &rec)) == 1) {
		for (uint64_t left = read ? rec.raw_len : 0; left && !err;) {
			size_t k = left < sizeof(buf) ? (size_t)left : sizeof(buf);

			err = sc_reader_read(r, buf, k);
			left -= k;
		}
		if (!err)
			err = sc_reader_skip(r, true);
		if (err < 0)
			break;
	}
	if (!err && !stream)
		err = sc_reader_verify_file(r);
	sc_reader_free(r);
	return err;
}

/* Whether the last 40 bytes of a cut could pass for a damaged trailer (magic within 8 bits). */
static bool trailer_like(const uint8_t *b, size_t n)
{
	int bits = 0;

	if (n < SC_TRAILER_SIZE)
		return false;
	for (int i = 0; i < 8; i++)
		bits += __builtin_popcount(b[n - SC_TRAILER_SIZE + i] ^
					   (uint8_t)SC_TRAILER_MAGIC[i]);
	return bits <= 8;
}

/*
 * [R-TRL-1] [R-TRL-8] [R-TRL-9] [R-HDR-2] An image cut at any length from 1
 * byte to one byte short of its end, so at every record boundary and inside
 * every header, meta, chunk header, chunk and the trailer, is refused as
 * truncated, seekable and streamed, whether payloads are read or skipped.
 */
Test(truncation, every_cut_is_truncated, .timeout = 300)
{
	struct image img = several_records();
	int fd;

	cr_assert_gt(img.n, 10000u);
	for (size_t n = 1; n < img.n; n++) {
		char where[96];

		fd = memfd_with(img.b, n);

		describe(&img, n, where, sizeof(where));
		for (int mode = 0; mode < 4; mode++) {
			bool stream = mode & 1, read = mode & 2;
			int err = read_everything(fd, stream, read, 0);

			if (!stream && trailer_like(img.b, n))
				cr_assert(is_ours(err), "cut before %s, seekable: %d", where, err);
			else
				cr_assert_eq(err, -SELFCKPT_ETRUNCATED,
					     "cut before %s, %s, %s: got %d (%s): %s", where,
					     stream ? "stream" : "seekable",
					     read ? "read" : "skipped", err,
					     selfckpt_strerror(err), selfckpt_last_error());
		}
		close(fd);
	}
	fd = memfd_with(img.b, img.n);
	cr_assert_eq(read_everything(fd, false, true, 0), 0, "%s", selfckpt_last_error());
	cr_assert_eq(read_everything(fd, true, true, 0), 0, "%s", selfckpt_last_error());
	close(fd);
	free(img.b);
}

/* [R-HDR-1] Cut to nothing, an image is empty, not truncated. */
Test(truncation, empty_is_eempty)
{
	int fd = memfd_with((const uint8_t *)"", 0);

	cr_assert_eq(read_everything(fd, false, true, 0), -SELFCKPT_EEMPTY);
	cr_assert_eq(read_everything(fd, true, true, 0), -SELFCKPT_EEMPTY);
	close(fd);
}

/*
 * [R-TRL-9] [R-GEN-5] Every single-bit flip anywhere in a small image (header,
 * record headers, meta, chunk headers, raw and zstd chunks, an unknown optional
 * record, the index, the trailer) makes reading everything fail with a selfckpt
 * error: never success, never -errno, never a crash.
 */
Test(truncation, every_bit_flip_fails, .timeout = 300)
{
	static const struct rec_plan plan[] = {
		{ SC_REC_PROCESS, SC_RF_REQUIRED, 24, 0, true },
		{ SC_REC_THREAD, SC_RF_REQUIRED, 16, 100, false },
		{ 0x8001, 0, 4, 60, false },
		{ SC_REC_FD, SC_RF_REQUIRED, 8, 400, true },
	};
	struct image img = make_image(plan, sizeof(plan) / sizeof(plan[0]));
	int fd = memfd_with(img.b, img.n);

	cr_assert_lt(img.n, 2000u);
	for (size_t off = 0; off < img.n; off++) {
		char where[96];

		describe(&img, off, where, sizeof(where));
		for (unsigned bit = 0; bit < 8; bit++) {
			uint8_t v = img.b[off] ^ (uint8_t)(1u << bit);

			cr_assert_eq(pwrite(fd, &v, 1, (off_t)off), 1);
			for (int mode = 0; mode < 8; mode++) {
				unsigned flags = mode & 4 ? SC_RD_ALL_RECORDS : 0;
				int err = read_everything(fd, mode & 1, mode & 2, flags);

				cr_assert(is_ours(err), "bit %u in %s, %s%s: got %d (%s)", bit,
					  where, mode & 1 ? "stream" : "seekable",
					  flags ? ", all records" : "", err,
					  selfckpt_strerror(err));
			}
		}
		cr_assert_eq(pwrite(fd, &img.b[off], 1, (off_t)off), 1);
	}
	cr_assert_eq(read_everything(fd, false, true, 0), 0);
	cr_assert_eq(read_everything(fd, true, true, 0), 0);
	close(fd);
	free(img.b);
}

/* ---- lengths the input cannot hold ---- */

/* A valid 144-byte header from the writer. */
static void header(uint8_t *out)
{
	struct image img = make_image(NULL, 0);

	memcpy(out, img.b, SC_HEADER_SIZE);
	free(img.b);
}

static void record_header(uint8_t *p, uint32_t type, uint8_t shift, uint32_t meta_len,
			  uint64_t raw_len)
{
	struct sc_rec_header h = { .type = type, .flags = SC_RF_REQUIRED, .codec = SC_CODEC_ZSTD,
				   .chunk_shift = shift, .meta_len = meta_len, .seq = 0,
				   .raw_len = raw_len, .meta_hash = XXH3_64bits("", 0) };

	sc_rec_header_encode(p, &h);
}

/*
 * Cap the address space at what the process uses now plus @headroom bytes, so
 * an allocation sized by a length the input cannot back fails the read with
 * -ENOMEM instead of passing unnoticed. Not under ASan, whose shadow memory
 * needs terabytes of address space.
 */
static void limit_memory(size_t headroom)
{
#ifndef UNDER_ASAN
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	struct rlimit rl;

	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "%lu", &pages), 1);
	fclose(f);
	rl.rlim_cur = rl.rlim_max = pages * (size_t)sysconf(_SC_PAGESIZE) + headroom;
	cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0);
#else
	(void)headroom;
#endif
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * [R-SAFE-2] [R-REC-7] [R-TRL-8] A record header claiming 16 MiB of meta (the
 * most allowed) in a 300-byte stream fails fast with ETRUNCATED, having
 * allocated for the bytes that came, not for the 16 MiB claimed.
 */
Test(truncation, huge_meta_in_short_stream, .timeout = 30)
{
	uint8_t b[300];
	int fd;
	double t0;

	fill(b, sizeof(b), 7, false);
	header(b);
	record_header(b + SC_HEADER_SIZE, SC_REC_PROCESS, 12, SC_META_MAX, 0);
	fd = memfd_with(b, sizeof(b));
	limit_memory(12u << 20); /* less than the 16 MiB claimed */
	t0 = now();
	cr_assert_eq(read_everything(fd, true, true, 0), -SELFCKPT_ETRUNCATED, "%s",
		     selfckpt_last_error());
	cr_assert_eq(read_everything(fd, false, true, 0), -SELFCKPT_ETRUNCATED, "%s",
		     selfckpt_last_error());
	cr_assert_lt(now() - t0, 2.0);
	close(fd);
}

/*
 * [R-SAFE-3] [R-CHK-4] [R-CHK-5] A 64 MiB chunk (chunk_shift 26, the most
 * allowed) claimed by a 300-byte stream, stored raw or as zstd, fails with
 * ETRUNCATED; the reader may hold one chunk buffer (R-SAFE-3), not more.
 */
Test(truncation, huge_chunk_in_short_stream, .timeout = 30)
{
	static const struct {
		uint8_t codec;
		uint32_t stored;
	} chunks[] = { { SC_CODEC_RAW, 64u << 20 }, { SC_CODEC_ZSTD, 2048 } };
	uint8_t b[300];

	limit_memory((64u + 12u) << 20);
	for (size_t i = 0; i < 2; i++) {
		uint8_t *c = b + SC_HEADER_SIZE + SC_RECORD_HEADER_SIZE;
		int fd;

		fill(b, sizeof(b), 9, false);
		header(b);
		record_header(b + SC_HEADER_SIZE, SC_REC_SEGMENT, 26, 0, 64u << 20);
		memset(c, 0, SC_CHUNK_HEADER_SIZE);
		sc_put_le32(c, chunks[i].stored);
		c[4] = chunks[i].codec;
		fd = memfd_with(b, sizeof(b));
		for (int mode = 0; mode < 4; mode++) {
			int err = read_everything(fd, mode & 1, mode & 2, 0);

			cr_assert_eq(err, -SELFCKPT_ETRUNCATED, "codec %u, %s: %s",
				     chunks[i].codec, mode & 1 ? "stream" : "seekable",
				     selfckpt_last_error());
		}
		close(fd);
	}
}

/*
 * [R-SAFE-4] [R-TRL-3] A trailer that claims 2^60 records, or an END record
 * far past the end, in a file of a few hundred bytes, is refused before the
 * index is allocated.
 */
Test(truncation, huge_index_claims, .timeout = 30)
{
	struct image img = make_image(NULL, 0);
	uint8_t *t = img.b + img.n - SC_TRAILER_SIZE;
	static const uint64_t counts[] = { 1ull << 60, UINT64_MAX / 40 + 1, 1000 };
	static const uint64_t offsets[] = { 1ull << 62, UINT64_MAX - 10, 0 };

	limit_memory(12u << 20);
	for (size_t i = 0; i < 6; i++) {
		uint8_t *b = malloc(img.n);
		int fd, err;

		memcpy(b, img.b, img.n);
		t = b + img.n - SC_TRAILER_SIZE;
		if (i < 3)
			sc_put_le64(t + 16, counts[i]);
		else
			sc_put_le64(t + 8, offsets[i - 3]);
		sc_put_le64(t + 32, XXH3_64bits(t, 32));
		fd = memfd_with(b, img.n);
		err = read_everything(fd, false, true, 0);
		cr_assert(is_ours(err) && err != -SELFCKPT_EUSAGE, "case %zu seekable: %d %s", i,
			  err, selfckpt_last_error());
		err = read_everything(fd, true, true, 0);
		cr_assert(is_ours(err), "case %zu stream: %d %s", i, err, selfckpt_last_error());
		close(fd);
		free(b);
	}
	free(img.b);
}
