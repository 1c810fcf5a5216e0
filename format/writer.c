/* SPDX-License-Identifier: MIT */
/*
 * writer.c - the streaming image writer.
 *
 * Payload bytes are cut into chunks that the worker pool compresses while the
 * calling thread writes finished chunks out in order: a ring of job slots
 * keeps every worker busy and the output strictly sequential, so the writer
 * never seeks and works on a pipe. The whole-file checksum is computed over
 * the bytes as they are written.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "compress/sc_compress.h"
#include "format/format_internal.h"
#include "format/sc_log.h"
#include "selfckpt.h"

#define OUTBUF_SIZE (64u << 10) /* small writes are gathered up to this */

struct wr_slot {
	struct sc_task task;
	struct sc_chunk chunk;
	uint8_t *stage; /* copy of raw bytes when a chunk spans appends */
	bool busy;
};

struct sc_writer {
	int fd;
	char *name;
	int err; /* sticky: once set, every call returns it */
	struct sc_write_opts opts;
	size_t chunk_size;
	struct sc_pool *pool;
	XXH3_state_t *hash;
	uint64_t off; /* bytes handed to the descriptor or the buffer */
	uint8_t *outbuf;
	size_t out_len;

	struct sc_index_entry *index;
	size_t n_index, cap_index;

	bool in_record;
	bool writing_index; /* only the writer itself writes the END record */
	struct sc_index_entry cur;
	uint64_t appended; /* payload bytes received for cur */
	uint64_t next_chunk; /* chunk index the next slot will hold */
	struct wr_slot *staging; /* slot being filled across appends, or NULL */
	size_t stage_fill;

	struct wr_slot *slots;
	unsigned n_slots, head, count;
};

void sc_write_opts_init(struct sc_write_opts *o)
{
	const char *level = getenv("SELFCKPT_LEVEL");

	memset(o, 0, sizeof(*o));
	o->level = level && *level ? atoi(level) : SC_LEVEL_DEFAULT;
}

static int fail(struct sc_writer *w, int err)
{
	if (!w->err)
		w->err = err;
	return w->err;
}

/* ---- output: sequential, buffered for small pieces, hashed ---- */

