/* SPDX-License-Identifier: MIT */
/*
 * zero_scan.cu - which pieces of device memory hold anything but zeros. The
 * GPU proxy loads it as PTX (cuda/proxy/zero_scan.S) and runs it before a
 * checkpoint copies device memory, so all-zero memory is never copied at
 * all: the GPU reads it at its own memory bandwidth, a thousand times faster
 * than the copy and the host-side check would take.
 *
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
