/* SPDX-License-Identifier: MIT */
/*
 * pages_pool.c - the residency of a large range (sc_pages_scan()) found in
 * parts on the worker pool. A walk of the page tables of 4 GiB of 4 KiB pages
 * takes 20-50 ms on one thread; the snapshot's reader waits for it before it
 * reads a page, and the image's writer waits for the reader. Parts of a
 * range are walked at once (the snapshot is stopped: its tables do not
 * change), and their runs joined in order.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compress/sc_compress.h"
#include "core/sc_core.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"

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
	unsigned threads = pool ? sc_pool_threads(pool) : 1;

	if (threads > PARTS_MAX)
		threads = PARTS_MAX;
	return by_size < 2 ? 1 : by_size < threads ? (unsigned)by_size : threads;
}

/* The parts' runs, one after the other, as runs of the whole range (from @start). */
static int join_parts(struct scan_part *parts, unsigned k, uint64_t start,
		      struct sc_page_run **runs, size_t *n)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
	size_t total = 0, m = 0;
	struct sc_page_run *out;

	for (unsigned i = 0; i < k; i++)
		total += parts[i].n;
	out = malloc((total ? total : 1) * sizeof(*out));
	if (!out)
		return sc_err(ENOMEM, "out of memory listing page runs (%zu)", total);
	for (unsigned i = 0; i < k; i++) {
		uint64_t base = (parts[i].start - start) / ps;

		for (size_t j = 0; j < parts[i].n; j++) {
			struct sc_page_run r = parts[i].runs[j];

			r.first += base;
			if (m && out[m - 1].state == r.state) /* runs at a part's edge join */
				out[m - 1].count += r.count;
			else
				out[m++] = r;
		}
	}
	*runs = out;
	*n = m;
	return 0;
}

int sc_pages_scan_pool(struct sc_pool *pool, pid_t pid, uint64_t start, uint64_t end,
		       struct sc_page_run **runs, size_t *n)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE), step;
	unsigned k = parts_for(pool, start, end);
	struct scan_part parts[PARTS_MAX];
	int err = 0;

	if (k == 1 || start % ps || end % ps)
		return sc_pages_scan(pid, start, end, runs, n);
	step = ((end - start) / k + ps - 1) / ps * ps;
	for (unsigned i = 0; i < k; i++) {
		uint64_t a = start + i * step, b = i == k - 1 ? end : a + step;

		parts[i] = (struct scan_part){ .task.fn = scan_part_run, .pid = pid,
					       .start = a, .end = b };
		sc_pool_submit(pool, &parts[i].task);
	}
	for (unsigned i = 0; i < k; i++) {
		sc_pool_wait(pool, &parts[i].task);
		if (parts[i].err < 0 && !err)
			err = sc_err_quiet(-parts[i].err, "%s", parts[i].msg);
	}
	*runs = NULL;
	*n = 0;
	if (!err)
		err = join_parts(parts, k, start, runs, n);
	for (unsigned i = 0; i < k; i++)
		free(parts[i].runs);
	return err;
}
