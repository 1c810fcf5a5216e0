/* SPDX-License-Identifier: MIT */
/*
 * The writer's output: a regular file is written by offset from several
 * threads, anything else in order; the image must not depend on which. And a
 * write that fails in the middle of an image fails the image, with the file's
 * name and the offset, for good. Requirement IDs are those of
 * spec/image-format.md.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compress/sc_compress.h"
#include "format/sc_format.h"
#include "format/sc_log.h"

static char tmpdir[64];

static void setup(void)
{
	sc_log_set_level(SC_LOG_NONE);
	strcpy(tmpdir, "/tmp/sc-writer-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(writer, .init = setup, .fini = teardown);

enum data { RANDOM, TEXT, MIXED };

/* @n bytes: noise, text that compresses, or 48 KiB runs of each in turn. */
static uint8_t *make_data(size_t n, unsigned seed, enum data kind)
{
	uint8_t *p = malloc(n ? n : 1);
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;

	cr_assert_not_null(p);
	for (size_t i = 0; i < n; i++) {
		bool noise = kind == RANDOM || (kind == MIXED && (i / (48 << 10)) % 2);

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		p[i] = noise ? (uint8_t)x : (uint8_t)("selfckpt writer test "[i % 21] + (x % 7 == 0));
	}
	return p;
}

struct rec_spec {
	uint32_t type;
	uint32_t meta_len; /* over 64 KiB: a piece too big to gather */
	size_t raw_len;
	size_t piece;      /* bytes per append: odd sizes make chunks span appends */
};

static const struct rec_spec specs[] = {
	{ SC_REC_PROCESS, 120, 0, 1 },
	{ SC_REC_THREAD, 112, 72, 72 },
	{ SC_REC_SEGMENT, 88 + 16, (3 << 19) + 777, 300001 },
	{ SC_REC_SEGMENT, 88 + 16, 1 << 20, 1 << 20 },
	{ SC_REC_FD, 100000, 70000, 70000 },
	{ SC_REC_DEVMEM, 48, (1 << 20) + 4096, 65536 },
	{ SC_REC_DEVMEM, 48, 6 << 20, 6 << 20 },
};
#define N_SPECS (sizeof(specs) / sizeof(specs[0]))

struct config {
	int level;
	unsigned shift, threads;
	enum data data;
	unsigned writers; /* chunk writes at once to a regular file */
};

/* The same image whatever the descriptor: fixed time, producer and kernel. */
static int write_image(int fd, const char *name, const struct config *c)
{
	struct sc_write_opts o;
	struct sc_writer *w;
	int err;

	sc_write_opts_init(&o);
	o.level = c->level;
	o.chunk_shift = c->shift;
	o.threads = c->threads;
	o.created_ns = 1;
	o.producer = "writer test";
	o.kernel = "test";
	o.writers = c->writers;
	err = sc_writer_new(&w, fd, name, &o);
	for (size_t i = 0; !err && i < N_SPECS; i++) {
		const struct rec_spec *s = &specs[i];
		uint8_t *meta = make_data(s->meta_len, 100 + i, RANDOM);
		uint8_t *data = make_data(s->raw_len, i, c->data);

		err = sc_writer_begin(w, s->type, SC_RF_REQUIRED, meta, s->meta_len, s->raw_len);
		for (size_t off = 0; !err && off < s->raw_len; off += s->piece)
			err = sc_writer_append(w, data + off, s->raw_len - off < s->piece ?
								s->raw_len - off : s->piece);
		if (!err)
			err = sc_writer_end(w);
		/* [R-WR-6] end() gives the bytes back: they must have been used or copied. */
		memset(data, 0xee, s->raw_len);
		free(meta);
		free(data);
	}
	if (!err)
		err = sc_writer_finish(w);
	sc_writer_free(w);
	return err;
}

struct drain {
	int fd;
	uint8_t *b;
	size_t n, cap;
};

