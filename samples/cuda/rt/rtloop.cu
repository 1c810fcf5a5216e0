// SPDX-License-Identifier: MIT
/*
 * rtloop - a CUDA Runtime API program (nvcc's default, static cudart, and
 * -cudart shared): two streams, an event between them, pinned memory, a
 * kernel per iteration. It knows nothing of selfckpt: under selfckpt-run,
 * --save-at finds selfckpt_save() among the loaded symbols. With --threads T,
 * T threads each do that work on their own streams and part of the memory,
 * every iteration, and the main thread folds their results in thread order.
 * With --workers W it forks W CPU-only worker processes once its CUDA work is
 * set up (the layout of a data loader's pool): each iteration's checksum goes
 * to one of them through a pipe, and what it sends back is printed too.
 *
 *   rtloop [--iters N] [--sleep-ms M] [--save-at I FILE] [--mib S] [--threads T]
 *          [--workers W]
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* A CPU worker process: to each number it reads it answers with a hash of it and its own count. */
struct helper {
	pid_t pid;
	int to, from; /* the parent's ends of its two pipes */
};

static void helper_loop(int in, int out, long w)
{
	uint64_t v, seen = 0;

	while (read(in, &v, sizeof(v)) == (ssize_t)sizeof(v) && v) {
		seen++;
		v = fnv(fnv(v, &w, sizeof(w)), &seen, sizeof(seen));
		if (write(out, &v, sizeof(v)) != (ssize_t)sizeof(v))
			break;
	}
	_exit(0);
}

static void helpers_start(struct helper *h, long n)
{
	for (long w = 0; w < n; w++) {
		int down[2], up[2];

		if (pipe(down) || pipe(up) || (h[w].pid = fork()) < 0) {
			perror("rtloop: a worker process");
			exit(1);
		}
		if (h[w].pid == 0) {
			for (long k = 0; k < w; k++) { /* the earlier workers' ends: their end of file */
				close(h[k].to);
				close(h[k].from);
			}
			close(down[1]);
			close(up[0]);
			helper_loop(down[0], up[1], w);
		}
		close(down[0]);
		close(up[1]);
		h[w].to = down[1];
		h[w].from = up[0];
	}
}

static uint64_t helper_ask(const struct helper *h, uint64_t v)
{
	uint64_t answer = 0;

	if (write(h->to, &v, sizeof(v)) != (ssize_t)sizeof(v) ||
	    read(h->from, &answer, sizeof(answer)) != (ssize_t)sizeof(answer)) {
		fprintf(stderr, "rtloop: worker process %d does not answer\n", (int)h->pid);
		exit(1);
	}
	return answer;
}

static void helpers_stop(struct helper *h, long n)
{
	for (long w = 0; w < n; w++) {
		close(h[w].to);
		waitpid(h[w].pid, NULL, 0);
	}
}

int main(int argc, char **argv)
{
	long iters = 50, save_at = 0, mib = 64, threads = 1, workers = 0;
	struct helper helpers[8];
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
		else if (!strcmp(argv[k], "--workers") && k + 1 < argc)
			workers = atol(argv[++k]);
		else if (!strcmp(argv[k], "--save-at") && k + 2 < argc) {
			save_at = atol(argv[++k]);
			save_path = argv[++k];
		} else {
			fprintf(stderr, "usage: rtloop [--iters N] [--sleep-ms M] "
				"[--save-at I FILE] [--mib S] [--threads T] [--workers W]\n");
			return 64;
		}
	}
	if (threads < 1 || threads > 64 || mib < 1 || workers < 0 || workers > 8) {
		fprintf(stderr, "rtloop: --threads is 1 to 64, --mib at least 1, --workers 0 to 8\n");
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
	helpers_start(helpers, workers);
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
		if (workers)
			printf("iter %ld %016llx %016llx\n", i, (unsigned long long)sum,
			       (unsigned long long)helper_ask(&helpers[i % workers], sum));
		else
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
	helpers_stop(helpers, workers);
	printf("done %016llx\n", (unsigned long long)total);
	fflush(stdout);
	for (long t = 0; t < threads; t++)
		lane_free(&lanes[t]);
	return 0;
}
