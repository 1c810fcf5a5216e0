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
 *
 * It also asks what programs ask at start-up and sets what they set: the
 * second kernel is found by enumerating the module's functions, the context
 * prefers shared memory, and every iteration checks that the context's id,
 * its cache preference, the kernels' names and module, the module's function
 * count and the device's PCI bus id (both ways) still answer as at the start,
 * restored or not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	CUmodule mod;
	unsigned functions;          /* in the module, as the driver counted them */
	unsigned long long ctx_id;
};

static CUmodule load_module(const struct sample *s)
{
	CUmodule mod;

	if (!s->embedded)
		return sample_load_module(s);
	CHECK(cuModuleLoadData(&mod, sample_fatbin));
	return mod;
}

/* The function called @name, found among all the module's (@count of them). */
static CUfunction find_function(CUmodule mod, const char *name, unsigned *count)
{
	CUfunction *all, found = NULL;
	const char *each;

	CHECK(cuModuleGetFunctionCount(count, mod));
	if (!(all = calloc(*count, sizeof(*all)))) {
		fprintf(stderr, "matmul: out of memory\n");
		exit(1);
	}
	CHECK(cuModuleEnumerateFunctions(all, *count, mod));
	for (unsigned i = 0; i < *count; i++) {
		CHECK(cuFuncGetName(&each, all[i]));
		if (!strcmp(each, name))
			found = all[i];
	}
	free(all);
	if (!found) {
		fprintf(stderr, "matmul: no function %s among the module's %u\n", name, *count);
		exit(1);
	}
	return found;
}

/* What was asked and set at the start answers the same now (a restart lost nothing). */
static void check_settings(const struct matmul *m)
{
	char bus[32];
	CUdevice dev, again;
	CUfunc_cache cache;
	CUmodule mod;
	unsigned long long id;
	unsigned count;
	const char *name;

	CHECK(cuCtxGetDevice(&dev));
	CHECK(cuDeviceGetPCIBusId(bus, sizeof(bus), dev));
	CHECK(cuDeviceGetByPCIBusId(&again, bus));
	CHECK(cuCtxGetCacheConfig(&cache));
	CHECK(cuCtxGetId(NULL, &id));
	CHECK(cuModuleGetFunctionCount(&count, m->mod));
	CHECK(cuFuncGetName(&name, m->wrap));
	CHECK(cuFuncGetModule(&mod, m->mul));
	if (again != dev || cache != CU_FUNC_CACHE_PREFER_SHARED || id != m->ctx_id ||
	    count != m->functions || strcmp(name, "mat_wrap") || mod != m->mod) {
		fprintf(stderr, "matmul: the context or the module answer differently now: device "
			"%d by bus id %s: %d, cache preference %d, context id %llu (was %llu), "
			"%u functions (were %u), %s, module %s\n", (int)dev, bus, (int)again,
			(int)cache, id, m->ctx_id, count, m->functions, name,
			mod == m->mod ? "the same" : "another");
		exit(1);
	}
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
	m->wrap = find_function(mod, "mat_wrap", &m->functions);
	m->mod = mod;
	CHECK(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_SHARED));
	CHECK(cuCtxGetId(NULL, &m->ctx_id));
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
	check_settings(m);
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
