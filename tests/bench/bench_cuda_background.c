/* SPDX-License-Identifier: MIT */
/*
 * bench_cuda_background.c - what a checkpoint costs a CUDA program that goes
 * on working: the time its CUDA calls are held, the whole checkpoint's time,
 * and its kernels' rate while the image is written, with the device memory
 * copied aside on the device, in pinned host memory, or not at all
 * (SELFCKPT_CUDA_CAPTURE=device, host, off: the last is the checkpoint that
 * holds the program's calls until the image is written).
 *
 *   bench-cuda-background [--gib N] [--runs R] [--dir D] [--module F]
 *
 * Each run starts this program again as a subject for each way (`bench-cuda-
 * background subject WAY BYTES IMAGE MODULE`, linked with libselfckpt). The
 * subject fills N GiB of device memory with noise, then runs a worker thread
 * that launches an arithmetic kernel of about 1 ms and synchronises, over and
 * over, noting when each one ends. After a second of that, its main thread
 * calls selfckpt_save() (which returns once the image is written); a second
 * later, again, into the image that is restored; then the worker stops. The
 * first checkpoint of a process pays for what the later ones keep (pinned
 * host memory): both are reported. Figures, from the worker's notes:
 *
 *   stall     the longest time between two kernels' ends while the
 *             checkpoint runs, less the usual time between them before it:
 *             how long the program's CUDA calls were held
 *   ckpt      selfckpt_save() from call to return (image written, synced,
 *             renamed)
 *   rate      kernels ended per second after the stall until selfckpt_save()
 *             returned, over the rate in the second before the checkpoint
 *
 * Then selfckpt-restore brings the subject back, which checksums its device
 * memory; a mismatch is reported and fails the run. Medians of the runs, with
 * the targets: stall <= 30 ms (device), <= 300 ms (host); ckpt <= 1.1 x the
 * blocking checkpoint's (off); rate >= 0.9.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "selfckpt.h"
#include "tests/bench/bench_cuda_data.h"
#include "tests/bench/bench_data.h"

#define MAX_RUNS 50
#define NOTES (1u << 20)
#define KERNEL_S 0.001
#define WARM_S 1.0
#define AFTER_S 0.2
#define EXIT_USAGE 64

enum way { W_OFF, W_DEVICE, W_HOST, W_N };
static const char *const way_names[W_N] = { "off", "device", "host" };
static const double stall_target[W_N] = { 0, 0.030, 0.300 };

/* the first checkpoint of the process, then a later one */
enum metric { M_STALL1, M_CKPT1, M_RATE1, M_STALL, M_CKPT, M_RATE, M_N };

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ======== the subject ======== */

#define SCHECK(call) bench_gpu_check((call), "bench-cuda-background subject", #call, __LINE__)

static struct {
	CUcontext ctx;
	CUfunction fn;
	CUstream stream;
	CUdeviceptr out;
	unsigned blocks;
	int iters;
	volatile bool stop;
	double ends[NOTES];
	volatile size_t n;
} w;

static void launch(void)
{
	void *args[] = { &w.out, &w.iters };

	SCHECK(cuLaunchKernel(w.fn, w.blocks, 1, 1, 256, 1, 1, 0, w.stream, args, NULL));
	SCHECK(cuStreamSynchronize(w.stream));
}

static void *worker(void *arg)
{
	(void)arg;
	SCHECK(cuCtxSetCurrent(w.ctx));
	while (!w.stop) {
		launch();
		if (w.n < NOTES)
			w.ends[w.n++] = now();
	}
	return NULL;
}

/* About KERNEL_S a kernel on this GPU. */
static void calibrate(void)
{
	double t;

	w.iters = 1 << 12;
	launch();
	t = now();
	for (int i = 0; i < 10; i++)
		launch();
	t = (now() - t) / 10;
	w.iters = (int)(w.iters * (KERNEL_S / (t > 1e-6 ? t : 1e-6)));
	if (w.iters < 1)
		w.iters = 1;
}

static void start_worker(CUmodule mod, pthread_t *th)
{
	CUdevice dev;
	int sms;

	SCHECK(cuModuleGetFunction(&w.fn, mod, "bench_compute"));
	SCHECK(cuCtxGetDevice(&dev));
	SCHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	w.blocks = (unsigned)sms * 4;
	SCHECK(cuMemAlloc(&w.out, (size_t)w.blocks * 256 * 4));
	SCHECK(cuStreamCreate(&w.stream, CU_STREAM_NON_BLOCKING));
	calibrate();
	if (pthread_create(th, NULL, worker, NULL)) {
		fprintf(stderr, "bench-cuda-background subject: no worker thread\n");
		exit(1);
	}
}

static double median_gap(size_t from, size_t to)
{
	static double g[NOTES];
	size_t n = 0;

	for (size_t i = from + 1; i < to; i++)
		g[n++] = w.ends[i] - w.ends[i - 1];
	if (!n)
		return 0;
	for (size_t i = 1; i < n; i++) /* insertion sort: about a thousand */
		for (size_t j = i; j > 0 && g[j - 1] > g[j]; j--) {
			double x = g[j];

			g[j] = g[j - 1];
			g[j - 1] = x;
		}
	return g[n / 2];
}

