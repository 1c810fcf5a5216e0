/* SPDX-License-Identifier: MIT */
/*
 * mkgolden.c - write the golden images of tests/golden/.
 *
 *   mkgolden DIR      writes the .sckpt files of DIR/good and DIR/broken
 *
 * The good images come from the writer with fixed options (creation time,
 * producer, kernel, one thread, 4 KiB chunks), so they are reproducible as long
 * as the zstd library compresses the same way. Every broken image is a good
 * one changed by byte surgery; every checksum the surgery does not aim at is
 * recomputed, so that exactly one check fails (tests/golden/README.md names
 * it, tests/format/test_golden.c proves it).
 *
 * The images are committed: regenerate them only when the format changes, and
 * update the offsets that test_golden.c expects in messages.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "compress/sc_compress.h"
#include "format/format_internal.h"
#include "format/sc_format.h"
#include "format/sc_log.h"

#define GOLDEN_NS 1700000000123456789ull
#define OPT_TYPE 0x8001u /* an optional extension record type */
#define MAX_RECS 32
#define MAX_CHUNKS 64

struct image {
	uint8_t *b;
	size_t n;
};

struct chunk_at {
	size_t off; /* chunk header */
	uint32_t stored, raw;
	uint8_t codec;
};

struct rec_at {
	size_t off, meta_off, end;
	uint32_t type, meta_len;
	uint16_t flags;
	uint64_t raw_len;
	size_t n_chunks;
	struct chunk_at ch[MAX_CHUNKS];
};

struct layout {
	size_t header_size, n_recs, trailer; /* n_recs counts END too */
	struct rec_at rec[MAX_RECS];
};

