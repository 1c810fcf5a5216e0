/* SPDX-License-Identifier: MIT */
/*
 * managed.cu - the kernel of samples/cuda/managed.c: one step of an integer
 * stencil on a w x h grid that wraps around at its edges, counted in a
 * __managed__ variable (passed by address: the software device's kernels
 * cannot name a symbol).
 *
 * extern "C": the host program finds the kernel by its plain name.
 * tests/softcuda/sample_kernels.c holds the host version the software device
 * runs; keep the two computing the same thing.
 */

/* Steps taken: a __managed__ variable, which the host reads through cuModuleGetGlobal. */
__managed__ unsigned long long heat_steps;

extern "C" __global__ void heat_step(unsigned *out, const unsigned *in, int w, int h,
				     unsigned long long *steps)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;

	if (x >= w || y >= h)
		return;
	if (x == 0 && y == 0)
		*steps += 1;
	out[y * w + x] = in[y * w + x] * 5u + in[y * w + (x + w - 1) % w] +
			 in[y * w + (x + 1) % w] * 3u + in[((y + h - 1) % h) * w + x] * 7u +
			 in[((y + 1) % h) * w + x] * 11u + 1u;
}
