/* SPDX-License-Identifier: MIT */
/*
 * nvidia_devices.c - how much of the process holds the NVIDIA driver's device
 * files (nvidiactl, nvidia0, nvidia-uvm ...): open descriptors and mappings.
 * Either means a CUDA driver works in this process, and GPU state that no
 * image of the process memory can hold (cuda/lib/driver_seen.c, and
 * cuda_absent.c where the library was built without CUDA).
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/sc_core.h"

#define NVIDIA_DEV "/dev/nvidia"

static bool is_nvidia_device(const char *path)
{
	return strncmp(path, NVIDIA_DEV, strlen(NVIDIA_DEV)) == 0;
}

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

/* Mappings of device and control memory. */
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

bool sc_nvidia_devices_used(unsigned *fds, unsigned *maps)
{
	*fds = count_device_fds();
	*maps = count_device_maps();
	return *fds || *maps;
}
