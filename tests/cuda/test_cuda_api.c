/* SPDX-License-Identifier: MIT */
/*
 * The Driver API as libselfckpt serves it, called in the test process and
 * forwarded to a real GPU proxy that loads the software CUDA device
 * (tests/softcuda; a test double: it proves nothing about GPUs). Each test
 * runs in a process of its own, with its own proxy.
 */
#include <criterion/criterion.h>
#define CUDA_ENABLE_DEPRECATED /* the shared memory bank calls, which programs still make */
#include <cuda.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/sc_settings.h"
#include "selfckpt.h"
#include "tests/cuda/cuda_api_harness.h"

TestSuite(cuda_api, .init = sc_test_use_software_device, .timeout = 60);

Test(cuda_api, calls_before_cuinit_fail)
{
	CUdeviceptr p;
	int n;

	cr_assert_eq(cuMemAlloc(&p, 64), CUDA_ERROR_NOT_INITIALIZED);
	cr_assert_eq(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	cr_assert_eq(cuInit(1), CUDA_ERROR_INVALID_VALUE);
}

Test(cuda_api, unsupported_calls_say_so)
{
	CUdriverProcAddressQueryResult st;
	CUresult (*host_node)(void *, void *);
	CUipcMemHandle ipc;
	CUdeviceptr p;
	void *fn;

	sc_test_start();
	OK(cuMemAlloc(&p, 4096));
	cr_assert_eq(cuIpcGetMemHandle(&ipc, p), CUDA_ERROR_NOT_SUPPORTED);
	OK(cuGetProcAddress("cuGraphAddHostNode", (void **)&host_node, 13000, 0, &st));
	cr_assert_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
	cr_assert_eq(host_node(NULL, NULL), CUDA_ERROR_NOT_SUPPORTED);
	OK(cuGetProcAddress("cuMemAlloc", &fn, 13000, 0, &st));
	cr_assert_eq(fn, (void *)cuMemAlloc, "cuGetProcAddress must give the library's own");
	cr_assert_eq(cuGetProcAddress("cuNoSuchCall", &fn, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
	cr_assert_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

Test(cuda_api, device_pointers_come_from_the_arena)
{
	CUdeviceptr small, big, base;
	size_t size;
	unsigned type;

	sc_test_start();
	OK(cuMemAlloc(&small, 100));
	OK(cuMemAlloc(&big, 5u << 20));
	cr_assert_eq(small % 256, 0, "cuMemAlloc alignment");
	cr_assert_geq(small, 0x40000000000ull, "arena address 0x%llx", (unsigned long long)small);
	OK(cuMemGetAddressRange(&base, &size, big + 4096));
	cr_assert_eq(base, big);
	cr_assert_geq(size, 5u << 20);
	OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, small));
	cr_assert_eq(type, CU_MEMORYTYPE_DEVICE);
	OK(cuMemFree(small));
	cr_assert_eq(cuMemFree(small), CUDA_ERROR_INVALID_VALUE, "a second free is refused");
	OK(cuMemFree(big));
}

Test(cuda_api, pinned_and_pageable_copies)
{
	size_t n = 40u << 20; /* five staging buffers and more */
	uint8_t *pinned, *pageable = malloc(n), *back = malloc(n);
	CUdeviceptr d;

	sc_test_start();
	cr_assert(pageable && back);
	OK(cuMemAllocHost((void **)&pinned, n));
	for (size_t i = 0; i < n; i++)
		pageable[i] = (uint8_t)(i * 7 + i / 4096);
	OK(cuMemAlloc(&d, n));
	OK(cuMemcpyHtoD(d, pageable, n));
	OK(cuMemcpyDtoH(pinned, d, n));
	cr_assert_eq(memcmp(pinned, pageable, n), 0, "pageable in, pinned out");
	memset(pinned, 0x5a, n);
	OK(cuMemcpyHtoD(d, pinned, n));
	OK(cuMemcpyDtoH(back, d, n));
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(back[i], 0x5a, "pinned in, pageable out: byte %zu", i);
	OK(cuMemFreeHost(pinned));
	free(pageable);
	free(back);
}

struct worker {
	CUdevice dev;
	int id;
	int ok;
};

/* Each thread: its own context, memory, stream and launches. */
static void *thread_work(void *arg)
{
	struct worker *w = arg;
	CUcontext ctx;
	CUstream s;
	CUfunction step;
	CUdeviceptr a, counter;
	size_t csize;
	uint32_t host[256], got[256], c = 0;
	uint64_t n = 256;
	void *params[] = { &a, &n, &counter };
	CUmodule m;

	if (cuCtxCreate(&ctx, NULL, 0, w->dev) != CUDA_SUCCESS)
		return NULL;
	m = sc_test_load(&step);
	if (cuModuleGetGlobal(&counter, &csize, m, "counter") || cuStreamCreate(&s, 0) ||
	    cuMemAlloc(&a, sizeof(host)))
		return NULL;
	for (int i = 0; i < 256; i++)
		host[i] = (uint32_t)(i + w->id * 1000);
	cuMemcpyHtoD(a, host, sizeof(host));
	for (int k = 0; k < 50; k++)
		cuLaunchKernel(step, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
	if (cuStreamSynchronize(s) || cuMemcpyDtoH(got, a, sizeof(got)) ||
	    cuMemcpyDtoH(&c, counter, 4))
		return NULL;
	for (int k = 0; k < 50; k++)
		for (int i = 0; i < 256; i++)
			host[i] = host[i] * 1664525u + 1013904223u;
	w->ok = !memcmp(host, got, sizeof(got)) && c == 50;
	cuCtxDestroy(ctx);
	return NULL;
}

Test(cuda_api, threads_with_contexts_of_their_own)
{
	struct worker w[4];
	pthread_t t[4];

	sc_test_start();
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ 0, i, 0 };
		cr_assert_eq(pthread_create(&t[i], NULL, thread_work, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		cr_assert(w[i].ok, "thread %d computed wrong results", i);
	}
}

/*
 * Each thread: contexts and modules made and destroyed over and over, so
 * that one thread's cuCtxDestroy() or cuModuleUnload() forgets objects while
 * another's does the same (a sanitizer build catches a walk of a freed one).
 */
struct churner {
	int rounds;
	const char *failed; /* the call that failed, NULL when none did */
	CUresult res;
};

static void *thread_churn(void *arg)
{
	struct churner *w = arg;

	for (int round = 0; round < w->rounds && !w->failed; round++) {
		CUcontext ctx;
		CUfunction step;
		CUmodule m;

		if ((w->res = cuCtxCreate(&ctx, NULL, 0, 0)) != CUDA_SUCCESS) {
			w->failed = "cuCtxCreate";
			break;
		}
		m = sc_test_load(&step);
		sc_test_load(&step); /* a second module: more objects for the others to walk */
		/* every other round one module goes before its context */
		if (round % 2 && (w->res = cuModuleUnload(m)) != CUDA_SUCCESS)
			w->failed = "cuModuleUnload";
		else if ((w->res = cuCtxDestroy(ctx)) != CUDA_SUCCESS)
			w->failed = "cuCtxDestroy";
	}
	return NULL;
}

Test(cuda_api, threads_destroying_contexts_and_modules_at_once)
{
	struct churner w[6];
	pthread_t t[6];

	sc_test_start();
	for (int i = 0; i < 6; i++) {
		w[i] = (struct churner){ .rounds = 150 };
		cr_assert_eq(pthread_create(&t[i], NULL, thread_churn, &w[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		cr_assert_null(w[i].failed, "thread %d: %s returned %d", i, w[i].failed,
			       (int)w[i].res);
	}
}

/* The proxy's pid: the process whose command line names this one as its application. */
static pid_t find_proxy(pid_t app)
{
	char want[32], path[64], cmd[256];
	struct dirent *e;
	DIR *d = opendir("/proc");
	pid_t found = 0;

	snprintf(want, sizeof(want), "%d", (int)app);
	while (d && (e = readdir(d)) && !found) {
		FILE *f;
		size_t n;

		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		n = fread(cmd, 1, sizeof(cmd) - 1, f);
		fclose(f);
		cmd[n] = 0;
		/* selfckpt-gpu-proxy\0FD\0ADDRESS\0PID\0 */
		if (!strcmp(cmd, "selfckpt-gpu-proxy")) {
			const char *arg = cmd;

			for (int i = 0; i < 3 && arg < cmd + n; i++)
				arg += strlen(arg) + 1;
			if (arg < cmd + n && !strcmp(arg, want))
				found = atoi(e->d_name);
		}
	}
	if (d)
		closedir(d);
	return found;
}

static bool gone_within(pid_t pid, int ms)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	for (int i = 0; i < ms / 10; i++) {
		FILE *f;
		char state = 0, buf[512];

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		if (!(f = fopen(path, "r")))
			return true;
		if (fgets(buf, sizeof(buf), f) && strrchr(buf, ')'))
			state = strrchr(buf, ')')[2];
		fclose(f);
		if (state == 'Z' || state == 'X')
			return true;
		usleep(10000);
	}
	return false;
}

Test(cuda_api, the_proxy_never_outlives_its_application)
{
	int ready[2];
	pid_t app, proxy;
	char c;

	cr_assert_eq(pipe(ready), 0);
	app = fork();
	if (app == 0) { /* no assertions here: Criterion reports from one process */
		CUdevice dev;

		close(ready[0]);
		if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS)
			_exit(1);
		write(ready[1], "r", 1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	cr_assert_eq(read(ready[0], &c, 1), 1, "the application did not start CUDA");
	proxy = find_proxy(app);
	cr_assert_gt(proxy, 0, "no proxy for application %d", (int)app);
	kill(app, SIGKILL);
	waitpid(app, NULL, 0);
	cr_assert(gone_within(proxy, 5000), "the proxy %d outlived its application", (int)proxy);
}

/* A proxy that dies: every later call fails, and the application can still end. */
Test(cuda_api, a_dead_proxy_fails_every_later_call)
{
	CUfunction step;
	CUdeviceptr a, counter;
	size_t cs;
	uint64_t n = 1;
	void *params[] = { &a, &n, &counter };
	CUmodule m;
	CUresult r;

	setenv("SOFTCUDA_CRASH", "cuLaunchKernel:2", 1);
	sc_test_start();
	m = sc_test_load(&step);
	OK(cuModuleGetGlobal(&counter, &cs, m, "counter"));
	OK(cuMemAlloc(&a, 64));
	OK(cuLaunchKernel(step, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
	cuLaunchKernel(step, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL); /* the proxy aborts */
	r = cuCtxSynchronize();
	cr_assert_neq(r, CUDA_SUCCESS, "a synchronise after the proxy died succeeded");
	cr_assert_eq(cuMemAlloc(&a, 64), CUDA_ERROR_DEVICE_UNAVAILABLE);
	cr_assert_eq(cuCtxSynchronize(), CUDA_ERROR_DEVICE_UNAVAILABLE);
}

/* A program's dynamic shared memory per block size, 96 bytes a thread; its calls counted. */
static int b2d_calls;

static size_t smem_of_block_size(int block_size)
{
	b2d_calls++;
	return (size_t)block_size * 96;
}

/*
 * The occupancy queries reach the driver for the proxy's function, and the
 * program's block-size-to-shared-memory function, which only the program can
 * run, decides the driver's search as it would without selfckpt: it is run
 * here for each block size up to the limit. Against the software device's
 * model (32 registers a thread, 1 KiB reserved a block, 228 KiB and 2048
 * threads a multiprocessor, 48 KiB of dynamic shared memory a block, 4
 * multiprocessors).
 */
Test(cuda_api, occupancy_queries_and_the_programs_shared_memory_function)
{
	CUfunction step;
	int blocks, grid, block;
	size_t dyn;

	sc_test_start();
	sc_test_load(&step);
	OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, step, 256, 0));
	cr_assert_eq(blocks, 8);
	OK(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, step, 256, 49152,
								 CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE));
	cr_assert_eq(blocks, 4, "shared memory bounds it: %d", blocks);
	OK(cuOccupancyMaxPotentialBlockSize(&grid, &block, step, NULL, 0, 0));
	cr_assert_eq(block, 1024);
	cr_assert_eq(grid, 8);
	OK(cuOccupancyMaxPotentialBlockSize(&grid, &block, step, smem_of_block_size, 0, 0));
	cr_assert_eq(b2d_calls, 1024, "the program's function, once per block size: %d calls",
		     b2d_calls);
	cr_assert_eq(block, 512, "past 512 threads a block needs more than 48 KiB: %d", block);
	cr_assert_eq(grid, 16);
	b2d_calls = 0;
	OK(cuOccupancyMaxPotentialBlockSizeWithFlags(&grid, &block, step, smem_of_block_size, 0,
						     256, 0));
	cr_assert_eq(b2d_calls, 256);
	cr_assert_eq(block, 256);
	cr_assert_eq(grid, 32);
	OK(cuOccupancyAvailableDynamicSMemPerBlock(&dyn, step, 8, 256));
	cr_assert_eq(dyn, 233472 / 8 - 1024);
	OK(cuOccupancyAvailableDynamicSMemPerBlock(&dyn, step, 4, 256));
	cr_assert_eq(dyn, 49152, "no more than a block may have: %zu", dyn);
	cr_assert_eq(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, step, 2048, 0),
		     CUDA_ERROR_INVALID_VALUE);
	cr_assert_eq(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, (CUfunction)&grid, 256,
								 0),
		     CUDA_ERROR_INVALID_HANDLE);
	cr_assert_eq(cuOccupancyMaxPotentialBlockSize(NULL, &block, step, NULL, 0, 0),
		     CUDA_ERROR_INVALID_VALUE);
}

/* The cluster queries take a launch configuration, attributes and all. */
Test(cuda_api, cluster_occupancy_queries)
{
	CUfunction step;
	CUlaunchAttribute cluster = { .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
				      .value.clusterDim = { 2, 1, 1 } };
	CUlaunchConfig c = { 64, 1, 1, 256, 1, 1, 0, NULL, &cluster, 1 };
	int size, clusters, blocks, sms;

	sc_test_start();
	sc_test_load(&step);
	OK(cuOccupancyMaxPotentialClusterSize(&size, step, &c));
	cr_assert_eq(size, 8);
	OK(cuFuncSetAttribute(step, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
	OK(cuOccupancyMaxPotentialClusterSize(&size, step, &c));
	cr_assert_eq(size, 16, "the function's attribute reached the device");
	OK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, step, 256, 0));
	OK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
	OK(cuOccupancyMaxActiveClusters(&clusters, step, &c));
	cr_assert_eq(clusters, blocks * sms / 2, "clusters of 2 on %d multiprocessors: %d", sms,
		     clusters);
	c.numAttrs = 0;
	cr_assert_eq(cuOccupancyMaxActiveClusters(&clusters, step, &c),
		     CUDA_ERROR_INVALID_CLUSTER_SIZE, "no cluster dimension anywhere");
	cr_assert_eq(cuOccupancyMaxActiveClusters(NULL, step, &c), CUDA_ERROR_INVALID_VALUE);
}

static volatile int init_started;
static double init_done_at;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *slow_init(void *arg)
{
	(void)arg;
	init_started = 1;
	if (cuInit(0) == CUDA_SUCCESS)
		init_done_at = now_s();
	return NULL;
}

/*
 * In a child of the test (sc_test_exit_of_child()): cuInit() on a thread, a
 * checkpoint while it runs. Exit 0, 1 when the checkpoint failed, 2 when it did not
 * wait for cuInit(), 3 when cuInit() failed.
 */
static int save_during_cuinit(const char *image)
{
	pthread_t t;
	double saved_at;
	int r;

	if (pthread_create(&t, NULL, slow_init, NULL))
		return 3;
	while (!init_started)
		usleep(1000);
	usleep(150 * 1000); /* inside cuInit(), the proxy starting */
	r = selfckpt_save(image);
	saved_at = now_s();
	pthread_join(t, NULL);
	if (r != SELFCKPT_SAVED) {
		fprintf(stderr, "%s\n", selfckpt_last_error());
		return 1;
	}
	if (init_done_at == 0)
		return 3;
	return init_done_at <= saved_at ? 0 : 2;
}

/*
 * A checkpoint that comes while cuInit() starts the GPU proxy (a real driver
 * takes a while to start: here 600 ms) waits for it: taken inside it, the
 * image held the channel's descriptor as the program's (16 GiB of memfd) and
 * a proxy that had not answered yet, and its restore crashed.
 */
Test(cuda_api, a_checkpoint_waits_for_the_proxy_that_cuinit_starts)
{
	const char *build = getenv("SELFCKPT_BUILD") ? getenv("SELFCKPT_BUILD") : "build";
	char dir[] = "/tmp/sc-cuinit-XXXXXX", image[64], cmd[8192], line[512];
	bool channel_held = false;
	int status;
	FILE *p;

	setenv("SOFTCUDA_INIT_MS", "600", 1); /* read by the proxy's software device */
	cr_assert(mkdtemp(dir));
	snprintf(image, sizeof(image), "%s/img.sckpt", dir);
	status = sc_test_exit_of_child(save_during_cuinit, image);
	cr_assert_neq(status, 2, "the checkpoint did not wait for cuInit()");
	cr_assert_eq(status, 0, "exit %d", status);
	snprintf(cmd, sizeof(cmd), "%s/bin/selfckpt-inspect %s", build, image);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p))
		channel_held |= strstr(line, "selfckpt-cuda-channel") != NULL;
	cr_assert_eq(pclose(p), 0, "selfckpt-inspect %s failed", image);
	cr_assert_not(channel_held, "the image holds the library's channel as a descriptor");
	unlink(image);
	rmdir(dir);
}

/*
 * In a child of the test: device memory used and freed, the context
 * destroyed, then a checkpoint; restored, a new context and new memory.
 * Exit 0 after the save, 42 once restored and the new memory works, 1 and
 * up where something failed.
 */
static int save_after_the_last_context(const char *image)
{
	CUdevice dev;
	CUcontext ctx;
	CUctxCreateParams params = { 0 };
	CUdeviceptr p, small;
	CUfunction step;
	CUstream stream;
	uint32_t word = 0;
	int r;

	/* a module, a stream and a small allocation the destroyed context takes with it */
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxCreate(&ctx, &params, 0, dev) ||
	    cuMemAlloc(&p, 8 << 20) || cuMemFree(p) || cuMemAlloc(&small, 256) ||
	    cuStreamCreate(&stream, 0))
		return 1;
	sc_test_load(&step);
	if (cuCtxDestroy(ctx))
		return 1;
	r = selfckpt_save(image);
	if (r == SELFCKPT_SAVED)
		return 0;
	if (r != SELFCKPT_RESTORED)
		return 2;
	if (cuCtxCreate(&ctx, &params, 0, dev) || cuMemAlloc(&p, 8 << 20) ||
	    cuMemsetD32(p, 0x5eed, 2 << 20) || cuMemcpyDtoH(&word, p + 4096, 4))
		return 3;
	sc_test_load(&step);
	return word == 0x5eed ? 42 : 4;
}

