/* SPDX-License-Identifier: MIT */
/*
 * bench_incremental.c - incremental images of a process (spec §9.14): what a
 * checkpoint after a small change costs against a full one, and what a
 * restart from a chain costs against one from a full image.
 *
 *   bench-incremental [--mib N] [--changed P] [--chain C] [--runs R] [--dir D]
 *
 * A subject process (a child of this one, SELFCKPT_INCREMENTAL=64) fills N MiB
 * (default 4096, in pages of 4 KiB) with random bytes and writes a full image; then C-1 times
 * (default 5 images in all) it changes P% of its pages (default 5, spread over
 * the whole memory) and writes an incremental image. selfckpt_save() is timed
 * in the subject; each image's size is its file's. Then the restart of the
 * last image (its whole chain) and of the full one are timed, from the spawn
 * of selfckpt-restore to the first thing the restored process does, as
 * bench-fds does, the images in the page cache.
 *
 * Targets: the second checkpoint <= 10% of the full one's time and <= 7% of
 * its size; the restart from the chain <= 1.2x the restart from the full
 * image. Medians of the runs (default 3). It asserts nothing: the exit status
 * is 0 unless a checkpoint or a restore fails.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "selfckpt.h"
#include "tests/bench/bench_data.h"

#define RUNS_MAX 25
#define CHAIN_MAX 64

struct opts {
	uint64_t mib;
	unsigned changed, chain, runs;
	char dir[PATH_MAX];
};

static const char *image(const struct opts *o, unsigned k)
{
	static char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/bench-incremental.%u.sckpt", o->dir, k);
	return path;
}

/* Change @percent % of the pages of @p, a different set in each @round. */
static void change(uint8_t *p, uint64_t bytes, unsigned percent, unsigned round)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), step = 100 / percent;

	for (uint64_t pg = round % step; pg < bytes / page; pg += step)
		p[pg * page + (round * 8) % page] ^= 0x5a;
}

/* The subject: prints "saved K SECONDS" per image; restored, "restored NS". */
static void subject(const struct opts *o)
{
	uint64_t bytes = o->mib << 20;
	uint8_t *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	/*
	 * Pages of 4 KiB, as the changes are counted: memory in transparent huge
	 * pages is written, and so watched, 2 MiB at a time, and 5% of the pages
	 * changed one in twenty would touch every huge page.
	 */
	if (p == MAP_FAILED || madvise(p, bytes, MADV_NOHUGEPAGE) || bench_gen_random(p, bytes) < 0)
		_exit(2);
	for (unsigned k = 0; k < o->chain; k++) {
		double t0;
		int r;

		if (k)
			change(p, bytes, o->changed, k);
		t0 = bench_now();
		r = selfckpt_save(image(o, k));
		if (r == SELFCKPT_RESTORED) {
			printf("restored %lld\n", (long long)bench_realtime_ns());
			fflush(stdout);
			_exit(0);
		}
		if (r != SELFCKPT_SAVED) {
			fprintf(stderr, "bench-incremental: %s\n", selfckpt_last_error());
			_exit(1);
		}
		printf("saved %u %.6f\n", k, bench_now() - t0);
		fflush(stdout);
	}
	_exit(0);
}

/* bench_run()'s form of the subject. */
static void run_subject(const void *o)
{
	subject(o);
}

/* Run @argv (or the subject, with @argv NULL); its output into @out. */
static int run(const struct opts *o, char *const *argv, char *out, size_t cap)
{
	return bench_run(argv, run_subject, o, out, cap);
}

static double restart(const struct opts *o, const char *restore, const char *path)
{
	char *argv[] = { (char *)restore, (char *)path, NULL }, out[256];
	int64_t t0 = bench_realtime_ns();
	long long at;

	if (run(o, argv, out, sizeof(out)) < 0 || sscanf(out, "restored %lld", &at) != 1) {
		fprintf(stderr, "bench-incremental: the restore of %s failed: %s\n", path, out);
		exit(1);
	}
	return (double)(at - t0) / 1e9;
}

static const char *merged(const struct opts *o)
{
	static char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/bench-incremental.merged.sckpt", o->dir);
	return path;
}

/* selfckpt-merge of the newest image into merged(): its seconds. */
static double merge(const struct opts *o, const char *tool)
{
	char *argv[] = { (char *)tool, (char *)image(o, o->chain - 1), "-o", (char *)merged(o),
			 NULL }, out[512];
	double t0 = bench_now();

	if (run(o, argv, out, sizeof(out)) < 0) {
		fprintf(stderr, "bench-incremental: the merge failed: %s\n", out);
		exit(1);
	}
	return bench_now() - t0;
}

static double file_mib(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (double)st.st_size / (1 << 20) : -1;
}

