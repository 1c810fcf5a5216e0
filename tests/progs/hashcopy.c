/* SPDX-License-Identifier: MIT */
/*
 * hashcopy.c - reads a file with a running hash, as sha256sum does, through a
 * descriptor and its dup() in turn, and writes a copy; at the end it prints
 * the hash and whether the copy is the file. Run under selfckpt-run by
 * tests/cli/test_instant.c: a restore from an image whose descriptor
 * positions are not those of its memory, or whose dup'd descriptors came
 * back apart, prints another hash or a copy that differs.
 *   hashcopy IN OUT
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define BLOCK 4096

static uint64_t hash_step(uint64_t h, const unsigned char *p, ssize_t n)
{
	for (ssize_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static uint64_t hash_file(const char *path)
{
	unsigned char buf[BLOCK];
	uint64_t h = 1469598103934665603ull;
	int fd = open(path, O_RDONLY);
	ssize_t n;

	while (fd >= 0 && (n = read(fd, buf, sizeof(buf))) > 0)
		h = hash_step(h, buf, n);
	if (fd >= 0)
		close(fd);
	return h;
}

int main(int argc, char **argv)
{
	unsigned char buf[BLOCK];
	uint64_t h = 1469598103934665603ull;
	int in, twin, out;
	long k = 0;
	ssize_t n;

	if (argc != 3)
		return 2;
	in = open(argv[1], O_RDONLY);
	twin = dup(in);
	out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || twin < 0 || out < 0)
		return 3;
	while ((n = read(k++ & 1 ? twin : in, buf, sizeof(buf))) > 0) {
		h = hash_step(h, buf, n);
		if (write(out, buf, (size_t)n) != n)
			return 4;
		if (k % 8 == 0)
			usleep(1000);
	}
	close(out);
	printf("%016llx\n", (unsigned long long)h);
	printf("copy %s\n", hash_file(argv[2]) == hash_file(argv[1]) ? "same" : "differs");
	return 0;
}
