/* SPDX-License-Identifier: MIT */
/*
 * managed.c - managed memory (cuMemAllocManaged) that the CPU and the GPU
 * take turns at: an integer stencil on two grids of 512 x 512 words.
 *
 * Each iteration prefetches both grids to the GPU (one batch), launches a stencil step on
 * a stream (the next grid from the last), synchronises the stream, then the
 * CPU changes every fourth row of the new grid in place and hashes all of
 * it, reading the memory at the address the kernel wrote. So the CPU's writes
 * must reach the next launch, and the kernel's the CPU: a checkpoint between
 * them keeps both. All arithmetic is on 32-bit words, exact on any device.
 *
 * Range attributes are asked back every iteration: the advice given at the
 * start and the last prefetch location must survive a restart. The kernel
 * counts its steps in a __managed__ variable that the CPU reads.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#define W 512
#define H 512

/* The CPU's part of iteration @it: every fourth row of @g. */
static void cpu_rows(unsigned *g, long it)
{
	for (int y = 0; y < H; y += 4)
		for (int x = 0; x < W; x++)
			g[y * W + x] ^= (unsigned)it * 2654435761u + (unsigned)(y * W + x);
}

static void check_attributes(CUdeviceptr g, CUdevice dev)
{
	int rm = -1, last = -3;
	unsigned managed = 0;

	CHECK(cuMemRangeGetAttribute(&rm, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, g, W * 4));
	CHECK(cuMemRangeGetAttribute(&last, 4, CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, g,
				     W * H * 4));
	CHECK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, g));
	if (rm != 1 || last != (int)dev || managed != 1) {
		fprintf(stderr, "managed: read-mostly %d (1), last prefetch %d (%d), managed %u (1)\n",
			rm, last, (int)dev, managed);
		exit(1);
	}
}

/* The kernel's count of its steps, in a __managed__ variable the CPU reads. */
static void check_steps(CUdeviceptr steps, long it)
{
	unsigned long long n = *(const unsigned long long *)(uintptr_t)steps;

	if (n != (unsigned long long)it) {
		fprintf(stderr, "managed: the __managed__ count says %llu steps, not %ld\n", n, it);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	struct sample s;
	CUmodule mod;
	CUfunction fn;
	CUstream st;
	CUdeviceptr g[2], steps;
	CUmemLocation here;
	size_t steps_size = 0;
	int w = W, h = H, managed = 0;

	sample_init(&s, argc, argv, "managed", 0);
	CHECK(cuDeviceGetAttribute(&managed, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, s.dev));
	if (!managed) {
		fprintf(stderr, "managed: this device has no managed memory\n");
		return 1;
	}
	here = (CUmemLocation){ CU_MEM_LOCATION_TYPE_DEVICE, (int)s.dev };
	mod = sample_load_module(&s);
	CHECK(cuModuleGetFunction(&fn, mod, "heat_step"));
	CHECK(cuModuleGetGlobal(&steps, &steps_size, mod, "heat_steps"));
	CHECK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	for (int k = 0; k < 2; k++) {
		CHECK(cuMemAllocManaged(&g[k], W * H * 4, CU_MEM_ATTACH_GLOBAL));
		CHECK(cuStreamAttachMemAsync(st, g[k], 0, CU_MEM_ATTACH_GLOBAL));
		CHECK(cuMemAdvise(g[k], W * 4, CU_MEM_ADVISE_SET_READ_MOSTLY, here));
	}
	for (unsigned i = 0; i < W * H; i++)
		((unsigned *)(uintptr_t)g[0])[i] = i * 2246822519u;

	for (long it = 1; it <= s.iters; it++) {
		CUdeviceptr in = g[(it - 1) & 1], out = g[it & 1];
		void *params[] = { &out, &in, &w, &h, &steps };

		CUdeviceptr both[] = { in, out };
		size_t sizes[] = { W * H * 4, W * H * 4 }, first = 0;

		CHECK(cuMemPrefetchBatchAsync(both, sizes, 2, &here, &first, 1, 0, st));
		CHECK(cuLaunchKernel(fn, W / 32, H / 8, 1, 32, 8, 1, 0, st, params, NULL));
		CHECK(cuStreamSynchronize(st));
		cpu_rows((unsigned *)(uintptr_t)out, it);
		check_attributes(out, s.dev);
		check_steps(steps, it);
		sample_iteration_done(&s, it, sample_hash(SAMPLE_HASH_INIT,
							  (const void *)(uintptr_t)out, W * H * 4));
	}

	CHECK(cuMemFree(g[0]));
	CHECK(cuMemFree(g[1]));
	CHECK(cuStreamDestroy(st));
	CHECK(cuModuleUnload(mod));
	return sample_finish(&s);
}
