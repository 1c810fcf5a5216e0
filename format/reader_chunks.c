/* SPDX-License-Identifier: MIT */
/*
 * reader_chunks.c - payload bytes: chunk headers are read and checked on this
 * thread, and the pool decodes and hashes the chunks while this thread goes
 * on to the next one. The stored bytes of a seekable image are read by the
 * pool too, each chunk at its own offset, so that copying them out of the page
 * cache (and faulting in the memory they land in, when it is a restored
 * process's) happens on every core; a stream is read here, in order.
 *
 * A read names its destination as pieces (one, for a plain read). A chunk that
 * falls inside one piece is decoded straight into it; one that spans pieces is
 * decoded into its slot's buffer and copied out to them by the same task once
 * its checksum matched, so spreading a segment of many runs costs every core
 * a copy from cache rather than one thread a copy from memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "format/reader_internal.h"
#include "format/sc_array.h"
#include "format/sc_log.h"

struct chunk_hdr {
	uint64_t index, offset, hash;
	uint32_t stored_len, raw_len;
	uint8_t codec;
};

int sc_rd_chunks_init(struct sc_reader *r)
{
	r->n_slots = 2 * sc_pool_threads(r->pool) + 1;
	r->head = r->count = 0;
	r->slots = calloc(r->n_slots, sizeof(*r->slots));
	if (!r->slots)
		return sc_err(ENOMEM, "out of memory reading '%s'", r->name);
	return 0;
}

static void wait_all(struct sc_reader *r)
{
	for (; r->count; r->count--, r->head = (r->head + 1) % r->n_slots)
		if (r->slots[r->head].busy) {
			sc_pool_wait(r->pool, &r->slots[r->head].task);
			r->slots[r->head].busy = false;
		}
}

void sc_rd_chunks_release(struct sc_reader *r)
{
	if (!r->slots)
		return;
	wait_all(r);
	for (unsigned i = 0; i < r->n_slots; i++) {
		free(r->slots[i].sbuf);
		free(r->slots[i].rbuf);
	}
	free(r->slots);
	r->slots = NULL;
}

/* ---- chunk headers ---- */

static int check_chunk_lengths(struct sc_reader *r, const struct chunk_hdr *c)
{
	char where[64];
	bool ok = c->codec == SC_CODEC_RAW
			  ? c->stored_len == c->raw_len
			  : c->stored_len < c->raw_len &&
				    c->raw_len <= (uint64_t)c->stored_len * SC_ZSTD_MAX_RATIO;

	if (ok && (!r->seekable || c->stored_len <= r->rec_end - r->pos))
		return 0;
	return sc_err(SELFCKPT_ELENGTH,
		      "chunk %llu of %s in '%s' at offset %llu stores %u bytes for %u raw bytes "
		      "(codec %u)%s", (unsigned long long)c->index, sc_rd_where(r, where), r->name,
		      (unsigned long long)c->offset, c->stored_len, c->raw_len, c->codec,
		      ok ? ", past the end of the record" : "");
}

static int read_chunk_header(struct sc_reader *r, struct chunk_hdr *c)
{
	uint8_t b[SC_CHUNK_HEADER_SIZE];
	char where[64];
	int err;

	c->index = r->chunk_next;
	c->offset = r->pos;
	c->raw_len = sc_chunk_raw_len(r->rec.raw_len, r->rec.chunk_shift, c->index);
	if (r->seekable && r->rec_end - r->pos < sizeof(b))
		return sc_err(SELFCKPT_ELENGTH,
			      "chunk %llu of %s in '%s' at offset %llu lies past the end of the "
			      "record", (unsigned long long)c->index, sc_rd_where(r, where),
			      r->name, (unsigned long long)c->offset);
	if ((err = sc_rd_read(r, b, sizeof(b), "a chunk header")) < 0)
		return err;
	c->stored_len = sc_get_le32(b);
	c->codec = b[4];
	c->hash = sc_get_le64(b + 8);
	if (b[5] | b[6] | b[7])
		return sc_err(SELFCKPT_ERESERVED,
			      "chunk %llu of %s in '%s' at offset %llu has reserved bytes set",
			      (unsigned long long)c->index, sc_rd_where(r, where), r->name,
			      (unsigned long long)c->offset);
	if (c->codec > SC_CODEC_ZSTD)
		return sc_err(SELFCKPT_ECODEC,
			      "chunk %llu of %s in '%s' at offset %llu uses unknown codec %u",
			      (unsigned long long)c->index, sc_rd_where(r, where), r->name,
			      (unsigned long long)c->offset, c->codec);
	r->chunk_next++;
	return check_chunk_lengths(r, c);
}

