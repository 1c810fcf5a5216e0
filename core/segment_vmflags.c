/* SPDX-License-Identifier: MIT */
/*
 * segment_vmflags.c - the memory flags of each mapping an image holds
 * (format 1.3, vmflags.h): what the snapshot's smaps says, with the settings
 * a fork loses taken from the process as it was when the threads stopped.
 *
 * Reading smaps walks every page table: about 20 ms for 4 GiB, twice (the
 * snapshot's, and the process's to check its settings). A thread of its own
 * does it while the snapshot's memory is read: the records wait only for the
 * flags, and only the image's end for the check.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/checkpoint_internal.h"
#include "core/sc_core.h"
#include "format/sc_log.h"

/* Where [start, end) must be cut: the next range edge of @at strictly inside it, or @end. */
static uint64_t next_cut(const struct sc_vmflags *at, uint64_t start, uint64_t end)
{
	uint64_t cut = end;

	for (size_t i = 0; i < at->n; i++) {
		if (at->r[i].start > start && at->r[i].start < cut)
			cut = at->r[i].start;
		if (at->r[i].end > start && at->r[i].end < cut)
			cut = at->r[i].end;
	}
	return cut;
}

/*
 * Making a MADV_DONTFORK mapping MADV_DOFORK for the clone may merge it with a
 * neighbour in the snapshot: cut the snapshot's mappings where the process's
 * own settings change, so that each keeps its own.
 */
static int split_vmas(const struct sc_vmflags *at, struct sc_vma **v, size_t *n)
{
	size_t cap = *n + 2 * at->n, k = 0;
	struct sc_vma *out;

	if (!at->n)
		return 0;
	out = calloc(cap, sizeof(*out));
	if (!out)
		return sc_err(ENOMEM, "out of memory splitting the memory map");
	for (size_t i = 0; i < *n; i++) {
		const struct sc_vma *src = &(*v)[i];

		for (uint64_t s = src->start, e; s < src->end && k < cap; s = e, k++) {
			e = next_cut(at, s, src->end);
			out[k] = *src;
			out[k].start = s;
			out[k].end = e;
			out[k].offset = src->offset + (s - src->start);
			out[k].path = strdup(src->path);
			if (!out[k].path) {
				sc_maps_free(out, k);
				return sc_err(ENOMEM, "out of memory splitting the memory map");
			}
		}
	}
	sc_maps_free(*v, *n);
	*v = out;
	*n = k;
	return 0;
}

static const char *vma_name(const struct sc_vma *v)
{
	return *v->path ? v->path : "(anonymous)";
}

/* The flags of one mapping, or a refusal naming it. */
static int vma_flags(const struct sc_frozen *fz, const struct sc_vmflags *snap, struct sc_vma *v)
{
	const struct sc_vmf_range *s = sc_vmflags_find(snap, v->start);
	const struct sc_vmf_range *own = sc_vmflags_find(&fz->vmflags, v->start);

	if (!s)
		return sc_err(EPROTO, "the snapshot's smaps has no VmFlags for the mapping %s at "
			      "0x%llx", vma_name(v), (unsigned long long)v->start);
	if (s->bad & SC_VMF_BAD_HUGETLB)
		return sc_err(SELFCKPT_EHOST, "the mapping %s at 0x%llx-0x%llx holds "
			      "hugetlb pages (MAP_HUGETLB or hugetlbfs), which cannot be restored",
			      vma_name(v), (unsigned long long)v->start, (unsigned long long)v->end);
	if (s->bad & SC_VMF_BAD_SEALED)
		return sc_err(SELFCKPT_EHOST, "the mapping %s at 0x%llx-0x%llx is sealed "
			      "(mseal), which cannot be restored", vma_name(v),
			      (unsigned long long)v->start, (unsigned long long)v->end);
	v->vmflags = SC_VMF_KNOWN | (s->bits & ~SC_VMF_FORK_LOST) |
		     (own ? own->bits & SC_VMF_FORK_LOST : 0);
	return 0;
}

