/* SPDX-License-Identifier: MIT */
/*
 * test_spec_misc.c - requirements of spec/image-format.md that the other tests
 * do not prove: the bytes a writer lays out (checked against the spec's tables
 * with xxHash and zstd directly), the order in which a reader reports checks,
 * the index and END record checks, what a reader hands out and when, the
 * process, thread, fd and signals records, and what a checkpoint of a real
 * program writes.
 *
 * Damaged images are made with a small editor of this file: it parses an image
 * into records and chunks, lets a test change fields, and lays the image out
 * again with every checksum, the index and the trailer recomputed, so that only
 * the damage a test aims at is wrong (byte surgery after that, where a test
 * wants a checksum wrong too).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "compress/sc_compress.h"
#include "core/sc_fds.h"
#include "core/sc_records.h"
#include "format/sc_format.h"
#include "format/sc_log.h"
#include "selfckpt.h"
#include "tests/core/roundtrip_harness.h"

#define GOLDEN "tests/golden/"
#define HDR SC_RECORD_HEADER_SIZE
#define CHDR SC_CHUNK_HEADER_SIZE
#define RECS_MAX 512
#define ZSTD_MAGIC "\x28\xb5\x2f\xfd"

static void quiet(void)
{
	sc_log_set_level(SC_LOG_NONE);
}

TestSuite(spec, .init = quiet);

/* ---- the editor ---- */

struct ed_chunk {
	uint8_t h[CHDR];
	uint8_t *data; /* stored_len bytes */
};

struct ed_rec {
	uint8_t h[HDR];   /* as read; the writer sets seq, meta_len and checksums */
	uint8_t *meta;
	uint32_t meta_len;
	struct ed_chunk *ch;
	size_t n_ch;
	size_t extra;     /* zero bytes after the last chunk (the index counts them) */
};

