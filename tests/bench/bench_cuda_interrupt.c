/* SPDX-License-Identifier: MIT */
/*
 * bench_cuda_interrupt.c - a long kernel that a checkpoint interrupts: how
 * soon the checkpoint is taken, what the interruption costs, and whether the
 * result is the uninterrupted one, in the saving and the restored process.
 *
 *   bench-cuda-interrupt [--seconds S] [--item-ms M] [--dir D] [--module F]
 *
 * The kernel (bench_items) is made of items of M ms (default 10) of busy
 * cycles each, as many as the GPU's blocks get through in S s (default 60),
 * taken as selfckpt_kernel.h takes them. Figures:
 *
 *   plain        one launch with no flag to read (a program without selfckpt)
 *   resumable    selfckpt_launch_resumable(), no checkpoint: the flag's cost
 *   interrupted  the same, with selfckpt_save() from the main thread a third
 *                of the way: the save's time (the items under way end, the
 *                image of this small process is written), the whole launch's
 *                time, its launches (2), and every item's result checked
 *   restored     selfckpt-restore of that image: the restored process
 *                finishes the launch and checks every item again
 *
 * Targets: the save within 100 ms plus its write (the write is timed apart,
 * from the log's figures, where the image is small: reported as is); the
 * flag's cost <= 1%; the results right, twice.
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
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
#include "selfckpt_kernel.h"
#include "tests/bench/bench_cuda_data.h"

#define MIX_K 0x9e3779b97f4a7c15ull
#define EXIT_USAGE 64

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#define CHECK(call) bench_gpu_check((call), "bench-cuda-interrupt", #call, __LINE__)

/* splitmix64's finaliser, as bench_kernels.cu's mix() */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static struct {
	CUcontext ctx;
	CUfunction fn;
	CUstream stream;
	CUdeviceptr out, work;
	unsigned blocks;
	long long cycles;
	unsigned long long items;
	CUresult result;
	double took;
	char image[PATH_MAX], restore[PATH_MAX], module[PATH_MAX];
} b;

static void *params[3] = { &b.out, &b.cycles, &b.work };

static void *resumable(void *arg)
{
	double t0 = now();

	(void)arg;
	CHECK(cuCtxSetCurrent(b.ctx));
	b.result = selfckpt_launch_resumable(b.fn, b.blocks, 1, 1, 32, 1, 1, 0, b.stream, params,
					     b.work, b.items);
	b.took = now() - t0;
	return NULL;
}

static double plain(void)
{
	struct selfckpt_work w = { 0, b.items, NULL, 0 };
	double t0 = now();

	CHECK(cuMemcpyHtoD(b.work, &w, sizeof(w)));
	CHECK(cuLaunchKernel(b.fn, b.blocks, 1, 1, 32, 1, 1, 0, b.stream, params, NULL));
	CHECK(cuStreamSynchronize(b.stream));
	return now() - t0;
}

/* Every item's result right, and the launches it took. */
static bool results_right(unsigned long long *launches)
{
	static uint64_t *h;
	struct selfckpt_work w;

	if (!h && !(h = malloc(b.items * 8)))
		return false;
	CHECK(cuMemcpyDtoH(h, b.out, b.items * 8));
	CHECK(cuMemcpyDtoH(&w, b.work, sizeof(w)));
	*launches = w.launches;
	for (unsigned long long i = 0; i < b.items; i++)
		if (h[i] != mix(i))
			return false;
	return true;
}

static void setup(double seconds, double item_ms)
{
	CUdevice dev;
	CUmodule mod;
	int sms, khz;

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&b.ctx, dev));
	CHECK(cuCtxSetCurrent(b.ctx));
	CHECK(cuModuleLoad(&mod, b.module));
	CHECK(cuModuleGetFunction(&b.fn, mod, "bench_items"));
	CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	CHECK(cuDeviceGetAttribute(&khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev));
	b.blocks = (unsigned)sms;
	/* the software device takes the cycles as nanoseconds */
	b.cycles = (long long)(item_ms * (khz > 0 ? khz : 1000000));
	b.items = (unsigned long long)(seconds * 1000 / item_ms) * b.blocks;
	CHECK(cuMemAlloc(&b.out, b.items * 8));
	CHECK(cuMemAlloc(&b.work, SELFCKPT_WORK_BYTES));
	CHECK(cuStreamCreate(&b.stream, CU_STREAM_NON_BLOCKING));
	printf("%llu items of %.1f ms on %u blocks: %.0f s a launch\n", b.items, item_ms,
	       b.blocks, (double)b.items / b.blocks * item_ms / 1000);
}

/* The restored process: the launcher thread finishes; check it and say so. */
static int restored(pthread_t th)
{
	unsigned long long launches = 0;
	bool right;

	pthread_join(th, NULL);
	right = b.result == CUDA_SUCCESS && results_right(&launches);
	printf("restored %s %llu\n", right ? "right" : "WRONG", launches);
	return right ? 0 : 3;
}

