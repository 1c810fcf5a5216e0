/* SPDX-License-Identifier: MIT */
/*
 * copier.c - the checkpoint's side of the copier (core_internal.h): the region
 * shared with the snapshot process, and requests to its threads.
 *
 * The region, mapped before the threads stop and left out of the image:
 *   [control blocks, one page][a stack per snapshot thread][buffers]
 * It is mapped for each checkpoint and unmapped after it, so a process that
 * does not checkpoint holds none of it.
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/checkpoint_internal.h"
#include "core/core_internal.h"
#include "core/sc_core.h"
#include "format/sc_log.h"

#define CTL_SIZE 4096u
#define STACK_SIZE (64u << 10)
#define WAIT_SLICE_NS 100000000l /* between checks that the snapshot still lives */
#define UNSERVED -1               /* done of a block whose snapshot thread did not start */

_Static_assert(SC_COPIER_MAX * sizeof(struct sc_copier_ctl) <= CTL_SIZE, "blocks fit");

static struct {
	uint8_t *base; /* NULL: no copier */
	size_t size;
	uint8_t *buf;
	size_t buf_size;
} region;

static int threads_for(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	return cpus < 1 ? 1 : cpus > SC_COPIER_MAX ? SC_COPIER_MAX : (int)cpus;
}

int sc_copier_start(size_t buf_size)
{
	int n = threads_for();
	size_t size = CTL_SIZE + (size_t)n * STACK_SIZE + buf_size;
	struct sc_copier_ctl *c;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	if (sc_skip_add((uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)p + size) < 0) {
		munmap(p, size);
		return -ENOSPC;
	}
	region.base = p;
	region.size = size;
	region.buf = region.base + CTL_SIZE + (size_t)n * STACK_SIZE;
	region.buf_size = buf_size;
	c = (struct sc_copier_ctl *)p;
	for (int i = 0; i < n; i++) { /* each stack grows down to the one before */
		c[i].stack = (uint64_t)(uintptr_t)(region.base + CTL_SIZE + (size_t)(i + 1) * STACK_SIZE);
		c[i].page = (uint32_t)sysconf(_SC_PAGESIZE);
	}
	sc_copier_n = n;
	__atomic_store_n(&sc_copier_ctl, c, __ATOMIC_RELEASE);
	return 0;
}

void sc_copier_forget(void)
{
	if (region.base)
		sc_skip_remove((uint64_t)(uintptr_t)region.base);
	sc_copier_ctl = NULL;
	sc_copier_n = 0;
	memset(&region, 0, sizeof(region));
}

void sc_copier_stop(void)
{
	uint8_t *base = region.base;
	size_t size = region.size;

	sc_copier_forget();
	if (base)
		munmap(base, size);
}

uint8_t *sc_copier_buffer(size_t *size)
{
	*size = region.buf_size;
	return region.buf;
}

int sc_copier_threads(void)
{
	return sc_copier_n;
}

/* Set thread @i's request and wake it; a thread that never started is left alone. */
static void request(int i, uint32_t op, uint64_t src, uint64_t len, void *dst,
		    const uint8_t *flags)
{
	struct sc_copier_ctl *c = &sc_copier_ctl[i];

	if (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) == UNSERVED)
		return;
	c->op = op;
	c->src = src;
	c->len = len;
	c->dst = (uint64_t)(uintptr_t)dst;
	c->flags = (uint64_t)(uintptr_t)flags;
	__atomic_store_n(&c->seq, c->seq + 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &c->seq, FUTEX_WAKE, 1, NULL);
}

void sc_copier_scan(int i, uint64_t src, uint64_t len, uint8_t *flags)
{
	request(i, SC_COPY_SCAN, src, len, NULL, flags);
}

void sc_copier_gather(int i, void *dst, uint64_t src, uint64_t len, uint8_t *flags)
{
	request(i, SC_COPY_GATHER, src, len, dst, flags);
}

void sc_copier_pack(int i, void *dst, uint64_t src, uint64_t len, const uint8_t *flags)
{
	request(i, SC_COPY_PACK, src, len, dst, flags);
}

uint64_t sc_copier_count(int i)
{
	return sc_copier_ctl[i].count;
}

int sc_copier_split(const uint8_t *flags, uint64_t pages, uint64_t to_read, int k, uint64_t min,
		    struct sc_copier_piece *piece)
{
	uint64_t per = (to_read + (uint64_t)k - 1) / (uint64_t)k, before = 0;
	int n = 0;

	per = per < min ? min : per;
	/*
	 * A piece ends after its per-th page to read, unless it holds the last
	 * one: then it takes the pages left after it too. k pieces of per hold
	 * them all, so the k-th always ends at @pages.
	 */
	for (uint64_t i = 0; i < pages; n++) {
		uint64_t first = i, mine = 0;

		while (i < pages && (mine < per || before + mine == to_read))
			mine += flags[i++] != SC_COPY_LEFT;
		piece[n] = (struct sc_copier_piece){ first, i - first, before };
		before += mine;
	}
	return n;
}

/* Whether the snapshot process has ended, without reaping it. */
static bool snapshot_gone(pid_t child)
{
	siginfo_t si = { 0 };

	/* __WALL: it has no exit signal (sc_clone_frozen()) */
	return waitid(P_PID, (id_t)child, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0 ||
	       si.si_pid;
}

int sc_copier_wait(pid_t child, int i)
{
	struct sc_copier_ctl *c = &sc_copier_ctl[i];
	struct timespec slice = { 0, WAIT_SLICE_NS };
	int seq = c->seq;

	for (;;) {
		int done = __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);

		if (done == seq)
			return 0;
		if (done == UNSERVED)
			return 1;
		syscall(SYS_futex, &c->done, FUTEX_WAIT, done, &slice);
		done = __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
		if (done != seq && done != UNSERVED && snapshot_gone(child))
			return sc_err(ESRCH, "the snapshot process %d ended while copying %llu bytes "
				      "at 0x%llx", (int)child, (unsigned long long)c->len,
				      (unsigned long long)c->src);
	}
}
