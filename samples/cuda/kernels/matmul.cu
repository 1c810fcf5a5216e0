/* SPDX-License-Identifier: MIT */
/*
 * matmul.cu - the kernels of samples/cuda/matmul.c.
 *
 * mat_mul: c = a * b for n x n row-major matrices, in TILE x TILE blocks that
 * stage their slices of a and b in shared memory. Launch with a TILE x TILE
 * block. The sum runs over k in increasing order, as the host version in
 * tests/softcuda/sample_kernels.c does, so both give the same bits.
 *
 * mat_wrap: a = (c mod 101) - 50. The entries stay integers of at most 50,
 * so every product and partial sum of the next multiplication (at most
 * 256 * 50 * 50) is exact in float. With a prime modulus the matrices repeat
 * only after very many iterations (with 9 they did after 12), so a state
 * restored from the wrong iteration shows.
 */

#define TILE 16

extern "C" __global__ void mat_mul(const float *a, const float *b, float *c, int n)
{
	__shared__ float ta[TILE][TILE];
	__shared__ float tb[TILE][TILE];
	int tx = threadIdx.x, ty = threadIdx.y;
	int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
	float sum = 0.0f;

	for (int t = 0; t < n; t += TILE) {
		ta[ty][tx] = row < n && t + tx < n ? a[row * n + t + tx] : 0.0f;
		tb[ty][tx] = t + ty < n && col < n ? b[(t + ty) * n + col] : 0.0f;
		__syncthreads();
		for (int k = 0; k < TILE; k++)
			sum += ta[ty][k] * tb[k][tx];
		__syncthreads();
	}
	if (row < n && col < n)
		c[row * n + col] = sum;
}

extern "C" __global__ void mat_wrap(float *a, const float *c, int count)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < count)
		a[i] = (float)(((int)c[i] % 101 + 101) % 101 - 50);
}
