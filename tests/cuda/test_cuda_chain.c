/* SPDX-License-Identifier: MIT */
/*
 * Incremental images of a CUDA program on the software CUDA device: a
 * process with host and device memory checkpoints three times with
 * SELFCKPT_INCREMENTAL. Between the first two it changes a few host pages, a
 * small allocation whole, and one word of a large one; then nothing of the
 * device. The second image leaves its unchanged host pages and the unchanged
 * pieces of device memory to the first (spec §9.14, R-INC-6), the third all
 * its device memory to the second, which gives it in turn from the first
 * where it did not store it. The chain restores, and after selfckpt-merge
 * without its parents; a parent whose device memory is damaged, or missing,
 * is refused before anything is restored. The device is a test double and
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
#include "format/sc_format.h"
#include "selfckpt.h"
#include "tests/core/chain_harness.h"
#include "tests/cuda/cuda_api_harness.h"

TestSuite(cuda_chain, .init = sc_test_use_software_device, .timeout = 120);

#define HOST_PAGES 2048 /* 8 MiB */
#define DEV_WORDS (1u << 20)
#define BIG_WORDS ((6u << 20) + 4096) /* 24 MiB and 16 KiB: pieces of 8 MiB, the last short */
#define BIG_CHANGED (3u << 20)         /* the word that changes, 12 MiB in */
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

static uint32_t big_word(uint32_t i, bool changed)
{
	return changed && i == BIG_CHANGED ? 0xc0ffee : i * 2654435761u + 1;
}

/* The restored process's memory as it was at the last image: every word where it should be. */
static bool memory_right(const uint8_t *host, long page, CUdeviceptr d, CUdeviceptr big)
{
	uint32_t *words = malloc(BIG_WORDS * sizeof(*words));
	bool right = words && !cuMemcpyDtoH(words, d, DEV_WORDS * sizeof(*words));

	for (int i = 0; right && i < HOST_PAGES; i++)
		right = host[i * page] == (uint8_t)(i % 20 == 0 ? 0xa5 : i) &&
			host[i * page + 7] == (uint8_t)(i * 3);
	for (uint32_t i = 0; right && i < DEV_WORDS; i++)
		right = words[i] == stepped(i, 2);
	right = right && !cuMemcpyDtoH(words, big, BIG_WORDS * sizeof(*words));
	for (uint32_t i = 0; right && i < BIG_WORDS; i++)
		right = words[i] == big_word(i, true);
	free(words);
	return right;
}

/*
 * Three images, dir/img.0.sckpt (full), dir/img.1.sckpt and dir/img.2.sckpt:
 * 5% of the host pages, every word of d and one word of big change between
 * the first two, nothing of the device after. Exits 0 once saved; restored
 * from an image, RESTORED_RIGHT where its memory is that of the last.
 */
