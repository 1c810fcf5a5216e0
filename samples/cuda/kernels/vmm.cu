/*
 * vmm.cu - the kernel of samples/cuda/vmm.c: x = x * 1664525 + y, in 32-bit
 * words (exact on any device).
 *
 * extern "C": the host program finds the kernel by its plain name.
 * tests/softcuda/sample_kernels.c holds the host version the software device
 * runs; keep the two computing the same thing.
 */

extern "C" __global__ void vmm_step(unsigned *x, const unsigned *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = x[i] * 1664525u + y[i];
}
