/* SPDX-License-Identifier: MIT */
/*
 * Managed memory as libselfckpt serves it, on the software device
 * (tests/softcuda; a test double: it proves nothing about GPUs): the CPU and
 * the kernels use the same address, the CPU's writes reach the kernels
 * launched after them, the kernels' writes reach the CPU after a
 * synchronisation, advice and prefetches read back as the driver's do, and
 * all of it after a restart.
 */
#include <criterion/criterion.h>
#include <cuda.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "selfckpt.h"
#include "tests/cuda/cuda_api_harness.h"

TestSuite(cuda_managed, .init = sc_test_use_software_device, .timeout = 60);

#define WORDS 8192u /* 32 KiB: eight pages */

static uint32_t stepped(uint32_t v)
{
	return v * 1664525u + 1013904223u;
}

/* One launch of the test kernel step over the @WORDS words at @a, then @sync. */
static CUresult step(CUfunction f, CUdeviceptr a, CUdeviceptr counter, CUstream s)
{
	uint64_t n = WORDS;
	void *params[] = { &a, &n, &counter };

	return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
}

Test(cuda_managed, the_cpu_and_kernels_share_managed_memory)
{
	CUfunction f;
	CUdeviceptr m, counter;
	size_t csize;
	uint32_t *host, back[WORDS];
	CUstream s;

	sc_test_start();
	OK(cuModuleGetGlobal(&counter, &csize, sc_test_load(&f), "counter"));
	OK(cuMemAllocManaged(&m, WORDS * 4, CU_MEM_ATTACH_GLOBAL));
	host = (uint32_t *)(uintptr_t)m;
	for (uint32_t i = 0; i < WORDS; i++)
		cr_assert_eq(host[i], 0, "managed memory starts zeroed");
	for (uint32_t i = 0; i < WORDS; i++)
		host[i] = i;
	OK(step(f, m, counter, NULL));
	OK(cuCtxSynchronize());
	for (uint32_t i = 0; i < WORDS; i++)
		cr_assert_eq(host[i], stepped(i), "word %u after a launch and cuCtxSynchronize", i);

	/* a few pages written by the CPU, on a stream */
	OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	host[5] = 77;
	host[WORDS - 1] = 99;
	OK(step(f, m, counter, s));
	OK(cuStreamSynchronize(s));
	cr_assert_eq(host[5], stepped(77));
	cr_assert_eq(host[WORDS - 1], stepped(99));
	cr_assert_eq(host[6], stepped(stepped(6)), "a page the CPU did not write");

	/* copies and memory sets, on either side */
	host[0] = 12345;
	OK(cuMemcpyDtoH(back, m, sizeof(back)));
	cr_assert_eq(back[0], 12345, "a copy from managed memory reads the CPU's write");
	for (uint32_t i = 0; i < WORDS; i++)
		back[i] = 3 * i;
	OK(cuMemcpyHtoD(m, back, sizeof(back)));
	cr_assert_eq(host[100], 300, "a synchronous copy into it is seen at once");
	OK(cuMemsetD32Async(m + 8, 0xabcdef, 4, s));
	OK(cuStreamSynchronize(s));
	cr_assert_eq(host[2], 0xabcdef);
	cr_assert_eq(host[6], 18);
	OK(cuMemFree(m));
	cr_assert_eq(msync(host, 4096, MS_ASYNC), -1, "the host copy goes with cuMemFree");
	OK(cuStreamDestroy(s));
}

/* A read(2) into managed memory is the kernel's write, not the program's own. */
Test(cuda_managed, a_system_call_that_writes_managed_memory_is_seen_by_kernels)
{
	char path[] = "/tmp/sc-managed-XXXXXX";
	uint32_t words[WORDS], *host;
	CUdeviceptr m, counter;
	CUfunction f;
	size_t csize;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	for (uint32_t i = 0; i < WORDS; i++)
		words[i] = 5 * i + 1;
	cr_assert_eq(write(fd, words, sizeof(words)), (ssize_t)sizeof(words));
	sc_test_start();
	OK(cuModuleGetGlobal(&counter, &csize, sc_test_load(&f), "counter"));
	OK(cuMemAllocManaged(&m, WORDS * 4, CU_MEM_ATTACH_GLOBAL));
	host = (uint32_t *)(uintptr_t)m;
	cr_assert_eq(pread(fd, host, sizeof(words), 0), (ssize_t)sizeof(words),
		     "read(2) into managed memory");
	OK(step(f, m, counter, NULL));
	OK(cuCtxSynchronize());
	for (uint32_t i = 0; i < WORDS; i++)
		cr_assert_eq(host[i], stepped(5 * i + 1), "word %u", i);
	close(fd);
	unlink(path);
}

