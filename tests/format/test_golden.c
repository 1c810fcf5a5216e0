/* SPDX-License-Identifier: MIT */
/*
 * The golden images of tests/golden/ (see its README.md; made by mkgolden.c).
 *
 * Every good image reads to its end, seekable, streamed from the file and
 * streamed through a pipe, with every chunk checked and the same records and
 * bytes each way. Every broken image fails with the one error its damage
 * calls for, the code the spec assigns to that check, and a message that
 * names the file and the place. Requirement IDs are those of
 * spec/image-format.md.
 *
 * The files are found relative to the repository root, where `make test`
 * runs the suite.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "format/sc_format.h"
#include "format/sc_log.h"

#define GOLDEN "tests/golden/"
#define MAX_RECS 16
#define GOLDEN_NS 1700000000123456789ull

static void setup(void)
{
	sc_log_set_level(SC_LOG_NONE);
	signal(SIGPIPE, SIG_IGN); /* a reader that stops early closes the pipe */
}

TestSuite(golden, .init = setup);

/* ---- files ---- */

static uint8_t *load(const char *path, size_t *n)
{
	struct stat st;
	uint8_t *b;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert(fd >= 0, "golden image '%s' is missing (%s): run the suite from the "
		  "repository root (make test), or regenerate with make golden", path,
		  strerror(errno));
	cr_assert_eq(fstat(fd, &st), 0);
	*n = (size_t)st.st_size;
	b = malloc(*n ? *n : 1);
	cr_assert_eq(read(fd, b, *n), (ssize_t)*n);
	close(fd);
	return b;
}

/* Feeds a file's bytes into a pipe from a thread, as a checkpoint piped to restore would. */
struct feeder {
	pthread_t thread;
	int fd;
	uint8_t *b;
	size_t n;
};

static void *feed(void *arg)
{
	struct feeder *f = arg;

	for (size_t off = 0; off < f->n;) {
		ssize_t k = write(f->fd, f->b + off, f->n - off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break; /* the reader gave up: EPIPE */
		off += (size_t)k;
	}
	close(f->fd);
	return NULL;
}

/* ---- reading everything ---- */

enum mode { SEEKABLE, STREAM_FLAG, PIPE, N_MODES };
static const char *const mode_name[N_MODES] = { "seekable", "stream (SC_RD_STREAM)", "pipe" };

struct summary {
	size_t n;
	uint32_t type[MAX_RECS];
	uint64_t raw_len[MAX_RECS];
	uint64_t meta_hash[MAX_RECS], payload_hash[MAX_RECS];
	uint64_t skipped;
	struct sc_header hdr;
};

/* Read the payload in 1000-byte pieces, which cut across the 4 KiB chunks. */
static int read_payload(struct sc_reader *r, const struct sc_record *rec, uint64_t *hash)
{
	static uint8_t buf[1000];
	XXH3_state_t *st = XXH3_createState();
	int err = 0;

	XXH3_64bits_reset(st);
	for (uint64_t left = rec->raw_len; left && !err;) {
		size_t k = left < sizeof(buf) ? (size_t)left : sizeof(buf);

		err = sc_reader_read(r, buf, k);
		XXH3_64bits_update(st, buf, k);
		left -= k;
	}
	*hash = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return err;
}

/*
 * Everything a consumer can ask of an image: every record, every payload byte
 * (or, with @skip, every chunk skipped with verification) and, seekable, the
 * whole-file checksum. Return: 0 or the first error.
 */
static int read_all(struct sc_reader *r, struct summary *s, bool skip)
{
	struct sc_record rec;
	int err;

	memset(s, 0, sizeof(*s));
	s->hdr = *sc_reader_header(r);
	while ((err = sc_reader_next(r, &rec)) == 1) {
		cr_assert_lt(s->n, MAX_RECS);
		s->type[s->n] = rec.type;
		s->raw_len[s->n] = rec.raw_len;
		s->meta_hash[s->n] = XXH3_64bits(rec.meta_len ? rec.meta : "", rec.meta_len);
		if (skip)
			err = sc_reader_skip(r, true);
		else
			err = read_payload(r, &rec, &s->payload_hash[s->n]);
		s->n++;
		if (err < 0)
			return err;
	}
	if (!err && sc_reader_seekable(r))
		err = sc_reader_verify_file(r);
	s->skipped = sc_reader_skipped(r);
	return err;
}

/* Open @path in @mode and read it all; 0 or the first error. */
static int read_file(const char *path, enum mode mode, unsigned flags, bool skip,
		     struct summary *s)
{
	struct sc_read_opts o = { .flags = flags | (mode == STREAM_FLAG ? SC_RD_STREAM : 0) };
	struct feeder f = { 0 };
	struct sc_reader *r;
	int p[2], err;

	memset(s, 0, sizeof(*s));
	if (mode != PIPE) {
		err = sc_reader_open(&r, path, &o);
	} else {
		f.b = load(path, &f.n);
		cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
		f.fd = p[1];
		cr_assert_eq(pthread_create(&f.thread, NULL, feed, &f), 0);
		err = sc_reader_open_fd(&r, p[0], path, &o);
	}
	if (!err) {
		cr_assert_eq(sc_reader_seekable(r), mode == SEEKABLE, "%s", path);
		err = read_all(r, s, skip);
		sc_reader_free(r);
	}
	if (mode == PIPE) {
		close(p[0]);
		pthread_join(f.thread, NULL);
		free(f.b);
	}
	return err;
}

/* ---- good images ---- */

struct good_case {
	char file[40];
	size_t n;                 /* records handed out */
	uint32_t type[MAX_RECS];
	uint64_t skipped;
	uint16_t minor;
	uint32_t header_size;
	char same_as[40];         /* another good image with the same records, or "" */
	uint32_t page_size;       /* in the header; 0: 4096 */
};

#define SMALL_TYPES { SC_REC_PROCESS, SC_REC_THREAD, SC_REC_FD, SC_REC_SEGMENT, SC_REC_SIGNALS, \
		      SC_REC_FD, SC_REC_CUDA_LOG }

