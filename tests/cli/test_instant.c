/* SPDX-License-Identifier: MIT */
/*
 * test_instant.c - an image is one instant of the process: programs that
 * know nothing of selfckpt (tests/progs/hashcopy, sigblock, evtimer,
 * shmfile, shmcount), run under selfckpt-run, checkpointed by SIGUSR2 at a moment of
 * the test's choosing, killed with -9, restored twice from the same image;
 * each restore must print what an uninterrupted run prints. Cites R-TYP-12.
 *
 * The processes come from the plain build (SELFCKPT_BUILD), also under SAN=1.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
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

#define OUT_MAX 4096

struct trip {
	char dir[64];         /* the test's folder; the images go to DIR/ckpt */
	char latest[96];
	char err[OUT_MAX];    /* selfckpt-run's standard error */
};

static const char *build_path(char *buf, const char *rel)
{
	const char *build = getenv("SELFCKPT_BUILD");

	snprintf(buf, PATH_MAX, "%s/%s", build ? build : "build", rel);
	return buf;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Read all of @path into @buf (OUT_MAX bytes), NUL-terminated. */
static void slurp(const char *path, char *buf)
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
static const char *setting[8];

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
static pid_t spawn(const char *const *argv, const char *out, const char *err)
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

static int wait_status(pid_t pid)
{
	int status;

	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void trip_init(struct trip *t)
{
	memset(t, 0, sizeof(*t));
	strcpy(t->dir, "/tmp/sc-instant-XXXXXX");
	cr_assert_not_null(mkdtemp(t->dir));
	snprintf(t->latest, sizeof(t->latest), "%s/ckpt/latest", t->dir);
}

/* The program's own output, uninterrupted, into @ref. */
static void reference(struct trip *t, const char *const *prog, char *ref)
{
	char out[128], err[128];

	snprintf(out, sizeof(out), "%s/ref.out", t->dir);
	snprintf(err, sizeof(err), "%s/ref.err", t->dir);
	cr_assert_eq(wait_status(spawn(prog, out, err)), 0, "the reference run failed");
	slurp(out, ref);
}

/*
 * Run @prog under selfckpt-run, send SIGUSR2 after @delay_ms, and wait up to
 * @wait_ms for DIR/ckpt/latest; then kill -9. Returns whether an image came.
 */
static bool checkpoint_at(struct trip *t, const char *const *prog, long delay_ms, long wait_ms)
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

/*
 * Restore DIR/ckpt/latest; its standard output into @got. With @again_ms,
 * checkpoint the restored process again by SIGUSR2 after that long, and
 * kill it once the new image is there. Returns the exit status.
 */
static int restore_and(struct trip *t, char *got, long again_ms)
{
	char tool[PATH_MAX], out[128], err[128];
	struct stat before = { 0 }, now = { 0 };
	const char *argv[] = { build_path(tool, "bin/selfckpt-restore"), t->latest, NULL };
	int status;
	pid_t pid;

	snprintf(out, sizeof(out), "%s/restore.out", t->dir);
	snprintf(err, sizeof(err), "%s/restore.err", t->dir);
	stat(t->latest, &before); /* a new image is a new file, under the same name or not */
	pid = spawn(argv, out, err);
	if (again_ms) {
		struct timespec t0;

		usleep((useconds_t)again_ms * 1000);
		kill(pid, SIGUSR2);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			usleep(10000);
			if (stat(t->latest, &now) < 0)
				now.st_ino = before.st_ino;
		} while (now.st_ino == before.st_ino && ms_since(&t0) < 5000);
		cr_assert_neq(now.st_ino, before.st_ino,
			      "the restored process wrote no image on SIGUSR2");
		kill(pid, SIGKILL);
	}
	status = wait_status(pid);
	slurp(out, got);
	if (status && !again_ms) { /* a process checkpointed again was killed on purpose */
		char e[OUT_MAX];

		slurp(err, e);
		cr_log_error("selfckpt-restore exited %d: %s", status, e);
	}
	return again_ms ? 0 : status;
}

static int restore(struct trip *t, char *got)
{
	return restore_and(t, got, 0);
}

/* Checkpoint at @delay_ms, restore twice: each restore prints @ref. */
static void round_trip(struct trip *t, const char *const *prog, const char *ref, long delay_ms)
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

static void make_input(const char *path, size_t bytes)
{
	FILE *f = fopen(path, "w");
	uint64_t x = 88172645463325252ull;

	cr_assert_not_null(f);
	for (size_t i = 0; i < bytes / 8; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		fwrite(&x, 8, 1, f);
	}
	fclose(f);
}

/* hashcopy's input in DIR, its command line in @prog, its output in @ref. */
static void hashcopy_setup(struct trip *t, char *prog_path, char *in, char *out,
			   const char **prog, char *ref)
{
	trip_init(t);
	prog[0] = build_path(prog_path, "tests/progs/hashcopy");
	prog[1] = in;
	prog[2] = out;
	prog[3] = NULL;
	snprintf(in, 128, "%s/in.bin", t->dir);
	snprintf(out, 128, "%s/copy.bin", t->dir);
	make_input(in, 24u << 20);
	reference(t, prog, ref);
	cr_assert(strstr(ref, "copy same"), "the reference run's copy differs: %s", ref);
}

/*
 * Under Docker's default seccomp profile kcmp() is refused: which descriptors
 * share an open file description is found another way, and dup'd ones still
 * come back shared (R-TYP-12).
 */
Test(instant, hash_and_copy_under_dockers_seccomp_profile, .timeout = 240)
{
	char prog_path[PATH_MAX], sandbox[PATH_MAX], in[128], out[128], ref[OUT_MAX];
	const char *prog[4];
	struct trip t;

	setting[0] = build_path(sandbox, "tests/progs/sandbox");
	setting[1] = "--seccomp";
	setting[2] = "docker";
	setting[3] = "--no-new-privs";
	setting[4] = "--";
	hashcopy_setup(&t, prog_path, in, out, prog, ref);
	for (int i = 0; i < 4; i++)
		round_trip(&t, prog, ref, 150 + 120 * i);
}

/*
 * A running hash over a file read through a descriptor and
 * its dup() in turn, and a copy written, checkpointed at 20 moments spread
 * over the run. A position read after the snapshot, or dup'd descriptors that
 * come back apart (R-TYP-12), give another hash or a copy that differs.
 */
Test(instant, hash_and_copy_at_twenty_random_moments, .timeout = 600)
{
	char prog_path[PATH_MAX], in[128], out[128], ref[OUT_MAX];
	const char *prog[4];
	struct trip t;

	hashcopy_setup(&t, prog_path, in, out, prog, ref);
	srand((unsigned)getpid());
	for (int i = 0; i < 20; i++)
		round_trip(&t, prog, ref, 150 + rand() % 500);
}

/*
 * Checkpoint at @delay_ms, restore and checkpoint the restored process again
 * @again_ms later, then restore that image twice: each prints @ref.
 */
static void round_trip_again(struct trip *t, const char *const *prog, const char *ref,
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

Test(instant, hash_and_copy_of_a_restored_process_checkpointed_again, .timeout = 120)
{
	char prog_path[PATH_MAX], in[128], out[128], ref[OUT_MAX];
	const char *prog[4];
	struct trip t;

	hashcopy_setup(&t, prog_path, in, out, prog, ref);
	round_trip_again(&t, prog, ref, 300, 300);
}

/* Threads that block every signal, the stop signal included, are stopped all the same. */
Test(instant, threads_that_block_every_signal_are_stopped, .timeout = 120)
{
	char prog_path[PATH_MAX], ref[OUT_MAX];
	const char *prog[2] = { build_path(prog_path, "tests/progs/sigblock"), NULL };
	struct trip t;

	trip_init(&t);
	reference(&t, prog, ref);
	cr_assert(strstr(ref, "stop signal blocked as asked: yes"), "%s", ref);
	round_trip(&t, prog, ref, 500);
	round_trip_again(&t, prog, ref, 300, 300);
}

/*
 * glibc's helper thread of a SIGEV_THREAD timer blocks every signal: the
 * checkpoint is given up at once, naming it, and the program goes on.
 */
Test(instant, a_thread_that_cannot_stop_gives_the_checkpoint_up_at_once, .timeout = 120)
{
	char prog_path[PATH_MAX], ref[OUT_MAX], tool[PATH_MAX], dir[96], out[128], err[128];
	const char *prog[2] = { build_path(prog_path, "tests/progs/evtimer"), NULL };
	const char *argv[] = { build_path(tool, "bin/selfckpt-run"), "--dir", dir, "--", prog[0],
			       NULL };
	struct timespec t0;
	struct trip t;
	char got[OUT_MAX];
	pid_t pid;

	trip_init(&t);
	reference(&t, prog, ref);
	snprintf(dir, sizeof(dir), "%s/ckpt", t.dir);
	snprintf(out, sizeof(out), "%s/run.out", t.dir);
	snprintf(err, sizeof(err), "%s/run.err", t.dir);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = spawn(argv, out, err);
	usleep(300000);
	kill(pid, SIGUSR2);
	cr_assert_eq(wait_status(pid), 0, "the program did not go on to its end");
	cr_assert_lt(ms_since(&t0), 1500 + 4000, "the program was held up: %ld ms",
		     ms_since(&t0));
	slurp(out, got);
	slurp(err, t.err);
	cr_assert_str_eq(got, ref);
	cr_assert(strstr(t.err, "blocks signal"), "no message naming the thread: %s", t.err);
	cr_assert(access(t.latest, F_OK) < 0, "an image was written");
}

/* A shared-mapped file that the program removes at its exit is made again at restore. */
static void shared_file_round_trip(const char *folder)
{
	char prog_path[PATH_MAX], path[128], ref[OUT_MAX];
	const char *prog[3] = { build_path(prog_path, "tests/progs/shmfile"), path, NULL };
	struct trip t;

	trip_init(&t);
	snprintf(path, sizeof(path), "%s/sc-shmfile-%d", folder, (int)getpid());
	reference(&t, prog, ref);
	round_trip(&t, prog, ref, 500);
	cr_assert(access(path, F_OK) < 0, "the restored program did not remove '%s'", path);
	round_trip_again(&t, prog, ref, 300, 300);
}

Test(instant, shared_mapped_file_in_dev_shm_is_made_again, .timeout = 120)
{
	struct stat st;

	if (stat("/dev/shm", &st) < 0 || !S_ISDIR(st.st_mode))
		cr_skip_test("no /dev/shm on this machine");
	shared_file_round_trip("/dev/shm");
}

Test(instant, small_shared_mapped_file_is_made_again, .timeout = 120)
{
	shared_file_round_trip("/tmp");
}

/*
 * Shared memory (anonymous, and a memfd) is saved as it was at the instant,
 * like private memory: counts kept in both agree after every restore.
 */
Test(instant, shared_memory_is_saved_at_the_instant, .timeout = 240)
{
	char prog_path[PATH_MAX], ref[OUT_MAX];
	const char *prog[2] = { build_path(prog_path, "tests/progs/shmcount"), NULL };
	struct trip t;

	trip_init(&t);
	reference(&t, prog, ref);
	cr_assert(strstr(ref, "agrees with private") && strstr(ref, "memfd agrees"), "%s", ref);
	srand((unsigned)getpid());
	for (int i = 0; i < 5; i++)
		round_trip(&t, prog, ref, 200 + rand() % 800);
	round_trip_again(&t, prog, ref, 300, 300);
}
