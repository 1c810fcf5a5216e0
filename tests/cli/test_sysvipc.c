/* SPDX-License-Identifier: MIT */
/*
 * test_sysvipc.c - System V IPC comes back as the program left it:
 * tests/progs/sysvipc (a private segment attached twice, once read-only; a
 * keyed one attached and marked for removal; a keyed one never attached; a
 * semaphore set; a message queue with messages of several types queued
 * across steps), run under selfckpt-run, checkpointed by SIGUSR2 at random
 * moments, killed with -9, restored twice, and checkpointed again once
 * restored: every restore prints what an uninterrupted run prints, its
 * attaches System V attaches again with the same ids (R-TYP-22, R-SEG-8).
 * An image with System V objects is refused by a restore that cannot make
 * their ids (new ids), and another process's object refuses the checkpoint.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/cli/trip.h"

static char ids_path[160];

/*
 * The objects of the last run that was killed (it wrote their ids): a
 * restored one lives in an IPC namespace of its own, which goes with it,
 * but the run that was checkpointed and killed -9 leaves its objects behind.
 */
static void remove_killed_objects(void)
{
	int a = -1, b = -1, c = -1, sem = -1, q = -1;
	FILE *f = ids_path[0] ? fopen(ids_path, "r") : NULL;

	if (!f)
		return;
	if (fscanf(f, "%d %d %d %d %d", &a, &b, &c, &sem, &q) == 5) {
		shmctl(a, IPC_RMID, NULL);
		shmctl(b, IPC_RMID, NULL);
		shmctl(c, IPC_RMID, NULL);
		semctl(sem, 0, IPC_RMID);
		msgctl(q, IPC_RMID, NULL);
	}
	fclose(f);
	unlink(ids_path);
}

static void setup_prog(struct trip *t, char *prog_path, char *dir, const char **prog, char *ref)
{
	trip_prog_in_work(t, "sysvipc", prog_path, dir, prog, ref);
	snprintf(ids_path, sizeof(ids_path), "%s/ids", dir);
	cr_assert(strstr(ref, "3 attaches") && strstr(ref, "left 100"),
		  "the reference run printed: %s", ref);
}

Test(sysvipc, segments_semaphores_and_queues_come_back_with_their_ids, .timeout = 300,
     .fini = remove_killed_objects)
{
	char prog_path[PATH_MAX], dir[128], ref[OUT_MAX];
	const char *prog[3];
	struct trip t;

	setup_prog(&t, prog_path, dir, prog, ref);
	srand((unsigned)getpid());
	for (int i = 0; i < 5; i++) {
		round_trip(&t, prog, ref, 50 + rand() % 1500);
		remove_killed_objects();
	}
	round_trip_again(&t, prog, ref, 300, 600);
}

/*
 * The same ids can only be had in an IPC namespace of the restore's own: a
 * restore with new ids refuses the image with exit code 77 and runs nothing.
 */
Test(sysvipc, a_restore_with_new_ids_refuses_the_image, .timeout = 120,
     .fini = remove_killed_objects)
{
	char prog_path[PATH_MAX], tool[PATH_MAX], dir[128], ref[OUT_MAX], got[OUT_MAX];
	char err[OUT_MAX], out_path[160], err_path[160];
	const char *prog[3];
	const char *argv[] = { build_path(tool, "bin/selfckpt-restore"), "--new-ids", NULL, NULL };
	struct trip t;

	setup_prog(&t, prog_path, dir, prog, ref);
	cr_assert(checkpoint_at(&t, prog, 400, 5000), "no image: %s", t.err);
	remove_killed_objects();
	argv[2] = t.latest;
	snprintf(out_path, sizeof(out_path), "%s/restore.out", t.dir);
	snprintf(err_path, sizeof(err_path), "%s/restore.err", t.dir);
	cr_assert_eq(wait_status(spawn(argv, out_path, err_path)), 77);
	setenv("SELFCKPT_NEW_IDS", "1", 1);
	argv[1] = t.latest;
	argv[2] = NULL;
	cr_assert_eq(wait_status(spawn(argv, out_path, err_path)), 77);
	unsetenv("SELFCKPT_NEW_IDS");
	slurp(out_path, got);
	slurp(err_path, err);
	cr_assert_str_eq(got, "", "the program ran: %s", got);
	cr_assert(strstr(err, "holds System V IPC objects"), "%s", err);
}

/* A semaphore set another process made, opened by its key: no image is written. */
Test(sysvipc, another_process_s_object_refuses_the_checkpoint, .timeout = 120,
     .fini = remove_killed_objects)
{
	char prog_path[PATH_MAX], tool[PATH_MAX], dir[128], work[160], out[160], err[160];
	char got[OUT_MAX], key_text[32];
	const char *argv[] = { build_path(tool, "bin/selfckpt-run"), "--dir", dir, "--",
			       build_path(prog_path, "tests/progs/sysvipc"), work, NULL };
	key_t key = (key_t)(0x5e000000 | (getpid() & 0xffffff));
	int sem = semget(key, 1, IPC_CREAT | IPC_EXCL | 0600);
	struct trip t;
	pid_t pid;

	cr_assert(sem >= 0, "cannot make a semaphore set");
	trip_init(&t);
	snprintf(dir, sizeof(dir), "%s/ckpt", t.dir);
	snprintf(work, sizeof(work), "%s/work", t.dir);
	snprintf(out, sizeof(out), "%s/run.out", t.dir);
	snprintf(err, sizeof(err), "%s/run.err", t.dir);
	cr_assert_eq(mkdir(work, 0700), 0);
	snprintf(key_text, sizeof(key_text), "%d", (int)key);
	setenv("SC_TEST_FOREIGN_KEY", key_text, 1);
	pid = spawn(argv, out, err);
	unsetenv("SC_TEST_FOREIGN_KEY");
	usleep(500000);
	kill(pid, SIGUSR2);
	cr_assert_eq(wait_status(pid), 0, "the program did not go on to its end");
	semctl(sem, 0, IPC_RMID);
	slurp(err, t.err);
	slurp(out, got);
	cr_assert(strstr(t.err, "System V semaphore set") &&
		  strstr(t.err, "was made by another process"), "no message naming it: %s", t.err);
	cr_assert(strstr(got, "left 100"), "%s", got);
	cr_assert(access(t.latest, F_OK) < 0, "an image was written");
}
