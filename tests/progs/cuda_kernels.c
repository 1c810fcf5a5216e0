/* SPDX-License-Identifier: MIT */
/*
 * cuda_kernels.c - the kernels of tests/progs/cuda_state.c for the software
 * CUDA device (tests/softcuda): host functions named softk_<kernel>, each
 * covering the whole grid of its launch.
 */
#include <stdint.h>
#include <time.h>

#include "selfckpt_kernel.h"
#include "softcuda.h"

#define KERNEL __attribute__((visibility("default")))

/* kernel step 8 8 8: a[i] = a[i] * 1664525 + 1013904223; *counter += 1 */
KERNEL void softk_step(const struct softcuda_launch *l, void **params)
{
	uint32_t *a = *(uint32_t **)params[0];
	uint64_t n = *(uint64_t *)params[1];
	uint32_t *counter = *(uint32_t **)params[2];

	(void)l;
	for (uint64_t i = 0; i < n; i++)
		a[i] = a[i] * 1664525u + 1013904223u;
	*counter += 1;
}

/* kernel chase 8: the device pointer stored at p[0] is followed, its word bumped */
KERNEL void softk_chase(const struct softcuda_launch *l, void **params)
{
	uint64_t *p = *(uint64_t **)params[0];
	uint32_t *target = (uint32_t *)(uintptr_t)p[0];

	(void)l;
	target[0] += 7;
}

/* kernel tex_sum 8 8 4 4: out[0] = sum of every texel of a float texture */
KERNEL void softk_tex_sum(const struct softcuda_launch *l, void **params)
{
	unsigned long long tex = *(unsigned long long *)params[0];
	float *out = *(float **)params[1];
	int w = *(int *)params[2], h = *(int *)params[3];
	float sum = 0, v;

	(void)l;
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			if (softcuda_tex2d_read(tex, x, y, &v, sizeof(v)) == 0)
				sum += v;
	out[0] = sum;
}

/*
 * kernel resumable_fill 8 8: out[item] = item * item + 1, an item every
 * millisecond, taken as SELFCKPT_FOR_EACH_ITEM takes them: none once the
 * flag is up. The flag is pinned host memory the proxy maps too.
 */
KERNEL void softk_resumable_fill(const struct softcuda_launch *l, void **params)
{
	uint64_t *out = *(uint64_t **)params[0];
	struct selfckpt_work *w = *(struct selfckpt_work **)params[1];

	(void)l;
	while (!(w->flag && *w->flag) && w->next < w->total) { /* no flag: launched plainly */
		unsigned long long item = w->next++;

		out[item] = item * item + 1;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
}