static int32_t range_int(CUmem_range_attribute a, CUdeviceptr p, size_t n)
{
	int32_t v = 12345;

	OK(cuMemRangeGetAttribute(&v, 4, a, p, n));
	return v;
}

Test(cuda_managed, advice_prefetches_and_attributes_read_back)
{
	CUmemLocation dev0 = { CU_MEM_LOCATION_TYPE_DEVICE, 0 }, host = { CU_MEM_LOCATION_TYPE_HOST, 0 };
	CUmemLocation bad = { CU_MEM_LOCATION_TYPE_DEVICE, 64 };
	CUdeviceptr m, plain, start;
	int32_t by[3];
	unsigned managed = 7;
	size_t half = WORDS * 2;
	void *hp = NULL;
	int v = -1;

	sc_test_start();
	OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0));
	cr_assert_eq(v, 1);
	OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 0));
	cr_assert_eq(v, 0, "coherence at launches and synchronisations only");
	OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 0));
	cr_assert_eq(v, 0, "the program's other memory is not the GPU's");

	cr_assert_eq(cuMemAllocManaged(&m, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
	cr_assert_eq(cuMemAllocManaged(&m, 64, 4), CUDA_ERROR_INVALID_VALUE);
	OK(cuMemAllocManaged(&m, WORDS * 4, CU_MEM_ATTACH_HOST));
	OK(cuMemAlloc(&plain, 4096));

	OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m + 64));
	cr_assert_eq(managed, 1);
	OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, plain));
	cr_assert_eq(managed, 0);
	OK(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, m + 64));
	cr_assert_eq(hp, (void *)(uintptr_t)(m + 64));
	OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, m + 64));
	cr_assert_eq(start, m);

	cr_assert_eq(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, WORDS * 4), 0);
	cr_assert_eq(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, WORDS * 4),
		     CU_DEVICE_INVALID, "no advice yet");
	OK(cuMemAdvise(m, half, CU_MEM_ADVISE_SET_READ_MOSTLY, dev0));
	cr_assert_eq(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, half), 1);
	cr_assert_eq(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, WORDS * 4), 0,
		     "half of the range only");
	OK(cuMemAdvise(m, WORDS * 4, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host));
	cr_assert_eq(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, 4), CU_DEVICE_CPU);
	cr_assert_eq(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, m, 4),
		     CU_MEM_LOCATION_TYPE_HOST);
	OK(cuMemAdvise(m + half, half, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev0));
	cr_assert_eq(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, WORDS * 4),
		     CU_DEVICE_INVALID, "two locations");
	cr_assert_eq(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, m + half, half), 0);
	OK(cuMemAdvise(m, WORDS * 4, CU_MEM_ADVISE_SET_ACCESSED_BY, dev0));
	OK(cuMemAdvise(m, half, CU_MEM_ADVISE_SET_ACCESSED_BY, host));
	OK(cuMemRangeGetAttribute(by, sizeof(by), CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m, half));
	cr_assert(by[0] == 0 && by[1] == CU_DEVICE_CPU && by[2] == CU_DEVICE_INVALID);
	OK(cuMemRangeGetAttribute(by, sizeof(by), CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m,
				  WORDS * 4));
	cr_assert(by[0] == 0 && by[1] == CU_DEVICE_INVALID);
	OK(cuMemAdvise(m, WORDS * 4, CU_MEM_ADVISE_UNSET_ACCESSED_BY, dev0));
	OK(cuMemRangeGetAttribute(by, 4, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m + half, half));
	cr_assert_eq(by[0], CU_DEVICE_INVALID);

	cr_assert_eq(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, 4),
		     CU_DEVICE_INVALID);
	OK(cuMemPrefetchAsync(m, WORDS * 4, dev0, 0, NULL));
	cr_assert_eq(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, WORDS * 4), 0);
	OK(cuMemPrefetchAsync(m, 4, host, 0, NULL));
	cr_assert_eq(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, 4),
		     CU_DEVICE_CPU);
	cr_assert_eq(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, m, 4),
		     CU_MEM_LOCATION_TYPE_HOST);
	OK(cuStreamAttachMemAsync(NULL, m, 0, CU_MEM_ATTACH_GLOBAL));
	OK(cuCtxSynchronize());

	/* what the driver refuses */
	cr_assert_eq(cuMemAdvise(plain, 64, CU_MEM_ADVISE_SET_READ_MOSTLY, dev0),
		     CUDA_ERROR_INVALID_VALUE, "not managed memory");
	cr_assert_eq(cuMemAdvise(m, WORDS * 4 + 1, CU_MEM_ADVISE_SET_READ_MOSTLY, dev0),
		     CUDA_ERROR_INVALID_VALUE, "past the allocation");
	cr_assert_eq(cuMemAdvise(m, 64, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, bad),
		     CUDA_ERROR_INVALID_VALUE, "no such device");
	cr_assert_eq(cuMemPrefetchAsync(m, 64, dev0, 1, NULL), CUDA_ERROR_INVALID_VALUE);
	cr_assert_eq(cuMemRangeGetAttribute(&v, 8, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 4),
		     CUDA_ERROR_INVALID_VALUE, "a 4-byte attribute");
	cr_assert_eq(cuStreamAttachMemAsync(NULL, m + 64, 0, CU_MEM_ATTACH_GLOBAL),
		     CUDA_ERROR_INVALID_VALUE, "not the allocation's start");
	cr_assert_eq(cuStreamAttachMemAsync(NULL, m, 0, CU_MEM_ATTACH_SINGLE),
		     CUDA_ERROR_INVALID_VALUE, "single: not a default stream");
	OK(cuMemFree(m));
	cr_assert_eq(cuMemRangeGetAttribute(&v, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 4),
		     CUDA_ERROR_INVALID_VALUE, "freed");
	OK(cuMemFree(plain));
}

