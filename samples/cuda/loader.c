/* SPDX-License-Identifier: MIT */
/*
 * loader.c - the common layout of a training job: one process with the GPU
 * and CPU-only workers it forks after its CUDA set-up (a data loader's pool).
 *
 * Two workers compute the step vectors of alternate iterations and write
 * them into a pipe each; the GPU process reads each step, adds it on the
 * device into its running vector (vecadd's kernel), and prints the checksum.
 * A step is 1 MiB and a pipe holds 64 KiB, so at any instant the workers are
 * part-way through a write and the pipes hold bytes: a checkpoint of the job
 * must hold the GPU state once, the workers, and their pipes. The workers
 * never call CUDA (a forked child has none of its parent's GPU state).
 * Checkpointed only as a job (by a signal under selfckpt-run), not with
 * --save-at: selfckpt_save() saves the calling process alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define N (1 << 18)
#define BLOCK 256
#define WORKERS 2

static void step_of(long it, float *step)
{
	for (int i = 0; i < N; i++)
		step[i] = (float)((i + it) % 7) * 0.25f - 0.75f;
}

static int move_all(int fd, void *buf, size_t n, int writing)
{
	for (size_t done = 0; done < n;) {
		ssize_t r = writing ? write(fd, (char *)buf + done, n - done)
				    : read(fd, (char *)buf + done, n - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

/* A worker: the steps of iterations first, first + WORKERS, ... into @fd. */
static void __attribute__((noreturn)) worker(int fd, long first, long iters, float *step)
{
	for (long it = first; it <= iters; it += WORKERS) {
		step_of(it, step);
		if (move_all(fd, step, N * sizeof(float), 1) < 0)
			_exit(1);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	struct sample s;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr a, b, c;
	size_t bytes = N * sizeof(float);
	float *host = malloc(bytes), *step = malloc(bytes);
	int n = N, from[WORKERS], status, failed = 0;
	pid_t pids[WORKERS];

	if (!host || !step) {
		fprintf(stderr, "loader: out of memory\n");
		return 1;
	}
	sample_init(&s, argc, argv, "loader", 0);
	mod = sample_load_module(&s);
	CHECK(cuModuleGetFunction(&fn, mod, "vec_add"));
	for (int w = 0; w < WORKERS; w++) {
		int p[2];

		if (pipe(p) < 0 || (pids[w] = fork()) < 0) {
			perror("loader: cannot start a worker");
			return 1;
		}
		if (pids[w] == 0) {
			close(p[0]);
			worker(p[1], w + 1, s.iters, step);
		}
		close(p[1]);
		from[w] = p[0];
	}
	for (int i = 0; i < N; i++)
		host[i] = (float)(i % 1000) * 0.5f;
	CHECK(cuMemAlloc(&a, bytes));
	CHECK(cuMemAlloc(&b, bytes));
	CHECK(cuMemAlloc(&c, bytes));
	CHECK(cuMemcpyHtoD(a, host, bytes));

	for (long it = 1; it <= s.iters; it++) {
		void *params[] = { &a, &b, &c, &n };
		CUdeviceptr t;

		if (move_all(from[(it - 1) % WORKERS], step, bytes, 0) < 0) {
			fprintf(stderr, "loader: worker %ld ended early\n", (it - 1) % WORKERS + 1);
			return 1;
		}
		CHECK(cuMemcpyHtoD(b, step, bytes));
		CHECK(cuLaunchKernel(fn, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0, NULL,
				     params, NULL));
		CHECK(cuMemcpyDtoH(host, c, bytes));
		t = a; /* the sum is the next iteration's a */
		a = c;
		c = t;
		sample_iteration_done(&s, it, sample_hash(SAMPLE_HASH_INIT, host, bytes));
	}
	for (int w = 0; w < WORKERS; w++)
		if (waitpid(pids[w], &status, 0) != pids[w] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			failed = 1;
	if (failed) {
		fprintf(stderr, "loader: a worker failed\n");
		return 1;
	}
	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
	CHECK(cuMemFree(c));
	CHECK(cuModuleUnload(mod));
	free(host);
	free(step);
	return sample_finish(&s);
}