static int save_thrice(const char *image)
{
	char first[4096], second[4096], third[4096];
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *host = mmap(NULL, HOST_PAGES * page, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t n = DEV_WORDS;
	CUdeviceptr d, counter, big;
	CUfunction step;
	void *params[] = { &d, &n, &counter };
	uint32_t *init = malloc(BIG_WORDS * sizeof(*init)), changed = big_word(BIG_CHANGED, true);
	int r;

	if (host == MAP_FAILED || !init)
		return 1;
	setenv("SELFCKPT_INCREMENTAL", "4", 1);
	sc_settings_reload();
	image_k(first, sizeof(first), image, 0);
	image_k(second, sizeof(second), image, 1);
	image_k(third, sizeof(third), image, 2);
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
	for (uint32_t i = 0; i < BIG_WORDS; i++)
		init[i] = big_word(i, false);
	if (cuMemAlloc(&big, BIG_WORDS * sizeof(*init)) ||
	    cuMemcpyHtoD(big, init, BIG_WORDS * sizeof(*init)))
		return 1;
	free(init);
	if ((r = selfckpt_save(first)) != SELFCKPT_SAVED)
		return r == SELFCKPT_RESTORED ? 5 : 2; /* the tests restore the last only */
	for (int i = 0; i < HOST_PAGES; i += 20)
		host[i * page] = 0xa5;
	if (cuLaunchKernel(step, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL) || cuCtxSynchronize() ||
	    cuMemcpyHtoD(big + BIG_CHANGED * sizeof(changed), &changed, sizeof(changed)))
		return 1;
	if ((r = selfckpt_save(second)) != SELFCKPT_SAVED)
		return r == SELFCKPT_RESTORED ? 6 : 2;
	r = selfckpt_save(third);
	if (r == SELFCKPT_SAVED)
		return 0;
	if (r != SELFCKPT_RESTORED)
		return 2;
	return memory_right(host, page, d, big) ? RESTORED_RIGHT : 3;
}

/* Run @cmd (a shell line); its exit status, which must not be a signal's. */
static int shell(const char *cmd)
{
	int status = system(cmd);

	cr_assert(WIFEXITED(status), "'%s' ended by a signal: %#x", cmd, status);
	return WEXITSTATUS(status);
}

/* The chain of save_thrice() in a new directory: @dir, and its images' paths. */
static void make_chain(char *dir, char img[3][4096])
{
	char image[4096];
	int status = sc_test_exit_in_dir(save_thrice, dir, image, sizeof(image));

	cr_assert_eq(status, 0, "exit %d before the restore", status);
	for (int k = 0; k < 3; k++)
		image_k(img[k], sizeof(img[k]), image, k);
	cr_assert(!incremental(img[0]), "the first image is incremental");
	cr_assert(incremental(img[1]) && incremental(img[2]), "an image after the first is full");
}

/*
 * How many pieces of device memory selfckpt-inspect says @image leaves to its
 * parent, in its text and in its JSON, which must agree.
 */
static unsigned long pieces_left(const char *build, const char *image)
{
	char cmd[8400], line[4096];
	unsigned long n = 0, json = ~0ul;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s/bin/selfckpt-inspect %s", build, image);
	cr_assert(f = popen(cmd, "r"));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "left to the parent %lu pieces", &n) == 1)
			break;
	pclose(f);
	snprintf(cmd, sizeof(cmd), "%s/bin/selfckpt-inspect --json %s", build, image);
	cr_assert(f = popen(cmd, "r"));
	while (fgets(line, sizeof(line), f)) {
		const char *at = strstr(line, "\"parent_pieces\": ");

		if (at)
			json = strtoul(at + strlen("\"parent_pieces\": "), NULL, 10);
	}
	pclose(f);
	cr_assert_eq(json, n, "'%s': %lu pieces left to the parent in JSON, %lu in text", image,
		     json, n);
	return n;
}

