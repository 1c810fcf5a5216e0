/* SPDX-License-Identifier: MIT */
/*
 * test_ckside.c - a checkpoint leaves nothing behind and never costs the
 * previous image: a full disk and a read-only folder (the save fails with a
 * message naming the image and the cause, the previous image keeps its bytes,
 * no temporary file stays, the program goes on and saves elsewhere, and that
 * image restores); a checkpoint killed midway (its temporary file is removed
 * by the next checkpoint to the folder and by selfckpt-run at start, while a
 * live writer's stays); no checkpoint once the program is exiting.
 *
 * The disk is a small tmpfs, and a read-only folder of root a read-only
 * mount, both in a mount namespace of the test's own: those tests need root
 * (CI runs as root) and are skipped, saying so, without it.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/sc_exiting.h"
#include "format/sc_log.h"
#include "selfckpt.h"
#include "tests/core/roundtrip_harness.h"

#define TAG ".selfckpt-tmp."
#define FILL_MIB "16"   /* more than the small disk holds; incompressible */
#define SLOW_MIB "96"   /* an image that takes a while to write */
#define WAIT_MS 30000

static const char *const fail_ok =
	"the save fails: ok\n"
	"its message names the image: ok\n"
	"a later save to a good folder works: ok\n";
static const char *const restored_ok =
	"restored from the later image: ok\n"
	"the restored process saves again: ok\n";

/* ---- set-up ---- */

/* A mount namespace of this test's own (it goes with the test), or the test is skipped. */
static void own_mounts(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to mount a small tmpfs (CI runs as root)");
	if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		cr_skip_test("cannot make a mount namespace of the test's own: %s",
			     strerror(errno));
}

static void mount_tmpfs(const char *dir, const char *size)
{
	char opts[64];

	snprintf(opts, sizeof(opts), "size=%s,mode=0700", size);
	cr_assert_eq(mkdir(dir, 0700), 0, "%s: %s", dir, strerror(errno));
	if (mount("tmpfs", dir, "tmpfs", 0, opts) < 0)
		cr_skip_test("cannot mount a tmpfs on '%s': %s", dir, strerror(errno));
}

/* Before the suite's teardown removes the work directory: what own_mounts() mounted. */
static void unmount_work(void)
{
	umount2(in_base("full"), MNT_DETACH);
	umount2(in_base("ro"), MNT_DETACH);
}

/* The names in @dir, sorted, one a line. */
static char *listing(const char *dir)
{
	static char out[4096];
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);

	cr_assert_geq(n, 0, "%s: %s", dir, strerror(errno));
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, ".."))
			snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s\n",
				 names[i]->d_name);
		free(names[i]);
	}
	free(names);
	return out;
}

static void run_badsave(const char *image, const char *const extra[], struct run *r)
{
	const char *argv[MAX_ARGS];

	prog_argv(argv, "badsave", image, in_base("ck"), extra);
	run(argv, r);
}

/* ---- a save that cannot be written ---- */

/*
 * badsave saved @dir/img.sckpt; @dir then went bad. Its next save there must
 * fail with @cause, leave the image and the folder as they were, and the
 * program must save to ck/good.sckpt, which restores (twice) and saves again.
 */
static void expect_failed_save(const char *bad, const char *cause, void (*spoil)(const char *))
{
	char dir[4096], image[4096], good[4096], *before, *after;
	const char *rargv[] = { restorer(), good, NULL };
	size_t len, len_after;
	struct run r;

	snprintf(dir, sizeof(dir), "%s", bad); /* in_base()'s buffers rotate */
	snprintf(good, sizeof(good), "%s", in_base("ck/good.sckpt"));
	snprintf(image, sizeof(image), "%s/img.sckpt", dir);
	run_badsave(image, (const char *const[]){ "first", NULL }, &r);
	expect_exit(&r, 0, "the first save");
	cr_assert_str_eq(r.out, "the first save: ok\n", "%s\nstderr:\n%s", r.out, r.err);
	run_free(&r);
	before = read_file(image, &len);
	spoil(dir);

	run_badsave(image, (const char *const[]){ "fail", FILL_MIB, good, NULL }, &r);
	expect_exit(&r, 0, "the failing save");
	cr_expect_str_eq(r.out, fail_ok, "%s\nstderr:\n%s", r.out, r.err);
	cr_expect(strstr(r.err, cause), "the message does not give the cause '%s':\n%s", cause,
		  r.err);
	run_free(&r);
	after = read_file(image, &len_after);
	cr_expect(len == len_after && !memcmp(before, after, len),
		  "the previous image changed (%zu bytes, now %zu)", len, len_after);
	cr_expect_str_eq(listing(dir), "img.sckpt\n", "something was left behind:\n%s",
			 listing(dir));
	free(before);
	free(after);

	for (int i = 1; i <= 2; i++) {
		run(rargv, &r);
		expect_exit(&r, 0, "the restore of the later image");
		cr_expect_str_eq(r.out, restored_ok, "restore %d:\n%s\nstderr:\n%s", i, r.out,
				 r.err);
		run_free(&r);
	}
}