/*
 * A program that destroyed its last context after using device memory, a
 * module and a stream is restored (the device's addresses are reserved again
 * with its next context; what the context held is gone, as in the driver)
 * rather than refused with "no context on device 0" or its proxy crashed.
 */
Test(cuda_api, a_process_whose_last_context_is_destroyed_comes_back)
{
	char dir[] = "/tmp/sc-noctx-XXXXXX";
	int status = sc_test_exit_after_restore(save_after_the_last_context, dir);

	cr_assert_eq(status, 42, "restored: exit %d (see %s/out)", status, dir);
	sc_test_remove_dir(dir);
}

#define PINNED_WORDS (1u << 18)

static volatile uint32_t *reader_pinned;
static volatile int reader_stop;
static volatile unsigned long reader_rounds, reader_bad;

/* A thread of the program that reads pinned memory without any CUDA call, all the time. */
static void *read_pinned_forever(void *arg)
{
	(void)arg;
	while (!reader_stop) {
		for (uint32_t i = 0; i < PINNED_WORDS; i++)
			reader_bad += reader_pinned[i] != i * 2654435761u;
		reader_rounds++;
	}
	return NULL;
}

/*
 * In a child of the test: a thread reading pinned memory while another
 * checkpoints. Exit 0 after the save; restored, 42 when the reader went on
 * reading the same words, and never ran while the pinned memory was not
 * back (it would crash); 3 and up otherwise.
 */
