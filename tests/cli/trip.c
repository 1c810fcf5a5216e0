/* SPDX-License-Identifier: MIT */
/*
 * trip.c - running a program that knows nothing of selfckpt under
 * selfckpt-run, checkpointing it by SIGUSR2 at a moment of the test's
 * choosing, killing it with -9 and restoring the image (trip.h).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/cli/trip.h"

const char *build_path(char *buf, const char *rel)
{
	const char *build = getenv("SELFCKPT_BUILD");

	snprintf(buf, PATH_MAX, "%s/%s", build ? build : "build", rel);
	return buf;
}

long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Read all of @path into @buf (OUT_MAX bytes), NUL-terminated. */
void slurp(const char *path, char *buf)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? 0 : read(fd, buf, OUT_MAX - 1);

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

/*
 * A command every process of a test starts under (tests/progs/sandbox with
 * its options, NULL-terminated), or none: the setting the test runs in.
 */
const char *setting[8];

void trip_under_docker(char *sandbox)
{
	setting[0] = build_path(sandbox, "tests/progs/sandbox");
	setting[1] = "--seccomp";
	setting[2] = "docker";
	setting[3] = "--no-new-privs";
	setting[4] = "--";
	setting[5] = NULL;
}

/* @argv after the setting's command, into @full (16 entries). */
static const char *const *in_setting(const char *const *argv, const char **full)
{
	int n = 0;

	for (int i = 0; setting[i]; i++)
		full[n++] = setting[i];
	for (int i = 0; argv[i] && n < 15; i++)
		full[n++] = argv[i];
	full[n] = NULL;
	return full;
}

/* Start @argv with standard output to @out and standard error to @err; stdin /dev/null. */
pid_t spawn(const char *const *argv, const char *out, const char *err)
{
	const char *full[16];
	pid_t pid;

	argv = in_setting(argv, full);
	pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (in < 0 || o < 0 || e < 0 || dup2(in, 0) < 0 || dup2(o, 1) < 0 ||
		    dup2(e, 2) < 0)
			_exit(120);
		close_range(3, ~0u, 0);
		unsetenv("LD_PRELOAD");
		execv(argv[0], (char *const *)argv);
		_exit(121);
	}
	return pid;
}

int wait_status(pid_t pid)
{
	int status;

	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * The folders this test's trips made (each holds its images, some of 100 MiB
 * and more): removed as the test's process ends, so that a run of the suite
 * leaves nothing behind.
 */
static char made[16][64];
static int n_made;

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *at)
{
	(void)st;
	(void)type;
	(void)at;
	remove(path);
	return 0;
}

static void remove_made(void)
{
	for (int i = 0; i < n_made; i++)
		nftw(made[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void trip_remove_at_exit(const char *dir)
{
	if (n_made >= (int)(sizeof(made) / sizeof(made[0])) || strlen(dir) >= sizeof(made[0]))
		return;
	if (!n_made)
		atexit(remove_made);
	strcpy(made[n_made++], dir);
}

void trip_init(struct trip *t)
{
	memset(t, 0, sizeof(*t));
	strcpy(t->dir, "/tmp/sc-instant-XXXXXX");
	cr_assert_not_null(mkdtemp(t->dir));
	trip_remove_at_exit(t->dir);
	snprintf(t->latest, sizeof(t->latest), "%s/ckpt/latest", t->dir);
}

/* The program's own output, uninterrupted, into @ref. */
void reference(struct trip *t, const char *const *prog, char *ref)
{
	char out[128], err[128];

	snprintf(out, sizeof(out), "%s/ref.out", t->dir);
	snprintf(err, sizeof(err), "%s/ref.err", t->dir);
	cr_assert_eq(wait_status(spawn(prog, out, err)), 0, "the reference run failed");
	slurp(out, ref);
}

void trip_prog_in_work(struct trip *t, const char *name, char *prog_path, char *dir,
		       const char **prog, char *ref)
{
	char rel[64];

	trip_init(t);
	snprintf(rel, sizeof(rel), "tests/progs/%s", name);
	snprintf(dir, 128, "%s/work", t->dir);
	cr_assert_eq(mkdir(dir, 0700), 0);
	prog[0] = build_path(prog_path, rel);
	prog[1] = dir;
	prog[2] = NULL;
	reference(t, prog, ref);
}

/*
 * Run @prog under selfckpt-run, send SIGUSR2 after @delay_ms, and wait up to
 * @wait_ms for DIR/ckpt/latest; then kill -9. Returns whether an image came.
 */
bool checkpoint_at(struct trip *t, const char *const *prog, long delay_ms, long wait_ms)
{
	char tool[PATH_MAX], dir[96], out[128], err[128];
	const char *argv[16] = { build_path(tool, "bin/selfckpt-run"), "--dir", dir, "--" };
	struct timespec t0;
	pid_t pid;
	int i = 4;

	snprintf(dir, sizeof(dir), "%s/ckpt", t->dir);
	snprintf(out, sizeof(out), "%s/run.out", t->dir);
	snprintf(err, sizeof(err), "%s/run.err", t->dir);
	unlink(t->latest);
	for (int k = 0; prog[k]; k++)
		argv[i++] = prog[k];
	pid = spawn(argv, out, err);
	usleep((useconds_t)delay_ms * 1000);
	kill(pid, SIGUSR2);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (access(t->latest, F_OK) < 0 && ms_since(&t0) < wait_ms)
		usleep(10000);
	kill(pid, SIGKILL);
	wait_status(pid);
	slurp(err, t->err);
	return access(t->latest, F_OK) == 0;
}

/* The mask or handler set of @pid's /proc status line @key ("SigBlk:"), or 0. */
static uint64_t signal_set(pid_t pid, const char *key)
{
	char path[64], line[128];
	unsigned long long set = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)) && sscanf(line + strlen(key), "%llx", &set) == 1)
			break;
	if (f)
		fclose(f);
	return set;
}