/*
 * In a child of the test: managed memory the GPU wrote, then pages the CPU
 * wrote and no launch has taken yet, and advice. Exit 0 after the save;
 * restored, 42 when the CPU sees what it saw, a launch sees the CPU's last
 * writes, later CPU writes still reach the GPU, and the advice is kept; 3 and
 * up otherwise.
 */
static int save_with_managed(const char *image)
{
	CUmemLocation dev0 = { CU_MEM_LOCATION_TYPE_DEVICE, 0 };
	CUdeviceptr m, counter;
	CUfunction f;
	size_t csize;
	uint32_t *h;
	int32_t rm = 0;
	int r;

	sc_test_start();
	if (cuModuleGetGlobal(&counter, &csize, sc_test_load(&f), "counter") ||
	    cuMemAllocManaged(&m, WORDS * 4, CU_MEM_ATTACH_GLOBAL))
		return 1;
	h = (uint32_t *)(uintptr_t)m;
	for (uint32_t i = 0; i < WORDS; i++)
		h[i] = i;
	if (step(f, m, counter, NULL) || cuCtxSynchronize() ||
	    cuMemAdvise(m, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, dev0))
		return 1;
	h[1] = 1000; /* the CPU's, not yet on the device */
	h[WORDS - 2] = 2000;
	r = selfckpt_save(image);
	if (r == SELFCKPT_SAVED)
		return 0;
	if (r != SELFCKPT_RESTORED)
		return 2;
	/* the numbers of the descriptors the library watched writes with are free: take them */
	for (int i = 0; i < 8; i++)
		open("/dev/null", O_RDONLY);
	if (h[0] != stepped(0) || h[1] != 1000 || h[WORDS - 2] != 2000 || h[7] != stepped(7))
		return 3;
	if (step(f, m, counter, NULL) || cuCtxSynchronize())
		return 4;
	if (h[1] != stepped(1000) || h[WORDS - 2] != stepped(2000) || h[7] != stepped(stepped(7)))
		return 5;
	h[3] = 3;
	if (step(f, m, counter, NULL) || cuCtxSynchronize() || h[3] != stepped(3))
		return 6;
	if (cuMemRangeGetAttribute(&rm, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 4096) ||
	    rm != 1)
		return 7;
	return 42;
}

