/* SPDX-License-Identifier: MIT */
/*
 * bench_cuda_incremental.c - incremental images of a CUDA program (spec
 * R-INC-6): what a checkpoint after a change of part of its device memory
 * costs against a full one, and a restart from the chain against one from a
 * full image.
 *
 *   bench-cuda-incremental [--gib N] [--changed P] [--chain C] [--runs R] [--dir D]
 *                          [--module F]
 *
 * Each run starts this program again as a subject (`bench-cuda-incremental
 * subject ...`, linked with libselfckpt, SELFCKPT_INCREMENTAL=64). It fills N
 * GiB of device memory (default 8, in allocations of 1 GiB) with noise and
 * writes a full image; then C-1 times (default 5 images in all) its kernel
 * writes new noise over P% (default 5) of each allocation, one run of bytes
 * at a place that moves from image to image, and it writes an incremental
 * image. selfckpt_save() is timed in the subject, each image's size is its
 * file's. Then the restart of the last image (its whole chain) and of the
 * full one are timed, from the spawn of selfckpt-restore to the first thing
 * the restored subject does; it then checksums its device memory against the
 * checksum it had at that image's instant, and a mismatch fails the run.
 *
 * Targets: the second checkpoint <= 10% of the full one's time and <= 7% of
 * its size; the restart from the chain <= 1.2x the restart from the full
 * image. Medians of the runs (default 3).
 */
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "selfckpt.h"
#include "tests/bench/bench_cuda_data.h"
#include "tests/bench/bench_data.h"

#define RUNS_MAX 25
#define CHAIN_MAX 64
#define EXIT_USAGE 64
#define FILL_BLOCKS 1024
#define FILL_THREADS 256

struct opts {
	uint64_t bytes;
	unsigned changed, chain, runs;
	struct bench_gpu_paths at;
};

/* ======== the subject ======== */

#define SCHECK(call) bench_gpu_check((call), "bench-cuda-incremental subject", #call, __LINE__)

/* New noise over @pct% of each allocation, at a place that moves with @round. */
static void change(struct bench_gpu_data *d, unsigned pct, unsigned round)
{
	for (unsigned i = 0; i < d->n; i++) {
		unsigned long long words = d->len[i] / 8, n = words * pct / 100;
		unsigned long long at = n ? (words - n) / 7 * (round % 8) : 0;
		unsigned long long seed = 0x5eedull * round + i;
		CUdeviceptr p = d->piece[i] + at * 8;
		void *params[] = { &p, &n, &seed };

		if (n)
			SCHECK(cuLaunchKernel(d->fill, FILL_BLOCKS, 1, 1, FILL_THREADS, 1, 1, 0, NULL,
					      params, NULL));
	}
	SCHECK(cuCtxSynchronize());
}

/* argv: subject BYTES PCT CHAIN DIR MODULE; images DIR/img.K.sckpt */
static int subject_main(char **argv)
{
	static struct bench_gpu_data d;
	uint64_t want[CHAIN_MAX], got;
	unsigned pct = (unsigned)strtoul(argv[3], NULL, 10);
	unsigned chain = (unsigned)strtoul(argv[4], NULL, 10);
	double took[CHAIN_MAX];
	CUcontext ctx;
	CUmodule mod;
	CUdevice dev;

	SCHECK(cuInit(0));
	SCHECK(cuDeviceGet(&dev, 0));
	SCHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	SCHECK(cuCtxSetCurrent(ctx));
	SCHECK(cuModuleLoad(&mod, argv[6]));
	SCHECK(bench_gpu_alloc(&d, mod, strtoull(argv[2], NULL, 10)));
	SCHECK(bench_gpu_fill(&d, true));
	for (unsigned k = 0; k < chain; k++) {
		char image[PATH_MAX + 32];
		double t0;
		int r;

		if (k)
			change(&d, pct, k);
		SCHECK(bench_gpu_checksum(&d, &want[k]));
		snprintf(image, sizeof(image), "%s/img.%u.sckpt", argv[5], k);
		t0 = bench_now();
		r = selfckpt_save(image);
		took[k] = bench_now() - t0;
		if (r == SELFCKPT_RESTORED) {
			dprintf(STDOUT_FILENO, "restored %lld\n", (long long)bench_realtime_ns());
			SCHECK(bench_gpu_checksum(&d, &got));
			dprintf(STDOUT_FILENO, "check %s\n", got == want[k] ? "ok" : "bad");
			return got == want[k] ? 0 : 3;
		}
		if (r != SELFCKPT_SAVED) {
			fprintf(stderr, "bench-cuda-incremental subject: cannot checkpoint into "
				"'%s': %s\n", image, selfckpt_last_error());
			return 1;
		}
	}
	for (unsigned k = 0; k < chain; k++)
		dprintf(STDOUT_FILENO, "saved %u %.6f\n", k, took[k]);
	return 0;
}

