// SPDX-License-Identifier: MIT
/*
 * rtloop - a CUDA Runtime API program (nvcc's default, static cudart, and
 * -cudart shared): two streams, an event between them, pinned memory, a
 * kernel per iteration. It knows nothing of selfckpt: under selfckpt-run,
 * --save-at finds selfckpt_save() among the loaded symbols. With --threads T,
 * T threads each do that work on their own streams and part of the memory,
 * every iteration, and the main thread folds their results in thread order.
 *
 *   rtloop [--iters N] [--sleep-ms M] [--save-at I FILE] [--mib S] [--threads T]
 *
 * Prints "iter <i> <checksum>" after each iteration and "done <checksum>":
 * a run and its restored continuation must print the same bytes.
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_common.h"

#define CHECK(call) check((call), #call, __LINE__)

static void check(cudaError_t e, const char *call, int line)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "rtloop: %s failed at line %d: %s\n", call, line,
			cudaGetErrorName(e));
		exit(1);
	}
}

__global__ void step(uint32_t *a, size_t n, uint32_t i)
{
	for (size_t j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x)
		a[j] = a[j] * 2654435761u + (uint32_t)j * (i + 1) + 12345u;
}

/* One thread's share of the work: its streams, event, memory and pinned buffer. */
struct lane {
	uint32_t *dev, *host;
	size_t n;
	cudaStream_t s1, s2;
	cudaEvent_t ev;
	uint64_t sum;
};

static const size_t sample_words = 1 << 16; /* the part of a lane hashed each iteration */

static void lane_init(struct lane *l, size_t n)
{
	l->n = n;
	CHECK(cudaMalloc(&l->dev, n * 4));
	CHECK(cudaMemset(l->dev, 0, n * 4));
	CHECK(cudaMallocHost(&l->host, sample_words * 4));
	CHECK(cudaStreamCreateWithFlags(&l->s1, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&l->s2, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&l->ev, cudaEventDisableTiming));
}

/* Iteration @i of a lane: a kernel, an event, a copy on the other stream, a hash. */
static void lane_step(struct lane *l, long i)
{
	step<<<256, 256, 0, l->s1>>>(l->dev, l->n, (uint32_t)i);
	CHECK(cudaGetLastError());
	CHECK(cudaEventRecord(l->ev, l->s1));
	CHECK(cudaStreamWaitEvent(l->s2, l->ev, 0));
	CHECK(cudaMemcpyAsync(l->host, l->dev + (i * 7919) % (l->n - sample_words),
			      sample_words * 4, cudaMemcpyDeviceToHost, l->s2));
	CHECK(cudaStreamSynchronize(l->s2));
	l->sum = fnv(0xcbf29ce484222325ull, l->host, sample_words * 4);
}

static void lane_free(struct lane *l)
{
	CHECK(cudaFree(l->dev));
	CHECK(cudaFreeHost(l->host));
}

/* Worker threads: each runs its lane once per iteration, between two barriers. */
static struct {
	pthread_barrier_t start, done;
	struct lane *lanes;
	long iter; /* 0: stop */
} team;

static void *worker(void *arg)
{
	struct lane *l = (struct lane *)arg;

	for (;;) {
		pthread_barrier_wait(&team.start);
		if (!team.iter)
			return NULL;
		lane_step(l, team.iter);
		pthread_barrier_wait(&team.done);
	}
}

int main(int argc, char **argv)
{
	long iters = 50, save_at = 0, mib = 64, threads = 1;
	unsigned sleep_ms = 40;
	const char *save_path = NULL;
	uint64_t total = 0xcbf29ce484222325ull;

	for (int k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--iters") && k + 1 < argc)
			iters = atol(argv[++k]);
		else if (!strcmp(argv[k], "--sleep-ms") && k + 1 < argc)
			sleep_ms = (unsigned)atol(argv[++k]);
		else if (!strcmp(argv[k], "--mib") && k + 1 < argc)
			mib = atol(argv[++k]);
		else if (!strcmp(argv[k], "--threads") && k + 1 < argc)
			threads = atol(argv[++k]);
		else if (!strcmp(argv[k], "--save-at") && k + 2 < argc) {
			save_at = atol(argv[++k]);
			save_path = argv[++k];
		} else {
			fprintf(stderr, "usage: rtloop [--iters N] [--sleep-ms M] "
				"[--save-at I FILE] [--mib S] [--threads T]\n");
			return 64;
		}
	}
	if (threads < 1 || threads > 64 || mib < 1) {
		fprintf(stderr, "rtloop: --threads is 1 to 64, --mib at least 1\n");
		return 64;
	}
	struct lane lanes[64];
	pthread_t tids[64];
	size_t words = ((size_t)mib << 18) / (size_t)threads; /* 4-byte words a lane */

	for (long t = 0; t < threads; t++)
		lane_init(&lanes[t], words < 2 * sample_words ? 2 * sample_words : words);
	team.lanes = lanes;
	pthread_barrier_init(&team.start, NULL, (unsigned)threads);
	pthread_barrier_init(&team.done, NULL, (unsigned)threads);
	for (long t = 1; t < threads; t++)
		pthread_create(&tids[t], NULL, worker, &lanes[t]);
	for (long i = 1; i <= iters; i++) {
		uint64_t sum = 0xcbf29ce484222325ull;

		team.iter = i;
		if (threads > 1)
			pthread_barrier_wait(&team.start);
		lane_step(&lanes[0], i);
		if (threads > 1)
			pthread_barrier_wait(&team.done);
		for (long t = 0; t < threads; t++)
			sum = threads == 1 ? lanes[0].sum : fnv(sum, &lanes[t].sum, 8);
		printf("iter %ld %016llx\n", i, (unsigned long long)sum);
		fflush(stdout);
		total = fnv(total, &sum, sizeof(sum));
		if (i == save_at)
			checkpoint("rtloop", save_path);
		pause_ms(sleep_ms);
	}
	team.iter = 0;
	if (threads > 1)
		pthread_barrier_wait(&team.start);
	for (long t = 1; t < threads; t++)
		pthread_join(tids[t], NULL);
	printf("done %016llx\n", (unsigned long long)total);
	fflush(stdout);
	for (long t = 0; t < threads; t++)
		lane_free(&lanes[t]);
	return 0;
}
