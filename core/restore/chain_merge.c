/* SPDX-License-Identifier: MIT */
/*
 * chain_merge.c - [R-INC-8] one full image from an incremental image and its
 * chain (sc_merge.h).
 *
 * The image's records are copied in their order. A segment window that
 * leaves pages to the chain is written again in slices of at most
 * MERGE_SLICE bytes of address space: each slice is staged in memory of its
 * own, the chain writes its parent runs there exactly as it writes a
 * restored mapping (restore_chain.c), and the slice becomes one window whose
 * runs are the image's own, with each parent run made stored pages (or zero
 * runs, where the chain's page is all zero). The memory the merge needs is
 * one slice, whatever the size of the process.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/restore/restore_internal.h"
#include "core/restore/sc_merge.h"
#include "core/sc_core.h"
#include "format/sc_array.h"
#include "format/sc_log.h"

#define MERGE_SLICE (64ull << 20)
/* Less than any chunk, so that the writer copies what it is given (sc_writer_append()). */
#define COPY_STEP (64u << 10)

struct merge {
	const struct sc_merge_opts *o;
	const char *path;
	unsigned threads;
	uint64_t page;
	struct sc_chain chain;
	struct sc_reader *src; /* the image's records, in order */
	struct sc_writer *out;
	uint8_t *buf;          /* COPY_STEP bytes */
	struct sc_run *runs;   /* one slice's runs */
	size_t n_runs, cap_runs;
	uint8_t *zero;         /* one slice's pages: 1 where the chain gave a zero page */
	uint64_t chain_bytes;
};

/* The next @n payload bytes of the record @m->src reads, appended to the output. */
static int copy_payload(struct merge *m, uint64_t n)
{
	while (n) {
		size_t k = n < COPY_STEP ? (size_t)n : COPY_STEP;
		int err = sc_reader_read(m->src, m->buf, k);

		if (err < 0 || (err = sc_writer_append(m->out, m->buf, k)) < 0)
			return err;
		n -= k;
	}
	return 0;
}

/* @n bytes of memory at @p appended, in steps the writer copies: @p is reused after. */
static int append_copied(struct merge *m, const uint8_t *p, uint64_t n)
{
	while (n) {
		size_t k = n < COPY_STEP ? (size_t)n : COPY_STEP;
		int err = sc_writer_append(m->out, p, k);

		if (err < 0)
			return err;
		p += k;
		n -= k;
	}
	return 0;
}

static int copy_record(struct merge *m, const struct sc_record *rec)
{
	int err = sc_writer_begin(m->out, rec->type, rec->flags, rec->meta, rec->meta_len,
				  rec->raw_len);

	if (!err)
		err = copy_payload(m, rec->raw_len);
	return err < 0 ? err : sc_writer_end(m->out);
}

/* Add @count pages of @kind at page @first of the slice, joining the run before. */
static int push_run(struct merge *m, uint64_t first, uint64_t count, uint8_t kind)
{
	struct sc_run *last = m->n_runs ? &m->runs[m->n_runs - 1] : NULL;

	if (last && last->kind == kind && last->count + count <= UINT32_MAX) {
		last->count += (uint32_t)count;
		return 0;
	}
	if (sc_grow((void **)&m->runs, &m->cap_runs, m->n_runs + 1, sizeof(*m->runs)))
		return sc_err(ENOMEM, "out of memory merging '%s'", m->path);
	m->runs[m->n_runs++] = (struct sc_run){ first, (uint32_t)count, kind };
	return 0;
}

/* The part of run @r of @s inside [@at, @end): 0 where there is none. */
static uint64_t run_part(const struct merge *m, const struct sc_segment_info *s,
			 const struct sc_run *r, uint64_t at, uint64_t end, uint64_t *from)
{
	uint64_t rs = s->start + r->first * m->page, re = rs + (uint64_t)r->count * m->page;
	uint64_t to = re < end ? re : end;

	*from = rs > at ? rs : at;
	return to > *from ? to - *from : 0;
}

/* The chain writes the parent runs of @s inside [@at, @end) over @stage. */
static int stage_from_chain(struct merge *m, const struct sc_segment_info *s, uint64_t at,
			    uint64_t end, uint8_t *stage)
{
	int err = sc_chain_stage(&m->chain, at, end, stage);

	for (uint32_t i = 0; i < s->n_runs && !err; i++) {
		uint64_t from, len = run_part(m, s, &s->runs[i], at, end, &from);

		if (len && s->runs[i].kind == SC_RUN_PARENT) {
			err = sc_chain_ask(&m->chain, from, len);
			m->chain_bytes += len;
		}
	}
	return err ? err : sc_chain_give(&m->chain, m->path, m->threads);
}