static const char *out_dir;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("mkgolden: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* ---- deterministic contents ---- */

static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void fill_random(uint8_t *p, size_t n, uint64_t seed)
{
	rng_state = seed;
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rng();
}

static void fill_text(uint8_t *p, size_t n, unsigned salt)
{
	size_t len = 0;

	for (unsigned line = 0; len < n; line++) {
		char s[96];
		int k = snprintf(s, sizeof(s), "golden line %u of block %u: the quick brown fox\n",
				 line, salt);

		for (int i = 0; i < k && len < n; i++)
			p[len++] = (uint8_t)s[i];
	}
}

/* ---- records of the good images ---- */

static void check(int err, const char *what)
{
	if (err < 0)
		die("%s: %s (%s)", what, selfckpt_strerror(err), selfckpt_last_error());
}

static void rec_process(struct sc_writer *w)
{
	static const char cwd[] = "/golden", exe[] = "/golden/bin/app";
	uint8_t m[120 + 16 * 16 + sizeof(cwd) - 1 + sizeof(exe) - 1] = { 0 };
	uint8_t *v = m + 120;

	sc_put_le32(m + 0, 4242);        /* pid */
	sc_put_le32(m + 4, 1);           /* ppid */
	sc_put_le32(m + 8, 1000);        /* uid */
	sc_put_le32(m + 12, 1000);       /* gid */
	sc_put_le32(m + 16, 022);        /* umask */
	sc_put_le64(m + 24, 0x5555a000); /* start_brk */
	sc_put_le64(m + 32, 0x5557b000); /* brk */
	sc_put_le64(m + 40, 0x7ffc0000e000);
	sc_put_le32(m + 104, 16);        /* rlimit count */
	sc_put_le32(m + 108, sizeof(cwd) - 1);
	sc_put_le32(m + 112, sizeof(exe) - 1);
	for (int i = 0; i < 16; i++, v += 16) {
		sc_put_le64(v, 1000u + (unsigned)i);
		sc_put_le64(v + 8, ~0ull);
	}
	memcpy(v, cwd, sizeof(cwd) - 1);
	memcpy(v + sizeof(cwd) - 1, exe, sizeof(exe) - 1);
	check(sc_writer_record(w, SC_REC_PROCESS, SC_RF_REQUIRED, m, sizeof(m), NULL, 0),
	      "process record");
}

/* A thread whose 600-byte context is random: one chunk, stored raw. */
static void rec_thread(struct sc_writer *w)
{
	uint8_t m[112] = { 0 }, ctx[600];

	fill_random(ctx, sizeof(ctx), 0x7468726561640001ull);
	sc_put_le32(m + 0, 4242);   /* tid */
	sc_put_le32(m + 4, 1);      /* the checkpointing thread */
	sc_put_le64(m + 8, 0x7f0000001000);
	sc_put_le32(m + 104, sizeof(ctx));
	check(sc_writer_record(w, SC_REC_THREAD, SC_RF_REQUIRED, m, sizeof(m), ctx, sizeof(ctx)),
	      "thread record");
}

static void fd_meta(uint8_t *m, uint32_t fd, uint32_t kind, const char *path)
{
	memset(m, 0, 72);
	sc_put_le32(m + 0, fd);
	sc_put_le32(m + 4, kind);
	sc_put_le32(m + 8, 02);      /* O_RDWR */
	sc_put_le32(m + 56, 0100600);
	sc_put_le32(m + 60, (uint32_t)strlen(path));
	memcpy(m + 72, path, strlen(path));
}

/* A regular file: no payload. */
static void rec_fd_empty(struct sc_writer *w)
{
	static const char path[] = "/golden/data.txt";
	uint8_t m[72 + sizeof(path) - 1];

	fd_meta(m, 3, 0, path);
	check(sc_writer_record(w, SC_REC_FD, SC_RF_REQUIRED, m, sizeof(m), NULL, 0),
	      "empty fd record");
}

/*
 * A segment of 6 pages, pages 0-4 stored, page 5 zero: 5 chunks of 4 KiB,
 * text and zeros (zstd) alternating with random bytes (stored raw).
 */
static void rec_segment(struct sc_writer *w)
{
	uint8_t m[72 + 2 * 16] = { 0 };
	static uint8_t pages[5 * 4096];

	sc_put_le64(m + 0, 0x7f1234560000);
	sc_put_le64(m + 8, 6 * 4096);
	sc_put_le32(m + 16, 3);  /* read, write */
	sc_put_le32(m + 64, 2);  /* runs */
	sc_put_le64(m + 72, 0);  /* run 0: pages 0-4 stored */
	sc_put_le32(m + 80, 5);
	m[84] = 0;
	sc_put_le64(m + 88, 5);  /* run 1: page 5 zero */
	sc_put_le32(m + 96, 1);
	m[100] = 1;
	fill_text(pages, 4096, 1);
	fill_random(pages + 4096, 4096, 0x7365676d656e7401ull);
	memset(pages + 2 * 4096, 0, 4096);
	fill_random(pages + 3 * 4096, 4096, 0x7365676d656e7402ull);
	fill_text(pages + 4 * 4096, 4096, 2);
	check(sc_writer_record(w, SC_REC_SEGMENT, SC_RF_REQUIRED, m, sizeof(m), pages,
			       sizeof(pages)), "segment record");
}

static void rec_signals(struct sc_writer *w)
{
	static uint8_t m[16 + 64 * 32];

	memset(m, 0, sizeof(m));
	sc_put_le32(m, 64);
	sc_put_le64(m + 16 + 1 * 32, 0x401000); /* SIGINT (2) has a handler */
	sc_put_le64(m + 16 + 1 * 32 + 8, 0x04000000);
	check(sc_writer_record(w, SC_REC_SIGNALS, SC_RF_REQUIRED, m, sizeof(m), NULL, 0),
	      "signals record");
}

/* A memfd with 5000 bytes of text: a full chunk and a partial one. */
static void rec_fd_contents(struct sc_writer *w)
{
	static const char path[] = "/memfd:golden (deleted)";
	uint8_t m[72 + sizeof(path) - 1], data[5000];

	fd_meta(m, 4, 4, path);
	sc_put_le64(m + 40, sizeof(data));
	fill_text(data, sizeof(data), 3);
	check(sc_writer_record(w, SC_REC_FD, SC_RF_REQUIRED, m, sizeof(m), data, sizeof(data)),
	      "fd record");
}

static void rec_cuda_log(struct sc_writer *w)
{
	uint8_t m[16] = { 0 }, log[256];

	sc_put_le32(m, 1);
	sc_put_le32(m + 4, 2);
	sc_put_le32(m + 8, 1);
	fill_text(log, sizeof(log), 4);
	check(sc_writer_record(w, SC_REC_CUDA_LOG, SC_RF_REQUIRED, m, sizeof(m), log, sizeof(log)),
	      "cuda-log record");
}

static void records_small(struct sc_writer *w)
{
	rec_process(w);   /* 0: meta only */
	rec_thread(w);    /* 1: one raw chunk */
	rec_fd_empty(w);  /* 2: empty payload */
	rec_segment(w);   /* 3: 5 chunks, raw and zstd */
	rec_signals(w);   /* 4: large meta, no payload */
	rec_fd_contents(w); /* 5: 2 chunks */
	rec_cuda_log(w);  /* 6 */
}

static void records_none(struct sc_writer *w)
{
	(void)w;
}

/* An optional record of a type this version does not know, between two known ones. */
static void records_optional(struct sc_writer *w)
{
	uint8_t data[3000];

	rec_process(w);
	fill_text(data, sizeof(data), 5);
	check(sc_writer_record(w, OPT_TYPE, 0, "ext-meta", 8, data, sizeof(data)),
	      "optional record");
	rec_thread(w);
}

/* ---- images in memory ---- */

static struct image make_image(int level, void (*records)(struct sc_writer *))
{
	struct sc_write_opts o;
	struct sc_writer *w;
	struct image img;
	struct stat st;
	int fd = memfd_create("golden", 0);

	if (fd < 0)
		die("memfd_create: %s", strerror(errno));
	sc_write_opts_init(&o);
	o.level = level;
	o.threads = 1;
	o.chunk_shift = 12;
	o.created_ns = GOLDEN_NS;
	o.producer = "selfckpt golden";
	o.kernel = "golden";
	check(sc_writer_new(&w, fd, "golden", &o), "writer");
	records(w);
	check(sc_writer_finish(w), "finish");
	sc_writer_free(w);
	if (fstat(fd, &st) < 0)
		die("fstat: %s", strerror(errno));
	img.n = (size_t)st.st_size;
	img.b = malloc(img.n);
	if (!img.b || pread(fd, img.b, img.n, 0) != (ssize_t)img.n)
		die("cannot read the image back");
	close(fd);
	return img;
}

static struct image copy(const struct image *src)
{
	struct image img = { malloc(src->n ? src->n : 1), src->n };

	if (!img.b)
		die("out of memory");
	memcpy(img.b, src->b, src->n);
	return img;
}

/* Walk the records front to back, as a streaming reader would, trusting the bytes. */
static void walk(const struct image *img, struct layout *l)
{
	size_t off;

	memset(l, 0, sizeof(*l));
	l->header_size = sc_get_le32(img->b + 12);
	off = l->header_size;
	for (;;) {
		struct rec_at *r = &l->rec[l->n_recs++];
		const uint8_t *h = img->b + off;
		unsigned shift;

		if (l->n_recs > MAX_RECS)
			die("too many records");
		r->off = off;
		r->type = sc_get_le32(h);
		r->flags = sc_get_le16(h + 4);
		shift = h[7];
		r->meta_len = sc_get_le32(h + 8);
		r->raw_len = sc_get_le64(h + 16);
		r->meta_off = off + SC_RECORD_HEADER_SIZE;
		off = r->meta_off + r->meta_len;
		r->n_chunks = sc_chunk_count(r->raw_len, shift);
		if (r->n_chunks > MAX_CHUNKS)
			die("too many chunks");
		for (size_t i = 0; i < r->n_chunks; i++) {
			struct chunk_at *c = &r->ch[i];

			c->off = off;
			c->stored = sc_get_le32(img->b + off);
			c->codec = img->b[off + 4];
			c->raw = sc_chunk_raw_len(r->raw_len, shift, i);
			off += SC_CHUNK_HEADER_SIZE + c->stored;
		}
		r->end = off;
		if (r->type == SC_REC_END)
			break;
	}
	l->trailer = off;
	if (off + SC_TRAILER_SIZE != img->n)
		die("image does not end in its trailer");
}

/* ---- surgery ---- */

static void flip(struct image *img, size_t off, unsigned bit)
{
	if (off >= img->n)
		die("flip past the end");
	img->b[off] ^= (uint8_t)(1u << bit);
}

static void fix_header(struct image *img)
{
	size_t hs = sc_get_le32(img->b + 12);

	sc_put_le64(img->b + hs - 8, XXH3_64bits(img->b, hs - 8));
}

static void fix_record(struct image *img, size_t off)
{
	sc_put_le64(img->b + off + 40, XXH3_64bits(img->b + off, 40));
}

/* The file checksum and the trailer checksum, after any change before the trailer. */
static void fix_tail(struct image *img)
{
	uint8_t *t = img->b + img->n - SC_TRAILER_SIZE;

	sc_put_le64(t + 24, XXH3_64bits(img->b, img->n - SC_TRAILER_SIZE));
	sc_put_le64(t + 32, XXH3_64bits(t, 32));
}

/*
 * Decode the index, let @edit change its entries, and write the END record
 * back with its chunks stored raw (so the index bytes are plain in the file),
 * then fix the trailer.
 */
static void edit_index(struct image *img, void (*edit)(uint8_t *idx, size_t n, void *arg),
		       void *arg)
{
	struct layout l;
	struct rec_at *end;
	uint8_t *idx, *out, *p;
	size_t size, n_out;
	unsigned shift;

	walk(img, &l);
	end = &l.rec[l.n_recs - 1];
	shift = img->b[end->off + 7];
	size = end->raw_len;
	idx = malloc(size ? size : 1);
	for (size_t i = 0, at = 0; i < end->n_chunks; at += end->ch[i].raw, i++) {
		const struct chunk_at *c = &end->ch[i];

		if (sc_chunk_decompress(c->codec, img->b + c->off + SC_CHUNK_HEADER_SIZE,
					c->stored, idx + at, c->raw) < 0)
			die("cannot decode the index");
	}
	edit(idx, size / SC_INDEX_ENTRY_SIZE, arg);
	n_out = end->meta_off + end->n_chunks * SC_CHUNK_HEADER_SIZE + size + SC_TRAILER_SIZE;
	out = calloc(1, n_out);
	memcpy(out, img->b, end->meta_off);
	p = out + end->meta_off;
	for (size_t i = 0, at = 0; i < end->n_chunks; i++) {
		uint32_t len = sc_chunk_raw_len(size, shift, i);

		sc_put_le32(p, len);
		sc_put_le64(p + 8, XXH3_64bits(idx + at, len));
		memcpy(p + SC_CHUNK_HEADER_SIZE, idx + at, len);
		p += SC_CHUNK_HEADER_SIZE + len;
		at += len;
	}
	memcpy(p, img->b + l.trailer, SC_TRAILER_SIZE);
	free(img->b);
	free(idx);
	img->b = out;
	img->n = n_out;
	fix_tail(img);
}

struct entry_patch {
	size_t entry, field, width;
	uint64_t value;
};

static void put_field(uint8_t *p, size_t width, uint64_t v)
{
	if (width == 8)
		sc_put_le64(p, v);
	else if (width == 4)
		sc_put_le32(p, (uint32_t)v);
	else if (width == 2)
		sc_put_le16(p, (uint16_t)v);
	else
		*p = (uint8_t)v;
}

static void patch_entry(uint8_t *idx, size_t n, void *arg)
{
	const struct entry_patch *e = arg;

	if (e->entry >= n)
		die("no index entry %zu", e->entry);
	put_field(idx + e->entry * SC_INDEX_ENTRY_SIZE + e->field, e->width, e->value);
}

static void shift_offsets(uint8_t *idx, size_t n, void *arg)
{
	uint64_t by = *(const uint64_t *)arg;

	for (size_t i = 0; i < n; i++)
		sc_put_le64(idx + i * SC_INDEX_ENTRY_SIZE,
			    sc_get_le64(idx + i * SC_INDEX_ENTRY_SIZE) + by);
}

/* Set a record header field, fix its checksum, and keep the index in step. */
static void set_record_field(struct image *img, const struct layout *l, size_t rec,
			     size_t field, size_t width, uint64_t value, size_t index_field)
{
	/* The index first: edit_index() walks the records, which must still be intact. */
	if (index_field != (size_t)-1)
		edit_index(img, patch_entry, &(struct entry_patch){ rec, index_field, width,
								    value });
	put_field(img->b + l->rec[rec].off + field, width, value);
	fix_record(img, l->rec[rec].off);
	fix_tail(img);
}

/* ---- output ---- */

static void save(const char *sub, const char *name, const struct image *img)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, sub, name);
	f = fopen(path, "wb");
	if (!f || (img->n && fwrite(img->b, 1, img->n, f) != img->n) || fclose(f))
		die("cannot write '%s': %s", path, strerror(errno));
}