static int save_while_pinned_memory_is_read(const char *image)
{
	pthread_t reader;
	uint32_t *pinned;
	unsigned long rounds;
	int r;

	sc_test_start();
	if (cuMemAllocHost((void **)&pinned, PINNED_WORDS * 4))
		return 1;
	for (uint32_t i = 0; i < PINNED_WORDS; i++)
		pinned[i] = i * 2654435761u;
	reader_pinned = pinned;
	if (pthread_create(&reader, NULL, read_pinned_forever, NULL))
		return 1;
	while (reader_rounds < 2)
		usleep(1000);
	r = selfckpt_save(image);
	if (r == SELFCKPT_SAVED)
		return 0;
	if (r != SELFCKPT_RESTORED)
		return 2;
	rounds = reader_rounds;
	while (reader_rounds < rounds + 2)
		usleep(1000);
	reader_stop = 1;
	pthread_join(reader, NULL);
	return reader_bad ? 3 : 42;
}

/* The restart holds the program's threads until the pinned memory they may touch is back. */
Test(cuda_api, threads_reading_pinned_memory_wait_for_the_restart)
{
	char dir[] = "/tmp/sc-pinned-XXXXXX";
	int status = sc_test_exit_after_restore(save_while_pinned_memory_is_read, dir);

	cr_assert_eq(status, 42, "restored: exit %d (3: words changed; 128+: a crash; see %s/out)",
		     status, dir);
	sc_test_remove_dir(dir);
}

