/* SPDX-License-Identifier: MIT */
/*
 * sigblock.c - every thread blocks every signal, as xz's workers do: the
 * main thread blocks them all before it starts a worker, which inherits the
 * mask. Prints what it computed and whether it still sees the library's stop
 * signal (SIGRTMAX-2 by default) as blocked. Run under selfckpt-run by
 * tests/cli/test_instant.c: the checkpoint must stop both threads.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define ROUNDS 60

static volatile uint64_t worker_sum;
static volatile int done;

static void *worker(void *arg)
{
	for (uint64_t i = 0; !done; i++)
		if (i % 100000 == 0)
			worker_sum = worker_sum + 1;
	return arg;
}

int main(void)
{
	sigset_t all, now;
	pthread_t t;
	uint64_t sum = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	if (pthread_create(&t, NULL, worker, NULL))
		return 3;
	for (int i = 0; i < ROUNDS; i++) {
		sum = sum * 31 + (uint64_t)i;
		usleep(20000);
	}
	done = 1;
	pthread_join(t, NULL);
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	printf("sum %llu\n", (unsigned long long)sum);
	printf("stop signal blocked as asked: %s\n", sigismember(&now, SIGRTMAX - 2) ? "yes" : "no");
	printf("worker ran: %s\n", worker_sum > 0 ? "yes" : "no");
	return 0;
}