ParameterizedTestParameters(golden, good)
{
	static struct good_case cases[] = {
		/* the smallest image: header, END at header_size, trailer (spec §3, [R-IDX-5]) */
		{ "minimal.sckpt", 0, { 0 }, 0, 0, 144, "" },
		/* raw and zstd chunks side by side, a partial last chunk, an empty payload
		 * ([R-REC-11], [R-REC-12], [R-CHK-9], [R-CHK-10]) */
		{ "small.sckpt", 7, SMALL_TYPES, 0, 0, 144, "" },
		/* every chunk stored raw ([R-CHK-10]): the same bytes as small.sckpt */
		{ "stored.sckpt", 7, SMALL_TYPES, 0, 0, 144, "small.sckpt" },
		/* an unknown optional record (type 0x8001) is skipped ([R-VER-6], [R-TYP-1]) */
		{ "optional-unknown.sckpt", 2, { SC_REC_PROCESS, SC_REC_THREAD }, 1, 0, 144, "" },
		/* a newer minor with a 160-byte header is read
		 * ([R-HDR-4], [R-HDR-7], [R-VER-3], [R-VER-4]) */
		{ "newer-minor.sckpt", 7, SMALL_TYPES, 0, 1, 160, "small.sckpt" },
		/* an unknown compatible header flag is ignored ([R-HDR-8], [R-VER-8]) */
		{ "compat-flag.sckpt", 7, SMALL_TYPES, 0, 0, 144, "small.sckpt" },
		/* page size 3000: reading does not depend on the page size; only a restore
		 * refuses it ([R-HDR-9], [R-HDR-10]) */
		{ "page-size-3000.sckpt", 7, SMALL_TYPES, 0, 0, 144, "small.sckpt", 3000 },
	};

	return cr_make_param_array(struct good_case, cases, sizeof(cases) / sizeof(cases[0]));
}

static void check_summary(const struct good_case *c, const struct summary *s, const char *how)
{
	cr_assert_eq(s->n, c->n, "%s %s: %zu records, expected %zu", c->file, how, s->n, c->n);
	for (size_t i = 0; i < c->n; i++)
		cr_assert_eq(s->type[i], c->type[i],
			     "%s %s: record %zu has type 0x%x, expected 0x%x", c->file, how, i,
			     s->type[i], c->type[i]);
	cr_assert_eq(s->skipped, c->skipped, "%s %s: skipped %llu", c->file, how,
		     (unsigned long long)s->skipped);
	cr_assert_eq(s->hdr.major, 1);
	cr_assert_eq(s->hdr.minor, c->minor);
	cr_assert_eq(s->hdr.header_size, c->header_size);
	cr_assert_eq(s->hdr.arch, SC_ARCH_X86_64);
	cr_assert_eq(s->hdr.page_size, c->page_size ? c->page_size : 4096u, "%s %s: page size %u",
		     c->file, how, s->hdr.page_size);
	cr_assert_eq(s->hdr.created_ns, GOLDEN_NS);
	cr_assert_str_eq(s->hdr.producer, "selfckpt golden");
	cr_assert_str_eq(s->hdr.kernel, "golden");
}

