/* SPDX-License-Identifier: MIT */
/*
 * test_driver_refused.c - selfckpt_save() in a process that loaded the CUDA
 * driver itself and initialised it, where the driver's process checkpoint
 * cannot be made: -SELFCKPT_EDRIVER, a message that names the driver's file
 * and the cause, and the file of an earlier image left as it was. The driver
 * is the software device under the real one's soname, built without
 * cuCheckpointProcess* entry points, as a driver older than 570.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "core/sc_settings.h"
#include "cuda/lib/driver_mode.h"
#include "selfckpt.h"

static void *load_driver(char *path)
{
	const char *build = getenv("SELFCKPT_BUILD");
	void *h;

	snprintf(path, PATH_MAX, "%s/tests/driver-old/libcuda.so.1", build ? build : "build");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "%s", dlerror());
	return h;
}

Test(driver_mode, unused_driver_is_not_seen)
{
	struct sc_cu_driver_seen s;
	char path[PATH_MAX];

	load_driver(path);
	cr_assert_not(sc_cu_driver_seen(&s), "a driver never initialised counts as in use");
	cr_assert(s.loaded);
	cr_assert_not(s.initialised);
	cr_assert_eq(s.device_fds, 0);
}

/* selfckpt_save() into a file that holds an earlier image: refused, @why said. */
static void save_refused(const char *path, const char *why)
{
	char image[64], buf[64] = { 0 };
	FILE *f;
	int err;

	strcpy(image, "/tmp/sc-driver-XXXXXX");
	cr_assert_geq(mkstemp(image), 0);
	f = fopen(image, "w");
	fputs("the previous image", f);
	fclose(f);
	err = selfckpt_save(image);
	cr_assert_eq(err, -SELFCKPT_EDRIVER, "selfckpt_save() returned %d (%s)", err,
		     selfckpt_strerror(err));
	cr_assert(strstr(selfckpt_last_error(), path) &&
		  strstr(selfckpt_last_error(), why) &&
		  strstr(selfckpt_last_error(), "so none is written"),
		  "the message does not name the driver and the cause: %s",
		  selfckpt_last_error());
	f = fopen(image, "r");
	cr_assert(fgets(buf, sizeof(buf), f));
	fclose(f);
	unlink(image);
	cr_assert_str_eq(buf, "the previous image");
}

static void init_driver(char *path)
{
	static char tool[PATH_MAX];
	CUresult (*init)(unsigned);
	struct sc_cu_driver_seen s;
	void *h = load_driver(path);

	*(void **)&init = dlsym(h, "cuInit");
	cr_assert_not_null(init);
	cr_assert_eq(init(0), CUDA_SUCCESS);
	cr_assert(sc_cu_driver_seen(&s));
	cr_assert(s.initialised);
	cr_assert_str_eq(s.path, path);
	/* selfckpt-driver-ckpt, which loads the same driver */
	cr_assert_eq(setenv("SELFCKPT_LIBCUDA", path, 1), 0);
	snprintf(tool, sizeof(tool), "%s/bin/selfckpt-driver-ckpt",
		 getenv("SELFCKPT_BUILD") ? getenv("SELFCKPT_BUILD") : "build");
	cr_assert_eq(setenv("SELFCKPT_DRIVER_CKPT", tool, 1), 0);
	sc_settings_reload(); /* the library in this process read them at its start */
}

Test(driver_mode, driver_without_process_checkpoint_refuses_the_save)
{
	char path[PATH_MAX];

	init_driver(path);
	save_refused(path, "the driver's process checkpoint failed");
}

Test(driver_mode, proxy_mode_refuses_the_save)
{
	char path[PATH_MAX];

	init_driver(path);
	cr_assert_eq(setenv("SELFCKPT_CUDA", "proxy", 1), 0);
	sc_settings_reload();
	save_refused(path, "SELFCKPT_CUDA=proxy forbids the driver's process checkpoint");
}
