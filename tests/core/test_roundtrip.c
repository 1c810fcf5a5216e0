/* SPDX-License-Identifier: MIT */
/*
 * Process round trips, zdtm style, with the programs of tests/progs/ (see
 * tests/progs/prog.h for their protocol). For each program:
 *   1. a reference run that never checkpoints;
 *   2. a run that checkpoints and kills itself with SIGKILL right after;
 *   3. selfckpt-restore of that image, twice in a row: each exits 0, and the
 *      output of run 2 followed by the restored output is the reference,
 *      bit for bit;
 *   4. a third restore that checkpoints the restored process again (and dies
 *      likewise), then a restore of that second image: run 2, 4 and this
 *      output together are the reference again.
 * After every restore, the memory map and the descriptors the program wrote
 * right before its checkpoint must equal those it wrote right after it came
 * back. Then the restores that must be refused: a corrupt image, a missing
 * one, a mapped file that changed, and the command line.
 *
 * SELFCKPT_BUILD names the build directory (make test sets it);
 * SELFCKPT_TEST_HEAP_MIB sizes the heap test (default 1024);
 * SELFCKPT_TEST_KEEP=1 keeps the work directories in /tmp.
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

#include "format/sc_format.h"
#include "format/sc_log.h"

#define RUN_TIMEOUT_S 60
#define MAX_ARGS 16

struct run {
	char *out, *err;
	size_t out_len, err_len;
	int status;
	bool timed_out;
};

static char base[64];
static char path_buf[4][4096];

static const char *build_dir(void)
{
	const char *b = getenv("SELFCKPT_BUILD");

	return b && *b ? b : "build";
}

static const char *restorer(void)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/bin/selfckpt-restore", build_dir());
	cr_assert_eq(access(path, X_OK), 0, "no restorer at '%s': %s", path, strerror(errno));
	return path;
}

static const char *prog_path(const char *name)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/tests/progs/%s", build_dir(), name);
	cr_assert_eq(access(path, X_OK), 0, "no test program at '%s' (make test builds it): %s",
		     path, strerror(errno));
	return path;
}

/* A path under the work directory, in one of four rotating buffers. */
static const char *in_base(const char *fmt, ...)
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

