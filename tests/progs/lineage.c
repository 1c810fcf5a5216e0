/* SPDX-License-Identifier: MIT */
/*
 * lineage - a process that checkpoints itself several times, changing a
 * little of its memory in between, for the tests of incremental images
 * (tests/core/test_incremental.c):
 *
 *   lineage DIR ROUNDS [same]
 *
 * Round k changes every 20th page of 64 MiB (from page k), writes zeros over
 * every 40th (from page k + 10: pages read for the image that turn out all
 * zero, among the others), changes a word of the heap, drops one page
 * (MADV_DONTNEED) and reads it back as zeros, moves a mapping whose pages it
 * did not write since the last image over another (mremap), then writes
 * DIR/img.k.sckpt ("same": DIR/img.sckpt every round)
 * and prints "saved k SUM", SUM covering all that memory. The process
 * restored from image k prints "restored k SUM" and exits 0: the two SUMs
 * must be equal.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "selfckpt.h"

#define BYTES (64u << 20)
#define MOVED (1u << 20)

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

static uint64_t sum(const uint64_t *p, size_t words, uint64_t s)
{
	for (size_t i = 0; i < words; i++)
		s = mix(s + p[i] + i);
	return s;
}

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("lineage: mmap");
		exit(2);
	}
	madvise(p, len, MADV_NOHUGEPAGE); /* page by page, as the watch counts them */
	return p;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	int rounds = argc > 2 ? atoi(argv[2]) : 0;
	uint64_t *mem = map(BYTES), *heap = malloc(1 << 16);
	uint64_t *moved = map(MOVED), *spare = map(MOVED);
	char path[4096];

	if (argc < 3 || rounds < 1 || !heap) {
		fprintf(stderr, "usage: lineage DIR ROUNDS [same]\n");
		return 2;
	}
	for (size_t i = 0; i < BYTES / 8; i++)
		mem[i] = mix(i);
	for (size_t i = 0; i < MOVED / 8; i++) {
		moved[i] = mix(i + 7);
		spare[i] = mix(i + 11);
	}
	memset(heap, 1, 1 << 16);
	for (int k = 0; k < rounds; k++) {
		uint64_t *gone = mem + (size_t)(k + 3) * (size_t)page / 8;
		volatile uint64_t zero;
		int r;

		for (size_t pg = (size_t)k; pg < BYTES / (size_t)page; pg += 20)
			mem[pg * (size_t)page / 8 + 5] += (uint64_t)k + 1;
		for (size_t pg = (size_t)k + 10; pg < BYTES / (size_t)page; pg += 40)
			memset(mem + pg * (size_t)page / 8, 0, (size_t)page);
		heap[k] = (uint64_t)k * 3;
		madvise(gone, (size_t)page, MADV_DONTNEED);
		zero = *gone;
		(void)zero;
		if (k == 2) { /* unwritten pages of spare take the place of moved's */
			if (mremap(spare, MOVED, MOVED, MREMAP_MAYMOVE | MREMAP_FIXED, moved) != moved) {
				perror("lineage: mremap");
				return 2;
			}
			spare = map(MOVED);
			memset(spare, 5, MOVED);
		}
		if (argc > 3 && !strcmp(argv[3], "same"))
			snprintf(path, sizeof(path), "%s/img.sckpt", argv[1]);
		else
			snprintf(path, sizeof(path), "%s/img.%d.sckpt", argv[1], k);
		r = selfckpt_save(path);
		uint64_t s = sum(heap, 1 << 13, sum(moved, MOVED / 8, sum(mem, BYTES / 8, 0)));

		if (r == SELFCKPT_RESTORED) {
			printf("restored %d %016llx\n", k, (unsigned long long)s);
			return 0;
		}
		if (r != SELFCKPT_SAVED) {
			fprintf(stderr, "lineage: cannot write '%s': %s\n", path, selfckpt_last_error());
			return 1;
		}
		printf("saved %d %016llx\n", k, (unsigned long long)s);
		fflush(stdout);
	}
	return 0;
}
