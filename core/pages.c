/* SPDX-License-Identifier: MIT */
/*
 * pages.c - which pages of a range hold data, from /proc/<pid>/pagemap.
 *
 * The PAGEMAP_SCAN ioctl (Linux 6.7+) walks only the page tables that exist
 * and hands back ranges of pages with equal categories, so a 1 TiB sparse
 * reservation with three touched pages costs three ranges. Kernels without
 * it get the old interface: one 64-bit entry per page, read in big batches.
 * SELFCKPT_NO_PAGEMAP_SCAN=1 in the environment (read once per process)
 * forces the old interface; the tests use it to check that both agree.
 *
 * A walk of the page tables of 4 GiB of 4 KiB pages takes 20-50 ms on one
 * thread, and the snapshot's reader waits for it before it reads a page:
 * sc_pages_scan_pool() walks parts of a large range at once on the worker
 * pool (the snapshot is stopped: its tables do not change) and joins their
 * runs in order.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "compress/sc_compress.h"
#include "core/pagemap_scan.h"
#include "core/sc_core.h"
#include "core/sc_settings.h"
#include "format/sc_array.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"

/* Entries of the old interface (Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PRESENT (1ull << 63)
#define PM_SWAPPED (1ull << 62)
#define PM_FILE (1ull << 61) /* file page or shared anonymous page */
#define PM_GUARD_REGION (1ull << 58) /* Linux 6.15+ */

#define SCAN_VEC_LEN 4096        /* ranges per ioctl */
#define PAGEMAP_BATCH (64 * 1024) /* entries per read: 512 KiB */

struct run_buf {
	struct sc_page_run *v;
	size_t n, cap;
};

/* Appends pages [first, first + count) in @state, merging with the last run. */
static int runs_add(struct run_buf *b, uint64_t first, uint64_t count, enum sc_page_state state)
{
	struct sc_page_run *last = b->n ? &b->v[b->n - 1] : NULL;

	if (!count)
		return 0;
	if (last && last->state == state) {
		last->count += count;
		return 0;
	}
	if (sc_grow((void **)&b->v, &b->cap, b->n + 1, sizeof(*b->v)))
		return sc_err(ENOMEM, "out of memory listing page runs (%zu so far)", b->n);
	b->v[b->n++] = (struct sc_page_run){ .first = first, .count = count, .state = state };
	return 0;
}

static bool scan_disabled(void)
{
	return sc_settings()->no_pagemap_scan;
}

struct scan {
	int fd;
	const char *name;
	uint64_t start, end, page;
	struct run_buf runs;
};

/* Adds the ranges of one ioctl answer, up to @walk_end, after the pages up to *@cur. */
static int add_regions(struct scan *s, const struct sc_page_region *vec, long nr, uint64_t *cur,
		       uint64_t walk_end)
{
	enum sc_page_state st;
	int err;

	/*
	 * With its vector full, the kernel may report a last range that starts at
	 * walk_end or runs past it (seen on 6.18, under ASan's thousands of
	 * ranges): its pages are what the kernel found, so the walk reaches its end.
	 */
	if (nr > 0 && vec[nr - 1].end > walk_end && vec[nr - 1].start >= *cur &&
	    vec[nr - 1].end <= s->end && vec[nr - 1].end % s->page == 0)
		walk_end = vec[nr - 1].end;
	for (long i = 0; i < nr; i++) {
		if (vec[i].start < *cur || vec[i].end <= vec[i].start || vec[i].end > walk_end)
			return sc_err(EIO, "PAGEMAP_SCAN on '%s' returned range [0x%llx, 0x%llx) "
				      "outside the walk [0x%llx, 0x%llx)", s->name,
				      (unsigned long long)vec[i].start,
				      (unsigned long long)vec[i].end, (unsigned long long)*cur,
				      (unsigned long long)walk_end);
		st = vec[i].categories & SC_PAGE_IS_GUARD ? SC_PAGE_GUARD
		     : vec[i].categories & SC_PAGE_IS_FILE ? SC_PAGE_FILE : SC_PAGE_PRESENT;
		err = runs_add(&s->runs, (*cur - s->start) / s->page,
			       (vec[i].start - *cur) / s->page, SC_PAGE_ABSENT);
		if (!err)
			err = runs_add(&s->runs, (vec[i].start - s->start) / s->page,
				       (vec[i].end - vec[i].start) / s->page, st);
		if (err)
			return err;
		*cur = vec[i].end;
	}
	err = runs_add(&s->runs, (*cur - s->start) / s->page, (walk_end - *cur) / s->page,
		       SC_PAGE_ABSENT);
	*cur = walk_end;
	return err;
}

/*
 * Return: 0, 1 when the kernel has no PAGEMAP_SCAN (nothing added yet), or -errno.
 * The walk stops early when the vector fills up; it goes on from walk_end.
 */