static void *drain_pipe(void *arg)
{
	struct drain *d = arg;
	ssize_t k;

	do {
		if (d->n == d->cap) {
			d->cap = d->cap ? 2 * d->cap : 1 << 20;
			d->b = realloc(d->b, d->cap);
			if (!d->b)
				return NULL;
		}
		k = read(d->fd, d->b + d->n, d->cap - d->n);
		if (k > 0)
			d->n += (size_t)k;
	} while (k > 0 || (k < 0 && errno == EINTR));
	return NULL;
}

/* [R-WR-1] the image through a pipe: written in order, never seeked */
static struct drain image_through_pipe(const struct config *c)
{
	struct drain d = { 0 };
	pthread_t t;
	int p[2];

	cr_assert_eq(pipe(p), 0);
	d.fd = p[0];
	cr_assert_eq(pthread_create(&t, NULL, drain_pipe, &d), 0);
	cr_assert_eq(write_image(p[1], "pipe", c), 0, "%s", selfckpt_last_error());
	close(p[1]);
	pthread_join(t, NULL);
	close(p[0]);
	cr_assert_not_null(d.b);
	return d;
}

/* The file's bytes from @from on must be @want, and the file end where they do. */
static void expect_file(int fd, off_t from, const struct drain *want, const char *what)
{
	struct stat st;
	uint8_t *got = malloc(want->n);

	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq((uint64_t)st.st_size, from + want->n, "%s: %lld bytes, expected %lld", what,
		     (long long)st.st_size, (long long)(from + want->n));
	cr_assert_eq(pread(fd, got, want->n, from), (ssize_t)want->n);
	if (memcmp(got, want->b, want->n)) {
		size_t i = 0;

		while (got[i] == want->b[i])
			i++;
		cr_assert_fail("%s differs from the pipe's image at offset %zu", what, i);
	}
	free(got);
}

/* [R-WR-6] chunks written by offset land where the in-order writer puts them */
static void file_matches_pipe(const struct config *c)
{
	static const char prefix[] = "bytes before the image";
	struct drain want = image_through_pipe(c);
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/img.sckpt", tmpdir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_eq(write_image(fd, path, c), 0, "%s", selfckpt_last_error());
	expect_file(fd, 0, &want, "regular file");
	cr_assert_eq(lseek(fd, 0, SEEK_CUR), (off_t)want.n, "left at the image's end");
	close(fd);

	/* An image that starts further into the file keeps what is before it. */
	fd = open(path, O_RDWR | O_TRUNC);
	cr_assert_eq(write(fd, prefix, sizeof(prefix)), (ssize_t)sizeof(prefix));
	cr_assert_eq(write_image(fd, path, c), 0, "%s", selfckpt_last_error());
	expect_file(fd, sizeof(prefix), &want, "file with a prefix");
	cr_assert_eq(lseek(fd, 0, SEEK_CUR), (off_t)(sizeof(prefix) + want.n));
	close(fd);

	/* An append-only file cannot be written by offset: it is written in order. */
	fd = open(path, O_RDWR | O_TRUNC | O_APPEND);
	cr_assert_eq(write_image(fd, path, c), 0, "%s", selfckpt_last_error());
	expect_file(fd, 0, &want, "append-only file");
	close(fd);
	free(want.b);
}

/* A writer of a fresh file at @path: three threads, @writers writers, @writeback or not. */
static struct sc_writer *file_writer(const char *path, int *fd, unsigned writers, bool writeback)
{
	struct sc_write_opts o;
	struct sc_writer *w;

	*fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(*fd, 0);
	sc_write_opts_init(&o);
	o.threads = 3;
	o.writers = writers;
	o.no_writeback = !writeback;
	o.created_ns = 1;
	o.producer = "writer test";
	o.kernel = "test";
	cr_assert_eq(sc_writer_new(&w, *fd, path, &o), 0, "%s", selfckpt_last_error());
	return w;
}