/*
 * The runs of the slice [@at, @end): the image's own, its parent runs made
 * stored or zero (each page's verdict kept in @m->zero for the payload).
 */
static int slice_runs(struct merge *m, const struct sc_segment_info *s, uint64_t at, uint64_t end,
		      const uint8_t *stage)
{
	int err = 0;

	m->n_runs = 0;
	for (uint32_t i = 0; i < s->n_runs && !err; i++) {
		const struct sc_run *r = &s->runs[i];
		uint64_t from, len = run_part(m, s, r, at, end, &from);

		if (!len)
			continue;
		if (r->kind != SC_RUN_PARENT) {
			err = push_run(m, (from - at) / m->page, len / m->page, r->kind);
			continue;
		}
		for (uint64_t p = from; p < from + len && !err; p += m->page) {
			uint64_t k = (p - at) / m->page;

			m->zero[k] = sc_page_is_zero(stage + (p - at), m->page);
			err = push_run(m, k, 1, m->zero[k] ? SC_RUN_ZERO : SC_RUN_STORED);
		}
	}
	return err;
}

/*
 * The slice's payload, in address order: the image's own stored pages from
 * its record (read in order across the slices of its window), the chain's
 * from the stage, where they are not all zero.
 */
static int slice_payload(struct merge *m, const struct sc_segment_info *s, uint64_t at,
			 uint64_t end, const uint8_t *stage)
{
	int err = 0;

	for (uint32_t i = 0; i < s->n_runs && !err; i++) {
		const struct sc_run *r = &s->runs[i];
		uint64_t from, len = run_part(m, s, r, at, end, &from);

		if (!len || (r->kind != SC_RUN_STORED && r->kind != SC_RUN_PARENT))
			continue;
		if (r->kind == SC_RUN_STORED) {
			err = copy_payload(m, len);
			continue;
		}
		for (uint64_t p = from; p < from + len && !err; p += m->page)
			if (!m->zero[(p - at) / m->page])
				err = append_copied(m, stage + (p - at), m->page);
	}
	return err;
}

static bool has_parent_run(const struct merge *m, const struct sc_segment_info *s, uint64_t at,
			   uint64_t end)
{
	for (uint32_t i = 0; i < s->n_runs; i++) {
		uint64_t from;

		if (s->runs[i].kind == SC_RUN_PARENT && run_part(m, s, &s->runs[i], at, end, &from))
			return true;
	}
	return false;
}

