/* SPDX-License-Identifier: MIT */
/*
 * bench_cuda.c - what the GPU proxy costs: the same Driver API calls made
 * through the driver's libcuda and through libselfckpt, in one process, in one
 * run, alternating.
 *
 * Both are loaded with dlopen(RTLD_LOCAL) and every call is looked up by the
 * versioned name cuda.h gives it (cuMemAlloc_v2, ...), so neither shadows the
 * other. The driver's library is started first; libselfckpt's cuInit() then
 * starts its proxy, another process that loads the driver on its own.
 *
 * Measurements, each the median of --runs runs, native and selfckpt in turn
 * (which goes first alternates from run to run):
 *
 *   compute     bench_compute launched LAUNCHES times back to back, then one
 *               cuCtxSynchronize(); ms per launch. The iteration count is
 *               chosen once, on the native driver, for ~COMPUTE_MS per launch.
 *   launches    LAUNCH_N launches of bench_empty (1 block of 32 threads) on the
 *               NULL stream, then cuCtxSynchronize(); launches per second.
 *   Ex launches the same through cuLaunchKernelEx, with a launch priority and
 *               programmatic stream serialisation as attributes.
 *   graphs      a graph of GRAPH_NODES launches of bench_empty in a chain,
 *               instantiated once, launched GRAPH_N times on a stream, then
 *               cuStreamSynchronize(); graph launches per second.
 *   ctx sync    cuCtxSynchronize() on an idle context, SYNC_N times; us each.
 *   stream query cuStreamQuery() on an idle stream, SYNC_N times; us each.
 *   pinned      cuMemcpyHtoD / cuMemcpyDtoH of --mib MiB between a device
 *               buffer and cuMemAllocHost() memory, COPY_REPS times; GB/s.
 *   pageable    the same from and into malloc() memory, faulted in first.
 *   alloc 4K    cuMemAlloc() + cuMemFree() of 4 KiB, ALLOC_N pairs; us a pair.
 *   async 4K    cuMemAllocAsync() + cuMemFreeAsync() of 4 KiB on a stream, ALLOC_N
 *               pairs, then cuStreamSynchronize(); us a pair, the sync included.
 *
 * Each row prints the target next to the figure, with PASS or MISS. It
 * asserts nothing: the exit status is 0 unless a call fails.
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "tests/bench/bench_data.h"

#define DEFAULT_RUNS 5u
#define MAX_RUNS 100u
#define DEFAULT_COPY_MIB 256u
#define COMPUTE_MS 75.0   /* aimed-for time of one compute launch */
#define LAUNCHES 5        /* compute launches timed per run */
#define LAUNCH_N 100000   /* empty launches per run */
#define SYNC_N 20000      /* synchronous calls per run */
#define GRAPH_NODES 10    /* kernel nodes of the launched graph */
#define GRAPH_N 20000     /* graph launches per run */
#define COPY_REPS 4       /* copies per direction per run */
#define ALLOC_N 1000      /* 4 KiB allocations per run */
#define ALLOC_SIZE 4096
#define STENCIL_SIDE 2048 /* the managed stencil's grid: two of 16 MiB */
#define STENCIL_N 20      /* its steps per run */
#define BLOCK 256         /* threads per block of the compute kernel */
#define BLOCKS_PER_SM 8

#define STR_(x) #x
#define STR(x) STR_(x) /* after expansion: cuMemAlloc -> "cuMemAlloc_v2" */

/* Every call this program makes, named as cuda.h names them. */
#define CU_CALLS(X) \
	X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuDeviceGet) X(cuDeviceGetName) \
	X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) \
	X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuStreamCreate) X(cuStreamDestroy) \
	X(cuStreamQuery) X(cuModuleLoad) X(cuModuleUnload) X(cuModuleGetFunction) \
	X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuMemAllocAsync) X(cuMemFreeAsync) \
	X(cuStreamSynchronize) X(cuMemAlloc) X(cuMemFree) X(cuMemAllocHost) X(cuMemFreeHost) \
	X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuGraphCreate) X(cuGraphAddKernelNode) \
	X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy) \
	X(cuMemAllocManaged)

