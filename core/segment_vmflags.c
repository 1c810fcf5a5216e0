/* SPDX-License-Identifier: MIT */
/*
 * segment_vmflags.c - the memory flags of each mapping an image holds
 * (format 1.3, vmflags.h): what the snapshot's smaps says, with the settings
 * a fork loses taken from the process as it was when the threads stopped.
 *
 * Reading smaps walks every page table: about 20 ms for 4 GiB. The process's
 * own smaps is read before the threads stop (the settings a fork loses are
 * needed then); each mapping it covers whole takes its flags from that read at
 * once. The snapshot's smaps, which vouches for them, is read on a thread of
 * its own while the memory is: a record waits only where its mapping was made
 * since, and the image's end for the checks.
 *
 * Whether the settings a fork loses changed between the read and the stop is
 * told from the instant itself (vmflags.h), never from the process's smaps
 * read again: that read would hold the process's memory map for as long as
 * the walk takes, and every mmap() of the writer would wait for it.
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

/*
 * The flags of mapping @v whose settings @s lists (the snapshot's, or the
 * process's own), with the settings a fork loses from the process: into
 * *@flags, or a refusal naming it.
 */
static int flags_of(const struct sc_frozen *fz, const struct sc_vmf_range *s,
		    const struct sc_vma *v, uint32_t *flags)
{
	const struct sc_vmf_range *own = sc_vmflags_find(&fz->vmflags, v->start);

	if (s->bad & SC_VMF_BAD_HUGETLB)
		return sc_err(SELFCKPT_EHOST, "the mapping %s at 0x%llx-0x%llx holds "
			      "hugetlb pages (MAP_HUGETLB or hugetlbfs), which cannot be restored",
			      vma_name(v), (unsigned long long)v->start, (unsigned long long)v->end);
	if (s->bad & SC_VMF_BAD_SEALED)
		return sc_err(SELFCKPT_EHOST, "the mapping %s at 0x%llx-0x%llx is sealed "
			      "(mseal), which cannot be restored", vma_name(v),
			      (unsigned long long)v->start, (unsigned long long)v->end);
	*flags = SC_VMF_KNOWN | (s->bits & ~SC_VMF_FORK_LOST) |
		 (own ? own->bits & SC_VMF_FORK_LOST : 0);
	return 0;
}

/*
 * A mapping of the instant that the snapshot lacks was MADV_DONTFORK then, set
 * after the settings were read: the image would lack its memory. Kernel-provided
 * and device mappings are not saved, and not looked at.
 */
static int check_none_missing(const struct sc_vmf_reader *r)
{
	const struct sc_vmflags *t = &r->fz->vmflags;
	struct sc_vma *at;
	size_t n, k = 0;
	char *text;
	int err;

	if (t->maps_len <= 0)
		return sc_err(EIO, "the memory map of the instant could not be read from "
			      "'/proc/self/maps': nothing shows that the snapshot holds every "
			      "mapping, so the image is given up");
	if (!(text = malloc((size_t)t->maps_len + 1)))
		return sc_err(ENOMEM, "out of memory checking the snapshot's mappings");
	memcpy(text, t->maps, (size_t)t->maps_len + 1);
	err = sc_maps_parse(text, (size_t)t->maps_len, "/proc/self/maps at the instant", &at, &n);
	free(text);
	if (err < 0)
		return err;
	for (size_t i = 0; i < n && !err; i++) {
		uint64_t covered = at[i].start;

		if (!sc_vma_saved(&at[i]))
			continue;
		while (k < r->n && r->v[k].end <= covered) /* both in address order */
			k++;
		for (size_t j = k; j < r->n && r->v[j].start <= covered && covered < at[i].end; j++)
			covered = r->v[j].end;
		if (covered < at[i].end)
			err = sc_err(EAGAIN, "the mapping %s at 0x%llx-0x%llx is not in the snapshot: "
				     "it was made MADV_DONTFORK after the memory settings were read, "
				     "so the image would lack its memory and is given up (checkpoint "
				     "again)", vma_name(&at[i]), (unsigned long long)at[i].start,
				     (unsigned long long)at[i].end);
	}
	sc_maps_free(at, n);
	return err;
}

/*
 * Were the settings a fork loses at the instant the ones read before the stop?
 * A range that was no longer a mapping of its own, locks taken or dropped
 * since, a mapping made MADV_DONTFORK since: each would leave the image
 * without memory or settings the instant had. (One made MADV_WIPEONFORK since
 * is found in the snapshot's flags: snapshot_flags().)
 */
static int check_instant(const struct sc_vmf_reader *r)
{
	const struct sc_vmflags *t = &r->fz->vmflags;

	if (t->stale)
		return sc_err(EAGAIN, "a mapping with a MADV_DONTFORK, MADV_WIPEONFORK or mlock() "
			      "setting was unmapped or remade while the snapshot was taken: the "
			      "snapshot may lack its memory, so the image is given up (checkpoint "
			      "again)");
	if (t->locked_kb_frozen < 0)
		return sc_err(EIO, "VmLck could not be read from '/proc/thread-self/status' at the "
			      "instant: nothing shows which memory was locked then, so the image is "
			      "given up");
	if (t->locked_kb_frozen != t->locked_kb)
		return sc_err(EAGAIN, "memory was locked or unlocked (mlock()) while the snapshot "
			      "was taken (VmLck %ld KiB as the settings were read, %ld KiB at the "
			      "instant): the image would not hold the locks the instant had, so it "
			      "is given up (checkpoint again)", t->locked_kb, t->locked_kb_frozen);
	return check_none_missing(r);
}

