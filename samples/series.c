/* SPDX-License-Identifier: MIT */
/*
 * series.c - an ordinary program that knows nothing of selfckpt: it sums the
 * Leibniz series for pi and prints its progress, one line every 200 ms. The
 * demo runs it under selfckpt-run, checkpoints it, kills it and restores it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	int lines = argc > 1 ? atoi(argv[1]) : 25;
	double sum = 0;
	long k = 0;

	for (int line = 1; line <= lines; line++) {
		struct timespec pause = { 0, 200 * 1000 * 1000 };

		for (long end = k + 2000000; k < end; k++)
			sum += (k % 2 ? -4.0 : 4.0) / (2 * k + 1);
		printf("step %2d of %d: %ld terms, pi ~ %.12f\n", line, lines, k, sum);
		fflush(stdout);
		nanosleep(&pause, NULL);
	}
	return 0;
}