/* Flip a byte in the middle of the largest devmem record of @path. */
static void damage_device_memory(const char *path)
{
	const struct sc_index_entry *e;
	struct sc_reader *r;
	size_t n, best = SIZE_MAX;
	FILE *f;
	int c;

	cr_assert_eq(sc_reader_open(&r, path, NULL), 0);
	cr_assert_eq(sc_reader_index(r, &e, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (e[i].type == SC_REC_DEVMEM && (best == SIZE_MAX || e[i].raw_len > e[best].raw_len))
			best = i;
	cr_assert_neq(best, SIZE_MAX, "'%s' holds no device memory", path);
	cr_assert(f = fopen(path, "r+b"));
	fseeko(f, (off_t)(e[best].offset + e[best].stored_len / 2), SEEK_SET);
	c = fgetc(f);
	fseeko(f, (off_t)(e[best].offset + e[best].stored_len / 2), SEEK_SET);
	fputc(c ^ 0x5a, f);
	fclose(f);
	sc_reader_free(r);
}

Test(cuda_chain, an_incremental_image_of_a_cuda_program_restores_and_merges)
{
	const char *build = getenv("SELFCKPT_BUILD") ? getenv("SELFCKPT_BUILD") : "build";
	char dir[] = "/tmp/sc-cuda-chain-XXXXXX", img[3][4096], merged[4200], cmd[32768];
	int status;

	make_chain(dir, img);
	/* big's 4 pieces: 3 unchanged in the second image; all 4 and d's in the third */
	cr_assert_geq(pieces_left(build, img[1]), 3, "the second image stores unchanged pieces");
	cr_assert_geq(pieces_left(build, img[2]), 5, "the third image stores unchanged pieces");
	snprintf(cmd, sizeof(cmd), "%s/bin/selfckpt-restore %s > %s/out 2>&1", build, img[2], dir);
	status = shell(cmd);
	cr_assert_eq(status, RESTORED_RIGHT, "restored from the chain: exit %d (see %s/out)",
		     status, dir);
	snprintf(merged, sizeof(merged), "%s/merged.sckpt", dir);
	snprintf(cmd, sizeof(cmd), "%s/bin/selfckpt-merge -o %s %s > %s/merge.out 2>&1 && rm %s %s "
		 "&& %s/bin/selfckpt-restore %s > %s/out 2>&1", build, merged, img[2], dir, img[0],
		 img[1], build, merged, dir);
	status = shell(cmd);
	cr_assert_eq(status, RESTORED_RIGHT, "restored from the merged image: exit %d (see %s)",
		     status, dir);
	cr_assert(!incremental(merged));
	cr_assert_eq(pieces_left(build, merged), 0);
	sc_test_remove_dir(dir);
}

/*
 * The chain made with the device memory copied aside in another way at each
 * instant (SELFCKPT_CUDA_CAPTURE=@capture): the pieces left to a parent are
 * the same, and the chain restores.
 */
static void restores_captured(const char *capture)
{
	const char *build = getenv("SELFCKPT_BUILD") ? getenv("SELFCKPT_BUILD") : "build";
	char dir[] = "/tmp/sc-cuda-chain-XXXXXX", img[3][4096], cmd[16384];
	int status;

	setenv("SELFCKPT_CUDA_CAPTURE", capture, 1);
	make_chain(dir, img);
	unsetenv("SELFCKPT_CUDA_CAPTURE");
	cr_assert_geq(pieces_left(build, img[1]), 3, "capture %s: the second image stores "
		      "unchanged pieces", capture);
	snprintf(cmd, sizeof(cmd), "%s/bin/selfckpt-restore %s > %s/out 2>&1", build, img[2], dir);
	status = shell(cmd);
	cr_assert_eq(status, RESTORED_RIGHT, "capture %s: restored from the chain: exit %d (see "
		     "%s/out)", capture, status, dir);
	sc_test_remove_dir(dir);
}

Test(cuda_chain, with_the_copy_in_host_memory_the_chain_restores)
{
	restores_captured("host");
}

Test(cuda_chain, with_the_memory_read_in_place_the_chain_restores)
{
	restores_captured("off");
}

/* Restore @image; its exit status, and its output in @out. */
static int restore_refused(const char *build, const char *dir, const char *image, char *out,
			   size_t n)
{
	char cmd[16384];
	FILE *f;
	size_t got;
	int status;

	snprintf(cmd, sizeof(cmd), "%s/bin/selfckpt-restore %s > %s/out 2>&1", build, image, dir);
	status = shell(cmd);
	snprintf(cmd, sizeof(cmd), "%s/out", dir);
	cr_assert(f = fopen(cmd, "r"));
	got = fread(out, 1, n - 1, f);
	out[got] = 0;
	fclose(f);
	return status;
}

Test(cuda_chain, a_parent_with_damaged_device_memory_is_refused_before_the_restore)
{
	const char *build = getenv("SELFCKPT_BUILD") ? getenv("SELFCKPT_BUILD") : "build";
	char dir[] = "/tmp/sc-cuda-chain-XXXXXX", img[3][4096], out[8192];
	int status;

	make_chain(dir, img);
	damage_device_memory(img[0]);
	status = restore_refused(build, dir, img[2], out, sizeof(out));
	cr_assert_eq(status, 65, "exit %d, not 65 (data error): %s", status, out);
	cr_assert(strstr(out, img[0]) && strstr(out, "nothing was restored"),
		  "the refusal names the damaged parent and says nothing was restored: %s", out);
	sc_test_remove_dir(dir);
}

Test(cuda_chain, a_missing_parent_is_refused_before_the_restore)
{
	const char *build = getenv("SELFCKPT_BUILD") ? getenv("SELFCKPT_BUILD") : "build";
	char dir[] = "/tmp/sc-cuda-chain-XXXXXX", img[3][4096], out[8192];
	int status;

	make_chain(dir, img);
	cr_assert_eq(unlink(img[0]), 0);
	status = restore_refused(build, dir, img[2], out, sizeof(out));
	cr_assert_eq(status, 66, "exit %d, not 66 (no input): %s", status, out);
	cr_assert(strstr(out, img[0]), "the refusal names the missing parent: %s", out);
	sc_test_remove_dir(dir);
}