/* Finish @w and read its whole file back. */
static uint8_t *finished_file(struct sc_writer *w, int fd, size_t *len)
{
	struct stat st;
	uint8_t *img;

	cr_assert_eq(sc_writer_finish(w), 0, "%s", selfckpt_last_error());
	sc_writer_free(w);
	cr_assert_eq(fstat(fd, &st), 0);
	img = malloc((size_t)st.st_size);
	cr_assert_eq(pread(fd, img, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return img;
}

/* One record of @n bytes of @data, stored as chunks of 1 MiB, into a fresh file at @path. */
static uint8_t *big_image(const char *path, const uint8_t *data, size_t n, unsigned writers,
			  bool writeback, size_t *len)
{
	int fd;
	struct sc_writer *w = file_writer(path, &fd, writers, writeback);

	cr_assert_eq(sc_writer_record(w, SC_REC_SEGMENT, SC_RF_REQUIRED, NULL, 0, data, n), 0,
		     "%s", selfckpt_last_error());
	return finished_file(w, fd, len);
}

/*
 * Starting the device writes while the image is made (every 16 MiB a writer
 * wrote) changes when bytes reach the device, never which bytes: an image of
 * several such steps is the same without it, and with three writers.
 */
Test(writer, writeback_keeps_the_bytes, .timeout = 120)
{
	size_t n = 112u << 20, want_len, got_len;
	uint8_t *data = make_data(n, 7, MIXED), *want, *got;
	char path[128];

	snprintf(path, sizeof(path), "%s/img.sckpt", tmpdir);
	want = big_image(path, data, n, 1, false, &want_len);
	cr_assert_gt(want_len, 3 * (16u << 20), "the image spans several writeback steps");
	for (unsigned writers = 1; writers <= 3; writers += 2) {
		got = big_image(path, data, n, writers, true, &got_len);
		cr_assert_eq(got_len, want_len, "%u writers: %zu bytes, expected %zu", writers,
			     got_len, want_len);
		cr_assert_eq(memcmp(got, want, want_len), 0, "%u writers: the bytes differ",
			     writers);
		free(got);
	}
	free(want);
	free(data);
}

/*
 * Two buffers taking turns, as a checkpoint's windows do: a record ended lent
 * is still written from its buffer, and once sc_writer_returned() says its
 * bytes are out the buffer is the caller's again: scribbled over at once, it
 * changes nothing, and the image is the one sc_writer_end() writes. Random
 * bytes are stored raw, so every chunk is written from the caller's buffer.
 */
Test(writer, a_buffer_lent_to_a_record_is_the_callers_again_once_returned, .timeout = 120)
{
	enum { RECORDS = 6 };
	size_t rec = 6u << 20, want_len, got_len;
	uint8_t *data = make_data(RECORDS * rec, 11, RANDOM), *buf[2], *want, *got;
	uint64_t lent[2];
	struct sc_writer *w;
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/img.sckpt", tmpdir);
	w = file_writer(path, &fd, 1, true);
	for (size_t i = 0; i < RECORDS; i++)
		cr_assert_eq(sc_writer_record(w, SC_REC_SEGMENT, SC_RF_REQUIRED, NULL, 0,
					      data + i * rec, rec), 0, "%s", selfckpt_last_error());
	want = finished_file(w, fd, &want_len);

	buf[0] = malloc(rec);
	buf[1] = malloc(rec);
	w = file_writer(path, &fd, 1, true);
	for (size_t i = 0; i < RECORDS; i++) {
		uint8_t *b = buf[i % 2];

		if (i >= 2) {
			cr_assert_eq(sc_writer_returned(w, lent[i % 2], true), 0, "%s",
				     selfckpt_last_error());
			memset(b, 0xa5, rec); /* the writer must not read it any more */
		}
		memcpy(b, data + i * rec, rec);
		cr_assert_eq(sc_writer_begin(w, SC_REC_SEGMENT, SC_RF_REQUIRED, NULL, 0, rec), 0);
		cr_assert_eq(sc_writer_append(w, b, rec), 0, "%s", selfckpt_last_error());
		cr_assert_eq(sc_writer_end_lent(w, &lent[i % 2]), 0, "%s", selfckpt_last_error());
	}
	for (int k = 0; k < 2; k++) {
		int r = sc_writer_returned(w, lent[k], false);

		cr_assert(r == 0 || r == 1, "not waiting: %d", r);
		cr_assert_eq(sc_writer_returned(w, lent[k], true), 0, "%s", selfckpt_last_error());
		cr_assert_eq(sc_writer_returned(w, lent[k], false), 0, "out, then no longer out");
		memset(buf[k], 0x5a, rec);
	}
	got = finished_file(w, fd, &got_len);
	cr_assert_eq(got_len, want_len, "%zu bytes, expected %zu", got_len, want_len);
	cr_assert_eq(memcmp(got, want, want_len), 0, "the images differ");
	free(buf[0]);
	free(buf[1]);
	free(got);
	free(want);
	free(data);
}

/* Every level, data set and number of writers at one chunk size; and one thread. */
static void file_matches_pipe_at(unsigned shift)
{
	static const int levels[] = { SC_LEVEL_STORE, SC_LEVEL_DEFAULT };
	static const enum data sets[] = { RANDOM, TEXT, MIXED };

	for (size_t l = 0; l < 2; l++)
		for (size_t d = 0; d < 3; d++)
			for (unsigned writers = 1; writers <= 3; writers += 2) {
				struct config c = { levels[l], shift, 3, sets[d], writers };

				file_matches_pipe(&c);
			}
	file_matches_pipe(&(struct config){ SC_LEVEL_DEFAULT, shift, 1, MIXED, 1 });
}

Test(writer, file_matches_pipe_4k_chunks, .timeout = 120)
{
	file_matches_pipe_at(12);
}

Test(writer, file_matches_pipe_64k_chunks, .timeout = 120)
{
	file_matches_pipe_at(16);
}

Test(writer, file_matches_pipe_1m_chunks, .timeout = 120)
{
	file_matches_pipe_at(20);
}

Test(writer, file_matches_pipe_4m_chunks, .timeout = 120)
{
	file_matches_pipe_at(22);
}

/* ---- failures ---- */

#define FAIL_IMAGE (16u << 20)

/*
 * In a child (limits and mounts stay there): write an image of one
 * FAIL_IMAGE-byte record to @path and check that it fails with @want, that the
 * message names the file and, when @at is not 0, the offset @at, and that every
 * later call fails the same way [R-WR-9]. Exit status: 0 when all holds, else
 * the check that failed.
 */
static int failing_write(const char *path, unsigned threads, unsigned writers, int want,
			 uint64_t at)
{
	struct sc_write_opts o;
	struct sc_writer *w;
	uint8_t *data = make_data(FAIL_IMAGE, 7, RANDOM);
	char where[64];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600), err;

	sc_write_opts_init(&o);
	o.level = SC_LEVEL_STORE;
	o.threads = threads;
	o.writers = writers;
	if (fd < 0 || sc_writer_new(&w, fd, path, &o) < 0)
		return 10;
	err = sc_writer_begin(w, SC_REC_SEGMENT, SC_RF_REQUIRED, NULL, 0, FAIL_IMAGE);
	for (size_t off = 0; !err && off < FAIL_IMAGE; off += 1 << 20)
		err = sc_writer_append(w, data + off, 1 << 20);
	if (!err)
		err = sc_writer_end(w);
	/* Writes may still run after end(): the failure may come from finish(). */
	if (!err)
		err = sc_writer_finish(w);
	if (err != want)
		return 11;
	if (at)
		snprintf(where, sizeof(where), "at offset %llu:", (unsigned long long)at);
	else
		strcpy(where, "at offset ");
	if (!strstr(selfckpt_last_error(), path) || !strstr(selfckpt_last_error(), where))
		return 12;
	if (sc_writer_end(w) != want || sc_writer_append(w, data, 1) != want ||
	    sc_writer_begin(w, SC_REC_FD, 0, NULL, 0, 0) != want ||
	    sc_writer_finish(w) != want)
		return 13;
	sc_writer_free(w);
	free(data);
	return 0;
}

/* The partial image is refused: it has no trailer [R-TRL-1] [R-WR-9]. */
static void expect_refused(const char *path, uint64_t max_size, int want)
{
	struct sc_reader *r;
	struct stat st;
	int err;

	cr_assert_eq(stat(path, &st), 0);
	cr_assert_leq((uint64_t)st.st_size, max_size);
	err = sc_reader_open(&r, path, NULL);
	cr_assert(want ? err == want : err < 0, "reading '%s' (%lld bytes): %d", path,
		  (long long)st.st_size, err);
}

static void fsize_limit_case(uint64_t limit, unsigned threads, unsigned writers)
{
	struct rlimit rl = { limit, limit };
	char path[128];
	int status;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/limited.sckpt", tmpdir);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* The thread that crosses the limit gets SIGXFSZ; ignored, it is EFBIG. */
		signal(SIGXFSZ, SIG_IGN);
		_exit(setrlimit(RLIMIT_FSIZE, &rl) ?
			      9 : failing_write(path, threads, writers, -EFBIG, limit));
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "limit %llu, %u threads, %u writers: status 0x%x", (unsigned long long)limit,
		  threads, writers, status);
	expect_refused(path, limit, -SELFCKPT_ETRUNCATED);
}

