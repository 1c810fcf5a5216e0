/* SPDX-License-Identifier: MIT */
/*
 * test_segment_vmflags.c - the memory flags a checkpoint gives each mapping
 * (segment_vmflags.c), on this very process standing in for its snapshot: a
 * mapping the process's own read before the stop lists has its flags at once,
 * and the snapshot's smaps agrees; one made after that read waits for the
 * snapshot's; and one whose settings changed after it gives the image up,
 * naming it, rather than record settings the instant did not have. A
 * mapping made MADV_DONTFORK or MADV_WIPEONFORK after the read, or locks
 * taken after it, are found from the instant and a real fork standing in for
 * the snapshot: the image would lack memory or locks, and is given up. The
 * settings a checkpoint vouched for stand in for the next one's read, unless
 * they hold a setting a fork loses or memory is locked; found changed, they
 * give the image up without a word and are never lent again.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

/*
 * Four pages between two inaccessible ones: a mapping that joins no
 * neighbour, whatever its settings (a hole could be mapped meanwhile).
 */
static char *map_isolated(int advice)
{
	char *p = mmap(NULL, 6 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);

	cr_assert_neq(p, MAP_FAILED);
	cr_assert_eq(mprotect(p, page, PROT_NONE), 0);
	cr_assert_eq(mprotect(p + 5 * page, page, PROT_NONE), 0);
	p += page;
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

/*
 * The instant, as the freeze reads it (the maps, VmLck), with its maps cut to
 * the lines of @v: the mappings this "snapshot" is given.
 */
static void freeze_as(struct sc_frozen *fz, const struct sc_vma *v, size_t n)
{
	struct sc_vmflags *t = &fz->vmflags;
	size_t len = 0;

	sc_vmflags_fork_whole(t);
	sc_vmflags_fork_back(t);
	cr_assert_gt(t->maps_len, 0, "the instant's maps were not read");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(t->maps + len, t->maps_size - len,
					"%llx-%llx rw-p 00000000 00:00 0\n",
					(unsigned long long)v[i].start, (unsigned long long)v[i].end);
	t->maps_len = (long)len;
}

static void start(struct run *t, const char *at)
{
	memset(&t->o, 0, sizeof(t->o));
	cr_assert_eq(sc_maps_read(0, &t->all, &t->n_all), 0);
	t->v[0] = *vma_at(t->all, t->n_all, at);
	t->n = 1;
	freeze_as(&t->fz, t->v, t->n);
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
 * The settings the last checkpoint vouched for, in place of the read before
 * the stop (vmflags_cache.c): a first checkpoint of the mapping at @p keeps
 * them, and the next is lent them. Return: what serving them gave (1: lent).
 */
static int lend_after_first(struct run *t, char *p)
{
	int served;

	read_own(&t->fz);
	start(t, p);
	cr_assert_eq(sc_segments_vmflags_end(&t->r), 0, "%s", selfckpt_last_error());
	finish(t);
	memset(&t->fz, 0, sizeof(t->fz));
	served = sc_vmflags_cache_serve(&t->fz.vmflags, &t->fz.own_flags);
	t->fz.settings_cached = served == 1;
	t->fz.child = getpid();
	return served;
}

Test(segment_vmflags, settings_the_last_checkpoint_vouched_for_stand_in_for_the_read)
{
	struct run t;
	char *p;

	page = sysconf(_SC_PAGESIZE);
	p = map_isolated(MADV_DONTDUMP);
	cr_assert_eq(lend_after_first(&t, p), 1, "the last checkpoint's settings were not lent");
	cr_assert_eq(t.fz.vmflags.n, 0, "a mapping is made to fork whole");
	cr_assert_eq(t.fz.vmflags.locked_kb, 0);
	start(&t, p);
	cr_assert(t.r.early[vma_at(t.v, t.n, p) - t.v], "the mapping is not known early");
	cr_assert(vma_at(t.v, t.n, p)->vmflags & SC_VMF_DONTDUMP);
	cr_assert_eq(sc_segments_vmflags_end(&t.r), 0, "%s", selfckpt_last_error());
	cr_assert(!sc_vmflags_cache_refuted());
	finish(&t);
	sc_vmflags_cache_forget();
}

Test(segment_vmflags, lent_settings_found_changed_give_the_image_up_and_are_never_lent_again)
{
	struct sc_vmflags out, all;
	struct run t;
	char *p;
	int err;

	page = sysconf(_SC_PAGESIZE);
	p = map_isolated(-1);
	cr_assert_eq(lend_after_first(&t, p), 1, "the last checkpoint's settings were not lent");
	/* a madvise() over the whole mapping since: nothing but smaps shows it */
	cr_assert_eq(madvise(p, 4 * page, MADV_DONTDUMP), 0);
	start(&t, p);
	err = sc_segments_vmflags_end(&t.r);
	cr_assert_eq(err, -EAGAIN, "the image was kept (%d)", err);
	cr_assert(strstr(selfckpt_last_error(), "changed while the snapshot was taken"),
		  "the refusal says: %s", selfckpt_last_error());
	cr_assert(sc_vmflags_cache_refuted(), "the checkpoint would not be taken again");
	finish(&t);
	cr_assert_eq(sc_vmflags_cache_serve(&out, &all), 0, "refuted settings were lent again");
	sc_vmflags_cache_forget();
}

/* Settings a fork loses, or memory locked now, are never lent: the checkpoint reads its own. */
Test(segment_vmflags, settings_a_fork_loses_and_locks_are_not_lent)
{
	struct sc_vmflags out, all;
	struct sc_vma *v, kept;
	size_t n;
	char *p;

	page = sysconf(_SC_PAGESIZE);
	p = map_isolated(-1);
	cr_assert_eq(sc_maps_read(0, &v, &n), 0);
	kept = *vma_at(v, n, p);
	kept.vmflags = SC_VMF_KNOWN | SC_VMF_MAYWRITE;
	sc_vmflags_cache_keep(&kept, 1);
	cr_assert_eq(sc_vmflags_cache_serve(&out, &all), 1, "plain settings were not lent");
	sc_vmflags_free(&out);
	sc_vmflags_free(&all);
	/* the system calls themselves: the sanitizers' mlock() does nothing */
	cr_assert_eq(syscall(SYS_mlock, p, page), 0);
	cr_assert_eq(sc_vmflags_cache_serve(&out, &all), 0, "settings were lent with memory locked");
	cr_assert_eq(syscall(SYS_munlock, p, page), 0);
	kept.vmflags |= SC_VMF_WIPEONFORK;
	sc_vmflags_cache_keep(&kept, 1);
	cr_assert_eq(sc_vmflags_cache_serve(&out, &all), 0,
		     "a MADV_WIPEONFORK mapping's settings were lent");
	sc_maps_free(v, n);
	sc_vmflags_cache_forget();
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

/*
 * A checkpoint of this process whose snapshot is a real fork, made after
 * @change ran between the read before the stop and the freeze: the refusal
 * of its settings' checks, or 0.
 */
static int checkpoint_by_fork(void (*change)(char *p), char *p)
{
	struct sc_frozen fz;
	struct sc_save_opts o = { 0 };
	struct sc_vmf_reader r;
	struct sc_vma *v;
	size_t n;
	pid_t pid;
	int err, status;

	read_own(&fz);
	if (change)
		change(p);
	sc_vmflags_fork_whole(&fz.vmflags); /* the instant */
	pid = fork();
	if (pid == 0)
		for (;;)
			pause();
	cr_assert_gt(pid, 0);
	sc_vmflags_fork_back(&fz.vmflags);
	fz.child = pid;
	cr_assert_eq(sc_maps_read(pid, &v, &n), 0);
	cr_assert_eq(sc_segments_vmflags_start(&r, &fz, &o, v, n), 0, "%s", selfckpt_last_error());
	for (size_t i = 0; i < n; i++)
		if (sc_vma_saved(&v[i]))
			(void)sc_segments_vmflags_wait(&r, &v[i]);
	err = sc_segments_vmflags_end(&r);
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	sc_maps_free(v, n);
	sc_vmflags_free(&fz.vmflags);
	sc_vmflags_free(&fz.own_flags);
	return err;
}

static void dontfork(char *p)
{
	cr_assert_eq(madvise(p, 4 * page, MADV_DONTFORK), 0);
}

static void wipeonfork(char *p)
{
	cr_assert_eq(madvise(p, 4 * page, MADV_WIPEONFORK), 0);
}

static void lock(char *p)
{
	/* the system call itself: the sanitizers' mlock() does nothing */
	cr_assert_eq(syscall(SYS_mlock, p, page), 0);
}

/* The refusal names @what and, where @p is not NULL, the mapping's address. */
static void assert_given_up(int err, const char *what, const char *p)
{
	char at[32];

	cr_assert_eq(err, -EAGAIN, "the image was kept (%d)", err);
	cr_assert(strstr(selfckpt_last_error(), what), "the refusal says: %s",
		  selfckpt_last_error());
	snprintf(at, sizeof(at), "0x%llx-", (unsigned long long)(uintptr_t)p);
	cr_assert(!p || strstr(selfckpt_last_error(), at), "the refusal does not name %s: %s", at,
		  selfckpt_last_error());
}

Test(segment_vmflags, a_fork_lost_setting_read_before_the_stop_is_no_refusal)
{
	char *p;

	page = sysconf(_SC_PAGESIZE);
	p = map_pages(MADV_DONTFORK);
	lock(p + 2 * page);
	cr_assert_eq(checkpoint_by_fork(NULL, p), 0, "%s", selfckpt_last_error());
}

Test(segment_vmflags, a_mapping_made_dontfork_after_the_read_is_missing_and_gives_the_image_up)
{
	char *p;

	page = sysconf(_SC_PAGESIZE);
	p = map_pages(-1);
	assert_given_up(checkpoint_by_fork(dontfork, p), "MADV_DONTFORK", p);
}

Test(segment_vmflags, a_mapping_made_wipeonfork_after_the_read_is_empty_and_gives_the_image_up)
{
	char *p;

	page = sysconf(_SC_PAGESIZE);
	p = map_pages(-1);
	assert_given_up(checkpoint_by_fork(wipeonfork, p), "MADV_WIPEONFORK", p);
}

Test(segment_vmflags, memory_locked_after_the_read_gives_the_image_up)
{
	char *p;

	page = sysconf(_SC_PAGESIZE);
	p = map_pages(-1);
	assert_given_up(checkpoint_by_fork(lock, p), "VmLck", NULL);
}
