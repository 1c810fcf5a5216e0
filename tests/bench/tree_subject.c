/* SPDX-License-Identifier: MIT */
/*
 * tree_subject - the job bench-tree checkpoints under selfckpt-run:
 *   tree_subject PROCESSES MIB DIR
 * The first process forks PROCESSES - 1 children; each fills MIB MiB with
 * random data, writes DIR/ready.<pid>, and ticks every millisecond, keeping
 * the longest gap between two ticks: the pause a checkpoint made it see. Once
 * DIR/done exists it writes that gap (seconds) to DIR/pause.<pid> and ends.
 * Restored, a process sees a gap of seconds at once: it writes the time it
 * came back (CLOCK_REALTIME, seconds) to DIR/resumed.<pid> and ends.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/bench_data.h"

#define RESTORED_GAP 1.0 /* seconds: no checkpoint pause is this long */

static double clock_s(clockid_t clk)
{
	struct timespec t;

	clock_gettime(clk, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void put(const char *dir, const char *what, double v)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.%d", dir, what, (int)getpid());
	if (!(f = fopen(path, "w")))
		exit(1);
	fprintf(f, "%.6f\n", v);
	fclose(f);
}

static int run(uint64_t bytes, const char *dir)
{
	uint8_t *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char done[4096];
	double last, longest = 0;

	if (p == MAP_FAILED || bench_gen_random(p, bytes) < 0)
		return 1;
	snprintf(done, sizeof(done), "%s/done", dir);
	put(dir, "ready", 0);
	last = clock_s(CLOCK_MONOTONIC);
	for (unsigned tick = 0;; tick++) {
		double now, gap;

		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
		now = clock_s(CLOCK_MONOTONIC);
		gap = now - last;
		last = now;
		if (gap > RESTORED_GAP) {
			put(dir, "resumed", clock_s(CLOCK_REALTIME));
			return 0;
		}
		if (gap > longest)
			longest = gap;
		if (tick % 16 == 0 && access(done, F_OK) == 0) {
			put(dir, "pause", longest);
			return 0;
		}
	}
}

int main(int argc, char **argv)
{
	int procs = argc > 3 ? atoi(argv[1]) : 0, ret;
	uint64_t mib = argc > 3 ? strtoull(argv[2], NULL, 10) : 0;

	if (procs < 1 || !mib) {
		fprintf(stderr, "usage: tree_subject PROCESSES MIB DIR\n");
		return 64;
	}
	for (int i = 1; i < procs; i++) {
		pid_t c = fork();

		if (c < 0)
			return 1;
		if (c == 0)
			return run(mib << 20, argv[3]);
	}
	ret = run(mib << 20, argv[3]);
	while (wait(NULL) > 0)
		;
	return ret;
}
