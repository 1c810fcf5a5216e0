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
#include <stdarg.h>
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
 * A setting the instant had and the image would not: reported, with EAGAIN;
 * only noted where the settings were the last checkpoint's (vmflags_cache.c),
 * since the instant is then taken again and the user has nothing to do.
 */
static int changed(const struct sc_vmf_reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int changed(const struct sc_vmf_reader *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->fz->settings_cached)
		return sc_err_quiet(EAGAIN, "%s", msg);
	return sc_err(EAGAIN, "%s", msg);
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
			err = changed(r, "the mapping %s at 0x%llx-0x%llx is not in the snapshot: "
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
		return changed(r, "a mapping with a MADV_DONTFORK, MADV_WIPEONFORK or mlock() "
			      "setting was unmapped or remade while the snapshot was taken: the "
			      "snapshot may lack its memory, so the image is given up (checkpoint "
			      "again)");
	if (t->locked_kb_frozen < 0)
		return sc_err(EIO, "VmLck could not be read from '/proc/thread-self/status' at the "
			      "instant: nothing shows which memory was locked then, so the image is "
			      "given up");
	if (t->locked_kb_frozen != t->locked_kb)
		return changed(r, "memory was locked or unlocked (mlock()) while the snapshot "
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
 * Mapping @i takes its flags from the snapshot's settings @s: given to a late
 * one, checked against what an early one was given (nothing else writes them).
 */
static int take_snapshot_flags(struct sc_vmf_reader *r, size_t i, const struct sc_vmf_range *s)
{
	struct sc_vma *v = &r->v[i];
	uint32_t flags;
	int err;

	if ((s->bits & SC_VMF_WIPEONFORK) && !(s->bits & SC_VMF_DROPPABLE))
		/* not made to fork whole, so not listed; droppable memory may go anyway */
		return changed(r, "the mapping %s at 0x%llx-0x%llx is empty in the snapshot: it was "
			       "made MADV_WIPEONFORK after the memory settings were read, so the "
			       "image would lack its memory and is given up (checkpoint again)",
			       vma_name(v), (unsigned long long)v->start, (unsigned long long)v->end);
	if ((err = flags_of(r->fz, s, v, &flags)) < 0)
		return err;
	if (!r->early[i])
		v->vmflags = flags;
	else if (flags != v->vmflags)
		return changed(r, "the memory settings of the mapping %s at 0x%llx-0x%llx changed "
			       "while the snapshot was taken: the image would not hold them, so it "
			       "is given up (checkpoint again)", vma_name(v),
			       (unsigned long long)v->start, (unsigned long long)v->end);
	return 0;
}

static int no_snapshot_flags(const struct sc_vma *v)
{
	return sc_err(EPROTO, "the snapshot's smaps has no VmFlags for the mapping %s at 0x%llx",
		      vma_name(v), (unsigned long long)v->start);
}

/* Where the snapshot's smaps is read up to. */
struct snapshot_walk {
	struct sc_vmf_reader *r;
	size_t next; /* the first mapping not given its flags yet */
};

/*
 * One mapping of the snapshot's smaps, as it is read: the saved mappings that
 * start in it take its flags, and a record waiting for one of them may go on
 * (sc_segments_vmflags_wait()): a late mapping low in memory need not wait
 * for the page tables of every mapping above it to be walked.
 */
static int snapshot_mapping(const struct sc_vmf_range *s, void *arg)
{
	struct snapshot_walk *w = arg;
	struct sc_vmf_reader *r = w->r;
	int err = 0;

	for (; !err && w->next < r->n && r->v[w->next].start < s->end; w->next++) {
		if (!sc_vma_saved(&r->v[w->next]))
			continue;
		if (r->v[w->next].start < s->start)
			err = no_snapshot_flags(&r->v[w->next]);
		else
			err = take_snapshot_flags(r, w->next, s);
	}
	if (!err) {
		pthread_mutex_lock(&r->lock);
		r->known_below = s->end;
		pthread_cond_broadcast(&r->changed);
		pthread_mutex_unlock(&r->lock);
	}
	return err;
}

/* The snapshot's flags of each saved mapping, read as the kernel walks its page tables. */
static int snapshot_flags(struct sc_vmf_reader *r)
{
	struct snapshot_walk w = { .r = r, .next = 0 };
	int err = sc_vmflags_stream(r->fz->child, snapshot_mapping, &w);

	for (; !err && w.next < r->n; w.next++)
		if (sc_vma_saved(&r->v[w.next]))
			err = no_snapshot_flags(&r->v[w.next]);
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
		/* the last checkpoint's lend only to the very same range: others are late */
		if (r->fz->settings_cached && (own->start != v->start || own->end != v->end))
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

/*
 * A check's verdict on settings the last checkpoint lent (vmflags_cache.c):
 * one that found them changed refutes them, and the instant is taken again;
 * settings that passed every check are kept for the next checkpoint.
 */
static int lent_settings(const struct sc_vmf_reader *r, int err)
{
	if (err == -EAGAIN && r->fz->settings_cached) {
		sc_log(SC_LOG_DEBUG, "checkpoint: %s", selfckpt_last_error());
		sc_vmflags_cache_refute();
	}
	return err;
}

static void *settings_main(void *arg)
{
	struct sc_vmf_reader *r = arg;
	double t0 = sc_log_seconds(), t1;
	int err = lent_settings(r, snapshot_flags(r));

	if (!err)
		err = sc_segments_held_check(r->o, r->v, r->n);
	publish(r, &r->flags_done, &r->flags_err, err);
	t1 = sc_log_seconds();
	if (!err)
		err = lent_settings(r, check_instant(r));
	if (!err)
		sc_vmflags_cache_keep(r->v, r->n);
	sc_log(SC_LOG_DEBUG, "checkpoint: the memory flags of %zu mappings known %s, of %zu "
	       "after the stop; the snapshot's read in %.3f s, the settings checked in %.3f s, "
	       "beside the memory's reading", r->n_saved - r->n_late,
	       r->fz->settings_cached ? "from the last checkpoint" : "before the stop", r->n_late,
	       t1 - t0, sc_log_seconds() - t1);
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
	while (!r->flags_done && r->known_below <= v->start)
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
