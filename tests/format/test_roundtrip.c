/* SPDX-License-Identifier: MIT */
/*
 * Round trips through the writer and the reader: every payload comes back
 * bit for bit, seekable and streamed, whatever the chunk size, the level and
 * the way the bytes are cut into appends and reads.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format/sc_format.h"
#include "compress/sc_compress.h"
#include "format/sc_log.h"

static char tmpdir[64];
static char path[128];

static void setup(void)
{
	sc_log_set_level(SC_LOG_NONE);
	strcpy(tmpdir, "/tmp/sc-format-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	snprintf(path, sizeof(path), "%s/img.sckpt", tmpdir);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(format, .init = setup, .fini = teardown);

static uint8_t *pattern(size_t n, unsigned seed, bool compressible)
{
	uint8_t *p = malloc(n ? n : 1);
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		p[i] = compressible ? (uint8_t)((i / 64) % 7 + (x % 3 == 0)) : (uint8_t)x;
	}
	return p;
}

struct rec_spec {
	uint32_t type;
	uint32_t meta_len;
	size_t raw_len;
	bool compressible;
};

static const struct rec_spec specs[] = {
	{ SC_REC_PROCESS, 120, 0, true },
	{ SC_REC_THREAD, 112, 3000, false },
	{ SC_REC_SEGMENT, 88, 5 << 20, true },
	{ SC_REC_SEGMENT, 88, (1 << 20) + 4095, false },
	{ SC_REC_FD, 80, 1, true },
	{ SC_REC_DEVMEM, 48, (3 << 20) / 2, true },
};
#define N_SPECS (sizeof(specs) / sizeof(specs[0]))

/* Write every spec, cutting payloads into appends of @piece bytes. */
static void write_image(int fd, const struct sc_write_opts *o, size_t piece)
{
	struct sc_writer *w;

	cr_assert_eq(sc_writer_new(&w, fd, path, o), 0, "%s", selfckpt_last_error());
	for (size_t i = 0; i < N_SPECS; i++) {
		uint8_t *meta = pattern(specs[i].meta_len, 100 + i, false);
		uint8_t *data = pattern(specs[i].raw_len, i, specs[i].compressible);

		cr_assert_eq(sc_writer_begin(w, specs[i].type, SC_RF_REQUIRED, meta,
					     specs[i].meta_len, specs[i].raw_len), 0);
		for (size_t off = 0; off < specs[i].raw_len; off += piece) {
			size_t n = specs[i].raw_len - off < piece ? specs[i].raw_len - off : piece;

			cr_assert_eq(sc_writer_append(w, data + off, n), 0, "%s",
				     selfckpt_last_error());
		}
		cr_assert_eq(sc_writer_end(w), 0, "%s", selfckpt_last_error());
		free(meta);
		free(data);
	}
	cr_assert_eq(sc_writer_finish(w), 0, "%s", selfckpt_last_error());
	sc_writer_free(w);
}

/* Read everything back in reads of @piece bytes and compare. */
static void check_image(struct sc_reader *r, size_t piece)
{
	struct sc_record rec;

	for (size_t i = 0; i < N_SPECS; i++) {
		uint8_t *meta = pattern(specs[i].meta_len, 100 + i, false);
		uint8_t *want = pattern(specs[i].raw_len, i, specs[i].compressible);
		uint8_t *got = malloc(specs[i].raw_len + 1);

		cr_assert_eq(sc_reader_next(r, &rec), 1, "record %zu: %s", i,
			     selfckpt_last_error());
		cr_assert_eq(rec.seq, i);
		cr_assert_eq(rec.type, specs[i].type);
		cr_assert_eq(rec.raw_len, specs[i].raw_len);
		cr_assert_eq(rec.meta_len, specs[i].meta_len);
		cr_assert_eq(memcmp(rec.meta, meta, rec.meta_len), 0);
		for (size_t off = 0; off < specs[i].raw_len; off += piece) {
			size_t n = specs[i].raw_len - off < piece ? specs[i].raw_len - off : piece;

			cr_assert_eq(sc_reader_read(r, got + off, n), 0, "%s",
				     selfckpt_last_error());
		}
		cr_assert_eq(memcmp(got, want, specs[i].raw_len), 0, "payload %zu differs", i);
		free(meta);
		free(want);
		free(got);
	}
	cr_assert_eq(sc_reader_next(r, &rec), 0, "%s", selfckpt_last_error());
	cr_assert_eq(sc_reader_next(r, &rec), 0, "the end stays the end");
}