/* A file size limit stops the image in a chunk, written by a worker, or in the header. */
Test(writer, failed_write_fails_the_image, .timeout = 60)
{
	fsize_limit_case((5u << 20) + 12345, 4, 1);
	fsize_limit_case((5u << 20) + 12345, 4, 4);
	fsize_limit_case((5u << 20) + 12345, 1, 1);
	fsize_limit_case(100, 4, 4);
	fsize_limit_case((15u << 20) + 1, 2, 2);
}

/* A private mount namespace with a small tmpfs at @dir, or false when one cannot be made. */
static bool small_tmpfs(const char *dir)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	char map[64];
	int fd;

	if (unshare(CLONE_NEWNS) < 0) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			return false;
		fd = open("/proc/self/setgroups", O_WRONLY);
		if (fd < 0 || write(fd, "deny", 4) != 4)
			return false;
		close(fd);
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
		fd = open("/proc/self/uid_map", O_WRONLY);
		if (fd < 0 || write(fd, map, strlen(map)) < 0)
			return false;
		close(fd);
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
		fd = open("/proc/self/gid_map", O_WRONLY);
		if (fd < 0 || write(fd, map, strlen(map)) < 0)
			return false;
		close(fd);
	}
	return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
	       mount("sc-writer", dir, "tmpfs", 0, "size=4m,mode=0700") == 0;
}

