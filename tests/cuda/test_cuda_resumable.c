/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_resumable.c - resumable launches (selfckpt_kernel.h) on the
 * software device: every item done once; a checkpoint during one stops the
 * kernel at its next item and it is launched again from there; a process
 * restored from that image finishes the work. A kernel launched otherwise is
 * waited for, and the log names it.
 */
#include <criterion/criterion.h>
#include <cuda.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/sc_settings.h"
#include "selfckpt.h"
#include "selfckpt_kernel.h"
#include "tests/cuda/cuda_api_harness.h"

TestSuite(cuda_resumable, .init = sc_test_use_software_device, .timeout = 90);

#define ITEMS 2000 /* a millisecond each on the software device */

static struct {
	CUcontext ctx;
	CUfunction fill;
	CUdeviceptr out, work;
	CUstream stream;
	CUresult result;
	volatile int started;
} t;

static void load_fill(void)
{
	char text[sizeof(sc_test_kernels) + 256];
	CUmodule m;

	t.ctx = sc_test_start();
	snprintf(text, sizeof(text), ".version 8.0\n.target sm_90\n// softcuda library %s\n"
		 ".entry resumable_fill (8, 8)\n", sc_test_kernels);
	OK(cuModuleLoadData(&m, text));
	OK(cuModuleGetFunction(&t.fill, m, "resumable_fill"));
	OK(cuMemAlloc(&t.out, ITEMS * 8));
	OK(cuMemsetD8(t.out, 0, ITEMS * 8));
	OK(cuMemAlloc(&t.work, SELFCKPT_WORK_BYTES));
	OK(cuStreamCreate(&t.stream, CU_STREAM_NON_BLOCKING));
}

static CUresult launch(unsigned long long items)
{
	void *params[] = { &t.out, &t.work };

	return selfckpt_launch_resumable(t.fill, 1, 1, 1, 1, 1, 1, 0, t.stream, params, t.work,
					 items);
}

/* Every item done, once; the launches it took into *@launches. */
static bool all_done(unsigned long long items, unsigned long long *launches)
{
	static uint64_t out[ITEMS];
	struct selfckpt_work w;

	if (cuMemcpyDtoH(out, t.out, items * 8) || cuMemcpyDtoH(&w, t.work, sizeof(w)))
		return false;
	*launches = w.launches;
	for (unsigned long long i = 0; i < items; i++)
		if (out[i] != i * i + 1)
			return false;
	return w.next >= items;
}

Test(cuda_resumable, a_resumable_launch_does_every_item)
{
	unsigned long long launches = 0;

	load_fill();
	OK(launch(50));
	cr_assert(all_done(50, &launches), "every item, once");
	cr_assert_eq(launches, 1, "no checkpoint: one launch, not %llu", launches);
	cr_assert_eq(launch(0), CUDA_SUCCESS, "no items: nothing to do");
	cr_assert_eq(selfckpt_launch_resumable(t.fill, 1, 1, 1, 1, 1, 1, 0, t.stream, NULL, 0, 5),
		     CUDA_ERROR_INVALID_VALUE, "no work");
}

static void *launcher(void *arg)
{
	(void)arg;
	cuCtxSetCurrent(t.ctx);
	t.started = 1;
	t.result = launch(ITEMS);
	return NULL;
}

/* The launcher at work for a while, then the checkpoint; exit as the program says. */
static int save_during_a_launch(const char *image, bool restored_too)
{
	unsigned long long launches = 0;
	pthread_t th;
	int r;

	load_fill();
	if (pthread_create(&th, NULL, launcher, NULL))
		return 2;
	while (!t.started)
		usleep(1000);
	usleep(200000); /* a tenth of the work */
	r = selfckpt_save(image);
	if (r != SELFCKPT_SAVED && r != SELFCKPT_RESTORED)
		return 3;
	if (pthread_join(th, NULL) || t.result != CUDA_SUCCESS)
		return 4;
	if (!all_done(ITEMS, &launches))
		return 5;
	if (launches != 2)
		return 6; /* 1: the checkpoint waited for the whole kernel; more: launched again
			   * while the checkpoint was still under way */
	return r == SELFCKPT_RESTORED && restored_too ? 42 : 0;
}

static int save_during_a_launch_here(const char *image)
{
	return save_during_a_launch(image, false);
}

Test(cuda_resumable, a_checkpoint_stops_the_kernel_which_goes_on_after)
{
	char dir[] = "/tmp/sc-resumable-XXXXXX", image[64];
	int status;

	status = sc_test_exit_in_dir(save_during_a_launch_here, dir, image, sizeof(image));

	cr_assert_eq(status, 0, "exit %d (4: the launch failed, 5: an item is wrong, 6: not two "
		     "launches: the kernel was not stopped, or launched again too soon)", status);
	sc_test_remove_dir(dir);
}

static int save_during_a_launch_and_restore(const char *image)
{
	return save_during_a_launch(image, true);
}

Test(cuda_resumable, the_restored_process_finishes_the_interrupted_launch)
{
	char dir[] = "/tmp/sc-resumable-XXXXXX";
	int status = sc_test_exit_after_restore(save_during_a_launch_and_restore, dir);

	cr_assert_eq(status, 42, "restored: exit %d (4: the launch failed, 5: an item is wrong, "
		     "6: not two launches; see %s/out)", status, dir);
	sc_test_remove_dir(dir);
}

/* The kernel launched plainly, for a second and a half, then a checkpoint; its log in @image.log. */
static int save_during_a_plain_launch(const char *image)
{
	struct selfckpt_work w = { 0, 1500, NULL, 0 };
	void *params[] = { &t.out, &t.work };
	char log[4200];
	int fd;

	snprintf(log, sizeof(log), "%s.log", image);
	if ((fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0 || dup2(fd, 2) < 0)
		return 2;
	setenv("SELFCKPT_LOG_LEVEL", "info", 1);
	sc_settings_reload();
	load_fill();
	if (cuMemcpyHtoD(t.work, &w, sizeof(w)) ||
	    cuLaunchKernel(t.fill, 1, 1, 1, 1, 1, 1, 0, t.stream, params, NULL))
		return 3;
	return selfckpt_save(image) == SELFCKPT_SAVED ? 0 : 4;
}

Test(cuda_resumable, a_checkpoint_that_waits_for_a_kernel_names_it)
{
	char dir[] = "/tmp/sc-resumable-XXXXXX", image[64], log[80], text[8192] = "";
	FILE *f;
	int status;

	status = sc_test_exit_in_dir(save_during_a_plain_launch, dir, image, sizeof(image));
	snprintf(log, sizeof(log), "%s.log", image);

	cr_assert_eq(status, 0, "exit %d", status);
	cr_assert(f = fopen(log, "r"));
	text[fread(text, 1, sizeof(text) - 1, f)] = 0;
	fclose(f);
	cr_assert(strstr(text, "waiting for the GPU to finish its work, the last kernel "
		  "launched being 'resumable_fill'"), "the log: %s", text);
	sc_test_remove_dir(dir);
}