/* ---- where the bytes go ---- */

/* Step over pieces that are full (or empty), so that p[i] takes the next byte. */
static void scatter_settle(struct rd_scatter *d)
{
	while (d->i < d->n && d->off == d->p[d->i].len) {
		d->i++;
		d->off = 0;
	}
}

/* Where the next @len bytes go when they all fall in one piece, else NULL. */
static uint8_t *scatter_contiguous(const struct rd_scatter *d, uint64_t len)
{
	if (d->i == d->n || d->p[d->i].len - d->off < len || !d->p[d->i].dst)
		return NULL;
	return (uint8_t *)d->p[d->i].dst + d->off;
}

static void scatter_skip(struct rd_scatter *d, uint64_t len)
{
	while (len && d->i < d->n) {
		uint64_t take = d->p[d->i].len - d->off < len ? d->p[d->i].len - d->off : len;

		d->off += take;
		len -= take;
		scatter_settle(d);
	}
}

/* Below this a piece is left to fault page by page; above, one call faults it in. */
#define PREFAULT_MIN (64u << 10)

/* Copy @len bytes from @src to the next bytes of the pieces. */
static void scatter_put(struct rd_scatter *d, const uint8_t *src, uint64_t len)
{
	while (len && d->i < d->n) {
		uint8_t *to = (uint8_t *)d->p[d->i].dst + d->off;
		uint64_t take = d->p[d->i].len - d->off < len ? d->p[d->i].len - d->off : len;

		if (d->p[d->i].dst && take >= PREFAULT_MIN) /* a NULL piece drops its bytes */
			sc_prefault_write(to, take);
		if (d->p[d->i].dst)
			memcpy(to, src, take);
		src += take;
		len -= take;
		d->off += take;
		scatter_settle(d);
	}
}

/* ---- decoding on the pool ---- */

void sc_prefault_write(void *p, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1);
	uintptr_t e = ((uintptr_t)p + len) & ~(page - 1);

	if (e > a)
		madvise((void *)a, e - a, MADV_POPULATE_WRITE);
}

/* The stored bytes of @s from the file; 0, or errno / -1 (the file ended) in io_err. */
static int read_stored(struct rd_slot *s)
{
	uint8_t *b = (uint8_t *)s->stored;
	size_t got = 0;

	sc_prefault_write(b, s->stored_len);
	while (got < s->stored_len) {
		ssize_t k = pread(s->read_fd, b + got, s->stored_len - got,
				  (off_t)(s->read_at + got));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return s->io_err = k < 0 ? errno : -1;
		got += (size_t)k;
	}
	return 0;
}

static void decode_task(struct sc_task *t)
{
	struct rd_slot *s = (struct rd_slot *)((char *)t - offsetof(struct rd_slot, task));

	s->rc = 0;
	s->io_err = 0;
	if (s->read_fd >= 0 && read_stored(s))
		return;
	if (s->codec != SC_CODEC_RAW) {
		sc_prefault_write(s->raw, s->raw_len);
		s->rc = sc_chunk_decompress(s->codec, s->stored, s->stored_len, s->raw, s->raw_len);
	}
	if (s->rc)
		return;
	s->got_hash = sc_chunk_hash(s->raw, s->raw_len);
	if (s->spreading && s->got_hash == s->want_hash)
		scatter_put(&s->spread, s->raw, s->raw_len);
}