/* Were the settings a fork loses the same all along? Else the snapshot may lack memory. */
static int check_unchanged(const struct sc_frozen *fz)
{
	struct sc_vmflags now;
	int err = sc_vmflags_read(0, SC_VMF_FORK_LOST, &now), same;

	if (err < 0)
		return err;
	same = !fz->vmflags.stale && sc_vmflags_same(&fz->vmflags, &now, SC_VMF_FORK_LOST);
	sc_vmflags_free(&now);
	if (!same)
		return sc_err(EAGAIN, "a mapping's MADV_DONTFORK, MADV_WIPEONFORK or mlock() "
			      "setting changed while the snapshot was taken: the snapshot may "
			      "lack its memory, so the image is given up (checkpoint again)");
	return 0;
}

int sc_segments_split(const struct sc_frozen *fz, struct sc_vma **v, size_t *n)
{
	return split_vmas(&fz->vmflags, v, n);
}

/* The snapshot's flags for each saved mapping of @v. */
static int snapshot_flags(const struct sc_frozen *fz, struct sc_vma *v, size_t n)
{
	struct sc_vmflags snap;
	int err = sc_vmflags_read(fz->child, ~0u, &snap);

	if (err < 0)
		return err;
	for (size_t i = 0; i < n && !err; i++)
		if (sc_vma_saved(&v[i]))
			err = vma_flags(fz, &snap, &v[i]);
	sc_vmflags_free(&snap);
	return err;
}

/* An error of the settings thread, said again on the thread that waits for it (not printed). */
static int again_here(int err, const char *msg)
{
	return err < 0 ? sc_err_quiet(-err, "%s", msg) : 0;
}

/* Under the lock: the result of one stage, and its message. */
static void publish(struct sc_vmf_reader *r, bool *done, int *result, int err)
{
	pthread_mutex_lock(&r->lock);
	*done = true;
	*result = err;
	if (err < 0 && !r->msg[0])
		snprintf(r->msg, sizeof(r->msg), "%s", selfckpt_last_error());
	pthread_cond_broadcast(&r->changed);
	pthread_mutex_unlock(&r->lock);
}

static void *settings_main(void *arg)
{
	struct sc_vmf_reader *r = arg;
	double t0 = sc_log_seconds(), t1;
	int err = snapshot_flags(r->fz, r->v, r->n);

	if (!err)
		err = sc_segments_held_check(r->o, r->v, r->n);
	publish(r, &r->flags_done, &r->flags_err, err);
	t1 = sc_log_seconds();
	if (!err)
		err = check_unchanged(r->fz);
	sc_log(SC_LOG_DEBUG, "checkpoint: the mappings' memory flags read in %.3f s, their "
	       "settings checked in %.3f s, beside the memory's reading", t1 - t0,
	       sc_log_seconds() - t1);
	publish(r, &r->check_done, &r->check_err, err);
	return NULL;
}

int sc_segments_vmflags_start(struct sc_vmf_reader *r, const struct sc_frozen *fz,
			      const struct sc_save_opts *o, struct sc_vma *v, size_t n)
{
	int err;

	*r = (struct sc_vmf_reader){ .lock = PTHREAD_MUTEX_INITIALIZER,
				     .changed = PTHREAD_COND_INITIALIZER,
				     .fz = fz, .o = o, .v = v, .n = n };
	err = pthread_create(&r->thread, NULL, settings_main, r);
	if (err)
		return sc_err(err, "cannot start reading the memory settings: %s", strerror(err));
	r->started = true;
	return 0;
}

int sc_segments_vmflags_ready(struct sc_vmf_reader *r)
{
	int err;

	pthread_mutex_lock(&r->lock);
	while (!r->flags_done)
		pthread_cond_wait(&r->changed, &r->lock);
	err = r->flags_err;
	pthread_mutex_unlock(&r->lock);
	return again_here(err, r->msg);
}

int sc_segments_vmflags_end(struct sc_vmf_reader *r)
{
	if (!r->started)
		return 0;
	pthread_join(r->thread, NULL);
	r->started = false;
	return again_here(r->flags_err < 0 ? r->flags_err : r->check_err, r->msg);
}
