/* SPDX-License-Identifier: MIT */
/*
 * shared_freeze.c - the room that copying shared memory at the instant needs,
 * made before the freeze (shared_freeze.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "core/sc_core.h"
#include "core/shared_freeze.h"
#include "format/sc_log.h"

#define MAPS_MAX (16 << 20)      /* the largest /proc/self/maps read at the freeze */
#define PAGEMAP_BYTES (4096 * 8) /* shared_freeze_rt.c reads 4096 entries at a time */
#define SPARE_COPIES 64          /* mappings made between now and the freeze */
#define SPARE_STAGE (64ull << 20)

static size_t buffers_size(const struct sc_shared_frozen *z)
{
	return (size_t)z->cap * sizeof(*z->c) + (size_t)z->maps_size + PAGEMAP_BYTES;
}

/* The table and buffers; first sized for MAPS_MAX to measure, then as needed. */
static int map_buffers(struct sc_shared_frozen *z, int cap, long maps_size)
{
	void *m;

	z->cap = cap;
	z->maps_size = maps_size;
	m = mmap(NULL, buffers_size(z), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		z->c = NULL;
		return sc_err(errno, "cannot map %zu bytes to copy shared memory: %s",
			      buffers_size(z), strerror(errno));
	}
	z->c = m;
	z->maps = (char *)m + (size_t)cap * sizeof(*z->c);
	z->pagemap_buf = (uint8_t *)z->maps + maps_size;
	return 0;
}

static void unmap_buffers(struct sc_shared_frozen *z)
{
	if (z->c)
		munmap(z->c, buffers_size(z));
	z->c = NULL;
}

/*
 * Mapped, not malloc'd: the program's break must be at the instant what it
 * was before the call. The staging area is address space only until the
 * freeze writes into it; it is left out of the image (sc_skip_add()), and so
 * it is shared memory of its own: private anonymous memory could merge with
 * a neighbour into one mapping that the image would then hold whole. Nobody
 * writes it after the freeze, so the snapshot reads the copies as made.
 */
int sc_shared_prepare(struct sc_shared_frozen *z)
{
	struct sc_shared_frozen probe = { 0 };
	long maps_len;
	void *stage;
	int err;

	memset(z, 0, sizeof(*z));
	if ((err = map_buffers(&probe, 1, MAPS_MAX)) < 0)
		return err;
	sc_shared_measure(&probe);
	maps_len = (long)strlen(probe.maps);
	err = map_buffers(z, probe.n + SPARE_COPIES, 2 * maps_len + (64 << 10));
	z->stage_len = probe.used + SPARE_STAGE;
	unmap_buffers(&probe);
	if (err < 0)
		return err;
	stage = mmap(NULL, z->stage_len, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (stage == MAP_FAILED) {
		err = sc_err(errno, "cannot map %llu bytes to copy shared memory: %s",
			     (unsigned long long)z->stage_len, strerror(errno));
		unmap_buffers(z);
		return err;
	}
	z->stage = (uint64_t)(uintptr_t)stage;
	if (sc_skip_add(z->stage, z->stage + z->stage_len) < 0) {
		munmap(stage, z->stage_len);
		unmap_buffers(z);
		return sc_err(EBUSY, "cannot leave the shared memory copies out of the image");
	}
	return 0;
}

void sc_shared_free(struct sc_shared_frozen *z)
{
	if (z->stage) {
		sc_skip_remove(z->stage);
		munmap((void *)(uintptr_t)z->stage, z->stage_len);
	}
	unmap_buffers(z);
	memset(z, 0, sizeof(*z));
}

void sc_shared_forget(struct sc_shared_frozen *z)
{
	if (z->stage)
		sc_skip_remove(z->stage); /* never in the image: nothing to unmap */
	unmap_buffers(z);
	memset(z, 0, sizeof(*z));
}

uint64_t sc_shared_copy_of(const struct sc_shared_frozen *z, uint64_t start, uint64_t end)
{
	for (int i = 0; i < z->n; i++)
		if (z->c[i].start == start && z->c[i].end == end)
			return z->c[i].copy;
	return 0;
}
