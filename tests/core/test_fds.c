/* SPDX-License-Identifier: MIT */
/*
 * File descriptors: capture in a child that set up one descriptor of every
 * kind at known numbers, the fd record written and read back, and restore in
 * a second child that starts with nothing above 2 (twice in a row, zdtm
 * style): same numbers, offsets, flags, pipe buffers and saved contents.
 *
 * The children report a failed check on standard error and by exit status:
 * Criterion's asserts belong to the test process only.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/fd_socket.h"
#include "core/fds_freeze.h"
#include "core/sc_fds.h"
#include "format/sc_format.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"

/* The layout the capturing child sets up. */
#define FD_DATA 3    /* data.txt, read-only, position 10 */
#define FD_LOG 4     /* log.txt, write-only, O_APPEND, close-on-exec */
#define FD_PIPE_R 5  /* a pipe with PIPE_TEXT buffered; both ends */
#define FD_PIPE_W 6
#define FD_LONE_R 7  /* a pipe's read end alone, "tail" buffered */
#define FD_MEMFD 8   /* memfd "scmem", MEMFD_LEN bytes, position 1234 */
#define FD_DEAD 9    /* an unlinked file, DEAD_LEN bytes, read-write, position 100 */
#define FD_DIR 10    /* the test directory */
#define FD_NULL 11   /* /dev/null, write-only */
#define FD_SOCK 12   /* a unix socket whose peer is gone, "sock" queued */
#define FD_SOCK2 13  /* a netlink socket: cannot come back */
#define FD_EVENT 14  /* an eventfd, count 5 */
#define FD_LONE_W 15 /* a pipe's write end alone */
#define FD_DATA2 20  /* data.txt again after a gap: read-write, position 50, close-on-exec */
#define FD_SKIP 30   /* open, but passed to sc_fds_capture() in @skip */
#define FD_SAVED_ERR 200 /* the children's own standard error while fd 2 is redirected */

#define DATA_LEN 100
#define MEMFD_LEN 5000
#define DEAD_LEN 3000
#define PIPE_TEXT "hello, pipe"
#define LOG_TEXT "first line\n"

static char tmpdir[64];
static char data_path[128], log_path[128], dead_path[128], img_path[128], warn_path[128];

static void setup(void)
{
	sc_log_set_level(SC_LOG_NONE);
	strcpy(tmpdir, "/tmp/sc-fds-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	snprintf(data_path, sizeof(data_path), "%s/data.txt", tmpdir);
	snprintf(log_path, sizeof(log_path), "%s/log.txt", tmpdir);
	snprintf(dead_path, sizeof(dead_path), "%s/dead.bin", tmpdir);
	snprintf(img_path, sizeof(img_path), "%s/fds.sckpt", tmpdir);
	snprintf(warn_path, sizeof(warn_path), "%s/warnings.txt", tmpdir);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(fds, .init = setup, .fini = teardown, .timeout = 30);

/* ---- helpers for the children ---- */

#define CHECK(c)                                                                              \
	do {                                                                                  \
		if (!(c)) {                                                                   \
			dprintf(2, "%s:%d: check failed: %s (errno %d, last error: %s)\n",    \
				__FILE__, __LINE__, #c, errno, selfckpt_last_error());        \
			_exit(1);                                                             \
		}                                                                             \
	} while (0)

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed + (i >> 8));
}

static void write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	CHECK(fd >= 0);
	CHECK(write(fd, p, n) == (ssize_t)n);
	close(fd);
}

/* Out of the way of the numbers being set up. */
static int high(int fd)
{
	int h;

	CHECK(fd >= 0);
	h = fcntl(fd, F_DUPFD, 100);
	CHECK(h >= 100);
	close(fd);
	return h;
}

static void place_at(int fd, int want, bool cloexec)
{
	CHECK(dup3(fd, want, cloexec ? O_CLOEXEC : 0) == want);
	close(fd);
}

static void close_above_2(void)
{
	CHECK(close_range(3, ~0u, 0) == 0);
}

/* fd 2 to @path, the old one kept at FD_SAVED_ERR; undone by restore_stderr(). */
static void redirect_stderr(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	CHECK(fd >= 0);
	CHECK(fcntl(2, F_DUPFD_CLOEXEC, FD_SAVED_ERR) == FD_SAVED_ERR);
	CHECK(dup2(fd, 2) == 2);
	close(fd);
}

static void restore_stderr(void)
{
	CHECK(dup2(FD_SAVED_ERR, 2) == 2);
	close(FD_SAVED_ERR);
}

