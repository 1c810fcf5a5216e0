/* SPDX-License-Identifier: MIT */
/*
 * solver.c - Jacobi iterations of the Laplace equation on a 256 x 256 grid,
 * with two streams, events, module globals and pinned host buffers.
 *
 * Each iteration, on the "compute" stream (the higher priority): clear the
 * module global max_change, record an event, run 8 sweeps, record another.
 * The "copy" stream waits for that event, then copies the grid and
 * max_change into pinned buffers (cuMemAllocHost) and records a third event,
 * which the host waits for. The module global sweeps, the count of sweeps
 * done, is read with a plain cuMemcpyDtoH(). The kernel gets both globals'
 * addresses (cuModuleGetGlobal) as arguments: device addresses that a restart
 * must keep. The checksum covers the grid and both globals; the GPU time
 * between the first two events goes to stderr only.
 *
 * A host function on the copy stream, between the copies and the third event,
 * counts the iterations copied: the host checks the count once that event
 * is complete.
 *
 * The second grid, which the sweeps alternate with, is stream-ordered memory:
 * allocated from the device's default pool on the compute stream at the start
 * of each iteration (a copy of the first), freed on it after the sweeps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define NX 256
#define NY 256
#define SWEEPS 8 /* per iteration; even, so the result is back in u */
#define BLOCK 16
/* Out-of-range priorities are clamped to the device's range: these give the
 * compute stream the highest one the device has (lower is higher). */
#define PRIO_COMPUTE -1
#define PRIO_COPY 0

struct solver {
	CUfunction fn;
	CUdeviceptr u, v;
	CUdeviceptr sweeps, max_change; /* module globals */
	CUstream compute, copy;
	CUevent start, done, copied;
	float *grid;     /* pinned: u, read back */
	unsigned *words; /* pinned: [0] stays 0, to clear max_change; [1] max_change read back */
	int nx, ny;
	size_t bytes;
	long copies;     /* host functions run after a copy, in stream order */
	double gpu_ms;
};

static CUdeviceptr global(CUmodule mod, const char *name)
{
	CUdeviceptr ptr;
	size_t size;

	CHECK(cuModuleGetGlobal(&ptr, &size, mod, name));
	if (size != sizeof(unsigned)) {
		fprintf(stderr, "solver: module global %s has %zu bytes, not %zu\n", name, size,
			sizeof(unsigned));
		exit(1);
	}
	return ptr;
}

/* Hot top edge, warm left edge, a pattern inside: many sweeps until it settles. */
static void initial_grid(struct solver *sv)
{
	for (int y = 0; y < sv->ny; y++) {
		for (int x = 0; x < sv->nx; x++) {
			float t = (float)(x * y % 13);

			if (y == 0)
				t = 100.0f;
			else if (x == 0)
				t = 50.0f;
			else if (x == sv->nx - 1 || y == sv->ny - 1)
				t = 0.0f;
			sv->grid[y * sv->nx + x] = t;
		}
	}
}

static void setup(struct solver *sv, CUmodule mod)
{
	sv->nx = NX;
	sv->ny = NY;
	sv->bytes = (size_t)NX * NY * sizeof(float);
	CHECK(cuModuleGetFunction(&sv->fn, mod, "jacobi"));
	sv->sweeps = global(mod, "sweeps");
	sv->max_change = global(mod, "max_change");
	CHECK(cuStreamCreateWithPriority(&sv->compute, CU_STREAM_NON_BLOCKING, PRIO_COMPUTE));
	CHECK(cuStreamCreateWithPriority(&sv->copy, CU_STREAM_NON_BLOCKING, PRIO_COPY));
	CHECK(cuEventCreate(&sv->start, CU_EVENT_DEFAULT));
	CHECK(cuEventCreate(&sv->done, CU_EVENT_DEFAULT));
	CHECK(cuEventCreate(&sv->copied, CU_EVENT_DEFAULT));
	CHECK(cuMemAllocHost((void **)&sv->grid, sv->bytes));
	CHECK(cuMemAllocHost((void **)&sv->words, 2 * sizeof(unsigned)));
	memset(sv->words, 0, 2 * sizeof(unsigned));
	CHECK(cuMemAlloc(&sv->u, sv->bytes));
	initial_grid(sv);
	/* on the compute stream, so the first sweep is ordered after it */
	CHECK(cuMemcpyHtoDAsync(sv->u, sv->grid, sv->bytes, sv->compute));
}