/* One way to reach the GPU, and what this program set up through it. */
struct driver {
	const char *name; /* "native", "selfckpt" */
	char path[PATH_MAX];
	void *dl;
#define X(f) __typeof__(f) *f;
	CU_CALLS(X)
#undef X
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction compute, empty, stencil;
	CUstream stream;
	CUdeviceptr out, dbuf;
	void *pinned, *pageable;
	unsigned blocks; /* of the compute kernel */
	bool measuring;  /* a failed call ends the measurement, not the program */
	jmp_buf fail;
	char error[256]; /* the first failed call of a measurement */
};

struct opts {
	unsigned runs;
	size_t copy_bytes;
	char selfckpt[PATH_MAX], libcuda[PATH_MAX], module[PATH_MAX];
};

/* How the two figures of a row compare, and what is asked of them. */
enum judge {
	TIME_RATIO,  /* selfckpt / native of a time <= target */
	RATE_RATIO,  /* selfckpt / native of a rate >= target */
	TIME_DIFF,   /* selfckpt - native of a time <= target (us) */
	TIME_BELOW,  /* selfckpt / native of a time < target */
	TIME_REPORTED, /* selfckpt / native of a time, reported: no target */
};

struct measure {
	const char *name, *unit;
	enum judge judge;
	double target;
	double (*run)(struct driver *d, const struct opts *o, int iters);
};

/* The iteration count of bench_compute, set once on the native driver. */
static int compute_iters;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * On failure: the driver, the call, the error name and the line; then exit 1,
 * or, within a measurement, back to it (run_measure), which reports the row as
 * failed and goes on with the next.
 */
#define CK(d, call) check((d), (call), #call, __LINE__)

static void check(struct driver *d, CUresult res, const char *call, int line)
{
	const char *name = NULL;

	if (res == CUDA_SUCCESS)
		return;
	if (!d->cuGetErrorName || d->cuGetErrorName(res, &name) != CUDA_SUCCESS || !name)
		name = "unknown error";
	fprintf(stderr, "bench-cuda: %s: %s failed: %s (%d) at line %d\n", d->name, call, name,
		(int)res, line);
	if (!d->measuring)
		exit(1);
	if (!d->error[0])
		snprintf(d->error, sizeof(d->error), "%s: %.120s failed: %s", d->name, call, name);
	longjmp(d->fail, 1);
}

/* ---- the two drivers ---- */

static int load_driver(struct driver *d)
{
	d->dl = dlopen(d->path, RTLD_NOW | RTLD_LOCAL);
	if (!d->dl) {
		fprintf(stderr, "bench-cuda: cannot load the %s driver '%s': %s\n", d->name,
			d->path, dlerror());
		return -1;
	}
#define X(f)                                                                               \
	*(void **)&d->f = dlsym(d->dl, STR(f));                                            \
	if (!d->f) {                                                                       \
		fprintf(stderr, "bench-cuda: '%s' has no %s\n", d->path, STR(f));          \
		return -1;                                                                 \
	}
	CU_CALLS(X)
#undef X
	return 0;
}

/* Context, module, stream and buffers: everything the measurements use. */
static void setup_driver(struct driver *d, const struct opts *o)
{
	int sms = 0;

	CK(d, d->cuInit(0));
	CK(d, d->cuDeviceGet(&d->dev, 0));
	CK(d, d->cuDevicePrimaryCtxRetain(&d->ctx, d->dev));
	CK(d, d->cuCtxSetCurrent(d->ctx));
	CK(d, d->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->dev));
	d->blocks = (unsigned)(sms > 0 ? sms : 1) * BLOCKS_PER_SM;
	CK(d, d->cuModuleLoad(&d->mod, o->module));
	CK(d, d->cuModuleGetFunction(&d->compute, d->mod, "bench_compute"));
	CK(d, d->cuModuleGetFunction(&d->empty, d->mod, "bench_empty"));
	CK(d, d->cuModuleGetFunction(&d->stencil, d->mod, "bench_stencil"));
	CK(d, d->cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING));
	CK(d, d->cuMemAlloc(&d->out, (size_t)d->blocks * BLOCK * sizeof(float)));
	CK(d, d->cuMemAlloc(&d->dbuf, o->copy_bytes));
	CK(d, d->cuMemAllocHost(&d->pinned, o->copy_bytes));
	d->pageable = malloc(o->copy_bytes);
	if (!d->pageable) {
		fprintf(stderr, "bench-cuda: out of memory for %zu bytes\n", o->copy_bytes);
		exit(1);
	}
	memset(d->pinned, 0x5a, o->copy_bytes);
	memset(d->pageable, 0x5a, o->copy_bytes); /* faulted in, not the zero page */
}