/* Read @img completely, seekable (with the file checksum) and as a stream. */
static int read_all(const struct image *img, bool stream)
{
	struct sc_read_opts o = { .flags = stream ? SC_RD_STREAM : 0, .threads = 1 };
	struct sc_reader *r;
	struct sc_record rec;
	int fd = memfd_create("check", 0), err;

	if (fd < 0 || (img->n && write(fd, img->b, img->n) != (ssize_t)img->n))
		die("memfd: %s", strerror(errno));
	lseek(fd, 0, SEEK_SET);
	err = sc_reader_open_fd(&r, fd, "check", &o);
	while (!err && (err = sc_reader_next(r, &rec)) == 1)
		err = sc_reader_skip(r, true);
	if (!err && !stream)
		err = sc_reader_verify_file(r);
	sc_reader_free(r);
	close(fd);
	return err;
}

static void good(const char *name, const struct image *img)
{
	int a = read_all(img, false), b = read_all(img, true);

	if (a || b)
		die("good image %s does not read: %s / %s (%s)", name, selfckpt_strerror(a),
		    selfckpt_strerror(b), selfckpt_last_error());
	save("good", name, img);
	printf("good/%-30s %6zu bytes\n", name, img->n);
}

static void broken(const char *name, struct image *img)
{
	int a = read_all(img, false), b = read_all(img, true);

	save("broken", name, img);
	printf("broken/%-28s %6zu bytes  seekable %d  stream %d%s\n", name, img->n, a ? a : 0,
	       b ? b : 0, a && b ? "" : "  <-- reads without error");
	free(img->b);
}