static int scan_ioctl(struct scan *s, struct sc_page_region *vec)
{
	static uint64_t guard = SC_PAGE_IS_GUARD; /* 0 once the kernel refused it */
	uint64_t cur = s->start;
	struct sc_pm_scan_arg arg;
	long nr;
	int err;

	while (cur < s->end) {
		uint64_t g = __atomic_load_n(&guard, __ATOMIC_RELAXED);

		arg = (struct sc_pm_scan_arg){
			.size = sizeof(arg), .start = cur, .end = s->end,
			.vec = (uintptr_t)vec, .vec_len = SCAN_VEC_LEN,
			.category_anyof_mask = SC_PAGE_IS_PRESENT | SC_PAGE_IS_SWAPPED | g,
			.return_mask = SC_PAGE_IS_PRESENT | SC_PAGE_IS_SWAPPED | SC_PAGE_IS_FILE | g,
		};
		nr = ioctl(s->fd, SC_PAGEMAP_SCAN, &arg);
		if (nr < 0 && errno == EINTR)
			continue;
		if (nr < 0 && errno == EINVAL && g && cur == s->start) {
			__atomic_store_n(&guard, 0, __ATOMIC_RELAXED); /* before 6.15 */
			continue;
		}
		if (nr < 0 && (errno == ENOTTY || errno == EINVAL) && cur == s->start)
			return 1;
		if (nr < 0)
			return sc_err(errno, "PAGEMAP_SCAN on '%s' for [0x%llx, 0x%llx) failed: %s",
				      s->name, (unsigned long long)cur,
				      (unsigned long long)s->end, strerror(errno));
		if (arg.walk_end > s->end || arg.walk_end % s->page || (arg.walk_end <= cur && !nr))
			return sc_err(EIO, "PAGEMAP_SCAN on '%s' for [0x%llx, 0x%llx) stopped at "
				      "0x%llx with %ld ranges", s->name, (unsigned long long)cur,
				      (unsigned long long)s->end,
				      (unsigned long long)arg.walk_end, nr);
		err = add_regions(s, vec, nr, &cur, arg.walk_end);
		if (err)
			return err;
	}
	return 0;
}

