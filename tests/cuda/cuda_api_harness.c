/* SPDX-License-Identifier: MIT */
/*
 * cuda_api_harness.c - see cuda_api_harness.h.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/sc_settings.h"
#include "tests/cuda/cuda_api_harness.h"

char sc_test_kernels[4096];

void sc_test_use_software_device(void)
{
	const char *build = getenv("SELFCKPT_BUILD") ? getenv("SELFCKPT_BUILD") : "build";
	char path[4096], real[4096];

	snprintf(path, sizeof(path), "%s/tests/libsoftcuda.so.1", build);
	cr_assert(realpath(path, real), "no software device at %s: run make test-progs", path);
	setenv("SELFCKPT_LIBCUDA", real, 1);
	snprintf(path, sizeof(path), "%s/bin/selfckpt-gpu-proxy", build);
	cr_assert(realpath(path, real), "no GPU proxy at %s", path);
	setenv("SELFCKPT_PROXY", real, 1);
#ifdef __SANITIZE_ADDRESS__
	/* AddressSanitizer's shadow covers the default arena (4 TiB), where managed memory's host copy goes */
	setenv("SELFCKPT_CUDA_ARENA", "0x200000000000", 1);
#endif
	sc_settings_reload(); /* the library in this process read them at its start */
	snprintf(path, sizeof(path), "%s/tests/progs/libcuda-kernels.so", build);
	cr_assert(realpath(path, sc_test_kernels), "no kernel library at %s", path);
}

CUcontext sc_test_start(void)
{
	CUdevice dev;
	CUcontext ctx;

	OK(cuInit(0));
	OK(cuDeviceGet(&dev, 0));
	OK(cuDevicePrimaryCtxRetain(&ctx, dev));
	OK(cuCtxSetCurrent(ctx));
	return ctx;
}

CUmodule sc_test_load(CUfunction *step)
{
	char text[sizeof(sc_test_kernels) + 256];
	CUmodule m;

	snprintf(text, sizeof(text), ".version 8.0\n.target sm_90\n// softcuda library %s\n"
		 ".entry step (8, 8, 8)\n.entry chase (8)\n// softcuda global counter 4\n",
		 sc_test_kernels);
	OK(cuModuleLoadData(&m, text));
	OK(cuModuleGetFunction(step, m, "step"));
	return m;
}

int sc_test_exit_of_child(int (*fn)(const char *), const char *image)
{
	int status;
	pid_t child = fork();

	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(fn(image));
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status), "status %#x", status);
	return WEXITSTATUS(status);
}

int sc_test_exit_in_dir(int (*fn)(const char *), char *dir, char *image, size_t n)
{
	cr_assert(mkdtemp(dir));
	snprintf(image, n, "%s/img.sckpt", dir);
	return sc_test_exit_of_child(fn, image);
}

int sc_test_exit_after_restore(int (*fn)(const char *), char *dir)
{
	const char *build = getenv("SELFCKPT_BUILD") ? getenv("SELFCKPT_BUILD") : "build";
	char image[4096], cmd[8192];
	int status = sc_test_exit_in_dir(fn, dir, image, sizeof(image));

	cr_assert_eq(status, 0, "exit %d before the restore", status);
	snprintf(cmd, sizeof(cmd), "%s/bin/selfckpt-restore %s > %s/out 2>&1", build, image,
		 dir);
	status = system(cmd);
	cr_assert(WIFEXITED(status), "the restore ended by a signal: %#x (see %s/out)", status,
		  dir);
	return WEXITSTATUS(status);
}

void sc_test_remove_dir(const char *dir)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}
