/* SPDX-License-Identifier: MIT */
/*
 * bench_data.c - the benchmarks' data sets and statistics (see bench_data.h).
 *
 * Changing a generator changes every figure measured on its data: the bytes
 * must stay the same unless the benchmark is meant to measure something else.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/bench/bench_data.h"

#define PAGE 4096u
#define SEED 0x5e1fc4c9d2a1b3f7ull

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static const char *const heap_words[] = {
	"name", "value", "id", "config", "/usr/lib", "error", "session", "user", "GET /",
	"true", "false", "null", "count", "key", "path", "utf-8", "json", "item", "en_US",
	"http://", "data", "index",
};

/* One page of a busy heap: pointers into a few arenas, small integers, strings, NULLs. */
static void heap_page(uint8_t *p, uint64_t *rng)
{
	uint64_t ptr = 0x00007f3a00000000ull + (xorshift(rng) % 16) * 0x4000000ull +
		       (xorshift(rng) & 0x3fffff0ull);
	unsigned nw = sizeof(heap_words) / sizeof(heap_words[0]);

	for (unsigned i = 0; i < PAGE / 8; i++) {
		uint64_t r = xorshift(rng), v = 0;
		unsigned kind = (unsigned)(r % 100);

		if (kind < 50) {
			ptr += 16 * (1 + (r >> 8) % 4);
			v = ptr;
		} else if (kind < 70) {
			v = (r >> 8) % 1000;
		} else if (kind < 85) {
			const char *w = heap_words[(r >> 8) % nw];

			memcpy(&v, w, strnlen(w, sizeof(v)));
		}
		memcpy(p + 8 * i, &v, sizeof(v));
	}
}

/*
 * The zero pages are written too: in ckpt-subject they are touched memory the
 * checkpoint must read, not holes it can skip.
 */
int bench_gen_heap(uint8_t *p, uint64_t size)
{
	uint64_t n = size / PAGE, rng = SEED;
	uint8_t *zero = malloc(n);

	if (!zero)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++)
		zero[i] = i < n / 2;
	for (uint64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
		uint64_t j = xorshift(&rng) % (i + 1);
		uint8_t t = zero[i];

		zero[i] = zero[j];
		zero[j] = t;
	}
	for (uint64_t i = 0; i < n; i++) {
		if (zero[i])
			memset(p + i * PAGE, 0, PAGE);
		else
			heap_page(p + i * PAGE, &rng);
	}
	free(zero);
	return 0;
}

/* cos and sin of a small angle @d (Taylor series; no libm needed). */
static void rotation(double d, double *c, double *s)
{
	*c = 1 - d * d / 2 + d * d * d * d / 24;
	*s = d - d * d * d / 6 + d * d * d * d * d / 120;
}

/* The waves come from a rotation recurrence: cheaper than sinf. */
int bench_gen_float(uint8_t *p, uint64_t size)
{
	double s1 = 0, c1 = 1, s2 = 0, c2 = 1, cd1, sd1, cd2, sd2;
	uint64_t rng = SEED ^ 1;

	rotation(1e-4, &cd1, &sd1);
	rotation(3.7e-3, &cd2, &sd2);
	for (uint64_t i = 0; i < size / 4; i++) {
		double t = s1 * cd1 + c1 * sd1;
		float f;
		uint32_t bits;

		c1 = c1 * cd1 - s1 * sd1;
		s1 = t;
		t = s2 * cd2 + c2 * sd2;
		c2 = c2 * cd2 - s2 * sd2;
		s2 = t;
		f = (float)(0.05 * s1 + 0.02 * s2);
		memcpy(&bits, &f, 4);
		bits = (bits & ~0xffffu) | (uint32_t)(xorshift(&rng) & 0xffffu);
		memcpy(p + 4 * i, &bits, 4);
	}
	return 0;
}

int bench_gen_random(uint8_t *p, uint64_t size)
{
	uint64_t rng = SEED ^ 2;

	for (uint64_t i = 0; i < size / 8; i++) {
		uint64_t v = xorshift(&rng);

		memcpy(p + 8 * i, &v, 8);
	}
	return 0;
}

double bench_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int64_t bench_realtime_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(double *v, unsigned n)
{
	qsort(v, n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int bench_run(char *const *argv, void (*subject)(const void *arg), const void *arg, char *out,
	      size_t cap)
{
	int p[2], status;
	ssize_t got = 0, k;
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		if (!argv)
			subject(arg);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	while (got < (ssize_t)cap - 1 && (k = read(p[0], out + got, cap - 1 - (size_t)got)) > 0)
		got += k;
	out[got] = '\0';
	close(p[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}