/* Whether @path holds @needle; says what it holds when that is not @want. */
static bool file_has(const char *path, const char *needle, bool want)
{
	static char buf[16384];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	CHECK(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHECK(n >= 0);
	buf[n] = '\0';
	if (!strstr(buf, needle) == want)
		dprintf(2, "'%s' %s \"%s\"; it holds:\n%s\n", path, want ? "lacks" : "has",
			needle, buf);
	return strstr(buf, needle) != NULL;
}

static const struct sc_fd *find(const struct sc_fd *fds, size_t n, int fd)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i].fd == fd)
			return &fds[i];
	return NULL;
}

static void set_up_fds(void)
{
	uint8_t buf[MEMFD_LEN];
	int p[2];

	close_above_2();
	place_at(high(open(data_path, O_RDONLY)), FD_DATA, false);
	CHECK(lseek(FD_DATA, 10, SEEK_SET) == 10);
	place_at(high(open(log_path, O_WRONLY | O_APPEND)), FD_LOG, true);
	CHECK(write(FD_LOG, LOG_TEXT, strlen(LOG_TEXT)) == (ssize_t)strlen(LOG_TEXT));

	CHECK(pipe(p) == 0);
	p[0] = high(p[0]), p[1] = high(p[1]);
	place_at(p[0], FD_PIPE_R, false);
	place_at(p[1], FD_PIPE_W, false);
	CHECK(write(FD_PIPE_W, PIPE_TEXT, strlen(PIPE_TEXT)) == (ssize_t)strlen(PIPE_TEXT));
	CHECK(pipe(p) == 0);
	p[0] = high(p[0]), p[1] = high(p[1]);
	place_at(p[0], FD_LONE_R, false);
	CHECK(write(p[1], "tail", 4) == 4);
	close(p[1]);

	fill(buf, MEMFD_LEN, 1);
	p[0] = high(memfd_create("scmem", 0));
	CHECK(write(p[0], buf, MEMFD_LEN) == MEMFD_LEN);
	CHECK(lseek(p[0], 1234, SEEK_SET) == 1234);
	place_at(p[0], FD_MEMFD, false);
	fill(buf, DEAD_LEN, 2);
	p[0] = high(open(dead_path, O_RDWR | O_CREAT | O_TRUNC, 0640));
	CHECK(write(p[0], buf, DEAD_LEN) == DEAD_LEN);
	CHECK(unlink(dead_path) == 0);
	CHECK(lseek(p[0], 100, SEEK_SET) == 100);
	place_at(p[0], FD_DEAD, false);

	place_at(high(open(tmpdir, O_RDONLY | O_DIRECTORY)), FD_DIR, false);
	place_at(high(open("/dev/null", O_WRONLY)), FD_NULL, false);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, p) == 0);
	CHECK(write(p[1], "sock", 4) == 4);
	close(p[1]);
	place_at(high(p[0]), FD_SOCK, false);
	place_at(high(socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)), FD_SOCK2, false);
	place_at(high(eventfd(5, 0)), FD_EVENT, false);
	CHECK(pipe(p) == 0);
	p[0] = high(p[0]), p[1] = high(p[1]);
	place_at(p[1], FD_LONE_W, false);
	close(p[0]);
	place_at(high(open(data_path, O_RDWR)), FD_DATA2, true);
	CHECK(lseek(FD_DATA2, 50, SEEK_SET) == 50);
	place_at(high(open(data_path, O_RDONLY)), FD_SKIP, false);
}

static bool has_data(const struct sc_fd *f, const void *p, size_t n)
{
	return f->data_len == n && (!n || !memcmp(f->data, p, n));
}

