/* SPDX-License-Identifier: MIT */
/*
 * bench_cuda_native_target.c - the process bench-cuda-ckpt checkpoints with
 * NVIDIA's driver checkpoint (cuCheckpointProcess*): an ordinary CUDA program,
 * linked with the driver's libcuda, that knows nothing of selfckpt.
 *
 *   bench-cuda-native-target BYTES MODULE
 *
 * It allocates BYTES of device memory with cuMemAlloc() and fills it with
 * bench-cuda-ckpt's noise (bench_cuda_data.c: the same bytes its subject
 * holds), checksums it and prints "ready CHECKSUM". Then it reads commands on
 * its standard input, one a line, and answers each on its standard output:
 *
 *   stamp    synchronise the context, then print "stamp NS", CLOCK_REALTIME
 *            in nanoseconds (bench-cuda-ckpt times a restart up to this line)
 *   verify   checksum the device memory again: "ok CHECKSUM", or
 *            "bad CHECKSUM expected CHECKSUM"
 *   quit     exit 0 (so does the end of the input)
 *
 * Between commands it makes no CUDA call, so a driver lock finds it idle.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#include "tests/bench/bench_cuda_data.h"

#define EXIT_USAGE 64

#define CHECK(call) bench_gpu_check((call), "bench-cuda-native-target", #call, __LINE__)

static long long realtime_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return t.tv_sec * 1000000000ll + t.tv_nsec;
}

static void serve(struct bench_gpu_data *d, uint64_t want)
{
	char line[64];

	while (fgets(line, sizeof(line), stdin)) {
		uint64_t got;

		if (!strcmp(line, "quit\n"))
			break;
		if (!strcmp(line, "stamp\n")) {
			CHECK(cuCtxSynchronize());
			printf("stamp %lld\n", realtime_ns());
		} else if (strcmp(line, "verify\n")) {
			printf("unknown command\n");
		} else {
			CHECK(bench_gpu_checksum(d, &got));
			if (got == want)
				printf("ok %016llx\n", (unsigned long long)got);
			else
				printf("bad %016llx expected %016llx\n", (unsigned long long)got,
				       (unsigned long long)want);
		}
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	static struct bench_gpu_data d;
	unsigned long long bytes = 0;
	uint64_t want;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	char *end = NULL;

	if (argc == 3) {
		errno = 0;
		bytes = strtoull(argv[1], &end, 10);
	}
	if (argc != 3 || errno || *end || bytes % 8) {
		fprintf(stderr, "usage: bench-cuda-native-target BYTES MODULE\n"
				"  BYTES: a multiple of 8 (bench-cuda-ckpt starts this program)\n");
		return EXIT_USAGE;
	}
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuModuleLoad(&mod, argv[2]));
	CHECK(bench_gpu_alloc(&d, mod, bytes));
	CHECK(bench_gpu_fill(&d, true));
	CHECK(bench_gpu_checksum(&d, &want));
	printf("ready %016llx\n", (unsigned long long)want);
	fflush(stdout);
	serve(&d, want);
	CHECK(bench_gpu_free(&d));
	CHECK(cuModuleUnload(mod));
	CHECK(cuDevicePrimaryCtxRelease(dev));
	return 0;
}
