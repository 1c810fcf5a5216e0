/* SPDX-License-Identifier: MIT */
/*
 * counter.c - a program for the selfckpt-run tests. It knows nothing of
 * selfckpt and does not link the library.
 *
 *   counter FILE N [own-sigaction | own-signal | append]
 *
 * Writes N lines "line NNNNNN\n", one every 20 ms, line i at offset
 * i * COUNTER_LINE_LEN of FILE with pwrite() and to standard output. So a run
 * that is checkpointed, killed, and restored from the image leaves in FILE
 * exactly what an uninterrupted run leaves. own-sigaction sets a handler for
 * SIGUSR1 with sigaction(), own-signal one for SIGUSR2 with signal(), before
 * the first line. append appends each line to FILE instead (a line written
 * twice shows), with 96 MiB of memory that does not compress, so that an
 * image takes a while to write.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define COUNTER_LINE_LEN 12
#define BALLAST (96u << 20)

static volatile sig_atomic_t got;

static void on_signal(int sig)
{
	got = sig;
}

static void own_handlers(const char *mode)
{
	struct sigaction sa = { 0 };

	if (!strcmp(mode, "own-sigaction")) {
		sa.sa_handler = on_signal;
		sigaction(SIGUSR1, &sa, NULL);
	} else if (!strcmp(mode, "own-signal")) {
		signal(SIGUSR2, on_signal);
	}
}

/* Memory that compresses badly, touched: an image of it is big. */
static char *ballast(void)
{
	uint64_t x = 88172645463325252ull;
	uint64_t *m = malloc(BALLAST);

	for (size_t i = 0; m && i < BALLAST / sizeof(*m); i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		m[i] = x;
	}
	return (char *)m;
}

/* Line @i: at its place, or appended. */
static int put_line(int fd, const char *line, int i, int append)
{
	if (append)
		return write(fd, line, COUNTER_LINE_LEN) == COUNTER_LINE_LEN ? 0 : -1;
	return pwrite(fd, line, COUNTER_LINE_LEN, (off_t)i * COUNTER_LINE_LEN) ==
	       COUNTER_LINE_LEN ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct timespec tick = { 0, 20 * 1000 * 1000 };
	char line[COUNTER_LINE_LEN + 1];
	int fd, n, append = argc > 3 && !strcmp(argv[3], "append");
	char *mem = NULL;

	if (argc < 3) {
		fprintf(stderr, "usage: counter FILE N [own-sigaction|own-signal]\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : 0), 0600);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	if (append && !(mem = ballast())) {
		perror("malloc");
		return 1;
	}
	if (argc > 3)
		own_handlers(argv[3]);
	n = atoi(argv[2]);
	for (int i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "line %06d\n", i % 1000000);
		if (put_line(fd, line, i, append) < 0) {
			perror("write");
			return 1;
		}
		fputs(line, stdout);
		fflush(stdout);
		nanosleep(&tick, NULL);
	}
	free(mem);
	return close(fd) < 0;
}