static void parse(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){ .mib = 4096, .changed = 5, .chain = 5, .runs = 3 };
	snprintf(o->dir, sizeof(o->dir), "/tmp");
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--mib"))
			o->mib = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--changed"))
			o->changed = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--chain"))
			o->chain = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--runs"))
			o->runs = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--dir"))
			snprintf(o->dir, sizeof(o->dir), "%s", argv[i + 1]);
	}
	if (!o->mib || !o->changed || o->changed > 50 || o->chain < 2 || o->chain > CHAIN_MAX ||
	    !o->runs || o->runs > RUNS_MAX || access(o->dir, W_OK)) {
		fprintf(stderr, "usage: bench-incremental [--mib N] [--changed 1..50] [--chain "
			"2..%d] [--runs 1..%d] [--dir WRITABLE-DIR]\n", CHAIN_MAX, RUNS_MAX);
		exit(64);
	}
}

int main(int argc, char **argv)
{
	static double save[CHAIN_MAX][RUNS_MAX], mib[CHAIN_MAX][RUNS_MAX], rs[3][RUNS_MAX],
		merge_s[RUNS_MAX], merge_mib[RUNS_MAX];
	char restore[PATH_MAX + 32], merge_tool[PATH_MAX + 32], self[PATH_MAX], out[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	double med_save[CHAIN_MAX], med_mib[CHAIN_MAX], full_rs, chain_rs, merged_rs, med_merge;
	struct opts o;

	parse(argc, argv, &o);
	if (len < 0)
		return 1;
	self[len] = '\0';
	/* read once per process, at its first checkpoint: set before the subject's */
	setenv("SELFCKPT_INCREMENTAL", "64", 1);
	*strrchr(self, '/') = '\0';
	snprintf(restore, sizeof(restore), "%s/../bin/selfckpt-restore", self);
	snprintf(merge_tool, sizeof(merge_tool), "%s/../bin/selfckpt-merge", self);
	for (unsigned r = 0; r < o.runs; r++) {
		const char *at = out;

		if (run(&o, NULL, out, sizeof(out)) < 0) {
			fprintf(stderr, "bench-incremental: the subject failed: %s\n", out);
			return 1;
		}
		for (unsigned k = 0; k < o.chain; k++, at = strchr(at, '\n') + 1) {
			unsigned got;

			if (sscanf(at, "saved %u %lf", &got, &save[k][r]) != 2 || got != k)
				return fprintf(stderr, "bench-incremental: %s\n", out), 1;
			mib[k][r] = file_mib(image(&o, k));
		}
		rs[0][r] = restart(&o, restore, image(&o, 0));
		rs[1][r] = restart(&o, restore, image(&o, o.chain - 1));
		merge_s[r] = merge(&o, merge_tool);
		merge_mib[r] = file_mib(merged(&o));
		/* as a user would: the chain deleted once merged (its page cache goes with it) */
		for (unsigned k = 0; k < o.chain; k++)
			unlink(image(&o, k));
		rs[2][r] = restart(&o, restore, merged(&o));
		unlink(merged(&o));
	}
	for (unsigned k = 0; k < o.chain; k++) {
		med_save[k] = bench_median(save[k], o.runs);
		med_mib[k] = bench_median(mib[k], o.runs);
	}
	full_rs = bench_median(rs[0], o.runs);
	chain_rs = bench_median(rs[1], o.runs);
	merged_rs = bench_median(rs[2], o.runs);
	med_merge = bench_median(merge_s, o.runs);
	printf("%llu MiB of random bytes, %u%% of the pages changed before each image after "
	       "the first (medians of %u runs)\n\n", (unsigned long long)o.mib, o.changed, o.runs);
	printf("image          checkpoint        size   vs full: time   size\n");
	for (unsigned k = 0; k < o.chain; k++)
		printf("%-12s %10.3f s %9.1f MiB      %6.3f  %6.3f\n", k ? "incremental" : "full",
		       med_save[k], med_mib[k], med_save[k] / med_save[0], med_mib[k] / med_mib[0]);
	printf("\nrestart from the full image %.3f s, from the chain of %u %.3f s: %.2fx\n",
	       full_rs, o.chain, chain_rs, chain_rs / full_rs);
	printf("merge of the chain of %u into one full image: %.3f s (%.2fx the full checkpoint), "
	       "%.1f MiB; restart from it %.3f s (%.2fx)\n", o.chain, med_merge,
	       med_merge / med_save[0], bench_median(merge_mib, o.runs), merged_rs,
	       merged_rs / full_rs);
	printf("\ntargets\n  second checkpoint: time %.3f <= 0.10: %s, size %.3f <= 0.07: %s\n"
	       "  restart from a chain of %u: %.2fx <= 1.2x: %s\n", med_save[1] / med_save[0],
	       med_save[1] / med_save[0] <= 0.10 ? "PASS" : "MISS", med_mib[1] / med_mib[0],
	       med_mib[1] / med_mib[0] <= 0.07 ? "PASS" : "MISS", o.chain, chain_rs / full_rs,
	       chain_rs / full_rs <= 1.2 ? "PASS" : "MISS");
	return 0;
}