static void describe(const char *name, const struct image *img)
{
	struct layout l;

	walk(img, &l);
	printf("  %s: header %zu, trailer at %zu\n", name, l.header_size, l.trailer);
	for (size_t i = 0; i < l.n_recs; i++) {
		const struct rec_at *r = &l.rec[i];

		printf("    record %zu type 0x%x at %zu meta %u@%zu raw %llu, chunks:", i, r->type,
		       r->off, r->meta_len, r->meta_off, (unsigned long long)r->raw_len);
		for (size_t c = 0; c < r->n_chunks; c++)
			printf(" %s@%zu+%u", r->ch[c].codec ? "zstd" : "raw", r->ch[c].off,
			       r->ch[c].stored);
		printf("\n");
	}
}

/* ---- the images ---- */

/* A newer minor: header_size 160, 16 bytes of unknown fields, everything after moved. */
static struct image newer_minor(const struct image *src)
{
	uint64_t by = 16;
	struct image img = { calloc(1, src->n + by), src->n + by };
	struct layout l;

	memcpy(img.b, src->b, 136);
	memcpy(img.b + 136, "future fields 1.1", 16);
	memcpy(img.b + 160, src->b + SC_HEADER_SIZE, src->n - SC_HEADER_SIZE);
	sc_put_le16(img.b + 10, 1);
	sc_put_le32(img.b + 12, SC_HEADER_SIZE + by);
	fix_header(&img);
	walk(&img, &l);
	sc_put_le64(img.b + l.trailer + 8, sc_get_le64(img.b + l.trailer + 8) + by);
	edit_index(&img, shift_offsets, &by);
	return img;
}