int sc_segments_split(const struct sc_frozen *fz, struct sc_vma **v, size_t *n)
{
	return split_vmas(&fz->vmflags, v, n);
}

/*
 * The snapshot's flags of each saved mapping: given to a late one, and
 * checked against what an early one was given (nothing else writes them).
 */
static int snapshot_flags(struct sc_vmf_reader *r)
{
	struct sc_vmflags snap;
	int err = sc_vmflags_read(r->fz->child, ~0u, &snap);

	for (size_t i = 0; i < r->n && !err; i++) {
		struct sc_vma *v = &r->v[i];
		const struct sc_vmf_range *s = sc_vmflags_find(&snap, v->start);
		uint32_t flags;

		if (!sc_vma_saved(v))
			continue;
		if (!s)
			err = sc_err(EPROTO, "the snapshot's smaps has no VmFlags for the mapping %s "
				     "at 0x%llx", vma_name(v), (unsigned long long)v->start);
		else if ((s->bits & SC_VMF_WIPEONFORK) && !(s->bits & SC_VMF_DROPPABLE))
			/* not made to fork whole, so not listed; droppable memory may go anyway */
			err = sc_err(EAGAIN, "the mapping %s at 0x%llx-0x%llx is empty in the "
				     "snapshot: it was made MADV_WIPEONFORK after the memory settings "
				     "were read, so the image would lack its memory and is given up "
				     "(checkpoint again)", vma_name(v), (unsigned long long)v->start,
				     (unsigned long long)v->end);
		else if (!(err = flags_of(r->fz, s, v, &flags)) && !r->early[i])
			v->vmflags = flags;
		else if (!err && flags != v->vmflags)
			err = sc_err(EAGAIN, "the memory settings of the mapping %s at 0x%llx-0x%llx "
				     "changed while the snapshot was taken: the image would not hold "
				     "them, so it is given up (checkpoint again)", vma_name(v),
				     (unsigned long long)v->start, (unsigned long long)v->end);
	}
	sc_vmflags_free(&snap);
	return err;
}

/*
 * A mapping that starts in one the process's own settings list, read just
 * before the threads stopped, takes its flags from it at once (one that grew
 * since, as the heap does, has them too: the kernel joins only mappings of
 * equal settings): the records need not wait for the snapshot's smaps, which
 * later vouches for them (snapshot_flags()). A mapping made since is late,
 * and its record waits. Return: 0 or a refusal.
 */
static int early_flags(struct sc_vmf_reader *r)
{
	int err = 0;

	for (size_t i = 0; i < r->n && !err; i++) {
		struct sc_vma *v = &r->v[i];
		const struct sc_vmf_range *own = sc_vmflags_find(&r->fz->own_flags, v->start);

		if (!sc_vma_saved(v) || !own)
			continue;
		err = flags_of(r->fz, own, v, &v->vmflags);
		r->early[i] = !err;
		r->n_late -= !err;
	}
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
	int err = snapshot_flags(r);

	if (!err)
		err = sc_segments_held_check(r->o, r->v, r->n);
	publish(r, &r->flags_done, &r->flags_err, err);
	t1 = sc_log_seconds();
	if (!err)
		err = check_instant(r);
	sc_log(SC_LOG_DEBUG, "checkpoint: the memory flags of %zu mappings known before the "
	       "stop, of %zu after it; the snapshot's read in %.3f s, the settings checked in "
	       "%.3f s, beside the memory's reading", r->n_saved - r->n_late, r->n_late, t1 - t0,
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
	if (!(r->early = calloc(n ? n : 1, sizeof(*r->early))))
		return sc_err(ENOMEM, "out of memory reading the memory settings");
	for (size_t i = 0; i < n; i++)
		r->n_saved += sc_vma_saved(&v[i]);
	r->n_late = r->n_saved;
	if ((err = early_flags(r)) < 0)
		goto fail;
	if ((err = pthread_create(&r->thread, NULL, settings_main, r))) {
		err = sc_err(err, "cannot start reading the memory settings: %s", strerror(err));
		goto fail;
	}
	r->started = true;
	return 0;
fail:
	free(r->early);
	r->early = NULL;
	return err;
}

int sc_segments_vmflags_wait(struct sc_vmf_reader *r, const struct sc_vma *v)
{
	double t0;
	int err;

	if (r->early[v - r->v])
		return 0;
	t0 = sc_log_seconds();
	pthread_mutex_lock(&r->lock);
	while (!r->flags_done)
		pthread_cond_wait(&r->changed, &r->lock);
	err = r->flags_err;
	pthread_mutex_unlock(&r->lock);
	r->waited += sc_log_seconds() - t0;
	return again_here(err, r->msg);
}

int sc_segments_vmflags_end(struct sc_vmf_reader *r)
{
	if (!r->started)
		return 0;
	pthread_join(r->thread, NULL);
	r->started = false;
	free(r->early);
	r->early = NULL;
	return again_here(r->flags_err < 0 ? r->flags_err : r->check_err, r->msg);
}