static void release_driver(struct driver *d)
{
	CK(d, d->cuCtxSetCurrent(d->ctx));
	CK(d, d->cuMemFreeHost(d->pinned));
	CK(d, d->cuMemFree(d->dbuf));
	CK(d, d->cuMemFree(d->out));
	CK(d, d->cuStreamDestroy(d->stream));
	CK(d, d->cuModuleUnload(d->mod));
	CK(d, d->cuDevicePrimaryCtxRelease(d->dev));
	free(d->pageable);
}

/* ---- measurements ---- */

static void launch_compute(struct driver *d, int iters)
{
	void *params[] = { &d->out, &iters };

	CK(d, d->cuLaunchKernel(d->compute, d->blocks, 1, 1, BLOCK, 1, 1, 0, NULL, params,
				NULL));
}

/* ms per launch, LAUNCHES launches back to back. */
static double run_compute(struct driver *d, const struct opts *o, int iters)
{
	double t0;

	(void)o;
	launch_compute(d, iters); /* warm */
	CK(d, d->cuCtxSynchronize());
	t0 = now();
	for (int i = 0; i < LAUNCHES; i++)
		launch_compute(d, iters);
	CK(d, d->cuCtxSynchronize());
	return (now() - t0) * 1e3 / LAUNCHES;
}

/* Doubling, then scaling, until one launch takes about COMPUTE_MS. */
static int calibrate_compute(struct driver *d)
{
	double ms = 0;
	int iters = 64;

	while (iters < (1 << 28) && (ms = run_compute(d, NULL, iters)) < 10.0)
		iters *= 2;
	for (int k = 0; k < 2 && ms > 0; k++) {
		double want = (double)iters * COMPUTE_MS / ms;

		iters = want > (double)(1 << 30) ? 1 << 30 : want < 1 ? 1 : (int)want;
		ms = run_compute(d, NULL, iters);
	}
	return iters;
}

