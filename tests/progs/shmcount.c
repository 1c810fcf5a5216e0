/* SPDX-License-Identifier: MIT */
/*
 * shmcount.c - counts in shared memory (anonymous, and a memfd) and in
 * private memory side by side, one step at a time: at any instant both say
 * the same. Prints whether they still do at the end. Run under selfckpt-run
 * by tests/cli/test_instant.c: an image whose shared memory was read after
 * the instant holds counts ahead of the private ones.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SLOTS (1 << 18)
#define STEPS 60

int main(void)
{
	size_t size = SLOTS * sizeof(uint32_t);
	int fd = memfd_create("shmcount", 0);
	uint32_t *anon = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			      -1, 0);
	uint32_t *mem = fd < 0 || ftruncate(fd, (off_t)size) ? MAP_FAILED :
			mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	uint32_t *priv = calloc(SLOTS, sizeof(uint32_t));
	uint64_t total = 0;

	if (anon == MAP_FAILED || mem == MAP_FAILED || !priv)
		return 3;
	for (int step = 0; step < STEPS; step++) {
		for (uint32_t i = 0; i < SLOTS; i++) {
			anon[i] += i & 7;
			mem[i] += i & 3;
			priv[i] += i & 7;
		}
		usleep(20000);
	}
	for (uint32_t i = 0; i < SLOTS; i++)
		total += priv[i];
	printf("%llu\n", (unsigned long long)total);
	printf("anonymous shared memory %s\n",
	       memcmp(anon, priv, size) ? "differs from private" : "agrees with private");
	for (uint32_t i = 0; i < SLOTS; i++)
		if (mem[i] != (uint32_t)STEPS * (i & 3)) {
			printf("memfd differs at %u\n", i);
			return 0;
		}
	printf("memfd agrees\n");
	return 0;
}
