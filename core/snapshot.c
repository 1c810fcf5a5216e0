/* SPDX-License-Identifier: MIT */
/*
 * snapshot.c - the frozen copy of the process that an image is written from.
 *
 * sc_clone_frozen() makes a child whose memory is the process at one instant;
 * everything here reads that child from the outside, through /proc and
 * process_vm_readv(), while the real process runs on.
 */
#include <errno.h>
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

int sc_snapshot_read(pid_t child, void *dst, uint64_t addr, size_t len)
{
	struct iovec local = { dst, len }, remote = { (void *)addr, len };
	ssize_t n;

	while (local.iov_len) {
		n = process_vm_readv(child, &local, 1, &remote, 1, 0);
		if (n <= 0)
			return sc_err(n < 0 ? errno : EIO, "cannot read the snapshot's memory at "
				      "0x%llx (%zu bytes): %s", (unsigned long long)remote.iov_base,
				      remote.iov_len, n < 0 ? strerror(errno) : "short read");
		local.iov_base = (char *)local.iov_base + n;
		local.iov_len -= (size_t)n;
		remote.iov_base = (char *)remote.iov_base + n;
		remote.iov_len -= (size_t)n;
	}
	return 0;
}

void sc_snapshot_kill(pid_t child)
{
	if (child <= 0)
		return;
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
