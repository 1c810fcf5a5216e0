/* SPDX-License-Identifier: MIT */
/*
 * roundtrip_harness.c - running the programs of tests/progs/ and the
 * zdtm-style round trip; see roundtrip_harness.h.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "format/sc_log.h"
#include "tests/core/roundtrip_harness.h"

char base[64];
const char *run_cwd;
static char path_buf[4][4096];

static const char *build_dir(void)
{
	const char *b = getenv("SELFCKPT_BUILD");

	return b && *b ? b : "build";
}

const char *tool(const char *name)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/bin/%s", build_dir(), name);
	cr_assert_eq(access(path, X_OK), 0, "no %s at '%s': %s", name, path, strerror(errno));
	return path;
}

const char *restorer(void)
{
	return tool("selfckpt-restore");
}

const char *prog_path(const char *name)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/tests/progs/%s", build_dir(), name);
	cr_assert_eq(access(path, X_OK), 0, "no test program at '%s' (make test builds it): %s",
		     path, strerror(errno));
	return path;
}

/* A path under the work directory, in one of four rotating buffers. */
const char *in_base(const char *fmt, ...)
{
	static int next;
	char *p = path_buf[next++ % 4];
	size_t n = (size_t)snprintf(p, sizeof(path_buf[0]), "%s/", base);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p + n, sizeof(path_buf[0]) - n, fmt, ap);
	va_end(ap);
	return p;
}

static void setup(void)
{
	sc_log_set_level(SC_LOG_NONE);
	run_cwd = NULL;
	strcpy(base, "/tmp/sc-rt-XXXXXX");
	cr_assert_not_null(mkdtemp(base));
	cr_assert_eq(mkdir(in_base("ref"), 0755), 0);
	cr_assert_eq(mkdir(in_base("ck"), 0755), 0);
}

static void teardown(void)
{
	char cmd[128];
	const char *keep = getenv("SELFCKPT_TEST_KEEP");

	if (keep && !strcmp(keep, "1")) {
		cr_log_info("work directory kept: %s", base);
		return;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		cr_log_warn("cannot remove %s", base);
}

TestSuite(roundtrip, .init = setup, .fini = teardown, .timeout = 120);

/* ---- running a program ---- */

static void append(char **buf, size_t *len, const char *data, size_t n)
{
	*buf = realloc(*buf, *len + n + 1);
	cr_assert_not_null(*buf);
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = '\0';
}

static void child(const char *exe, const char *const argv[], int out, int err)
{
	int null = open("/dev/null", O_RDONLY);

	/* its own group: a timeout kills the restorer and the pid namespace it made */
	if (null < 0 || setpgid(0, 0) < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 ||
	    dup2(err, 2) < 0 || (run_cwd && chdir(run_cwd) < 0))
		_exit(126);
	/* nothing of the test runner leaks into the image */
	syscall(SYS_close_range, 3u, ~0u, 0);
	execv(exe, (char *const *)argv);
	_exit(127);
}

/*
 * Run @argv with /dev/null as input, capturing both outputs. After RUN_TIMEOUT_S its
 * process group is killed, and after 5 s more whatever still holds the pipes is left.
 */
void run(const char *const argv[], struct run *r)
{
	int out[2], err[2];
	struct pollfd pf[2];
	time_t deadline = time(NULL) + RUN_TIMEOUT_S;
	char exe[4096];
	pid_t pid;

	memset(r, 0, sizeof(*r));
	append(&r->out, &r->out_len, "", 0);
	append(&r->err, &r->err_len, "", 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(err, O_CLOEXEC), 0);
	/* the child changes directory before it runs the program */
	cr_assert_not_null(realpath(argv[0], exe), "'%s': %s", argv[0], strerror(errno));
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0)
		child(exe, argv, out[1], err[1]);
	setpgid(pid, pid); /* either side may be first */
	close(out[1]);
	close(err[1]);
	pf[0] = (struct pollfd){ .fd = out[0], .events = POLLIN };
	pf[1] = (struct pollfd){ .fd = err[0], .events = POLLIN };
	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		int n = poll(pf, 2, 1000);

		if (time(NULL) > deadline && !r->timed_out) {
			r->timed_out = true;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
		}
		if (r->timed_out && time(NULL) > deadline + 5)
			break;
		for (int i = 0; n > 0 && i < 2; i++) {
			char buf[65536];
			ssize_t k;

			if (pf[i].fd < 0 || !pf[i].revents)
				continue;
			k = read(pf[i].fd, buf, sizeof(buf));
			if (k > 0 && i == 0)
				append(&r->out, &r->out_len, buf, (size_t)k);
			else if (k > 0)
				append(&r->err, &r->err_len, buf, (size_t)k);
			else if (k == 0 || errno != EINTR) {
				close(pf[i].fd);
				pf[i].fd = -1;
			}
		}
	}
	for (int i = 0; i < 2; i++)
		if (pf[i].fd >= 0)
			close(pf[i].fd);
	while (waitpid(pid, &r->status, 0) < 0)
		cr_assert_eq(errno, EINTR, "waitpid: %s", strerror(errno));
}

