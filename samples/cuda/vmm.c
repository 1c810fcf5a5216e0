/* SPDX-License-Identifier: MIT */
/*
 * vmm.c - device memory through the virtual memory management API, as
 * allocators that grow in place use it: a range of addresses reserved, two
 * physical allocations created, mapped into it, given read and write access,
 * and released while mapped (the mappings keep them); allocation A is mapped
 * twice, so its words are seen at two addresses.
 *
 *   [ A (view 1) | B | A (view 2) ]
 *
 * Each iteration: A = A * 1664525 + B through view 1, then B = B * 1664525 + A
 * reading A through view 2; A is copied back through view 2, B directly, and
 * both are hashed. A restored run must get the same hashes: the contents of
 * both allocations, both views of A and their access come back.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#define N (1 << 20)   /* 32-bit words in each allocation */
#define BLOCK 256

/* @bytes rounded up to the allocation granularity of @prop. */
static size_t granular(const CUmemAllocationProp *prop, size_t bytes)
{
	size_t g;

	CHECK(cuMemGetAllocationGranularity(&g, prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	return (bytes + g - 1) / g * g;
}

/* Reserve, create, map, grant access, release: the views of A and B. */
static CUdeviceptr map_views(CUdevice dev, size_t *size)
{
	CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				     .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev } };
	CUmemAccessDesc rw = { .location = prop.location,
			       .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	CUmemGenericAllocationHandle a, b;
	CUdeviceptr va;

	*size = granular(&prop, N * sizeof(unsigned));
	CHECK(cuMemAddressReserve(&va, 3 * *size, 0, 0, 0));
	CHECK(cuMemCreate(&a, *size, &prop, 0));
	CHECK(cuMemCreate(&b, *size, &prop, 0));
	CHECK(cuMemMap(va, *size, 0, a, 0));
	CHECK(cuMemMap(va + *size, *size, 0, b, 0));
	CHECK(cuMemMap(va + 2 * *size, *size, 0, a, 0));
	CHECK(cuMemSetAccess(va, 3 * *size, &rw, 1));
	CHECK(cuMemRelease(a)); /* the mappings keep them */
	CHECK(cuMemRelease(b));
	return va;
}

static void step(CUfunction fn, CUdeviceptr x, CUdeviceptr y)
{
	int n = N;
	void *params[] = { &x, &y, &n };

	CHECK(cuLaunchKernel(fn, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0, NULL, params,
			     NULL));
}

int main(int argc, char **argv)
{
	struct sample s;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr va, a1, b, a2;
	size_t size, bytes = N * sizeof(unsigned);
	unsigned *host = malloc(bytes);

	if (!host) {
		fprintf(stderr, "vmm: out of memory\n");
		return 1;
	}
	sample_init(&s, argc, argv, "vmm", 0);
	mod = sample_load_module(&s);
	CHECK(cuModuleGetFunction(&fn, mod, "vmm_step"));
	va = map_views(s.dev, &size);
	a1 = va;
	b = va + size;
	a2 = va + 2 * size;
	for (unsigned i = 0; i < N; i++)
		host[i] = i * 2654435761u;
	CHECK(cuMemcpyHtoD(a1, host, bytes));
	CHECK(cuMemsetD32(b, 12345, N));

	for (long it = 1; it <= s.iters; it++) {
		uint64_t h;

		step(fn, a1, b);
		step(fn, b, a2);
		CHECK(cuMemcpyDtoH(host, a2, bytes));
		h = sample_hash(SAMPLE_HASH_INIT, host, bytes);
		CHECK(cuMemcpyDtoH(host, b, bytes));
		sample_iteration_done(&s, it, sample_hash(h, host, bytes));
	}

	CHECK(cuMemUnmap(va, 3 * size));
	CHECK(cuMemAddressFree(va, 3 * size));
	CHECK(cuModuleUnload(mod));
	free(host);
	return sample_finish(&s);
}
