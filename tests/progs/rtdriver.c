/* SPDX-License-Identifier: MIT */
/*
 * rtdriver - a program that loads the CUDA driver itself, as the CUDA Runtime
 * and CUDA libraries do (dlopen("libcuda.so.1"), entry points by dlsym()),
 * and knows nothing of selfckpt. tests/cli/test_driver.c runs it under
 * selfckpt-run with the software device as libcuda.so.1.
 *
 *   rtdriver init|load|linked|mixed DIR
 *
 * "linked" is for the build linked with libcuda.so.1 (rtdriver-linked): it
 * calls cuInit() and the rest as a -lcuda program does, through whichever
 * library the dynamic linker finds them in first (selfckpt's preloaded
 * entry points, or the driver's), and initialises the driver like "init".
 * "mixed" (also rtdriver-linked) first initialises the driver it loads itself,
 * as the CUDA Runtime would, then goes on like "linked": a program that mixes
 * both APIs.
 *
 * The test steers it through files in DIR: it creates DIR/a and waits for
 * DIR/b (a checkpoint before the driver is loaded); loads the driver, and
 * with "init" initialises it and makes a context current; creates DIR/c and
 * waits for DIR/d (a checkpoint with the driver in the process); then asks the
 * driver for its devices, says "done" and ends.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int (*cu_int_fn)(unsigned);
typedef int (*cu_ptr_fn)(void *);
typedef int (*cu_retain_fn)(void **, int);

static const char *dir;

static void mark(const char *name)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	if (fd < 0) {
		perror(path);
		exit(3);
	}
	close(fd);
}

/* Wait (30 s at most) for DIR/@name. */
static void await(const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (int i = 0; i < 3000 && access(path, F_OK) < 0; i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	if (access(path, F_OK) < 0) {
		fprintf(stderr, "rtdriver: no %s after 30 s\n", path);
		exit(3);
	}
}

static void *need(void *h, const char *sym)
{
	void *f = dlsym(h, sym);

	if (!f) {
		fprintf(stderr, "rtdriver: dlsym(%s): %s\n", sym, dlerror());
		exit(3);
	}
	return f;
}

static void check(const char *what, int r)
{
	if (r != 0) {
		fprintf(stderr, "rtdriver: %s returned %d\n", what, r);
		exit(3);
	}
}

int main(int argc, char **argv)
{
	void *h, *ctx = NULL;
	int count = -1;
	bool init;

	if (argc != 3 || (strcmp(argv[1], "init") && strcmp(argv[1], "load") &&
			  strcmp(argv[1], "linked") && strcmp(argv[1], "mixed"))) {
		fprintf(stderr, "usage: rtdriver init|load|linked|mixed DIR\n");
		return 64;
	}
	init = strcmp(argv[1], "load") != 0;
	dir = argv[2];
	printf("before the driver\n");
	fflush(stdout);
	mark("a");
	await("b");
	if (!strcmp(argv[1], "mixed")) { /* the driver itself, as cudart loads it */
		void *own = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

		if (!own) {
			fprintf(stderr, "rtdriver: dlopen(libcuda.so.1): %s\n", dlerror());
			return 3;
		}
		check("the driver's own cuInit", ((cu_int_fn)need(own, "cuInit"))(0));
	}
	if (!strcmp(argv[1], "linked") || !strcmp(argv[1], "mixed"))
		h = RTLD_DEFAULT; /* a null pointer: the global scope */
	else if (!(h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))) {
		fprintf(stderr, "rtdriver: dlopen(libcuda.so.1): %s\n", dlerror());
		return 3;
	}
	if (init) {
		check("cuInit", ((cu_int_fn)need(h, "cuInit"))(0));
		check("cuDevicePrimaryCtxRetain",
		      ((cu_retain_fn)need(h, "cuDevicePrimaryCtxRetain"))(&ctx, 0));
		check("cuCtxSetCurrent", ((cu_ptr_fn)need(h, "cuCtxSetCurrent"))(ctx));
	}
	printf("driver loaded%s\n", init ? " and initialised" : "");
	fflush(stdout);
	mark("c");
	await("d");
	if (!init)
		check("cuInit", ((cu_int_fn)need(h, "cuInit"))(0));
	check("cuDeviceGetCount", ((cu_ptr_fn)need(h, "cuDeviceGetCount"))(&count));
	printf("devices %d\ndone\n", count);
	return 0;
}