static double run_launches(struct driver *d, const struct opts *o, int iters)
{
	double t0;

	(void)o;
	(void)iters;
	for (int i = 0; i < 1000; i++) /* warm */
		CK(d, d->cuLaunchKernel(d->empty, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	CK(d, d->cuCtxSynchronize());
	t0 = now();
	for (int i = 0; i < LAUNCH_N; i++)
		CK(d, d->cuLaunchKernel(d->empty, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	CK(d, d->cuCtxSynchronize());
	return LAUNCH_N / (now() - t0);
}

static double run_launches_ex(struct driver *d, const struct opts *o, int iters)
{
	CUlaunchAttribute attrs[] = {
		{ .id = CU_LAUNCH_ATTRIBUTE_PRIORITY, .value.priority = 0 },
		{ .id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
		  .value.programmaticStreamSerializationAllowed = 0 },
	};
	CUlaunchConfig c = { 1, 1, 1, 32, 1, 1, 0, NULL, attrs, 2 };
	double t0;

	(void)o;
	(void)iters;
	for (int i = 0; i < 1000; i++) /* warm */
		CK(d, d->cuLaunchKernelEx(&c, d->empty, NULL, NULL));
	CK(d, d->cuCtxSynchronize());
	t0 = now();
	for (int i = 0; i < LAUNCH_N; i++)
		CK(d, d->cuLaunchKernelEx(&c, d->empty, NULL, NULL));
	CK(d, d->cuCtxSynchronize());
	return LAUNCH_N / (now() - t0);
}

/* A chain of GRAPH_NODES empty kernels, instantiated. */
static CUgraphExec chain_of_empty(struct driver *d, CUgraph *g)
{
	CUDA_KERNEL_NODE_PARAMS k = { .func = d->empty, .gridDimX = 1, .gridDimY = 1,
				      .gridDimZ = 1, .blockDimX = 32, .blockDimY = 1,
				      .blockDimZ = 1 };
	CUgraphNode prev = NULL, node;
	CUgraphExec e;

	CK(d, d->cuGraphCreate(g, 0));
	for (int i = 0; i < GRAPH_NODES; i++) {
		CK(d, d->cuGraphAddKernelNode(&node, *g, prev ? &prev : NULL, prev ? 1 : 0, &k));
		prev = node;
	}
	CK(d, d->cuGraphInstantiate(&e, *g, 0));
	return e;
}

static double run_graph_launches(struct driver *d, const struct opts *o, int iters)
{
	CUgraph g;
	CUgraphExec e = chain_of_empty(d, &g);
	double t0, rate;

	(void)o;
	(void)iters;
	for (int i = 0; i < 100; i++) /* warm */
		CK(d, d->cuGraphLaunch(e, d->stream));
	CK(d, d->cuStreamSynchronize(d->stream));
	t0 = now();
	for (int i = 0; i < GRAPH_N; i++)
		CK(d, d->cuGraphLaunch(e, d->stream));
	CK(d, d->cuStreamSynchronize(d->stream));
	rate = GRAPH_N / (now() - t0);
	CK(d, d->cuGraphExecDestroy(e));
	CK(d, d->cuGraphDestroy(g));
	return rate;
}

static double run_ctx_sync(struct driver *d, const struct opts *o, int iters)
{
	double t0;

	(void)o;
	(void)iters;
	CK(d, d->cuCtxSynchronize());
	t0 = now();
	for (int i = 0; i < SYNC_N; i++)
		CK(d, d->cuCtxSynchronize());
	return (now() - t0) * 1e6 / SYNC_N;
}

static double run_stream_query(struct driver *d, const struct opts *o, int iters)
{
	double t0;

	(void)o;
	(void)iters;
	CK(d, d->cuStreamQuery(d->stream));
	t0 = now();
	for (int i = 0; i < SYNC_N; i++)
		CK(d, d->cuStreamQuery(d->stream));
	return (now() - t0) * 1e6 / SYNC_N;
}

/* GB/s of COPY_REPS copies of @o->copy_bytes, after one untimed. */
static double copy_rate(struct driver *d, const struct opts *o, void *host, bool to_device)
{
	double t0 = 0;

	for (int i = 0; i <= COPY_REPS; i++) {
		if (i == 1)
			t0 = now();
		if (to_device)
			CK(d, d->cuMemcpyHtoD(d->dbuf, host, o->copy_bytes));
		else
			CK(d, d->cuMemcpyDtoH(host, d->dbuf, o->copy_bytes));
	}
	return (double)o->copy_bytes * COPY_REPS / (now() - t0) * 1e-9;
}

static double run_pinned_h2d(struct driver *d, const struct opts *o, int iters)
{
	(void)iters;
	return copy_rate(d, o, d->pinned, true);
}

static double run_pinned_d2h(struct driver *d, const struct opts *o, int iters)
{
	(void)iters;
	return copy_rate(d, o, d->pinned, false);
}

static double run_pageable_h2d(struct driver *d, const struct opts *o, int iters)
{
	(void)iters;
	return copy_rate(d, o, d->pageable, true);
}

static double run_pageable_d2h(struct driver *d, const struct opts *o, int iters)
{
	(void)iters;
	return copy_rate(d, o, d->pageable, false);
}

static double run_alloc(struct driver *d, const struct opts *o, int iters)
{
	CUdeviceptr p;
	double t0;

	(void)o;
	(void)iters;
	for (int i = 0; i < 10; i++) { /* warm */
		CK(d, d->cuMemAlloc(&p, ALLOC_SIZE));
		CK(d, d->cuMemFree(p));
	}
	t0 = now();
	for (int i = 0; i < ALLOC_N; i++) {
		CK(d, d->cuMemAlloc(&p, ALLOC_SIZE));
		CK(d, d->cuMemFree(p));
	}
	return (now() - t0) * 1e6 / ALLOC_N;
}

static double run_alloc_async(struct driver *d, const struct opts *o, int iters)
{
	CUdeviceptr p;
	CUstream s;
	double t0, us;

	(void)o;
	(void)iters;
	CK(d, d->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (int i = 0; i < 10; i++) { /* warm: the pool is made */
		CK(d, d->cuMemAllocAsync(&p, ALLOC_SIZE, s));
		CK(d, d->cuMemFreeAsync(p, s));
	}
	CK(d, d->cuStreamSynchronize(s));
	t0 = now();
	for (int i = 0; i < ALLOC_N; i++) {
		CK(d, d->cuMemAllocAsync(&p, ALLOC_SIZE, s));
		CK(d, d->cuMemFreeAsync(p, s));
	}
	CK(d, d->cuStreamSynchronize(s));
	us = (now() - t0) * 1e6 / ALLOC_N;
	CK(d, d->cuStreamDestroy(s));
	return us;
}

/*
 * ms per step of a stencil on managed memory that the CPU and the GPU take
 * turns at: the kernel makes the next grid from the last, the CPU reads and
 * writes every point of the new one (a source term), as a program that runs
 * part of each step on the host would. CRUM's measure of managed memory.
 */
static double run_managed_stencil(struct driver *d, const struct opts *o, int iters)
{
	CUdeviceptr g[2];
	int w = STENCIL_SIDE, h = STENCIL_SIDE;
	double t0 = 0;

	(void)o;
	(void)iters;
	for (int k = 0; k < 2; k++) {
		CK(d, d->cuMemAllocManaged(&g[k], (size_t)w * h * sizeof(float),
					   CU_MEM_ATTACH_GLOBAL));
		for (size_t i = 0; i < (size_t)w * h; i++)
			((float *)(uintptr_t)g[k])[i] = (float)(i % 97);
	}
	for (int step = -2; step < STENCIL_N; step++) { /* two steps to warm */
		CUdeviceptr in = g[step & 1], out = g[(step + 1) & 1];
		void *params[] = { &out, &in, &w, &h };
		float *p = (float *)(uintptr_t)out;

		if (step == 0)
			t0 = now();
		CK(d, d->cuLaunchKernel(d->stencil, (unsigned)(w / 32), (unsigned)(h / 8), 1, 32,
					8, 1, 0, NULL, params, NULL));
		CK(d, d->cuCtxSynchronize());
		for (size_t i = 0; i < (size_t)w * h; i++)
			p[i] = p[i] * 0.5f + 1.0f;
	}
	t0 = (now() - t0) * 1e3 / STENCIL_N;
	CK(d, d->cuMemFree(g[0]));
	CK(d, d->cuMemFree(g[1]));
	return t0;
}

static const struct measure measures[] = {
	{ "compute-bound launch", "ms", TIME_RATIO, 1.02, run_compute },
	{ "launch throughput", "1/s", RATE_RATIO, 0.90, run_launches },
	{ "cuLaunchKernelEx throughput", "1/s", RATE_RATIO, 0.90, run_launches_ex },
	{ "graph launch throughput", "1/s", RATE_RATIO, 0.90, run_graph_launches },
	{ "cuCtxSynchronize, idle", "us", TIME_DIFF, 2.0, run_ctx_sync },
	{ "cuStreamQuery, idle stream", "us", TIME_DIFF, 2.0, run_stream_query },
	{ "HtoD from cuMemAllocHost", "GB/s", RATE_RATIO, 0.90, run_pinned_h2d },
	{ "DtoH into cuMemAllocHost", "GB/s", RATE_RATIO, 0.90, run_pinned_d2h },
	{ "HtoD from pageable", "GB/s", RATE_RATIO, 1.00, run_pageable_h2d },
	{ "DtoH into pageable", "GB/s", RATE_RATIO, 1.00, run_pageable_d2h },
	{ "cuMemAlloc+cuMemFree 4 KiB", "us", TIME_BELOW, 1.00, run_alloc },
	{ "cuMemAllocAsync pair 4 KiB", "us", TIME_BELOW, 1.00, run_alloc_async },
	{ "managed stencil, CPU+GPU", "ms", TIME_REPORTED, 0, run_managed_stencil },
};

#define N_MEASURES (sizeof(measures) / sizeof(measures[0]))

/* ---- report ---- */

/* How selfckpt's figure compares with the native one, against the target. */
static bool judge(const struct measure *m, double native, double selfckpt, char *cmp,
		  char *target, size_t n)
{
	switch (m->judge) {
	case TIME_DIFF:
		snprintf(cmp, n, "%+.2f us", selfckpt - native);
		snprintf(target, n, "<= +%.2f us", m->target);
		return selfckpt - native <= m->target;
	case TIME_RATIO:
		snprintf(cmp, n, "x%.3f", selfckpt / native);
		snprintf(target, n, "<= x%.2f", m->target);
		return selfckpt / native <= m->target;
	case TIME_BELOW:
		snprintf(cmp, n, "x%.3f", selfckpt / native);
		snprintf(target, n, "< x%.2f", m->target);
		return selfckpt / native < m->target;
	case TIME_REPORTED:
		snprintf(cmp, n, "x%.3f", selfckpt / native);
		snprintf(target, n, "reported");
		return true;
	default:
		snprintf(cmp, n, "x%.3f", selfckpt / native);
		snprintf(target, n, ">= x%.2f", m->target);
		return selfckpt / native >= m->target;
	}
}

/* A figure, or "failed" when a call of any run of it failed (@err). */
static const char *figure(char *buf, size_t n, double v, const char *err)
{
	if (err[0])
		snprintf(buf, n, "failed");
	else
		snprintf(buf, n, "%.2f", v);
	return buf;
}

static void print_row(const struct measure *m, const double med[2], char err[2][256])
{
	char cmp[32], target[32], a[32], b[32];
	bool ok = judge(m, med[0], med[1], cmp, target, sizeof(cmp));

	if (err[0][0] || err[1][0])
		snprintf(cmp, sizeof(cmp), "-");
	printf("%-28s %-5s %12s %12s %12s %12s  %s\n", m->name, m->unit,
	       figure(a, sizeof(a), med[0], err[0]), figure(b, sizeof(b), med[1], err[1]), cmp,
	       target, ok && !err[0][0] && !err[1][0] ? "PASS" : "MISS");
	for (int i = 0; i < 2; i++)
		if (err[i][0])
			printf("%-28s   %s\n", "", err[i]);
}

static void print_header(const struct driver *native, const struct opts *o)
{
	char name[256] = "";
	int version = 0, cc[2] = { 0 };

	native->cuDeviceGetName(name, sizeof(name), native->dev);
	native->cuDriverGetVersion(&version);
	native->cuDeviceGetAttribute(&cc[0], CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
				     native->dev);
	native->cuDeviceGetAttribute(&cc[1], CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
				     native->dev);
	printf("bench-cuda: %s (sm_%d%d), driver API %d.%d, runs: %u\n", name, cc[0], cc[1],
	       version / 1000, version % 1000 / 10, o->runs);
	printf("  native:   %s\n  selfckpt: %s\n  module:   %s\n", native->path, o->selfckpt,
	       o->module);
	fflush(stdout);
}

static void print_notes(const struct driver *native, const struct opts *o)
{
	printf("\nmedians of the runs (%u); compare: selfckpt / native, or selfckpt - native\n"
	       "compute-bound: %d launches of %u x %d threads, %d FMA rounds of 8 chains each, "
	       "one sync\nlaunches: %d empty launches (1 x 32) then one sync; sync calls: "
	       "%d in a row\ncopies: %zu MiB, %d times each way after one untimed; "
	       "alloc: %d pairs of 4 KiB\n", o->runs, LAUNCHES, native->blocks, BLOCK,
	       compute_iters, LAUNCH_N, SYNC_N, o->copy_bytes >> 20, COPY_REPS, ALLOC_N);
}

/* ---- setup ---- */

static void usage(FILE *f)
{
	fprintf(f, "usage: bench-cuda [--runs N] [--mib N] [--selfckpt LIB] [--libcuda LIB] "
		   "[--module FILE]\n"
		   "  --runs N        runs of each measurement, median printed (default %u)\n"
		   "  --mib N         MiB of each copy (default %u)\n"
		   "  --selfckpt LIB  libselfckpt (default ../lib/libselfckpt.so.1 next to this "
		   "program)\n"
		   "  --libcuda LIB   the driver's library (default libcuda.so.1)\n"
		   "  --module FILE   the kernels (default bench_kernels.fatbin next to this "
		   "program;\n"
		   "                  on the software device, its .softmod)\n"
		   "Runs the same calls through both libraries, alternating, and prints "
		   "each figure\nwith its target and PASS or MISS. SELFCKPT_LIBCUDA tells "
		   "libselfckpt's GPU proxy which\ndriver to load.\n",
		DEFAULT_RUNS, DEFAULT_COPY_MIB);
}

static long parse_num(const char *opt, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "bench-cuda: bad %s '%s': expected %ld..%ld\n", opt, s, min, max);
		exit(2);
	}
	return v;
}

static void copy_path(char *dst, const char *src, const char *opt)
{
	if (strlen(src) >= PATH_MAX) {
		fprintf(stderr, "bench-cuda: %s path too long\n", opt);
		exit(2);
	}
	strcpy(dst, src);
}

/* Defaults next to this program: ../lib/libselfckpt.so.1, bench_kernels.fatbin. */
static void default_paths(struct opts *o)
{
	char self[PATH_MAX], *dir;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0) {
		fprintf(stderr, "bench-cuda: cannot read /proc/self/exe: %s\n", strerror(errno));
		exit(1);
	}
	self[n] = '\0';
	dir = dirname(self);
	if (!o->selfckpt[0])
		snprintf(o->selfckpt, sizeof(o->selfckpt), "%.4000s/../lib/libselfckpt.so.1", dir);
	if (!o->module[0])
		snprintf(o->module, sizeof(o->module), "%.4000s/bench_kernels.fatbin", dir);
}

static void parse_opts(struct opts *o, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "help", no_argument, NULL, 'h' }, { "runs", required_argument, NULL, 'r' },
		{ "mib", required_argument, NULL, 'm' },
		{ "selfckpt", required_argument, NULL, 's' },
		{ "libcuda", required_argument, NULL, 'c' },
		{ "module", required_argument, NULL, 'k' }, { NULL, 0, NULL, 0 },
	};
	char real[PATH_MAX];
	int c;

	o->runs = DEFAULT_RUNS;
	o->copy_bytes = (size_t)DEFAULT_COPY_MIB << 20;
	strcpy(o->libcuda, "libcuda.so.1");
	while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		switch (c) {
		case 'h': usage(stdout); exit(0);
		case 'r': o->runs = (unsigned)parse_num("--runs", optarg, 1, MAX_RUNS); break;
		case 'm':
			o->copy_bytes = (size_t)parse_num("--mib", optarg, 1, 1 << 16) << 20;
			break;
		case 's': copy_path(o->selfckpt, optarg, "--selfckpt"); break;
		case 'c': copy_path(o->libcuda, optarg, "--libcuda"); break;
		case 'k': copy_path(o->module, optarg, "--module"); break;
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		usage(stderr);
		exit(2);
	}
	default_paths(o);
	/* an absolute path: the library finds its proxy next to where it was loaded from */
	if (realpath(o->selfckpt, real))
		strcpy(o->selfckpt, real);
	if (access(o->module, R_OK)) {
		fprintf(stderr, "bench-cuda: no module '%s' (make bench-cuda-progs): %s\n",
			o->module, strerror(errno));
		exit(1);
	}
}