/* Reads @count entries for the pages from @addr on, all of them or an error. */
static int read_entries(struct scan *s, uint64_t addr, uint64_t *buf, size_t count)
{
	size_t want = count * sizeof(*buf), got = 0;
	off_t off = (off_t)(addr / s->page * sizeof(*buf));
	ssize_t r;

	while (got < want) {
		r = pread(s->fd, (char *)buf + got, want - got, off + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return sc_err(errno, "cannot read '%s' at offset %lld (address 0x%llx): %s",
				      s->name, (long long)off + (long long)got,
				      (unsigned long long)addr, strerror(errno));
		if (r == 0)
			return sc_err(EIO, "'%s' ends at offset %lld, before address 0x%llx",
				      s->name, (long long)off + (long long)got,
				      (unsigned long long)(addr + got / sizeof(*buf) * s->page));
		got += (size_t)r;
	}
	return 0;
}

static enum sc_page_state entry_state(uint64_t e)
{
	if (e & PM_GUARD_REGION)
		return SC_PAGE_GUARD;
	if (!(e & (PM_PRESENT | PM_SWAPPED)))
		return SC_PAGE_ABSENT;
	return e & PM_FILE ? SC_PAGE_FILE : SC_PAGE_PRESENT;
}

/* The old interface: one entry per page, runs gathered locally before adding. */
static int scan_pagemap(struct scan *s, uint64_t *buf)
{
	uint64_t npages = (s->end - s->start) / s->page, idx = 0, run_first = 0;
	enum sc_page_state run_state = SC_PAGE_ABSENT, st;
	int err;

	while (idx < npages) {
		size_t cnt = npages - idx < PAGEMAP_BATCH ? npages - idx : PAGEMAP_BATCH;

		err = read_entries(s, s->start + idx * s->page, buf, cnt);
		if (err)
			return err;
		for (size_t i = 0; i < cnt; i++, idx++) {
			st = entry_state(buf[i]);
			if (st == run_state)
				continue;
			err = runs_add(&s->runs, run_first, idx - run_first, run_state);
			if (err)
				return err;
			run_first = idx;
			run_state = st;
		}
	}
	return runs_add(&s->runs, run_first, idx - run_first, run_state);
}

/* Runs the ioctl, or the old interface when the kernel lacks the ioctl. */
static int scan_fd(struct scan *s)
{
	size_t sz = SCAN_VEC_LEN * sizeof(struct sc_page_region);
	void *buf;
	int err = 1;

	if (sz < PAGEMAP_BATCH * sizeof(uint64_t))
		sz = PAGEMAP_BATCH * sizeof(uint64_t);
	buf = malloc(sz);
	if (!buf)
		return sc_err(ENOMEM, "out of memory scanning '%s'", s->name);
	if (!scan_disabled())
		err = scan_ioctl(s, buf);
	if (err == 1)
		err = scan_pagemap(s, buf);
	free(buf);
	return err;
}

int sc_pages_scan(pid_t pid, uint64_t start, uint64_t end, struct sc_page_run **runs,
		  size_t *n)
{
	struct scan s = { .start = start, .end = end, .page = (uint64_t)sysconf(_SC_PAGESIZE) };
	char name[64];
	int err;

	*runs = NULL;
	*n = 0;
	if (pid)
		snprintf(name, sizeof(name), "/proc/%d/pagemap", (int)pid);
	else
		snprintf(name, sizeof(name), "/proc/self/pagemap");
	s.name = name;
	if (end < start || start % s.page || end % s.page)
		return sc_err(EINVAL, "cannot scan '%s' range [0x%llx, 0x%llx): expected page-aligned "
			      "bounds (page size %llu), start <= end", name,
			      (unsigned long long)start, (unsigned long long)end,
			      (unsigned long long)s.page);
	if (start == end)
		return 0;
	s.fd = open(name, O_RDONLY | O_CLOEXEC);
	if (s.fd < 0) {
		err = errno;
		return sc_err(err, "cannot open '%s': %s", name, strerror(err));
	}
	err = scan_fd(&s);
	close(s.fd);
	if (err) {
		free(s.runs.v);
		return err;
	}
	*runs = s.runs.v;
	*n = s.runs.n;
	return 0;
}

#define PART_MIN (16ull << 20) /* smaller parts cost more in tasks than they save */
#define PARTS_MAX 16

struct scan_part {
	struct sc_task task;
	pid_t pid;
	uint64_t start, end;
	struct sc_page_run *runs;
	size_t n;
	int err;
	char msg[512]; /* the worker's message, said again on the caller's thread */
};

static void scan_part_run(struct sc_task *t)
{
	struct scan_part *p = (struct scan_part *)((char *)t - offsetof(struct scan_part, task));

	p->err = sc_pages_scan(p->pid, p->start, p->end, &p->runs, &p->n);
	if (p->err < 0)
		snprintf(p->msg, sizeof(p->msg), "%s", selfckpt_last_error());
}

/* How many parts [@start, @end) is walked in, on @pool. */
static unsigned parts_for(const struct sc_pool *pool, uint64_t start, uint64_t end)
{
	uint64_t by_size = (end - start) / PART_MIN;
	unsigned threads = sc_pool_threads(pool);

	if (threads > PARTS_MAX)
		threads = PARTS_MAX;
	return by_size < 2 ? 1 : by_size < threads ? (unsigned)by_size : threads;
}

/* The parts' runs, one after the other, as runs of the whole range; joined at the edges. */
static int join_parts(const struct scan_part *parts, unsigned k, uint64_t start, uint64_t ps,
		      struct run_buf *b)
{
	int err = 0;

	for (unsigned i = 0; i < k && !err; i++) {
		uint64_t base = (parts[i].start - start) / ps;

		for (size_t j = 0; j < parts[i].n && !err; j++)
			err = runs_add(b, base + parts[i].runs[j].first, parts[i].runs[j].count,
				       parts[i].runs[j].state);
	}
	return err;
}

int sc_pages_scan_pool(struct sc_pool *pool, pid_t pid, uint64_t start, uint64_t end,
		       struct sc_page_run **runs, size_t *n)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE), step;
	unsigned k = parts_for(pool, start, end);
	struct scan_part parts[PARTS_MAX];
	struct run_buf b = { 0 };
	int err = 0;

	if (k == 1 || start % ps || end % ps)
		return sc_pages_scan(pid, start, end, runs, n);
	step = ((end - start) / k + ps - 1) / ps * ps;
	for (unsigned i = 0; i < k; i++) {
		uint64_t a = start + i * step, e = i == k - 1 ? end : a + step;

		parts[i] = (struct scan_part){ .task.fn = scan_part_run, .pid = pid,
					       .start = a, .end = e };
		sc_pool_submit(pool, &parts[i].task);
	}
	for (unsigned i = 0; i < k; i++) {
		sc_pool_wait(pool, &parts[i].task);
		if (parts[i].err < 0 && !err)
			err = sc_err_quiet(-parts[i].err, "%s", parts[i].msg);
	}
	if (!err)
		err = join_parts(parts, k, start, ps, &b);
	for (unsigned i = 0; i < k; i++)
		free(parts[i].runs);
	if (err)
		free(b.v);
	*runs = err ? NULL : b.v;
	*n = err ? 0 : b.n;
	return err;
}
