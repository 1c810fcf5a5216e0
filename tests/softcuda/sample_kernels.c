/* SPDX-License-Identifier: MIT */
/*
 * sample_kernels.c - the kernels of the CUDA samples (samples/cuda/kernels/)
 * as host functions, for the software device (softcuda.h): built as
 * libsoftcuda-samples.so, named by the modules in $(BUILD)/tests/softmods/.
 *
 * Each softk_<name> runs every thread of the launch in turn through a
 * per-thread function written like the CUDA kernel, with the same float
 * operations in the same order (the kernels are compiled with -fmad=false,
 * this file with -ffp-contract=off), so both devices print the same checksums.
 * Device pointers of the software device are addresses in the process that
 * runs the kernels; kernels get each parameter through a pointer to it.
 */
#include <math.h>
#include <stdint.h>

#include "softcuda.h"

#define SOFTK __attribute__((visibility("default")))

struct thread_idx {
	unsigned block[3]; /* blockIdx */
	unsigned thread[3]; /* threadIdx */
};

typedef void (*thread_fn)(const struct softcuda_launch *l, const struct thread_idx *t,
			  void **params);

/* Linear index @i within @dim as x, y, z. */
static void split(unsigned i, const unsigned dim[3], unsigned idx[3])
{
	idx[0] = i % dim[0];
	idx[1] = i / dim[0] % dim[1];
	idx[2] = i / dim[0] / dim[1];
}

/* The whole grid, one thread at a time: blocks in order, threads in order. */
static void for_each_thread(const struct softcuda_launch *l, void **params, thread_fn fn)
{
	unsigned blocks = l->grid[0] * l->grid[1] * l->grid[2];
	unsigned threads = l->block[0] * l->block[1] * l->block[2];
	struct thread_idx t;

	for (unsigned b = 0; b < blocks; b++) {
		split(b, l->grid, t.block);
		for (unsigned th = 0; th < threads; th++) {
			split(th, l->block, t.thread);
			fn(l, &t, params);
		}
	}
}

/* blockIdx.d * blockDim.d + threadIdx.d */
static int global_idx(const struct softcuda_launch *l, const struct thread_idx *t, int d)
{
	return (int)(t->block[d] * l->block[d] + t->thread[d]);
}

static void *param_ptr(void **params, int i)
{
	return (void *)(uintptr_t)*(const unsigned long long *)params[i];
}

static int param_int(void **params, int i)
{
	return *(const int *)params[i];
}

/* resumable.cu: each row a block takes, until none is left or the flag is up */

static unsigned mix(unsigned x, int rounds)
{
	for (int r = 0; r < rounds; r++) {
		x = x * 0x9e3779b1u + 0x7f4a7c15u;
		x ^= x >> 15;
	}
	return x;
}

/* struct selfckpt_work of selfckpt_kernel.h */
struct work {
	unsigned long long next, total;
	const volatile unsigned *flag;
	unsigned long long launches;
};

SOFTK void softk_mix_rows(const struct softcuda_launch *l, void **params)
{
	const unsigned *in = param_ptr(params, 0);
	unsigned *out = param_ptr(params, 1);
	int w = param_int(params, 2), h = param_int(params, 3), rounds = param_int(params, 4);
	struct work *work = param_ptr(params, 5);

	(void)l;
	while (!(work->flag && *work->flag) && work->next < work->total) {
		int y = (int)work->next++;

		for (int x = 0; x < w; x++) {
			unsigned right = in[y * w + (x + 1) % w];
			unsigned v = in[y * w + x] ^ (right << 7 | right >> 25) ^
				     in[((y + 1) % h) * w + x];

			out[y * w + x] = mix(v, rounds);
		}
	}
}

/* vecadd.cu */

static void vec_add_thread(const struct softcuda_launch *l, const struct thread_idx *t,
			   void **params)
{
	const float *a = param_ptr(params, 0), *b = param_ptr(params, 1);
	float *c = param_ptr(params, 2);
	int n = param_int(params, 3), i = global_idx(l, t, 0);

	if (i < n)
		c[i] = a[i] + b[i];
}

SOFTK void softk_vec_add(const struct softcuda_launch *l, void **params)
{
	for_each_thread(l, params, vec_add_thread);
}

/* vmm.cu */

static void vmm_step_thread(const struct softcuda_launch *l, const struct thread_idx *t,
			    void **params)
{
	unsigned *x = param_ptr(params, 0);
	const unsigned *y = param_ptr(params, 1);
	int n = param_int(params, 2), i = global_idx(l, t, 0);

	if (i < n)
		x[i] = x[i] * 1664525u + y[i];
}

SOFTK void softk_vmm_step(const struct softcuda_launch *l, void **params)
{
	for_each_thread(l, params, vmm_step_thread);
}

/* managed.cu */

static void heat_step_thread(const struct softcuda_launch *l, const struct thread_idx *t,
			     void **params)
{
	unsigned *out = param_ptr(params, 0);
	const unsigned *in = param_ptr(params, 1);
	int w = param_int(params, 2), h = param_int(params, 3);
	int x = global_idx(l, t, 0), y = global_idx(l, t, 1);

	if (x >= w || y >= h)
		return;
	if (x == 0 && y == 0)
		*(unsigned long long *)param_ptr(params, 4) += 1;
	out[y * w + x] = in[y * w + x] * 5u + in[y * w + (x + w - 1) % w] +
			 in[y * w + (x + 1) % w] * 3u + in[((y + h - 1) % h) * w + x] * 7u +
			 in[((y + 1) % h) * w + x] * 11u + 1u;
}

SOFTK void softk_heat_step(const struct softcuda_launch *l, void **params)
{
	for_each_thread(l, params, heat_step_thread);
}

/* graph.cu */

