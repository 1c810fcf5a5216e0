/* SPDX-License-Identifier: MIT */
/*
 * nvidia_devices.c - how much of the process holds the NVIDIA driver's device
 * files (nvidiactl, nvidia0, nvidia-uvm ...): open descriptors and mappings.
 * Either means a CUDA driver works in this process, and GPU state that no
 * image of the process memory can hold (cuda/lib/driver_seen.c; gpu_guard.c
 * where no CUDA support is in).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/sc_core.h"
#include "core/sc_sys.h"

/*
 * Nothing here allocates: it runs inside a checkpoint, which must leave the
 * program's heap (and its break) as it found it.
 */

#define NVIDIA_DEV "/dev/nvidia"
#define DIRENT_BUF 4096

static bool is_nvidia_device(const char *path)
{
	return strncmp(path, NVIDIA_DEV, strlen(NVIDIA_DEV)) == 0;
}

static unsigned count_device_fds(void)
{
	char buf[DIRENT_BUF] __attribute__((aligned(8)));
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	unsigned n = 0;
	long got;

	if (dir < 0)
		return 0;
	while ((got = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < got;) {
			struct sc_dirent64 *e = (struct sc_dirent64 *)(buf + off);
			char target[PATH_MAX];
			ssize_t len;

			off += e->d_reclen;
			if (e->d_name[0] == '.')
				continue;
			len = readlinkat(dir, e->d_name, target, sizeof(target) - 1);
			if (len <= 0)
				continue;
			target[len] = '\0';
			n += is_nvidia_device(target);
		}
	}
	close(dir);
	return n;
}

/*
 * Mappings of device and control memory: a path in /proc/self/maps starts
 * after a space, so " /dev/nvidia" is one, wherever the reads cut the lines.
 */
unsigned sc_nvidia_device_maps(void)
{
	static const char key[] = " " NVIDIA_DEV;
	const size_t keep = sizeof(key) - 2; /* a key cut by a read: its start, kept */
	char buf[4096 + sizeof(key)];
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	size_t have = 0;
	unsigned n = 0;
	ssize_t got;

	if (fd < 0)
		return 0;
	while ((got = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
		have += (size_t)got;
		buf[have] = '\0';
		for (const char *p = buf; (p = strstr(p, key)); p += sizeof(key) - 1)
			n++;
		if (have > keep) {
			memmove(buf, buf + have - keep, keep);
			have = keep;
		}
	}
	close(fd);
	return n;
}

bool sc_nvidia_devices_used(unsigned *fds, unsigned *maps)
{
	*fds = count_device_fds();
	*maps = sc_nvidia_device_maps();
	return *fds || *maps;
}
