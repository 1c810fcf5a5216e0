/* SPDX-License-Identifier: MIT */
/*
 * mapfile - a private, writable mapping of a data file across a checkpoint:
 * its clean pages come back from the file, the changed ones from the image.
 * The tests also use it for the restores that must be refused.
 *
 * ARGS: FILE, made by the test (any content, at least two pages).
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include "prog.h"

static uint64_t sum(const uint8_t *b, size_t n)
{
	uint64_t s = 0;

	for (size_t i = 0; i < n; i++)
		s = s * 131 + b[i];
	return s;
}

int main(int argc, char **argv)
{
	struct prog p;
	struct stat st;
	uint8_t *m;
	int fd;

	prog_init(&p, argc, argv);
	if (p.argc < 1)
		prog_die("usage: mapfile IMAGE|- DIR FILE");
	fd = open(p.argv[0], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) || st.st_size < 8192)
		prog_die("cannot open %s (two pages at least): %s", p.argv[0], strerror(errno));
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		prog_die("cannot map %s: %s", p.argv[0], strerror(errno));
	close(fd);
	printf("mapped %lld bytes, sum %016llx\n", (long long)st.st_size,
	       (unsigned long long)sum(m, (size_t)st.st_size));
	memset(m + 4096, 0xab, 100); /* page 1 is now the process's own */

	prog_checkpoint(&p, 1);

	printf("after: sum %016llx\n", (unsigned long long)sum(m, (size_t)st.st_size));
	m[0] ^= 1;
	printf("changed: sum %016llx\n", (unsigned long long)sum(m, (size_t)st.st_size));

	prog_checkpoint(&p, 2);

	printf("later: sum %016llx\n", (unsigned long long)sum(m, (size_t)st.st_size));
	munmap(m, (size_t)st.st_size);
	return 0;
}
