/* SPDX-License-Identifier: MIT */
/*
 * counter.c - a program for the selfckpt-run tests. It knows nothing of
 * selfckpt and does not link the library.
 *
 *   counter FILE N [own-sigaction | own-signal]
 *
 * Writes N lines "line NNNNNN\n", one every 20 ms, line i at offset
 * i * COUNTER_LINE_LEN of FILE with pwrite() and to standard output. So a run
 * that is checkpointed, killed, and restored from the image leaves in FILE
 * exactly what an uninterrupted run leaves. own-sigaction sets a handler for
 * SIGUSR1 with sigaction(), own-signal one for SIGUSR2 with signal(), before
 * the first line.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define COUNTER_LINE_LEN 12

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

int main(int argc, char **argv)
{
	struct timespec tick = { 0, 20 * 1000 * 1000 };
	char line[COUNTER_LINE_LEN + 1];
	int fd, n;

	if (argc < 3) {
		fprintf(stderr, "usage: counter FILE N [own-sigaction|own-signal]\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	if (argc > 3)
		own_handlers(argv[3]);
	n = atoi(argv[2]);
	for (int i = 0; i < n; i++) {
		off_t at = (off_t)i * COUNTER_LINE_LEN;

		snprintf(line, sizeof(line), "line %06d\n", i % 1000000);
		if (pwrite(fd, line, COUNTER_LINE_LEN, at) != COUNTER_LINE_LEN) {
			perror("pwrite");
			return 1;
		}
		fputs(line, stdout);
		fflush(stdout);
		nanosleep(&tick, NULL);
	}
	return close(fd) < 0;
}