static void fill_nothing(const char *dir)
{
	(void)dir; /* the save itself fills the disk */
}

Test(roundtrip, disk_full_keeps_the_previous_image_and_the_program_goes_on, .timeout = 120,
     .fini = unmount_work)
{
	own_mounts();
	mount_tmpfs(in_base("full"), "4m");
	expect_failed_save(in_base("full"), strerror(ENOSPC), fill_nothing);
}

static void remount_read_only(const char *dir)
{
	cr_assert_eq(mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL), 0,
		     "remount '%s' read-only: %s", dir, strerror(errno));
}

static void chmod_read_only(const char *dir)
{
	cr_assert_eq(chmod(dir, 0555), 0, "%s: %s", dir, strerror(errno));
}

/* root writes in any folder its mode forbids: for root, a read-only mount. */
Test(roundtrip, read_only_folder_keeps_the_previous_image_and_the_program_goes_on,
     .timeout = 120, .fini = unmount_work)
{
	if (geteuid() != 0) {
		cr_assert_eq(mkdir(in_base("ro"), 0700), 0);
		expect_failed_save(in_base("ro"), strerror(EACCES), chmod_read_only);
		chmod(in_base("ro"), 0700);
		return;
	}
	own_mounts();
	mount_tmpfs(in_base("ro"), "64m");
	expect_failed_save(in_base("ro"), strerror(EROFS), remount_read_only);
}

/* ---- a checkpoint killed midway ---- */

static pid_t start_slow(const char *image)
{
	const char *argv[MAX_ARGS];
	pid_t pid;

	prog_argv(argv, "badsave", image, in_base("ck"), (const char *const[]){ "slow",
										SLOW_MIB, NULL });
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* The name of a temporary file in @dir written by @pid, or NULL. */
static const char *temp_of(const char *dir, pid_t pid)
{
	static char name[256];
	char tag[64];
	DIR *d = opendir(dir);
	struct dirent *e;
	const char *found = NULL;

	cr_assert_not_null(d);
	snprintf(tag, sizeof(tag), TAG "%d.", (int)pid);
	while (!found && (e = readdir(d)))
		if (strstr(e->d_name, tag)) {
			snprintf(name, sizeof(name), "%s", e->d_name);
			found = name;
		}
	closedir(d);
	return found;
}

/* Wait until the writer @pid has a temporary file in ck/, then stop it with @sig. */
static const char *catch_midway(pid_t pid, int sig)
{
	struct timespec ms = { 0, 1000000 };
	const char *name = NULL;

	for (int i = 0; i < WAIT_MS && !(name = temp_of(in_base("ck"), pid)); i++)
		nanosleep(&ms, NULL);
	if (!name) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		cr_assert_fail("no temporary file of process %d within %d ms", (int)pid, WAIT_MS);
	}
	cr_assert_eq(kill(pid, sig), 0);
	/* until it is dead, or stopped: a signal takes effect after kill() returns */
	cr_assert_eq(waitpid(pid, NULL, sig == SIGSTOP ? WUNTRACED : 0), pid);
	return temp_of(in_base("ck"), pid); /* the file it had when it was stopped */
}

/* A writer killed midway, and the temporary file it left in ck/ (kept in @name). */
static pid_t kill_midway(char *name, size_t len)
{
	for (int tries = 0; tries < 5; tries++) {
		pid_t pid = start_slow(in_base("ck/slow.sckpt"));
		const char *left = catch_midway(pid, SIGKILL);

		if (left) {
			snprintf(name, len, "%s", left);
			return pid;
		}
	}
	cr_assert_fail("five writers finished their image before they were killed");
	return -1;
}

static bool in_ck(const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", in_base("ck"), name);
	return access(path, F_OK) == 0;
}

Test(roundtrip, next_checkpoint_removes_what_a_killed_one_left, .timeout = 120)
{
	char stale[256];
	struct run r;

	kill_midway(stale, sizeof(stale));
	cr_assert(in_ck(stale), "'%s' is gone already", stale);
	run_badsave(in_base("ck/other.sckpt"), (const char *const[]){ "first", NULL }, &r);
	expect_exit(&r, 0, "the next checkpoint");
	run_free(&r);
	cr_expect_not(in_ck(stale), "'%s' stayed:\n%s", stale, listing(in_base("ck")));
	cr_expect_null(strstr(listing(in_base("ck")), TAG), "%s", listing(in_base("ck")));
}

