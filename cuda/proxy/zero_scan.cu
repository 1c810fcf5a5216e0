/* SPDX-License-Identifier: MIT */
/*
 * zero_scan.cu - the proxy's kernels over the program's device memory before
 * a checkpoint copies it: which pieces hold anything but zeros, and the hash
 * of each piece (cuda/shared/piece_hash.h). The GPU proxy loads them as PTX
 * (cuda/proxy/zero_scan.S). The GPU reads memory at its own bandwidth, a
 * thousand times faster than a copy to the host and a check there would take;
 * all-zero pieces are then never copied, unchanged ones never written again.
 */
#include "cuda/shared/piece_hash.h"

/*
 * flags[piece] becomes 1 when a word of the piece is not zero; the caller
 * clears the flags first. Pieces are 2^shift words.
 */
extern "C" __global__ void sc_nonzero(const unsigned long long *data, unsigned long long words,
				      unsigned int shift, unsigned int *flags)
{
	unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;

	for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	     i < words; i += stride)
		if (data[i] && !flags[i >> shift])
			flags[i >> shift] = 1;
}

/* The sum of @v over a warp, in its lane 0. */
__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v)
{
	for (int d = 16; d; d >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, d);
	return v;
}

/*
 * sums[2 piece], sums[2 piece + 1] receive the hash of each piece of 2^shift
 * words; the caller clears them first. Each block takes one chunk of
 * 2^chunk_shift words (chunk_shift <= shift: a chunk lies in one piece), its
 * threads read it in coalesced strides, and it adds its part to its piece's
 * sums with one atomic add each: sums do not depend on the order.
 */
extern "C" __global__ void sc_piece_hash(const unsigned long long *data, unsigned long long words,
					 unsigned int shift, unsigned int chunk_shift,
					 unsigned long long *sums)
{
	__shared__ unsigned long long part[2][32];
	unsigned long long start = (unsigned long long)blockIdx.x << chunk_shift;
	unsigned long long end = start + (1ull << chunk_shift);
	unsigned long long piece = start >> shift, base = piece << shift;
	uint64_t a = 0, b = 0;
	unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;

	if (end > words)
		end = words;
	for (unsigned long long i = start + threadIdx.x; i < end; i += blockDim.x)
		sc_piece_hash_word(data[i], i - base, &a, &b);
	a = warp_sum(a);
	b = warp_sum(b);
	if (!lane) {
		part[0][warp] = a;
		part[1][warp] = b;
	}
	__syncthreads();
	if (warp)
		return;
	a = lane < blockDim.x / 32 ? part[0][lane] : 0;
	b = lane < blockDim.x / 32 ? part[1][lane] : 0;
	a = warp_sum(a);
	b = warp_sum(b);
	if (!lane) {
		atomicAdd(&sums[2 * piece], a);
		atomicAdd(&sums[2 * piece + 1], b);
	}
}
