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

#include "tests/cli/trip.h"

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

	trip_under_docker(sandbox);
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

Test(instant, hash_and_copy_of_a_restored_process_checkpointed_again, .timeout = 120)
{
	char prog_path[PATH_MAX], in[128], out[128], ref[OUT_MAX];
	const char *prog[4];
	struct trip t;

	hashcopy_setup(&t, prog_path, in, out, prog, ref);
	round_trip_again(&t, prog, ref, 300, 300);
}

/*
 * A checkpoint signal sent the moment the restore starts, long before the
 * program runs, waits for it: the restored process takes it and writes an
 * image, with the saved ids and with new ones, where it used to end the
 * restore (the default action of SIGUSR2) or be lost.
 */
Test(instant, a_signal_sent_during_the_restore_waits_for_the_program, .timeout = 120)
{
	char prog_path[PATH_MAX], in[128], out[128], ref[OUT_MAX];
	const char *prog[4];
	struct trip t;

	hashcopy_setup(&t, prog_path, in, out, prog, ref);
	round_trip_again(&t, prog, ref, 300, 1);
	setenv("SELFCKPT_NEW_IDS", "1", 1);
	round_trip_again(&t, prog, ref, 300, 1);
	unsetenv("SELFCKPT_NEW_IDS");
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
	round_trip_again(&t, prog, ref, 300, 1); /* a signal sent while it is being restored */
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