static bool run_restore(void)
{
	char cmd[2 * PATH_MAX + 16], line[256] = "";
	unsigned long long launches = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' '%s'", b.restore, b.image);
	if (!(p = popen(cmd, "r")))
		return false;
	while (fgets(line, sizeof(line), p) && strncmp(line, "restored ", 9))
		;
	pclose(p);
	if (sscanf(line, "restored right %llu", &launches) != 1) {
		printf("restored: %s", line[0] ? line : "no answer\n");
		return false;
	}
	printf("restored: every item right, %llu launches\n", launches);
	return true;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench-cuda-interrupt [--seconds S] [--item-ms M] [--dir D] "
		   "[--module F]\n");
}

static void parse(int argc, char **argv, double *seconds, double *item_ms, char *dir)
{
	static const struct option longs[] = {
		{ "seconds", 1, NULL, 's' }, { "item-ms", 1, NULL, 'i' }, { "dir", 1, NULL, 'd' },
		{ "module", 1, NULL, 'm' }, { "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	char self[PATH_MAX], *at;
	ssize_t n;
	int c;

	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		if (c == 's')
			*seconds = strtod(optarg, NULL);
		else if (c == 'i')
			*item_ms = strtod(optarg, NULL);
		else if (c == 'd')
			snprintf(dir, PATH_MAX, "%s", optarg);
		else if (c == 'm')
			snprintf(b.module, sizeof(b.module), "%s", optarg);
		else {
			usage(c == 'h' ? stdout : stderr);
			exit(c == 'h' ? 0 : EXIT_USAGE);
		}
	}
	if (*seconds <= 0 || *item_ms <= 0 || (n = readlink("/proc/self/exe", self,
							    sizeof(self) - 1)) < 0) {
		usage(stderr);
		exit(EXIT_USAGE);
	}
	self[n] = 0;
	/* found out now, not after the two minutes of launches before the checkpoint */
	if (access(dir, W_OK | X_OK)) {
		fprintf(stderr, "bench-cuda-interrupt: cannot write the image in '%s': %s\n", dir,
			strerror(errno));
		exit(EXIT_USAGE);
	}
	at = dirname(self);
	snprintf(b.restore, sizeof(b.restore), "%.4000s/../bin/selfckpt-restore", at);
	if (!b.module[0])
		snprintf(b.module, sizeof(b.module), "%.4000s/bench_kernels.fatbin", at);
}

int main(int argc, char **argv)
{
	double seconds = 60, item_ms = 10, t_plain, t_res, t0, save_s;
	char dir[PATH_MAX] = "/tmp";
	unsigned long long launches = 0;
	bool right, ok;
	pthread_t th;
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse(argc, argv, &seconds, &item_ms, dir);
	snprintf(b.image, sizeof(b.image), "%s/bench-cuda-interrupt.%d.sckpt", dir, (int)getpid());
	setup(seconds, item_ms);
	t_plain = plain();
	printf("plain launch: %.3f s\n", t_plain);
	resumable(NULL);
	t_res = b.took;
	right = b.result == CUDA_SUCCESS && results_right(&launches);
	printf("resumable launch, no checkpoint: %.3f s (%+.2f%%), %llu launch, results %s\n",
	       t_res, (t_res / t_plain - 1) * 100, launches, right ? "right" : "WRONG");
	CHECK(cuMemsetD8(b.out, 0, b.items * 8));
	if (pthread_create(&th, NULL, resumable, NULL))
		return 1;
	usleep((useconds_t)(t_res / 3 * 1e6));
	t0 = now();
	r = selfckpt_save(b.image);
	save_s = now() - t0;
	if (r == SELFCKPT_RESTORED)
		return restored(th);
	if (r != SELFCKPT_SAVED) {
		fprintf(stderr, "bench-cuda-interrupt: cannot checkpoint into '%s': %s\n", b.image,
			selfckpt_last_error());
		return 1;
	}
	pthread_join(th, NULL);
	ok = b.result == CUDA_SUCCESS && results_right(&launches);
	printf("interrupted at a third: selfckpt_save() took %.3f s; the launch %.3f s, %llu "
	       "launches, results %s\n", save_s, b.took, launches, ok ? "right" : "WRONG");
	ok = run_restore() && ok && right;
	unlink(b.image);
	printf("\ntargets\n  checkpoint %.3f s after it was asked for, the write included: "
	       "<= 0.100 s plus the write: %s\n  flag checks %+.2f%% <= 1%%: %s\n  results "
	       "right, saved and restored: %s\n", save_s, save_s <= 0.1 ? "PASS" : "see the write",
	       (t_res / t_plain - 1) * 100, t_res <= 1.01 * t_plain ? "PASS" : "MISS",
	       ok ? "PASS" : "FAIL");
	return ok ? 0 : 1;
}
