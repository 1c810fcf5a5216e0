/* SPDX-License-Identifier: MIT */
/*
 * vmflags_cache.c - the memory settings the last checkpoint vouched for,
 * standing in for the read of the process's own smaps before the next stop
 * (vmflags.h).
 *
 * That read walks every page table: 20 to 60 ms for 4 GiB, all of it before
 * the stop, where it costs a second checkpoint that writes 200 MiB up to a
 * fifth of its time. Most programs set their mappings' settings once; the last
 * checkpoint's, which its snapshot vouched for, are then those of this one.
 * They stand in for the read only where nothing a fork loses is at stake:
 *  - the last checkpoint's mappings had no MADV_DONTFORK, MADV_WIPEONFORK or
 *    lock, and VmLck is 0 now (a lock, even on fault, counts its whole range
 *    there), so no mapping needs to be made to fork whole;
 *  - the checkpoint can be taken again on its own thread: a foreground one,
 *    neither a job's nor one the process ends after.
 * Each setting is vouched for again by the snapshot's smaps, as the read's
 * are (segment_vmflags.c): a mapping made MADV_DONTFORK since is missing from
 * the snapshot, one made MADV_WIPEONFORK shows "wf" there, a lock changes
 * VmLck, any other setting differs from what the record was given. A range
 * is lent only to a mapping with its very start and end: any other waits for
 * the snapshot's flags, as a mapping made since the read does. Any of
 * them refutes the cache: the image is given up, the instant taken again
 * with smaps read (checkpoint.c), and this process reads it from then on.
 */
#include <stdbool.h>

#include "core/checkpoint_internal.h"
#include "core/sc_core.h"
#include "core/vmflags.h"
#include "format/sc_log.h"

static struct {
	struct sc_vmflags last; /* the last checkpoint's mappings and settings */
	bool refuted;           /* a checkpoint found them changed: never used again */
	bool refuted_now;       /* ... the checkpoint under way did */
} cache;

/* Does any range of @v hold a setting a fork loses? */
static bool any_fork_lost(const struct sc_vmflags *v)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->r[i].bits & SC_VMF_FORK_LOST)
			return true;
	return false;
}

int sc_vmflags_cache_serve(struct sc_vmflags *out, struct sc_vmflags *all)
{
	int err;

	cache.refuted_now = false;
	if (cache.refuted || !cache.last.n || any_fork_lost(&cache.last) ||
	    sc_vmflags_locked_kb() != 0)
		return 0;
	err = sc_vmflags_own_from(&cache.last, out, all);
	return err < 0 ? err : 1;
}

void sc_vmflags_cache_keep(const struct sc_vma *v, size_t n)
{
	int err = 0;

	if (cache.refuted)
		return;
	cache.last.n = 0;
	for (size_t i = 0; i < n && !err; i++)
		if (sc_vma_saved(&v[i]))
			err = sc_vmflags_add(&cache.last, &(struct sc_vmf_range){
				.start = v[i].start, .end = v[i].end,
				.bits = v[i].vmflags & ~SC_VMF_KNOWN });
	if (err < 0)
		sc_vmflags_free(&cache.last); /* the next checkpoint reads smaps */
}

void sc_vmflags_cache_refute(void)
{
	sc_log(SC_LOG_DEBUG, "checkpoint: the memory settings changed since the last checkpoint: "
	       "this process's own are read before each stop from now on");
	cache.refuted = cache.refuted_now = true;
	sc_vmflags_free(&cache.last);
}

bool sc_vmflags_cache_refuted(void)
{
	return cache.refuted_now;
}

void sc_vmflags_cache_forget(void)
{
	/* emptied, not unmapped: its memory is part of the process the image gave back */
	cache.last.n = 0;
	cache.refuted = cache.refuted_now = false;
}
