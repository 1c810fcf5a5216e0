/* SPDX-License-Identifier: MIT */
/*
 * growth - memory grows after a restart: the program break goes on from
 * where it was (sbrk, and malloc's main arena), 256 MiB more come from mmap,
 * and a deep recursion grows the main stack by several MiB.
 */
#include <malloc.h>
#include <sys/resource.h>

#include "prog.h"

#define BIG (256u << 20)
#define SMALL_N 4096
#define SMALL_LEN 4000
#define FRAME 4096
#define DEPTH 1536 /* 6 MiB of stack */

static char *small[SMALL_N]; /* kept: the next round must grow the break again */

__attribute__((noinline)) static uint64_t recurse(int depth)
{
	volatile char frame[FRAME];
	uint64_t r;

	frame[0] = (char)depth;
	frame[FRAME - 1] = (char)(depth >> 3);
	if (depth == 0)
		return 1;
	r = recurse(depth - 1);
	return r * 3 + (uint8_t)frame[0] + (uint8_t)frame[FRAME - 1];
}

static uint64_t touch(char *b, size_t len, int seed)
{
	uint64_t s = 0;

	for (size_t i = 0; i < len; i += 4096) {
		b[i] = (char)(i / 4096 + (size_t)seed);
		s += (uint8_t)b[i];
	}
	return s;
}

static void grow(int round)
{
	char *brk0 = sbrk(0), *got, *big;
	uint64_t s = 0;

	for (int i = 0; i < SMALL_N; i++) {
		small[i] = malloc(SMALL_LEN);
		if (!small[i])
			prog_die("malloc of small blocks failed");
		s += touch(small[i], SMALL_LEN, i + round);
	}
	printf("round %d: small blocks %llu\n", round, (unsigned long long)s);
	prog_check("the main arena grew the break", (char *)sbrk(0) > brk0, "brk %p -> %p", brk0,
		   sbrk(0));
	brk0 = sbrk(0);
	got = sbrk(1 << 20);
	prog_check("sbrk(1 MiB)", got == brk0 && (char *)sbrk(0) == brk0 + (1 << 20),
		   "returned %p, break %p, was %p", got, sbrk(0), brk0);
	if (got == brk0)
		memset(got, 0x11, 1 << 20);
	big = malloc(BIG);
	if (!big)
		prog_die("malloc(256 MiB) failed");
	printf("round %d: 256 MiB %llu\n", round, (unsigned long long)touch(big, BIG, round));
	free(big);
	printf("round %d: recursion %llu\n", round, (unsigned long long)recurse(DEPTH));
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	struct prog p;
	char *brk_before;

	prog_init(&p, argc, argv);
	if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (8u << 20))
		prog_die("the stack limit (%llu) is below 8 MiB", (unsigned long long)rl.rlim_cur);
	mallopt(M_TRIM_THRESHOLD, 512 << 20); /* keep the break where the work left it */
	printf("recursion %llu\n", (unsigned long long)recurse(16));
	brk_before = sbrk(0);

	prog_checkpoint(&p, 1);

	prog_check("break kept", sbrk(0) == brk_before, "%p, was %p", sbrk(0), brk_before);
	grow(1);
	brk_before = sbrk(0);

	prog_checkpoint(&p, 2);

	prog_check("break kept again", sbrk(0) == brk_before, "%p, was %p", sbrk(0), brk_before);
	grow(2);
	return 0;
}
