/* SPDX-License-Identifier: MIT */
/*
 * solver.cu - the kernel of samples/cuda/solver.c: one Jacobi sweep of the
 * Laplace equation on an nx x ny grid whose border cells stay fixed.
 *
 * Two module globals, which the host finds with cuModuleGetGlobal and passes
 * to every launch (kernel arguments that hold device addresses of globals:
 * they must still be right after a restart):
 *   sweeps      sweeps done since the module was loaded (one add per launch)
 *   max_change  the bits of the largest |v - u| since the host last cleared
 *               it. Non-negative floats order like their bit patterns, so an
 *               integer atomicMax gives the float maximum, and gives it
 *               whatever order the threads run in: the result is repeatable,
 *               which a float atomicAdd of residuals would not be.
 * extern "C" keeps every name plain, as the host looks them up. The host
 * version is in tests/softcuda/sample_kernels.c.
 */

extern "C" {
__device__ unsigned int sweeps;
__device__ unsigned int max_change;
}

extern "C" __global__ void jacobi(const float *u, float *v, int nx, int ny,
				  unsigned int *sweep_count, unsigned int *change_bits)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;
	int i = y * nx + x;
	float next;

	if (x >= nx || y >= ny)
		return;
	if (x == 0 && y == 0)
		atomicAdd(sweep_count, 1u);
	if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
		v[i] = u[i];
		return;
	}
	next = (u[i - 1] + u[i + 1] + u[i - nx] + u[i + nx]) * 0.25f;
	v[i] = next;
	atomicMax(change_bits, __float_as_uint(fabsf(next - u[i])));
}
