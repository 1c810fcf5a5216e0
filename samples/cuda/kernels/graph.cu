/*
 * graph.cu - the kernels of samples/cuda/graph.c, in 32-bit words (exact on
 * any device).
 *
 * extern "C": the host program finds the kernels by their plain names.
 * tests/softcuda/sample_kernels.c holds the host versions the software
 * device runs; keep the two computing the same thing.
 */

/* y[i] = x[i] * 1664525 + x[i + 1] (wrapping) + salt */
extern "C" __global__ void graph_step(const unsigned *x, unsigned *y, int n, unsigned salt)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] = x[i] * 1664525u + x[(i + 1) % n] + salt;
}

/* out[i] = x[i] ^ (y[i] * 2654435761) */
extern "C" __global__ void graph_mix(const unsigned *x, const unsigned *y, unsigned *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = x[i] ^ (y[i] * 2654435761u);
}
