/* SPDX-License-Identifier: MIT */
/*
 * test_atomic.c - temporary image files (format/atomic_replace.c): those of writers
 * that are gone are removed by the next image made in their directory and
 * by sc_atomic_clean_dir(); those of live writers, and files that are not
 * ours, stay.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format/sc_format.h"
#include "format/sc_log.h"

#define TAG ".selfckpt-tmp."

static char dir[64];

static void setup(void)
{
	sc_log_set_level(SC_LOG_NONE);
	strcpy(dir, "/tmp/sc-atomic-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		cr_log_warn("cannot remove %s", dir);
}

TestSuite(atomic, .init = setup, .fini = teardown, .timeout = 30);

static const char *in_dir(const char *name)
{
	static char path[2][256];
	static int next;
	char *p = path[next++ % 2];

	snprintf(p, sizeof(path[0]), "%s/%s", dir, name);
	return p;
}

/* The names in dir, sorted, one a line. */
static const char *listing(void)
{
	static char out[4096];
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);

	cr_assert_geq(n, 0);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.')
			snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s\n",
				 names[i]->d_name);
		free(names[i]);
	}
	free(names);
	return out;
}

static void write_image(const char *name, const char *text)
{
	struct sc_atomic_file f;

	cr_assert_eq(sc_atomic_open(&f, in_dir(name)), 0);
	cr_assert_eq(write(f.fd, text, strlen(text)), (ssize_t)strlen(text));
	cr_assert_eq(sc_atomic_commit(&f), 0);
}

/* A writer that opens @name, writes and is killed before it commits. */
static void killed_writer(const char *name)
{
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct sc_atomic_file f;

		if (sc_atomic_open(&f, in_dir(name)) || write(f.fd, "partial", 7) != 7)
			_exit(1);
		raise(SIGKILL);
		_exit(2);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "status 0x%x", status);
}

Test(atomic, temporary_name_carries_the_writer_pid)
{
	struct sc_atomic_file f;
	char want[300];

	cr_assert_eq(sc_atomic_open(&f, in_dir("job.sckpt")), 0);
	snprintf(want, sizeof(want), "%s" TAG "%d.", in_dir("job.sckpt"), (int)getpid());
	cr_expect_eq(strncmp(f.tmp_path, want, strlen(want)), 0, "%s", f.tmp_path);
	cr_expect_eq(strlen(f.tmp_path), strlen(want) + 6, "%s", f.tmp_path);
	sc_atomic_abort(&f);
	cr_expect_str_eq(listing(), "");
}

Test(atomic, next_image_removes_the_temporary_file_of_a_killed_writer)
{
	killed_writer("a.sckpt");
	cr_assert(strstr(listing(), "a.sckpt" TAG), "%s", listing());
	write_image("b.sckpt", "image b");
	cr_expect_str_eq(listing(), "b.sckpt\n", "the killed writer's file stayed");
}

Test(atomic, clean_dir_removes_only_stale_files_and_counts_them)
{
	killed_writer("a.sckpt");
	killed_writer("b.sckpt");
	write_image("c.sckpt", "image c"); /* removes both */
	killed_writer("d.sckpt");
	cr_expect_eq(sc_atomic_clean_dir(dir), 1);
	cr_expect_str_eq(listing(), "c.sckpt\n");
	cr_expect_eq(sc_atomic_clean_dir(dir), 0);
	cr_expect_eq(sc_atomic_clean_dir(in_dir("missing")), -ENOENT);
}

Test(atomic, live_writer_keeps_its_temporary_file)
{
	int go[2], ready[2], status;
	char c;
	pid_t pid;

	cr_assert_eq(pipe(go), 0);
	cr_assert_eq(pipe(ready), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct sc_atomic_file f;

		if (sc_atomic_open(&f, in_dir("live.sckpt")) || write(ready[1], "r", 1) != 1 ||
		    read(go[0], &c, 1) != 1 || write(f.fd, "done", 4) != 4)
			_exit(1);
		_exit(sc_atomic_commit(&f) ? 2 : 0);
	}
	cr_assert_eq(read(ready[0], &c, 1), 1);
	cr_expect_eq(sc_atomic_clean_dir(dir), 0);
	write_image("other.sckpt", "other");
	cr_expect(strstr(listing(), "live.sckpt" TAG), "%s", listing());
	cr_assert_eq(write(go[1], "g", 1), 1);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x", status);
	cr_expect_str_eq(listing(), "live.sckpt\nother.sckpt\n");
}

/*
 * The lock decides, not the pid: a file nobody holds locked is stale even when
 * the pid in its name is alive (a restored process can have its old pid).
 */
Test(atomic, unlocked_file_is_stale_even_when_its_pid_is_alive)
{
	char name[128];
	int fd;

	snprintf(name, sizeof(name), "x.sckpt" TAG "%d.AbC123", (int)getpid());
	fd = open(in_dir(name), O_CREAT | O_WRONLY, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_expect_eq(sc_atomic_clean_dir(dir), 1);
	cr_expect_str_eq(listing(), "");
}

Test(atomic, files_that_are_not_ours_stay)
{
	static const char *const kept[] = {
		"a.sckpt.tmp.AbC123",           /* another program's temporary file */
		"b.sckpt" TAG "12.AbC12",       /* five random characters */
		"c.sckpt" TAG "12.AbC1234",     /* seven */
		"d.sckpt" TAG "x12.AbC123",     /* no pid */
		"e.sckpt" TAG "0.AbC123",       /* pid 0 */
		"f.sckpt" TAG "12.AbC-23",      /* not alphanumeric */
		TAG "12.AbC123",                /* no image name */
	};
	char want[1024] = "";
	int fd;

	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		fd = open(in_dir(kept[i]), O_CREAT | O_WRONLY, 0600);
		cr_assert_geq(fd, 0, "%s: %s", kept[i], strerror(errno));
		close(fd);
	}
	cr_assert_eq(mkdir(in_dir("g.sckpt" TAG "12.AbC123"), 0700), 0);
	cr_assert_eq(symlink("a.sckpt.tmp.AbC123", in_dir("h.sckpt" TAG "12.AbC123")), 0);
	snprintf(want, sizeof(want), "%s", listing());
	cr_expect_eq(sc_atomic_clean_dir(dir), 0);
	cr_expect_str_eq(listing(), want);
}

Test(atomic, another_users_file_stays)
{
	char name[128];
	int fd;

	if (geteuid() != 0)
		cr_skip_test("needs root to make a file of another user");
	snprintf(name, sizeof(name), "x.sckpt" TAG "%d.AbC123", 999999);
	fd = open(in_dir(name), O_CREAT | O_WRONLY, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fchown(fd, 65534, 65534), 0);
	close(fd);
	cr_expect_eq(sc_atomic_clean_dir(dir), 0);
	cr_expect(strstr(listing(), name), "%s", listing());
}