static void roundtrip(int level, unsigned shift, unsigned threads, size_t wpiece, size_t rpiece)
{
	struct sc_write_opts o;
	struct sc_read_opts ro = { .threads = threads };
	struct sc_reader *r;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	sc_write_opts_init(&o);
	o.level = level;
	o.chunk_shift = shift;
	o.threads = threads;
	write_image(fd, &o, wpiece);
	close(fd);
	cr_assert_eq(sc_reader_open(&r, path, &ro), 0, "%s", selfckpt_last_error());
	check_image(r, rpiece);
	cr_assert_eq(sc_reader_verify_file(r), 0, "%s", selfckpt_last_error());
	sc_reader_free(r);
	ro.flags = SC_RD_STREAM;
	cr_assert_eq(sc_reader_open(&r, path, &ro), 0, "%s", selfckpt_last_error());
	cr_assert_not(sc_reader_seekable(r));
	check_image(r, rpiece);
	sc_reader_free(r);
}

/* [R-WR-6] [R-CHK-9] chunks are independent: any thread count reads any image */
Test(format, roundtrip_default)
{
	roundtrip(SC_LEVEL_DEFAULT, 0, 0, 64 << 20, 64 << 20);
}

Test(format, roundtrip_store_level_small_chunks)
{
	roundtrip(SC_LEVEL_STORE, 12, 1, 4096, 4096);
}

Test(format, roundtrip_odd_pieces_many_threads)
{
	roundtrip(3, 14, 4, 12345, 777);
}

Test(format, roundtrip_big_chunks_one_thread)
{
	roundtrip(SC_LEVEL_DEFAULT, 26, 1, 1 << 20, 3 << 20);
}

/*
 * Read each record as pieces of uneven sizes (empty ones, ones inside a chunk,
 * ones spanning chunks), after a plain read of @lead bytes, each piece landing
 * in its own place: the pieces are laid out in reverse order in @dst.
 */
static void check_pieces(struct sc_reader *r, size_t lead)
{
	struct sc_record rec;

	for (size_t i = 0; i < N_SPECS; i++) {
		size_t len = specs[i].raw_len, first = lead < len ? lead : len, n = 0, at = 0;
		uint8_t *want = pattern(len, i, specs[i].compressible);
		uint8_t *dst = malloc(len + 1);
		struct sc_piece *pc = calloc(len + 1, sizeof(*pc));
		size_t *off = calloc(len + 1, sizeof(*off));
		uint64_t x = 0x243f6a8885a308d3ull + i;

		cr_assert_eq(sc_reader_next(r, &rec), 1, "%s", selfckpt_last_error());
		cr_assert_eq(sc_reader_read(r, dst, first), 0, "%s", selfckpt_last_error());
		cr_assert_eq(memcmp(dst, want, first), 0, "record %zu: the lead differs", i);
		for (size_t pos = first; pos < len; n++) {
			size_t k;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			k = x % 4 == 0 ? 0 : x % 4 == 1 ? x % 100 + 1 : x % (3 << 14) + 1;
			k = k < len - pos ? k : len - pos;
			off[n] = pos;
			pc[n].len = k;
			pos += k;
		}
		for (size_t j = n; j-- > 0; at += pc[j].len) /* the last piece goes first */
			pc[j].dst = dst + at;
		cr_assert_eq(sc_reader_read_pieces(r, pc, n), 0, "%s", selfckpt_last_error());
		for (size_t j = 0; j < n; j++)
			cr_assert_eq(memcmp(pc[j].dst, want + off[j], pc[j].len), 0,
				     "record %zu piece %zu (%llu bytes at %zu) differs", i, j,
				     (unsigned long long)pc[j].len, off[j]);
		free(want);
		free(dst);
		free(pc);
		free(off);
	}
	cr_assert_eq(sc_reader_next(r, &rec), 0, "%s", selfckpt_last_error());
}

/* A scattered read puts every byte where its piece says, seekable and streamed. */
Test(format, read_pieces_spreads_payload)
{
	struct sc_write_opts o;
	struct sc_read_opts ro = { .threads = 4 };
	struct sc_reader *r;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	sc_write_opts_init(&o);
	o.level = 3;
	o.chunk_shift = 14;
	o.threads = 4;
	write_image(fd, &o, 1 << 20);
	close(fd);
	for (int stream = 0; stream < 2; stream++) {
		for (size_t lead = 0; lead < 20000; lead += 6001) {
			ro.flags = stream ? SC_RD_STREAM : 0;
			cr_assert_eq(sc_reader_open(&r, path, &ro), 0, "%s", selfckpt_last_error());
			check_pieces(r, lead);
			sc_reader_free(r);
		}
	}
}