/* Does a process hold a write lock on ck/@name? */
static bool write_locked(const char *name)
{
	struct flock l = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", in_base("ck"), name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	cr_assert_eq(fcntl(fd, F_OFD_GETLK, &l), 0, "%s: %s", path, strerror(errno));
	close(fd);
	return l.l_type == F_WRLCK;
}

static const char *run_tool(void)
{
	return tool("selfckpt-run");
}

Test(roundtrip, selfckpt_run_removes_what_a_killed_checkpoint_left_not_a_live_one,
     .timeout = 120)
{
	const char *argv[] = { run_tool(), "--dir", in_base("ck"), "--", "/bin/true", NULL };
	char stale[256], live[256];
	struct run r;
	pid_t writer;

	kill_midway(stale, sizeof(stale));
	writer = start_slow(in_base("ck/live.sckpt"));
	snprintf(live, sizeof(live), "%s", catch_midway(writer, SIGSTOP) ?: "");
	/*
	 * stopped as it renamed its image, or between making a file and locking
	 * it (a file nobody locks yet is fair game for the cleaner): again, until
	 * it is stopped holding its lock
	 */
	for (int i = 0; i < 200 && !(*live && write_locked(live)); i++) {
		kill(writer, SIGCONT);
		snprintf(live, sizeof(live), "%s", catch_midway(writer, SIGSTOP) ?: "");
	}
	cr_assert(*live && write_locked(live),
		  "the live writer was never stopped holding a locked temporary file");
	run(argv, &r);
	expect_exit(&r, 0, "selfckpt-run /bin/true");
	run_free(&r);
	cr_expect_not(in_ck(stale), "'%s' stayed:\n%s", stale, listing(in_base("ck")));
	cr_expect(in_ck(live), "the live writer's '%s' was removed", live);
	kill(writer, SIGKILL);
	waitpid(writer, NULL, 0);
}

/* ---- exiting ---- */

static int report_fd = -1;

/* The wait at exit: reports whether the process was already marked as exiting. */
static void report_wait(void)
{
	char c = sc_exiting() ? 'y' : 'n';

	if (write(report_fd, &c, 1) != 1)
		_exit(3);
}

/* Everything the other end of @fd writes until it closes it, NUL-terminated. */
static void read_all(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;

	while (len < cap - 1 && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(fd);
}

/* What a child that watches, then does @then and exits, reported ("" for nothing). */
static const char *exit_report(void (*then)(void))
{
	static char got[8];
	int p[2], status;
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[0]);
		report_fd = p[1];
		sc_log_set_level(SC_LOG_NONE);
		if (sc_exiting() || sc_exiting_refuse("x.sckpt"))
			_exit(4);
		sc_exiting_watch(report_wait);
		then();
		exit(0);
	}
	close(p[1]);
	read_all(p[0], got, sizeof(got));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x", status);
	return got;
}

static void nothing(void)
{
}

/* A checkpoint begun during exit() is refused, with a message naming the image. */
static void refuse_at_exit(void)
{
	char c;

	report_wait();
	c = sc_exiting_refuse("x.sckpt") == -ECANCELED &&
	    strstr(selfckpt_last_error(), "'x.sckpt'") ? 'r' : '-';
	if (write(report_fd, &c, 1) != 1)
		_exit(3);
}

static void watch_refusal(void)
{
	sc_exiting_watch(refuse_at_exit); /* changes nothing: the first one stays */
}

/*
 * A fork child is a process of the job with checkpoints of its own: it waits
 * at exit too, for its own (sc_checkpoint_wait_idle() finds none of its
 * parent's under way in it: checkpoint.c resets that state in a fork child).
 */
static void fork_and_exit(void)
{
	pid_t pid = fork();

	if (pid == 0)
		exit(0);
	if (pid < 0 || waitpid(pid, NULL, 0) != pid)
		_exit(5);
}

Test(exiting, exit_marks_the_process_then_waits_for_the_checkpoint_under_way)
{
	cr_expect_str_eq(exit_report(nothing), "y", "the wait ran once, after the mark");
	cr_expect_str_eq(exit_report(watch_refusal), "y", "a second watch changes nothing");
	cr_expect_str_eq(exit_report(fork_and_exit), "yy", "the child waits, then the parent");
}