static bool same_records(const struct summary *a, const struct summary *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->type[i] != b->type[i] || a->raw_len[i] != b->raw_len[i] ||
		    a->meta_hash[i] != b->meta_hash[i] || a->payload_hash[i] != b->payload_hash[i])
			return false;
	return true;
}

ParameterizedTest(struct good_case *c, golden, good)
{
	char path[128];
	struct summary ref, s;

	snprintf(path, sizeof(path), GOLDEN "good/%s", c->file);
	for (int m = 0; m < N_MODES; m++) {
		int err = read_file(path, m, 0, false, m ? &s : &ref);

		cr_assert_eq(err, 0, "%s read %s: %s", path, mode_name[m], selfckpt_last_error());
		check_summary(c, m ? &s : &ref, mode_name[m]);
		cr_assert(m == 0 || same_records(&ref, &s), "%s: %s read differs from seekable",
			  path, mode_name[m]);
		/* Skipping with verification checks every chunk too ([R-RD-2]). */
		err = read_file(path, m, 0, true, &s);
		cr_assert_eq(err, 0, "%s skipped %s: %s", path, mode_name[m],
			     selfckpt_last_error());
	}
	if (c->same_as[0]) {
		snprintf(path, sizeof(path), GOLDEN "good/%s", c->same_as);
		cr_assert_eq(read_file(path, SEEKABLE, 0, false, &s), 0);
		cr_assert(same_records(&ref, &s), "%s does not hold the records of %s", c->file,
			  c->same_as);
	}
}

/* With SC_RD_ALL_RECORDS the unknown optional record is handed out, meta and payload checked. */
Test(golden, optional_record_handed_out_on_request)
{
	static const uint32_t types[] = { SC_REC_PROCESS, 0x8001, SC_REC_THREAD };
	const char *path = GOLDEN "good/optional-unknown.sckpt";
	struct summary s;

	for (int m = 0; m < N_MODES; m++) {
		cr_assert_eq(read_file(path, m, SC_RD_ALL_RECORDS, false, &s), 0, "%s: %s",
			     mode_name[m], selfckpt_last_error());
		cr_assert_eq(s.n, 3);
		cr_assert_eq(s.skipped, 0);
		for (size_t i = 0; i < 3; i++)
			cr_assert_eq(s.type[i], types[i]);
		cr_assert_eq(s.raw_len[1], 3000);
	}
}

/* The index of a seekable image equals the one a stream rebuilds
 * ([R-IDX-3], [R-IDX-5], [R-RD-2]). */
Test(golden, index_same_seekable_and_streamed)
{
	const struct sc_index_entry *a, *b;
	struct sc_reader *rs, *rt;
	struct sc_read_opts so = { .flags = SC_RD_STREAM };
	struct sc_record rec;
	size_t na, nb;
	int err;

	cr_assert_eq(sc_reader_open(&rs, GOLDEN "good/small.sckpt", NULL), 0);
	cr_assert_eq(sc_reader_open(&rt, GOLDEN "good/small.sckpt", &so), 0);
	cr_assert_eq(sc_reader_index(rt, &b, &nb), -SELFCKPT_EUSAGE);
	while ((err = sc_reader_next(rt, &rec)) == 1)
		;
	cr_assert_eq(err, 0, "%s", selfckpt_last_error());
	cr_assert_eq(sc_reader_index(rs, &a, &na), 0);
	cr_assert_eq(sc_reader_index(rt, &b, &nb), 0);
	cr_assert_eq(na, 7);
	cr_assert_eq(nb, na);
	cr_assert_eq(a[0].offset, 144);
	for (size_t i = 0; i < na; i++) {
		cr_assert_eq(a[i].offset, b[i].offset);
		cr_assert_eq(a[i].stored_len, b[i].stored_len);
		cr_assert_eq(a[i].raw_len, b[i].raw_len);
		cr_assert_eq(a[i].type, b[i].type);
		cr_assert(i == 0 || a[i].offset == a[i - 1].offset + a[i - 1].stored_len);
	}
	sc_reader_free(rs);
	sc_reader_free(rt);
}