static size_t find_chunk(const struct layout *l, size_t rec, uint8_t codec)
{
	for (size_t i = 0; i < l->rec[rec].n_chunks; i++)
		if (l->rec[rec].ch[i].codec == codec)
			return i;
	die("record %zu has no chunk of codec %u", rec, codec);
	return 0;
}

static void make_broken(const struct image *small, const struct image *stored,
			const struct image *optional)
{
	struct layout ls, lt, lo;
	struct image b;
	size_t c, at;

	walk(small, &ls);
	walk(stored, &lt);
	walk(optional, &lo);

	b = copy(stored);
	memcpy(b.b, "\x7f" "ELF\x02\x01\x01\x00", 8);
	broken("wrong-magic.sckpt", &b);

	b = (struct image){ malloc(1), 0 };
	broken("empty.sckpt", &b);

	b = copy(stored);
	b.n = 12;
	broken("short-header.sckpt", &b);

	b = copy(stored);
	sc_put_le16(b.b + 8, 2);
	fix_header(&b);
	fix_tail(&b);
	broken("major-2.sckpt", &b);

	b = copy(stored);
	sc_put_le32(b.b + 12, 8192);
	fix_tail(&b);
	broken("header-size-8192.sckpt", &b);

	b = copy(stored);
	flip(&b, 45, 2); /* inside the producer string */
	fix_tail(&b);
	broken("header-bitflip.sckpt", &b);

	b = copy(stored);
	sc_put_le64(b.b + 24, 1ull << 40); /* an incompatible flag nobody knows */
	fix_header(&b);
	fix_tail(&b);
	broken("header-incompat-flag.sckpt", &b);

	b = copy(stored);
	flip(&b, lt.rec[3].off + 17, 0); /* raw_len of the segment */
	fix_tail(&b);
	broken("record-header-bitflip.sckpt", &b);

	b = copy(stored);
	flip(&b, lt.rec[0].meta_off + 100, 5);
	fix_tail(&b);
	broken("meta-bitflip.sckpt", &b);

	b = copy(stored);
	set_record_field(&b, &lt, 1, 24, 8, 1, (size_t)-1);
	broken("record-reserved.sckpt", &b);

	b = copy(stored);
	set_record_field(&b, &lt, 2, 4, 2, SC_RF_REQUIRED | 0x8000, 32);
	broken("record-flags-reserved.sckpt", &b);

	b = copy(stored);
	set_record_field(&b, &lt, 2, 0, 4, 0, 24);
	broken("record-type-0.sckpt", &b);

	b = copy(stored);
	set_record_field(&b, &lt, 2, 7, 1, 27, 35);
	broken("record-chunk-shift-27.sckpt", &b);

	b = copy(stored);
	set_record_field(&b, &lt, 2, 8, 4, SC_META_MAX + 1, (size_t)-1);
	broken("record-meta-len-16m.sckpt", &b);

	b = copy(stored);
	set_record_field(&b, &lt, 2, 12, 4, 7, (size_t)-1);
	broken("record-seq.sckpt", &b);

	/* 0xFFFF... payload bytes in the thread record, header and index agreeing. */
	b = copy(stored);
	set_record_field(&b, &lt, 1, 16, 8, UINT64_MAX, 8);
	broken("raw-len-overflow.sckpt", &b);

	b = copy(optional);
	set_record_field(&b, &lo, 1, 4, 2, SC_RF_REQUIRED, 32);
	broken("unknown-required-type.sckpt", &b);

	c = find_chunk(&ls, 3, SC_CODEC_RAW);
	b = copy(small);
	flip(&b, ls.rec[3].ch[c].off + SC_CHUNK_HEADER_SIZE + 1000, 3);
	fix_tail(&b);
	broken("raw-chunk-bitflip.sckpt", &b);

	c = find_chunk(&ls, 3, SC_CODEC_ZSTD);
	b = copy(small);
	flip(&b, ls.rec[3].ch[c].off + SC_CHUNK_HEADER_SIZE + ls.rec[3].ch[c].stored / 2, 6);
	fix_tail(&b);
	broken("zstd-chunk-bitflip.sckpt", &b);

	b = copy(stored);
	sc_put_le32(b.b + lt.rec[3].ch[1].off, 0x7ffffff0);
	fix_tail(&b);
	broken("chunk-stored-len-past-eof.sckpt", &b);

	b = copy(stored);
	b.b[lt.rec[3].ch[1].off + 6] = 1;
	fix_tail(&b);
	broken("chunk-reserved.sckpt", &b);

	b = copy(stored);
	b.b[lt.rec[3].ch[1].off + 4] = 2;
	fix_tail(&b);
	broken("chunk-codec-2.sckpt", &b);

	/* The index of the stored image is a raw chunk: flip entry 3's raw_len. */
	b = copy(stored);
	at = lt.rec[lt.n_recs - 1].ch[0].off + SC_CHUNK_HEADER_SIZE;
	flip(&b, at + 3 * SC_INDEX_ENTRY_SIZE + 8, 1);
	fix_tail(&b);
	broken("index-bitflip.sckpt", &b);

	b = copy(stored);
	edit_index(&b, patch_entry, &(struct entry_patch){ 2, 36, 4, 1 });
	broken("index-reserved.sckpt", &b);

	b = copy(stored);
	edit_index(&b, patch_entry, &(struct entry_patch){ 4, 0, 8, lt.rec[4].off + 8 });
	broken("index-offset.sckpt", &b);

	b = copy(stored);
	edit_index(&b, patch_entry, &(struct entry_patch){ 5, 24, 4, SC_REC_DEVMEM });
	broken("index-type.sckpt", &b);

	b = copy(stored);
	flip(&b, b.n - SC_TRAILER_SIZE + 17, 4); /* N */
	broken("trailer-bitflip.sckpt", &b);

	b = copy(stored);
	sc_put_le64(b.b + b.n - SC_TRAILER_SIZE + 16, 1ull << 60);
	fix_tail(&b);
	broken("trailer-count-huge.sckpt", &b);

	b = copy(stored);
	sc_put_le64(b.b + b.n - SC_TRAILER_SIZE + 8, lt.rec[lt.n_recs - 2].off);
	fix_tail(&b);
	broken("trailer-end-offset.sckpt", &b);

	b = copy(stored);
	sc_put_le64(b.b + b.n - SC_TRAILER_SIZE + 24, 0x0123456789abcdefull);
	sc_put_le64(b.b + b.n - 8, XXH3_64bits(b.b + b.n - SC_TRAILER_SIZE, 32));
	broken("file-checksum.sckpt", &b);

	b = copy(stored);
	b.b = realloc(b.b, b.n + 8);
	memcpy(b.b + b.n, "garbage!", 8);
	b.n += 8;
	broken("data-after-trailer.sckpt", &b);

	b = copy(stored);
	b.n = lt.rec[3].ch[2].off + SC_CHUNK_HEADER_SIZE + 2000;
	broken("truncated-mid-record.sckpt", &b);

	b = copy(stored);
	b.n = lt.trailer;
	broken("truncated-before-trailer.sckpt", &b);
}