static int slot_error(struct sc_reader *r, const struct rd_slot *s)
{
	char where[64];

	if (s->io_err == -1)
		return sc_err(SELFCKPT_ETRUNCATED,
			      "'%s' is truncated: it ends inside the %u stored bytes of chunk %llu "
			      "of %s at offset %llu", r->name, s->stored_len,
			      (unsigned long long)s->chunk, sc_rd_where(r, where),
			      (unsigned long long)s->offset);
	if (s->io_err)
		return sc_err(s->io_err, "cannot read '%s' at offset %llu (chunk %llu of %s): %s",
			      r->name, (unsigned long long)s->read_at, (unsigned long long)s->chunk,
			      sc_rd_where(r, where), strerror(s->io_err));
	if (s->rc)
		return sc_err(SELFCKPT_ECODEC,
			      "chunk %llu of %s in '%s' at offset %llu does not decode to its %u "
			      "bytes: %s", (unsigned long long)s->chunk, sc_rd_where(r, where),
			      r->name, (unsigned long long)s->offset, s->raw_len, strerror(-s->rc));
	if (s->got_hash != s->want_hash)
		return sc_err(SELFCKPT_ECHUNK,
			      "checksum mismatch in '%s' %s chunk %llu at offset %llu: stored "
			      "0x%016llx, computed 0x%016llx", r->name, sc_rd_where(r, where),
			      (unsigned long long)s->chunk, (unsigned long long)s->offset,
			      (unsigned long long)s->want_hash, (unsigned long long)s->got_hash);
	return 0;
}

static int retire_oldest(struct sc_reader *r)
{
	struct rd_slot *s = &r->slots[r->head];

	sc_pool_wait(r->pool, &s->task);
	s->busy = false;
	r->head = (r->head + 1) % r->n_slots;
	r->count--;
	return slot_error(r, s);
}

/*
 * Read one chunk's stored bytes into @s and hand it to the pool, to be decoded
 * into @dst, or, with @dst NULL, into the slot's buffer: then copied to @spread
 * unless that is NULL too.
 */
static int submit_chunk(struct sc_reader *r, struct rd_slot *s, uint8_t *dst,
			const struct rd_scatter *spread)
{
	struct chunk_hdr c = { 0 };
	int err = read_chunk_header(r, &c);

	if (err < 0)
		return err;
	if (!dst && sc_grow((void **)&s->rbuf, &s->rbuf_cap, c.raw_len, 1) < 0)
		return sc_err(ENOMEM, "out of memory reading '%s'", r->name);
	*s = (struct rd_slot){ .codec = c.codec, .stored_len = c.stored_len,
			       .raw = dst ? dst : s->rbuf, .raw_len = c.raw_len,
			       .want_hash = c.hash, .chunk = c.index, .offset = c.offset,
			       .read_fd = -1, .sbuf = s->sbuf, .rbuf = s->rbuf,
			       .sbuf_cap = s->sbuf_cap, .rbuf_cap = s->rbuf_cap,
			       .spreading = !dst && spread };
	if (s->spreading)
		s->spread = *spread;
	/* Stored raw: read straight into place; the pool only hashes it. */
	if (c.codec != SC_CODEC_RAW &&
	    sc_grow((void **)&s->sbuf, &s->sbuf_cap, c.stored_len, 1) < 0)
		return sc_err(ENOMEM, "out of memory reading '%s'", r->name);
	s->stored = c.codec == SC_CODEC_RAW ? s->raw : s->sbuf;
	if (r->seekable && sc_rd_window_copy(r, r->pos, (uint8_t *)s->stored, c.stored_len)) {
		/* a small chunk, in the window read ahead: the task only decodes it */
		err = sc_rd_skip_bytes(r, c.stored_len, "chunk data");
	} else if (r->seekable) {
		s->read_fd = r->fd;
		s->read_at = r->pos;
		err = sc_rd_skip_bytes(r, c.stored_len, "chunk data");
	} else {
		err = sc_rd_read(r, (uint8_t *)s->stored, c.stored_len, "chunk data");
	}
	if (err < 0)
		return err;
	s->task.fn = decode_task;
	s->busy = true;
	r->count++;
	sc_pool_submit(r->pool, &s->task);
	return 0;
}

