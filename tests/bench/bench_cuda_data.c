/* SPDX-License-Identifier: MIT */
/*
 * bench_cuda_data.c - the benchmarks' device memory (see bench_cuda_data.h).
 *
 * Piece i starts at word i * BENCH_GPU_PIECE_MAX / 8 of the whole; the fill's
 * seed and the checksum's salt are offset by that word, so every word gets the
 * value and the weight of its place in the whole.
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "tests/bench/bench_cuda_data.h"

#define SEED 0x5e1fc4c9d2a1b3f7ull
#define MIX_K 0x9e3779b97f4a7c15ull /* bench_kernels.cu's */
#define BLOCKS 1024u
#define BLOCK 256u

CUresult bench_gpu_alloc(struct bench_gpu_data *d, CUmodule mod, uint64_t bytes)
{
	CUresult res;

	memset(d, 0, sizeof(*d));
	if (bytes % 8 || (bytes + BENCH_GPU_PIECE_MAX - 1) / BENCH_GPU_PIECE_MAX >
				 BENCH_GPU_MAX_PIECES)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = cuModuleGetFunction(&d->fill, mod, "bench_fill")) != CUDA_SUCCESS ||
	    (res = cuModuleGetFunction(&d->checksum, mod, "bench_checksum")) != CUDA_SUCCESS ||
	    (res = cuMemAlloc(&d->sum, sizeof(uint64_t))) != CUDA_SUCCESS)
		return res;
	d->bytes = bytes;
	for (uint64_t off = 0; off < bytes; off += BENCH_GPU_PIECE_MAX) {
		d->len[d->n] = bytes - off < BENCH_GPU_PIECE_MAX ? bytes - off : BENCH_GPU_PIECE_MAX;
		if ((res = cuMemAlloc(&d->piece[d->n], d->len[d->n])) != CUDA_SUCCESS)
			return res;
		d->n++;
	}
	return CUDA_SUCCESS;
}

CUresult bench_gpu_fill(struct bench_gpu_data *d, bool random)
{
	CUresult res = CUDA_SUCCESS;

	for (unsigned i = 0; i < d->n && res == CUDA_SUCCESS; i++) {
		unsigned long long words = d->len[i] / 8;
		unsigned long long seed = SEED + (unsigned long long)i *
							 (BENCH_GPU_PIECE_MAX / 8) * MIX_K;
		void *params[] = { &d->piece[i], &words, &seed };

		if (random)
			res = cuLaunchKernel(d->fill, BLOCKS, 1, 1, BLOCK, 1, 1, 0, NULL, params,
					     NULL);
		else
			res = cuMemsetD8(d->piece[i], 0, d->len[i]);
	}
	return res != CUDA_SUCCESS ? res : cuCtxSynchronize();
}

CUresult bench_gpu_checksum(struct bench_gpu_data *d, uint64_t *sum)
{
	unsigned long long s = 0;
	CUresult res = cuMemsetD8(d->sum, 0, sizeof(s));

	for (unsigned i = 0; i < d->n && res == CUDA_SUCCESS; i++) {
		unsigned long long words = d->len[i] / 8;
		unsigned long long salt = (unsigned long long)i * (BENCH_GPU_PIECE_MAX / 8);
		void *params[] = { &d->piece[i], &words, &salt, &d->sum };

		res = cuLaunchKernel(d->checksum, BLOCKS, 1, 1, BLOCK, 1, 1, 0, NULL, params, NULL);
	}
	if (res == CUDA_SUCCESS)
		res = cuMemcpyDtoH(&s, d->sum, sizeof(s));
	*sum = s;
	return res;
}

CUresult bench_gpu_free(struct bench_gpu_data *d)
{
	CUresult res = CUDA_SUCCESS, r;

	for (unsigned i = 0; i < d->n; i++)
		if ((r = cuMemFree(d->piece[i])) != CUDA_SUCCESS)
			res = r;
	if (d->sum && (r = cuMemFree(d->sum)) != CUDA_SUCCESS)
		res = r;
	d->n = 0;
	d->sum = 0;
	return res;
}

int bench_gpu_paths(struct bench_gpu_paths *p, double bytes)
{
	char self[PATH_MAX], *dir;
	struct statvfs sv;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0)
		return -1;
	self[n] = 0;
	snprintf(p->self, sizeof(p->self), "%s", self);
	dir = dirname(self);
	snprintf(p->restore, sizeof(p->restore), "%.4000s/../bin/selfckpt-restore", dir);
	if (!p->module[0])
		snprintf(p->module, sizeof(p->module), "%.4000s/bench_kernels.fatbin", dir);
	if (p->dir[0])
		return 0;
	if (statvfs("/dev/shm", &sv) == 0 && (double)sv.f_bavail * (double)sv.f_frsize > bytes)
		snprintf(p->dir, sizeof(p->dir), "/dev/shm");
	else
		snprintf(p->dir, sizeof(p->dir), "%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	return 0;
}

void bench_gpu_check(CUresult res, const char *who, const char *call, int line)
{
	const char *name = NULL;

	if (res == CUDA_SUCCESS)
		return;
	if (cuGetErrorName(res, &name) != CUDA_SUCCESS || !name)
		name = "unknown error";
	fprintf(stderr, "%s: %s failed: %s (%d) at line %d\n", who, call, name, (int)res, line);
	exit(1);
}
