// SPDX-License-Identifier: MIT
/*
 * rtloop - a CUDA Runtime API program (nvcc's default, static cudart, and
 * -cudart shared): two streams, an event between them, pinned memory, a
 * kernel per iteration. It knows nothing of selfckpt: under selfckpt-run,
 * --save-at finds selfckpt_save() among the loaded symbols.
 *
 *   rtloop [--iters N] [--sleep-ms M] [--save-at I FILE] [--mib S]
 *
 * Prints "iter <i> <checksum>" after each iteration and "done <checksum>":
 * a run and its restored continuation must print the same bytes.
 */
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = (const unsigned char *)p;

	for (size_t k = 0; k < n; k++)
		h = (h ^ b[k]) * 0x100000001b3ull;
	return h;
}

static void checkpoint(const char *path)
{
	int (*save)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "selfckpt_save");
	int ret;

	if (!save) {
		fprintf(stderr, "rtloop: --save-at needs selfckpt (run under selfckpt-run)\n");
		exit(64);
	}
	ret = save(path);
	if (ret == 1)
		fprintf(stderr, "saved\n");
	else if (ret == 2)
		fprintf(stderr, "restored\n");
	else {
		fprintf(stderr, "rtloop: cannot checkpoint into '%s': %d\n", path, ret);
		exit(1);
	}
}

static void pause_ms(unsigned ms)
{
	struct timespec left = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&left, &left) < 0 && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	long iters = 50, save_at = 0, mib = 64;
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
		else if (!strcmp(argv[k], "--save-at") && k + 2 < argc) {
			save_at = atol(argv[++k]);
			save_path = argv[++k];
		} else {
			fprintf(stderr, "usage: rtloop [--iters N] [--sleep-ms M] "
				"[--save-at I FILE] [--mib S]\n");
			return 64;
		}
	}
	size_t n = (size_t)mib << 18, sample = 1 << 16; /* 4-byte words; the part hashed */
	uint32_t *dev, *host;
	cudaStream_t s1, s2;
	cudaEvent_t ev;

	CHECK(cudaMalloc(&dev, n * 4));
	CHECK(cudaMemset(dev, 0, n * 4));
	CHECK(cudaMallocHost(&host, sample * 4));
	CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	for (long i = 1; i <= iters; i++) {
		step<<<256, 256, 0, s1>>>(dev, n, (uint32_t)i);
		CHECK(cudaGetLastError());
		CHECK(cudaEventRecord(ev, s1));
		CHECK(cudaStreamWaitEvent(s2, ev, 0));
		CHECK(cudaMemcpyAsync(host, dev + (i * 7919) % (n - sample), sample * 4,
				      cudaMemcpyDeviceToHost, s2));
		CHECK(cudaStreamSynchronize(s2));
		uint64_t sum = fnv(0xcbf29ce484222325ull, host, sample * 4);

		printf("iter %ld %016llx\n", i, (unsigned long long)sum);
		fflush(stdout);
		total = fnv(total, &sum, sizeof(sum));
		if (i == save_at)
			checkpoint(save_path);
		pause_ms(sleep_ms);
	}
	printf("done %016llx\n", (unsigned long long)total);
	fflush(stdout);
	CHECK(cudaFree(dev));
	CHECK(cudaFreeHost(host));
	return 0;
}