Test(exiting, a_checkpoint_begun_during_exit_is_refused)
{
	int p[2], status;
	char got[4] = "";
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[0]);
		report_fd = p[1];
		sc_log_set_level(SC_LOG_NONE);
		sc_exiting_watch(refuse_at_exit);
		exit(0);
	}
	close(p[1]);
	read_all(p[0], got, sizeof(got));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x", status);
	cr_expect_str_eq(got, "yr", "the wait ran after the mark, and the checkpoint was refused");
}

/* ---- selfckpt-gpu-proxy --help ---- */

Test(gpu_proxy, help_says_what_query_does, .timeout = 30)
{
	const char *b = getenv("SELFCKPT_BUILD");
	char proxy[4096];
	const char *argv[] = { proxy, "--help", NULL };
	struct run r;

	snprintf(proxy, sizeof(proxy), "%s/bin/selfckpt-gpu-proxy", b && *b ? b : "build");
	if (access(proxy, X_OK))
		cr_skip_test("no '%s' in this build", proxy);
	run(argv, &r);
	expect_exit(&r, 0, "selfckpt-gpu-proxy --help");
	cr_expect(strstr(r.out, "Usage: selfckpt-gpu-proxy --query"), "%s", r.out);
	cr_expect(strstr(r.out, "\"device ORDINAL MAJOR.MINOR NAME\""), "%s", r.out);
	cr_expect(strstr(r.out, "exit 69"), "%s", r.out);
	cr_expect(strstr(r.out, "selfckpt-restore runs it"), "%s", r.out);
	cr_expect_str_eq(r.err, "", "%s", r.err);
	run_free(&r);
}

/* ---- selfckpt-inspect: what an image is ---- */

/* badsave describe: an image of a process with known threads and descriptors; its pid. */
static int describe_image(const char *image)
{
	struct run r;
	int pid = 0;

	run_badsave(image, (const char *const[]){ "describe", "two words", "plain", NULL }, &r);
	expect_exit(&r, 0, "badsave describe");
	cr_assert(sscanf(r.out, "pid %d", &pid) == 1 && strstr(r.out, "the save: ok"),
		  "%s\nstderr:\n%s", r.out, r.err);
	run_free(&r);
	return pid;
}

static void expect_line(const char *out, const char *line)
{
	char want[8192];

	snprintf(want, sizeof(want), "\n%s\n", line);
	cr_expect(strstr(out, want), "no line\n%s\nin:\n%s", line, out);
}

Test(roundtrip, inspect_shows_the_program_its_threads_and_descriptors, .timeout = 60)
{
	char image[4096], dir[4096], exe[4096], line[8192];
	const char *argv[] = { tool("selfckpt-inspect"), image, NULL };
	const char *prog = prog_path("badsave");
	struct run r;
	int pid;

	snprintf(image, sizeof(image), "%s", in_base("ck/img.sckpt"));
	snprintf(dir, sizeof(dir), "%s", in_base("ck"));
	cr_assert_not_null(realpath(prog, exe));
	pid = describe_image(image);
	run(argv, &r);
	expect_exit(&r, 0, "selfckpt-inspect");
	snprintf(line, sizeof(line), "program       %s", exe);
	expect_line(r.out, line);
	snprintf(line, sizeof(line), "command line  %s %s %s describe 'two words' plain", prog,
		 image, dir);
	expect_line(r.out, line);
	snprintf(line, sizeof(line), "pid           %d (parent %d), uid %u, gid %u, umask 0022",
		 pid, (int)getpid(), (unsigned)getuid(), (unsigned)getgid());
	cr_expect(strstr(r.out, line), "no '%s' in:\n%s", line, r.out);
	snprintf(line, sizeof(line), "directory     %s", dir);
	expect_line(r.out, line);
	expect_line(r.out, "threads       2");
	snprintf(line, sizeof(line), "\n  %-10d 0x", pid);
	cr_expect(strstr(r.out, line) && strstr(strstr(r.out, line), "(made the checkpoint)\n"),
		  "the main thread made the checkpoint:\n%s", r.out);
	cr_expect(strstr(r.out, "  0x0000000000000200  none\n"), "a thread blocks SIGUSR1:\n%s",
		  r.out);
	snprintf(line, sizeof(line), "  20    file               1234  O_RDWR|O_APPEND|O_CLOEXEC"
		 "    %s/data.txt  (shares its file description with 21)", dir);
	expect_line(r.out, line);
	snprintf(line, sizeof(line), "  21    file               1234  O_RDWR|O_APPEND"
		 "              %s/data.txt  (shares its file description with 20)", dir);
	expect_line(r.out, line);
	cr_expect(strstr(r.out, "\n  22    pipe-read             -  O_RDONLY                     "
			 "pipe:["), "%s", r.out);
	cr_expect(strstr(r.out, "]  (5 B of contents saved)\n  23    pipe-write            -  "
			 "O_WRONLY                     pipe:["), "%s", r.out);
	expect_line(r.out, "  24    device                0  O_RDONLY                     "
			   "/dev/null");
	cr_expect(strstr(r.out, "\n  0     device                0  O_RDONLY                     "
			 "/dev/null  (the restorer's own)\n"), "%s", r.out);
	run_free(&r);
}

