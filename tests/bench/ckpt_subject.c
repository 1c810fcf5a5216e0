/* SPDX-License-Identifier: MIT */
/*
 * ckpt_subject.c - the process that bench-ckpt checkpoints and restores.
 *
 *   ckpt-subject KIND TOUCHED_MIB IMAGE [UNTOUCHED_MIB [sleep|spin]]
 *
 * It fills TOUCHED_MIB of memory with one kind of data (heap-like, float or
 * random, generated as bench-format does), maps UNTOUCHED_MIB more (default
 * 512) that it never touches, starts a ticker thread, and times
 * selfckpt_save(IMAGE). Its standard output, one line each:
 *
 *   saved CKPT_S PAUSE_S T0 T1 MAIN_CPU_S ALL_CPU_S PAUSE_AT_S
 *                                the save returned SELFCKPT_SAVED; then SIGKILL.
 *                                T0, T1: CLOCK_MONOTONIC around it (for perf --time);
 *                                CPU time of the saving thread and of all threads
 *                                during it; when the longest pause began, from T0;
 *                                then "gaps", each gap of 2 ms or more as +START/LENGTH
 *                                in ms from T0 (for reading by eye)
 *   restored REALTIME_NS         first thing in the restored process
 *   check ok | check bad WHAT    the data, checksummed again; then exit 0
 *
 * The pause is what the application sees: selfckpt_save() stops every other
 * thread only while it takes the copy-on-write snapshot, so the ticker, which
 * reads the clock in a loop, finds its longest gap between two readings during
 * the save. "sleep" (the default) ticks every TICK_NS and leaves the CPUs to
 * the checkpoint's compression threads, the gap less the tick is the pause;
 * "spin" reads the clock without pause, as a busy application thread would,
 * and takes one CPU from the checkpoint.
 *
 * Built without sanitizers: their shadow memory is no part of an image.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <xxhash.h>

#include "selfckpt.h"
#include "tests/bench/bench_data.h"

#define PAGE 4096u
#define TICK_NS 100000ll /* the sleeping ticker's period */
#define LOG_GAP_NS 2000000ll /* gaps this long are also listed, up to MAX_GAPS */
#define MAX_GAPS 32

struct ticker {
	bool spin;
	int run;          /* atomic: 0 stops the thread */
	int measure;      /* atomic: gaps count while set */
	int64_t max_gap;  /* atomic: the longest gap seen while measuring, ns */
	int64_t gap_at;   /* atomic: CLOCK_MONOTONIC at the start of that gap */
	int64_t gaps[MAX_GAPS][2]; /* start and length of long gaps; read after measuring */
	int n_gaps;
	uint64_t ticks;   /* atomic */
};

static int64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* ---- data, as bench-format makes it (bench_data.c) ---- */

static const struct {
	const char *name;
	int (*gen)(uint8_t *p, uint64_t size); /* 0 or -errno */
} kinds[] = {
	{ "heap-like", bench_gen_heap },
	{ "float", bench_gen_float },
	{ "random", bench_gen_random },
};

/* ---- the ticker ---- */

static void *tick_main(void *arg)
{
	struct ticker *t = arg;
	struct timespec period = { 0, TICK_NS };
	int64_t last = clock_ns(CLOCK_MONOTONIC);

	while (__atomic_load_n(&t->run, __ATOMIC_RELAXED)) {
		int64_t now, gap;

		if (!t->spin)
			nanosleep(&period, NULL);
		now = clock_ns(CLOCK_MONOTONIC);
		gap = now - last;
		last = now;
		__atomic_add_fetch(&t->ticks, 1, __ATOMIC_RELAXED);
		if (__atomic_load_n(&t->measure, __ATOMIC_RELAXED) &&
		    gap > __atomic_load_n(&t->max_gap, __ATOMIC_RELAXED)) {
			__atomic_store_n(&t->max_gap, gap, __ATOMIC_RELAXED);
			__atomic_store_n(&t->gap_at, now - gap, __ATOMIC_RELAXED);
		}
		if (__atomic_load_n(&t->measure, __ATOMIC_RELAXED) && gap >= LOG_GAP_NS &&
		    t->n_gaps < MAX_GAPS) {
			t->gaps[t->n_gaps][0] = now - gap;
			t->gaps[t->n_gaps][1] = gap;
			__atomic_store_n(&t->n_gaps, t->n_gaps + 1, __ATOMIC_RELEASE);
		}
	}
	return NULL;
}

