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
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "cuda/driver_mode.h"

#define NVIDIA_DEV "/dev/nvidia"

static bool is_nvidia_device(const char *path)
{
	return strncmp(path, NVIDIA_DEV, strlen(NVIDIA_DEV)) == 0;
}

/* Descriptors of /dev/nvidia* (nvidiactl, nvidia0, nvidia-uvm ...). */
static unsigned count_device_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;
	struct dirent *e;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char link[300], target[PATH_MAX];
		ssize_t len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		n += is_nvidia_device(target);
	}
	closedir(d);
	return n;
}

/* Mappings of /dev/nvidia* (the driver's view of device and control memory). */
static unsigned count_device_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 128];
	unsigned n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');

		if (path && strchr(line, ' ') < path)
			n += is_nvidia_device(path);
	}
	fclose(f);
	return n;
}

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
	s->device_fds = count_device_fds();
	s->device_maps = count_device_maps();
	return s->initialised || s->device_fds || s->device_maps;
}