static void child(const char *const argv[], int out, int err)
{
	int null = open("/dev/null", O_RDONLY);

	/* its own group: a timeout kills the restorer and the pid namespace it made */
	if (null < 0 || setpgid(0, 0) < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 ||
	    dup2(err, 2) < 0)
		_exit(126);
	/* nothing of the test runner leaks into the image */
	syscall(SYS_close_range, 3u, ~0u, 0);
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

/*
 * Run @argv with /dev/null as input, capturing both outputs. After RUN_TIMEOUT_S its
 * process group is killed, and after 5 s more whatever still holds the pipes is left.
 */
static void run(const char *const argv[], struct run *r)
{
	int out[2], err[2];
	struct pollfd pf[2];
	time_t deadline = time(NULL) + RUN_TIMEOUT_S;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	append(&r->out, &r->out_len, "", 0);
	append(&r->err, &r->err_len, "", 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(err, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0)
		child(argv, out[1], err[1]);
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

static void run_free(struct run *r)
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

static void expect_exit(const struct run *r, int code, const char *what)
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
static void expect_killed(const struct run *r, const char *what)
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

static char *read_file(const char *path, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	char chunk[65536];
	ssize_t k;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0, "cannot open '%s': %s", path, strerror(errno));
	append(&buf, &n, "", 0);
	while ((k = read(fd, chunk, sizeof(chunk))) > 0)
		append(&buf, &n, chunk, (size_t)k);
	close(fd);
	*len = n;
	return buf;
}

/* The memory map and descriptors before checkpoint @point and after its restore. */
static void expect_same_snapshot(const char *dir, int point, const char *what)
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

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	cr_assert_geq(fd, 0, "cannot create '%s': %s", path, strerror(errno));
	close(fd);
}

/* The command line of program @name: IMAGE|- DIR ARGS. */
static void prog_argv(const char *argv[], const char *name, const char *image, const char *dir,
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
static void roundtrip_ids(const char *name, const char *const extra[], bool new_ids)
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

static void roundtrip(const char *name, const char *const extra[])
{
	roundtrip_ids(name, extra, false);
}

Test(roundtrip, heap)
{
	const char *mib = getenv("SELFCKPT_TEST_HEAP_MIB");

	roundtrip("heap", (const char *[]){ mib && *mib ? mib : "1024", NULL });
}

Test(roundtrip, threads)
{
	roundtrip("threads", NULL);
}

Test(roundtrip, tlsmisc)
{
	roundtrip("tlsmisc", NULL);
}

/* New thread ids: mutexes held across the checkpoint name the old ones (tlsmisc skips them). */
Test(roundtrip, threads_new_ids)
{
	roundtrip_ids("threads", NULL, true);
}

Test(roundtrip, tlsmisc_new_ids)
{
	roundtrip_ids("tlsmisc", (const char *[]){ "new-ids", NULL }, true);
}

Test(roundtrip, files)
{
	roundtrip("files", NULL);
}

Test(roundtrip, signals)
{
	roundtrip("signals", NULL);
}

Test(roundtrip, clock)
{
	roundtrip("clock", NULL);
}

Test(roundtrip, growth)
{
	roundtrip("growth", NULL);
}

Test(roundtrip, dlopen)
{
	roundtrip("dlopen", NULL);
}

/* ---- a private mapping of a file; and what must be refused ---- */

#define DATA_LEN (5 * 4096 + 100)

static const char *make_data_file(void)
{
	static char path[4096];
	char buf[DATA_LEN];
	int fd;

	snprintf(path, sizeof(path), "%s", in_base("mapped.dat"));
	for (int i = 0; i < DATA_LEN; i++)
		buf[i] = (char)(i * 13 + (i >> 9));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	close(fd);
	return path;
}

Test(roundtrip, mapfile)
{
	roundtrip("mapfile", (const char *[]){ make_data_file(), NULL });
}

/* Checkpoint mapfile into ck/img.sckpt; return the image's path. */
static const char *checkpoint_mapfile(const char *data)
{
	static char image[4096];
	const char *argv[MAX_ARGS];
	struct run r;

	snprintf(image, sizeof(image), "%s", in_base("ck/img.sckpt"));
	prog_argv(argv, "mapfile", image, in_base("ck"), (const char *[]){ data, NULL });
	run(argv, &r);
	expect_killed(&r, "mapfile's checkpoint");
	run_free(&r);
	return image;
}

/* A refused restore: exit @code, a message naming @named, and nothing of the program ran. */
static void expect_refused(const char *image, int code, const char *named, const char *what)
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

/* The last byte of the segment record with the most stored bytes: inside its last chunk. */
static uint64_t segment_byte(const char *image)
{
	const struct sc_index_entry *e, *best = NULL;
	struct sc_reader *rd;
	size_t n;

	cr_assert_eq(sc_reader_open(&rd, image, NULL), 0, "cannot read '%s'", image);
	cr_assert_eq(sc_reader_index(rd, &e, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (e[i].type == SC_REC_SEGMENT && e[i].raw_len &&
		    (!best || e[i].stored_len > best->stored_len))
			best = &e[i];
	cr_assert_not_null(best, "'%s' has no segment with stored pages", image);
	n = best->offset + best->stored_len - 1;
	sc_reader_free(rd);
	return n;
}

Test(roundtrip, refuses_corrupt_image)
{
	const char *image = checkpoint_mapfile(make_data_file());
	uint64_t at = segment_byte(image);
	uint8_t byte;
	int fd = open(image, O_RDWR | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &byte, 1, (off_t)at), 1);
	byte ^= 0x40;
	cr_assert_eq(pwrite(fd, &byte, 1, (off_t)at), 1);
	close(fd);
	expect_refused(image, 65, image, "a corrupt segment chunk");
}

Test(roundtrip, refuses_missing_image)
{
	const char *image = in_base("ck/no-such.sckpt");

	expect_refused(image, 66, image, "a missing image");
}

Test(roundtrip, refuses_changed_mapped_file)
{
	const char *data = make_data_file();
	const char *image = checkpoint_mapfile(data);
	int fd = open(data, O_WRONLY | O_APPEND | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "x", 1), 1);
	close(fd);
	expect_refused(image, 69, data, "a mapped file that changed");
}

Test(roundtrip, restorer_command_line)
{
	const char *help[] = { restorer(), "--help", NULL }, *none[] = { restorer(), NULL };
	struct run r;

	run(help, &r);
	expect_exit(&r, 0, "selfckpt-restore --help");
	cr_assert(strstr(r.out, "Usage:"), "--help prints no usage:\n%s", r.out);
	run_free(&r);
	run(none, &r);
	expect_exit(&r, 64, "selfckpt-restore without an image");
	cr_assert(r.err_len > 0, "no message for a missing argument");
	run_free(&r);
}
