/* SPDX-License-Identifier: MIT */
/*
 * devmem_parents.c - the device memory an incremental image leaves to its
 * parents, for the restore's check and the merge (sc_devmem_parents.h).
 *
 * A restart reads a parent piece's bytes from the parent that stores them,
 * in the GPU proxy, once the process is back: too late to refuse the image
 * cleanly. So before anything changes the restore follows every parent piece
 * to its record, and reads those records, every chunk checked against its
 * checksum, on all the restore's threads (R-INC-4).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/tools/sc_devmem_parents.h"
#include "format/sc_array.h"
#include "format/sc_format.h"
#include "format/sc_log.h"

#define COPY_STEP (64u << 10) /* less than any chunk: the writer copies what it is given */
#define CHECK_STEP (64u << 20)

static int open_image(struct sc_reader **r, const char *path, int fd, unsigned threads)
{
	struct sc_read_opts ro = { .threads = threads };

	return fd >= 0 ? sc_reader_open_fd(r, fd, path, &ro) : sc_reader_open(r, path, &ro);
}

/* The records of the chain a restart reads for parent pieces: one per image, sorted, no repeats. */
struct used {
	size_t *index[SC_CHAIN_MAX + 1];
	size_t n[SC_CHAIN_MAX + 1], cap[SC_CHAIN_MAX + 1];
};

static void used_free(struct used *u)
{
	for (size_t l = 0; l <= SC_CHAIN_MAX; l++)
		free(u->index[l]);
}

static int index_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* Each parent piece of the image @r reads followed to the record that stores it, into @u. */
static int follow_pieces(struct sc_reader *r, const char *path, struct sc_devmem_chain *c,
			 struct used *u)
{
	const struct sc_index_entry *e;
	size_t n;
	int err = sc_reader_index(r, &e, &n);

	if (!err)
		err = sc_devmem_chain_open(c, path);
	for (size_t i = 0; !err && i < n; i++) {
		struct sc_devmem_source src;

		if (e[i].type != SC_REC_DEVMEM || (err = sc_devmem_chain_source(c, r, i, &src)) <= 0)
			continue;
		err = 0;
		if (sc_grow((void **)&u->index[src.level], &u->cap[src.level], u->n[src.level] + 1,
			    sizeof(size_t)))
			err = sc_err(ENOMEM, "out of memory checking the chain of '%s'", path);
		else
			u->index[src.level][u->n[src.level]++] = src.index;
	}
	return err < 0 ? err : 0;
}

/*
 * Read the records of the image at @level that a restart reads, so that every
 * chunk's checksum is checked (R-INC-4), the chunks decoded on @threads
 * threads; in file order, each once.
 */
static int check_records(const struct sc_devmem_chain *c, size_t level, size_t *idx, size_t n,
			 unsigned threads)
{
	struct sc_reader *r = NULL;
	struct sc_record rec;
	uint8_t *buf = malloc(CHECK_STEP);
	int err = buf ? open_image(&r, c->path[level], -1, threads) :
			sc_err(ENOMEM, "out of memory checking '%s'", c->path[level]);

	qsort(idx, n, sizeof(*idx), index_cmp);
	for (size_t i = 0; !err && i < n; i++) {
		if (i && idx[i] == idx[i - 1])
			continue;
		if ((err = sc_reader_seek(r, idx[i])) < 0 || (err = sc_reader_next(r, &rec)) < 0)
			break;
		err = 0; /* sc_reader_next(): 1, a record */
		for (uint64_t left = rec.raw_len; !err && left;) {
			size_t k = left < CHECK_STEP ? (size_t)left : CHECK_STEP;

			err = sc_reader_read(r, buf, k);
			left -= k;
		}
	}
	sc_reader_free(r);
	free(buf);
	if (err < 0) /* the reader said why */
		return sc_err(-err, "'%s' holds device memory that '%s' leaves to it, and cannot be "
			      "used; nothing was restored", c->path[level], c->path[0]);
	return 0;
}

