// SPDX-License-Identifier: MIT
/*
 * selfcall - can a process ask the driver for its own process checkpoint?
 * A Runtime API program with device memory calls cuCheckpointProcessLock,
 * Checkpoint, Restore and Unlock on its own pid from a thread of its own (as
 * a library thread would), each with its result and time; alarm() ends it if
 * a call never returns. Then it checks its device memory.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void *h;

static int call(const char *name, int (*f)(int, void *), void *args)
{
	double t0 = now();
	int r;

	printf("selfcall: %s(own pid) ...\n", name);
	fflush(stdout);
	r = f(getpid(), args);
	printf("selfcall: %s(own pid) = %d in %.3f ms\n", name, r, (now() - t0) * 1e3);
	fflush(stdout);
	return r;
}

static void *worker(void *arg)
{
	CUcheckpointLockArgs la = {};
	CUcheckpointCheckpointArgs ca = {};
	CUcheckpointRestoreArgs ra = {};
	CUcheckpointUnlockArgs ua = {};

	(void)arg;
	la.timeoutMs = 5000;
	if (call("cuCheckpointProcessLock", (int (*)(int, void *))dlsym(h, "cuCheckpointProcessLock"),
		 &la))
		return NULL;
	if (!call("cuCheckpointProcessCheckpoint",
		  (int (*)(int, void *))dlsym(h, "cuCheckpointProcessCheckpoint"), &ca))
		call("cuCheckpointProcessRestore",
		     (int (*)(int, void *))dlsym(h, "cuCheckpointProcessRestore"), &ra);
	call("cuCheckpointProcessUnlock", (int (*)(int, void *))dlsym(h, "cuCheckpointProcessUnlock"),
	     &ua);
	return NULL;
}

int main(void)
{
	int *d, x = 0, v = 42;
	pthread_t t;

	alarm(30);
	if (cudaMalloc(&d, 4) != cudaSuccess || cudaMemcpy(d, &v, 4, cudaMemcpyHostToDevice))
		return 1;
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return 2;
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	printf("selfcall: device memory after: %s\n",
	       cudaMemcpy(&x, d, 4, cudaMemcpyDeviceToHost) == cudaSuccess && x == 42 ?
	       "intact" : "LOST");
	return 0;
}
