/* SPDX-License-Identifier: MIT */
/*
 * fdrace - a checkpoint taken while three threads open descriptors as fast
 * as they can: more are opened between the library's count and the stop of
 * the threads than the table's first room, so the instant is taken again
 * with more. The checkpoint must succeed, and the restored process must end
 * with every descriptor, as the saving one does.
 *
 * ARGS: IMAGE. Prints "saved" (or "restored"), then "descriptors N" once
 * every thread is done; exits 1 when the checkpoint fails.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "selfckpt.h"

#define THREADS 3
#define EACH 2000

static pthread_barrier_t go;

static void *opener(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&go);
	for (int i = 0; i < EACH; i++)
		if (dup(0) < 0)
			perror("dup");
	return NULL;
}

static int count_descriptors(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = -1; /* the listing's own */

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 2; /* . and .. */
}

int main(int argc, char **argv)
{
	struct rlimit rl = { THREADS * EACH + 64, THREADS * EACH + 64 };
	pthread_t t[THREADS];
	int r;

	if (argc != 2)
		return 2;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		perror("setrlimit");
		return 2;
	}
	pthread_barrier_init(&go, NULL, THREADS + 1);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, opener, NULL);
	pthread_barrier_wait(&go); /* all open from here on, while the checkpoint begins */
	r = selfckpt_save(argv[1]);
	printf("%s\n", r == SELFCKPT_SAVED ? "saved" : r == SELFCKPT_RESTORED ? "restored" :
	       "failed");
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("descriptors %d\n", count_descriptors());
	return r < 0;
}