/* One measurement on one driver; NAN when a call failed. */
static double run_measure(const struct measure *m, struct driver *d, const struct opts *o)
{
	volatile double v = NAN;

	d->measuring = true;
	if (!setjmp(d->fail))
		v = m->run(d, o, compute_iters);
	d->measuring = false;
	return v;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	struct driver drv[2] = { { .name = "native" }, { .name = "selfckpt" } };
	static double v[N_MEASURES][2][MAX_RUNS];
	static char err[N_MEASURES][2][256];

	parse_opts(&o, argc, argv);
	strcpy(drv[0].path, o.libcuda);
	strcpy(drv[1].path, o.selfckpt);
	/* the driver first, then libselfckpt, whose proxy is another process */
	if (load_driver(&drv[0]) < 0)
		return 1;
	setup_driver(&drv[0], &o);
	print_header(&drv[0], &o);
	if (load_driver(&drv[1]) < 0)
		return 1;
	setup_driver(&drv[1], &o);
	compute_iters = calibrate_compute(&drv[0]);

	for (unsigned r = 0; r < o.runs; r++) {
		fprintf(stderr, "run %u/%u\n", r + 1, o.runs);
		for (size_t m = 0; m < N_MEASURES; m++) {
			for (int k = 0; k < 2; k++) {
				int i = (int)(r + (unsigned)k) % 2; /* who goes first alternates */

				v[m][i][r] = run_measure(&measures[m], &drv[i], &o);
				if (isnan(v[m][i][r]) && !err[m][i][0])
					memcpy(err[m][i], drv[i].error, sizeof(err[m][i]));
				drv[i].error[0] = '\0';
			}
		}
	}

	printf("\n%-28s %-5s %12s %12s %12s %12s  %s\n", "measurement", "unit", "native",
	       "selfckpt", "compare", "target", "");
	for (size_t m = 0; m < N_MEASURES; m++) {
		double med[2];

		for (int i = 0; i < 2; i++)
			med[i] = err[m][i][0] ? NAN : bench_median(v[m][i], o.runs);
		print_row(&measures[m], med, err[m]);
	}
	print_notes(&drv[0], &o);
	release_driver(&drv[1]);
	release_driver(&drv[0]);
	return 0;
}
