/* SPDX-License-Identifier: MIT */
/*
 * shmfile.c - maps a file of its own shared, as the JVM maps its perf data
 * or a program its POSIX shared memory, and removes the file when it exits.
 * Run under selfckpt-run by tests/cli/test_instant.c: the second restore of
 * one image finds the file gone, and must make it again from the image.
 *   shmfile PATH
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define SIZE 32768
#define STEPS 40

int main(int argc, char **argv)
{
	long *m, sum = 0;
	int fd;

	if (argc != 2)
		return 2;
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, SIZE) < 0)
		return 3;
	m = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return 4;
	for (int i = 0; i < STEPS; i++) {
		m[i] = i * 7 + (i ? m[i - 1] : 0);
		usleep(25000);
	}
	for (int i = 0; i < STEPS; i++)
		sum += m[i];
	printf("%ld\n", sum);
	unlink(argv[1]);
	return 0;
}
