/* SPDX-License-Identifier: MIT */
/*
 * tree_sysv.c - a parent and child that work together through System V
 * objects and anonymous shared memory: a semaphore as their lock, a count in
 * MAP_SHARED anonymous memory and one in a System V segment marked for
 * removal (as a program does once both have it attached), and a message
 * queue on which the child sends each step's number to the parent. Under the
 * lock each adds to both counts; at the end the parent writes the counts and
 * the sum of the messages to out.txt. Any copy made where one object should
 * be (a count that each process keeps on its own, a lost message) shows in
 * the numbers. Run under selfckpt-run by tests/cli/trees.sh.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#define STEPS 250 /* of 10 ms: the job lasts longer than the moment of its checkpoint */

struct message {
	long type;
	int step;
};

static void lock(int sem, int delta)
{
	struct sembuf op = { .sem_num = 0, .sem_op = (short)delta, .sem_flg = 0 };

	while (semop(sem, &op, 1) < 0)
		;
}

/* Each step of one process: both counts, under the lock; the child sends the step too. */
static void work(int sem, long *anon, long *seg, int who, int queue)
{
	for (int step = 0; step < STEPS; step++) {
		struct message m = { .type = 1, .step = step };

		lock(sem, -1);
		*anon += step * who;
		*seg += step + who;
		lock(sem, 1);
		if (queue >= 0)
			msgsnd(queue, &m, sizeof(m.step), 0);
		usleep(10000);
	}
}

int main(void)
{
	long *anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int sem = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	int queue = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	int shm = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	long *seg = shm < 0 ? (void *)-1 : shmat(shm, NULL, 0);
	long sum = 0;
	pid_t child;
	FILE *out;

	if (anon == MAP_FAILED || sem < 0 || queue < 0 || seg == (void *)-1 ||
	    semctl(sem, 0, SETVAL, 1) < 0 || shmctl(shm, IPC_RMID, NULL) < 0)
		return 3;
	child = fork();
	if (child < 0)
		return 3;
	if (child == 0) {
		work(sem, anon, seg, 2, queue);
		_exit(0);
	}
	work(sem, anon, seg, 1, -1);
	for (int step = 0; step < STEPS; step++) {
		struct message m;

		if (msgrcv(queue, &m, sizeof(m.step), 1, 0) < 0)
			return 4;
		sum += m.step;
	}
	waitpid(child, NULL, 0);
	semctl(sem, 0, IPC_RMID);
	msgctl(queue, IPC_RMID, NULL);
	out = fopen("out.txt", "w");
	if (!out)
		return 5;
	fprintf(out, "anonymous %ld segment %ld messages %ld\n", *anon, *seg, sum);
	return fclose(out) ? 5 : 0;
}
