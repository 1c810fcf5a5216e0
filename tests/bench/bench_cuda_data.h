/* SPDX-License-Identifier: MIT */
/*
 * bench_cuda_data.h - the device memory the GPU checkpoint benchmarks hold:
 * allocated in pieces of at most 1 GiB, filled with noise from a fixed seed
 * or with zeros, and checksummed, all by the kernels of bench_kernels.cu.
 *
 * The bytes depend only on the size, never on how it is cut into pieces, so
 * bench-cuda-ckpt's subject (through libselfckpt) and
 * bench-cuda-native-target (through the driver's libcuda) hold the same data
 * and print the same checksum. The functions call the Driver API by its plain
 * names: which library answers is the program's choice at link time.
 */
#ifndef SC_BENCH_CUDA_DATA_H
#define SC_BENCH_CUDA_DATA_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include <cuda.h>

#define BENCH_GPU_PIECE_MAX (1ull << 30)
#define BENCH_GPU_MAX_PIECES 1024u

struct bench_gpu_data {
	uint64_t bytes;
	unsigned n;                 /* pieces */
	CUdeviceptr piece[BENCH_GPU_MAX_PIECES];
	uint64_t len[BENCH_GPU_MAX_PIECES];
	CUdeviceptr sum;            /* 8 bytes the checksum adds up in */
	CUfunction fill, checksum;  /* bench_fill, bench_checksum */
};

/*
 * bench_gpu_alloc() - look the kernels up in @mod and cuMemAlloc() @bytes (a
 * multiple of 8; 0 allocates only the checksum's 8 bytes) in pieces.
 *
 * Return: CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE for a bad size, or what the
 * failed call returned.
 */
CUresult bench_gpu_alloc(struct bench_gpu_data *d, CUmodule mod, uint64_t bytes);

/*
 * bench_gpu_fill() - noise from the fixed seed (@random) or zeros
 * (cuMemsetD8), then cuCtxSynchronize().
 */
CUresult bench_gpu_fill(struct bench_gpu_data *d, bool random);

/* bench_gpu_checksum() - the checksum of all the pieces into *@sum (synchronous). */
CUresult bench_gpu_checksum(struct bench_gpu_data *d, uint64_t *sum);

/* bench_gpu_free() - cuMemFree() of everything bench_gpu_alloc() allocated. */
CUresult bench_gpu_free(struct bench_gpu_data *d);

/*
 * bench_gpu_check() - nothing where @res is CUDA_SUCCESS; else say that @call
 * (at @line) failed in @who, with the result's name, and exit(1).
 */
void bench_gpu_check(CUresult res, const char *who, const char *call, int line);

/* Where a GPU benchmark that restarts its subject finds what it runs, and puts its images. */
struct bench_gpu_paths {
	char self[PATH_MAX];    /* this program */
	char restore[PATH_MAX]; /* selfckpt-restore, in ../bin next to it */
	char module[PATH_MAX];  /* the kernels, bench_kernels.fatbin next to it, unless set */
	char dir[PATH_MAX];     /* the images: unless set, /dev/shm where they fit, else
				 * $TMPDIR or /tmp */
};

/*
 * bench_gpu_paths() - fill what @p leaves empty, for images of about @bytes.
 * Return: 0, or -1 where this program's path cannot be read.
 */
int bench_gpu_paths(struct bench_gpu_paths *p, double bytes);

#endif /* SC_BENCH_CUDA_DATA_H */
