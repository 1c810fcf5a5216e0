/* SPDX-License-Identifier: MIT */
/*
 * vecadd.c - the smallest CUDA sample: c = a + b on 2^20 floats, the module
 * loaded from a file with cuModuleLoad().
 *
 * Each iteration adds b into the running vector (the output becomes the next
 * input), copies the result back and prints its checksum, so the device
 * memory carries the state a checkpoint must keep. All values are multiples
 * of 1/4 well below 2^22: every sum is exact, on any device.
 *
 * The block size is the driver's choice (cuOccupancyMaxPotentialBlockSize,
 * with a shared-memory function of the program's), asked again each
 * iteration: a restored run must get the answer the first run got. The
 * kernel is launched with cuLaunchKernelEx, in clusters of two blocks, at a
 * launch priority, with an event recorded as the launch completes; how many
 * such clusters the device holds at once must not change either.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#define N (1 << 20)

/* This kernel uses no shared memory, whatever its block size. */
static size_t no_shared_memory(int block_size)
{
	(void)block_size;
	return 0;
}

/* The block size for @fn, which must be what it was at the start (@block, @grid_min). */
static int occupancy_block(CUfunction fn, int *block, int *grid_min)
{
	int b, g;

	CHECK(cuOccupancyMaxPotentialBlockSize(&g, &b, fn, no_shared_memory, 0, 0));
	if (*block && (b != *block || g != *grid_min)) {
		fprintf(stderr, "vecadd: the driver's block size is %d (grid %d), was %d (grid %d)\n",
			b, g, *block, *grid_min);
		exit(1);
	}
	*block = b;
	*grid_min = g;
	return b;
}

/* c = a + b over @n floats: clusters of 2 blocks where the grid allows, @done when complete. */
static void launch_add(CUfunction fn, int bs, CUevent done, void **params)
{
	unsigned grid = (N + (unsigned)bs - 1) / (unsigned)bs;
	CUlaunchAttribute attrs[] = {
		{ .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
		  .value.clusterDim = { grid % 2 ? 1 : 2, 1, 1 } },
		{ .id = CU_LAUNCH_ATTRIBUTE_PRIORITY, .value.priority = 0 },
		{ .id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT,
		  .value.launchCompletionEvent = { done, 0 } },
	};
	CUlaunchConfig c = { grid, 1, 1, (unsigned)bs, 1, 1, 0, NULL, attrs, 3 };
	static int clusters_first;
	int clusters;

	/* the clusters the device holds at once: the same answer, restored or not */
	CHECK(cuOccupancyMaxActiveClusters(&clusters, fn, &c));
	if (clusters < 1 || (clusters_first && clusters != clusters_first)) {
		fprintf(stderr, "vecadd: %d clusters at once, %d at the start\n", clusters,
			clusters_first);
		exit(1);
	}
	clusters_first = clusters;
	CHECK(cuLaunchKernelEx(&c, fn, params, NULL));
}

int main(int argc, char **argv)
{
	struct sample s;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr a, b, c;
	CUevent done;
	size_t bytes = N * sizeof(float);
	float *host = malloc(bytes), *step = malloc(bytes);
	int n = N, block = 0, grid_min = 0;

	if (!host || !step) {
		fprintf(stderr, "vecadd: out of memory\n");
		return 1;
	}
	sample_init(&s, argc, argv, "vecadd", 0);
	mod = sample_load_module(&s);
	CHECK(cuModuleGetFunction(&fn, mod, "vec_add"));
	occupancy_block(fn, &block, &grid_min);

	for (int i = 0; i < N; i++) {
		host[i] = (float)(i % 1000) * 0.5f;
		step[i] = (float)(i % 7) * 0.25f - 0.75f;
	}
	CHECK(cuMemAlloc(&a, bytes));
	CHECK(cuMemAlloc(&b, bytes));
	CHECK(cuMemAlloc(&c, bytes));
	CHECK(cuMemcpyHtoD(a, host, bytes));
	CHECK(cuMemcpyHtoD(b, step, bytes));
	CHECK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));

	for (long it = 1; it <= s.iters; it++) {
		void *params[] = { &a, &b, &c, &n };
		CUdeviceptr t;

		int bs = occupancy_block(fn, &block, &grid_min);

		launch_add(fn, bs, done, params);
		CHECK(cuEventSynchronize(done));
		CHECK(cuMemcpyDtoH(host, c, bytes));
		t = a; /* the sum is the next iteration's a */
		a = c;
		c = t;
		sample_iteration_done(&s, it, sample_hash(SAMPLE_HASH_INIT, host, bytes));
	}

	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
	CHECK(cuMemFree(c));
	CHECK(cuModuleUnload(mod));
	free(host);
	free(step);
	return sample_finish(&s);
}