static void check_captured(const struct sc_fd *fds, size_t n)
{
	const struct sc_fd *f;
	uint8_t buf[MEMFD_LEN];
	size_t ours = 0;

	for (size_t i = 0; i < n; i++)
		ours += fds[i].fd > 2;
	CHECK(ours == 14);
	CHECK(!find(fds, n, FD_SKIP) && !find(fds, n, FD_SAVED_ERR));

	CHECK((f = find(fds, n, FD_DATA)) && f->kind == SC_FD_REGULAR);
	CHECK(!strcmp(f->path, data_path) && f->pos == 10 && f->size == DATA_LEN);
	CHECK((f->open_flags & O_ACCMODE) == O_RDONLY && f->fd_flags == 0 && S_ISREG(f->mode));
	CHECK(f->data_len == 0 && f->pipe_id == 0 && f->inode && f->mtime_ns);
	CHECK((f = find(fds, n, FD_LOG)) && f->kind == SC_FD_REGULAR);
	CHECK((f->open_flags & O_ACCMODE) == O_WRONLY && (f->open_flags & O_APPEND));
	CHECK(f->fd_flags == FD_CLOEXEC && !(f->open_flags & O_CLOEXEC));
	CHECK(f->pos == strlen(LOG_TEXT));

	CHECK((f = find(fds, n, FD_PIPE_R)) && f->kind == SC_FD_PIPE_R);
	CHECK(has_data(f, PIPE_TEXT, strlen(PIPE_TEXT)) && f->pipe_id && f->size >= 4096);
	CHECK(find(fds, n, FD_PIPE_W)->kind == SC_FD_PIPE_W);
	CHECK(find(fds, n, FD_PIPE_W)->pipe_id == f->pipe_id);
	CHECK(find(fds, n, FD_PIPE_W)->data_len == 0);
	CHECK((f = find(fds, n, FD_LONE_R)) && f->kind == SC_FD_PIPE_R && has_data(f, "tail", 4));
	CHECK(f->pipe_id != find(fds, n, FD_PIPE_R)->pipe_id);
	CHECK((f = find(fds, n, FD_LONE_W)) && f->kind == SC_FD_PIPE_W && f->data_len == 0);
	CHECK((f->open_flags & O_ACCMODE) == O_WRONLY);

	fill(buf, MEMFD_LEN, 1);
	CHECK((f = find(fds, n, FD_MEMFD)) && f->kind == SC_FD_MEMFD);
	CHECK(!strcmp(f->path, "/memfd:scmem") && f->pos == 1234 && has_data(f, buf, MEMFD_LEN));
	fill(buf, DEAD_LEN, 2);
	CHECK((f = find(fds, n, FD_DEAD)) && f->kind == SC_FD_DELETED);
	CHECK(!strcmp(f->path, dead_path) && f->pos == 100 && has_data(f, buf, DEAD_LEN));
	CHECK((f->open_flags & O_ACCMODE) == O_RDWR);

	CHECK((f = find(fds, n, FD_DIR)) && f->kind == SC_FD_DIR && !strcmp(f->path, tmpdir));
	CHECK((f = find(fds, n, FD_NULL)) && f->kind == SC_FD_CHAR);
	CHECK(!strcmp(f->path, "/dev/null") && (f->open_flags & O_ACCMODE) == O_WRONLY);
	CHECK((f = find(fds, n, FD_SOCK)) && f->kind == SC_FD_UNIX && f->data_len);
	CHECK((f = find(fds, n, FD_SOCK2)) && f->kind == SC_FD_SOCKET);
	CHECK(!strncmp(f->path, "socket:[", 8));
	CHECK((f = find(fds, n, FD_EVENT)) && f->kind == SC_FD_EVENTFD);
	CHECK(!strcmp(f->path, "anon_inode:[eventfd]") && f->data_len > 0);
	CHECK((f = find(fds, n, FD_DATA2)) && f->kind == SC_FD_REGULAR && f->pos == 50);
	CHECK((f->open_flags & O_ACCMODE) == O_RDWR && f->fd_flags == FD_CLOEXEC);
}

/* Capture changed nothing: positions stay, and the pipes still hold their bytes. */
static void check_unchanged(void)
{
	char buf[32] = { 0 };

	CHECK(lseek(FD_DATA, 0, SEEK_CUR) == 10 && lseek(FD_MEMFD, 0, SEEK_CUR) == 1234);
	CHECK(lseek(FD_DEAD, 0, SEEK_CUR) == 100);
	CHECK(read(FD_PIPE_R, buf, sizeof(buf)) == (ssize_t)strlen(PIPE_TEXT));
	CHECK(!strcmp(buf, PIPE_TEXT));
	memset(buf, 0, sizeof(buf));
	CHECK(read(FD_LONE_R, buf, sizeof(buf)) == 4 && !strcmp(buf, "tail"));
}

