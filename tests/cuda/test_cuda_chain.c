/* SPDX-License-Identifier: MIT */
/*
 * Incremental images of a CUDA program on the software CUDA device: a
 * process with host and device memory checkpoints twice with
 * SELFCKPT_INCREMENTAL, changing a few host pages and all its device memory
 * in between. The second image leaves its unchanged host pages to the first
 * and holds the device memory whole (spec §9.14); it restores with both, and
 * after selfckpt-merge without its parent. The device is a test double and
 * proves nothing about GPUs (make gpu-test does).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/sc_settings.h"
#include "selfckpt.h"
#include "tests/core/chain_harness.h"
#include "tests/cuda/cuda_api_harness.h"

TestSuite(cuda_chain, .init = sc_test_use_software_device, .timeout = 120);

#define HOST_PAGES 2048 /* 8 MiB */
#define DEV_WORDS (1u << 20)
#define RESTORED_RIGHT 42

/* The images next to @image (dir/img.sckpt): dir/img.@k.sckpt. */
static void image_k(char *out, size_t n, const char *image, int k)
{
	snprintf(out, n, "%.*simg.%d.sckpt", (int)(strrchr(image, '/') + 1 - image), image, k);
}

static uint32_t stepped(uint32_t v, int times)
{
	while (times-- > 0)
		v = v * 1664525u + 1013904223u;
	return v;
}

/* The restored process's memory as it was at the second image: every word where it should be. */
static bool memory_right(const uint8_t *host, long page, CUdeviceptr d)
{
	uint32_t *words = malloc(DEV_WORDS * sizeof(*words));
	bool right = words && !cuMemcpyDtoH(words, d, DEV_WORDS * sizeof(*words));

	for (int i = 0; right && i < HOST_PAGES; i++)
		right = host[i * page] == (uint8_t)(i % 20 == 0 ? 0xa5 : i) &&
			host[i * page + 7] == (uint8_t)(i * 3);
	for (uint32_t i = 0; right && i < DEV_WORDS; i++)
		right = words[i] == stepped(i, 2);
	free(words);
	return right;
}

/*
 * Two images, dir/img.0.sckpt (full) and dir/img.1.sckpt: 5% of the host
 * pages and every device word change in between. Exits 0 once saved; restored
 * from the second, RESTORED_RIGHT where its memory is right.
 */
static int save_twice(const char *image)
{
	char first[4096], second[4096];
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *host = mmap(NULL, HOST_PAGES * page, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t n = DEV_WORDS;
	CUdeviceptr d, counter;
	CUfunction step;
	void *params[] = { &d, &n, &counter };
	uint32_t *init = malloc(DEV_WORDS * sizeof(*init));
	int r;

	if (host == MAP_FAILED || !init)
		return 1;
	setenv("SELFCKPT_INCREMENTAL", "4", 1);
	sc_settings_reload();
	image_k(first, sizeof(first), image, 0);
	image_k(second, sizeof(second), image, 1);
	madvise(host, HOST_PAGES * page, MADV_NOHUGEPAGE);
	for (int i = 0; i < HOST_PAGES; i++) {
		host[i * page] = (uint8_t)i;
		host[i * page + 7] = (uint8_t)(i * 3);
	}
	for (uint32_t i = 0; i < DEV_WORDS; i++)
		init[i] = i;
	sc_test_start();
	sc_test_load(&step);
	if (cuMemAlloc(&d, DEV_WORDS * sizeof(*init)) || cuMemAlloc(&counter, 4) ||
	    cuMemcpyHtoD(d, init, DEV_WORDS * sizeof(*init)) ||
	    cuLaunchKernel(step, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL) || cuCtxSynchronize())
		return 1;
	free(init);
	if ((r = selfckpt_save(first)) != SELFCKPT_SAVED)
		return r == SELFCKPT_RESTORED ? 5 : 2; /* the tests restore the second only */
	for (int i = 0; i < HOST_PAGES; i += 20)
		host[i * page] = 0xa5;
	if (cuLaunchKernel(step, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL) || cuCtxSynchronize())
		return 1;
	r = selfckpt_save(second);
	if (r == SELFCKPT_SAVED)
		return 0;
	if (r != SELFCKPT_RESTORED)
		return 2;
	return memory_right(host, page, d) ? RESTORED_RIGHT : 3;
}

/* Run @cmd (a shell line); its exit status, which must not be a signal's. */
static int shell(const char *cmd)
{
	int status = system(cmd);

	cr_assert(WIFEXITED(status), "'%s' ended by a signal: %#x", cmd, status);
	return WEXITSTATUS(status);
}

Test(cuda_chain, an_incremental_image_of_a_cuda_program_restores_and_merges)
{
	const char *build = getenv("SELFCKPT_BUILD") ? getenv("SELFCKPT_BUILD") : "build";
	char dir[] = "/tmp/sc-cuda-chain-XXXXXX", image[4096], first[4096], second[4096];
	char merged[4200], cmd[16384];
	int status = sc_test_exit_in_dir(save_twice, dir, image, sizeof(image));

	cr_assert_eq(status, 0, "exit %d before the restore", status);
	image_k(first, sizeof(first), image, 0);
	image_k(second, sizeof(second), image, 1);
	cr_assert(!incremental(first), "the first image is incremental");
	cr_assert(incremental(second), "the second image is full: nothing was left to the first");
	snprintf(cmd, sizeof(cmd), "%s/bin/selfckpt-restore %s > %s/out 2>&1", build, second, dir);
	status = shell(cmd);
	cr_assert_eq(status, RESTORED_RIGHT, "restored from the chain: exit %d (see %s/out)",
		     status, dir);
	snprintf(merged, sizeof(merged), "%s/merged.sckpt", dir);
	snprintf(cmd, sizeof(cmd), "%s/bin/selfckpt-merge -o %s %s > %s/merge.out 2>&1 && rm %s && "
		 "%s/bin/selfckpt-restore %s > %s/out 2>&1", build, merged, second, dir, first,
		 build, merged, dir);
	status = shell(cmd);
	cr_assert_eq(status, RESTORED_RIGHT, "restored from the merged image: exit %d (see %s)",
		     status, dir);
	cr_assert(!incremental(merged));
	sc_test_remove_dir(dir);
}