static int task_count(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	cr_assert_not_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n - 2; /* "." and ".." */
}

/*
 * A reader opened with one thread starts none; sc_reader_set_threads() starts
 * them between two reads, even in the middle of a payload (a chunk's tail
 * kept over), and stops them again: every byte still comes back.
 */
Test(format, reader_threads_start_when_asked)
{
	struct sc_read_opts ro = { .threads = 1 };
	struct sc_write_opts o;
	struct sc_reader *r;
	struct sc_record rec;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600), before = task_count();

	sc_write_opts_init(&o);
	o.chunk_shift = 14;
	write_image(fd, &o, 1 << 20);
	close(fd);
	cr_assert_eq(sc_reader_open(&r, path, &ro), 0, "%s", selfckpt_last_error());
	cr_assert_eq(task_count(), before, "a one-thread reader starts no thread");
	for (size_t i = 0; i < N_SPECS; i++) {
		uint8_t *want = pattern(specs[i].raw_len, i, specs[i].compressible);
		uint8_t *got = malloc(specs[i].raw_len + 1);
		size_t half = specs[i].raw_len / 2 + 1000; /* inside a chunk */

		half = half < specs[i].raw_len ? half : specs[i].raw_len;
		cr_assert_eq(sc_reader_next(r, &rec), 1, "%s", selfckpt_last_error());
		cr_assert_eq(sc_reader_read(r, got, half), 0, "%s", selfckpt_last_error());
		if (i == 2) {
			cr_assert_eq(sc_reader_set_threads(r, 4), 0, "%s", selfckpt_last_error());
			cr_assert_eq(task_count(), before + 4);
		} else if (i == 4) {
			cr_assert_eq(sc_reader_set_threads(r, 1), 0, "%s", selfckpt_last_error());
			cr_assert_eq(task_count(), before, "the workers were stopped");
		}
		cr_assert_eq(sc_reader_read(r, got + half, specs[i].raw_len - half), 0, "%s",
			     selfckpt_last_error());
		cr_assert_eq(memcmp(got, want, specs[i].raw_len), 0, "payload %zu differs", i);
		free(want);
		free(got);
	}
	cr_assert_eq(sc_reader_next(r, &rec), 0, "%s", selfckpt_last_error());
	sc_reader_free(r);
}