Test(cuda_api, start_up_queries_answer_as_the_device_does)
{
	char bus[32];
	CUdevice dev = -1;
	CUcontext ctx, other;
	CUctxCreateParams params = { 0 };
	unsigned long long id, id_again, other_id;
	CUmoduleLoadingMode mode;
	size_t width;
	int affinity = -1;

	OK(cuInit(0));
	cr_assert_eq(cuCtxResetPersistingL2Cache(), CUDA_ERROR_INVALID_CONTEXT,
		     "it needs a current context");
	ctx = sc_test_start();
	OK(cuDeviceGetPCIBusId(bus, sizeof(bus), 0));
	cr_assert_str_eq(bus, "0000:01:00.0");
	OK(cuDeviceGetByPCIBusId(&dev, bus));
	cr_assert_eq(dev, 0);
	cr_assert_eq(cuDeviceGetByPCIBusId(&dev, "0000:7f:00.0"), CUDA_ERROR_INVALID_VALUE);
	OK(cuDeviceGetTexture1DLinearMaxWidth(&width, CU_AD_FORMAT_FLOAT, 4, 0));
	cr_assert_eq(width, (size_t)1 << 27);
	OK(cuDeviceGetExecAffinitySupport(&affinity, CU_EXEC_AFFINITY_TYPE_SM_COUNT, 0));
	cr_assert_eq(affinity, 0);
	OK(cuDeviceCanAccessPeer(&affinity, 0, 0));
	cr_assert_eq(affinity, 0, "a device is not its own peer");
	OK(cuFlushGPUDirectRDMAWrites(CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX,
				      CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER));
	OK(cuCtxResetPersistingL2Cache());
	OK(cuModuleGetLoadingMode(&mode));
	cr_assert_eq(mode, CU_MODULE_EAGER_LOADING);
	OK(cuCtxGetDevice_v2(&dev, NULL));
	cr_assert_eq(dev, 0);
	OK(cuCtxGetId(NULL, &id));
	OK(cuCtxGetId(ctx, &id_again));
	cr_assert_eq(id, id_again);
	OK(cuCtxCreate(&other, &params, 0, 0));
	OK(cuCtxGetId(other, &other_id));
	cr_assert_neq(other_id, id, "each context has an id of its own");
	OK(cuCtxGetDevice_v2(&dev, other));
	cr_assert_eq(dev, 0);
	OK(cuCtxDestroy(other));
}