static void write_image(const struct sc_fd *fds, size_t n)
{
	struct sc_write_opts o;
	struct sc_writer *w;
	int fd = open(img_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	CHECK(fd >= 0);
	sc_write_opts_init(&o);
	o.threads = 1;
	o.chunk_shift = 12; /* the memfd's 5000 bytes take two chunks */
	CHECK(sc_writer_new(&w, fd, img_path, &o) == 0);
	for (size_t i = 0; i < n; i++)
		CHECK(sc_fd_write_record(w, &fds[i]) == 0);
	CHECK(sc_writer_finish(w) == 0);
	sc_writer_free(w);
	CHECK(close(fd) == 0);
}

/* Every fd record of the image, in order. */
static void read_image(struct sc_fd **out, size_t *n)
{
	struct sc_read_opts o = { .threads = 1 };
	struct sc_fd *fds = NULL;
	struct sc_reader *r;
	struct sc_record rec;
	size_t k = 0;
	int ret;

	CHECK(sc_reader_open(&r, img_path, &o) == 0);
	while ((ret = sc_reader_next(r, &rec)) == 1) {
		CHECK(rec.type == SC_REC_FD && rec.flags == SC_RF_REQUIRED);
		CHECK((fds = realloc(fds, (k + 1) * sizeof(*fds))));
		CHECK(sc_fd_read_record(r, &rec, &fds[k]) == 0);
		k++;
	}
	CHECK(ret == 0);
	sc_reader_free(r);
	*out = fds;
	*n = k;
}

static bool same_fd(const struct sc_fd *a, const struct sc_fd *b)
{
	return a->fd == b->fd && a->kind == b->kind && a->open_flags == b->open_flags &&
	       a->fd_flags == b->fd_flags && a->pos == b->pos && a->dev == b->dev &&
	       a->inode == b->inode && a->size == b->size && a->mtime_ns == b->mtime_ns &&
	       a->mode == b->mode && !strcmp(a->path, b->path) && a->pipe_id == b->pipe_id &&
	       has_data(a, b->data, b->data_len);
}

/* The capturing child: set up, capture, check, write the image, read it back. */
static void capture_child(void)
{
	struct sc_fd *fds, *back;
	size_t n, n_back;
	int skip[] = { FD_SKIP, FD_SAVED_ERR };

	set_up_fds();
	redirect_stderr(warn_path);
	sc_log_set_level(SC_LOG_WARN);
	CHECK(sc_fds_capture(&fds, &n, skip, 2) == 0);
	sc_log_set_level(SC_LOG_NONE);
	restore_stderr();
	CHECK(file_has(warn_path, "1 descriptor cannot come back as it is: 13 (socket:[", true));
	CHECK(file_has(warn_path, "as if its peer had closed", true));
	CHECK(!file_has(warn_path, "anon_inode:[eventfd]", false));
	check_captured(fds, n);
	write_image(fds, n);
	read_image(&back, &n_back);
	CHECK(n_back == n);
	for (size_t i = 0; i < n; i++)
		CHECK(same_fd(&back[i], &fds[i]));
	check_unchanged();
	sc_fds_free(back, n_back);
	sc_fds_free(fds, n);
}

static void run_child(void (*fn)(int), int arg)
{
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "child failed (status 0x%x); see its message above", status);
}

static void capture_child_main(int unused)
{
	(void)unused;
	capture_child();
}

/* data.txt, log.txt, and the image of capture_child(). */
static void make_image(void)
{
	uint8_t data[DATA_LEN];

	fill(data, DATA_LEN, 0);
	write_file(data_path, data, DATA_LEN);
	write_file(log_path, "", 0);
	run_child(capture_child_main, 0);
}

/* ---- restore ---- */

enum restore_case { RESTORE_OK, RESTORE_CHANGED, RESTORE_MISSING };

static void check_mode(int fd, int acc, bool append, bool cloexec)
{
	int fl = fcntl(fd, F_GETFL), fdfl = fcntl(fd, F_GETFD);

	CHECK(fl >= 0 && fdfl >= 0);
	CHECK((fl & O_ACCMODE) == acc && !!(fl & O_APPEND) == append);
	CHECK(!!(fdfl & FD_CLOEXEC) == cloexec);
}

static void check_contents(int fd, size_t len, unsigned seed, off_t pos, bool unlinked)
{
	uint8_t want[MEMFD_LEN], got[MEMFD_LEN];
	struct stat st;

	fill(want, len, seed);
	CHECK(lseek(fd, 0, SEEK_CUR) == pos);
	CHECK(fstat(fd, &st) == 0 && st.st_size == (off_t)len);
	CHECK(!unlinked || st.st_nlink == 0);
	CHECK(pread(fd, got, len, 0) == (ssize_t)len && !memcmp(got, want, len));
}

/* Only the restored numbers are open (and 0-2): no temporary descriptor is left. */
static void check_open_set(void)
{
	static const int want[] = { FD_DATA, FD_LOG, FD_PIPE_R, FD_PIPE_W, FD_LONE_R, FD_MEMFD,
				    FD_DEAD, FD_DIR, FD_NULL, FD_LONE_W, FD_DATA2, FD_SOCK,
				    FD_SOCK2, FD_EVENT };
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	size_t seen = 0;

	CHECK(d);
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		bool ok = e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d);

		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]) && !ok; i++)
			ok = want[i] == fd;
		if (!ok)
			dprintf(2, "descriptor %d is open after the restore\n", fd);
		CHECK(ok);
		seen += fd > 2 && fd != dirfd(d);
	}
	closedir(d);
	CHECK(seen == sizeof(want) / sizeof(want[0]));
}