/*
 * Wait until selfckpt-restore (@pid) holds or handles SIGUSR2: from then on
 * a signal sent is its to keep for the restored program. Before its main()
 * runs, SIGUSR2 would end it as it would end any program.
 */
static void wait_until_restorer_takes_signals(pid_t pid)
{
	uint64_t bit = 1ull << (SIGUSR2 - 1);
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!((signal_set(pid, "SigBlk:") | signal_set(pid, "SigCgt:")) & bit) &&
	       ms_since(&t0) < 5000)
		usleep(200);
}

#define KIDS_MAX 16

/* The children of @pid (a restorer's: the restored process, in a namespace of its own). */
static size_t children_of(pid_t pid, pid_t *kids)
{
	char path[64];
	size_t n = 0;
	long k;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (n < KIDS_MAX && fscanf(f, "%ld", &k) == 1)
		kids[n++] = (pid_t)k;
	fclose(f);
	return n;
}

/* Has @pid ended (gone, or a zombie: its descriptors are closed)? */
static bool ended(pid_t pid)
{
	char path[64], state = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return true;
	if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = 'Z';
	fclose(f);
	return state == 'Z' || state == 'X';
}

/*
 * A restored process in namespaces of its own dies of its parent-death signal
 * once its restorer is killed: later, and until then it holds its addresses
 * (ports, socket paths), which the next restore binds again.
 */
static void wait_ended(const pid_t *kids, size_t n)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < n; i++)
		while (!ended(kids[i]) && ms_since(&t0) < 10000)
			usleep(1000);
	for (size_t i = 0; i < n; i++)
		cr_assert(ended(kids[i]), "the restored process %d outlived its restorer",
			  (int)kids[i]);
}

/*
 * Restore DIR/ckpt/latest; its standard output into @got. With @again_ms,
 * checkpoint the restored process again by SIGUSR2 after that long, and
 * kill it once the new image is there. Returns the exit status.
 */
int restore_and(struct trip *t, char *got, long again_ms)
{
	char tool[PATH_MAX], out[128], err[128];
	struct stat before = { 0 }, now = { 0 };
	const char *argv[] = { build_path(tool, "bin/selfckpt-restore"), t->latest, NULL };
	pid_t pid, kids[KIDS_MAX];
	size_t n_kids = 0;
	int status;

	snprintf(out, sizeof(out), "%s/restore.out", t->dir);
	snprintf(err, sizeof(err), "%s/restore.err", t->dir);
	stat(t->latest, &before); /* a new image is a new file, under the same name or not */
	pid = spawn(argv, out, err);
	if (again_ms) {
		struct timespec t0;

		wait_until_restorer_takes_signals(pid);
		usleep((useconds_t)again_ms * 1000);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		now = before;
		/*
		 * Asked once, at a moment that may fall while the process is still
		 * being restored: the signal waits until the restored program
		 * takes it.
		 */
		kill(pid, SIGUSR2);
		while (now.st_ino == before.st_ino && ms_since(&t0) < 8000) {
			usleep(10000);
			if (stat(t->latest, &now) < 0)
				now.st_ino = before.st_ino;
		}
		cr_assert_neq(now.st_ino, before.st_ino,
			      "the restored process wrote no image on SIGUSR2");
		n_kids = children_of(pid, kids);
		kill(pid, SIGKILL);
	}
	status = wait_status(pid);
	wait_ended(kids, n_kids);
	slurp(out, got);
	if (status && !again_ms) { /* a process checkpointed again was killed on purpose */
		char e[OUT_MAX];

		slurp(err, e);
		cr_log_error("selfckpt-restore exited %d: %s", status, e);
	}
	return again_ms ? 0 : status;
}

int restore(struct trip *t, char *got)
{
	return restore_and(t, got, 0);
}

/* Checkpoint at @delay_ms, restore twice: each restore prints @ref. */
void round_trip(struct trip *t, const char *const *prog, const char *ref, long delay_ms)
{
	char got[OUT_MAX];

	cr_assert(checkpoint_at(t, prog, delay_ms, 5000), "no image after SIGUSR2 at %ld ms: %s",
		  delay_ms, t->err);
	for (int k = 1; k <= 2; k++) {
		cr_assert_eq(restore(t, got), 0, "restore %d of the image taken at %ld ms failed",
			     k, delay_ms);
		cr_assert_str_eq(got, ref, "restore %d of the image taken at %ld ms printed\n%s"
				 "instead of\n%s", k, delay_ms, got, ref);
	}
}

/*
 * Checkpoint at @delay_ms, restore and checkpoint the restored process again
 * @again_ms later, then restore that image twice: each prints @ref.
 */
void round_trip_again(struct trip *t, const char *const *prog, const char *ref,
			     long delay_ms, long again_ms)
{
	char got[OUT_MAX];

	cr_assert(checkpoint_at(t, prog, delay_ms, 5000), "no image after SIGUSR2 at %ld ms: %s",
		  delay_ms, t->err);
	restore_and(t, got, again_ms);
	for (int k = 1; k <= 2; k++) {
		cr_assert_eq(restore(t, got), 0, "restore %d of the restored process's image failed",
			     k);
		cr_assert_str_eq(got, ref, "restore %d of the restored process's image printed\n%s"
				 "instead of\n%s", k, got, ref);
	}
}
