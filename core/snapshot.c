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
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/checkpoint_internal.h"
#include "core/core_internal.h"
#include "core/sc_sys.h"
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

/*
 * A snapshot of a large process takes tens of milliseconds to die: the kernel
 * takes down its page tables, and frees the copier's buffers when it holds
 * their last reference. Nothing needs to wait for that, so a raw thread
 * (reaper_rt.c) reaps it while the application goes on; the next checkpoint
 * waits for that thread before it stops the others, so that no image ever
 * holds it. A process forked meanwhile has no reaper: it has nothing to wait.
 */
static pid_t reaper_owner;

void sc_snapshot_reaped(void)
{
	int tid;

	if (reaper_owner != getpid())
		return;
	while ((tid = __atomic_load_n(&sc_reaper_tid, __ATOMIC_ACQUIRE)) != 0)
		syscall(SYS_futex, &sc_reaper_tid, SC_FUTEX_WAIT_SHARED, tid, NULL);
	reaper_owner = 0;
}

void sc_snapshot_kill(pid_t child)
{
	sigset_t all, old;
	long tid;

	if (child <= 0)
		return;
	sc_snapshot_reaped();
	if (mem_pid == child) {
		close(mem_fd);
		mem_fd = -1;
		mem_pid = -1;
	}
	kill(child, SIGKILL);
	sigfillset(&all); /* the reaper takes none of the application's signals */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	tid = sc_reaper_start(child);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (tid > 0) {
		reaper_owner = getpid();
		return;
	}
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