Test(cuda_api, functions_and_kernels_tell_their_names_modules_and_libraries)
{
	char text[8192];
	CUfunction step, all[2];
	CUkernel ks[2];
	CUmodule m, owner;
	CUlibrary lib, lib_of;
	CUfunctionLoadingState state;
	const char *name;
	unsigned count;
	size_t offset, size;
	int value;

	sc_test_start();
	m = sc_test_load(&step);
	OK(cuFuncGetName(&name, step));
	cr_assert_str_eq(name, "step");
	OK(cuFuncGetModule(&owner, step));
	cr_assert_eq(owner, m);
	OK(cuFuncIsLoaded(&state, step));
	cr_assert_eq(state, CU_FUNCTION_LOADING_STATE_LOADED);
	OK(cuFuncLoad(step));
	OK(cuModuleGetFunctionCount(&count, m));
	cr_assert_eq(count, 2);
	cr_assert_eq(cuModuleEnumerateFunctions(all, 1, m), CUDA_ERROR_INVALID_VALUE,
		     "the driver asks for room for every function");
	OK(cuModuleEnumerateFunctions(all, 2, m));
	OK(cuFuncGetName(&name, all[1]));
	cr_assert_str_eq(name, "chase");
	OK(cuFuncGetParamInfo(all[0], 2, &offset, &size));
	cr_assert_eq(offset, 16, "the enumerated function is step, marshalled as it: %zu", offset);

	snprintf(text, sizeof(text), ".version 8.0\n.target sm_90\n// softcuda library %s\n"
		 ".entry step (8, 8, 8)\n.entry chase (8)\n", sc_test_kernels);
	OK(cuLibraryLoadData(&lib, text, NULL, NULL, 0, NULL, NULL, 0));
	OK(cuLibraryGetKernelCount(&count, lib));
	cr_assert_eq(count, 2);
	OK(cuLibraryEnumerateKernels(ks, 2, lib));
	OK(cuKernelGetName(&name, ks[1]));
	cr_assert_str_eq(name, "chase");
	OK(cuKernelGetLibrary(&lib_of, ks[0]));
	cr_assert_eq(lib_of, lib);
	OK(cuKernelGetParamInfo(ks[1], 0, &offset, &size));
	cr_assert_eq(size, 8);
	OK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536, ks[0],
				0));
	OK(cuKernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, ks[0],
				0));
	cr_assert_eq(value, 65536);
	cr_assert_eq(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS, 32, ks[0], 0),
		     CUDA_ERROR_INVALID_VALUE, "what the driver refuses is refused");
	cr_assert_eq(cuKernelGetName(&name, (CUkernel)step), CUDA_ERROR_INVALID_HANDLE);
}

/*
 * In a child of the test: a context's cache and shared memory preferences,
 * a kernel's attribute and cache preference and the context's id, then a
 * checkpoint. Exit 0 after the save; restored, 42 when the proxy's new
 * context and kernel have them all again, 1 and up where something failed.
 */
static int save_with_settings(const char *image)
{
	char text[8192];
	CUlibrary lib;
	CUkernel k;
	CUfunc_cache cache;
	CUsharedconfig shmem;
	unsigned long long id, id_now;
	int value, r;

	sc_test_start();
	snprintf(text, sizeof(text), ".version 8.0\n.target sm_90\n// softcuda library %s\n"
		 ".entry step (8, 8, 8)\n", sc_test_kernels);
	if (cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_L1) ||
	    cuCtxSetSharedMemConfig(CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE) ||
	    cuLibraryLoadData(&lib, text, NULL, NULL, 0, NULL, NULL, 0) ||
	    cuLibraryGetKernel(&k, lib, "step") ||
	    cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536, k, 0) ||
	    cuKernelSetCacheConfig(k, CU_FUNC_CACHE_PREFER_SHARED, 0) || cuCtxGetId(NULL, &id))
		return 1;
	r = selfckpt_save(image);
	if (r == SELFCKPT_SAVED)
		return 0;
	if (r != SELFCKPT_RESTORED)
		return 2;
	if (cuCtxGetCacheConfig(&cache) || cache != CU_FUNC_CACHE_PREFER_L1)
		return 3;
	if (cuCtxGetSharedMemConfig(&shmem) || shmem != CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
		return 4;
	if (cuKernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k, 0) ||
	    value != 65536)
		return 5;
	if (cuCtxGetId(NULL, &id_now) || id_now != id)
		return 6;
	return 42;
}

/* What a program set on its context and kernels is set again in the proxy a restart starts. */
Test(cuda_api, settings_of_contexts_and_kernels_come_back_after_a_restart)
{
	char dir[] = "/tmp/sc-settings-XXXXXX";
	int status = sc_test_exit_after_restore(save_with_settings, dir);

	cr_assert_eq(status, 42, "restored: exit %d (3 to 6: a setting lost; see %s/out)", status,
		     dir);
	sc_test_remove_dir(dir);
}

/* A launch's error: from the call, or, posted, from the next synchronisation. */
static CUresult launch_result(CUresult posted)
{
	CUresult sync = cuCtxSynchronize();

	return posted != CUDA_SUCCESS ? posted : sync;
}