/* ---- broken images ---- */

struct bad_case {
	char file[40];
	int seek_err, stream_err; /* SELFCKPT_E*; 0: same as seek_err */
	char where[2][40];        /* the message names these too (record, offset) */
	bool verify_only;         /* seekable: only sc_reader_verify_file() can notice */
};

#define E(x) SELFCKPT_##x

ParameterizedTestParameters(golden, broken)
{
	static struct bad_case cases[] = {
		/* [R-HDR-1]: not an image; empty */
		{ "wrong-magic.sckpt", E(EMAGIC), 0, { "offset 0" } },
		{ "empty.sckpt", E(EEMPTY), 0, { "" } },
		/* [R-HDR-2]: ends inside the header */
		{ "short-header.sckpt", E(ETRUNCATED), 0, { "offset 12" } },
		/* [R-HDR-3], [R-VER-2]: major 2, header checksum valid */
		{ "major-2.sckpt", E(EVERSION), 0, { "offset 8", "2.0" } },
		/* [R-HDR-5]: header_size 8192 */
		{ "header-size-8192.sckpt", E(EHEADER), 0, { "offset 12", "8192" } },
		/* [R-HDR-6]: one bit of the producer string */
		{ "header-bitflip.sckpt", E(EHEADER), 0, { "offset 136" } },
		/* [R-HDR-8], [R-VER-8]: incompatible flag bit 40 */
		{ "header-incompat-flag.sckpt", E(EUNKNOWN), 0, { "offset 24" } },
		/* [R-REC-2]: one bit of the segment record's raw_len */
		{ "record-header-bitflip.sckpt", E(ERECORD), 0, { "record 3", "offset 1502" } },
		/* [R-REC-9]: one bit of the process record's meta */
		{ "meta-bitflip.sckpt", E(ERECORD), 0, { "record 0", "offset 192" } },
		/* [R-REC-3], [R-GEN-4]: reserved u64 of record 1; flag bit 15 of record 2 */
		{ "record-reserved.sckpt", E(ERESERVED), 0, { "record 1", "offset 590" } },
		{ "record-flags-reserved.sckpt", E(ERESERVED), 0, { "record 2", "offset 1366" } },
		/* [R-REC-4]: type 0 (index in step) */
		{ "record-type-0.sckpt", E(ERESERVED), 0, { "record 2", "offset 1366" } },
		/* [R-REC-6]: chunk_shift 27 on a record without payload */
		{ "record-chunk-shift-27.sckpt", E(ELENGTH), 0, { "record 2", "offset 1366" } },
		/* [R-REC-7]: meta_len 16 MiB + 1 */
		{ "record-meta-len-16m.sckpt", E(ELENGTH), 0, { "record 2", "offset 1366" } },
		/* [R-REC-8]: record 2 says it is number 7; seekable: compared with the index
		 * first, [R-IDX-7]; stream: with the position. The messages name the position
		 * as "record 2" (seekable) and "expected 2" (stream) */
		{ "record-seq.sckpt", E(EINDEX), E(ERECORD), { " 2", "offset 1366" } },
		/* [R-SAFE-1], [R-CHK-4]: raw_len 2^64-1 in header and index; the first chunk
		 * cannot be that long */
		{ "raw-len-overflow.sckpt", E(ELENGTH), 0, { "record 1", "offset 750" } },
		/* [R-VER-7]: type 0x8001 marked REQUIRED; the message names the type */
		{ "unknown-required-type.sckpt", E(EUNKNOWN), 0, { "record 1", "0x8001" } },
		/* [R-CHK-7], [R-CHK-8]: a bit of a raw-stored chunk */
		{ "raw-chunk-bitflip.sckpt", E(ECHUNK), 0, { "record 3", "offset 1850" } },
		/* [R-CHK-6], [R-CHK-7]: a bit of a zstd frame (ECODEC is as right, see below) */
		{ "zstd-chunk-bitflip.sckpt", E(ECHUNK), 0, { "record 3", "offset 1654" } },
		/* [R-CHK-4], [R-SAFE-3]: a raw chunk claims 0x7ffffff0 stored bytes */
		{ "chunk-stored-len-past-eof.sckpt", E(ELENGTH), 0, { "record 3", "offset 5766" } },
		/* [R-CHK-2]: reserved byte of a chunk header */
		{ "chunk-reserved.sckpt", E(ERESERVED), 0, { "record 3", "offset 5766" } },
		/* [R-CHK-3]: chunk codec 2 */
		{ "chunk-codec-2.sckpt", E(ECODEC), 0, { "record 3", "offset 5766" } },
		/* [R-IDX-3], [R-CHK-7]: a bit of the (raw-stored) index */
		{ "index-bitflip.sckpt", E(ECHUNK), 0, { "end", "offset" } },
		/* [R-IDX-4]: reserved u32 of index entry 2 */
		{ "index-reserved.sckpt", E(ERESERVED), 0, { "entry 2" } },
		/* [R-IDX-5]: entry 4's offset moved by 8 */
		{ "index-offset.sckpt", E(EINDEX), 0, { "entry 4" } },
		/* [R-IDX-7]: entry 5's type differs from record 5's */
		{ "index-type.sckpt", E(EINDEX), 0, { "entry 5" } },
		/* [R-TRL-2]: a bit of N */
		{ "trailer-bitflip.sckpt", E(ETRAILER), 0, { "offset 30181" } },
		/* N = 2^60: [R-SAFE-4] (seekable: N cannot fit), [R-TRL-5] and [R-RD-2]
		 * (stream: N is not END's seq) */
		{ "trailer-count-huge.sckpt", E(ELENGTH), E(ETRAILER), { "1152921504606846976" } },
		/* end_offset names record 6, within the bounds of [R-TRL-3]; seekable: the
		 * record there is not END, [R-TRL-4]; stream: end_offset is not the offset of
		 * the END record read, [R-TRL-5] */
		{ "trailer-end-offset.sckpt", E(EINDEX), E(ETRAILER), { "offset 29501" } },
		/* [R-TRL-6]: file checksum wrong, trailer checksum right */
		{ "file-checksum.sckpt", E(EFILESUM), 0, { "offset 30181" }, true },
		/* [R-TRL-1] (seekable: the last 40 bytes are no trailer, their first 8 far from
		 * the magic); [R-TRL-7] (stream: bytes after the trailer) */
		{ "data-after-trailer.sckpt", E(ETRUNCATED), E(ELENGTH), { "offset" } },
		/* [R-TRL-1], [R-TRL-8], [R-TRL-9]: cut inside chunk 2 of the segment; cut
		 * before the trailer */
		{ "truncated-mid-record.sckpt", E(ETRUNCATED), 0, { "truncated" } },
		{ "truncated-before-trailer.sckpt", E(ETRUNCATED), 0, { "truncated" } },
	};

	return cr_make_param_array(struct bad_case, cases, sizeof(cases) / sizeof(cases[0]));
}