Test(cuda_managed, managed_memory_comes_back_after_a_restart)
{
	char dir[] = "/tmp/sc-managed-XXXXXX";
	int status = sc_test_exit_after_restore(save_with_managed, dir);

	cr_assert_eq(status, 42, "restored: exit %d (3: host copy, 4: launch, 5: CPU writes "
		     "before the save, 6: after, 7: advice; see %s/out)", status, dir);
	sc_test_remove_dir(dir);
}

Test(cuda_managed, batches_of_prefetches_and_discards)
{
	CUmemLocation locs[2] = { { CU_MEM_LOCATION_TYPE_DEVICE, 0 }, { CU_MEM_LOCATION_TYPE_HOST, 0 } };
	CUdeviceptr m, p[3];
	size_t sizes[3] = { 4096, 4096, 4096 }, idx[2] = { 0, 2 }, bad_idx[2] = { 1, 2 };
	uint32_t *h;
	CUstream s;

	sc_test_start();
	OK(cuStreamCreate(&s, 0));
	OK(cuMemAllocManaged(&m, WORDS * 4, CU_MEM_ATTACH_GLOBAL));
	h = (uint32_t *)(uintptr_t)m;
	h[0] = 42;
	for (int i = 0; i < 3; i++)
		p[i] = m + 4096u * (unsigned)i;
	OK(cuMemPrefetchBatchAsync(p, sizes, 3, locs, idx, 2, 0, s));
	cr_assert_eq(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, 8192), 0,
		     "the first two to the device");
	cr_assert_eq(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, p[2], 4096),
		     CU_DEVICE_CPU, "the third to the host");
	cr_assert_eq(cuMemPrefetchBatchAsync(p, sizes, 3, locs, bad_idx, 2, 0, s),
		     CUDA_ERROR_INVALID_VALUE, "the first index must be 0");
	cr_assert_eq(cuMemPrefetchBatchAsync(p, sizes, 3, locs, idx, 2, 0, NULL),
		     CUDA_ERROR_INVALID_VALUE, "not the legacy stream");
	OK(cuMemDiscardBatchAsync(p, sizes, 3, 0, s));
	OK(cuMemDiscardAndPrefetchBatchAsync(p, sizes, 3, locs, idx, 2, 0, s));
	sizes[1] = WORDS * 4;
	cr_assert_eq(cuMemDiscardBatchAsync(p, sizes, 3, 0, s), CUDA_ERROR_INVALID_VALUE,
		     "past the allocation");
	OK(cuStreamSynchronize(s));
	cr_assert_eq(h[0], 42, "a discard may keep the data; this one does");
	OK(cuMemFree(m));
}

/* A module with two __managed__ variables next to each other, sharing a page. */
static CUmodule managed_module(CUfunction *f, CUdeviceptr *words, CUdeviceptr *count)
{
	char text[sizeof(sc_test_kernels) + 256];
	CUmodule m;
	size_t size;

	snprintf(text, sizeof(text), ".version 8.0\n.target sm_90\n// softcuda library %s\n"
		 ".entry step (8, 8, 8)\n// softcuda managed words 1000\n"
		 "// softcuda managed count 4\n// softcuda global plain 4\n", sc_test_kernels);
	if (cuModuleLoadData(&m, text) || cuModuleGetFunction(f, m, "step") ||
	    cuModuleGetGlobal(words, &size, m, "words") || size != 1000 ||
	    cuModuleGetGlobal(count, &size, m, "count") || size != 4)
		return NULL;
	return m;
}

/* step over the 250 words of @words, bumping @count: both __managed__. */
static CUresult step_variables(CUfunction f, CUdeviceptr words, CUdeviceptr count)
{
	uint64_t n = 250;
	void *params[] = { &words, &n, &count };

	return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
}

