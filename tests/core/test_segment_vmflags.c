/* SPDX-License-Identifier: MIT */
/*
 * test_segment_vmflags.c - the memory flags a checkpoint gives each mapping
 * (segment_vmflags.c), on this very process standing in for its snapshot: a
 * mapping the process's own read before the stop lists has its flags at once,
 * and the snapshot's smaps agrees; one made after that read waits for the
 * snapshot's; and one whose settings changed after it gives the image up,
 * naming it, rather than record settings the instant did not have.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/checkpoint_internal.h"
#include "core/sc_core.h"
#include "selfckpt.h"

static long page;

static char *map_pages(int advice)
{
	char *p = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);

	cr_assert_neq(p, MAP_FAILED);
	p[0] = 1;
	if (advice >= 0)
		cr_assert_eq(madvise(p, 4 * page, advice), 0);
	return p;
}

/* The process's settings as a checkpoint reads them just before its stop. */
static void read_own(struct sc_frozen *fz)
{
	memset(fz, 0, sizeof(*fz));
	cr_assert_eq(sc_vmflags_read_own(SC_VMF_FORK_LOST, &fz->vmflags, &fz->own_flags), 0);
	fz->child = getpid(); /* the snapshot: this process, as it is when the thread reads it */
}

/* The mapping of @v holding @at. */
static struct sc_vma *vma_at(struct sc_vma *v, size_t n, const char *at)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].start <= (uint64_t)at && (uint64_t)at < v[i].end)
			return &v[i];
	cr_assert_fail("no mapping at %p", (void *)at);
	return NULL;
}

/*
 * The checkpoint of one mapping, the test's: the process runs on while the
 * "snapshot" (itself) is read, and a sanitizer's allocator changes its own
 * mappings meanwhile, which a stopped process would not.
 */
struct run {
	struct sc_frozen fz;
	struct sc_save_opts o;
	struct sc_vma *all;
	size_t n_all;
	struct sc_vma v[1];
	size_t n;
	struct sc_vmf_reader r;
};

static void start(struct run *t, const char *at)
{
	memset(&t->o, 0, sizeof(t->o));
	cr_assert_eq(sc_maps_read(0, &t->all, &t->n_all), 0);
	t->v[0] = *vma_at(t->all, t->n_all, at);
	t->n = 1;
	cr_assert_eq(sc_segments_vmflags_start(&t->r, &t->fz, &t->o, t->v, t->n), 0);
}

static void finish(struct run *t)
{
	sc_maps_free(t->all, t->n_all);
	sc_vmflags_free(&t->fz.vmflags);
	sc_vmflags_free(&t->fz.own_flags);
}

Test(segment_vmflags, a_mapping_listed_before_the_stop_has_its_flags_at_once_and_the_snapshot_agrees)
{
	struct run t;
	char *p;

	page = sysconf(_SC_PAGESIZE);
	p = map_pages(MADV_DONTDUMP);
	read_own(&t.fz);
	start(&t, p);
	/* known at the start: no wait, and the flags are already there */
	cr_assert(t.r.early[vma_at(t.v, t.n, p) - t.v], "the mapping is not known early");
	cr_assert(vma_at(t.v, t.n, p)->vmflags & SC_VMF_DONTDUMP);
	cr_assert_eq(sc_segments_vmflags_wait(&t.r, vma_at(t.v, t.n, p)), 0);
	cr_assert_eq(sc_segments_vmflags_end(&t.r), 0, "%s", selfckpt_last_error());
	cr_assert(vma_at(t.v, t.n, p)->vmflags & SC_VMF_KNOWN);
	finish(&t);
}

Test(segment_vmflags, a_mapping_made_after_the_read_before_the_stop_waits_for_the_snapshots_flags)
{
	struct run t;
	struct sc_vma *m;
	char *p;

	page = sysconf(_SC_PAGESIZE);
	read_own(&t.fz);
	p = map_pages(MADV_DONTDUMP);
	start(&t, p);
	m = vma_at(t.v, t.n, p);
	cr_assert(!t.r.early[m - t.v], "a mapping made after the read is taken as known");
	cr_assert_eq(sc_segments_vmflags_wait(&t.r, m), 0, "%s", selfckpt_last_error());
	cr_assert(m->vmflags & SC_VMF_KNOWN);
	cr_assert(m->vmflags & SC_VMF_DONTDUMP, "the snapshot's flags were not given");
	cr_assert_eq(sc_segments_vmflags_end(&t.r), 0, "%s", selfckpt_last_error());
	finish(&t);
}

Test(segment_vmflags, settings_changed_after_the_read_before_the_stop_give_the_image_up)
{
	struct run t;
	char *p;
	int err;

	page = sysconf(_SC_PAGESIZE);
	p = map_pages(-1);
	read_own(&t.fz);
	/* another thread's madvise() between the read and the stop */
	cr_assert_eq(madvise(p, 4 * page, MADV_DONTDUMP), 0);
	start(&t, p);
	cr_assert_eq(sc_segments_vmflags_wait(&t.r, vma_at(t.v, t.n, p)), 0);
	err = sc_segments_vmflags_end(&t.r);
	cr_assert_eq(err, -EAGAIN, "the image was kept (%d)", err);
	cr_assert(strstr(selfckpt_last_error(), "changed while the snapshot was taken"),
		  "the refusal says: %s", selfckpt_last_error());
	finish(&t);
}

/*
 * The text of smaps is read into a buffer of its own, gone before the stop: a
 * mapping made where it was must not take its settings. Every range the read
 * lists is a mapping that still exists, or part of one.
 */
Test(segment_vmflags, the_read_before_the_stop_lists_no_place_its_own_text_was)
{
	struct sc_frozen fz;
	struct sc_vma *v;
	size_t n;

	read_own(&fz);
	cr_assert_eq(sc_maps_read(0, &v, &n), 0);
	for (size_t i = 0; i < fz.own_flags.n; i++) {
		const struct sc_vmf_range *r = &fz.own_flags.r[i];
		uint64_t at = r->start;

		/* mapped all through, by one mapping or several (split since) */
		for (size_t k = 0; k < n && at < r->end; k++)
			if (v[k].start <= at && at < v[k].end)
				at = v[k].end;
		cr_assert(at >= r->end, "0x%llx-0x%llx is listed, and 0x%llx is no mapping now",
			  (unsigned long long)r->start, (unsigned long long)r->end,
			  (unsigned long long)at);
	}
	sc_maps_free(v, n);
	sc_vmflags_free(&fz.vmflags);
	sc_vmflags_free(&fz.own_flags);
}
