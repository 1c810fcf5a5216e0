/* SPDX-License-Identifier: MIT */
/*
 * matmul.c - matrix multiply, 256 x 256 floats, with the device pointers kept
 * in a host structure (a restored process must find them still valid).
 *
 * The module comes from the file by default; with --embedded, from the
 * fatbin linked into this program (embed.S), through cuModuleLoadData(), so
 * no file is needed at run time.
 *
 * Each iteration computes C = A * B, then A = (C mod 101) - 50 on the device:
 * entries stay small integers and every sum of products is exact.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#define N 256
#define TILE 16 /* the kernel's tile: the block is TILE x TILE */
#define WRAP_BLOCK 256

/* embed.S: the fatbin, linked in */
extern const unsigned char sample_fatbin[];

struct matmul {
	CUdeviceptr a, b, c;
	int n;
	size_t bytes;
	CUfunction mul, wrap;
	float *host;
};

static CUmodule load_module(const struct sample *s)
{
	CUmodule mod;

	if (!s->embedded)
		return sample_load_module(s);
	CHECK(cuModuleLoadData(&mod, sample_fatbin));
	return mod;
}

/* Small integers, different patterns for A and B. */
static void setup(struct matmul *m, CUmodule mod)
{
	float *b = malloc(m->bytes);

	if (!b || !m->host) {
		fprintf(stderr, "matmul: out of memory\n");
		exit(1);
	}
	for (int i = 0; i < m->n; i++) {
		for (int j = 0; j < m->n; j++) {
			m->host[i * m->n + j] = (float)((i * 7 + j * 3) % 9 - 4);
			b[i * m->n + j] = (float)((i * 5 + j * 11 + 1) % 9 - 4);
		}
	}
	CHECK(cuModuleGetFunction(&m->mul, mod, "mat_mul"));
	CHECK(cuModuleGetFunction(&m->wrap, mod, "mat_wrap"));
	CHECK(cuMemAlloc(&m->a, m->bytes));
	CHECK(cuMemAlloc(&m->b, m->bytes));
	CHECK(cuMemAlloc(&m->c, m->bytes));
	CHECK(cuMemcpyHtoD(m->a, m->host, m->bytes));
	CHECK(cuMemcpyHtoD(m->b, b, m->bytes));
	free(b);
}

static uint64_t step(struct matmul *m)
{
	int count = m->n * m->n, tiles = (m->n + TILE - 1) / TILE;
	void *mul_params[] = { &m->a, &m->b, &m->c, &m->n };
	void *wrap_params[] = { &m->a, &m->c, &count };

	CHECK(cuLaunchKernel(m->mul, tiles, tiles, 1, TILE, TILE, 1, 0, NULL, mul_params,
			     NULL));
	CHECK(cuLaunchKernel(m->wrap, (count + WRAP_BLOCK - 1) / WRAP_BLOCK, 1, 1, WRAP_BLOCK,
			     1, 1, 0, NULL, wrap_params, NULL));
	CHECK(cuMemcpyDtoH(m->host, m->c, m->bytes));
	return sample_hash(SAMPLE_HASH_INIT, m->host, m->bytes);
}

int main(int argc, char **argv)
{
	struct sample s;
	struct matmul m = { .n = N, .bytes = (size_t)N * N * sizeof(float) };
	CUmodule mod;

	sample_init(&s, argc, argv, "matmul", SAMPLE_OPT_EMBEDDED);
	mod = load_module(&s);
	m.host = malloc(m.bytes);
	setup(&m, mod);

	for (long it = 1; it <= s.iters; it++)
		sample_iteration_done(&s, it, step(&m));

	CHECK(cuMemFree(m.a));
	CHECK(cuMemFree(m.b));
	CHECK(cuMemFree(m.c));
	CHECK(cuModuleUnload(mod));
	free(m.host);
	return sample_finish(&s);
}