static void check_restored(void)
{
	uint8_t data[DATA_LEN], buf[32] = { 0 };
	struct stat st, dir;
	uint64_t count = 0;

	check_open_set();
	fill(data, DATA_LEN, 0);
	check_mode(FD_DATA, O_RDONLY, false, false);
	CHECK(read(FD_DATA, buf, 5) == 5 && !memcmp(buf, data + 10, 5));
	check_mode(FD_LOG, O_WRONLY, true, true);
	CHECK(lseek(FD_LOG, 0, SEEK_CUR) == (off_t)strlen(LOG_TEXT));
	check_mode(FD_DATA2, O_RDWR, false, true);
	CHECK(read(FD_DATA2, buf, 5) == 5 && !memcmp(buf, data + 50, 5));

	check_mode(FD_PIPE_R, O_RDONLY, false, false);
	check_mode(FD_PIPE_W, O_WRONLY, false, false);
	memset(buf, 0, sizeof(buf));
	CHECK(read(FD_PIPE_R, buf, sizeof(buf)) == (ssize_t)strlen(PIPE_TEXT));
	CHECK(!strcmp((char *)buf, PIPE_TEXT));
	CHECK(write(FD_PIPE_W, "x", 1) == 1 && read(FD_PIPE_R, buf, 1) == 1 && buf[0] == 'x');
	memset(buf, 0, sizeof(buf));
	CHECK(read(FD_LONE_R, buf, sizeof(buf)) == 4 && !strcmp((char *)buf, "tail"));
	CHECK(read(FD_LONE_R, buf, sizeof(buf)) == 0); /* no writer left: end of file */
	check_mode(FD_LONE_W, O_WRONLY, false, false);
	CHECK(fstat(FD_LONE_W, &st) == 0 && S_ISFIFO(st.st_mode));

	check_mode(FD_MEMFD, O_RDWR, false, false);
	check_contents(FD_MEMFD, MEMFD_LEN, 1, 1234, false);
	check_mode(FD_DEAD, O_RDWR, false, false);
	check_contents(FD_DEAD, DEAD_LEN, 2, 100, true);
	CHECK(fstat(FD_DIR, &st) == 0 && stat(tmpdir, &dir) == 0 && st.st_ino == dir.st_ino);
	CHECK(fstat(FD_NULL, &st) == 0 && S_ISCHR(st.st_mode));
	check_mode(FD_NULL, O_WRONLY, false, false);
	/* a unix socket whose peer was gone gives what was queued, then end of file */
	memset(buf, 0, sizeof(buf));
	CHECK(read(FD_SOCK, buf, sizeof(buf)) == 4 && !memcmp(buf, "sock", 4));
	CHECK(read(FD_SOCK, buf, sizeof(buf)) == 0);
	/* the netlink socket cannot come back: a stand-in, as after its peer closed (R-TYP-13) */
	CHECK(read(FD_SOCK2, buf, 1) == 0);
	CHECK(send(FD_SOCK2, "x", 1, MSG_NOSIGNAL) < 0 && errno == EPIPE);
	CHECK(read(FD_EVENT, &count, sizeof(count)) == sizeof(count) && count == 5);
}

static void restore_child(int which)
{
	struct sc_fd *fds;
	size_t n;
	int ret;

	read_image(&fds, &n);
	/* descriptors 0-2 are never touched, even when a record names a missing file */
	CHECK((fds = realloc(fds, (n + 1) * sizeof(*fds))));
	fds[n++] = (struct sc_fd){ .fd = 1, .kind = SC_FD_REGULAR, .open_flags = O_RDONLY,
				   .path = strdup("/nonexistent/stdout") };
	for (int round = 0; round < 2; round++) {
		close_above_2();
		redirect_stderr(warn_path);
		sc_log_set_level(SC_LOG_WARN);
		ret = sc_fds_restore(fds, n);
		sc_log_set_level(SC_LOG_NONE);
		restore_stderr();
		if (which == RESTORE_MISSING) {
			CHECK(ret == -ENOENT);
			CHECK(strstr(selfckpt_last_error(), log_path));
			CHECK(strstr(selfckpt_last_error(), "(descriptor 4)"));
			break;
		}
		CHECK(ret == 0);
		check_restored();
		CHECK(file_has(warn_path, "descriptor 13 (socket:[", true));
		CHECK(file_has(warn_path, "did not come back: it reads as end of file", true));
		CHECK(!file_has(warn_path, "descriptor 14", false));
		if (which == RESTORE_CHANGED) {
			char msg[256];

			snprintf(msg, sizeof(msg), "'%s' (descriptor 3) changed since the "
				 "checkpoint: size 100 -> 180", data_path);
			CHECK(file_has(warn_path, msg, true));
		} else {
			CHECK(!file_has(warn_path, "changed since", false));
		}
	}
	sc_fds_free(fds, n);
}