static int check_record_end(struct sc_reader *r)
{
	char where[64];

	if (!r->seekable || r->chunk_next < r->n_chunks || r->pos == r->rec_end)
		return 0;
	return sc_err(SELFCKPT_EINDEX,
		      "%s of '%s' ends at offset %llu, but the index says %llu",
		      sc_rd_where(r, where), r->name, (unsigned long long)r->pos,
		      (unsigned long long)r->rec_end);
}

/*
 * Decode the next @k chunks into the pieces of @dst, or, with @dst NULL, into
 * the slots' own buffers (to verify, or to keep the last one as the tail).
 */
static int read_chunks(struct sc_reader *r, struct rd_scatter *dst, uint64_t k)
{
	int err = 0;

	for (uint64_t i = 0; i < k && !err; i++) {
		if (r->count == r->n_slots && (err = retire_oldest(r)) < 0)
			break;
		struct rd_slot *s = &r->slots[(r->head + r->count) % r->n_slots];
		uint32_t len = sc_chunk_raw_len(r->rec.raw_len, r->rec.chunk_shift, r->chunk_next);

		if (!dst) {
			err = submit_chunk(r, s, NULL, NULL);
			continue;
		}
		err = submit_chunk(r, s, scatter_contiguous(dst, len), dst);
		scatter_skip(dst, len);
	}
	while (r->count && !err)
		err = retire_oldest(r);
	wait_all(r);
	return err ? err : check_record_end(r);
}

/* Decode the next chunk into r->tail, for a read that ends inside it. */
static int load_tail(struct sc_reader *r)
{
	struct rd_slot *s;
	uint8_t *buf;
	size_t cap;
	int err = read_chunks(r, NULL, 1);

	if (err < 0)
		return err;
	s = &r->slots[(r->head + r->n_slots - 1) % r->n_slots]; /* the slot just used */
	buf = r->tail, cap = r->tail_cap;
	r->tail = s->rbuf, r->tail_cap = s->rbuf_cap;
	s->rbuf = buf, s->rbuf_cap = cap;
	r->tail_len = s->raw_len;
	r->tail_off = 0;
	return 0;
}

int sc_rd_payload(struct sc_reader *r, const struct sc_piece *pieces, size_t n_pieces,
		  uint64_t n)
{
	struct rd_scatter dst = { .p = pieces, .n = n_pieces };
	uint64_t whole = 0, bytes = 0;
	int err;

	scatter_settle(&dst);
	r->raw_done += n;
	if (r->tail_off < r->tail_len) {
		uint32_t take = (uint32_t)(n < r->tail_len - r->tail_off ? n
									 : r->tail_len - r->tail_off);

		scatter_put(&dst, r->tail + r->tail_off, take);
		r->tail_off += take;
		n -= take;
	}
	while (r->chunk_next + whole < r->n_chunks) {
		uint32_t len = sc_chunk_raw_len(r->rec.raw_len, r->rec.chunk_shift,
						r->chunk_next + whole);

		if (bytes + len > n)
			break;
		bytes += len;
		whole++;
	}
	if (whole && (err = read_chunks(r, &dst, whole)) < 0)
		return err;
	n -= bytes;
	if (!n)
		return 0;
	if ((err = load_tail(r)) < 0)
		return err;
	scatter_put(&dst, r->tail, n);
	r->tail_off = (uint32_t)n;
	return 0;
}

int sc_rd_skip_payload(struct sc_reader *r, bool verify)
{
	int err = 0;

	r->tail_len = r->tail_off = 0;
	if (verify)
		err = read_chunks(r, NULL, r->n_chunks - r->chunk_next);
	else
		r->pos = r->rec_end;
	r->chunk_next = r->n_chunks;
	r->raw_done = r->rec.raw_len;
	return err;
}