/* ======== the runs ======== */

static off_t size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* Run @cmd; every "saved K SECONDS" line into @took. Its exit status. */
static int run_subject(const char *cmd, double *took, unsigned chain)
{
	FILE *p = popen(cmd, "r");
	char line[256];
	unsigned k, got = 0;
	double s;
	int status;

	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "saved %u %lf", &k, &s) == 2 && k < chain) {
			took[k] = s;
			got++;
		}
	status = pclose(p);
	return WIFEXITED(status) && got == chain ? WEXITSTATUS(status) : -1;
}

/* Restore @image: seconds from the spawn to the restored subject's stamp; -1 on failure. */
static double restart(const struct opts *o, const char *image)
{
	char cmd[2 * PATH_MAX + 64], line[256];
	int64_t t0 = bench_realtime_ns();
	long long stamp = 0;
	bool ok = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' '%s'", o->at.restore, image);
	if (!(p = popen(cmd, "r")))
		return -1;
	while (fgets(line, sizeof(line), p)) {
		sscanf(line, "restored %lld", &stamp);
		ok |= !strncmp(line, "check ok", 8);
	}
	if (pclose(p) != 0 || !ok || !stamp) {
		fprintf(stderr, "bench-cuda-incremental: WRONG: '%s' did not restore with its device "
			"memory as it was\n", image);
		return -1;
	}
	return (double)(stamp - t0) / 1e9;
}

enum metric { M_FULL, M_SECOND, M_LATER, M_FULL_SIZE, M_SECOND_SIZE, M_RESTART_FULL,
	      M_RESTART_CHAIN, M_N };

static int one_run(const struct opts *o, double *m)
{
	char cmd[4 * PATH_MAX + 128], image[PATH_MAX + 32];
	double took[CHAIN_MAX];
	int st;

	snprintf(cmd, sizeof(cmd), "rm -f '%s'/img.*.sckpt; SELFCKPT_INCREMENTAL=64 '%s' subject "
		 "%llu %u %u '%s' '%s'", o->at.dir, o->at.self, (unsigned long long)o->bytes,
		 o->changed, o->chain, o->at.dir, o->at.module);
	if ((st = run_subject(cmd, took, o->chain)) != 0) {
		fprintf(stderr, "bench-cuda-incremental: the subject failed (exit %d)\n", st);
		return -1;
	}
	m[M_FULL] = took[0];
	m[M_SECOND] = took[1];
	m[M_LATER] = took[o->chain - 1];
	snprintf(image, sizeof(image), "%s/img.0.sckpt", o->at.dir);
	m[M_FULL_SIZE] = (double)size_of(image);
	m[M_RESTART_FULL] = restart(o, image);
	snprintf(image, sizeof(image), "%s/img.1.sckpt", o->at.dir);
	m[M_SECOND_SIZE] = (double)size_of(image);
	snprintf(image, sizeof(image), "%s/img.%u.sckpt", o->at.dir, o->chain - 1);
	m[M_RESTART_CHAIN] = restart(o, image);
	snprintf(cmd, sizeof(cmd), "rm -f '%s'/img.*.sckpt", o->at.dir);
	if (system(cmd) != 0 || m[M_RESTART_FULL] < 0 || m[M_RESTART_CHAIN] < 0)
		return -1;
	fprintf(stderr, "  full %.3f s %.0f MiB, second %.3f s %.0f MiB, last %.3f s; restart full "
		"%.3f s, chain of %u %.3f s\n", m[M_FULL], m[M_FULL_SIZE] / (1 << 20), m[M_SECOND],
		m[M_SECOND_SIZE] / (1 << 20), m[M_LATER], m[M_RESTART_FULL], o->chain,
		m[M_RESTART_CHAIN]);
	return 0;
}

static const char *mark(bool ok)
{
	return ok ? "PASS" : "MISS";
}