int sc_devmem_parents_check(const char *path, int fd, unsigned threads)
{
	struct sc_devmem_chain c = { 0 };
	struct sc_reader *r = NULL;
	struct used u = { 0 };
	int err = open_image(&r, path, fd, 1);

	if (!err && (sc_reader_header(r)->flags & SC_HF_INCREMENTAL) && sc_reader_seekable(r))
		err = follow_pieces(r, path, &c, &u);
	sc_reader_free(r);
	for (size_t l = 1; !err && l < c.n; l++)
		if (u.n[l])
			err = check_records(&c, l, u.index[l], u.n[l], threads);
	used_free(&u);
	sc_devmem_chain_free(&c);
	return err;
}

/* ---- the merge ---- */

/* @n payload bytes from @r to the record @out is writing. */
static int copy_bytes(struct sc_devmem_merge *m, struct sc_reader *r, struct sc_writer *out,
		      uint64_t n)
{
	if (!m->buf && !(m->buf = malloc(COPY_STEP)))
		return sc_err(ENOMEM, "out of memory merging '%s'", m->path);
	while (n) {
		size_t k = n < COPY_STEP ? (size_t)n : COPY_STEP;
		int err = sc_reader_read(r, m->buf, k);

		if (err < 0 || (err = sc_writer_append(out, m->buf, k)) < 0)
			return err;
		n -= k;
	}
	return 0;
}

/* The reader of the record that stores the bytes of parent piece @d, at that record. */
static int source_of(struct sc_devmem_merge *m, const struct sc_devmem *d, struct sc_reader **r)
{
	struct sc_devmem_source src;
	struct sc_record rec;
	int err;

	if (!m->chain.n && (err = sc_devmem_chain_open(&m->chain, m->path)) < 0)
		return err;
	if ((err = sc_devmem_chain_find(&m->chain, 0, d, &src)) < 0)
		return err;
	if (!m->r[src.level] &&
	    (err = open_image(&m->r[src.level], m->chain.path[src.level], -1, m->threads)) < 0)
		return err;
	*r = m->r[src.level];
	if ((err = sc_reader_seek(*r, src.index)) < 0 || (err = sc_reader_next(*r, &rec)) < 0)
		return err;
	return rec.raw_len == d->len ? 0 : sc_err(SELFCKPT_EPARENT, "'%s' stores %llu bytes "
						   "where '%s' leaves %llu to it",
						   m->chain.path[src.level],
						   (unsigned long long)rec.raw_len, m->path,
						   (unsigned long long)d->len);
}

int sc_devmem_merge_record(struct sc_devmem_merge *m, struct sc_reader *src,
			   const struct sc_record *rec, struct sc_writer *out)
{
	bool incremental = sc_reader_header(src)->flags & SC_HF_INCREMENTAL;
	uint8_t meta[SC_DEVMEM_META_WIDE];
	struct sc_reader *from = src;
	struct sc_devmem d;
	int err = sc_devmem_read(rec, incremental, &d);

	if (err < 0)
		return sc_err(-err, "devmem record %u of '%s' has damaged metadata: %s", rec->seq,
			      m->path, selfckpt_strerror(err));
	if ((d.flags & SC_DEVMEM_PARENT) && (err = source_of(m, &d, &from)) < 0)
		return err;
	if (from != src)
		m->chain_bytes += d.len;
	d.flags = 0;
	err = sc_writer_begin(out, rec->type, rec->flags, meta, sc_devmem_encode(meta, &d, false),
			      d.len);
	if (!err)
		err = copy_bytes(m, from, out, d.len);
	return err < 0 ? err : sc_writer_end(out);
}

void sc_devmem_merge_free(struct sc_devmem_merge *m)
{
	for (size_t l = 0; l <= SC_CHAIN_MAX; l++)
		sc_reader_free(m->r[l]);
	sc_devmem_chain_free(&m->chain);
	free(m->buf);
	memset(m, 0, sizeof(*m));
}