Test(fds, capture_records_every_kind_and_round_trips)
{
	make_image();
}

Test(fds, restore_same_numbers_offsets_flags_and_contents)
{
	make_image();
	run_child(restore_child, RESTORE_OK);
}

Test(fds, restore_warns_about_a_changed_file)
{
	uint8_t more[80] = { 0 };
	int fd;

	make_image();
	fd = open(data_path, O_WRONLY | O_APPEND);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, more, sizeof(more)), (ssize_t)sizeof(more));
	close(fd);
	run_child(restore_child, RESTORE_CHANGED);
}

Test(fds, restore_fails_on_a_missing_file)
{
	make_image();
	cr_assert_eq(unlink(log_path), 0);
	run_child(restore_child, RESTORE_MISSING);
}

static void busy_child(int unused)
{
	struct sc_fd f = { .fd = 3, .kind = SC_FD_REGULAR, .open_flags = O_RDONLY };

	(void)unused;
	f.path = data_path;
	close_above_2();
	CHECK(dup2(2, 3) == 3);
	CHECK(sc_fds_restore(&f, 1) == -EBUSY);
	CHECK(strstr(selfckpt_last_error(), "descriptor 3"));
}

Test(fds, restore_never_replaces_a_number_in_use)
{
	run_child(busy_child, 0);
}

Test(fds, move_above)
{
	int fd = open("/dev/null", O_RDONLY), moved;

	cr_assert_geq(fd, 0);
	moved = sc_fd_move_above(fd, 500);
	cr_assert_geq(moved, 500);
	cr_assert_eq(fcntl(moved, F_GETFD), FD_CLOEXEC);
	cr_assert(fcntl(fd, F_GETFD) < 0 && errno == EBADF);
	cr_assert_eq(sc_fd_move_above(moved, INT_MAX), -EINVAL);
	close(moved);
}

/* ---- the record's checks (spec §9.2, §9.6) ---- */

static void put_meta(uint8_t *m, uint32_t fd, uint32_t kind, uint32_t path_len)
{
	sc_put_le32(m + 0, fd);
	sc_put_le32(m + 4, kind);
	sc_put_le32(m + 60, path_len);
}

/* R-TYP-3, R-TYP-4, R-TYP-5, R-VER-9 */
Test(fds, read_record_checks_the_meta)
{
	static const struct {
		uint32_t meta_len, fd, kind, path_len;
		int err;
	} cases[] = {
		{ 71, 3, 0, 0, -SELFCKPT_ELENGTH },       /* shorter than the fixed part */
		{ 77, 3, 0, 6, -SELFCKPT_ELENGTH },       /* path longer than what follows */
		{ 80, 3, SC_FD_KIND_LAST + 1, 8, -SELFCKPT_EUNKNOWN }, /* a kind after the last */
		{ 80, 3, 9, 8, -SELFCKPT_ELENGTH },       /* an eventfd's items cut short (R-TYP-14) */
		{ 80, 0x80000000u, 0, 8, -SELFCKPT_ELENGTH }, /* number out of range */
		{ 90, 7, 4, 8, 0 },                       /* a larger fixed part (newer minor) */
	};
	struct sc_read_opts ro = { .threads = 1 };
	struct sc_writer *w;
	struct sc_reader *r;
	struct sc_record rec;
	struct sc_fd f;
	int fd = open(img_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_eq(sc_writer_new(&w, fd, img_path, NULL), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t m[128] = { 0 };

		put_meta(m, cases[i].fd, cases[i].kind, cases[i].path_len);
		if (cases[i].meta_len >= 80)
			memcpy(m + cases[i].meta_len - 8, "/a/b.txt", 8);
		cr_assert_eq(sc_writer_record(w, SC_REC_FD, SC_RF_REQUIRED, m, cases[i].meta_len,
					      "xyz", 3), 0);
	}
	cr_assert_eq(sc_writer_record(w, SC_REC_PROCESS, SC_RF_REQUIRED, "", 0, NULL, 0), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	close(fd);

	cr_assert_eq(sc_reader_open(&r, img_path, &ro), 0, "%s", selfckpt_last_error());
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char where[192];

		cr_assert_eq(sc_reader_next(r, &rec), 1);
		cr_assert_eq(sc_fd_read_record(r, &rec, &f), cases[i].err, "case %zu: %s", i,
			     selfckpt_last_error());
		if (cases[i].err) {
			snprintf(where, sizeof(where), "fd record %zu of '%s'", i, img_path);
			cr_assert(strstr(selfckpt_last_error(), where), "%s", selfckpt_last_error());
			cr_assert_null(f.path);
			continue;
		}
		cr_assert_eq(f.fd, 7);
		cr_assert_eq(f.kind, SC_FD_MEMFD);
		cr_assert_str_eq(f.path, "/a/b.txt");
		cr_assert(f.data_len == 3 && !memcmp(f.data, "xyz", 3));
		free(f.path);
		free(f.data);
	}
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	cr_assert_eq(sc_fd_read_record(r, &rec, &f), -SELFCKPT_EUSAGE);
	sc_reader_free(r);
}

/* The record of @fd among @n records, or NULL. */
static const struct sc_fd *record_of(const struct sc_fd *fds, size_t n, int fd)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i].fd == fd)
			return &fds[i];
	return NULL;
}

