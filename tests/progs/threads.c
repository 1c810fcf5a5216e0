/* SPDX-License-Identifier: MIT */
/*
 * threads - 8 worker threads, a mutex, a condition variable and barriers,
 * with the work split across the checkpoint.
 *
 * Phase 1: rounds of work separated by a barrier of the 8 workers, results
 * added under the mutex. Then the workers park, each in a different way, and
 * the main thread checkpoints: workers 0-3 wait on the condition variable,
 * 4-5 block on a mutex the main thread holds, 6-7 wait on a barrier the main
 * thread joins after the checkpoint. Phase 2: more rounds, then the main
 * thread joins them all and prints every result.
 */
#include <pthread.h>

#include "prog.h"

#define WORKERS 8
#define ROUNDS 40

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t rounds, park;
static int phase = 1, arrived;
static uint64_t total, results[WORKERS];
static uint64_t board[WORKERS]; /* each round reads the others' last values */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ull;
	x ^= x >> 27;
	x *= 0x81dadef4bc2dd44dull;
	return x ^ (x >> 33);
}

static void do_rounds(int id, int first, int last, uint64_t *acc)
{
	for (int r = first; r < last; r++) {
		uint64_t v = mix(*acc + (uint64_t)r * 1000 + (uint64_t)id);

		for (int k = 0; k < 20000; k++)
			v = mix(v);
		pthread_barrier_wait(&rounds); /* everyone has read the last board */
		board[id] = v;
		pthread_barrier_wait(&rounds); /* everyone has written */
		for (int j = 0; j < WORKERS; j++)
			v += board[j] * (uint64_t)(j + 1);
		*acc = v;
		pthread_mutex_lock(&lock);
		total += v;
		pthread_mutex_unlock(&lock);
	}
}

static void park_worker(int id)
{
	pthread_mutex_lock(&lock);
	arrived++;
	pthread_cond_broadcast(&cond);
	if (id < 4) {
		while (phase == 1)
			pthread_cond_wait(&cond, &lock);
		pthread_mutex_unlock(&lock);
	} else if (id < 6) {
		pthread_mutex_unlock(&lock);
		pthread_mutex_lock(&gate); /* held by main across the checkpoint */
		pthread_mutex_unlock(&gate);
	} else {
		pthread_mutex_unlock(&lock);
		pthread_barrier_wait(&park);
	}
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	uint64_t acc = (uint64_t)id;

	do_rounds(id, 0, ROUNDS / 2, &acc);
	park_worker(id);
	do_rounds(id, ROUNDS / 2, ROUNDS, &acc);
	results[id] = acc;
	return (void *)(intptr_t)(id * 11);
}

int main(int argc, char **argv)
{
	pthread_t th[WORKERS];
	struct prog p;
	int bad_join = 0;

	prog_init(&p, argc, argv);
	pthread_barrier_init(&rounds, NULL, WORKERS);
	pthread_barrier_init(&park, NULL, 3);
	pthread_mutex_lock(&gate);
	for (int i = 0; i < WORKERS; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i))
			prog_die("pthread_create failed");
	pthread_mutex_lock(&lock);
	while (arrived < WORKERS)
		pthread_cond_wait(&cond, &lock);
	printf("phase 1 total %016llx\n", (unsigned long long)total);
	pthread_mutex_unlock(&lock);

	prog_checkpoint(&p, 1);

	pthread_mutex_lock(&lock);
	phase = 2;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	prog_check("unlock the gate", pthread_mutex_unlock(&gate) == 0, "EPERM");
	pthread_barrier_wait(&park);
	prog_checkpoint(&p, 2);
	for (int i = 0; i < WORKERS; i++) {
		void *ret;

		bad_join += pthread_join(th[i], &ret) != 0 || ret != (void *)(intptr_t)(i * 11);
	}
	prog_check("join all", bad_join == 0, "%d joins failed", bad_join);
	for (int i = 0; i < WORKERS; i++)
		printf("worker %d result %016llx\n", i, (unsigned long long)results[i]);
	printf("total %016llx\n", (unsigned long long)total);
	return 0;
}