/* The launch variants reach the device with their attributes, its answers come back. */
Test(cuda_api, launches_with_attributes_and_cooperative_launches)
{
	CUfunction step;
	CUdeviceptr a, counter;
	CUevent done;
	uint64_t n = 4;
	uint32_t words[4] = { 1, 2, 3, 4 }, count = 0;
	void *params[] = { &a, &n, &counter };
	CUlaunchAttribute attrs[4] = {
		{ .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, .value.clusterDim = { 2, 1, 1 } },
		{ .id = CU_LAUNCH_ATTRIBUTE_PRIORITY, .value.priority = 1 },
		{ .id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
		  .value.programmaticStreamSerializationAllowed = 1 },
		{ .id = CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT },
	};
	CUlaunchConfig c = { 4, 1, 1, 64, 1, 1, 0, NULL, attrs, 4 };

	sc_test_start();
	sc_test_load(&step);
	OK(cuEventCreate(&done, 0));
	attrs[3].value.launchCompletionEvent.event = done;
	OK(cuMemAlloc(&a, sizeof(words)));
	OK(cuMemAlloc(&counter, 4));
	OK(cuMemcpyHtoD(a, words, sizeof(words)));
	OK(cuMemsetD32(counter, 0, 1));
	OK(cuLaunchKernelEx(&c, step, params, NULL));
	OK(cuEventSynchronize(done));
	c.gridDimX = 3; /* no cluster of 2 divides it */
	cr_assert_eq(launch_result(cuLaunchKernelEx(&c, step, params, NULL)),
		     CUDA_ERROR_INVALID_CLUSTER_SIZE, "the device saw the cluster dimension");
	OK(cuLaunchCooperativeKernel(step, 8, 1, 1, 256, 1, 1, 0, NULL, params));
	cr_assert_eq(launch_result(cuLaunchCooperativeKernel(step, 100000, 1, 1, 1024, 1, 1, 0,
							     NULL, params)),
		     CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
	OK(cuMemcpyDtoH(&count, counter, 4));
	OK(cuMemcpyDtoH(words, a, sizeof(words)));
	cr_assert_eq(count, 2, "two launches ran: %u", count);
	cr_assert_eq(words[0], (1u * 1664525u + 1013904223u) * 1664525u + 1013904223u);
	attrs[0].id = CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE;
	c.gridDimX = 4;
	cr_assert_eq(cuLaunchKernelEx(&c, step, params, NULL), CUDA_ERROR_NOT_SUPPORTED,
		     "graph nodes are refused, not passed on");
	attrs[0].id = CU_LAUNCH_ATTRIBUTE_IGNORE;
	attrs[3].value.launchCompletionEvent.event = (CUevent)&count;
	cr_assert_eq(cuLaunchKernelEx(&c, step, params, NULL), CUDA_ERROR_INVALID_HANDLE);
}

static CUmemAllocationProp device_memory(int dev)
{
	CUmemAllocationProp p = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
				  .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev } };

	return p;
}

static uint32_t word_at(CUdeviceptr p)
{
	uint32_t w = 0;

	return cuMemcpyDtoH(&w, p, sizeof(w)) == CUDA_SUCCESS ? w : 0xdeadbeef;
}

/*
 * In a child of the test: a reserved range with three mappings of two
 * allocations (the last one maps the first again), read and write access,
 * the first allocation released while mapped; words written through each,
 * then a checkpoint. Exit 0 after the save; restored,
 * 42 when every word is back, the two views of one allocation are still one
 * memory, and access, handles and ranges answer as before; 3 and up otherwise.
 */
static int save_with_mappings(const char *image)
{
	CUmemAllocationProp prop = device_memory(0), got;
	CUmemAccessDesc rw = { .location = prop.location,
			       .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	CUmemGenericAllocationHandle h1, h2, again;
	CUdeviceptr va, base;
	unsigned long long flags;
	size_t g, size;
	int r;

	sc_test_start();
	if (cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ||
	    cuMemAddressReserve(&va, 4 * g, 0, 0, 0) || cuMemCreate(&h1, g, &prop, 0) ||
	    cuMemCreate(&h2, 2 * g, &prop, 0) || cuMemMap(va, g, 0, h1, 0) ||
	    cuMemMap(va + g, 2 * g, 0, h2, 0) || cuMemMap(va + 3 * g, g, 0, h1, 0) ||
	    cuMemSetAccess(va, 4 * g, &rw, 1) || cuMemRelease(h1) ||
	    cuMemsetD32(va, 0x11111111, g / 4) || cuMemsetD32(va + g, 0x22222222, 2 * g / 4) ||
	    cuMemsetD32(va + 3 * g, 0x33333333, 1))
		return 1;
	r = selfckpt_save(image);
	if (r == SELFCKPT_SAVED)
		return 0;
	if (r != SELFCKPT_RESTORED)
		return 2;
	if (word_at(va) != 0x33333333 || word_at(va + 4) != 0x11111111 ||
	    word_at(va + g) != 0x22222222 || word_at(va + 3 * g - 4) != 0x22222222 ||
	    word_at(va + 3 * g + 4) != 0x11111111)
		return 3;
	if (cuMemsetD32(va, 0x44444444, 1) || word_at(va + 3 * g) != 0x44444444)
		return 4; /* two views of one allocation, still */
	if (cuMemGetAccess(&flags, &prop.location, va + 2 * g) ||
	    flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
		return 5;
	if (cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)(va + 3 * g)) ||
	    again != h1 || cuMemGetAllocationPropertiesFromHandle(&got, again) ||
	    got.location.id != 0 || cuMemRelease(again))
		return 6;
	if (cuMemGetAddressRange(&base, &size, va + 3 * g + 100) || base != va + 3 * g ||
	    size != g)
		return 7;
	if (cuMemUnmap(va, 4 * g) || cuMemRelease(h2) || cuMemAddressFree(va, 4 * g))
		return 8;
	return 42;
}

/* The program's reservations, allocations, mappings and access come back, at the same addresses. */
Test(cuda_api, virtual_memory_mappings_come_back_after_a_restart)
{
	char dir[] = "/tmp/sc-vmm-XXXXXX";
	int status = sc_test_exit_after_restore(save_with_mappings, dir);

	cr_assert_eq(status, 42,
		     "restored: exit %d (3: contents, 4: aliasing, 5: access, 6: handles, "
		     "7: ranges, 8: unmapping; see %s/out)", status, dir);
	sc_test_remove_dir(dir);
}

