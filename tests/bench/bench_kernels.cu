/* SPDX-License-Identifier: MIT */
/*
 * bench_kernels.cu - the kernels of the GPU benchmarks (bench-cuda,
 * bench-cuda-ckpt, bench-cuda-native-target), built into one fatbin.
 *
 * bench_fill:     p[i] = mix(seed + i): 8 bytes of noise per word, which no
 *                 compressor shrinks; the same seed gives the same bytes on
 *                 any device, so two programs can hold the same data.
 * bench_checksum: *sum += sum over i of mix(p[i] ^ (salt + i) * K), mod 2^64.
 *                 Addition commutes, so the value does not depend on the
 *                 order the threads finish in; the index in each term makes a
 *                 word in the wrong place show. Clear *sum before the first
 *                 launch; several launches over the pieces of one data set
 *                 (each with its own salt) add up to its checksum.
 * bench_compute:  @iters rounds of eight independent chains of fused
 *                 multiply-adds per thread: bound by arithmetic, not memory.
 * bench_empty:    nothing, for launch rates.
 * bench_stencil:  out = the five-point average of in, on a w x h grid whose
 *                 edges stay as they are; one thread a point.
 * bench_items:    resumable items (selfckpt_kernel.h) of a given number of
 *                 clock cycles each.
 *
 * The host versions for the software device (bench_kernels_soft.c) compute
 * the same values for bench_fill and bench_checksum.
 */

#include "selfckpt_kernel.h"

#define MIX_K 0x9e3779b97f4a7c15ull

/* splitmix64's finaliser */
__device__ __forceinline__ unsigned long long mix(unsigned long long x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

extern "C" __global__ void bench_fill(unsigned long long *p, unsigned long long n,
				      unsigned long long seed)
{
	unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;

	for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	     i < n; i += stride)
		p[i] = mix(seed + i * MIX_K);
}

extern "C" __global__ void bench_checksum(const unsigned long long *p, unsigned long long n,
					  unsigned long long salt, unsigned long long *sum)
{
	__shared__ unsigned long long warp_sums[32];
	unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x, acc = 0;
	unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;

	for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	     i < n; i += stride)
		acc += mix(p[i] ^ ((salt + i) * MIX_K));
	for (int d = 16; d > 0; d /= 2)
		acc += __shfl_down_sync(0xffffffffu, acc, d);
	if (lane == 0)
		warp_sums[warp] = acc;
	__syncthreads();
	if (warp == 0) {
		acc = lane < (blockDim.x + 31) / 32 ? warp_sums[lane] : 0;
		for (int d = 16; d > 0; d /= 2)
			acc += __shfl_down_sync(0xffffffffu, acc, d);
		if (lane == 0)
			atomicAdd(sum, acc);
	}
}

extern "C" __global__ void bench_compute(float *out, int iters)
{
	unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
	float a = 1.0f + 1e-7f * (float)(t & 1023), b = 0.999999f;
	float x0 = (float)t * 1e-9f, x1 = x0 + 1.0f, x2 = x0 + 2.0f, x3 = x0 + 3.0f;
	float x4 = x0 + 4.0f, x5 = x0 + 5.0f, x6 = x0 + 6.0f, x7 = x0 + 7.0f;

	for (int i = 0; i < iters; i++) {
		x0 = fmaf(x0, a, b);
		x1 = fmaf(x1, a, b);
		x2 = fmaf(x2, a, b);
		x3 = fmaf(x3, a, b);
		x4 = fmaf(x4, a, b);
		x5 = fmaf(x5, a, b);
		x6 = fmaf(x6, a, b);
		x7 = fmaf(x7, a, b);
	}
	/* one store keeps the chains alive */
	out[t] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}

extern "C" __global__ void bench_empty(void)
{
}

extern "C" __global__ void bench_stencil(float *out, const float *in, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
	int i = y * w + x;

	if (x >= w || y >= h)
		return;
	if (x == 0 || y == 0 || x == w - 1 || y == h - 1)
		out[i] = in[i];
	else
		out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
}

/*
 * bench_items: items of @cycles clock cycles each, taken as resumable
 * launches take them (selfckpt_kernel.h); out[item] = mix(item) once done.
 */
extern "C" __global__ void bench_items(unsigned long long *out, long long cycles,
				       struct selfckpt_work *work)
{
	SELFCKPT_FOR_EACH_ITEM(work, item) {
		long long start = clock64();

		while (clock64() - start < cycles)
			;
		if (threadIdx.x == 0)
			out[item] = mix(item);
	}
}
