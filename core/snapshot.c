/* SPDX-License-Identifier: MIT */
/*
 * snapshot.c - the frozen copy of the process that an image is written from.
 *
 * sc_clone_frozen() makes a child whose memory is the process at one instant;
 * everything here reads that child from the outside, through /proc, while
 * the real process runs on.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/checkpoint_internal.h"
#include "format/sc_log.h"

/*
 * The snapshot's memory is read through /proc/<pid>/mem, not process_vm_readv():
 * the latter pins the pages it reads, and pinning a page that copy-on-write
 * still shares with this process makes the kernel copy it first - every page
 * of the snapshot would be duplicated, at a third of the speed.
 * One checkpoint at a time, so one cached descriptor.
 */
static pid_t mem_pid = -1;
static int mem_fd = -1;

static int mem_open(pid_t child)
{
	char path[64];

	if (mem_pid == child && mem_fd >= 0)
		return mem_fd;
	if (mem_fd >= 0)
		close(mem_fd);
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)child);
	mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	mem_pid = mem_fd >= 0 ? child : -1;
	if (mem_fd < 0)
		return sc_err(errno, "cannot open '%s' to read the snapshot: %s", path,
			      strerror(errno));
	return mem_fd;
}

int sc_snapshot_fd(pid_t child)
{
	return mem_open(child);
}

void sc_snapshot_kill(pid_t child)
{
	if (child <= 0)
		return;
	if (mem_pid == child) {
		close(mem_fd);
		mem_fd = -1;
		mem_pid = -1;
	}
	kill(child, SIGKILL);
	while (waitpid(child, NULL, __WALL) < 0 && errno == EINTR)
		;
}

/* Read a small /proc file of the snapshot into a NUL-terminated buffer. */
char *sc_snapshot_file(pid_t child, const char *name, size_t *len)
{
	char path[64];
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)child, name);
	f = fopen(path, "re");
	if (!f || !buf) {
		sc_err(f ? ENOMEM : errno, "cannot read '%s': %s", path, strerror(f ? ENOMEM : errno));
		free(buf);
		if (f)
			fclose(f);
		return NULL;
	}
	for (size_t k; (k = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
		n += k;
		if (n + 1 == cap) {
			char *b = realloc(buf, cap *= 2);

			if (!b) {
				free(buf);
				fclose(f);
				sc_err(ENOMEM, "out of memory reading '%s'", path);
				return NULL;
			}
			buf = b;
		}
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}
