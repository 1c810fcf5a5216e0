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
#define GUARD 4096

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
 * The staging area: private memory between two PROT_NONE guard pages, so that
 * it can never merge with a neighbouring mapping into one that the image
 * would then hold whole (it is left out of the image by its own range,
 * sc_skip_add()). Its pages are made now, before the threads stop (huge pages
 * where the kernel gives them), so that the copies cost the pause no faults.
 */
static int map_stage(struct sc_shared_frozen *z, size_t populate)
{
	uint8_t *guarded = mmap(NULL, z->stage_len + 2 * GUARD, PROT_NONE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (guarded == MAP_FAILED || mprotect(guarded + GUARD, z->stage_len,
					      PROT_READ | PROT_WRITE) < 0) {
		int err = errno;

		if (guarded != MAP_FAILED)
			munmap(guarded, z->stage_len + 2 * GUARD);
		return sc_err(err, "cannot map %llu bytes to copy shared memory: %s",
			      (unsigned long long)z->stage_len, strerror(err));
	}
	z->stage = (uint64_t)(uintptr_t)(guarded + GUARD);
	madvise(guarded + GUARD, z->stage_len, MADV_HUGEPAGE);
	if (populate)
		madvise(guarded + GUARD, populate, MADV_POPULATE_WRITE); /* kernel 5.14+ */
	return 0;
}

static void unmap_stage(struct sc_shared_frozen *z)
{
	munmap((void *)(uintptr_t)(z->stage - GUARD), z->stage_len + 2 * GUARD);
}

/* Mapped, not malloc'd: the program's break must be at the instant what it was before the call. */
int sc_shared_prepare(struct sc_shared_frozen *z)
{
	struct sc_shared_frozen probe = { 0 };
	long maps_len;
	int err;

	memset(z, 0, sizeof(*z));
	if ((err = map_buffers(&probe, 1, MAPS_MAX)) < 0)
		return err;
	sc_shared_measure(&probe);
	maps_len = (long)strlen(probe.maps);
	err = map_buffers(z, probe.n + SPARE_COPIES, 2 * maps_len + (64 << 10));
	z->stage_len = probe.used + SPARE_STAGE;
	unmap_buffers(&probe);
	if (!err && (err = map_stage(z, (size_t)probe.used)) < 0)
		unmap_buffers(z);
	if (err < 0)
		return err;
	if (sc_skip_add(z->stage, z->stage + z->stage_len) < 0) {
		unmap_stage(z);
		unmap_buffers(z);
		return sc_err(EBUSY, "cannot leave the shared memory copies out of the image");
	}
	return 0;
}

void sc_shared_free(struct sc_shared_frozen *z)
{
	if (z->stage) {
		sc_skip_remove(z->stage);
		unmap_stage(z);
	}
	unmap_buffers(z);
	memset(z, 0, sizeof(*z));
}

/*
 * In a restored process the staging area was not in the image; its guard
 * pages were, merged with a PROT_NONE neighbour perhaps: those pages go.
 */
void sc_shared_forget(struct sc_shared_frozen *z)
{
	if (z->stage) {
		sc_skip_remove(z->stage);
		munmap((void *)(uintptr_t)(z->stage - GUARD), GUARD);
		munmap((void *)(uintptr_t)(z->stage + z->stage_len), GUARD);
	}
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