static void graph_step_thread(const struct softcuda_launch *l, const struct thread_idx *t,
			      void **params)
{
	const unsigned *x = param_ptr(params, 0);
	unsigned *y = param_ptr(params, 1);
	int n = param_int(params, 2), i = global_idx(l, t, 0);
	unsigned salt = *(const unsigned *)params[3];

	if (i < n)
		y[i] = x[i] * 1664525u + x[(i + 1) % n] + salt;
}

SOFTK void softk_graph_step(const struct softcuda_launch *l, void **params)
{
	for_each_thread(l, params, graph_step_thread);
}

static void graph_mix_thread(const struct softcuda_launch *l, const struct thread_idx *t,
			     void **params)
{
	const unsigned *x = param_ptr(params, 0), *y = param_ptr(params, 1);
	unsigned *out = param_ptr(params, 2);
	int n = param_int(params, 3), i = global_idx(l, t, 0);

	if (i < n)
		out[i] = x[i] ^ (y[i] * 2654435761u);
}

SOFTK void softk_graph_mix(const struct softcuda_launch *l, void **params)
{
	for_each_thread(l, params, graph_mix_thread);
}

/* peer.cu */

static void peer_mix_thread(const struct softcuda_launch *l, const struct thread_idx *t,
			    void **params)
{
	unsigned *x = param_ptr(params, 0);
	const unsigned *y = param_ptr(params, 1);
	int n = param_int(params, 2), i = global_idx(l, t, 0);

	if (i < n)
		x[i] = x[i] * 1664525u + y[(i + 7) % n];
}

SOFTK void softk_peer_mix(const struct softcuda_launch *l, void **params)
{
	for_each_thread(l, params, peer_mix_thread);
}

/*
 * matmul.cu. The CUDA kernel sums over k tile by tile, in increasing k, and
 * adds exact zeros past the edge: a plain loop over k gives the same sums.
 */

static void mat_mul_thread(const struct softcuda_launch *l, const struct thread_idx *t,
			   void **params)
{
	const float *a = param_ptr(params, 0), *b = param_ptr(params, 1);
	float *c = param_ptr(params, 2);
	int n = param_int(params, 3);
	int row = global_idx(l, t, 1), col = global_idx(l, t, 0);
	float sum = 0.0f;

	if (row >= n || col >= n)
		return;
	for (int k = 0; k < n; k++)
		sum += a[row * n + k] * b[k * n + col];
	c[row * n + col] = sum;
}

SOFTK void softk_mat_mul(const struct softcuda_launch *l, void **params)
{
	/* every c element is written once and a, b are only read: no barrier needed */
	for_each_thread(l, params, mat_mul_thread);
}

static void mat_wrap_thread(const struct softcuda_launch *l, const struct thread_idx *t,
			    void **params)
{
	float *a = param_ptr(params, 0);
	const float *c = param_ptr(params, 1);
	int count = param_int(params, 2), i = global_idx(l, t, 0);

	if (i < count)
		a[i] = (float)(((int)c[i] % 101 + 101) % 101 - 50);
}

SOFTK void softk_mat_wrap(const struct softcuda_launch *l, void **params)
{
	for_each_thread(l, params, mat_wrap_thread);
}

/* texrotate.cu */

static int floor_q16(int v)
{
	return v >= 0 ? v >> 16 : -((-v + 0xffff) >> 16);
}

static void rotate_thread(const struct softcuda_launch *l, const struct thread_idx *t,
			  void **params)
{
	unsigned long long tex = *(const unsigned long long *)params[0];
	float *out = param_ptr(params, 1), texel = 0.0f;
	int w = param_int(params, 2), h = param_int(params, 3);
	int cos_q = param_int(params, 4), sin_q = param_int(params, 5);
	int x = global_idx(l, t, 0), y = global_idx(l, t, 1), dx, dy, sx, sy;

	if (x >= w || y >= h)
		return;
	dx = x - w / 2;
	dy = y - h / 2;
	sx = w / 2 + floor_q16(dx * cos_q + dy * sin_q);
	sy = h / 2 + floor_q16(dy * cos_q - dx * sin_q);
	/* an unknown object reads 0, where a GPU would read garbage or fault */
	softcuda_tex2d_read(tex, sx, sy, &texel, sizeof(texel));
	out[y * w + x] = texel;
}

SOFTK void softk_rotate(const struct softcuda_launch *l, void **params)
{
	for_each_thread(l, params, rotate_thread);
}

/*
 * solver.cu. A Jacobi sweep reads only u and writes only v, so running the
 * threads one by one gives what the GPU gives; the maximum over the bits of
 * non-negative floats is order-free like the kernel's atomicMax.
 */

static void jacobi_thread(const struct softcuda_launch *l, const struct thread_idx *t,
			  void **params)
{
	const float *u = param_ptr(params, 0);
	float *v = param_ptr(params, 1), next, change;
	int nx = param_int(params, 2), ny = param_int(params, 3);
	unsigned int *sweep_count = param_ptr(params, 4), *change_bits = param_ptr(params, 5);
	int x = global_idx(l, t, 0), y = global_idx(l, t, 1), i = y * nx + x;
	union { float f; unsigned int u; } bits;

	if (x >= nx || y >= ny)
		return;
	if (x == 0 && y == 0)
		(*sweep_count)++;
	if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
		v[i] = u[i];
		return;
	}
	next = (u[i - 1] + u[i + 1] + u[i - nx] + u[i + nx]) * 0.25f;
	v[i] = next;
	change = fabsf(next - u[i]);
	bits.f = change;
	if (bits.u > *change_bits)
		*change_bits = bits.u;
}

SOFTK void softk_jacobi(const struct softcuda_launch *l, void **params)
{
	for_each_thread(l, params, jacobi_thread);
}
