/* SPDX-License-Identifier: MIT */
/*
 * workers.c - a program for the deployment tests (tests/cli/deploy.sh). It
 * knows nothing of selfckpt and does not link the library.
 *
 *   workers THREADS STEPS [HOLD]
 *
 * Prints STEPS lines "STEP TOTAL", one every 50 ms. With THREADS > 0, every
 * step is computed by THREADS threads that meet the main thread at a barrier
 * twice a step; with 0 the main thread computes alone. The output depends on
 * neither the timing nor the run, so a run checkpointed, killed and restored
 * ends exactly as an uninterrupted one. With HOLD, the pause after step HOLD
 * lasts up to 10 s, until a signal handler runs (a checkpoint's stop signal):
 * a checkpoint asked for then always finds the program before its end.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_THREADS 64

static pthread_barrier_t start, done;
static uint64_t part[MAX_THREADS];
static int threads, step;

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ull;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dull;
	return x ^ (x >> 33);
}

static uint64_t work(int id, int s)
{
	uint64_t v = (uint64_t)s * 1000003u + (uint64_t)id;

	for (int k = 0; k < 20000; k++)
		v = mix(v);
	return v;
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;

	for (;;) {
		pthread_barrier_wait(&start);
		part[id] = work(id, step);
		pthread_barrier_wait(&done);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec tick = { 0, 50 * 1000 * 1000 };
	struct timespec hold_time = { 10, 0 };
	uint64_t total = 0;
	int steps, hold;

	if (argc < 3 || argc > 4 || (threads = atoi(argv[1])) < 0 || threads > MAX_THREADS) {
		fprintf(stderr, "usage: workers THREADS STEPS [HOLD]\n");
		return 2;
	}
	steps = atoi(argv[2]);
	hold = argc > 3 ? atoi(argv[3]) : -1;
	pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	pthread_barrier_init(&done, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, worker, (void *)(intptr_t)i)) {
			fprintf(stderr, "workers: cannot start thread %d\n", i);
			return 1;
		}
	}
	for (step = 0; step < steps; step++) {
		if (threads) {
			pthread_barrier_wait(&start);
			pthread_barrier_wait(&done);
			for (int i = 0; i < threads; i++)
				total += part[i] * (uint64_t)(i + 1);
		} else {
			total += work(0, step);
		}
		printf("%d %016llx\n", step, (unsigned long long)total);
		fflush(stdout);
		nanosleep(step == hold ? &hold_time : &tick, NULL); /* a handler ends it early */
	}
	return 0;
}
