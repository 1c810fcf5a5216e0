/*
 * peer.cu - the kernel of samples/cuda/peer.c: x[i] = x[i] * 1664525 + y[(i + 7) % n],
 * in 32-bit words (exact on any device), where y may be another device's memory.
 *
 * extern "C": the host program finds the kernel by its plain name.
 * tests/softcuda/sample_kernels.c holds the host version the software device
 * runs; keep the two computing the same thing.
 */

extern "C" __global__ void peer_mix(unsigned *x, const unsigned *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = x[i] * 1664525u + y[(i + 7) % n];
}
