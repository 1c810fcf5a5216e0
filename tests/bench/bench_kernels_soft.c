/* SPDX-License-Identifier: MIT */
/*
 * bench_kernels_soft.c - the kernels of bench_kernels.cu as host functions
 * for the software device (tests/softcuda/softcuda.h), so the GPU benchmarks
 * can be tried where no GPU is: built as libbench-kernels-soft.so and named by
 * $(BUILD)/tests/bench_kernels.softmod (make bench-cuda-soft).
 *
 * bench_fill and bench_checksum give the values the GPU gives; bench_compute
 * does the same arithmetic without fused multiply-adds, so only its timing
 * matters. Figures measured on the software device say nothing about GPUs.
 */
#include <stdint.h>
#include <time.h>

#include "softcuda.h"

#define SOFTK __attribute__((visibility("default")))
#define MIX_K 0x9e3779b97f4a7c15ull

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t threads(const struct softcuda_launch *l)
{
	return (uint64_t)l->grid[0] * l->grid[1] * l->grid[2] * l->block[0] * l->block[1] *
	       l->block[2];
}

/* kernel bench_fill 8 8 8 */
SOFTK void softk_bench_fill(const struct softcuda_launch *l, void **params)
{
	uint64_t *p = *(uint64_t **)params[0];
	uint64_t n = *(uint64_t *)params[1], seed = *(uint64_t *)params[2];

	(void)l;
	for (uint64_t i = 0; i < n; i++)
		p[i] = mix(seed + i * MIX_K);
}

/* kernel bench_checksum 8 8 8 8 */
SOFTK void softk_bench_checksum(const struct softcuda_launch *l, void **params)
{
	const uint64_t *p = *(const uint64_t **)params[0];
	uint64_t n = *(uint64_t *)params[1], salt = *(uint64_t *)params[2];
	uint64_t *sum = *(uint64_t **)params[3], acc = 0;

	(void)l;
	for (uint64_t i = 0; i < n; i++)
		acc += mix(p[i] ^ ((salt + i) * MIX_K));
	*sum += acc;
}

/* kernel bench_compute 8 4 */
SOFTK void softk_bench_compute(const struct softcuda_launch *l, void **params)
{
	float *out = *(float **)params[0];
	int iters = *(int *)params[1];

	for (uint64_t t = 0; t < threads(l); t++) {
		float a = 1.0f + 1e-7f * (float)(t & 1023), b = 0.999999f, x = (float)t * 1e-9f;
		float s = 0;

		for (int k = 0; k < 8; k++) {
			float y = x + (float)k;

			for (int i = 0; i < iters; i++)
				y = y * a + b;
			s += y;
		}
		out[t] = s;
	}
}

/* kernel bench_empty */
SOFTK void softk_bench_empty(const struct softcuda_launch *l, void **params)
{
	(void)l;
	(void)params;
}

/* kernel bench_stencil */
SOFTK void softk_bench_stencil(const struct softcuda_launch *l, void **params)
{
	float *out = *(float **)params[0];
	const float *in = *(const float **)params[1];
	int w = *(int *)params[2], h = *(int *)params[3];

	(void)l;
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			int i = y * w + x;

			if (x == 0 || y == 0 || x == w - 1 || y == h - 1)
				out[i] = in[i];
			else
				out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
		}
}

/* kernel bench_items: the cycles taken as nanoseconds; items as selfckpt_kernel.h takes them */
struct work {
	unsigned long long next, total;
	const volatile unsigned *flag;
	unsigned long long launches;
};

SOFTK void softk_bench_items(const struct softcuda_launch *l, void **params)
{
	uint64_t *out = *(uint64_t **)params[0];
	long long ns = *(long long *)params[1];
	struct work *w = *(struct work **)params[2];

	(void)l;
	while (!(w->flag && *w->flag) && w->next < w->total) {
		unsigned long long item = w->next++;
		struct timespec t = { ns / 1000000000, ns % 1000000000 };

		nanosleep(&t, NULL);
		out[item] = mix(item);
	}
}