void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static const char *describe(int status)
{
	static char s[64];

	if (WIFEXITED(status))
		snprintf(s, sizeof(s), "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(s, sizeof(s), "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(s, sizeof(s), "status 0x%x", status);
	return s;
}

void expect_exit(const struct run *r, int code, const char *what)
{
	cr_assert(!r->timed_out, "%s: still running after %d s\nstdout:\n%s\nstderr:\n%s", what,
		  RUN_TIMEOUT_S, r->out, r->err);
	cr_assert(WIFEXITED(r->status) && WEXITSTATUS(r->status) == code,
		  "%s: expected exit status %d, got %s\nstdout:\n%s\nstderr:\n%s", what, code,
		  describe(r->status), r->out, r->err);
}

/*
 * The program kills itself with SIGKILL after a checkpoint. Restored, it may be
 * reported as a shell would: exit status 128 + 9 (selfckpt-restore's pid
 * namespace init passes the status on that way).
 */
void expect_killed(const struct run *r, const char *what)
{
	bool killed = (WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGKILL) ||
		      (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 128 + SIGKILL);

	cr_assert(!r->timed_out, "%s: still running after %d s\nstdout:\n%s\nstderr:\n%s", what,
		  RUN_TIMEOUT_S, r->out, r->err);
	cr_assert(killed, "%s: expected to kill itself with SIGKILL after the checkpoint, got %s\n"
		  "stdout:\n%s\nstderr:\n%s", what, describe(r->status), r->out, r->err);
}

/* ---- comparing ---- */

/* @parts, concatenated, must be @want, byte for byte. */
static void expect_output(const char *what, const struct run *last, const char *want,
			  size_t want_len, const char *const parts[], int n)
{
	char *got = NULL;
	size_t got_len = 0;

	append(&got, &got_len, "", 0);
	for (int i = 0; i < n; i++)
		append(&got, &got_len, parts[i], strlen(parts[i]));
	cr_assert(got_len == want_len && memcmp(got, want, want_len) == 0,
		  "%s: the output differs from the reference run\n--- reference (%zu bytes):\n%s"
		  "--- checkpointed and restored (%zu bytes):\n%s--- stderr of the last run:\n%s",
		  what, want_len, want, got_len, got, last->err);
	free(got);
}

/*
 * Sized from the file's length up front: an image of tens of MiB read by
 * appends would be copied again at each one (a sanitizer's realloc() always
 * moves), which took minutes.
 */
char *read_file(const char *path, size_t *len)
{
	struct stat st;
	size_t n = 0, cap;
	char *buf;
	ssize_t k;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0, "cannot open '%s': %s", path, strerror(errno));
	cr_assert_eq(fstat(fd, &st), 0, "cannot stat '%s': %s", path, strerror(errno));
	cap = (size_t)st.st_size + 65536;
	buf = malloc(cap + 1);
	cr_assert_not_null(buf);
	while ((k = read(fd, buf + n, cap - n)) > 0) {
		n += (size_t)k;
		if (n == cap) { /* it grew since: room for as much again */
			cap *= 2;
			buf = realloc(buf, cap + 1);
			cr_assert_not_null(buf);
		}
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* The memory map and descriptors before checkpoint @point and after its restore. */
void expect_same_snapshot(const char *dir, int point, const char *what)
{
	char before[4096], after[4096], cmd[8400], diff[16384];
	size_t lb, la, n = 0;
	char *b, *a;
	FILE *p;

	snprintf(before, sizeof(before), "%s/snap.before%d", dir, point);
	snprintf(after, sizeof(after), "%s/snap.after%d", dir, point);
	b = read_file(before, &lb);
	a = read_file(after, &la);
	if (lb != la || memcmp(a, b, lb)) {
		snprintf(cmd, sizeof(cmd), "diff '%s' '%s' 2>&1", before, after);
		p = popen(cmd, "r");
		if (p) {
			n = fread(diff, 1, sizeof(diff) - 1, p);
			pclose(p);
		}
		diff[n] = '\0';
		cr_assert_fail("%s: the memory map or the descriptors after the restore differ "
			       "from those before checkpoint %d (< before, > after):\n%s", what,
			       point, diff);
	}
	free(a);
	free(b);
}

/* ---- the round trip ---- */

void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	cr_assert_geq(fd, 0, "cannot create '%s': %s", path, strerror(errno));
	close(fd);
}

/* The command line of program @name: IMAGE|- DIR ARGS. */
void prog_argv(const char *argv[], const char *name, const char *image, const char *dir,
		      const char *const extra[])
{
	int n = 0;

	argv[n++] = prog_path(name);
	argv[n++] = image;
	argv[n++] = dir;
	for (int i = 0; extra && extra[i] && n < MAX_ARGS - 1; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
}

struct trip {
	const char *name;
	char ck[128], image[128], image2[128], again[128], what[160];
	const char *rargv[4]; /* selfckpt-restore [--new-ids] IMAGE */
	int ri;               /* where IMAGE goes in rargv */
	struct run ref, pre;  /* the reference run; the run up to the first checkpoint */
};

/* The reference run, then the run that checkpoints and dies. */
static void trip_start(struct trip *t, const char *const extra[])
{
	const char *argv[MAX_ARGS];

	prog_argv(argv, t->name, "-", in_base("ref"), extra);
	run(argv, &t->ref);
	expect_exit(&t->ref, 0, "the reference run");
	cr_assert(!strstr(t->ref.out, "FAILED"), "the reference run fails its own checks:\n%s",
		  t->ref.out);
	prog_argv(argv, t->name, t->image, t->ck, extra);
	run(argv, &t->pre);
	expect_killed(&t->pre, "the checkpointing run");
	cr_assert_eq(access(t->image, F_OK), 0, "no image '%s' after the checkpoint", t->image);
	cr_assert(t->pre.out_len <= t->ref.out_len &&
		  !memcmp(t->pre.out, t->ref.out, t->pre.out_len),
		  "the checkpointing run's output is not the reference's start:\n%s\n---\n%s",
		  t->pre.out, t->ref.out);
}

/* Restore @image: it must run to the end, and all @n outputs so far be the reference's. */
static void trip_restore(struct trip *t, const char *image, int point,
			 const char *const before[], int n)
{
	const char *parts[4];
	struct run r;

	for (int i = 0; i < n; i++)
		parts[i] = before[i];
	t->rargv[t->ri] = image;
	unlink(in_base("ck/snap.after%d", point));
	run(t->rargv, &r);
	expect_exit(&r, 0, t->what);
	parts[n] = r.out;
	expect_output(t->what, &r, t->ref.out, t->ref.out_len, parts, n + 1);
	expect_same_snapshot(t->ck, point, t->what);
	run_free(&r);
}

/*
 * The whole round trip of program @name with @extra arguments. @new_ids: restore
 * with --new-ids (no namespaces: the process and its threads get new ids).
 */
void roundtrip_ids(const char *name, const char *const extra[], bool new_ids)
{
	struct trip t = { .name = name, .rargv = { restorer(), "--new-ids" },
			  .ri = new_ids ? 2 : 1 };
	struct run mid;

	snprintf(t.ck, sizeof(t.ck), "%s/ck", base);
	snprintf(t.image, sizeof(t.image), "%s/ck/img.sckpt", base);
	snprintf(t.image2, sizeof(t.image2), "%s/ck/img.sckpt.2", base);
	snprintf(t.again, sizeof(t.again), "%s/ck/img.sckpt.again", base);
	trip_start(&t, extra);
	for (int i = 1; i <= 2; i++) {
		snprintf(t.what, sizeof(t.what), "%s: restore %d of the image", name, i);
		trip_restore(&t, t.image, 1, (const char *[]){ t.pre.out }, 1);
	}

	snprintf(t.what, sizeof(t.what), "%s: restore and checkpoint again", name);
	touch(t.again);
	t.rargv[t.ri] = t.image;
	unlink(in_base("ck/snap.after1"));
	run(t.rargv, &mid);
	unlink(t.again);
	expect_killed(&mid, t.what);
	expect_same_snapshot(t.ck, 1, t.what);
	cr_assert_eq(access(t.image2, F_OK), 0, "no image '%s' after the second checkpoint",
		     t.image2);
	snprintf(t.what, sizeof(t.what), "%s: restore of the second image", name);
	trip_restore(&t, t.image2, 2, (const char *[]){ t.pre.out, mid.out }, 2);
	run_free(&mid);
	run_free(&t.pre);
	run_free(&t.ref);
}

void roundtrip(const char *name, const char *const extra[])
{
	roundtrip_ids(name, extra, false);
}

/* A refused restore: exit @code, a message naming @named, and nothing of the program ran. */
void expect_refused(const char *image, int code, const char *named, const char *what)
{
	const char *argv[] = { restorer(), image, NULL };
	struct run r;

	run(argv, &r);
	expect_exit(&r, code, what);
	cr_assert(strstr(r.err, named), "%s: the message does not name '%s':\n%s", what, named,
		  r.err);
	cr_assert_eq(r.out_len, 0, "%s: the program ran after the refusal:\n%s", what, r.out);
	cr_assert_neq(access(in_base("ck/snap.after1"), F_OK), 0,
		      "%s: the program ran after the refusal", what);
	run_free(&r);
}

