/* SPDX-License-Identifier: MIT */
/*
 * heap - a large touched heap and an untouched reservation across a checkpoint.
 *
 * ARGS: [MIB] (default 1024): the heap filled with a page-wise pattern, some
 * pages all zero, before point 1. After it the pattern is checked, changed and summed again, and a
 * part of the 512 MiB PROT_NONE reservation is made usable and written.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

#include "prog.h"

#define PAGE 4096u
#define RESERVE (512ull << 20)

static uint64_t page_word(uint64_t i)
{
	return (i + 1) * 0x9E3779B97F4A7C15ull;
}

/*
 * Some pages stay zero, as in a real heap: every other page in one 16 MiB
 * block, every fifth in the next, so that an image's windows take their data
 * in reads of varying room.
 */
static bool zero_page(uint64_t i)
{
	return (i >> 12) & 1 ? i % 2 == 0 : i % 5 == 0;
}

/* Word 0 of each page is its own; the rest repeats one byte: quick to fill and to pack. */
static void fill(uint8_t *heap, uint64_t pages)
{
	for (uint64_t i = 0; i < pages; i++) {
		uint8_t *pg = heap + i * PAGE;

		memset(pg, zero_page(i) ? 0 : (int)(i & 0xff), PAGE);
		if (!zero_page(i))
			*(uint64_t *)pg = page_word(i);
	}
}

static uint64_t checksum(const uint8_t *heap, uint64_t pages)
{
	const uint64_t *w = (const uint64_t *)heap;
	uint64_t sum = 0;

	/* position-dependent, and simple enough to vectorize: 1 GiB in a blink */
	for (uint64_t k = 0; k < pages * PAGE / 8; k++)
		sum += w[k] ^ k;
	return sum;
}

static uint64_t bad_pages(const uint8_t *heap, uint64_t pages)
{
	uint64_t bad = 0;

	for (uint64_t i = 0; i < pages; i++) {
		const uint8_t *pg = heap + i * PAGE;

		uint8_t b = zero_page(i) ? 0 : (uint8_t)i;

		bad += *(const uint64_t *)pg != (zero_page(i) ? 0 : page_word(i)) || pg[8] != b ||
		       pg[PAGE - 100] != b || pg[PAGE - 1] != b;
	}
	return bad;
}

int main(int argc, char **argv)
{
	struct prog p;
	uint64_t mib, pages, sum, now, bad;
	uint8_t *heap, *res;

	prog_init(&p, argc, argv);
	mib = p.argc > 0 ? strtoull(p.argv[0], NULL, 10) : 1024;
	pages = (mib << 20) / PAGE;
	heap = malloc(mib << 20);
	res = mmap(NULL, RESERVE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!heap || res == MAP_FAILED)
		prog_die("cannot allocate %llu MiB and reserve 512 MiB", (unsigned long long)mib);
	fill(heap, pages);
	sum = checksum(heap, pages);
	printf("heap %llu MiB, checksum %016llx\n", (unsigned long long)mib,
	       (unsigned long long)sum);

	prog_checkpoint(&p, 1);

	bad = bad_pages(heap, pages);
	prog_check("pattern intact", bad == 0, "%llu bad pages", (unsigned long long)bad);
	now = checksum(heap, pages);
	prog_check("checksum unchanged", now == sum, "now %016llx", (unsigned long long)now);
	for (uint64_t i = 0; i < pages; i += 7)
		heap[i * PAGE + 100] ^= 0x5a;
	printf("changed checksum %016llx\n", (unsigned long long)checksum(heap, pages));
	if (mprotect(res + RESERVE / 2, 64u << 20, PROT_READ | PROT_WRITE))
		prog_die("mprotect in the reservation: %s", strerror(errno));
	prog_check("reservation reads zero", res[RESERVE / 2] == 0 &&
		   res[RESERVE / 2 + (64u << 20) - 1] == 0, "not zero");
	memset(res + RESERVE / 2, 0x33, 64u << 20);
	printf("reservation checksum %016llx\n",
	       (unsigned long long)checksum(res + RESERVE / 2, (64u << 20) / PAGE));

	prog_checkpoint(&p, 2);

	for (uint64_t i = 0; i < pages; i += 5)
		heap[i * PAGE + 200] += 3;
	printf("final checksum %016llx\n", (unsigned long long)checksum(heap, pages));
	free(heap);
	munmap(res, RESERVE);
	return 0;
}