/* [R-WR-1] the writer never seeks: an image streams through a pipe */
Test(format, writes_and_reads_through_a_pipe)
{
	int p[2];
	pid_t pid;
	struct sc_reader *r;
	struct sc_write_opts o;
	int status;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		sc_write_opts_init(&o);
		write_image(p[1], &o, 1 << 20);
		_exit(0);
	}
	close(p[1]);
	cr_assert_eq(sc_reader_open_fd(&r, p[0], "pipe", NULL), 0, "%s", selfckpt_last_error());
	cr_assert_not(sc_reader_seekable(r));
	check_image(r, 100000);
	sc_reader_free(r);
	close(p[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The index reports each record where it lies, with its stored size. */
Test(format, index_matches_records)
{
	struct sc_write_opts o;
	const struct sc_index_entry *e;
	struct sc_reader *r;
	struct sc_record rec;
	size_t n;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	sc_write_opts_init(&o);
	write_image(fd, &o, 1 << 20);
	close(fd);
	cr_assert_eq(sc_reader_open(&r, path, NULL), 0);
	cr_assert_eq(sc_reader_index(r, &e, &n), 0);
	cr_assert_eq(n, N_SPECS);
	cr_assert_eq(e[0].offset, SC_HEADER_SIZE); /* [R-IDX-5] */
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(e[i].type, specs[i].type);
		cr_assert_eq(e[i].raw_len, specs[i].raw_len);
		if (i + 1 < n)
			cr_assert_eq(e[i].offset + e[i].stored_len, e[i + 1].offset);
	}
	/* random access: the fourth record first, then the second */
	cr_assert_eq(sc_reader_seek(r, 3), 0);
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	cr_assert_eq(rec.seq, 3);
	cr_assert_eq(sc_reader_seek(r, 1), 0);
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	cr_assert_eq(rec.seq, 1);
	sc_reader_free(r);
}

/* A stream's index becomes available once its end was checked. */
Test(format, stream_index_after_end)
{
	struct sc_write_opts o;
	struct sc_read_opts ro = { .flags = SC_RD_STREAM };
	const struct sc_index_entry *e;
	struct sc_reader *r;
	struct sc_record rec;
	size_t n;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	sc_write_opts_init(&o);
	write_image(fd, &o, 1 << 20);
	close(fd);
	cr_assert_eq(sc_reader_open(&r, path, &ro), 0);
	cr_assert_eq(sc_reader_index(r, &e, &n), -SELFCKPT_EUSAGE);
	while (sc_reader_next(r, &rec) == 1)
		;
	cr_assert_eq(sc_reader_index(r, &e, &n), 0);
	cr_assert_eq(n, N_SPECS);
	sc_reader_free(r);
}

/* [R-WR-3] a record takes exactly the bytes it announced */
Test(format, writer_refuses_wrong_payload_length)
{
	struct sc_writer *w;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	cr_assert_eq(sc_writer_new(&w, fd, path, NULL), 0);
	cr_assert_eq(sc_writer_begin(w, SC_REC_FD, SC_RF_REQUIRED, NULL, 0, 10), 0);
	cr_assert_eq(sc_writer_append(w, "12345", 5), 0);
	cr_assert_eq(sc_writer_end(w), -SELFCKPT_EUSAGE);
	cr_assert_str_neq(selfckpt_last_error(), "");
	/* [R-WR-9] after a failure the writer stays failed and writes no trailer */
	cr_assert_eq(sc_writer_finish(w), -SELFCKPT_EUSAGE);
	sc_writer_free(w);
	close(fd);
}

Test(format, writer_refuses_too_many_bytes_and_bad_options)
{
	struct sc_writer *w;
	struct sc_write_opts o;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	cr_assert_eq(sc_writer_new(&w, fd, path, NULL), 0);
	cr_assert_eq(sc_writer_begin(w, SC_REC_FD, SC_RF_REQUIRED, NULL, 0, 3), 0);
	cr_assert_eq(sc_writer_append(w, "12345", 5), -SELFCKPT_EUSAGE);
	sc_writer_free(w);
	sc_write_opts_init(&o);
	o.chunk_shift = 30;
	cr_assert_eq(sc_writer_new(&w, fd, path, &o), -SELFCKPT_EUSAGE);
	cr_assert_null(w);
	close(fd);
}

/* [R-WR-5] [R-IDX-1] the END record is the writer's own; meta is bounded */
Test(format, writer_refuses_end_records_and_huge_meta)
{
	struct sc_writer *w;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	cr_assert_eq(sc_writer_new(&w, fd, path, NULL), 0);
	cr_assert_eq(sc_writer_begin(w, SC_REC_END, SC_RF_REQUIRED, NULL, 0, 0), -SELFCKPT_EUSAGE);
	sc_writer_free(w);
	cr_assert_eq(sc_writer_new(&w, fd, path, NULL), 0);
	cr_assert_eq(sc_writer_begin(w, SC_REC_FD, 0, "", SC_META_MAX + 1, 0), -SELFCKPT_EUSAGE);
	sc_writer_free(w);
	close(fd);
}

/* A full disk or closed pipe is reported with the file name and offset. */
Test(format, writer_reports_write_errors)
{
	struct sc_writer *w;
	int fd = open("/dev/full", O_WRONLY);
	uint8_t *data = pattern(4 << 20, 1, false);
	int err;

	cr_assert_geq(fd, 0);
	err = sc_writer_new(&w, fd, "/dev/full", NULL);
	if (!err) {
		err = sc_writer_record(w, SC_REC_SEGMENT, SC_RF_REQUIRED, NULL, 0, data, 4 << 20);
		sc_writer_free(w);
	}
	cr_assert_eq(err, -ENOSPC);
	cr_assert(strstr(selfckpt_last_error(), "/dev/full"), "%s", selfckpt_last_error());
	free(data);
	close(fd);
}

/* [R-WR-10] [R-WR-11] a committed image replaces the old one; an aborted one does not */
Test(format, atomic_file_keeps_previous_image)
{
	struct sc_atomic_file f;
	struct stat st;
	char buf[16] = { 0 }, cmd[128];
	int fd;

	cr_assert_eq(sc_atomic_open(&f, path), 0);
	cr_assert_eq(write(f.fd, "first", 5), 5);
	cr_assert_eq(sc_atomic_commit(&f), 0);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);

	cr_assert_eq(sc_atomic_open(&f, path), 0);
	cr_assert_eq(write(f.fd, "second, failed", 14), 14);
	sc_atomic_abort(&f);
	fd = open(path, O_RDONLY);
	cr_assert_eq(read(fd, buf, sizeof(buf)), 5);
	cr_assert_str_eq(buf, "first");
	close(fd);

	/* nothing is left behind in the directory (this test's own: tests run in parallel) */
	snprintf(cmd, sizeof(cmd), "test $(ls '%s' | grep -c tmp) -eq 0", tmpdir);
	cr_assert_eq(system(cmd), 0, "%s holds a temporary file", tmpdir);
}

