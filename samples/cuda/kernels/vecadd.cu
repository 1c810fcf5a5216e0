/* SPDX-License-Identifier: MIT */
/*
 * vecadd.cu - the kernel of samples/cuda/vecadd.c: c = a + b.
 *
 * extern "C": the host program finds the kernel by its plain name.
 * tests/softcuda/sample_kernels.c holds the host version the software device
 * runs; keep the two computing the same thing.
 */

extern "C" __global__ void vec_add(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}