/* The same description from a stream, and in JSON. */
Test(roundtrip, inspect_describes_a_stream_and_in_json, .timeout = 60)
{
	char image[4096], cmd[8192], *text, *from, *to;
	const char *argv[] = { tool("selfckpt-inspect"), image, NULL };
	const char *sh[] = { "/bin/sh", "-c", cmd, NULL };
	struct run r;
	int pid;

	snprintf(image, sizeof(image), "%s", in_base("ck/img.sckpt"));
	pid = describe_image(image);
	run(argv, &r);
	expect_exit(&r, 0, "selfckpt-inspect");
	text = strdup(strstr(r.out, "\nprogram "));
	cr_assert(text && strstr(text, "\ntype "));
	*strstr(text, "\ntype ") = '\0';
	run_free(&r);

	snprintf(cmd, sizeof(cmd), "cat '%s' | '%s' -", image, tool("selfckpt-inspect"));
	run(sh, &r);
	expect_exit(&r, 0, "selfckpt-inspect - (a pipe)");
	from = strstr(r.out, "\nprogram ");
	to = from ? strstr(from, "\ntype ") : NULL;
	cr_assert(from && to, "%s", r.out);
	*to = '\0';
	cr_expect_str_eq(from, text, "a stream is described as the file is");
	run_free(&r);
	free(text);

	snprintf(cmd, sizeof(cmd), "'%s' --json '%s' | python3 -c '"
		 "import json, sys\n"
		 "d = json.load(sys.stdin)\n"
		 "p = d[\"process\"]\n"
		 "assert p[\"pid\"] == %d, p\n"
		 "assert p[\"argv\"][3:] == [\"describe\", \"two words\", \"plain\"], p\n"
		 "assert p[\"argv_complete\"] and p[\"cwd\"] == \"%s\", p\n"
		 "t = [x for x in d[\"threads\"] if x[\"made_checkpoint\"]]\n"
		 "assert len(d[\"threads\"]) == 2 and [x[\"tid\"] for x in t] == [%d], t\n"
		 "f = {x[\"fd\"]: x for x in d[\"descriptors\"]}\n"
		 "assert f[20][\"offset\"] == 1234 and f[20][\"kind\"] == \"file\", f[20]\n"
		 "assert f[20][\"share_id\"] == f[21][\"share_id\"] != 0, f\n"
		 "assert f[20][\"cloexec\"] and not f[21][\"cloexec\"], f\n"
		 "assert f[22][\"saved_bytes\"] == 5 and f[22][\"kind\"] == \"pipe-read\", f[22]\n"
		 "assert f[0][\"at_restore\"] == \"restorer\", f[0]\n"
		 "assert f[24][\"at_restore\"] == \"restored\", f[24]\n"
		 "'", tool("selfckpt-inspect"), image, pid, in_base("ck"), pid);
	run(sh, &r);
	expect_exit(&r, 0, "selfckpt-inspect --json, read by python3");
	run_free(&r);
}

/* ---- no checkpoint once the program is exiting ---- */

/*
 * dd holds a buffer of random bytes, so each image takes a while to write; the
 * interval starts one after the other, and dd exits while one is under way.
 * Its exit waits for that one, and no other begins: nothing is left behind.
 */
Test(roundtrip, exit_during_an_interval_checkpoint_leaves_nothing_behind, .timeout = 120)
{
	const char *argv[] = { tool("selfckpt-run"), "--interval", "0.001", "--dir",
			       in_base("ck"), "--", "dd", "if=/dev/urandom", "of=/dev/null",
			       "bs=24M", "count=1", NULL };
	struct run r;

	for (int i = 0; i < 6; i++) {
		run(argv, &r);
		expect_exit(&r, 0, "dd under selfckpt-run --interval");
		run_free(&r);
		cr_assert_null(strstr(listing(in_base("ck")), TAG), "run %d left:\n%s", i + 1,
			       listing(in_base("ck")));
	}
}
