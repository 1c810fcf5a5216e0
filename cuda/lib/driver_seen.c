/* SPDX-License-Identifier: MIT */
/*
 * driver_seen.c - whether the CUDA driver itself runs in this process.
 *
 * A Driver API program under selfckpt calls the library's entry points and
 * the driver lives in the GPU proxy. Other CUDA programs - the Runtime API
 * (cudart dlopen()s libcuda.so.1), CUDA libraries - load the driver into the
 * process. Its GPU state is then held by the device files it opened and the
 * device memory it mapped, which no image of the process can hold; an image
 * taken so would not restore. A -lcuda program run under selfckpt-run has the
 * driver loaded too, but never initialised (every call reaches the library),
 * so it holds no GPU state and its image is good: what counts is a driver in
 * use, seen by its device descriptors and mappings, or by the driver itself
 * saying that cuInit() was called.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "core/sc_core.h"
#include "cuda/lib/driver_mode.h"

/* The GPUs the program's driver shows, in ordinal order: a restart may put others there. */
static void ask_gpus(void *h, struct sc_cu_gpus *g)
{
	CUresult (*count)(int *n);
	CUresult (*get)(CUdevice *dev, int ordinal);
	CUresult (*uuid)(CUuuid *u, CUdevice dev);
	int n = 0;

	*(void **)&count = dlsym(h, "cuDeviceGetCount");
	*(void **)&get = dlsym(h, "cuDeviceGet");
	*(void **)&uuid = dlsym(h, "cuDeviceGetUuid_v2");
	g->n = 0;
	if (!count || !get || !uuid || count(&n) != CUDA_SUCCESS)
		return;
	for (int i = 0; i < n && i < SC_CU_GPUS_MAX; i++) {
		CUdevice dev;
		CUuuid u;

		if (get(&dev, i) != CUDA_SUCCESS || uuid(&u, dev) != CUDA_SUCCESS) {
			g->n = 0; /* a partial list would pair the wrong GPUs */
			return;
		}
		memcpy(g->uuid[g->n++], u.bytes, SC_CU_UUID_LEN);
	}
}

/*
 * The driver as the program loaded it (by its soname, as cudart and every
 * CUDA library do), and whether it was initialised: before cuInit() every
 * call but a few answers CUDA_ERROR_NOT_INITIALIZED and changes nothing.
 */
static void ask_driver(struct sc_cu_driver_seen *s)
{
	void *h = dlopen(SC_CU_DRIVER_SONAME, RTLD_NOW | RTLD_NOLOAD);
	CUresult (*get_current)(CUcontext *ctx);
	CUresult (*get_version)(int *version);
	CUcontext ctx = NULL;
	Dl_info info;

	if (!h)
		return;
	s->loaded = true;
	*(void **)&get_current = dlsym(h, "cuCtxGetCurrent");
	if (get_current && dladdr((void *)get_current, &info) && info.dli_fname)
		snprintf(s->path, sizeof(s->path), "%s", info.dli_fname);
	else
		snprintf(s->path, sizeof(s->path), "%s", SC_CU_DRIVER_SONAME);
	s->initialised = get_current && get_current(&ctx) != CUDA_ERROR_NOT_INITIALIZED;
	*(void **)&get_version = dlsym(h, "cuDriverGetVersion");
	if (!get_version || get_version(&s->driver_version) != CUDA_SUCCESS)
		s->driver_version = 0;
	if (s->initialised)
		ask_gpus(h, &s->gpus);
	dlclose(h);
}

bool sc_cu_driver_seen(struct sc_cu_driver_seen *s)
{
	memset(s, 0, sizeof(*s));
	ask_driver(s);
	return sc_nvidia_devices_used(&s->device_fds, &s->device_maps) || s->initialised;
}