struct ed {
	uint8_t *header;
	uint32_t header_size;
	struct ed_rec rec[RECS_MAX];
	size_t n;         /* records before END */
	bool keep_seq;    /* write each record's seq as it is */
	void (*index_hook)(uint8_t *index, size_t n); /* change the index before it is written */
	uint8_t end_h[HDR]; /* END's header: flags, meta_len and raw_len as a test sets them */
	bool end_custom;
	uint8_t end_meta[16];
	size_t end_extra_entries; /* index entries of zeros after the N real ones */
};

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	long n;

	cr_assert_not_null(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n + 1);
	cr_assert(b && fread(b, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static uint8_t *dup_bytes(const uint8_t *p, size_t n)
{
	uint8_t *d = malloc(n ? n : 1);

	cr_assert_not_null(d);
	memcpy(d, p, n);
	return d;
}

/* Parse the image at @path (written by the writer, so well formed). */
static void ed_parse(struct ed *e, const char *path)
{
	size_t len, at;
	uint8_t *b = slurp(path, &len);

	memset(e, 0, sizeof(*e));
	e->header_size = sc_get_le32(b + 12);
	e->header = dup_bytes(b, e->header_size);
	for (at = e->header_size;;) {
		struct ed_rec *r = &e->rec[e->n];
		uint64_t raw = sc_get_le64(b + at + 16);
		unsigned shift = b[at + 7];

		if (sc_get_le32(b + at) == SC_REC_END)
			break;
		cr_assert_lt(e->n, RECS_MAX);
		memcpy(r->h, b + at, HDR);
		r->meta_len = sc_get_le32(b + at + 8);
		r->meta = dup_bytes(b + at + HDR, r->meta_len);
		at += HDR + r->meta_len;
		r->n_ch = (size_t)((raw + (1ull << shift) - 1) >> shift);
		r->ch = calloc(r->n_ch ? r->n_ch : 1, sizeof(*r->ch));
		for (size_t i = 0; i < r->n_ch; i++) {
			uint32_t stored = sc_get_le32(b + at);

			memcpy(r->ch[i].h, b + at, CHDR);
			r->ch[i].data = dup_bytes(b + at + CHDR, stored);
			at += CHDR + stored;
		}
		e->n++;
	}
	free(b);
}

static void ed_free(struct ed *e)
{
	for (size_t i = 0; i < e->n; i++) {
		for (size_t k = 0; k < e->rec[i].n_ch; k++)
			free(e->rec[i].ch[k].data);
		free(e->rec[i].ch);
		free(e->rec[i].meta);
	}
	free(e->header);
}

struct out {
	uint8_t *b;
	size_t n, cap;
};

static void put(struct out *o, const void *p, size_t n)
{
	if (o->n + n > o->cap) {
		o->cap = 2 * (o->n + n);
		o->b = realloc(o->b, o->cap);
		cr_assert_not_null(o->b);
	}
	memcpy(o->b + o->n, p, n);
	o->n += n;
}

/* The record header @h with its seq, meta and checksums set. */
static void seal(uint8_t *h, uint32_t seq, const uint8_t *meta, uint32_t meta_len)
{
	sc_put_le32(h + 8, meta_len);
	sc_put_le32(h + 12, seq);
	sc_put_le64(h + 32, XXH3_64bits(meta, meta_len));
	sc_put_le64(h + 40, XXH3_64bits(h, 40));
}

static void put_end(struct ed *e, struct out *o, const uint8_t *index, size_t len)
{
	uint8_t h[HDR] = { 0 }, ch[CHDR];
	uint32_t meta_len = 0;

	sc_put_le32(h, SC_REC_END);
	sc_put_le16(h + 4, SC_RF_REQUIRED);
	h[7] = 12;
	sc_put_le64(h + 16, len);
	if (e->end_custom) {
		memcpy(h + 4, e->end_h + 4, 2);
		meta_len = sc_get_le32(e->end_h + 8);
	}
	seal(h, (uint32_t)e->n, e->end_meta, meta_len);
	put(o, h, HDR);
	put(o, e->end_meta, meta_len);
	for (size_t at = 0; at < len; at += 4096) {
		size_t k = len - at < 4096 ? len - at : 4096;

		memset(ch, 0, sizeof(ch));
		sc_put_le32(ch, (uint32_t)k);
		sc_put_le64(ch + 8, XXH3_64bits(index + at, k));
		put(o, ch, CHDR);
		put(o, index + at, k);
	}
}

/* Lay the image out at @path; the offsets of its records (and END's) in @off. */
static void ed_write(struct ed *e, const char *path, uint64_t *off)
{
	size_t n_index = e->n + e->end_extra_entries;
	uint8_t *index = calloc(n_index ? n_index : 1, SC_INDEX_ENTRY_SIZE), t[SC_TRAILER_SIZE];
	struct out o = { 0 };
	uint64_t end;
	FILE *f;

	sc_put_le64(e->header + e->header_size - 8, XXH3_64bits(e->header, e->header_size - 8));
	put(&o, e->header, e->header_size);
	for (size_t i = 0; i < e->n; i++) {
		struct ed_rec *r = &e->rec[i];
		uint8_t *x = index + SC_INDEX_ENTRY_SIZE * i, *zero = calloc(1, r->extra + 1);
		uint64_t start = o.n;
		uint32_t seq = e->keep_seq ? sc_get_le32(r->h + 12) : (uint32_t)i;

		seal(r->h, seq, r->meta, r->meta_len);
		if (off)
			off[i] = start;
		put(&o, r->h, HDR);
		put(&o, r->meta, r->meta_len);
		for (size_t k = 0; k < r->n_ch; k++) {
			put(&o, r->ch[k].h, CHDR);
			put(&o, r->ch[k].data, sc_get_le32(r->ch[k].h));
		}
		put(&o, zero, r->extra);
		free(zero);
		sc_put_le64(x, start);
		sc_put_le64(x + 8, sc_get_le64(r->h + 16));
		sc_put_le64(x + 16, o.n - start);
		sc_put_le32(x + 24, sc_get_le32(r->h));
		sc_put_le32(x + 28, r->meta_len);
		memcpy(x + 32, r->h + 4, 4); /* flags, codec, chunk_shift */
	}
	if (e->index_hook)
		e->index_hook(index, e->n);
	end = o.n;
	if (off)
		off[e->n] = end;
	put_end(e, &o, index, n_index * SC_INDEX_ENTRY_SIZE);
	memcpy(t, SC_TRAILER_MAGIC, 8);
	sc_put_le64(t + 8, end);
	sc_put_le64(t + 16, e->n);
	sc_put_le64(t + 24, XXH3_64bits(o.b, o.n));
	sc_put_le64(t + 32, XXH3_64bits(t, 32));
	put(&o, t, sizeof(t));
	f = fopen(path, "wb");
	cr_assert(f && fwrite(o.b, 1, o.n, f) == o.n && !fclose(f));
	free(o.b);
	free(index);
}

/* Overwrite @n bytes of @path at @at, leaving every checksum as it is. */
static void poke(const char *path, uint64_t at, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	cr_assert(fd >= 0 && pwrite(fd, p, n, (off_t)at) == (ssize_t)n && !close(fd));
}

/* ---- images from the writer ---- */

static char path_a[] = "/tmp/sc-spec-a-XXXXXX", path_b[] = "/tmp/sc-spec-b-XXXXXX";

static void temp_paths(void)
{
	int a, b;

	quiet();
	a = mkstemp(path_a);
	b = mkstemp(path_b);
	cr_assert(a >= 0 && b >= 0);
	close(a);
	close(b);
}

static void remove_paths(void)
{
	unlink(path_a);
	unlink(path_b);
}

TestSuite(spec_img, .init = temp_paths, .fini = remove_paths);

struct rec {
	uint32_t type;
	uint16_t flags;
	const void *meta, *payload;
	uint32_t meta_len;
	uint64_t raw_len;
};

/* Write @recs at @path with @level and chunks of 2^@shift bytes (0: default). */
static void write_image(const char *path, const struct rec *recs, size_t n, int level,
			unsigned shift)
{
	struct sc_write_opts o;
	struct sc_writer *w;
	FILE *f = fopen(path, "wb");

	cr_assert_not_null(f);
	sc_write_opts_init(&o);
	o.threads = 1;
	o.level = level;
	o.chunk_shift = shift;
	o.created_ns = 1700000000123456789ull;
	o.producer = "selfckpt spec";
	o.kernel = "6.0.0-spec";
	cr_assert_eq(sc_writer_new(&w, fileno(f), path, &o), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(sc_writer_record(w, recs[i].type, recs[i].flags, recs[i].meta,
					      recs[i].meta_len, recs[i].payload, recs[i].raw_len),
			     0, "%s", selfckpt_last_error());
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	cr_assert_eq(fclose(f), 0);
}

static uint8_t pay_text[10000], pay_rand[5000], pay_page[4096];

/* Four records: compressible, random (stored raw even by zstd), empty, one chunk. */
static size_t sample(struct rec *r)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < sizeof(pay_text); i++)
		pay_text[i] = "selfckpt image "[i % 15];
	for (size_t i = 0; i < sizeof(pay_rand); i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		pay_rand[i] = (uint8_t)x;
	}
	memset(pay_page, 0x5a, sizeof(pay_page));
	r[0] = (struct rec){ SC_REC_FD, SC_RF_REQUIRED, "meta-0", pay_text, 6, sizeof(pay_text) };
	r[1] = (struct rec){ SC_REC_SEGMENT, SC_RF_REQUIRED, "meta of record one......", pay_rand,
			     24, sizeof(pay_rand) };
	r[2] = (struct rec){ SC_REC_SIGNALS, SC_RF_REQUIRED, NULL, NULL, 0, 0 };
	r[3] = (struct rec){ SC_REC_THREAD, SC_RF_REQUIRED, "thread..", pay_page, 8,
			     sizeof(pay_page) };
	return 4;
}

static void write_sample(const char *path, int level)
{
	struct rec r[4];

	write_image(path, r, sample(r), level, 12);
}

static int open_as(struct sc_reader **r, const char *path, unsigned flags)
{
	struct sc_read_opts o = { .flags = flags, .threads = 1 };

	*r = NULL;
	return sc_reader_open(r, path, &o);
}

/*
 * Read every record of @path to the end of its payload, as a stream or
 * seekable (@flags); the first error, or 0. *@handed: records handed out.
 */
static int read_all(const char *path, unsigned flags, size_t *handed)
{
	static uint8_t buf[1 << 16];
	struct sc_reader *r;
	struct sc_record rec;
	int err = open_as(&r, path, flags);
	size_t n = 0;

	while (!err && (err = sc_reader_next(r, &rec)) == 1) {
		n++;
		err = 0;
		for (uint64_t done = 0; !err && done < rec.raw_len; done += sizeof(buf))
			err = sc_reader_read(r, buf, rec.raw_len - done < sizeof(buf) ?
						     rec.raw_len - done : sizeof(buf));
	}
	if (!err && !(flags & SC_RD_STREAM))
		err = sc_reader_verify_file(r);
	sc_reader_free(r);
	if (handed)
		*handed = n;
	return err;
}

/* Both readers refuse @path with @err. */
static void expect_both(const char *path, int err, const char *what)
{
	int seek = read_all(path, 0, NULL), stream = read_all(path, SC_RD_STREAM, NULL);

	cr_assert_eq(seek, err, "%s (seekable): %d %s", what, seek, selfckpt_last_error());
	cr_assert_eq(stream, err, "%s (stream): %d %s", what, stream, selfckpt_last_error());
}

/* ---- the bytes a writer lays out ---- */

/* Check the chunks of the record whose payload starts at @b; its end. */
static const uint8_t *check_chunks(const uint8_t *b, const uint8_t *payload, uint64_t raw_len,
				   unsigned shift, bool *raw_seen, bool *zstd_seen)
{
	static uint8_t out[1 << 12];

	for (uint64_t at = 0; at < raw_len; at += 1ull << shift) {
		uint32_t want = (uint32_t)(raw_len - at < (1ull << shift) ? raw_len - at
								      : 1ull << shift);
		uint32_t stored = sc_get_le32(b);

		cr_assert(!b[5] && !b[6] && !b[7], "reserved chunk bytes");
		if (b[4] == SC_CODEC_RAW) {
			cr_assert_eq(stored, want, "a raw chunk stores its raw length");
			cr_assert(!memcmp(b + CHDR, payload + at, want));
			*raw_seen = true;
		} else {
			cr_assert_eq(b[4], SC_CODEC_ZSTD);
			cr_assert(!memcmp(b + CHDR, ZSTD_MAGIC, 4), "a zstd frame");
			cr_assert_eq(ZSTD_getFrameContentSize(b + CHDR, stored), want);
			cr_assert_eq(ZSTD_findFrameCompressedSize(b + CHDR, stored), stored);
			cr_assert_eq(ZSTD_decompress(out, sizeof(out), b + CHDR, stored), want);
			cr_assert(!memcmp(out, payload + at, want));
			*zstd_seen = true;
		}
		cr_assert_eq(sc_get_le64(b + 8), XXH3_64bits(payload + at, want),
			     "chunk checksum: XXH3-64 of the raw bytes");
		b += CHDR + stored;
	}
	return b;
}

/* The record at @b: header fields, checksums, meta, chunks; its end. */
static const uint8_t *check_record(const uint8_t *b, const struct rec *r, uint32_t seq,
				   bool *raw_seen, bool *zstd_seen)
{
	cr_assert_eq(sc_get_le32(b), r->type);
	cr_assert_eq(sc_get_le16(b + 4), SC_RF_REQUIRED);
	cr_assert_eq(b[6], 1, "the writer's codec: zstd");
	cr_assert_eq(b[7], 12);
	cr_assert_eq(sc_get_le32(b + 8), r->meta_len);
	cr_assert_eq(sc_get_le32(b + 12), seq, "records numbered from 0 without gaps");
	cr_assert_eq(sc_get_le64(b + 16), r->raw_len);
	cr_assert_eq(sc_get_le64(b + 24), 0);
	cr_assert_eq(sc_get_le64(b + 32), XXH3_64bits(r->meta, r->meta_len));
	cr_assert_eq(sc_get_le64(b + 40), XXH3_64bits(b, 40));
	cr_assert(!r->meta_len || !memcmp(b + HDR, r->meta, r->meta_len), "meta, uncompressed");
	return check_chunks(b + HDR + r->meta_len, r->payload, r->raw_len, 12, raw_seen,
			    zstd_seen);
}

/*
 * [R-GEN-1] [R-GEN-2] [R-GEN-3] [R-REC-1] [R-REC-5] [R-CHK-1] [R-VER-5] [R-WR-4]
 * [R-WR-8] The bytes of an image, read with the spec's tables: little-endian
 * integers, XXH3-64 checksums (seed 0; an empty meta's is that of no bytes), zstd
 * frames, records one after the other from header_size on, chunk headers of 16
 * bytes with no raw length (it follows from raw_len), raw chunks in a zstd record,
 * an END record whose index lists every record, a trailer of 40 bytes whose file
 * checksum covers every byte before it.
 */
Test(spec_img, the_bytes_a_writer_lays_out)
{
	struct rec r[4];
	size_t n = sample(r), len;
	bool raw_seen = false, zstd_seen = false;
	const uint8_t *b, *p, *idx, *t;
	uint8_t *file;

	write_image(path_a, r, n, 1, 12);
	file = slurp(path_a, &len);
	b = file;
	cr_assert(!memcmp(b, "\x89SCKPT\r\n\x01\x00", 10), "magic, major 1 little-endian");
	cr_assert_eq(b[10] | b[11] << 8, SC_FORMAT_MINOR);
	cr_assert(!memcmp(b + 12, "\x90\x00\x00\x00\x3e\x00\x00\x00", 8),
		  "header_size 144, x86-64: little-endian");
	cr_assert_eq(sc_get_le32(b + 20), (uint32_t)sysconf(_SC_PAGESIZE));
	cr_assert_eq(sc_get_le64(b + 24), 0);
	cr_assert_eq(sc_get_le64(b + 32), 1700000000123456789ull);
	cr_assert_eq(sc_get_le64(b + 136), XXH3_64bits(b, 136));
	p = b + SC_HEADER_SIZE;
	for (uint32_t i = 0; i < n; i++)
		p = check_record(p, &r[i], i, &raw_seen, &zstd_seen);
	cr_assert(raw_seen && zstd_seen, "a zstd record with raw and zstd chunks");
	/* END, then the trailer */
	cr_assert_eq(sc_get_le32(p), SC_REC_END);
	cr_assert_eq(sc_get_le32(p + 12), n);
	cr_assert_eq(sc_get_le64(p + 16), n * SC_INDEX_ENTRY_SIZE);
	cr_assert_eq(sc_get_le64(p + 32), XXH3_64bits(NULL, 0), "checksum of no bytes");
	t = file + len - SC_TRAILER_SIZE;
	cr_assert(!memcmp(t, SC_TRAILER_MAGIC, 8));
	cr_assert_eq(sc_get_le64(t + 8), (uint64_t)(p - file));
	cr_assert_eq(sc_get_le64(t + 16), n);
	cr_assert_eq(sc_get_le64(t + 24), XXH3_64bits(file, len - SC_TRAILER_SIZE));
	cr_assert_eq(sc_get_le64(t + 32), XXH3_64bits(t, 32));
	/* the index: the END payload, here one chunk */
	idx = p + HDR + CHDR;
	if (p[HDR + 4] == SC_CODEC_ZSTD) {
		static uint8_t decoded[4 * SC_INDEX_ENTRY_SIZE];

		cr_assert_eq(ZSTD_decompress(decoded, sizeof(decoded), idx, sc_get_le32(p + HDR)),
			     sizeof(decoded));
		idx = decoded;
	}
	for (uint64_t i = 0, at = SC_HEADER_SIZE; i < n; i++) {
		const uint8_t *x = idx + SC_INDEX_ENTRY_SIZE * i;

		cr_assert_eq(sc_get_le64(x), at, "entry %llu", (unsigned long long)i);
		cr_assert_eq(sc_get_le64(x + 8), r[i].raw_len);
		cr_assert_eq(sc_get_le32(x + 24), r[i].type);
		cr_assert_eq(sc_get_le32(x + 28), r[i].meta_len);
		cr_assert_eq(sc_get_le16(x + 32), SC_RF_REQUIRED);
		cr_assert(x[34] == 1 && x[35] == 12 && !sc_get_le32(x + 36));
		at += sc_get_le64(x + 16);
		if (i + 1 == n)
			cr_assert_eq(file + at, p, "the records tile the file up to END");
	}
	cr_assert_eq(p + HDR + CHDR + sc_get_le32(p + HDR), t, "END ends at the trailer");
	free(file);
}

/* [R-WR-4] chunks of 1 MiB by default; 4 KiB to 64 MiB on request, nothing else */
Test(spec_img, chunk_shift_of_a_writer)
{
	struct sc_write_opts o;
	struct sc_writer *w;
	struct sc_reader *r;
	struct sc_record rec;
	int fd = open(path_b, O_WRONLY | O_TRUNC);

	cr_assert_geq(fd, 0);
	write_image(path_a, &(struct rec){ SC_REC_FD, SC_RF_REQUIRED, "m", "x", 1, 1 }, 1, 1, 0);
	cr_assert_eq(open_as(&r, path_a, 0), 0);
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	cr_assert_eq(rec.chunk_shift, SC_CHUNK_SHIFT_DEFAULT);
	cr_assert_eq(SC_CHUNK_SHIFT_DEFAULT, 20);
	sc_reader_free(r);
	sc_write_opts_init(&o);
	o.threads = 1;
	for (unsigned shift = 10; shift <= 28; shift++) {
		bool ok = shift >= 12 && shift <= 26;

		o.chunk_shift = shift;
		w = NULL;
		cr_assert_eq(sc_writer_new(&w, fd, path_b, &o), ok ? 0 : -SELFCKPT_EUSAGE,
			     "chunk_shift %u", shift);
		sc_writer_free(w);
	}
	close(fd);
}

/*
 * [R-HDR-11] Producer and kernel are NUL-padded strings that may fill their
 * field; they and the creation time never make a reader refuse an image.
 */
Test(spec_img, producer_kernel_and_time_are_informational)
{
	static const char producer[] = "0123456789abcdef0123456789abcdef";
	char kernel[65];
	struct sc_write_opts o;
	struct sc_writer *w;
	struct sc_reader *r;
	const struct sc_header *h;
	uint8_t bad[32], hdr[SC_HEADER_SIZE];
	static struct ed e;
	FILE *f = fopen(path_a, "wb");

	memset(kernel, 'k', 64);
	kernel[64] = '\0';
	sc_write_opts_init(&o);
	o.threads = 1;
	o.producer = producer;
	o.kernel = kernel;
	o.created_ns = UINT64_MAX;
	cr_assert_eq(sc_writer_new(&w, fileno(f), path_a, &o), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	fclose(f);
	cr_assert_eq(open_as(&r, path_a, 0), 0, "%s", selfckpt_last_error());
	h = sc_reader_header(r);
	cr_assert_str_eq(h->producer, producer);
	cr_assert_str_eq(h->kernel, kernel);
	cr_assert_eq(h->created_ns, UINT64_MAX);
	sc_reader_free(r);
	/* short strings are padded with NUL bytes */
	write_image(path_a, NULL, 0, 1, 0);
	f = fopen(path_a, "rb");
	cr_assert_eq(fread(hdr, 1, sizeof(hdr), f), sizeof(hdr));
	fclose(f);
	for (int i = 40 + (int)strlen("selfckpt spec"); i < 72; i++)
		cr_assert_eq(hdr[i], 0, "producer byte %d", i);
	for (int i = 72 + (int)strlen("6.0.0-spec"); i < 136; i++)
		cr_assert_eq(hdr[i], 0, "kernel byte %d", i);
	/* bytes that are no UTF-8, no NUL, and time 0: still read */
	ed_parse(&e, path_a);
	memset(bad, 0xff, sizeof(bad));
	memcpy(e.header + 40, bad, 32);
	memcpy(e.header + 72, bad, 32);
	memset(e.header + 104, 0x80, 32);
	memset(e.header + 32, 0, 8);
	ed_write(&e, path_a, NULL);
	ed_free(&e);
	expect_both(path_a, 0, "producer, kernel and time of any value");
}

/* ---- what a reader returns, in which order it checks, what it says ---- */

/* [R-ERR-1] 0 or a positive value on success, -errno from the system, -SELFCKPT_E* for a check */
Test(spec_img, reader_return_values)
{
	struct sc_read_opts o = { .threads = 1 };
	struct sc_reader *r;
	struct sc_record rec;
	int fd, ret, n = 0;

	write_sample(path_a, 1);
	cr_assert_eq(open_as(&r, "/nonexistent/image.sckpt", 0), -ENOENT);
	cr_assert_eq(open_as(&r, "/", 0), -EISDIR);
	fd = open(path_a, O_WRONLY | O_CLOEXEC);
	cr_assert_eq(sc_reader_open_fd(&r, fd, path_a, &o), -EBADF);
	close(fd);
	cr_assert_eq(open_as(&r, path_b, 0), -SELFCKPT_EEMPTY); /* mkstemp's empty file */
	cr_assert_eq(open_as(&r, path_a, 0), 0);
	while ((ret = sc_reader_next(r, &rec)) == 1)
		n++;
	cr_assert_eq(ret, 0, "the end");
	cr_assert_eq(n, 4);
	sc_reader_free(r);
}

/* Change the sample's bytes at @at to @v (little-endian, @n bytes), checksums left as they are. */
static void set_le(const char *path, uint64_t at, uint64_t v, size_t n)
{
	uint8_t b[8];

	sc_put_le64(b, v);
	poke(path, at, b, n);
}

static void fix_header_sum(const char *path)
{
	uint8_t h[SC_HEADER_SIZE];
	FILE *f = fopen(path, "rb");

	cr_assert(f && fread(h, 1, sizeof(h), f) == sizeof(h) && !fclose(f));
	sc_put_le64(h + 136, XXH3_64bits(h, 136));
	poke(path, 0, h, sizeof(h));
}

/* [R-ERR-2] the header's checks, in order: the first that fails is reported */
Test(spec_img, header_checks_in_order)
{
	/* major 2, header_size 8192, checksum wrong: the major */
	write_sample(path_a, 0);
	set_le(path_a, 8, 2, 2);
	set_le(path_a, 12, 8192, 4);
	expect_both(path_a, -SELFCKPT_EVERSION, "major before header_size");
	/* 14 bytes with major 2: fewer than 16 bytes */
	cr_assert_eq(truncate(path_a, 14), 0);
	expect_both(path_a, -SELFCKPT_ETRUNCATED, "short before major");
	/* header_size 8192 in a file of 100 bytes: header_size before the length */
	write_sample(path_a, 0);
	set_le(path_a, 12, 8192, 4);
	cr_assert_eq(truncate(path_a, 100), 0);
	expect_both(path_a, -SELFCKPT_EHEADER, "header_size before the file's length");
	/* 100 bytes, header_size 144, checksum not there: the length first */
	write_sample(path_a, 0);
	cr_assert_eq(truncate(path_a, 100), 0);
	expect_both(path_a, -SELFCKPT_ETRUNCATED, "the length before the checksum");
	/* an incompatible flag and a wrong checksum: the checksum */
	write_sample(path_a, 0);
	set_le(path_a, 24, 1ull << 40, 8);
	expect_both(path_a, -SELFCKPT_EHEADER, "the checksum before the flags");
	fix_header_sum(path_a);
	expect_both(path_a, -SELFCKPT_EUNKNOWN, "then the flags");
}

/* Lay the sample (stored) out again with record @i's header changed by @edit. */
static uint64_t edit_header(int level, size_t i, void (*edit)(uint8_t *h), uint64_t *off)
{
	static struct ed e;

	write_sample(path_a, level);
	ed_parse(&e, path_a);
	e.keep_seq = true;
	edit(e.rec[i].h);
	ed_write(&e, path_b, off);
	ed_free(&e);
	return off ? off[i] : 0;
}

static void type0_codec5(uint8_t *h) { sc_put_le32(h, 0); h[6] = 5; }
static void reserved_codec5(uint8_t *h) { sc_put_le16(h + 4, 3); h[6] = 5; }
static void codec5_shift30(uint8_t *h) { h[6] = 5; h[7] = 30; }
static void shift30(uint8_t *h) { h[7] = 30; }
static void seq7(uint8_t *h) { sc_put_le32(h + 12, 7); }
static void unknown_required(uint8_t *h) { sc_put_le32(h, 0x8001); }
static void nothing(uint8_t *h) { (void)h; }

/* [R-ERR-2] a record header's checks, in order */
Test(spec_img, record_header_checks_in_order)
{
	uint64_t off[8], at;
	uint8_t junk = 0xee;

	/* type 0 and a wrong header checksum: the checksum */
	at = edit_header(0, 1, type0_codec5, off);
	poke(path_b, at + 40, &junk, 1);
	expect_both(path_b, -SELFCKPT_ERECORD, "the header checksum first");
	/* then type 0 and reserved bits, before the codec */
	edit_header(0, 1, type0_codec5, off);
	expect_both(path_b, -SELFCKPT_ERESERVED, "type 0 before the codec");
	edit_header(0, 1, reserved_codec5, off);
	expect_both(path_b, -SELFCKPT_ERESERVED, "reserved flags before the codec");
	/* the codec before chunk_shift */
	edit_header(0, 1, codec5_shift30, off);
	expect_both(path_b, -SELFCKPT_ECODEC, "the codec before chunk_shift");
	/* chunk_shift before the meta */
	at = edit_header(0, 1, shift30, off);
	poke(path_b, at + HDR, &junk, 1);
	expect_both(path_b, -SELFCKPT_ELENGTH, "chunk_shift before the meta");
	/* the index (seekable) or seq (stream) before the meta */
	at = edit_header(0, 1, seq7, off);
	poke(path_b, at + HDR, &junk, 1);
	cr_assert_eq(read_all(path_b, 0, NULL), -SELFCKPT_EINDEX, "%s", selfckpt_last_error());
	cr_assert_eq(read_all(path_b, SC_RD_STREAM, NULL), -SELFCKPT_ERECORD);
	/* the meta before an unknown required type (a stream meets the record first) */
	at = edit_header(0, 1, unknown_required, off);
	poke(path_b, at + HDR, &junk, 1);
	cr_assert_eq(read_all(path_b, SC_RD_STREAM, NULL), -SELFCKPT_ERECORD, "%s",
		     selfckpt_last_error());
	edit_header(0, 1, unknown_required, off);
	cr_assert_eq(read_all(path_b, SC_RD_STREAM, NULL), -SELFCKPT_EUNKNOWN);
	/* the editor itself changes nothing else */
	edit_header(0, 1, nothing, off);
	expect_both(path_b, 0, "the sample laid out again");
}

/* Record @i, chunk @k of the sample (level @level): its header changed by @edit. */
static void edit_chunk(int level, size_t i, size_t k, void (*edit)(struct ed_chunk *c))
{
	static struct ed e;

	write_sample(path_a, level);
	ed_parse(&e, path_a);
	cr_assert_lt(k, e.rec[i].n_ch);
	edit(&e.rec[i].ch[k]);
	ed_write(&e, path_b, NULL);
	ed_free(&e);
}

static void reserved_codec7(struct ed_chunk *c) { c->h[6] = 1; c->h[4] = 7; }
static void codec7(struct ed_chunk *c) { c->h[4] = 7; }
static void raw_as_zstd(struct ed_chunk *c) { c->h[4] = SC_CODEC_ZSTD; }
static void frame_and_sum(struct ed_chunk *c) { c->data[0] ^= 1; c->h[8] ^= 1; }
static void flip_data(struct ed_chunk *c) { c->data[100] ^= 0x10; }

/* [R-ERR-2] a chunk's checks, in order */
Test(spec_img, chunk_checks_in_order)
{
	edit_chunk(0, 0, 1, reserved_codec7);
	expect_both(path_b, -SELFCKPT_ERESERVED, "reserved bytes before the codec");
	edit_chunk(0, 0, 1, codec7);
	expect_both(path_b, -SELFCKPT_ECODEC, "the codec");
	/* a raw chunk's bytes called a zstd frame of the same length: the lengths first */
	edit_chunk(0, 0, 1, raw_as_zstd);
	expect_both(path_b, -SELFCKPT_ELENGTH, "the lengths before the frame");
	/* a zstd chunk that is no frame, and whose checksum is wrong: the frame */
	edit_chunk(1, 0, 0, frame_and_sum);
	expect_both(path_b, -SELFCKPT_ECODEC, "the frame before the checksum");
	edit_chunk(0, 0, 1, flip_data);
	expect_both(path_b, -SELFCKPT_ECHUNK, "the checksum last");
}

/* [R-ERR-3] a message names the file, the record and its type, the chunk, the offset, the values */
Test(spec_img, a_message_says_where_and_what)
{
	static struct ed e;
	uint64_t off[8], chunk_at;
	char want[256];
	const char *msg;

	write_sample(path_a, 0);
	ed_parse(&e, path_a);
	e.rec[1].ch[1].data[7] ^= 1;
	ed_write(&e, path_b, off);
	chunk_at = off[1] + HDR + e.rec[1].meta_len + CHDR + sc_get_le32(e.rec[1].ch[0].h);
	ed_free(&e);
	cr_assert_eq(read_all(path_b, 0, NULL), -SELFCKPT_ECHUNK);
	msg = selfckpt_last_error();
	snprintf(want, sizeof(want), "'%s' record 1 (segment) chunk 1 at offset %llu: stored 0x",
		 path_b, (unsigned long long)chunk_at);
	cr_assert(strstr(msg, want), "'%s' does not say '%s'", msg, want);
	cr_assert(strstr(msg, ", computed 0x"), "%s", msg);
}

/* ---- the END record and the index ---- */

static void end_flags_0(struct ed *e) { sc_put_le16(e->end_h + 4, 0); }
static void end_meta_8(struct ed *e) { sc_put_le32(e->end_h + 8, 8); }
static void end_one_more(struct ed *e) { e->end_extra_entries = 1; }

/* [R-IDX-2] END: flags 0x0001, no meta, N x 40 bytes of index */
Test(spec_img, end_record_checks)
{
	void (*edits[])(struct ed *) = { end_flags_0, end_meta_8, end_one_more };
	static struct ed e;

	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		write_sample(path_a, 0);
		ed_parse(&e, path_a);
		sc_put_le16(e.end_h + 4, SC_RF_REQUIRED);
		e.end_custom = true;
		edits[i](&e);
		ed_write(&e, path_b, NULL);
		ed_free(&e);
		expect_both(path_b, -SELFCKPT_EINDEX, "END record");
	}
}

static void entry1_too_short(uint8_t *x, size_t n)
{
	(void)n;
	/* record 1 in fewer bytes than its header and meta; record 2 starts there */
	sc_put_le64(x + SC_INDEX_ENTRY_SIZE + 16, HDR + 23);
	sc_put_le64(x + 2 * SC_INDEX_ENTRY_SIZE, sc_get_le64(x + SC_INDEX_ENTRY_SIZE) + HDR + 23);
}

static void entry3_past_end(uint8_t *x, size_t n)
{
	sc_put_le64(x + (n - 1) * SC_INDEX_ENTRY_SIZE + 16,
		    sc_get_le64(x + (n - 1) * SC_INDEX_ENTRY_SIZE + 16) + 8);
}

/*
 * [R-IDX-6] an entry shorter than its header and meta, one that reaches past
 * END, and a record of type END before the last: the index is refused
 */
Test(spec_img, index_entry_checks)
{
	static struct ed e;
	struct sc_reader *r;

	write_sample(path_a, 0);
	ed_parse(&e, path_a);
	e.index_hook = entry1_too_short;
	ed_write(&e, path_b, NULL);
	cr_assert_eq(open_as(&r, path_b, 0), -SELFCKPT_EINDEX, "%s", selfckpt_last_error());
	e.index_hook = entry3_past_end;
	ed_write(&e, path_b, NULL);
	cr_assert_eq(open_as(&r, path_b, 0), -SELFCKPT_EINDEX, "%s", selfckpt_last_error());
	e.index_hook = NULL;
	sc_put_le32(e.rec[2].h, SC_REC_END);
	ed_write(&e, path_b, NULL);
	ed_free(&e);
	cr_assert_eq(read_all(path_b, 0, NULL), -SELFCKPT_EINDEX, "%s", selfckpt_last_error());
	/* a stream takes it for the END record, whose index then does not fit */
	cr_assert_lt(read_all(path_b, SC_RD_STREAM, NULL), 0);
}

/*
 * [R-IDX-8] a record whose last chunk ends before the extent the index gives it
 * is refused by a reader that reads its chunks to the end
 */
Test(spec_img, chunks_end_where_the_index_says)
{
	static struct ed e;
	size_t handed;

	write_sample(path_a, 0);
	ed_parse(&e, path_a);
	e.rec[1].extra = 16;
	ed_write(&e, path_b, NULL);
	ed_free(&e);
	cr_assert_eq(read_all(path_b, 0, &handed), -SELFCKPT_EINDEX, "%s", selfckpt_last_error());
	cr_assert_eq(handed, 2, "refused at record 1");
}

/* ---- what a reader hands out, and when ---- */

/*
 * [R-RD-1] A seeking reader checks header, trailer, END and index when it opens
 * the image, and hands out no record of an image whose trailer or index is
 * damaged; a damaged record is refused when it is reached.
 */
Test(spec, a_seeking_reader_checks_the_index_first)
{
	static const char *const at_open[] = {
		"trailer-bitflip.sckpt", "trailer-end-offset.sckpt", "index-bitflip.sckpt",
		"index-reserved.sckpt", "index-offset.sckpt", "truncated-before-trailer.sckpt",
	};
	struct sc_reader *r;
	struct sc_record rec;
	char path[256];

	for (size_t i = 0; i < sizeof(at_open) / sizeof(at_open[0]); i++) {
		snprintf(path, sizeof(path), GOLDEN "broken/%s", at_open[i]);
		cr_assert_lt(open_as(&r, path, 0), 0, "%s was opened", at_open[i]);
	}
	/* record 3's chunk is damaged: records 0 to 2 come out, then the error */
	cr_assert_eq(open_as(&r, GOLDEN "broken/raw-chunk-bitflip.sckpt", 0), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(sc_reader_next(r, &rec), 1);
	sc_reader_free(r);
	cr_assert_eq(read_all(GOLDEN "broken/raw-chunk-bitflip.sckpt", 0, NULL),
		     -SELFCKPT_ECHUNK);
}

/* [R-RD-3] a stream hands out records before it has seen the trailer */
Test(spec, a_stream_hands_out_records_before_the_trailer)
{
	size_t handed;

	cr_assert_eq(read_all(GOLDEN "broken/truncated-before-trailer.sckpt", SC_RD_STREAM,
			      &handed), -SELFCKPT_ETRUNCATED);
	cr_assert_eq(handed, 7, "every record came out before the truncation was found");
}

/*
 * [R-SAFE-6] [R-CHK-8] No meta of a record whose meta is damaged, and no
 * payload byte of a damaged chunk, is handed out: a read that reaches into the
 * chunk fails, however few of its bytes it asks for; the chunks before it are
 * handed out.
 */
Test(spec_img, nothing_unchecked_is_handed_out)
{
	static uint8_t buf[3 * 4096];
	static struct ed e;
	struct sc_reader *r;
	struct sc_record rec;

	write_sample(path_a, 0);
	ed_parse(&e, path_a);
	e.rec[0].ch[1].data[5] ^= 1; /* chunk 1 of 3 */
	ed_write(&e, path_b, NULL);
	for (int stream = 0; stream < 2; stream++) {
		cr_assert_eq(open_as(&r, path_b, stream ? SC_RD_STREAM : 0), 0);
		cr_assert_eq(sc_reader_next(r, &rec), 1);
		memset(buf, 0xa5, sizeof(buf));
		cr_assert_eq(sc_reader_read(r, buf, 4095), 0);
		cr_assert_eq(sc_reader_read(r, buf + 4095, 1), 0);
		cr_assert(!memcmp(buf, pay_text, 4096), "chunk 0");
		cr_assert_eq(sc_reader_read(r, buf + 4096, 1), -SELFCKPT_ECHUNK,
			     "one byte of the damaged chunk");
		sc_reader_free(r);
		cr_assert_eq(open_as(&r, path_b, stream ? SC_RD_STREAM : 0), 0);
		cr_assert_eq(sc_reader_next(r, &rec), 1);
		cr_assert_eq(sc_reader_read(r, buf, 4097), -SELFCKPT_ECHUNK,
			     "chunk 0 and one byte of the damaged chunk");
		sc_reader_free(r);
	}
	/* a damaged meta: next() fails, the record is not handed out */
	e.rec[0].ch[1].data[5] ^= 1;
	ed_write(&e, path_b, NULL);
	poke(path_b, SC_HEADER_SIZE + HDR + 2, "!", 1);
	for (int stream = 0; stream < 2; stream++) {
		memset(&rec, 0, sizeof(rec));
		cr_assert_eq(open_as(&r, path_b, stream ? SC_RD_STREAM : 0), 0);
		cr_assert_eq(sc_reader_next(r, &rec), -SELFCKPT_ERECORD);
		cr_assert_null(rec.meta);
		sc_reader_free(r);
	}
	ed_free(&e);
}

/*
 * [R-SAFE-7] A zstd chunk is decoded in one call into its own buffer: a frame
 * whose header asks for a 2 GiB window (more than a streaming decoder accepts
 * by default) still decodes, with no window allocated.
 */
Test(spec_img, zstd_frames_need_no_window)
{
	static struct ed e;
	uint8_t frame[14], *copy;
	struct ed_chunk *c;

	/* magic; FHD: 2-byte content size, no single segment; window 2^31; one RLE block */
	memcpy(frame, ZSTD_MAGIC, 4);
	frame[4] = 0x40;
	frame[5] = 21 << 3;
	sc_put_le16(frame + 6, 4096 - 256);
	frame[8] = (uint8_t)(1 | 1 << 1 | (4096 << 3));
	frame[9] = (uint8_t)(4096 >> 5);
	frame[10] = (uint8_t)(4096 >> 13);
	frame[11] = 0x5a;
	cr_assert_eq(ZSTD_getFrameContentSize(frame, 12), 4096);
	write_sample(path_a, 0);
	ed_parse(&e, path_a);
	c = &e.rec[3].ch[0]; /* 4096 bytes of 0x5a */
	copy = dup_bytes(frame, 12);
	free(c->data);
	c->data = copy;
	c->h[4] = SC_CODEC_ZSTD;
	sc_put_le32(c->h, 12);
	ed_write(&e, path_b, NULL);
	ed_free(&e);
	expect_both(path_b, 0, "a 2 GiB window");
}

/*
 * [R-TYP-2] A reader that only moves records applies §5 to §8: a segment whose
 * meta breaks §9.5 is read, skipped and verified; the segment decoder refuses it.
 */
Test(spec_img, moving_records_does_not_interpret_them)
{
	struct sc_reader *r;
	struct sc_record rec;
	struct sc_segment_info s;
	uint8_t meta[88] = { 0 };

	sc_put_le64(meta, 123);  /* not page-aligned */
	sc_put_le32(meta + 20, 0xffffffffu);
	write_image(path_a, &(struct rec){ SC_REC_SEGMENT, SC_RF_REQUIRED, meta, pay_text,
					   sizeof(meta), 100 }, 1, 1, 0);
	expect_both(path_a, 0, "a reader of records");
	cr_assert_eq(open_as(&r, path_a, 0), 0);
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	cr_assert_eq(sc_reader_skip(r, true), 0);
	cr_assert_eq(sc_reader_verify_file(r), 0);
	cr_assert_eq(sc_reader_seek(r, 0), 0);
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	cr_assert_lt(sc_segment_read(r, &rec, 4096, &s), 0);
	sc_reader_free(r);
}

/* ---- versions ---- */

/*
 * [R-VER-1] [R-VER-3] [R-VER-4] The version is major.minor: this writer writes
 * major 1, an image of a newer minor than this reader's reads (its newer
 * header fields skipped), another major is refused.
 */
Test(spec_img, major_and_minor)
{
	static struct ed e;
	struct sc_reader *r;

	write_sample(path_a, 1);
	ed_parse(&e, path_a);
	cr_assert_eq(sc_get_le16(e.header + 8), 1);
	cr_assert_eq(sc_get_le16(e.header + 10), SC_FORMAT_MINOR);
	e.header = realloc(e.header, SC_HEADER_SIZE + 16);
	memset(e.header + SC_HEADER_SIZE - 8, 0xcd, 24);
	e.header_size = SC_HEADER_SIZE + 16;
	sc_put_le32(e.header + 12, e.header_size);
	sc_put_le16(e.header + 10, SC_FORMAT_MINOR + 1);
	ed_write(&e, path_b, NULL);
	cr_assert_eq(open_as(&r, path_b, 0), 0, "%s", selfckpt_last_error());
	cr_assert_eq(sc_reader_header(r)->minor, SC_FORMAT_MINOR + 1);
	cr_assert_eq(sc_reader_header(r)->header_size, SC_HEADER_SIZE + 16);
	sc_reader_free(r);
	expect_both(path_b, 0, "a newer minor");
	sc_put_le16(e.header + 8, 2);
	ed_write(&e, path_b, NULL);
	ed_free(&e);
	expect_both(path_b, -SELFCKPT_EVERSION, "major 2");
}

/*
 * [R-VER-10] [R-GEN-4] [R-REC-3] Every reserved bit of a record header stays
 * reserved: each of flag bits 1-15 and each bit of the reserved u64 is refused.
 */
Test(spec_img, every_reserved_record_bit_is_refused)
{
	static struct ed e;

	write_sample(path_a, 0);
	ed_parse(&e, path_a);
	for (unsigned bit = 1; bit < 16 + 64; bit++) {
		uint8_t h[HDR];

		memcpy(h, e.rec[1].h, HDR);
		if (bit < 16)
			sc_put_le16(e.rec[1].h + 4, SC_RF_REQUIRED | 1u << bit);
		else
			sc_put_le64(e.rec[1].h + 24, 1ull << (bit - 16));
		ed_write(&e, path_b, NULL);
		memcpy(e.rec[1].h, h, HDR);
		expect_both(path_b, -SELFCKPT_ERESERVED, bit < 16 ? "a flag" : "the reserved u64");
	}
	ed_free(&e);
}

/*
 * [R-VER-11] [R-HDR-8] [R-VER-8] An incompatible header flag (bits 32-63), which
 * a newer minor sets when it encodes structures another way, is refused when
 * the image is opened, before any record; compatible flags are not. Bit 32
 * (1.7, INCREMENTAL) is known to this reader.
 */
Test(spec_img, incompatible_flags_are_refused_at_open)
{
	static struct ed e;
	struct sc_reader *r;

	write_sample(path_a, 1);
	ed_parse(&e, path_a);
	for (unsigned bit = 0; bit < 64; bit++) {
		sc_put_le64(e.header + 24, 1ull << bit);
		ed_write(&e, path_b, NULL);
		for (int stream = 0; stream < 2; stream++) {
			int err = open_as(&r, path_b, stream ? SC_RD_STREAM : 0);

			cr_assert_eq(err, bit <= 32 ? 0 : -SELFCKPT_EUNKNOWN, "bit %u", bit);
			sc_reader_free(r);
		}
		if (bit < 32)
			expect_both(path_b, 0, "a compatible flag");
	}
	ed_free(&e);
}

/* ---- the process, thread, fd and signals records (§9.3, §9.4, §9.6, §9.7) ---- */

/* Read record 0 of @path with @decode (which takes the reader and the record). */
#define DECODE(path, fn, out)                                                               \
	({                                                                                   \
		struct sc_reader *r_;                                                        \
		struct sc_record rec_;                                                       \
		int err_;                                                                    \
		cr_assert_eq(open_as(&r_, (path), 0), 0, "%s", selfckpt_last_error());      \
		cr_assert_eq(sc_reader_next(r_, &rec_), 1);                                  \
		err_ = fn(r_, &rec_, (out));                                                 \
		if (!err_)                                                                   \
			err_ = sc_reader_next(r_, &rec_) < 0 ? -1 : 0;                       \
		sc_reader_free(r_);                                                          \
		err_;                                                                        \
	})

static struct sc_process_info process_sample(void)
{
	static char cwd[] = "/home/user", exe[] = "/usr/bin/prog";
	static uint8_t auxv[32] = { 33, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4 };
	struct sc_process_info p = { .pid = 1234, .ppid = 1, .uid = 1000, .gid = 100,
				     .umask = 022, .brk = 0x5000000, .vdso_block_start = 0x7fff0000,
				     .handoff = 0x7f0000001000ull,
				     .thread_start = 0x7f0000002000ull,
				     .cwd = cwd, .exe = exe, .auxv = auxv, .auxv_len = 32 };

	for (int i = 0; i < SC_RLIMITS; i++) {
		p.rlim_cur[i] = (uint64_t)i;
		p.rlim_max[i] = ~(uint64_t)i;
	}
	return p;
}

/* Write @p's record; then its meta byte @at set to @v unless @at < 0; payload @extra bytes. */
static void process_image(const char *path, int at, uint8_t v, size_t extra)
{
	struct sc_process_info p = process_sample();
	struct sc_write_opts o;
	struct sc_writer *w;
	static struct ed e;
	FILE *f = fopen(path, "wb");

	sc_write_opts_init(&o);
	o.threads = 1;
	cr_assert_eq(sc_writer_new(&w, fileno(f), path, &o), 0);
	cr_assert_eq(sc_process_write(w, &p), 0);
	cr_assert_eq(sc_writer_record(w, SC_REC_FD, SC_RF_REQUIRED, "after", 5, NULL, 0), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	fclose(f);
	ed_parse(&e, path);
	cr_assert_eq(sc_get_le64(e.rec[0].h + 16), 0, "the writer's process record has no payload");
	if (at >= 0)
		e.rec[0].meta[at] = v;
	if (extra) {
		e.rec[0].n_ch = 1;
		e.rec[0].ch = realloc(e.rec[0].ch, sizeof(*e.rec[0].ch));
		memset(e.rec[0].ch[0].h, 0, CHDR);
		sc_put_le32(e.rec[0].ch[0].h, (uint32_t)extra);
		e.rec[0].ch[0].data = dup_bytes(pay_text, extra);
		sc_put_le64(e.rec[0].ch[0].h + 8, XXH3_64bits(pay_text, extra));
		sc_put_le64(e.rec[0].h + 16, extra);
	}
	ed_write(&e, path, NULL);
	ed_free(&e);
}

/*
 * [R-TYP-6] [R-VER-12] process: the u32 at 20 is reserved; the writer writes no
 * payload, and a reader skips one (a later minor may add it) after checking it.
 */
Test(spec_img, process_record)
{
	struct sc_process_info p;

	sample(&(struct rec[4]){ 0 }[0]);
	process_image(path_a, -1, 0, 0);
	cr_assert_eq(DECODE(path_a, sc_process_read, &p), 0, "%s", selfckpt_last_error());
	cr_assert(p.pid == 1234 && p.uid == 1000 && p.umask == 022 && p.brk == 0x5000000);
	cr_assert(p.handoff == 0x7f0000001000ull && p.thread_start == 0x7f0000002000ull);
	cr_assert(p.rlim_cur[15] == 15 && p.rlim_max[3] == ~3ull);
	cr_assert_str_eq(p.cwd, "/home/user");
	cr_assert_str_eq(p.exe, "/usr/bin/prog");
	cr_assert(p.auxv_len == 32 && p.auxv[0] == 33 && p.auxv[11] == 4);
	sc_process_free(&p);
	for (int at = 20; at < 24; at++) {
		process_image(path_a, at, 1, 0);
		cr_assert_eq(DECODE(path_a, sc_process_read, &p), -SELFCKPT_ERESERVED, "byte %d",
			     at);
	}
	process_image(path_a, -1, 0, 1000);
	cr_assert_eq(DECODE(path_a, sc_process_read, &p), 0, "%s", selfckpt_last_error());
	cr_assert_str_eq(p.cwd, "/home/user");
	sc_process_free(&p);
	expect_both(path_a, 0, "a process record with a payload");
}

/* A thread record; byte @at set to @v, the context length @ctx_len, the meta cut to @meta_len (0: as written). */
static void thread_image_cut(const char *path, int at, uint8_t v, uint32_t ctx_len, uint32_t meta_len)
{
	struct sc_thread_record t = { .tid = 77, .flags = 1, .fs_base = 0x7f00000000ull,
				      .rseq_len = 32, .sigmask = 1ull << 9, .state = 0x1234000,
				      .pdeath_sig = 28 };
	static struct ed e;

	for (int i = 0; i < 72; i++)
		t.ctx[i] = (uint8_t)(i + 1);
	{
		struct sc_write_opts o;
		struct sc_writer *w;
		FILE *f = fopen(path, "wb");

		sc_write_opts_init(&o);
		o.threads = 1;
		cr_assert_eq(sc_writer_new(&w, fileno(f), path, &o), 0);
		cr_assert_eq(sc_thread_write(w, &t), 0);
		cr_assert_eq(sc_writer_finish(w), 0);
		sc_writer_free(w);
		fclose(f);
	}
	ed_parse(&e, path);
	if (at >= 0)
		e.rec[0].meta[at] = v;
	sc_put_le32(e.rec[0].meta + 104, ctx_len);
	if (meta_len)
		e.rec[0].meta_len = meta_len;
	ed_write(&e, path, NULL);
	ed_free(&e);
}

static void thread_image(const char *path, int at, uint8_t v, uint32_t ctx_len)
{
	thread_image_cut(path, at, v, ctx_len, 0);
}

/*
 * [R-TYP-7] thread: the u32s at 84, 108 and (1.6) 124 and flag bits 1-31 are
 * reserved; the payload is the 72-byte context, and the context length must be
 * raw_len, 72. The parent-death signal (1.6) is read where the meta holds it; a
 * 1.5 record (120 bytes) has none.
 */
Test(spec_img, thread_record)
{
	struct sc_thread_record t;
	const int reserved[] = { 84, 87, 108, 111, 124, 127 };

	thread_image(path_a, -1, 0, 72);
	cr_assert_eq(DECODE(path_a, sc_thread_read, &t), 0, "%s", selfckpt_last_error());
	cr_assert(t.tid == 77 && t.flags == 1 && t.fs_base == 0x7f00000000ull);
	cr_assert(t.rseq_len == 32 && t.sigmask == 1ull << 9 && t.state == 0x1234000);
	cr_assert(t.ctx[0] == 1 && t.ctx[71] == 72, "the context is the payload");
	cr_assert_eq(t.pdeath_sig, 28);
	thread_image_cut(path_a, -1, 0, 72, 120);
	cr_assert_eq(DECODE(path_a, sc_thread_read, &t), 0, "%s", selfckpt_last_error());
	cr_assert(t.tid == 77 && t.pdeath_sig == 0, "a 1.5 thread record has no parent-death signal");
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		thread_image(path_a, reserved[i], 1, 72);
		cr_assert_eq(DECODE(path_a, sc_thread_read, &t), -SELFCKPT_ERESERVED, "byte %d",
			     reserved[i]);
	}
	for (int bit = 1; bit < 32; bit++) {
		thread_image(path_a, 4 + bit / 8, (uint8_t)(1u << (bit % 8)) | (bit < 8), 72);
		cr_assert_eq(DECODE(path_a, sc_thread_read, &t), -SELFCKPT_ERESERVED, "bit %d",
			     bit);
	}
	thread_image(path_a, -1, 0, 64);
	cr_assert_eq(DECODE(path_a, sc_thread_read, &t), -SELFCKPT_ELENGTH);
	thread_image(path_a, -1, 0, 0);
	cr_assert_eq(DECODE(path_a, sc_thread_read, &t), -SELFCKPT_ELENGTH);
}

/* [R-TYP-8] fd: the payload is the saved contents, empty or not */
Test(spec_img, fd_record_payload)
{
	static const size_t lens[] = { 0, 1, 4096, 10000 };
	struct sc_fd f;

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct sc_fd in = { .fd = 9, .kind = SC_FD_MEMFD, .path = "/memfd:x (deleted)",
				    .data = pay_text, .data_len = lens[i] };
		struct sc_write_opts o;
		struct sc_writer *w;
		FILE *file = fopen(path_a, "wb");

		sample(&(struct rec[4]){ 0 }[0]);
		sc_write_opts_init(&o);
		o.threads = 1;
		o.chunk_shift = 12;
		cr_assert_eq(sc_writer_new(&w, fileno(file), path_a, &o), 0);
		cr_assert_eq(sc_fd_write_record(w, &in), 0);
		cr_assert_eq(sc_writer_finish(w), 0);
		sc_writer_free(w);
		fclose(file);
		cr_assert_eq(DECODE(path_a, sc_fd_read_record, &f), 0, "%s", selfckpt_last_error());
		cr_assert_eq(f.data_len, lens[i]);
		cr_assert(!lens[i] || !memcmp(f.data, pay_text, lens[i]));
		cr_assert_str_eq(f.path, "/memfd:x (deleted)");
		free(f.path);
		free(f.data);
	}
}

/* One fd record of a pipe's read end with O_ASYNC and an owner, its meta cut to @meta_len (0: as written). */
static void owner_image(const char *path, uint32_t meta_len)
{
	struct sc_fd in = { .fd = 5, .kind = SC_FD_PIPE_R, .open_flags = O_ASYNC, .path = "pipe:[7]",
			    .pipe_id = 7, .owner_type = 1, .owner_pid = 4242, .owner_sig = 36 };
	struct sc_write_opts o;
	struct sc_writer *w;
	FILE *file = fopen(path, "wb");
	static struct ed e;

	sc_write_opts_init(&o);
	o.threads = 1;
	cr_assert_eq(sc_writer_new(&w, fileno(file), path, &o), 0);
	cr_assert_eq(sc_fd_write_record(w, &in), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	fclose(file);
	if (!meta_len)
		return;
	ed_parse(&e, path);
	/* the path ends the meta: moved to follow the shorter fixed part */
	memmove(e.rec[0].meta + meta_len - 8, e.rec[0].meta + e.rec[0].meta_len - 8, 8);
	e.rec[0].meta_len = meta_len;
	ed_write(&e, path, NULL);
	ed_free(&e);
}

/*
 * [R-TYP-12] (1.6) fd: a description with O_ASYNC keeps its owner and signal;
 * a record of 1.2 to 1.5 (an 88-byte fixed part) has none.
 */
Test(spec_img, fd_record_signal_owner)
{
	struct sc_fd f;

	owner_image(path_a, 0);
	cr_assert_eq(DECODE(path_a, sc_fd_read_record, &f), 0, "%s", selfckpt_last_error());
	cr_assert(f.owner_type == 1 && f.owner_pid == 4242 && f.owner_sig == 36);
	cr_assert_str_eq(f.path, "pipe:[7]");
	free(f.path);
	free(f.data);
	owner_image(path_a, 88 + 8);
	cr_assert_eq(DECODE(path_a, sc_fd_read_record, &f), 0, "%s", selfckpt_last_error());
	cr_assert(f.owner_type == 0 && f.owner_pid == 0 && f.owner_sig == 0 && f.pipe_id == 7);
	cr_assert_str_eq(f.path, "pipe:[7]");
	free(f.path);
	free(f.data);
}

/*
 * [R-TYP-9] [R-VER-12] signals: the u32 at 4 is reserved; no payload from the
 * writer, one skipped by a reader
 */
Test(spec_img, signals_record)
{
	struct sc_signals_info in = { .pending = 1ull << 14 }, out;
	static struct ed e;

	for (int i = 0; i < SC_SIGNALS; i++)
		in.act[i] = (struct sc_sigaction_record){ (uint64_t)i, 0x4000000, 0x401000,
							  1ull << i };
	{
		struct sc_write_opts o;
		struct sc_writer *w;
		FILE *f = fopen(path_a, "wb");

		sc_write_opts_init(&o);
		o.threads = 1;
		cr_assert_eq(sc_writer_new(&w, fileno(f), path_a, &o), 0);
		cr_assert_eq(sc_signals_write(w, &in), 0);
		cr_assert_eq(sc_writer_finish(w), 0);
		sc_writer_free(w);
		fclose(f);
	}
	cr_assert_eq(DECODE(path_a, sc_signals_read, &out), 0, "%s", selfckpt_last_error());
	cr_assert(!memcmp(&in, &out, sizeof(in)), "the actions and the pending set come back");
	ed_parse(&e, path_a);
	cr_assert_eq(sc_get_le64(e.rec[0].h + 16), 0, "no payload");
	e.rec[0].meta[5] = 1;
	ed_write(&e, path_a, NULL);
	cr_assert_eq(DECODE(path_a, sc_signals_read, &out), -SELFCKPT_ERESERVED);
	e.rec[0].meta[5] = 0;
	e.rec[0].n_ch = 1;
	e.rec[0].ch = realloc(e.rec[0].ch, sizeof(*e.rec[0].ch));
	memset(e.rec[0].ch[0].h, 0, CHDR);
	sc_put_le32(e.rec[0].ch[0].h, 7);
	e.rec[0].ch[0].data = dup_bytes((const uint8_t *)"payload", 7);
	sc_put_le64(e.rec[0].ch[0].h + 8, XXH3_64bits("payload", 7));
	sc_put_le64(e.rec[0].h + 16, 7);
	ed_write(&e, path_a, NULL);
	ed_free(&e);
	cr_assert_eq(DECODE(path_a, sc_signals_read, &out), 0, "%s", selfckpt_last_error());
	cr_assert_eq(out.pending, 1ull << 14);
}

/* ---- what a checkpoint of a real program writes ---- */

static void check_reserved_meta(const struct ed_rec *r)
{
	const uint8_t *m = r->meta;
	uint32_t type = sc_get_le32(r->h);

	if (type == SC_REC_PROCESS)
		cr_assert_eq(sc_get_le32(m + 20), 0, "process reserved field");
	if (type == SC_REC_THREAD)
		cr_assert(!sc_get_le32(m + 84) && !sc_get_le32(m + 108) &&
			  !(sc_get_le32(m + 4) & ~1u), "thread reserved fields");
	if (type == SC_REC_SIGNALS)
		cr_assert_eq(sc_get_le32(m + 4), 0, "signals reserved field");
	if (type == SC_REC_SEGMENT) {
		uint32_t runs = sc_get_le32(m + 64);
		const uint8_t *v = m + r->meta_len - sc_get_le16(m + 68) - 16ull * runs;

		cr_assert(!sc_get_le16(m + 70) && !(sc_get_le32(m + 20) & ~SC_SEG_KNOWN) &&
			  !(sc_get_le32(m + 16) & ~7u), "segment reserved fields");
		for (uint32_t i = 0; i < runs; i++, v += 16)
			cr_assert(!v[13] && !v[14] && !v[15], "run %u", i);
	}
}

/* The index of the image in @b (@len bytes), decoded, into @out; its entries. */
static size_t raw_index(const uint8_t *b, size_t len, uint8_t *out, size_t cap)
{
	const uint8_t *t = b + len - SC_TRAILER_SIZE, *end = b + sc_get_le64(t + 8);
	uint64_t n = sc_get_le64(t + 16), done = 0;
	const uint8_t *c = end + HDR;

	cr_assert_leq(n * SC_INDEX_ENTRY_SIZE, cap);
	while (done < n * SC_INDEX_ENTRY_SIZE) {
		uint32_t stored = sc_get_le32(c);
		size_t want = n * SC_INDEX_ENTRY_SIZE - done < (1u << end[7]) ?
			      n * SC_INDEX_ENTRY_SIZE - done : (1u << end[7]);

		cr_assert(!c[5] && !c[6] && !c[7]);
		if (c[4] == SC_CODEC_ZSTD)
			cr_assert_eq(ZSTD_decompress(out + done, want, c + CHDR, stored), want);
		else
			memcpy(out + done, c + CHDR, stored);
		done += want;
		c += CHDR + stored;
	}
	return (size_t)n;
}

/* Is [@addr, @addr + 1) in a segment of @e with all of @prot? */
static bool in_segment(const struct ed *e, uint64_t addr, uint32_t prot)
{
	for (size_t i = 0; i < e->n; i++) {
		const uint8_t *m = e->rec[i].meta;

		if (sc_get_le32(e->rec[i].h) == SC_REC_SEGMENT && sc_get_le64(m) <= addr &&
		    addr < sc_get_le64(m) + sc_get_le64(m + 8) &&
		    (sc_get_le32(m + 16) & prot) == prot)
			return true;
	}
	return false;
}

/*
 * [R-WR-7] [R-TYP-1] [R-TYP-11] The image of a program with threads: every
 * reserved field and bit is zero (record headers, chunk headers, metas, runs,
 * index entries), types 1-7 have REQUIRED set; the hand-off and thread-start
 * addresses of the process record, and each thread's state address, point into
 * the saved memory (writable, executable, writable).
 */
Test(roundtrip, a_checkpoint_writes_reserved_fields_as_zero)
{
	static uint8_t index[RECS_MAX * SC_INDEX_ENTRY_SIZE];
	static struct ed e;
	const char *argv[MAX_ARGS];
	size_t len, n, threads = 0;
	uint8_t *file;
	struct run r;

	prog_argv(argv, "threads", in_base("ck/img.sckpt"), in_base("ck"), NULL);
	run(argv, &r);
	expect_killed(&r, "threads checkpoint");
	run_free(&r);
	ed_parse(&e, in_base("ck/img.sckpt"));
	for (size_t i = 0; i < e.n; i++) {
		const struct ed_rec *rec = &e.rec[i];
		uint32_t type = sc_get_le32(rec->h);

		cr_assert(type >= SC_REC_PROCESS && type <= SC_REC_DEVMEM, "record %zu", i);
		cr_assert_eq(sc_get_le16(rec->h + 4), SC_RF_REQUIRED, "record %zu", i);
		cr_assert_eq(sc_get_le64(rec->h + 24), 0, "record %zu", i);
		for (size_t k = 0; k < rec->n_ch; k++)
			cr_assert(!rec->ch[k].h[5] && !rec->ch[k].h[6] && !rec->ch[k].h[7]);
		check_reserved_meta(rec);
		if (type == SC_REC_PROCESS) {
			cr_assert(in_segment(&e, sc_get_le64(rec->meta + 168), 2), "hand-off");
			cr_assert(in_segment(&e, sc_get_le64(rec->meta + 176), 4), "thread start");
		}
		if (type == SC_REC_THREAD) {
			cr_assert(in_segment(&e, sc_get_le64(rec->meta + 112), 2), "thread state");
			threads++;
		}
	}
	cr_assert_gt(threads, 1);
	file = slurp(in_base("ck/img.sckpt"), &len);
	n = raw_index(file, len, index, sizeof(index));
	cr_assert_eq(n, e.n);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(sc_get_le32(index + SC_INDEX_ENTRY_SIZE * i + 36), 0, "entry %zu", i);
	free(file);
	ed_free(&e);
}

/* Every requirement of spec/image-format.md is cited by a test (tests/spec-coverage.sh). */
Test(spec, every_requirement_is_cited_by_a_test)
{
	const char *argv[] = { "/bin/sh", "tests/spec-coverage.sh", NULL };
	struct run r;

	run(argv, &r);
	expect_exit(&r, 0, "tests/spec-coverage.sh");
	run_free(&r);
}
