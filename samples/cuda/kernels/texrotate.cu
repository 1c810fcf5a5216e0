/* SPDX-License-Identifier: MIT */
/*
 * texrotate.cu - the kernel of samples/cuda/texrotate.c: rotate an image read
 * through a texture object into linear memory.
 *
 * The texture reads a one-channel float CUDA array with point filtering,
 * clamped, unnormalised coordinates. The rotation is done in 16.16 fixed
 * point so that the texel each output pixel takes is decided by integers
 * alone: the host version in tests/softcuda/sample_kernels.c picks the same.
 */

/* floor(v / 65536) for any sign, without relying on how >> treats negatives */
__device__ static int floor_q16(int v)
{
	return v >= 0 ? v >> 16 : -((-v + 0xffff) >> 16);
}

/* out(x, y) = in(R(-angle) (x, y)) about the centre; cos_q, sin_q in 16.16 */
extern "C" __global__ void rotate(cudaTextureObject_t tex, float *out, int w, int h,
				  int cos_q, int sin_q)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x;
	int y = blockIdx.y * blockDim.y + threadIdx.y;

	if (x >= w || y >= h)
		return;

	int dx = x - w / 2, dy = y - h / 2;
	int sx = w / 2 + floor_q16(dx * cos_q + dy * sin_q);
	int sy = h / 2 + floor_q16(dy * cos_q - dx * sin_q);

	/* the texel centre: point filtering takes texel floor(coordinate) */
	out[y * w + x] = tex2D<float>(tex, sx + 0.5f, sy + 0.5f);
}
