/* SPDX-License-Identifier: MIT */
/*
 * test_kernels.c - the kernels of the software device's tests, built as
 * libsoftcuda-testkernels.so and named by the module texts of
 * test_softcuda.c. Each kernel covers the whole grid itself, one loop
 * iteration per thread, so a launch with too few threads leaves work undone
 * as it would on a GPU.
 */
#include <stdint.h>

#include "softcuda.h"

static unsigned long long threads(const struct softcuda_launch *l)
{
	return (unsigned long long)l->grid[0] * l->grid[1] * l->grid[2] * l->block[0] *
	       l->block[1] * l->block[2];
}

/* kernel vec_add 8 8 8 4: c[i] = a[i] + b[i] for i < n */
void softk_vec_add(const struct softcuda_launch *l, void **params)
{
	const float *a = *(const float **)params[0];
	const float *b = *(const float **)params[1];
	float *c = *(float **)params[2];
	int n = *(int *)params[3];
	unsigned long long i;

	for (i = 0; i < threads(l) && i < (unsigned long long)n; i++)
		c[i] = a[i] + b[i];
}

/* kernel add_to 8 4: every thread adds amount to *counter (a module global) */
void softk_add_to(const struct softcuda_launch *l, void **params)
{
	unsigned *counter = *(unsigned **)params[0];
	unsigned amount = *(unsigned *)params[1];

	*counter += (unsigned)threads(l) * amount;
}

/* kernel add_n 8 4 4: x[i] += amount for i < n */
void softk_add_n(const struct softcuda_launch *l, void **params)
{
	unsigned *x = *(unsigned **)params[0];
	unsigned amount = *(unsigned *)params[1];
	int n = *(int *)params[2];
	unsigned long long i;

	for (i = 0; i < threads(l) && i < (unsigned long long)n; i++)
		x[i] += amount;
}

/* kernel mixed 1 8 4 2 8: parameters of every alignment, echoed to out[0..3] */
void softk_mixed(const struct softcuda_launch *l, void **params)
{
	int64_t *out = *(int64_t **)params[4];

	(void)l;
	out[0] = *(char *)params[0];
	out[1] = (int64_t)*(double *)params[1];
	out[2] = *(int *)params[2];
	out[3] = *(short *)params[3];
}

/* kernel tex_to_surf 8 8 4 4: surf(x, y) = tex(x, y) + 1 for float elements */
void softk_tex_to_surf(const struct softcuda_launch *l, void **params)
{
	unsigned long long tex = *(unsigned long long *)params[0];
	unsigned long long surf = *(unsigned long long *)params[1];
	int w = *(int *)params[2], h = *(int *)params[3];
	float v;
	int x, y;

	(void)l;
	for (y = 0; y < h; y++) {
		for (x = 0; x < w; x++) {
			if (softcuda_tex2d_read(tex, x, y, &v, sizeof(v)))
				return;
			v += 1.0f;
			if (softcuda_surf2d_write(surf, x, y, &v, sizeof(v)))
				return;
		}
	}
}