static int write_all(struct sc_writer *w, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t k = write(w->fd, b, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return fail(w, sc_err(errno, "cannot write '%s' at offset %llu: %s",
					      w->name, (unsigned long long)(w->off - w->out_len),
					      strerror(errno)));
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

static int out_flush(struct sc_writer *w)
{
	int err = 0;

	if (w->out_len)
		err = write_all(w, w->outbuf, w->out_len);
	w->out_len = 0;
	return err;
}

static int out_put(struct sc_writer *w, const void *p, size_t n)
{
	XXH3_64bits_update(w->hash, p, n);
	w->off += n;
	if (w->out_len + n <= OUTBUF_SIZE) {
		memcpy(w->outbuf + w->out_len, p, n);
		w->out_len += n;
		return 0;
	}
	/* Large pieces go straight out; order is kept by flushing first. */
	w->off -= n;
	if (out_flush(w) < 0)
		return w->err;
	w->off += n;
	if (n < OUTBUF_SIZE) {
		memcpy(w->outbuf, p, n);
		w->out_len = n;
		return 0;
	}
	return write_all(w, p, n);
}

/* ---- header ---- */

static void copy_padded(uint8_t *dst, size_t size, const char *s)
{
	size_t n = strnlen(s, size);

	memset(dst, 0, size);
	memcpy(dst, s, n);
}

static int write_header(struct sc_writer *w)
{
	uint8_t h[SC_HEADER_SIZE] = { 0 };
	struct utsname u;
	struct timespec ts;
	uint64_t created = w->opts.created_ns;

	if (!created) {
		clock_gettime(CLOCK_REALTIME, &ts);
		created = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	if (uname(&u) < 0)
		strcpy(u.release, "unknown");
	memcpy(h, SC_MAGIC, SC_MAGIC_LEN);
	sc_put_le16(h + 8, SC_FORMAT_MAJOR);
	sc_put_le16(h + 10, SC_FORMAT_MINOR);
	sc_put_le32(h + 12, SC_HEADER_SIZE);
	sc_put_le32(h + 16, SC_ARCH_X86_64);
	sc_put_le32(h + 20, (uint32_t)sysconf(_SC_PAGESIZE));
	sc_put_le64(h + 24, 0);
	sc_put_le64(h + 32, created);
	copy_padded(h + 40, 32, w->opts.producer ? w->opts.producer
						 : "selfckpt " SELFCKPT_VERSION_STRING);
	copy_padded(h + 72, 64, w->opts.kernel ? w->opts.kernel : u.release);
	sc_put_le64(h + SC_HEADER_SIZE - 8, XXH3_64bits(h, SC_HEADER_SIZE - 8));
	return out_put(w, h, sizeof(h));
}

/* ---- lifecycle ---- */

static int check_opts(const char *name, const struct sc_write_opts *o)
{
	if (o->chunk_shift && (o->chunk_shift < SC_CHUNK_SHIFT_MIN ||
			       o->chunk_shift > SC_CHUNK_SHIFT_MAX))
		return sc_err(SELFCKPT_EUSAGE, "chunk shift %u for '%s' is outside %d..%d",
			      o->chunk_shift, name, SC_CHUNK_SHIFT_MIN, SC_CHUNK_SHIFT_MAX);
	return 0;
}

static int alloc_slots(struct sc_writer *w)
{
	size_t bound = sc_chunk_bound(w->chunk_size);

	/* Two slots per worker: one compressing, one waiting to be written. */
	w->n_slots = 2 * sc_pool_threads(w->pool) + 1;
	w->slots = calloc(w->n_slots, sizeof(*w->slots));
	if (!w->slots)
		return -ENOMEM;
	for (unsigned i = 0; i < w->n_slots; i++) {
		w->slots[i].chunk.out = malloc(bound);
		if (!w->slots[i].chunk.out)
			return -ENOMEM;
	}
	return 0;
}

int sc_writer_new(struct sc_writer **out, int fd, const char *name, const struct sc_write_opts *o)
{
	struct sc_writer *w;
	int err;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return sc_err(ENOMEM, "out of memory writing '%s'", name);
	w->fd = fd;
	if (o)
		w->opts = *o;
	else
		sc_write_opts_init(&w->opts);
	err = check_opts(name, &w->opts);
	if (err < 0)
		goto fail_quiet;
	w->chunk_size = (size_t)1 << (w->opts.chunk_shift ? w->opts.chunk_shift
							    : SC_CHUNK_SHIFT_DEFAULT);
	w->name = strdup(name);
	w->hash = XXH3_createState();
	w->outbuf = malloc(OUTBUF_SIZE);
	err = -ENOMEM;
	if (!w->name || !w->hash || !w->outbuf)
		goto fail;
	XXH3_64bits_reset(w->hash);
	err = sc_pool_new(&w->pool, w->opts.threads);
	if (err < 0 || (err = alloc_slots(w)) < 0)
		goto fail;
	err = write_header(w);
	if (err < 0)
		goto fail_quiet;
	*out = w;
	return 0;
fail:
	sc_err(-err, "cannot start writing '%s': %s", name, strerror(-err));
fail_quiet:
	sc_writer_free(w);
	return err;
}

void sc_writer_free(struct sc_writer *w)
{
	if (!w)
		return;
	/* Never free a slot a worker may still be using. */
	for (; w->count; w->count--, w->head = (w->head + 1) % w->n_slots)
		if (w->slots[w->head].busy)
			sc_pool_wait(w->pool, &w->slots[w->head].task);
	sc_pool_free(w->pool);
	for (unsigned i = 0; w->slots && i < w->n_slots; i++) {
		free(w->slots[i].chunk.out);
		free(w->slots[i].stage);
	}
	free(w->slots);
	free(w->index);
	free(w->outbuf);
	if (w->hash)
		XXH3_freeState(w->hash);
	free(w->name);
	free(w);
}

uint64_t sc_writer_bytes(const struct sc_writer *w)
{
	return w->off;
}

/* ---- chunks in flight ---- */

static void compress_task(struct sc_task *t)
{
	struct wr_slot *s = (struct wr_slot *)((char *)t - offsetof(struct wr_slot, task));

	sc_chunk_compress(&s->chunk);
}

/* Wait for the oldest chunk and write it; chunks leave in the order they came. */
static int retire_oldest(struct sc_writer *w)
{
	struct wr_slot *s = &w->slots[w->head];
	uint8_t ch[SC_CHUNK_HEADER_SIZE] = { 0 };

	sc_pool_wait(w->pool, &s->task);
	s->busy = false;
	w->head = (w->head + 1) % w->n_slots;
	w->count--;
	if (w->err)
		return w->err;
	sc_put_le32(ch, s->chunk.stored_len);
	ch[4] = s->chunk.codec;
	sc_put_le64(ch + 8, s->chunk.hash);
	if (out_put(w, ch, sizeof(ch)) < 0)
		return w->err;
	return out_put(w, s->chunk.stored, s->chunk.stored_len);
}

static struct wr_slot *acquire_slot(struct sc_writer *w)
{
	struct wr_slot *s;

	if (w->count == w->n_slots && retire_oldest(w) < 0)
		return NULL;
	s = &w->slots[(w->head + w->count) % w->n_slots];
	w->count++;
	return s;
}

static void submit(struct sc_writer *w, struct wr_slot *s, const void *raw, size_t len)
{
	s->chunk.raw = raw;
	s->chunk.raw_len = len;
	s->chunk.level = w->opts.level;
	s->task.fn = compress_task;
	s->busy = true;
	w->next_chunk++;
	sc_pool_submit(w->pool, &s->task);
}

static int drain(struct sc_writer *w)
{
	while (w->count)
		if (retire_oldest(w) < 0)
			return w->err;
	return 0;
}

/* ---- records ---- */

static int index_push(struct sc_writer *w, const struct sc_index_entry *e)
{
	if (w->n_index == w->cap_index) {
		size_t cap = w->cap_index ? 2 * w->cap_index : 64;
		struct sc_index_entry *n = realloc(w->index, cap * sizeof(*n));

		if (!n)
			return fail(w, sc_err(ENOMEM, "out of memory writing '%s'", w->name));
		w->index = n;
		w->cap_index = cap;
	}
	w->index[w->n_index++] = *e;
	return 0;
}

int sc_writer_begin(struct sc_writer *w, uint32_t type, uint16_t flags, const void *meta,
		    uint32_t meta_len, uint64_t raw_len)
{
	uint8_t h[SC_RECORD_HEADER_SIZE];
	struct sc_rec_header rh = { 0 };

	if (w->err)
		return w->err;
	if (w->in_record || type == 0 || (type == SC_REC_END) != w->writing_index || (flags & ~SC_RF_KNOWN_MASK) || meta_len > SC_META_MAX ||
	    w->n_index >= UINT32_MAX)
		return fail(w, sc_err(SELFCKPT_EUSAGE,
				      "bad record %zu (type 0x%x flags 0x%x meta %u bytes) for '%s'",
				      w->n_index, type, flags, meta_len, w->name));
	rh.type = type;
	rh.flags = flags;
	rh.codec = w->opts.level == SC_LEVEL_STORE ? SC_CODEC_RAW : SC_CODEC_ZSTD;
	rh.chunk_shift = (uint8_t)__builtin_ctzll(w->chunk_size);
	rh.meta_len = meta_len;
	rh.seq = (uint32_t)w->n_index;
	rh.raw_len = raw_len;
	rh.meta_hash = XXH3_64bits(meta_len ? meta : "", meta_len);
	sc_rec_header_encode(h, &rh);

	w->cur = (struct sc_index_entry){ .offset = w->off, .raw_len = raw_len, .type = type,
					  .meta_len = meta_len, .flags = flags, .codec = rh.codec,
					  .chunk_shift = rh.chunk_shift };
	w->in_record = true;
	w->appended = 0;
	w->next_chunk = 0;
	if (out_put(w, h, sizeof(h)) < 0 || (meta_len && out_put(w, meta, meta_len) < 0))
		return w->err;
	return 0;
}

static size_t expected_chunk_len(const struct sc_writer *w)
{
	return sc_chunk_raw_len(w->cur.raw_len, w->cur.chunk_shift, w->next_chunk);
}

/* Copy bytes into the staging slot; submit it once it holds a whole chunk. */
static int stage_bytes(struct sc_writer *w, const uint8_t **p, size_t *n)
{
	size_t want = expected_chunk_len(w), take;

	if (!w->staging) {
		w->staging = acquire_slot(w);
		if (!w->staging)
			return w->err;
		if (!w->staging->stage && !(w->staging->stage = malloc(w->chunk_size)))
			return fail(w, sc_err(ENOMEM, "out of memory writing '%s'", w->name));
		w->stage_fill = 0;
	}
	take = want - w->stage_fill < *n ? want - w->stage_fill : *n;
	memcpy(w->staging->stage + w->stage_fill, *p, take);
	w->stage_fill += take;
	*p += take;
	*n -= take;
	if (w->stage_fill == want) {
		submit(w, w->staging, w->staging->stage, want);
		w->staging = NULL;
	}
	return 0;
}

int sc_writer_append(struct sc_writer *w, const void *data, size_t n)
{
	const uint8_t *p = data;

	if (w->err)
		return w->err;
	if (!w->in_record || n > w->cur.raw_len - w->appended)
		return fail(w, sc_err(SELFCKPT_EUSAGE,
				      "record %zu of '%s' takes %llu payload bytes, got %llu more",
				      w->n_index, w->name, (unsigned long long)w->cur.raw_len,
				      (unsigned long long)(w->appended + n)));
	w->appended += n;
	while (n) {
		size_t want = expected_chunk_len(w);

		if (w->staging || n < want) {
			if (stage_bytes(w, &p, &n) < 0)
				return w->err;
			continue;
		}
		/* A whole chunk inside the caller's buffer: compress it in place. */
		struct wr_slot *s = acquire_slot(w);

		if (!s)
			return w->err;
		submit(w, s, p, want);
		p += want;
		n -= want;
	}
	return 0;
}

int sc_writer_end(struct sc_writer *w)
{
	if (w->err)
		return w->err;
	if (!w->in_record || w->appended != w->cur.raw_len)
		return fail(w, sc_err(SELFCKPT_EUSAGE,
				      "record %zu of '%s' ended after %llu of %llu payload bytes",
				      w->n_index, w->name, (unsigned long long)w->appended,
				      (unsigned long long)w->cur.raw_len));
	if (drain(w) < 0)
		return w->err;
	w->in_record = false;
	w->cur.stored_len = w->off - w->cur.offset;
	return index_push(w, &w->cur);
}

int sc_writer_record(struct sc_writer *w, uint32_t type, uint16_t flags, const void *meta,
		     uint32_t meta_len, const void *payload, uint64_t len)
{
	if (sc_writer_begin(w, type, flags, meta, meta_len, len) < 0 ||
	    (len && sc_writer_append(w, payload, len) < 0))
		return w->err;
	return sc_writer_end(w);
}

/* ---- the end: index record and trailer ---- */

static int write_index(struct sc_writer *w, uint64_t *end_offset, uint64_t *n_records)
{
	size_t n = w->n_index, size = n * SC_INDEX_ENTRY_SIZE;
	uint8_t *buf = malloc(size ? size : 1);
	int err;

	if (!buf)
		return fail(w, sc_err(ENOMEM, "out of memory writing '%s'", w->name));
	for (size_t i = 0; i < n; i++)
		sc_index_entry_encode(buf + i * SC_INDEX_ENTRY_SIZE, &w->index[i]);
	*end_offset = w->off;
	*n_records = n;
	w->writing_index = true;
	err = sc_writer_begin(w, SC_REC_END, SC_RF_REQUIRED, NULL, 0, size);
	if (!err && size)
		err = sc_writer_append(w, buf, size);
	if (!err)
		err = sc_writer_end(w);
	free(buf);
	return err;
}

int sc_writer_finish(struct sc_writer *w)
{
	uint8_t t[SC_TRAILER_SIZE] = { 0 };
	uint64_t end_offset = 0, n_records = 0;

	if (w->err)
		return w->err;
	if (w->in_record)
		return fail(w, sc_err(SELFCKPT_EUSAGE, "record %zu of '%s' was never ended",
				      w->n_index, w->name));
	if (write_index(w, &end_offset, &n_records) < 0)
		return w->err;
	memcpy(t, SC_TRAILER_MAGIC, 8);
	sc_put_le64(t + 8, end_offset);
	sc_put_le64(t + 16, n_records);
	sc_put_le64(t + 24, XXH3_64bits_digest(w->hash));
	sc_put_le64(t + 32, XXH3_64bits(t, 32));
	if (out_put(w, t, sizeof(t)) < 0 || out_flush(w) < 0)
		return w->err;
	w->err = -SELFCKPT_EUSAGE; /* a finished image takes no more records */
	return 0;
}