static int merge_slice(struct merge *m, const struct sc_segment_info *s, uint64_t at,
		       uint64_t end)
{
	struct sc_segment_info slice = *s;
	uint8_t *stage = NULL;
	int err = 0;

	if (has_parent_run(m, s, at, end)) {
		stage = mmap(NULL, end - at, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (stage == MAP_FAILED)
			return sc_err(errno, "cannot map %llu bytes to merge '%s': %s",
				      (unsigned long long)(end - at), m->path, strerror(errno));
		err = stage_from_chain(m, s, at, end, stage);
	}
	if (!err)
		err = slice_runs(m, s, at, end, stage);
	if (!err) {
		slice.start = at;
		slice.length = end - at;
		slice.offset = s->offset + (at - s->start);
		slice.runs = m->runs;
		slice.n_runs = (uint32_t)m->n_runs;
		err = sc_segment_begin(m->out, &slice, m->page);
	}
	if (!err)
		err = slice_payload(m, s, at, end, stage);
	if (!err)
		err = sc_writer_end(m->out);
	if (stage)
		munmap(stage, end - at);
	return err;
}

static int merge_segment(struct merge *m, const struct sc_record *rec)
{
	struct sc_segment_info s;
	bool parent = false;
	int err = sc_segment_read(m->src, rec, m->page, &s);

	if (err < 0)
		return err;
	for (uint32_t i = 0; i < s.n_runs; i++)
		parent |= s.runs[i].kind == SC_RUN_PARENT;
	if (!parent)
		err = copy_record(m, rec);
	else
		for (uint64_t at = s.start, end = s.start + s.length; at < end && !err;
		     at += MERGE_SLICE)
			err = merge_slice(m, &s, at,
					  end - at > MERGE_SLICE ? at + MERGE_SLICE : end);
	sc_segment_free(&s);
	return err;
}

static int merge_records(struct merge *m)
{
	struct sc_record rec;
	int err;

	while ((err = sc_reader_next(m->src, &rec)) > 0) {
		if (rec.type == SC_REC_PARENT)
			continue;
		if (rec.type == SC_REC_SEGMENT)
			err = merge_segment(m, &rec);
		else if (!m->o->take || (err = m->o->take(m->o->take_arg, m->src, &rec, m->out)) == 0)
			err = copy_record(m, &rec);
		if (err < 0)
			return err;
	}
	return err;
}

static bool same_file(int fd, const struct stat *st)
{
	struct stat f;

	return fstat(fd, &f) == 0 && f.st_dev == st->st_dev && f.st_ino == st->st_ino;
}

/* An output that is one of the image's parents would break the images that name it. */
static int check_output(const struct merge *m, const char *output)
{
	struct stat st;

	if (stat(output, &st) < 0)
		return 0;
	for (size_t i = 0; i < m->chain.n; i++)
		if (m->chain.fd[i] >= 0 && same_file(m->chain.fd[i], &st))
			return sc_err(SELFCKPT_EUSAGE, "'%s' is a parent in the chain of '%s': "
				      "a merge into it would take it from the images that "
				      "need it; nothing was written", output, m->path);
	return 0;
}

static int write_merged(struct merge *m, int fd, const char *output, const struct sc_merge_opts *o,
			struct sc_merge_stats *st)
{
	struct sc_read_opts ro = { .flags = SC_RD_ALL_RECORDS, .threads = o->threads };
	struct sc_write_opts wo;
	struct sc_atomic_file af;
	const struct sc_header *h;
	int err = sc_reader_open_fd(&m->src, fd, m->path, &ro);

	if (err < 0)
		return err;
	h = sc_reader_header(m->src);
	sc_write_opts_init(&wo);
	wo.level = o->level;
	wo.threads = o->threads;
	wo.created_ns = h->created_ns; /* the instant the image holds */
	wo.kernel = h->kernel;         /* where it was taken; the producer is this program */
	if ((err = sc_atomic_open(&af, output)) < 0)
		return err; /* reported */
	if ((err = sc_writer_new(&m->out, af.fd, output, &wo)) == 0 &&
	    (err = merge_records(m)) == 0 && (err = sc_writer_finish(m->out)) == 0) {
		st->written = sc_writer_bytes(m->out);
		return sc_atomic_commit(&af); /* reported */
	}
	sc_atomic_abort(&af);
	return err;
}

int sc_merge(const struct sc_merge_opts *o, struct sc_merge_stats *st)
{
	struct merge m = { .o = o, .path = o->path, .threads = o->threads };
	/* in place: the file a link (selfckpt-run's "latest") leads to, not the link */
	char *real = o->output ? NULL : realpath(o->path, NULL);
	const char *output = o->output ? o->output : real ? real : o->path;
	struct image im = { 0 };
	int fd = -1, err;

	memset(st, 0, sizeof(*st));
	if (!strcmp(o->path, "-"))
		err = sc_err(SELFCKPT_EUSAGE, "a merge reads an image file, not standard input");
	else
		err = sc_image_open(o->path, &fd);
	if (err < 0) {
		free(real);
		return err;
	}
	m.chain.undone = "nothing was written";
	if ((err = sc_chain_open(o->path, fd, &m.chain)) == 0 &&
	    (err = sc_image_load_fd(&im, fd, o->path)) == 0 &&
	    (err = sc_chain_load(&m.chain, o->path)) == 0 && (err = check_output(&m, output)) == 0) {
		m.page = im.page;
		st->images = (unsigned)m.chain.n + 1;
		if (!m.chain.n && !o->output)
			; /* a full image already: left as it is, nothing written */
		else if (!(m.buf = malloc(COPY_STEP)) || !(m.zero = malloc(MERGE_SLICE / m.page)))
			err = sc_err(ENOMEM, "out of memory merging '%s'", o->path);
		else
			err = write_merged(&m, fd, output, o, st);
	}
	st->chain_bytes = m.chain_bytes;
	sc_writer_free(m.out);
	sc_reader_free(m.src);
	free(m.buf);
	free(m.zero);
	free(m.runs);
	sc_image_release(&im);
	sc_chain_release(&m.chain);
	if (fd >= 0)
		close(fd);
	free(real);
	return err;
}