/*
 * The instant is the freeze: a name the program removes after it (while the
 * image is still being collected) is recorded as the name the file had, and
 * a name removed before it while another link remains still refuses.
 */
Test(fds, a_name_removed_after_the_instant_is_the_name_it_had)
{
	char other[160];
	struct sc_fds_frozen z;
	struct sc_fd *fds;
	const struct sc_fd *f;
	size_t n;
	int fd = open(data_path, O_CREAT | O_RDWR, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_eq(sc_fds_prepare(&z, 0), 0, "%s", selfckpt_last_error());
	sc_fds_freeze(&z);
	cr_assert_eq(unlink(data_path), 0);
	cr_assert_eq(sc_fds_collect(&z, getpid(), NULL, 0, &fds, &n), 0, "%s",
		     selfckpt_last_error());
	sc_fds_freeze_drop(&z);
	sc_fds_frozen_free(&z);
	f = record_of(fds, n, fd);
	cr_assert_not_null(f);
	cr_assert_eq(f->kind, SC_FD_REGULAR);
	cr_assert_str_eq(f->path, data_path);
	sc_fds_free(fds, n);
	close(fd);

	fd = open(data_path, O_CREAT | O_RDWR, 0600);
	snprintf(other, sizeof(other), "%s/other-name", tmpdir);
	cr_assert_eq(link(data_path, other), 0);
	cr_assert_eq(unlink(data_path), 0);
	cr_assert_eq(sc_fds_capture(&fds, &n, NULL, 0), -SELFCKPT_EHOST);
	cr_assert(strstr(selfckpt_last_error(), "still has other names"), "%s",
		  selfckpt_last_error());
	close(fd);
}

/* The flags of @f's SC_SOCK_TYPE item and the peer of its SC_SOCK_PEER item. */
static void socket_facts(const struct sc_fd *f, uint32_t *flags, uint64_t *peer)
{
	struct sc_state_item it;
	size_t pos = 0;

	*flags = UINT32_MAX;
	*peer = UINT64_MAX;
	while (sc_state_next(f, &pos, &it) > 0) {
		if (it.tag == SC_SOCK_TYPE && it.len == 16)
			memcpy(flags, it.value + 12, 4);
		if (it.tag == SC_SOCK_PEER && it.len == 16)
			memcpy(peer, it.value + 8, 8);
	}
}

/*
 * Whom a unix socket is connected to is the kernel's answer at the instant:
 * a client whose queued connection the server accepts after it, and which
 * then shuts its end down, is recorded as it was (peer not accepted yet, not
 * shut down), however late the image is written. Read later, a process of a
 * job that writes its image after the others recorded a request as taken
 * that its restored server never got.
 */
Test(fds, a_unix_connection_accepted_after_the_instant_is_recorded_as_it_was)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t a_len = offsetof(struct sockaddr_un, sun_path) + 1 +
			  (socklen_t)snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1,
					      "selfckpt-accepted-%d", (int)getpid());
	int lis = socket(AF_UNIX, SOCK_STREAM, 0), client = socket(AF_UNIX, SOCK_STREAM, 0), srv;
	struct sc_fds_frozen z;
	struct sc_fd *fds;
	struct stat st;
	uint32_t flags;
	uint64_t peer;
	size_t n;

	cr_assert_eq(bind(lis, (struct sockaddr *)&a, a_len), 0, "%s", strerror(errno));
	cr_assert_eq(listen(lis, 4), 0);
	cr_assert_eq(connect(client, (struct sockaddr *)&a, a_len), 0, "%s", strerror(errno));
	cr_assert_eq(sc_fds_prepare(&z, 0), 0, "%s", selfckpt_last_error());
	sc_fds_freeze(&z);
	srv = accept(lis, NULL, NULL);
	cr_assert_geq(srv, 0);
	cr_assert_eq(shutdown(client, SHUT_WR), 0);
	cr_assert_eq(fstat(srv, &st), 0);
	cr_assert_eq(sc_fds_collect(&z, getpid(), NULL, 0, &fds, &n), 0, "%s",
		     selfckpt_last_error());
	sc_fds_freeze_drop(&z);
	sc_fds_frozen_free(&z);
	cr_assert_not_null(record_of(fds, n, client));
	socket_facts(record_of(fds, n, client), &flags, &peer);
	cr_assert_neq(flags, UINT32_MAX, "no SC_SOCK_TYPE item");
	cr_assert(flags & SC_SOCK_CONNECTED, "flags %#x", flags);
	cr_assert_not(flags & (SC_SOCK_SHUT_RD | SC_SOCK_SHUT_WR), "shut down after the instant, "
		      "recorded as shut down before it: flags %#x", flags);
	cr_assert_neq(peer, (uint64_t)st.st_ino, "recorded as accepted: its peer is the socket "
		      "accept() gave after the instant");
	sc_fds_free(fds, n);
	close(srv);
	close(client);
	close(lis);
}

