/* SPDX-License-Identifier: MIT */
/*
 * segments.c - the memory of the snapshot, as segment records.
 *
 * Each mapping is written in windows of at most WINDOW bytes, each one record:
 * the window's pages that hold data are read from the snapshot into a buffer,
 * all-zero pages are found there, and the record's run table (stored, zero,
 * file) is known before its first payload byte, as the format requires. Pages
 * never touched cost nothing: residency comes from the page tables.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/checkpoint_internal.h"
#include "core/sc_core.h"
#include "format/sc_log.h"

#define WINDOW (64ull << 20)

struct window {
	const struct sc_vma *vma;
	uint64_t start, end;
	uint8_t *buf;            /* WINDOW bytes: the window's pages, at their offsets */
	uint8_t *state;          /* per page: enum sc_run_kind, or 0xff to read */
	struct sc_run *runs;
	uint32_t n_runs;
};

enum { TO_READ = 0xff };

static uint64_t page_size(void)
{
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Which mappings an image holds: kernel-provided and device mappings are not. */
static bool vma_saved(const struct sc_vma *v)
{
	switch (v->kind) {
	case SC_VMA_VDSO:
	case SC_VMA_VVAR:
	case SC_VMA_VVAR_VCLOCK:
	case SC_VMA_VSYSCALL:
	case SC_VMA_DEVICE:
		return false;
	case SC_VMA_SPECIAL:
		sc_log(SC_LOG_WARN, "mapping %s at 0x%llx is not saved", v->path,
		       (unsigned long long)v->start);
		return false;
	default:
		return true;
	}
}

/* What a page in a given residency state becomes in the image. */
static uint8_t classify(const struct sc_vma *v, enum sc_page_state st, bool embed)
{
	bool shared = v->flags & SC_VMA_SHARED;

	switch (v->kind) {
	case SC_VMA_FILE:
		if (shared)
			return SC_RUN_FILE; /* the file holds the data */
		if (st == SC_PAGE_PRESENT || embed)
			return TO_READ;
		return SC_RUN_FILE;
	case SC_VMA_DELETED:
		return TO_READ; /* the file is gone: every page is data */
	default:
		if (shared)
			return TO_READ; /* shared memory: another process may have written it */
		return st == SC_PAGE_ABSENT ? SC_RUN_ZERO : TO_READ;
	}
}

static int classify_window(struct window *w, pid_t child, bool embed)
{
	uint64_t ps = page_size();
	struct sc_page_run *pr;
	size_t n;
	int err = sc_pages_scan(child, w->start, w->end, &pr, &n);

	if (err < 0)
		return err;
	for (size_t i = 0; i < n; i++)
		for (uint64_t p = pr[i].first; p < pr[i].first + pr[i].count; p++)
			w->state[p] = classify(w->vma, pr[i].state, embed);
	free(pr);
	(void)ps;
	return 0;
}

/* Read every page marked TO_READ, a contiguous range at a time, then sort out zeros. */
static int read_window(struct window *w, pid_t child)
{
	uint64_t ps = page_size(), pages = (w->end - w->start) / ps;

	for (uint64_t p = 0; p < pages;) {
		uint64_t q = p;
		int err;

		if (w->state[p] != TO_READ) {
			p++;
			continue;
		}
		while (q < pages && w->state[q] == TO_READ)
			q++;
		err = sc_snapshot_read(child, w->buf + p * ps, w->start + p * ps, (q - p) * ps);
		if (err < 0)
			return err;
		for (; p < q; p++)
			w->state[p] = sc_page_is_zero(w->buf + p * ps, ps) ? SC_RUN_ZERO
									    : SC_RUN_STORED;
	}
	return 0;
}

static int build_runs(struct window *w)
{
	uint64_t pages = (w->end - w->start) / page_size();

	w->n_runs = 0;
	for (uint64_t p = 0; p < pages; p++) {
		if (w->n_runs && w->runs[w->n_runs - 1].kind == w->state[p] &&
		    w->runs[w->n_runs - 1].count < UINT32_MAX) {
			w->runs[w->n_runs - 1].count++;
			continue;
		}
		w->runs[w->n_runs++] = (struct sc_run){ .first = p, .count = 1,
							.kind = w->state[p] };
	}
	return 0;
}

static void fill_identity(const struct sc_vma *v, struct sc_segment_info *s)
{
	struct stat st;

	s->dev = v->dev;
	s->inode = v->inode;
	if (v->kind == SC_VMA_FILE && stat(v->path, &st) == 0) {
		s->file_size = (uint64_t)st.st_size;
		s->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
			      (uint64_t)st.st_mtim.tv_nsec;
	}
}

static uint32_t segment_flags(const struct sc_vma *v, bool embed)
{
	uint32_t f = 0;

	if (v->flags & SC_VMA_SHARED)
		f |= SC_SEG_SHARED;
	if (v->kind == SC_VMA_FILE)
		f |= SC_SEG_FILE | (embed ? SC_SEG_EMBEDDED : 0);
	if (v->kind == SC_VMA_STACK)
		f |= SC_SEG_STACK | SC_SEG_GROWSDOWN;
	if (v->kind == SC_VMA_HEAP)
		f |= SC_SEG_HEAP;
	return f;
}

static int write_window(struct sc_writer *wr, struct window *w, bool embed)
{
	uint64_t ps = page_size();
	struct sc_segment_info s = {
		.start = w->start, .length = w->end - w->start, .vma_start = w->vma->start,
		.vma_end = w->vma->end, .prot = w->vma->prot, .flags = segment_flags(w->vma, embed),
		.offset = w->vma->offset + (w->start - w->vma->start), .runs = w->runs,
		.n_runs = w->n_runs, .path = w->vma->path,
	};
	int err;

	fill_identity(w->vma, &s);
	err = sc_segment_begin(wr, &s, ps);
	for (uint32_t i = 0; !err && i < w->n_runs; i++)
		if (w->runs[i].kind == SC_RUN_STORED)
			err = sc_writer_append(wr, w->buf + w->runs[i].first * ps,
					       w->runs[i].count * ps);
	return err ? err : sc_writer_end(wr);
}

static int write_vma(struct sc_writer *wr, const struct sc_vma *v, struct window *w,
		     pid_t child, bool embed)
{
	for (uint64_t at = v->start; at < v->end; at += WINDOW) {
		int err;

		w->vma = v;
		w->start = at;
		w->end = v->end - at > WINDOW ? at + WINDOW : v->end;
		memset(w->state, 0, WINDOW / page_size());
		if ((err = classify_window(w, child, embed)) < 0 ||
		    (err = read_window(w, child)) < 0 || (err = build_runs(w)) < 0 ||
		    (err = write_window(wr, w, embed)) < 0)
			return err;
	}
	return 0;
}

int sc_segments_write(struct sc_writer *wr, const struct sc_frozen *fz,
		      const struct sc_save_opts *o)
{
	uint64_t pages = WINDOW / page_size();
	struct window w = { 0 };
	struct sc_vma *v;
	size_t n;
	int err = sc_maps_read(fz->child, &v, &n);

	if (err < 0)
		return err;
	w.buf = mmap(NULL, WINDOW, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	w.state = malloc(pages);
	w.runs = malloc(pages * sizeof(*w.runs));
	if (w.buf == MAP_FAILED || !w.state || !w.runs)
		err = sc_err(ENOMEM, "out of memory for a %llu MiB window",
			     (unsigned long long)(WINDOW >> 20));
	for (size_t i = 0; !err && i < n; i++)
		if (vma_saved(&v[i]))
			err = write_vma(wr, &v[i], &w, fz->child, o->embed_files);
	if (w.buf != MAP_FAILED)
		munmap(w.buf, WINDOW);
	free(w.state);
	free(w.runs);
	sc_maps_free(v, n);
	return err;
}