/* The long gaps, for reading by eye: "gaps +START/LENGTH ..." in ms from @t0. */
static void print_gaps(const struct ticker *t, int64_t t0)
{
	int n = __atomic_load_n(&t->n_gaps, __ATOMIC_ACQUIRE);

	printf("gaps");
	for (int i = 0; i < n; i++)
		printf(" +%.1f/%.1f", (double)(t->gaps[i][0] - t0) * 1e-6,
		       (double)t->gaps[i][1] * 1e-6);
	printf("\n");
}

/* ---- the run ---- */

__attribute__((noreturn)) static void die(const char *what, const char *why)
{
	fprintf(stderr, "ckpt-subject: %s: %s\n", what, why);
	exit(3);
}

static uint8_t *map(uint64_t size, const char *what)
{
	void *p = mmap(NULL, size ? size : PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		die(what, strerror(errno));
	return p;
}

/* One byte of each MiB of the untouched mapping: it must read back as zero. */
static bool untouched_zero(const uint8_t *p, uint64_t size)
{
	for (uint64_t off = 0; off < size; off += 1 << 20)
		if (p[off])
			return false;
	return true;
}

/* Back from the image: the first line is the timestamp bench-ckpt times the restart by. */
static int resumed(const uint8_t *data, uint64_t size, uint64_t sum, const uint8_t *untouched,
		   uint64_t untouched_size)
{
	uint64_t again;

	printf("restored %lld\n", (long long)clock_ns(CLOCK_REALTIME));
	fflush(stdout);
	again = XXH3_64bits(data, size);
	if (again != sum)
		printf("check bad data: stored 0x%016llx, computed 0x%016llx\n",
		       (unsigned long long)sum, (unsigned long long)again);
	else if (!untouched_zero(untouched, untouched_size))
		printf("check bad untouched mapping is not zero\n");
	else
		printf("check ok\n");
	fflush(stdout);
	return 0;
}

static uint64_t parse_mib(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v > (1ull << 22))
		die(what, "expected a number of MiB");
	return (uint64_t)v << 20;
}

int main(int argc, char **argv)
{
	struct ticker t = { .run = 1 };
	uint64_t size, untouched_size = 512ull << 20, sum;
	uint8_t *data, *untouched;
	pthread_t th;
	int64_t t0, t1, main0, main1, all0, all1;
	size_t k;
	int ret;

	if (argc < 4 || argc > 6)
		die("usage", "ckpt-subject KIND TOUCHED_MIB IMAGE [UNTOUCHED_MIB [sleep|spin]]");
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]) && strcmp(kinds[k].name, argv[1]); k++)
		;
	if (k == sizeof(kinds) / sizeof(kinds[0]))
		die(argv[1], "unknown kind: expected heap-like, float or random");
	size = parse_mib(argv[2], "TOUCHED_MIB");
	if (argc > 4)
		untouched_size = parse_mib(argv[4], "UNTOUCHED_MIB");
	t.spin = argc > 5 && !strcmp(argv[5], "spin");

	data = map(size, "cannot map the data");
	untouched = map(untouched_size, "cannot map the untouched region");
	ret = kinds[k].gen(data, size);
	if (ret < 0)
		die("cannot generate the data", strerror(-ret));
	sum = XXH3_64bits(data, size);
	if (pthread_create(&th, NULL, tick_main, &t))
		die("pthread_create", "cannot start the ticker");
	/* A ticker stopped before its first tick would see no pause at all. */
	while (__atomic_load_n(&t.ticks, __ATOMIC_RELAXED) < 10)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);

	fflush(stdout); /* the restored process starts with an empty buffer */
	__atomic_store_n(&t.measure, 1, __ATOMIC_RELAXED);
	all0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	main0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	t0 = clock_ns(CLOCK_MONOTONIC);
	ret = selfckpt_save(argv[3]);
	t1 = clock_ns(CLOCK_MONOTONIC);
	main1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	all1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	if (ret == SELFCKPT_RESTORED)
		return resumed(data, size, sum, untouched, untouched_size);
	__atomic_store_n(&t.measure, 0, __ATOMIC_RELAXED);
	if (ret != SELFCKPT_SAVED)
		die("selfckpt_save", selfckpt_last_error());
	printf("saved %.6f %.6f %.6f %.6f %.6f %.6f %.6f\n", (double)(t1 - t0) * 1e-9,
	       (double)(__atomic_load_n(&t.max_gap, __ATOMIC_RELAXED) -
			(t.spin ? 0 : TICK_NS)) * 1e-9,
	       (double)t0 * 1e-9, (double)t1 * 1e-9, (double)(main1 - main0) * 1e-9,
	       (double)(all1 - all0) * 1e-9,
	       (double)(__atomic_load_n(&t.gap_at, __ATOMIC_RELAXED) - t0) * 1e-9);
	print_gaps(&t, t0);
	fflush(stdout);
	raise(SIGKILL); /* the image is the only way forward */
	return 3;
}