static void check_message(const struct bad_case *c, const char *path, const char *how)
{
	const char *msg = selfckpt_last_error();
	char quoted[160];

	snprintf(quoted, sizeof(quoted), "'%s'", path);
	cr_assert(strstr(msg, quoted), "%s %s: the message does not name the file: %s", c->file,
		  how, msg);
	for (int i = 0; i < 2; i++)
		cr_assert(!c->where[i][0] || strstr(msg, c->where[i]),
			  "%s %s: the message does not say '%s': %s", c->file, how, c->where[i],
			  msg);
}

ParameterizedTest(struct bad_case *c, golden, broken)
{
	char path[128];
	struct summary s;

	snprintf(path, sizeof(path), GOLDEN "broken/%s", c->file);
	if (access(path, R_OK))
		cr_assert_fail("golden image '%s' is missing: run the suite from the repository "
			       "root (make test), or regenerate with make golden", path);
	for (int m = 0; m < N_MODES; m++) {
		int want = m == SEEKABLE || !c->stream_err ? c->seek_err : c->stream_err;
		int err = read_file(path, m, 0, false, &s);

		if (getenv("GOLDEN_DEBUG"))
			fprintf(stderr, "%s %s: %d %s\n", c->file, mode_name[m], err,
				selfckpt_last_error());
		/* A damaged zstd frame may fail to decode or decode to the wrong bytes. */
		if (!strcmp(c->file, "zstd-chunk-bitflip.sckpt") && err == -SELFCKPT_ECODEC)
			want = SELFCKPT_ECODEC;
		cr_assert_eq(err, -want, "%s read %s: got %d (%s), expected %d (%s); message: %s",
			     path, mode_name[m], err, selfckpt_strerror(err), -want,
			     selfckpt_strerror(-want), selfckpt_last_error());
		check_message(c, path, mode_name[m]);
		/* Skipping with verification finds the same damage ([R-RD-2], [R-CHK-8]). */
		err = read_file(path, m, 0, true, &s);
		cr_assert_eq(err, -want, "%s skipped %s: got %d (%s); message: %s", path,
			     mode_name[m], err, selfckpt_strerror(err), selfckpt_last_error());
	}
	if (c->verify_only) {
		/* Every byte handed out is covered by another checksum ([R-TRL-6]). */
		struct sc_reader *r;
		struct sc_record rec;
		int err;

		cr_assert_eq(sc_reader_open(&r, path, NULL), 0);
		while ((err = sc_reader_next(r, &rec)) == 1)
			cr_assert_eq(sc_reader_skip(r, true), 0);
		cr_assert_eq(err, 0);
		cr_assert_eq(sc_reader_verify_file(r), -c->seek_err);
		sc_reader_free(r);
	}
}