/* The stall and the rate after it, from the worker's notes around [t0, t1]. */
static void figures(double t0, double t1, double *stall, double *ckpt, double *rate)
{
	size_t first = 0, last, before = 0, at = 0;
	double longest = 0, usual, after;

	while (first < w.n && w.ends[first] < t0)
		first++;
	while (before < first && w.ends[before] < t0 - WARM_S)
		before++;
	for (last = first; last < w.n && w.ends[last] <= t1; last++) {
		double gap = w.ends[last] - (last ? w.ends[last - 1] : t0);

		if (gap > longest) {
			longest = gap;
			at = last;
		}
	}
	if (last < w.n && w.ends[last] - w.ends[last - 1] > longest) { /* held to the end */
		longest = w.ends[last] - w.ends[last - 1];
		at = last;
	}
	*ckpt = t1 - t0;
	usual = median_gap(before, first);
	*stall = longest > usual ? longest - usual : 0;
	after = at < last ? t1 - w.ends[at] : 0;
	*rate = after > 0.05 && first > before ?
			((double)(last - at) / after) / ((double)(first - before) / WARM_S) : -1;
}

static int subject_main(char **argv)
{
	static struct bench_gpu_data d;
	uint64_t want, got;
	pthread_t th;
	double t0, t1, stall, ckpt, rate, first[3];
	CUdevice dev;
	CUmodule mod;
	int ret;

	SCHECK(cuInit(0));
	SCHECK(cuDeviceGet(&dev, 0));
	SCHECK(cuDevicePrimaryCtxRetain(&w.ctx, dev));
	SCHECK(cuCtxSetCurrent(w.ctx));
	SCHECK(cuModuleLoad(&mod, argv[5]));
	SCHECK(bench_gpu_alloc(&d, mod, strtoull(argv[3], NULL, 10)));
	SCHECK(bench_gpu_fill(&d, true));
	SCHECK(bench_gpu_checksum(&d, &want));
	start_worker(mod, &th);
	while (!w.n || now() - w.ends[0] < WARM_S + 0.1)
		usleep(10000);
	t0 = now();
	ret = selfckpt_save(argv[4]);
	t1 = now();
	if (ret != SELFCKPT_SAVED) {
		fprintf(stderr, "bench-cuda-background subject: cannot checkpoint into '%s': %s\n",
			argv[4], selfckpt_last_error());
		return 1;
	}
	usleep((useconds_t)((WARM_S + 0.1) * 1e6)); /* the worker notes its next kernel's end */
	figures(t0, t1, &first[0], &first[1], &first[2]);
	t0 = now();
	ret = selfckpt_save(argv[4]);
	t1 = now();
	if (ret == SELFCKPT_RESTORED) {
		w.stop = true;
		pthread_join(th, NULL);
		SCHECK(bench_gpu_checksum(&d, &got));
		dprintf(STDOUT_FILENO, "check %s\n", got == want ? "ok" : "bad");
		return got == want ? 0 : 3;
	}
	usleep((useconds_t)(AFTER_S * 1e6));
	w.stop = true;
	pthread_join(th, NULL);
	if (ret != SELFCKPT_SAVED) {
		fprintf(stderr, "bench-cuda-background subject: cannot checkpoint into '%s': %s\n",
			argv[4], selfckpt_last_error());
		return 1;
	}
	figures(t0, t1, &stall, &ckpt, &rate);
	dprintf(STDOUT_FILENO, "saved %.6f %.6f %.4f %.6f %.6f %.4f\n", first[0], first[1],
		first[2], stall, ckpt, rate);
	return 0;
}

/* ======== the runs ======== */

struct opts {
	uint64_t bytes;
	unsigned runs;
	struct bench_gpu_paths at;
};