static void report(const struct opts *o, double v[M_N][RUNS_MAX])
{
	double med[M_N];

	for (int k = 0; k < M_N; k++)
		med[k] = bench_median(v[k], o->runs);
	printf("\n%.2f GiB of device memory (noise), %u%% rewritten before each image after the "
	       "first; medians of %u runs\n", (double)o->bytes / (1 << 30), o->changed, o->runs);
	printf("%-28s %12s %12s %8s\n", "", "full", "incremental", "ratio");
	printf("%-28s %12.3f %12.3f %7.3fx  (target <= 0.10: %s)\n", "second checkpoint, s",
	       med[M_FULL], med[M_SECOND], med[M_SECOND] / med[M_FULL],
	       mark(med[M_SECOND] <= 0.10 * med[M_FULL]));
	printf("%-28s %12.3f %12.3f %7.3fx\n", "last checkpoint, s", med[M_FULL], med[M_LATER],
	       med[M_LATER] / med[M_FULL]);
	printf("%-28s %12.1f %12.1f %7.3fx  (target <= 0.07: %s)\n", "second image, MiB",
	       med[M_FULL_SIZE] / (1 << 20), med[M_SECOND_SIZE] / (1 << 20),
	       med[M_SECOND_SIZE] / med[M_FULL_SIZE],
	       mark(med[M_SECOND_SIZE] <= 0.07 * med[M_FULL_SIZE]));
	printf("%-28s %12.3f %12.3f %7.3fx  (chain of %u; target <= 1.20: %s)\n", "restart, s",
	       med[M_RESTART_FULL], med[M_RESTART_CHAIN],
	       med[M_RESTART_CHAIN] / med[M_RESTART_FULL], o->chain,
	       mark(med[M_RESTART_CHAIN] <= 1.2 * med[M_RESTART_FULL]));
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench-cuda-incremental [--gib N] [--changed P] [--chain C] [--runs R]\n"
		   "                              [--dir D] [--module F]\n"
		   "  N GiB (8) of device memory, P%% (5) of it rewritten before each of C-1\n"
		   "  incremental images after a full one (C: 5); medians of R (3) runs; the\n"
		   "  images in D (/dev/shm, else /tmp)\n");
}

static int parse(struct opts *o, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "gib", 1, NULL, 'g' }, { "changed", 1, NULL, 'c' }, { "chain", 1, NULL, 'n' },
		{ "runs", 1, NULL, 'r' }, { "dir", 1, NULL, 'd' }, { "module", 1, NULL, 'm' },
		{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int c;

	*o = (struct opts){ .bytes = 8ull << 30, .changed = 5, .chain = 5, .runs = 3 };
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		if (c == 'g')
			o->bytes = (uint64_t)(strtod(optarg, NULL) * (1 << 30)) & ~7ull;
		else if (c == 'c')
			o->changed = (unsigned)strtoul(optarg, NULL, 10);
		else if (c == 'n')
			o->chain = (unsigned)strtoul(optarg, NULL, 10);
		else if (c == 'r')
			o->runs = (unsigned)strtoul(optarg, NULL, 10);
		else if (c == 'd')
			snprintf(o->at.dir, sizeof(o->at.dir), "%s", optarg);
		else if (c == 'm')
			snprintf(o->at.module, sizeof(o->at.module), "%s", optarg);
		else {
			usage(c == 'h' ? stdout : stderr);
			exit(c == 'h' ? 0 : EXIT_USAGE);
		}
	}
	if (!o->bytes || o->changed > 100 || o->chain < 2 || o->chain > CHAIN_MAX || !o->runs ||
	    o->runs > RUNS_MAX || optind != argc) {
		usage(stderr);
		exit(EXIT_USAGE);
	}
	return bench_gpu_paths(&o->at, 1.5 * (double)o->bytes);
}

int main(int argc, char **argv)
{
	static double v[M_N][RUNS_MAX];
	struct opts o;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 7 && !strcmp(argv[1], "subject"))
		return subject_main(argv);
	if (parse(&o, argc, argv) < 0)
		return 1;
	printf("bench-cuda-incremental: %.2f GiB, %u%% changed, chains of %u, %u runs, images in "
	       "%s\n", (double)o.bytes / (1 << 30), o.changed, o.chain, o.runs, o.at.dir);
	for (unsigned r = 0; r < o.runs; r++) {
		double m[M_N];

		fprintf(stderr, "run %u of %u\n", r + 1, o.runs);
		if (one_run(&o, m) < 0)
			return 1;
		for (int k = 0; k < M_N; k++)
			v[k][r] = m[k];
	}
	report(&o, v);
	return 0;
}