static void sweep_all(struct solver *sv)
{
	unsigned gx = (sv->nx + BLOCK - 1) / BLOCK, gy = (sv->ny + BLOCK - 1) / BLOCK;

	CHECK(cuMemcpyHtoDAsync(sv->max_change, &sv->words[0], sizeof(unsigned), sv->compute));
	CHECK(cuMemAllocAsync(&sv->v, sv->bytes, sv->compute));
	CHECK(cuMemcpyDtoDAsync(sv->v, sv->u, sv->bytes, sv->compute)); /* its boundary too */
	CHECK(cuEventRecord(sv->start, sv->compute));
	for (int k = 0; k < SWEEPS; k++) {
		void *params[] = { &sv->u, &sv->v, &sv->nx, &sv->ny, &sv->sweeps,
				   &sv->max_change };
		CUdeviceptr t;

		CHECK(cuLaunchKernel(sv->fn, gx, gy, 1, BLOCK, BLOCK, 1, 0, sv->compute, params,
				     NULL));
		t = sv->u;
		sv->u = sv->v;
		sv->v = t;
	}
	CHECK(cuEventRecord(sv->done, sv->compute));
	CHECK(cuMemFreeAsync(sv->v, sv->compute)); /* SWEEPS is even: v is the scratch grid */
}

static void CUDA_CB copy_done(void *arg)
{
	((struct solver *)arg)->copies++;
}

static uint64_t step(struct solver *sv, long it)
{
	unsigned sweeps;
	float ms;
	uint64_t h;

	sweep_all(sv);
	CHECK(cuStreamWaitEvent(sv->copy, sv->done, 0));
	CHECK(cuMemcpyDtoHAsync(sv->grid, sv->u, sv->bytes, sv->copy));
	CHECK(cuMemcpyDtoHAsync(&sv->words[1], sv->max_change, sizeof(unsigned), sv->copy));
	CHECK(cuLaunchHostFunc(sv->copy, copy_done, sv));
	CHECK(cuEventRecord(sv->copied, sv->copy));
	CHECK(cuEventSynchronize(sv->copied));
	if (sv->copies != it) {
		fprintf(stderr, "solver: %ld host functions ran after %ld copies\n", sv->copies, it);
		exit(1);
	}
	CHECK(cuEventElapsedTime(&ms, sv->start, sv->done));
	sv->gpu_ms += ms;
	/* both streams are idle now: a synchronous copy sees the last sweep */
	CHECK(cuMemcpyDtoH(&sweeps, sv->sweeps, sizeof(sweeps)));

	h = sample_hash(SAMPLE_HASH_INIT, sv->grid, sv->bytes);
	h = sample_hash(h, &sweeps, sizeof(sweeps));
	return sample_hash(h, &sv->words[1], sizeof(unsigned));
}

static void release(struct solver *sv)
{
	CHECK(cuEventDestroy(sv->start));
	CHECK(cuEventDestroy(sv->done));
	CHECK(cuEventDestroy(sv->copied));
	CHECK(cuStreamDestroy(sv->compute));
	CHECK(cuStreamDestroy(sv->copy));
	CHECK(cuMemFree(sv->u));
	CHECK(cuMemFreeHost(sv->grid));
	CHECK(cuMemFreeHost(sv->words));
}

int main(int argc, char **argv)
{
	struct sample s;
	struct solver sv = { 0 };
	CUmodule mod;

	sample_init(&s, argc, argv, "solver", 0);
	mod = sample_load_module(&s);
	setup(&sv, mod);

	for (long it = 1; it <= s.iters; it++)
		sample_iteration_done(&s, it, step(&sv, it));

	fprintf(stderr, "solver: %ld iterations of %d sweeps, %.3f ms on the GPU\n", s.iters,
		SWEEPS, sv.gpu_ms);
	release(&sv);
	CHECK(cuModuleUnload(mod));
	return sample_finish(&s);
}