/* What the driver refuses is refused, and nothing is half done. */
Test(cuda_api, virtual_memory_calls_refuse_what_the_driver_refuses)
{
	CUmemAllocationProp prop = device_memory(0), other = device_memory(1);
	CUmemAccessDesc rw = { .location = prop.location,
			       .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
	CUmemGenericAllocationHandle h, h2;
	CUdeviceptr va, p;
	size_t g;

	OK(cuInit(0));
	cr_assert_eq(cuMemAddressReserve(&va, 2 << 20, 0, 0, 0), CUDA_ERROR_INVALID_CONTEXT);
	sc_test_start();
	OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	cr_assert_eq(g, 2u << 20);
	OK(cuMemAddressReserve(&va, 2 * g, 2 * g, 0, 0));
	cr_assert_eq(va % (2 * g), 0, "aligned as asked: 0x%llx", (unsigned long long)va);
	cr_assert_eq(cuMemAddressReserve(&p, g + 4096, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
	cr_assert_eq(cuMemCreate(&h, g, &other, 0), CUDA_ERROR_NOT_SUPPORTED);
	OK(cuMemCreate(&h, g, &prop, 0));
	OK(cuMemCreate(&h2, g, &prop, 0));
	cr_assert_eq(cuMemMap(va + 2 * g, g, 0, h, 0), CUDA_ERROR_INVALID_VALUE,
		     "outside the reservation");
	cr_assert_eq(cuMemMap(va, g, g, h, 0), CUDA_ERROR_INVALID_VALUE, "past the allocation");
	OK(cuMemMap(va, g, 0, h, 0));
	cr_assert_eq(cuMemMap(va, g, 0, h2, 0), CUDA_ERROR_INVALID_VALUE, "over a mapping");
	OK(cuMemMap(va + g, g, 0, h2, 0));
	OK(cuMemSetAccess(va, 2 * g, &rw, 1));
	cr_assert_eq(cuMemUnmap(va, g / 2), CUDA_ERROR_INVALID_VALUE, "part of a mapping");
	cr_assert_eq(cuMemAddressFree(va, 2 * g), CUDA_ERROR_INVALID_VALUE, "still mapped");
	OK(cuMemRelease(h));
	cr_assert_eq(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE, "released twice");
	OK(cuMemsetD32(va, 7, g / 4));
	cr_assert_eq(word_at(va + g - 4), 7u, "a released allocation lives while mapped");
	OK(cuMemUnmap(va, 2 * g));
	OK(cuMemRelease(h2));
	OK(cuMemAddressFree(va, 2 * g));
	cr_assert_eq(cuMemAddressFree(va, 2 * g), CUDA_ERROR_INVALID_VALUE, "freed twice");
}

static cuuint64_t pool_figure(CUmemoryPool pool, CUmemPool_attribute attr)
{
	cuuint64_t v = ~0ull;

	OK(cuMemPoolGetAttribute(pool, attr, &v));
	return v;
}

/* Stream-ordered memory: pools, their figures, frees kept until the stream is synchronised. */
Test(cuda_api, stream_ordered_allocation_and_pools)
{
	CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
				 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
				 .maxSize = 8 << 20 };
	CUmemoryPool def, cur, mine;
	CUdeviceptr a, b, c, old;
	CUstream s;
	cuuint64_t threshold = 64 << 20, zero = 0, one = 1;

	sc_test_start();
	OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	OK(cuDeviceGetDefaultMemPool(&def, 0));
	OK(cuDeviceGetMemPool(&cur, 0));
	cr_assert_eq(cur, def);
	OK(cuMemAllocAsync(&a, 1 << 20, s));
	OK(cuMemsetD32Async(a, 0x5eed, (1 << 20) / 4, s));
	cr_assert_eq(word_at(a + 4096), 0x5eedu);
	cr_assert_eq(pool_figure(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 1u << 20);
	OK(cuMemFreeAsync(a, s));
	cr_assert_eq(pool_figure(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
	cr_assert_eq(pool_figure(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 1u << 20,
		     "kept until the stream is synchronised");
	cr_assert_eq(cuMemFreeAsync(a, s), CUDA_ERROR_INVALID_VALUE, "freed twice");
	OK(cuStreamSynchronize(s));
	cr_assert_eq(pool_figure(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
	cr_assert_eq(pool_figure(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 1u << 20);
	OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero));
	cr_assert_eq(pool_figure(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 0);
	cr_assert_eq(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &one),
		     CUDA_ERROR_INVALID_VALUE, "high marks can only be reset");
	OK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
	cr_assert_eq(pool_figure(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), threshold);

	OK(cuMemPoolCreate(&mine, &props));
	OK(cuDeviceSetMemPool(0, mine));
	OK(cuMemAllocAsync(&b, 4 << 20, s));
	cr_assert_eq(pool_figure(mine, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 4u << 20);
	cr_assert_eq(cuMemAllocFromPoolAsync(&c, 8 << 20, mine, s), CUDA_ERROR_OUT_OF_MEMORY,
		     "past the pool's maximum size");
	OK(cuMemAllocFromPoolAsync(&c, 1 << 20, def, s));
	cr_assert_eq(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE, "a default pool stays");
	OK(cuMemPoolDestroy(mine));
	OK(cuDeviceGetMemPool(&cur, 0));
	cr_assert_eq(cur, def, "the default pool is current again");
	OK(cuMemFreeAsync(b, s)); /* an allocation outlives its pool */
	OK(cuMemFreeAsync(c, NULL));
	OK(cuMemAlloc(&old, 4096));
	OK(cuMemFreeAsync(old, s)); /* cuMemAlloc's memory may be freed in stream order too */
	OK(cuMemAllocAsync(&a, 4096, s));
	OK(cuMemFree(a)); /* and a pool's memory by cuMemFree */
	cr_assert_eq(pool_figure(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0, "no longer the pool's");
	cr_assert_eq(cuMemFreeAsync(a, s), CUDA_ERROR_INVALID_VALUE, "freed already");
	cr_assert_eq(cuMemFreeAsync(old, (CUstream)&old), CUDA_ERROR_INVALID_HANDLE);
	OK(cuCtxSynchronize());
	cr_assert_eq(pool_figure(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
	props.location.type = CU_MEM_LOCATION_TYPE_HOST;
	cr_assert_eq(cuMemPoolCreate(&mine, &props), CUDA_ERROR_NOT_SUPPORTED);
	OK(cuStreamDestroy(s));
}

/*
 * In a child of the test: memory from the default pool written, another
 * allocation freed on a stream never synchronised, a release threshold,
 * then a checkpoint. Exit 0 after the save; restored, 42 when the memory,
 * the pool's figures and its threshold are as they were and the pool still
 * allocates; 3 and up otherwise.
 */
static int save_with_pool(const char *image)
{
	CUmemoryPool def;
	CUdeviceptr a, b, c;
	CUstream s;
	cuuint64_t threshold = 32 << 20, v = 0;
	int r;

	sc_test_start();
	if (cuStreamCreate(&s, 0) || cuDeviceGetDefaultMemPool(&def, 0) ||
	    cuMemAllocAsync(&a, 2 << 20, s) || cuMemAllocAsync(&b, 1 << 20, s) ||
	    cuMemsetD32Async(a, 0xabcd, (2 << 20) / 4, s) || cuMemFreeAsync(b, s) ||
	    cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold))
		return 1;
	r = selfckpt_save(image);
	if (r == SELFCKPT_SAVED)
		return 0;
	if (r != SELFCKPT_RESTORED)
		return 2;
	if (word_at(a + (1 << 20)) != 0xabcd)
		return 3;
	if (cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v) || v != threshold)
		return 4;
	if (cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v) || v != 2 << 20 ||
	    cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v) || v != 2 << 20)
		return 5; /* the kept free was done at the checkpoint */
	if (cuMemAllocAsync(&c, 1 << 20, s) || cuMemsetD32Async(c, 7, 1, s) ||
	    cuMemFreeAsync(a, s) || cuMemFreeAsync(c, s) || cuStreamSynchronize(s))
		return 6;
	return 42;
}

Test(cuda_api, stream_ordered_memory_comes_back_after_a_restart)
{
	char dir[] = "/tmp/sc-pool-XXXXXX";
	int status = sc_test_exit_after_restore(save_with_pool, dir);

	cr_assert_eq(status, 42,
		     "restored: exit %d (3: contents, 4: threshold, 5: figures, 6: the pool "
		     "after; see %s/out)", status, dir);
	sc_test_remove_dir(dir);
}

static uint32_t seen_by_host_fn;
static int host_calls[4], host_calls_n;
static CUstream callback_stream;
static CUresult callback_status = CUDA_ERROR_UNKNOWN;

static void CUDA_CB read_pinned(void *data)
{
	seen_by_host_fn = *(volatile uint32_t *)data;
	host_calls[host_calls_n++] = 1;
}

static void CUDA_CB stream_callback(CUstream s, CUresult status, void *data)
{
	callback_stream = s;
	callback_status = status;
	host_calls[host_calls_n++] = (int)(intptr_t)data;
}

/* A host function runs in the program, after the stream's earlier work, in the order given. */
Test(cuda_api, host_functions_run_in_the_program_in_stream_order)
{
	CUstream s;
	CUdeviceptr p;
	uint32_t *pinned;

	sc_test_start();
	OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	OK(cuMemAlloc(&p, 4096));
	OK(cuMemAllocHost((void **)&pinned, 4096));
	*pinned = 0;
	OK(cuMemsetD32Async(p, 0x77, 1024, s));
	OK(cuMemcpyDtoHAsync(pinned, p, 4, s));
	OK(cuLaunchHostFunc(s, read_pinned, pinned));
	OK(cuStreamAddCallback(s, stream_callback, (void *)(intptr_t)2, 0));
	cr_assert_eq(seen_by_host_fn, 0x77u, "the copy before it was done: %#x", seen_by_host_fn);
	cr_assert_eq(host_calls_n, 2);
	cr_assert(host_calls[0] == 1 && host_calls[1] == 2, "in the order given");
	cr_assert_eq(callback_stream, s);
	cr_assert_eq(callback_status, CUDA_SUCCESS);
	cr_assert_eq(cuStreamAddCallback(s, stream_callback, NULL, 1), CUDA_ERROR_INVALID_VALUE);
	cr_assert_eq(cuLaunchHostFunc(s, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	cr_assert_eq(cuLaunchHostFunc((CUstream)&p, read_pinned, pinned), CUDA_ERROR_INVALID_HANDLE);
	OK(cuMemFreeHost(pinned));
	OK(cuStreamDestroy(s));
}

Test(cuda_api, stream_ids_devices_pointer_attributes_and_pools_by_location)
{
	CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					 CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
					 CU_POINTER_ATTRIBUTE_HOST_POINTER,
					 CU_POINTER_ATTRIBUTE_IS_MANAGED };
	CUmemLocation dev0 = { CU_MEM_LOCATION_TYPE_DEVICE, 0 }, host = { CU_MEM_LOCATION_TYPE_HOST, 0 };
	unsigned long long id1 = 0, id2 = 0, id3 = 0;
	CUmemoryPool def, pool;
	unsigned type = 9, managed = 9;
	CUdeviceptr p, dp = 1;
	void *hp = (void *)1;
	void *data[] = { &type, &dp, &hp, &managed };
	CUstream s1, s2;
	CUdevice dev = -1;
	int local = 0;

	sc_test_start();
	OK(cuStreamCreate(&s1, 0));
	OK(cuStreamCreate(&s2, 0));
	OK(cuStreamGetId(s1, &id1));
	OK(cuStreamGetId(s2, &id2));
	OK(cuStreamGetId(NULL, &id3));
	cr_assert(id1 != id2 && id1 != id3 && id2 != id3, "%llu %llu %llu", id1, id2, id3);
	OK(cuStreamGetId(s1, &id3));
	cr_assert_eq(id3, id1, "an id is the stream's for good");
	OK(cuStreamGetDevice(s2, &dev));
	cr_assert_eq(dev, 0);
	cr_assert_eq(cuStreamGetId((CUstream)&local, &id1), CUDA_ERROR_INVALID_HANDLE);

	OK(cuMemAlloc(&p, 4096));
	OK(cuPointerGetAttributes(4, attrs, data, p + 16));
	cr_assert(type == CU_MEMORYTYPE_DEVICE && dp == p + 16 && !hp && managed == 0);
	OK(cuPointerGetAttributes(4, attrs, data, (CUdeviceptr)(uintptr_t)&local));
	cr_assert(type == 0 && dp == 0 && !hp && managed == 0,
		  "memory that is none of CUDA's: zeros, and no error");

	OK(cuDeviceGetDefaultMemPool(&def, 0));
	OK(cuMemGetDefaultMemPool(&pool, &dev0, CU_MEM_ALLOCATION_TYPE_PINNED));
	cr_assert_eq(pool, def);
	OK(cuMemSetMemPool(&dev0, CU_MEM_ALLOCATION_TYPE_PINNED, def));
	OK(cuMemGetMemPool(&pool, &dev0, CU_MEM_ALLOCATION_TYPE_PINNED));
	cr_assert_eq(pool, def);
	cr_assert_eq(cuMemGetDefaultMemPool(&pool, &host, CU_MEM_ALLOCATION_TYPE_PINNED),
		     CUDA_ERROR_NOT_SUPPORTED, "a pool of host memory");
	cr_assert_eq(cuMemGetMemPool(&pool, NULL, CU_MEM_ALLOCATION_TYPE_PINNED),
		     CUDA_ERROR_INVALID_VALUE);
}
