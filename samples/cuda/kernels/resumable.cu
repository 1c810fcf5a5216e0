/* SPDX-License-Identifier: MIT */
/*
 * resumable.cu - the kernel of samples/cuda/resumable.c, written to be
 * interrupted by a checkpoint (selfckpt_kernel.h): each block takes rows of
 * the grid, one at a time, until none is left or a checkpoint waits.
 *
 * A row's new words depend only on the old grid: rows may be done in any
 * order, by any block, in one launch or several. Integer arithmetic only:
 * exact on any device. tests/softcuda/sample_kernels.c holds the host
 * version the software device runs; keep the two computing the same thing.
 */
#include "selfckpt_kernel.h"

__device__ unsigned mix(unsigned x, int rounds)
{
	for (int r = 0; r < rounds; r++) {
		x = x * 0x9e3779b1u + 0x7f4a7c15u;
		x ^= x >> 15;
	}
	return x;
}

extern "C" __global__ void mix_rows(const unsigned *in, unsigned *out, int w, int h, int rounds,
				    struct selfckpt_work *work)
{
	SELFCKPT_FOR_EACH_ITEM(work, row) {
		int y = (int)row;

		for (int x = threadIdx.x; x < w; x += blockDim.x) {
			unsigned right = in[y * w + (x + 1) % w];
			unsigned v = in[y * w + x] ^ (right << 7 | right >> 25) ^
				     in[((y + 1) % h) * w + x];

			out[y * w + x] = mix(v, rounds);
		}
	}
}