/* Every file under broken/ is in the table above and in the README, and the reverse. */
Test(golden, every_broken_image_is_listed)
{
	static const char *const listed[] = {
		"wrong-magic.sckpt", "empty.sckpt", "short-header.sckpt", "major-2.sckpt",
		"header-size-8192.sckpt", "header-bitflip.sckpt", "header-incompat-flag.sckpt",
		"record-header-bitflip.sckpt", "meta-bitflip.sckpt",
		"record-reserved.sckpt", "record-flags-reserved.sckpt", "record-type-0.sckpt",
		"record-chunk-shift-27.sckpt", "record-meta-len-16m.sckpt", "record-seq.sckpt",
		"raw-len-overflow.sckpt", "unknown-required-type.sckpt", "raw-chunk-bitflip.sckpt",
		"zstd-chunk-bitflip.sckpt", "chunk-stored-len-past-eof.sckpt",
		"chunk-reserved.sckpt", "chunk-codec-2.sckpt", "index-bitflip.sckpt",
		"index-reserved.sckpt", "index-offset.sckpt", "index-type.sckpt",
		"trailer-bitflip.sckpt", "trailer-count-huge.sckpt", "trailer-end-offset.sckpt",
		"file-checksum.sckpt", "data-after-trailer.sckpt", "truncated-mid-record.sckpt",
		"truncated-before-trailer.sckpt",
	};
	size_t n_listed = sizeof(listed) / sizeof(listed[0]), found = 0, readme_len;
	char *readme = (char *)load(GOLDEN "README.md", &readme_len);
	DIR *d = opendir(GOLDEN "broken");
	struct dirent *e;

	readme = realloc(readme, readme_len + 1);
	readme[readme_len] = '\0';
	cr_assert_not_null(d, "no " GOLDEN "broken: run the suite from the repository root");
	while ((e = readdir(d))) {
		bool known = false;

		if (e->d_name[0] == '.')
			continue;
		for (size_t i = 0; i < n_listed; i++)
			known |= !strcmp(e->d_name, listed[i]);
		cr_assert(known, "broken/%s is not tested", e->d_name);
		cr_assert(strstr(readme, e->d_name), "broken/%s is not in README.md", e->d_name);
		found++;
	}
	closedir(d);
	cr_assert_eq(found, n_listed, "broken/ has %zu images, the table %zu", found, n_listed);
	free(readme);
}

/* ---- not images at all ---- */

Test(golden, directory_is_eisdir)
{
	struct sc_reader *r = (struct sc_reader *)1;

	cr_assert_eq(sc_reader_open(&r, GOLDEN "broken", NULL), -EISDIR);
	cr_assert_null(r);
	cr_assert(strstr(selfckpt_last_error(), "'" GOLDEN "broken'"), "%s",
		  selfckpt_last_error());
}

Test(golden, missing_file_is_enoent)
{
	struct sc_reader *r = (struct sc_reader *)1;

	cr_assert_eq(sc_reader_open(&r, GOLDEN "no-such-image.sckpt", NULL), -ENOENT);
	cr_assert_null(r);
	cr_assert(strstr(selfckpt_last_error(), "'" GOLDEN "no-such-image.sckpt'"), "%s",
		  selfckpt_last_error());
}
