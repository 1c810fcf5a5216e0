/* SPDX-License-Identifier: MIT */
/*
 * sysvipc.c - a program that uses System V IPC: a private shared memory
 * segment attached twice (once read-only), a keyed segment attached once and
 * then marked for removal while attached, a keyed segment it never attaches,
 * a semaphore set whose values change every step and a message queue that
 * holds messages of several types across steps. In 100 steps of 20 ms it
 * writes through the attaches and reads through the others, operates on the
 * semaphores, sends and receives messages, and prints what shmctl(),
 * semctl() and msgctl() say (every fifth step, and a running hash of every
 * message received: the output fits the test's buffer). Everything it
 * prints follows from what it did, not from when or under which ids: run
 * under selfckpt-run by tests/cli/test_sysvipc.c and checkpointed at any
 * moment, every restore must print what an uninterrupted run prints.
 *
 * With SC_TEST_FOREIGN_KEY=KEY it also opens the semaphore set of that key,
 * which another process made: its checkpoint must be refused.
 *
 * Usage: sysvipc DIR. It writes the ids of its objects to DIR/ids at once,
 * so that a test can remove those of a run it killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <unistd.h>

#define STEPS 100
#define NSEMS 3
#define SEG_A 8192  /* private, attached twice */
#define SEG_B 5000  /* keyed, attached and marked for removal */
#define SEG_C 12288 /* keyed, never attached */

struct ipc {
	int a, b, c, sem, q;
	key_t key_b, key_c;
	char *a_rw, *a_ro, *b_rw;
};

struct msg {
	long type;
	char text[64];
};

static int make(struct ipc *o, const char *dir)
{
	char path[300];
	FILE *f;

	/* keys of this run only: the reference and the checkpointed runs live side by side */
	o->key_b = (key_t)(0x5c000000 | (getpid() & 0xffffff));
	o->key_c = (key_t)(0x5d000000 | (getpid() & 0xffffff));
	o->a = shmget(IPC_PRIVATE, SEG_A, IPC_CREAT | 0600);
	o->b = shmget(o->key_b, SEG_B, IPC_CREAT | IPC_EXCL | 0640);
	o->c = shmget(o->key_c, SEG_C, IPC_CREAT | IPC_EXCL | 0604);
	o->sem = semget(IPC_PRIVATE, NSEMS, IPC_CREAT | 0600);
	o->q = msgget(IPC_PRIVATE, IPC_CREAT | 0620);
	/* SC_TEST_FOREIGN_KEY: also use a set another process made; no image can hold it */
	if (getenv("SC_TEST_FOREIGN_KEY") &&
	    semget((key_t)strtol(getenv("SC_TEST_FOREIGN_KEY"), NULL, 0), 0, 0) < 0)
		return -1;
	if (o->a < 0 || o->b < 0 || o->c < 0 || o->sem < 0 || o->q < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/ids", dir);
	if (!(f = fopen(path, "w")))
		return -1;
	fprintf(f, "%d %d %d %d %d\n", o->a, o->b, o->c, o->sem, o->q);
	fclose(f);
	o->a_rw = shmat(o->a, NULL, 0);
	o->a_ro = shmat(o->a, NULL, SHM_RDONLY);
	o->b_rw = shmat(o->b, NULL, 0);
	if (o->a_rw == (void *)-1 || o->a_ro == (void *)-1 || o->b_rw == (void *)-1)
		return -1;
	char *c = shmat(o->c, NULL, 0);
	if (c == (void *)-1)
		return -1;
	memcpy(c + SEG_C - 6, "tail-c", 6); /* then detached: the segment keeps it */
	shmdt(c);
	return shmctl(o->b, IPC_RMID, NULL); /* goes once detached; stays attached here */
}

/* Attaches in the maps: a restored one must be a System V attach again, not a copy. */
static int sysv_maps(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	int n = 0;

	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, " /SYSV") != NULL;
	if (f)
		fclose(f);
	return n;
}

static void report_shm(const struct ipc *o, int step)
{
	struct shmid_ds a, b, c;

	shmctl(o->a, IPC_STAT, &a);
	shmctl(o->b, IPC_STAT, &b);
	shmctl(o->c, IPC_STAT, &c);
	printf("%d shm a: size %zu nattch %lu mode %o own %d | b: size %zu nattch %lu "
	       "mode %o key0 %d | c: size %zu nattch %lu mode %o key %d\n", step, a.shm_segsz,
	       (unsigned long)a.shm_nattch, a.shm_perm.mode, a.shm_cpid == getpid(), b.shm_segsz,
	       (unsigned long)b.shm_nattch, b.shm_perm.mode, b.shm_perm.__key == 0, c.shm_segsz,
	       (unsigned long)c.shm_nattch, c.shm_perm.mode, c.shm_perm.__key == o->key_c);
	printf("%d data a %.20s (ro %.20s) b %.20s, %d attaches\n", step, o->a_rw, o->a_ro,
	       o->b_rw, sysv_maps());
}

