/* SPDX-License-Identifier: MIT */
/*
 * managed.cu - the kernel of samples/cuda/managed.c: one step of an integer
 * stencil on a w x h grid that wraps around at its edges.
 *
 * extern "C": the host program finds the kernel by its plain name.
 * tests/softcuda/sample_kernels.c holds the host version the software device
 * runs; keep the two computing the same thing.
 */

extern "C" __global__ void heat_step(unsigned *out, const unsigned *in, int w, int h)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;

	if (x >= w || y >= h)
		return;
	out[y * w + x] = in[y * w + x] * 5u + in[y * w + (x + w - 1) % w] +
			 in[y * w + (x + 1) % w] * 3u + in[((y + h - 1) % h) * w + x] * 7u +
			 in[((y + 1) % h) * w + x] * 11u + 1u;
}