/* The first line @cmd prints, in @out; its exit status. */
static int run(const char *cmd, char *out, size_t cap)
{
	FILE *p = popen(cmd, "r");
	int status;

	out[0] = 0;
	if (!p)
		return -1;
	if (!fgets(out, (int)cap, p))
		out[0] = 0;
	while (fgetc(p) != EOF)
		;
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int one_run(const struct opts *o, int way, double *m)
{
	char image[PATH_MAX + 16], cmd[4 * PATH_MAX + 128], out[256];
	int st;

	snprintf(image, sizeof(image), "%s/bg.sckpt", o->at.dir);
	unlink(image);
	snprintf(cmd, sizeof(cmd), "SELFCKPT_CUDA_CAPTURE=%s '%s' subject %s %llu '%s' '%s'",
		 way_names[way], o->at.self, way_names[way], (unsigned long long)o->bytes, image,
		 o->at.module);
	if ((st = run(cmd, out, sizeof(out))) != 0 ||
	    sscanf(out, "saved %lf %lf %lf %lf %lf %lf", &m[M_STALL1], &m[M_CKPT1], &m[M_RATE1],
		   &m[M_STALL], &m[M_CKPT], &m[M_RATE]) != 6) {
		fprintf(stderr, "bench-cuda-background: the %s checkpoint failed (exit %d): '%s'\n",
			way_names[way], st, out);
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "'%s' '%s'", o->at.restore, image);
	st = run(cmd, out, sizeof(out));
	unlink(image);
	if (st != 0 || strncmp(out, "check ok", 8)) {
		fprintf(stderr, "bench-cuda-background: WRONG: the %s image restored with exit %d: "
			"'%s'\n", way_names[way], st, out);
		return -1;
	}
	fprintf(stderr, "  %-6s first: stall %7.1f ms, checkpoint %.3f s, kernel rate %5.2f; "
		"later: stall %7.1f ms, checkpoint %.3f s, kernel rate %5.2f (-1: none ran); "
		"restored: data ok\n", way_names[way], m[M_STALL1] * 1e3, m[M_CKPT1], m[M_RATE1],
		m[M_STALL] * 1e3, m[M_CKPT], m[M_RATE]);
	return 0;
}

static const char *mark(bool ok)
{
	return ok ? "PASS" : "MISS";
}

static void row(const char *name, const char *when, const double *med, double off)
{
	char rate[32] = "n/a";

	if (med[2] >= 0)
		snprintf(rate, sizeof(rate), "%.2f", med[2]);
	printf("%-8s %-6s %12.1f %14.3f %11.2fx %14s\n", name, when, med[0] * 1e3, med[1],
	       med[1] / off, rate);
}

static void report(const struct opts *o, double v[W_N][M_N][MAX_RUNS])
{
	double med[W_N][M_N];

	for (int k = 0; k < W_N; k++)
		for (int m = 0; m < M_N; m++)
			med[k][m] = bench_median(v[k][m], o->runs);
	printf("\n%.2f GiB of device memory (noise), medians of %u runs; 'vs off': over the "
	       "blocking checkpoint's time\n", (double)o->bytes / (1 << 30), o->runs);
	printf("%-8s %-6s %12s %14s %12s %14s\n", "capture", "ckpt", "stall ms", "checkpoint s",
	       "vs off", "kernel rate");
	for (int k = 0; k < W_N; k++) {
		row(way_names[k], "first", &med[k][M_STALL1], med[W_OFF][M_CKPT1]);
		row(way_names[k], "later", &med[k][M_STALL], med[W_OFF][M_CKPT]);
	}
	printf("\ntargets (later checkpoints)\n");
	for (int k = W_DEVICE; k < W_N; k++) {
		printf("  %-6s stall %.1f ms <= %.0f ms: %s\n", way_names[k],
		       med[k][M_STALL] * 1e3, stall_target[k] * 1e3,
		       mark(med[k][M_STALL] <= stall_target[k]));
		printf("  %-6s checkpoint %.2fx the blocking one <= 1.10x: %s\n", way_names[k],
		       med[k][M_CKPT] / med[W_OFF][M_CKPT],
		       mark(med[k][M_CKPT] <= 1.1 * med[W_OFF][M_CKPT]));
		printf("  %-6s kernel rate during the write %.2f >= 0.90: %s\n", way_names[k],
		       med[k][M_RATE], mark(med[k][M_RATE] >= 0.9));
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench-cuda-background [--gib N] [--runs R] [--dir D] [--module F]\n"
		   "  the stall, time and kernel rate of a checkpoint of N GiB (8) of device\n"
		   "  memory with SELFCKPT_CUDA_CAPTURE off, device and host; medians of R (3)\n"
		   "  runs; the image in D (/dev/shm, else /tmp)\n");
}

static int parse(struct opts *o, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "gib", 1, NULL, 'g' }, { "runs", 1, NULL, 'r' }, { "dir", 1, NULL, 'd' },
		{ "module", 1, NULL, 'm' }, { "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int c;

	o->bytes = 8ull << 30;
	o->runs = 3;
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		if (c == 'g')
			o->bytes = (uint64_t)(strtod(optarg, NULL) * (1 << 30)) & ~7ull;
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
	if (!o->bytes || !o->runs || o->runs > MAX_RUNS) {
		usage(stderr);
		exit(EXIT_USAGE);
	}
	return bench_gpu_paths(&o->at, 1.2 * (double)o->bytes);
}

int main(int argc, char **argv)
{
	static double v[W_N][M_N][MAX_RUNS];
	struct opts o = { 0 };

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 6 && !strcmp(argv[1], "subject"))
		return subject_main(argv);
	if (parse(&o, argc, argv) < 0)
		return 1;
	printf("bench-cuda-background: %.2f GiB, %u runs, image in %s\n",
	       (double)o.bytes / (1 << 30), o.runs, o.at.dir);
	for (unsigned r = 0; r < o.runs; r++) {
		fprintf(stderr, "run %u of %u\n", r + 1, o.runs);
		for (int k = 0; k < W_N; k++) {
			double m[M_N];

			if (one_run(&o, k, m) < 0)
				return 1;
			for (int j = 0; j < M_N; j++)
				v[k][j][r] = m[j];
		}
	}
	report(&o, v);
	return 0;
}