/* Memory: writes through one attach, read through the other. */
static void step_shm(struct ipc *o, int step)
{
	snprintf(o->a_rw, 64, "a-step-%d", step);
	snprintf(o->b_rw + SEG_B - 32, 32, "b-end-%d", step);
	memcpy(o->b_rw, o->b_rw + SEG_B - 32, 16);
	if (step % 25 == 0)
		report_shm(o, step);
}

static void step_sem(struct ipc *o, int step)
{
	struct sembuf ops[2] = { { (unsigned short)(step % NSEMS), 2, 0 },
				 { (unsigned short)((step + 1) % NSEMS), 1, 0 } };
	unsigned short v[NSEMS];
	struct semid_ds ds;

	semop(o->sem, ops, 2);
	if (step % 4 == 3) { /* take some back, without waiting */
		struct sembuf take = { (unsigned short)(step % NSEMS), -1, IPC_NOWAIT };

		semop(o->sem, &take, 1);
	}
	semctl(o->sem, 0, GETALL, v);
	semctl(o->sem, 0, IPC_STAT, &ds);
	if (step % 5 == 0)
		printf("%d sem %u %u %u nsems %lu mode %o pid %d zcnt %d\n", step, v[0], v[1], v[2],
	       (unsigned long)ds.sem_nsems, ds.sem_perm.mode,
	       semctl(o->sem, (int)(step % NSEMS), GETPID) == getpid(),
	       semctl(o->sem, 0, GETZCNT));
}

static uint64_t hash = 1469598103934665603ull;

static void fold(const struct msg *m)
{
	hash = (hash ^ (uint64_t)m->type) * 1099511628211ull;
	for (const char *p = m->text; *p; p++)
		hash = (hash ^ (uint8_t)*p) * 1099511628211ull;
}

/* Three messages in, two out (the oldest of type 2, then any): the queue grows. */
static void step_msg(struct ipc *o, int step)
{
	struct msg m;
	struct msqid_ds ds;
	int got = 0;

	for (int k = 0; k < 3; k++) {
		m.type = 1 + (step + k) % 3;
		snprintf(m.text, sizeof(m.text), "m%d.%d", step, k);
		msgsnd(o->q, &m, strlen(m.text) + 1, IPC_NOWAIT);
	}
	if (msgrcv(o->q, &m, sizeof(m.text), 2, IPC_NOWAIT) >= 0)
		fold(&m), got++;
	if (msgrcv(o->q, &m, sizeof(m.text), 0, IPC_NOWAIT) >= 0)
		fold(&m), got++;
	msgctl(o->q, IPC_STAT, &ds);
	if (step % 5 == 0)
		printf("%d msg got %d last %ld:%s qnum %lu bytes %lu mode %o hash %016llx\n",
		       step, got, m.type, m.text, (unsigned long)ds.msg_qnum,
		       (unsigned long)ds.__msg_cbytes, ds.msg_perm.mode, (unsigned long long)hash);
}

/* The end: what is still queued, the untouched segment, then everything removed. */
static void finish(struct ipc *o)
{
	struct msg m;
	char *c = shmat(o->c, NULL, SHM_RDONLY);

	printf("c: %.6s, attach again %s\n", c == (void *)-1 ? "?" : c + SEG_C - 6,
	       shmat(o->b, NULL, 0) != (void *)-1 ? "yes" : "no");
	int left = 0;

	while (msgrcv(o->q, &m, sizeof(m.text), -3, IPC_NOWAIT) >= 0)
		fold(&m), left++;
	printf("left %d, hash %016llx\n", left, (unsigned long long)hash);
	shmctl(o->a, IPC_RMID, NULL);
	shmctl(o->c, IPC_RMID, NULL);
	semctl(o->sem, 0, IPC_RMID);
	msgctl(o->q, IPC_RMID, NULL);
}

int main(int argc, char **argv)
{
	struct ipc o;

	if (argc != 2 || make(&o, argv[1]) < 0) {
		perror("sysvipc");
		return 2;
	}
	for (int step = 0; step < STEPS; step++) {
		step_shm(&o, step);
		step_sem(&o, step);
		step_msg(&o, step);
		usleep(20000);
	}
	finish(&o);
	return 0;
}
