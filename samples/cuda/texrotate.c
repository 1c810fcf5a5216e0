/* SPDX-License-Identifier: MIT */
/*
 * texrotate.c - rotate an image through a CUDA array and a texture object.
 *
 * The image lives in a 384 x 256 one-channel float CUDA array, filled with
 * cuMemcpy2D(). Each iteration a kernel reads it through a texture object
 * (point filtering, clamped), writes it turned by 15 degrees into linear
 * memory, which is copied back with cuMemcpyDtoH() for the checksum and into
 * the array again with cuMemcpy2D(): the next iteration turns the turned
 * image. A restored process needs the array's contents and the texture
 * object's value back.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#define W 384
#define H 256
#define BLOCK_X 16
#define BLOCK_Y 16
/* cos and sin of 15 degrees in 16.16 fixed point, rounded */
#define COS_Q16 63302
#define SIN_Q16 16962

struct image {
	CUarray array;
	CUtexObject tex;
	CUdeviceptr out;
	float *host;
	size_t bytes;
};

/* The whole image between linear memory (host or device) and the array. */
static void copy_to_array(struct image *img, CUmemorytype from, const void *host,
			  CUdeviceptr dev)
{
	CUDA_MEMCPY2D m = {
		.srcMemoryType = from,
		.srcHost = host,
		.srcDevice = dev,
		.srcPitch = W * sizeof(float),
		.dstMemoryType = CU_MEMORYTYPE_ARRAY,
		.dstArray = img->array,
		.WidthInBytes = W * sizeof(float),
		.Height = H,
	};

	CHECK(cuMemcpy2D(&m));
}

/* A checkerboard of 16-pixel squares with a ramp in it: every turn shows. */
static void setup(struct image *img)
{
	CUDA_ARRAY_DESCRIPTOR ad = {
		.Width = W, .Height = H, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1,
	};
	CUDA_RESOURCE_DESC rd = { .resType = CU_RESOURCE_TYPE_ARRAY };
	CUDA_TEXTURE_DESC td = {
		.addressMode = { CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP },
		.filterMode = CU_TR_FILTER_MODE_POINT,
	};

	img->bytes = (size_t)W * H * sizeof(float);
	img->host = malloc(img->bytes);
	if (!img->host) {
		fprintf(stderr, "texrotate: out of memory\n");
		exit(1);
	}
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++)
			img->host[y * W + x] = (float)(((x / 16 + y / 16) % 2) * 100 + x % 37);
	CHECK(cuArrayCreate(&img->array, &ad));
	copy_to_array(img, CU_MEMORYTYPE_HOST, img->host, 0);
	rd.res.array.hArray = img->array;
	CHECK(cuTexObjectCreate(&img->tex, &rd, &td, NULL));
	CHECK(cuMemAlloc(&img->out, img->bytes));
}

static uint64_t step(struct image *img, CUfunction fn)
{
	int w = W, h = H, cos_q = COS_Q16, sin_q = SIN_Q16;
	void *params[] = { &img->tex, &img->out, &w, &h, &cos_q, &sin_q };

	CHECK(cuLaunchKernel(fn, (W + BLOCK_X - 1) / BLOCK_X, (H + BLOCK_Y - 1) / BLOCK_Y, 1,
			     BLOCK_X, BLOCK_Y, 1, 0, NULL, params, NULL));
	CHECK(cuMemcpyDtoH(img->host, img->out, img->bytes));
	copy_to_array(img, CU_MEMORYTYPE_DEVICE, NULL, img->out);
	return sample_hash(SAMPLE_HASH_INIT, img->host, img->bytes);
}

int main(int argc, char **argv)
{
	struct sample s;
	struct image img;
	CUmodule mod;
	CUfunction fn;

	sample_init(&s, argc, argv, "texrotate", 0);
	mod = sample_load_module(&s);
	CHECK(cuModuleGetFunction(&fn, mod, "rotate"));
	setup(&img);

	for (long it = 1; it <= s.iters; it++)
		sample_iteration_done(&s, it, step(&img, fn));

	CHECK(cuTexObjectDestroy(img.tex));
	CHECK(cuArrayDestroy(img.array));
	CHECK(cuMemFree(img.out));
	CHECK(cuModuleUnload(mod));
	free(img.host);
	return sample_finish(&s);
}