/* [R-CHK-10] incompressible chunks are stored raw, compressible ones shrink */
Test(format, raw_fallback_and_compression)
{
	struct sc_reader *r;
	const struct sc_index_entry *e;
	struct sc_writer *w;
	size_t n;
	uint8_t *noise = pattern(4 << 20, 9, false), *zeros = calloc(1, 4 << 20);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	cr_assert_eq(sc_writer_new(&w, fd, path, NULL), 0);
	cr_assert_eq(sc_writer_record(w, SC_REC_SEGMENT, SC_RF_REQUIRED, NULL, 0, noise, 4 << 20), 0);
	cr_assert_eq(sc_writer_record(w, SC_REC_SEGMENT, SC_RF_REQUIRED, NULL, 0, zeros, 4 << 20), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	close(fd);
	cr_assert_eq(sc_reader_open(&r, path, NULL), 0);
	cr_assert_eq(sc_reader_index(r, &e, &n), 0);
	/* random data: raw chunks, so only the headers are added */
	cr_assert_eq(e[0].stored_len, SC_RECORD_HEADER_SIZE + 4 * (SC_CHUNK_HEADER_SIZE + (1 << 20)));
	cr_assert_lt(e[1].stored_len, 4096);
	sc_reader_free(r);
	free(noise);
	free(zeros);
}

/* Reading past the announced payload is a usage error, not a crash. */
Test(format, read_past_payload_is_refused)
{
	struct sc_writer *w;
	struct sc_reader *r;
	struct sc_record rec;
	char buf[8];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	cr_assert_eq(sc_writer_new(&w, fd, path, NULL), 0);
	cr_assert_eq(sc_writer_record(w, SC_REC_FD, SC_RF_REQUIRED, NULL, 0, "abc", 3), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	close(fd);
	cr_assert_eq(sc_reader_open(&r, path, NULL), 0);
	cr_assert_eq(sc_reader_read(r, buf, 1), -SELFCKPT_EUSAGE);
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	cr_assert_eq(sc_reader_read(r, buf, 4), -SELFCKPT_EUSAGE);
	cr_assert_eq(sc_reader_read(r, buf, 3), 0);
	cr_assert_eq(memcmp(buf, "abc", 3), 0);
	sc_reader_free(r);
}

/* The header carries what the spec says, in the order it says. */
Test(format, header_fields)
{
	struct sc_write_opts o;
	struct sc_reader *r;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	struct sc_writer *w;

	sc_write_opts_init(&o);
	o.created_ns = 1234567890123456789ull;
	o.producer = "tester";
	o.kernel = "6.18.0-test";
	cr_assert_eq(sc_writer_new(&w, fd, path, &o), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	close(fd);
	cr_assert_eq(sc_reader_open(&r, path, NULL), 0, "%s", selfckpt_last_error());
	const struct sc_header *h = sc_reader_header(r);
	cr_assert_eq(h->major, SC_FORMAT_MAJOR);
	cr_assert_eq(h->minor, SC_FORMAT_MINOR);
	cr_assert_eq(h->header_size, SC_HEADER_SIZE); /* [R-WR-2] */
	cr_assert_eq(h->arch, SC_ARCH_X86_64);
	cr_assert_eq(h->page_size, (uint32_t)sysconf(_SC_PAGESIZE));
	cr_assert_eq(h->created_ns, 1234567890123456789ull);
	cr_assert_str_eq(h->producer, "tester");
	cr_assert_str_eq(h->kernel, "6.18.0-test");
	sc_reader_free(r);
}
