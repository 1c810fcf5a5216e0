/* SPDX-License-Identifier: MIT */
/*
 * bench_fds.c - what descriptors cost a checkpoint and a restore: a process
 * holding N descriptors of mixed kinds (regular files, pipes, eventfds,
 * timerfds, unix socket pairs with data queued, and epoll instances watching
 * eventfds) against the same process holding none. Prints the medians and
 * the difference; asserts nothing.
 *
 *   bench-fds [--fds N] [--runs R] [--dir DIR]
 *
 * Each run forks a subject that opens the descriptors and times
 * selfckpt_save(); the restore is timed from the start of selfckpt-restore
 * (next to this program in BUILD/bin) to the first thing the restored
 * process does, which is to print the time.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "selfckpt.h"
#include "tests/bench/bench_data.h"

#define RUNS_MAX 32

static int64_t realtime_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Open about @n descriptors, kinds in turn; -1 when the system says no. */
static int open_many(int n, const char *dir)
{
	char path[PATH_MAX];
	int ep = -1;

	snprintf(path, sizeof(path), "%s/file", dir);
	for (int i = 0, kind = 0; i < n; kind++) {
		int p[2], fd, ev;
		struct epoll_event e = { .events = EPOLLIN };

		switch (kind % 6) {
		case 0:
			fd = open(path, O_RDWR | O_CREAT, 0600);
			i += fd >= 0;
			break;
		case 1:
			fd = pipe(p) == 0 ? p[0] : -1;
			i += fd >= 0 ? 2 : 0;
			break;
		case 2:
			fd = eventfd(3, 0);
			i += fd >= 0;
			break;
		case 3:
			fd = timerfd_create(CLOCK_MONOTONIC, 0);
			i += fd >= 0;
			break;
		case 4:
			fd = socketpair(AF_UNIX, SOCK_STREAM, 0, p) == 0 ? p[0] : -1;
			if (fd >= 0 && write(p[1], "queued", 6) != 6)
				fd = -1;
			i += fd >= 0 ? 2 : 0;
			break;
		default:
			if (ep < 0 || kind % 600 == 5) /* an instance for every 100 it watches */
				ep = epoll_create1(0);
			ev = eventfd(0, 0);
			fd = ep >= 0 && ev >= 0 ? epoll_ctl(ep, EPOLL_CTL_ADD, ev, &e) : -1;
			i += fd >= 0;
			break;
		}
		if (fd < 0)
			return -1;
	}
	return 0;
}

/* The subject: open @n descriptors, save, print "saved SECONDS" or "restored NS". */
static void subject(int n, const char *dir, const char *image)
{
	struct rlimit rl;
	struct timespec t0, t1;
	int r;

	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (open_many(n, dir) < 0) {
		printf("error opening %d descriptors\n", n);
		fflush(stdout);
		_exit(1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = selfckpt_save(image);
	if (r == SELFCKPT_RESTORED) {
		printf("restored %lld\n", (long long)realtime_ns());
		fflush(stdout);
		_exit(0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("saved %.6f\n", r == SELFCKPT_SAVED ? (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9 : -1.0);
	fflush(stdout);
	_exit(0);
}

struct subject_args {
	int n;
	const char *dir, *image;
};

/* bench_run()'s form of the subject. */
static void run_subject(const void *arg)
{
	const struct subject_args *a = arg;

	subject(a->n, a->dir, a->image);
}

/* Run @argv (or the subject, when @argv is NULL) with its output into @out. */
static int run(char *const *argv, int n, const char *dir, const char *image, char *out,
	       size_t cap)
{
	struct subject_args a = { n, dir, image };

	return bench_run(argv, run_subject, &a, out, cap);
}

/* One checkpoint and one restore of a subject with @n descriptors, in seconds. */
static int once(int n, const char *dir, const char *restore, double *ckpt, double *rest)
{
	char image[PATH_MAX], out[256];
	char *argv[] = { (char *)restore, image, NULL };
	long long at;
	int64_t t0;

	snprintf(image, sizeof(image), "%s/fds.sckpt", dir);
	if (run(NULL, n, dir, image, out, sizeof(out)) < 0 || sscanf(out, "saved %lf", ckpt) != 1 ||
	    *ckpt < 0)
		return fprintf(stderr, "bench-fds: the checkpoint failed: %s\n", out), -1;
	t0 = realtime_ns();
	if (run(argv, 0, NULL, NULL, out, sizeof(out)) < 0 || sscanf(out, "restored %lld", &at) != 1)
		return fprintf(stderr, "bench-fds: the restore failed: %s\n", out), -1;
	*rest = (double)(at - t0) / 1e9;
	return 0;
}

int main(int argc, char **argv)
{
	char restore[PATH_MAX + 32], dir[PATH_MAX] = "/tmp", self[PATH_MAX];
	double c[2][RUNS_MAX], r[2][RUNS_MAX], med[2][2];
	int n = 10000, runs = 5;
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--fds"))
			n = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--runs"))
			runs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--dir"))
			snprintf(dir, sizeof(dir), "%s", argv[i + 1]);
	}
	if (len < 0 || n < 1 || runs < 1 || runs > RUNS_MAX) {
		fprintf(stderr, "usage: bench-fds [--fds N] [--runs 1..%d] [--dir DIR]\n", RUNS_MAX);
		return 64;
	}
	self[len] = '\0';
	*strrchr(self, '/') = '\0';
	snprintf(restore, sizeof(restore), "%s/../bin/selfckpt-restore", self);
	for (int k = 0; k < runs; k++)
		for (int with = 0; with < 2; with++)
			if (once(with ? n : 0, dir, restore, &c[with][k], &r[with][k]) < 0)
				return 1;
	for (int with = 0; with < 2; with++) {
		med[with][0] = bench_median(c[with], (unsigned)runs);
		med[with][1] = bench_median(r[with], (unsigned)runs);
	}
	printf("descriptors    checkpoint    restore   (medians of %d runs)\n", runs);
	printf("%11d  %9.1f ms  %7.1f ms\n", 0, med[0][0] * 1e3, med[0][1] * 1e3);
	printf("%11d  %9.1f ms  %7.1f ms\n", n, med[1][0] * 1e3, med[1][1] * 1e3);
	printf("difference   %9.1f ms  %7.1f ms   (target: at most 50 ms each)\n",
	       (med[1][0] - med[0][0]) * 1e3, (med[1][1] - med[0][1]) * 1e3);
	return 0;
}