/*
 * Descriptors are found by trying each number below the table's size, or,
 * in a table much larger than what it holds, by listing /proc/self/fd: a
 * descriptor at a high number is found either way, and the count is right.
 */
Test(fds, descriptors_at_high_numbers_are_found)
{
	int high[] = { 700, 5000, 100000 }; /* tried (table of 1024), listed, listed */
	struct rlimit rl;
	struct sc_fd *fds;
	size_t n, before;

	size_t k = 0;

	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	cr_assert_gt(rl.rlim_max, 700);
	while (k < 3 && (rlim_t)high[k] < rl.rlim_max)
		k++;
	if (k < 3 && high[k - 1] < (int)rl.rlim_max - 1)
		high[k++] = (int)rl.rlim_max - 1; /* as high as the hard limit allows */
	rl.rlim_cur = rl.rlim_max;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	cr_assert_eq(sc_fds_capture(&fds, &before, NULL, 0), 0, "%s", selfckpt_last_error());
	sc_fds_free(fds, before);
	for (size_t i = 0; i < k; i++) {
		cr_assert_eq(dup2(2, high[i]), high[i]);
		cr_assert_eq(sc_fds_capture(&fds, &n, NULL, 0), 0, "%s", selfckpt_last_error());
		cr_assert_eq(n, before + i + 1, "descriptor %d: %zu recorded", high[i], n);
		cr_assert_not_null(record_of(fds, n, high[i]), "descriptor %d", high[i]);
		sc_fds_free(fds, n);
	}
}

/*
 * Objects without a file all share one anon inode: which descriptors share
 * an open file description is told by their kind and an eventfd's id before
 * kcmp() is asked, and still right: a dup shares, two eventfds do not, nor
 * an eventfd and a timerfd.
 */
Test(fds, objects_of_one_anon_inode_share_only_with_their_dups)
{
	int a = eventfd(1, 0), b = eventfd(1, 0), t = timerfd_create(CLOCK_MONOTONIC, 0);
	int a2 = dup(a), t2 = dup(t);
	struct sc_fd *fds;
	const struct sc_fd *ra, *ra2, *rb, *rt, *rt2;
	size_t n;

	cr_assert(a >= 0 && b >= 0 && t >= 0 && a2 >= 0 && t2 >= 0);
	cr_assert_eq(sc_fds_capture(&fds, &n, NULL, 0), 0, "%s", selfckpt_last_error());
	ra = record_of(fds, n, a);
	ra2 = record_of(fds, n, a2);
	rb = record_of(fds, n, b);
	rt = record_of(fds, n, t);
	rt2 = record_of(fds, n, t2);
	cr_assert(ra && ra2 && rb && rt && rt2);
	cr_assert_neq(ra->share_id, 0);
	cr_assert_eq(ra->share_id, ra2->share_id, "a dup of an eventfd shares its description");
	cr_assert_eq(rb->share_id, 0, "another eventfd is a description of its own");
	cr_assert_neq(rt->share_id, 0);
	cr_assert_eq(rt->share_id, rt2->share_id, "a dup of a timerfd shares its description");
	cr_assert_neq(rt->share_id, ra->share_id);
	sc_fds_free(fds, n);
}