int main(int argc, char **argv)
{
	struct image minimal, small, stored, optional, img;

	if (argc != 2)
		die("usage: mkgolden DIR");
	out_dir = argv[1];
	sc_log_set_level(SC_LOG_NONE);
	minimal = make_image(SC_LEVEL_DEFAULT, records_none);
	small = make_image(SC_LEVEL_DEFAULT, records_small);
	stored = make_image(SC_LEVEL_STORE, records_small);
	optional = make_image(SC_LEVEL_DEFAULT, records_optional);
	good("minimal.sckpt", &minimal);
	good("small.sckpt", &small);
	good("stored.sckpt", &stored);
	good("optional-unknown.sckpt", &optional);

	img = newer_minor(&small);
	good("newer-minor.sckpt", &img);
	free(img.b);
	img = copy(&small);
	sc_put_le64(img.b + 24, 1); /* a compatible flag nobody knows */
	fix_header(&img);
	fix_tail(&img);
	good("compat-flag.sckpt", &img);
	free(img.b);
	/* Reading does not depend on the page size; only a restore refuses it (R-HDR-10). */
	img = copy(&stored);
	sc_put_le32(img.b + 20, 3000);
	fix_header(&img);
	fix_tail(&img);
	good("page-size-3000.sckpt", &img);
	free(img.b);

	make_broken(&small, &stored, &optional);
	if (getenv("MKGOLDEN_VERBOSE")) {
		describe("small", &small);
		describe("stored", &stored);
		describe("optional-unknown", &optional);
	}
	free(minimal.b);
	free(small.b);
	free(stored.b);
	free(optional.b);
	return 0;
}