/* A full file system fails the image with ENOSPC, wherever the first write failed. */
Test(writer, full_file_system_fails_the_image, .timeout = 60)
{
	char dir[128], path[160];
	int status;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/small", tmpdir);
	snprintf(path, sizeof(path), "%s/full.sckpt", dir);
	cr_assert_eq(mkdir(dir, 0700), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(small_tmpfs(dir) ? failing_write(path, 4, 4, -ENOSPC, 0) : 77);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		cr_skip_test("no mount namespace with a tmpfs could be made");
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x", status);
}

/* A writer given up in the middle of a record waits for its chunks before it is freed. */
Test(writer, free_in_the_middle_of_a_record)
{
	struct sc_write_opts o;
	struct sc_writer *w;
	uint8_t *data = make_data(8u << 20, 3, MIXED);
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/abandoned.sckpt", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	sc_write_opts_init(&o);
	o.threads = 4;
	o.writers = 2;
	cr_assert_eq(sc_writer_new(&w, fd, path, &o), 0);
	cr_assert_eq(sc_writer_begin(w, SC_REC_SEGMENT, SC_RF_REQUIRED, NULL, 0, 16u << 20), 0);
	cr_assert_eq(sc_writer_append(w, data, 8u << 20), 0);
	sc_writer_free(w);
	free(data);
	close(fd);
	expect_refused(path, 16u << 20, 0); /* maybe empty, maybe cut: never complete */
}
