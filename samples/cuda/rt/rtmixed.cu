// SPDX-License-Identifier: MIT
/*
 * rtmixed - a CUDA program that uses both APIs at once (nvcc's default,
 * static cudart, and -cudart shared): the Runtime API makes the device, its
 * primary context, the memory, the streams and the event; the Driver API
 * loads the kernels' module (rtmixed_kernels.cu, a fatbin linked into the
 * program), launches them on the Runtime API's stream and owns a buffer of
 * its own (cuMemAlloc) that the kernels read and write and that it copies
 * back itself. Both APIs must meet in the one context: under selfckpt-run it
 * runs with --cuda=driver, so that its Driver API calls reach the driver and
 * the driver's process checkpoint saves the whole. It knows nothing of
 * selfckpt: --save-at finds selfckpt_save() among the loaded symbols.
 *
 *   rtmixed [--iters N] [--sleep-ms M] [--save-at I FILE] [--mib S]
 *
 * Prints "iter <i> <checksum>" after each iteration and "done <checksum>":
 * a run and its restored continuation must print the same bytes.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_common.h"

#define CHECK(call) check((call), #call, __LINE__)

/* embed.S: the fatbin of rtmixed_kernels.cu, linked in */
extern "C" const unsigned char sample_fatbin[];

static const char *source(void)
{
	const char *slash = strrchr(__FILE__, '/');

	return slash ? slash + 1 : __FILE__;
}

static void check(cudaError_t e, const char *call, int line)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "rtmixed: %s failed at %s:%d: %s\n", call, source(), line,
			cudaGetErrorName(e));
		exit(1);
	}
}

static void check(CUresult r, const char *call, int line)
{
	const char *name = NULL;

	if (r != CUDA_SUCCESS) {
		if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
			name = "an error the driver does not name";
		fprintf(stderr, "rtmixed: %s failed at %s:%d: %s (%d)\n", call, source(), line,
			name, (int)r);
		exit(1);
	}
}

static const size_t sample_words = 1 << 16; /* the part of the buffer hashed each iteration */
static const unsigned int salt_words = 256; /* the Driver API's table */
static const unsigned int block = 256;

/* What each API made: cudart's memory, streams and event; the driver's module and table. */
struct mixed {
	uint32_t *dev, *host; /* cudaMalloc, cudaMallocHost */
	size_t n;
	cudaStream_t s1, s2;
	cudaEvent_t ev;
	CUcontext ctx; /* cudart's primary context, as the driver sees it */
	CUmodule mod;
	CUfunction step, stir;
	CUdeviceptr salt;    /* cuMemAlloc */
	uint32_t *host_salt; /* cudaMallocHost, filled by cuMemcpyDtoHAsync */
};

/* The Runtime API's part: the device, memory, pinned buffers, streams, an event. */
static void runtime_init(struct mixed *m, size_t n)
{
	m->n = n;
	CHECK(cudaSetDevice(0));
	CHECK(cudaMalloc(&m->dev, n * 4));
	CHECK(cudaMemset(m->dev, 0, n * 4));
	CHECK(cudaMallocHost(&m->host, sample_words * 4));
	CHECK(cudaMallocHost(&m->host_salt, salt_words * 4));
	CHECK(cudaStreamCreateWithFlags(&m->s1, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&m->s2, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&m->ev, cudaEventDisableTiming));
}

/* The Driver API's part, in the context cudart made current: the module, its kernels, the table. */
static void driver_init(struct mixed *m)
{
	uint32_t init[salt_words];

	CHECK(cuCtxGetCurrent(&m->ctx));
	if (!m->ctx) {
		fprintf(stderr, "rtmixed: no current context after cudaSetDevice(0)\n");
		exit(1);
	}
	CHECK(cuModuleLoadData(&m->mod, sample_fatbin));
	CHECK(cuModuleGetFunction(&m->step, m->mod, "mix_step"));
	CHECK(cuModuleGetFunction(&m->stir, m->mod, "mix_stir"));
	for (unsigned int k = 0; k < salt_words; k++)
		init[k] = k * 2246822519u + 1;
	CHECK(cuMemAlloc(&m->salt, salt_words * 4));
	CHECK(cuMemcpyHtoD(m->salt, init, salt_words * 4));
}

/* The two kernels, launched by the driver on cudart's first stream. */
static void launch(struct mixed *m, uint32_t i)
{
	unsigned long long n = m->n;
	unsigned int words = salt_words;
	void *step_params[] = { &m->dev, &n, &m->salt, &words, &i };
	void *stir_params[] = { &m->salt, &words, &m->dev, &n, &i };

	CHECK(cuLaunchKernel(m->step, 256, 1, 1, block, 1, 1, 0, (CUstream)m->s1, step_params,
			     NULL));
	CHECK(cuLaunchKernel(m->stir, (salt_words + block - 1) / block, 1, 1, block, 1, 1, 0,
			     (CUstream)m->s1, stir_params, NULL));
}

/*
 * Iteration @i: the kernels, an event, then on the other stream a part of the
 * buffer (cudart's copy) and the table (the driver's copy); a hash of both.
 */
static uint64_t mixed_step(struct mixed *m, long i)
{
	launch(m, (uint32_t)i);
	CHECK(cudaEventRecord(m->ev, m->s1));
	CHECK(cudaStreamWaitEvent(m->s2, m->ev, 0));
	CHECK(cudaMemcpyAsync(m->host, m->dev + (i * 7919) % (m->n - sample_words),
			      sample_words * 4, cudaMemcpyDeviceToHost, m->s2));
	CHECK(cuMemcpyDtoHAsync(m->host_salt, m->salt, salt_words * 4, (CUstream)m->s2));
	CHECK(cudaStreamSynchronize(m->s2));
	return fnv(fnv(0xcbf29ce484222325ull, m->host, sample_words * 4), m->host_salt,
		   salt_words * 4);
}

/* Each API frees what it made. */
static void mixed_free(struct mixed *m)
{
	CHECK(cuMemFree(m->salt));
	CHECK(cuModuleUnload(m->mod));
	CHECK(cudaEventDestroy(m->ev));
	CHECK(cudaStreamDestroy(m->s2));
	CHECK(cudaStreamDestroy(m->s1));
	CHECK(cudaFreeHost(m->host_salt));
	CHECK(cudaFreeHost(m->host));
	CHECK(cudaFree(m->dev));
}

int main(int argc, char **argv)
{
	long iters = 50, save_at = 0, mib = 64;
	unsigned sleep_ms = 40;
	const char *save_path = NULL;
	uint64_t total = 0xcbf29ce484222325ull;
	struct mixed m;
	size_t words;

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
			fprintf(stderr, "usage: rtmixed [--iters N] [--sleep-ms M] "
				"[--save-at I FILE] [--mib S]\n");
			return 64;
		}
	}
	if (mib < 1) {
		fprintf(stderr, "rtmixed: --mib is at least 1\n");
		return 64;
	}
	words = (size_t)mib << 18; /* 4-byte words */
	runtime_init(&m, words < 2 * sample_words ? 2 * sample_words : words);
	driver_init(&m);
	for (long i = 1; i <= iters; i++) {
		uint64_t sum = mixed_step(&m, i);

		printf("iter %ld %016llx\n", i, (unsigned long long)sum);
		fflush(stdout);
		total = fnv(total, &sum, sizeof(sum));
		if (i == save_at)
			checkpoint("rtmixed", save_path);
		pause_ms(sleep_ms);
	}
	printf("done %016llx\n", (unsigned long long)total);
	fflush(stdout);
	mixed_free(&m);
	return 0;
}