Test(cuda_managed, managed_module_variables_are_the_cpus_too)
{
	CUdeviceptr words, count, plain;
	uint32_t *w, *c;
	unsigned managed = 0;
	size_t size;
	CUfunction f;
	CUmodule m;

	sc_test_start();
	cr_assert_not_null(m = managed_module(&f, &words, &count));
	w = (uint32_t *)(uintptr_t)words;
	c = (uint32_t *)(uintptr_t)count;
	cr_assert_eq(*c, 0);
	for (uint32_t i = 0; i < 250; i++)
		w[i] = i;
	OK(step_variables(f, words, count));
	OK(cuCtxSynchronize());
	for (uint32_t i = 0; i < 250; i++)
		cr_assert_eq(w[i], stepped(i), "word %u", i);
	cr_assert_eq(*c, 1, "the kernel's count, on a page the two share");
	*c = 10; /* the CPU writes only the shared page's second variable */
	OK(step_variables(f, words, count));
	OK(cuCtxSynchronize());
	cr_assert_eq(*c, 11);
	cr_assert_eq(w[0], stepped(stepped(0)));
	OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, count));
	cr_assert_eq(managed, 1);
	OK(cuModuleGetGlobal(&plain, &size, m, "plain"));
	cr_assert_eq(size, 4, "a plain global beside them");
	OK(cuModuleUnload(m));
	cr_assert_eq(msync((void *)((uintptr_t)w & ~(uintptr_t)4095), 4096, MS_ASYNC), -1,
		     "the host copies go with the module");
}

Test(cuda_managed, a_librarys_managed_variables)
{
	char text[sizeof(sc_test_kernels) + 256];
	CUdeviceptr p;
	CUlibrary lib;
	size_t size = 0;

	sc_test_start();
	snprintf(text, sizeof(text), ".version 8.0\n.target sm_90\n// softcuda library %s\n"
		 ".entry step (8, 8, 8)\n// softcuda managed total 8\n// softcuda global plain 4\n",
		 sc_test_kernels);
	OK(cuLibraryLoadData(&lib, text, NULL, NULL, 0, NULL, NULL, 0));
	OK(cuLibraryGetManaged(&p, &size, lib, "total"));
	cr_assert_eq(size, 8);
	*(uint64_t *)(uintptr_t)p = 77;
	cr_assert_eq(cuLibraryGetManaged(&p, &size, lib, "plain"), CUDA_ERROR_NOT_FOUND);
	OK(cuLibraryUnload(lib));
}

/*
 * In a child of the test: __managed__ variables the GPU wrote, then the CPU
 * (not yet sent). Exit 0 after the save; restored, 42 when the CPU sees what
 * it saw and a launch takes it; 3 and up otherwise.
 */
static int save_with_variables(const char *image)
{
	CUdeviceptr words, count;
	uint32_t *w, *c;
	CUfunction f;
	int r;

	sc_test_start();
	if (!managed_module(&f, &words, &count))
		return 1;
	w = (uint32_t *)(uintptr_t)words;
	c = (uint32_t *)(uintptr_t)count;
	for (uint32_t i = 0; i < 250; i++)
		w[i] = i;
	if (step_variables(f, words, count) || cuCtxSynchronize())
		return 1;
	w[3] = 300;
	r = selfckpt_save(image);
	if (r == SELFCKPT_SAVED)
		return 0;
	if (r != SELFCKPT_RESTORED)
		return 2;
	for (int i = 0; i < 8; i++)
		open("/dev/null", O_RDONLY);
	if (w[3] != 300 || w[4] != stepped(4) || *c != 1)
		return 3;
	if (step_variables(f, words, count) || cuCtxSynchronize())
		return 4;
	if (w[3] != stepped(300) || w[4] != stepped(stepped(4)) || *c != 2)
		return 5;
	return 42;
}

Test(cuda_managed, managed_variables_come_back_after_a_restart)
{
	char dir[] = "/tmp/sc-managed-var-XXXXXX";
	int status = sc_test_exit_after_restore(save_with_variables, dir);

	cr_assert_eq(status, 42, "restored: exit %d (3: host copy, 4: launch, 5: values; see %s/out)",
		     status, dir);
	sc_test_remove_dir(dir);
}
