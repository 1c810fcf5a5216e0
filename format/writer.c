/* SPDX-License-Identifier: MIT */
/*
 * writer.c - the streaming image writer: header, records, index and trailer.
 *
 * Payload bytes are cut into chunks here and handed to the output
 * (writer_out.c), which compresses them on the worker pool and puts every byte
 * at its place in the image, computing the whole-file checksum as it goes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "compress/sc_compress.h"
#include "format/format_internal.h"
#include "format/sc_array.h"
#include "format/sc_log.h"
#include "selfckpt.h"

struct sc_writer {
	char *name;
	int err; /* sticky: once set, every call returns it */
	struct sc_write_opts opts;
	size_t chunk_size;
	struct sc_wout *out;

	struct sc_index_entry *index;
	size_t n_index, cap_index;

	bool in_record;
	bool writing_index; /* only the writer itself writes the END record */
	struct sc_index_entry cur;
	uint64_t appended; /* payload bytes received for cur */
	uint64_t next_chunk; /* chunk index the next slot will hold */
	struct sc_wout_slot *staging; /* slot being filled across appends, or NULL */
	uint8_t *stage;               /* its buffer */
	size_t stage_fill;
	uint64_t created_ns, file_sum; /* the finished image's identity */
};

void sc_write_opts_init(struct sc_write_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->level = SC_LEVEL_DEFAULT;
}

/* Every failure also stops the output, so that no task reads a caller's buffer after it. */
static int fail(struct sc_writer *w, int err)
{
	if (!w->err)
		w->err = err;
	sc_wout_cancel(w->out, w->err);
	return w->err;
}

/* @err from the output, which reported it: 0 passes, anything else fails the writer. */
static int fail_if(struct sc_writer *w, int err)
{
	return err < 0 ? fail(w, err) : 0;
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
	sc_put_le16(h + 10, w->opts.incremental ? SC_FORMAT_MINOR_INCREMENTAL : SC_FORMAT_MINOR);
	sc_put_le32(h + 12, SC_HEADER_SIZE);
	sc_put_le32(h + 16, SC_ARCH_X86_64);
	sc_put_le32(h + 20, (uint32_t)sysconf(_SC_PAGESIZE));
	sc_put_le64(h + 24, w->opts.incremental ? SC_HF_INCREMENTAL : 0);
	sc_put_le64(h + 32, created);
	w->created_ns = created;
	copy_padded(h + 40, 32, w->opts.producer ? w->opts.producer
						 : "selfckpt " SELFCKPT_VERSION_STRING);
	copy_padded(h + 72, 64, w->opts.kernel ? w->opts.kernel : u.release);
	sc_put_le64(h + SC_HEADER_SIZE - 8, XXH3_64bits(h, SC_HEADER_SIZE - 8));
	return fail_if(w, sc_wout_put(w->out, h, sizeof(h)));
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

int sc_writer_new(struct sc_writer **out, int fd, const char *name, const struct sc_write_opts *o)
{
	struct sc_writer *w;
	int err;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->name = strdup(name))) {
		free(w);
		return sc_err(ENOMEM, "out of memory writing '%s'", name);
	}
	if (o)
		w->opts = *o;
	else
		sc_write_opts_init(&w->opts);
	err = check_opts(name, &w->opts);
	if (err < 0)
		goto fail;
	w->chunk_size = (size_t)1 << (w->opts.chunk_shift ? w->opts.chunk_shift
							    : SC_CHUNK_SHIFT_DEFAULT);
	err = sc_wout_new(&w->out, fd, w->name, &w->opts, w->chunk_size);
	if (err < 0)
		goto fail;
	err = write_header(w);
	if (err < 0)
		goto fail;
	*out = w;
	return 0;
fail:
	sc_writer_free(w);
	return err;
}

void sc_writer_free(struct sc_writer *w)
{
	if (!w)
		return;
	sc_wout_free(w->out);
	free(w->index);
	free(w->name);
	free(w);
}

bool sc_writer_incremental(const struct sc_writer *w)
{
	return w->opts.incremental;
}

uint64_t sc_writer_bytes(const struct sc_writer *w)
{
	return sc_wout_offset(w->out);
}

/* ---- chunks to the output ---- */

static struct sc_wout_slot *acquire_slot(struct sc_writer *w)
{
	struct sc_wout_slot *s;

	if (fail_if(w, sc_wout_slot(w->out, &s)) < 0)
		return NULL;
	return s;
}

static void submit(struct sc_writer *w, struct sc_wout_slot *s, const void *raw, size_t len)
{
	w->next_chunk++;
	sc_wout_submit(w->out, s, raw, len);
}

/* ---- records ---- */

static int index_push(struct sc_writer *w, const struct sc_index_entry *e)
{
	if (sc_grow((void **)&w->index, &w->cap_index, w->n_index + 1, sizeof(*w->index)))
		return fail(w, sc_err(ENOMEM, "out of memory writing '%s'", w->name));
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
	if (w->in_record || type == 0 || (type == SC_REC_END) != w->writing_index ||
	    (flags & ~SC_RF_KNOWN_MASK) || meta_len > SC_META_MAX || w->n_index >= UINT32_MAX)
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

	w->cur = (struct sc_index_entry){ .offset = sc_wout_offset(w->out), .raw_len = raw_len,
					  .type = type, .meta_len = meta_len, .flags = flags,
					  .codec = rh.codec, .chunk_shift = rh.chunk_shift };
	w->in_record = true;
	w->appended = 0;
	w->next_chunk = 0;
	if (fail_if(w, sc_wout_put(w->out, h, sizeof(h))) < 0)
		return w->err;
	return fail_if(w, sc_wout_put(w->out, meta, meta_len));
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
		w->stage = sc_wout_stage(w->out, w->staging);
		if (!w->stage)
			return fail(w, -ENOMEM); /* reported by the output */
		w->stage_fill = 0;
	}
	take = want - w->stage_fill < *n ? want - w->stage_fill : *n;
	memcpy(w->stage + w->stage_fill, *p, take);
	w->stage_fill += take;
	*p += take;
	*n -= take;
	if (w->stage_fill == want) {
		submit(w, w->staging, w->stage, want);
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
		struct sc_wout_slot *s = acquire_slot(w);

		if (!s)
			return w->err;
		submit(w, s, p, want);
		p += want;
		n -= want;
	}
	return 0;
}

/* Can the current record end? Every payload byte it announced came. */
static int check_end(struct sc_writer *w)
{
	if (w->err)
		return w->err;
	if (!w->in_record || w->appended != w->cur.raw_len)
		return fail(w, sc_err(SELFCKPT_EUSAGE,
				      "record %zu of '%s' ended after %llu of %llu payload bytes",
				      w->n_index, w->name, (unsigned long long)w->appended,
				      (unsigned long long)w->cur.raw_len));
	return 0;
}

/* The record's chunks retired: its stored size is known, and it goes into the index. */
static int close_record(struct sc_writer *w)
{
	w->in_record = false;
	w->cur.stored_len = sc_wout_offset(w->out) - w->cur.offset;
	return index_push(w, &w->cur);
}

int sc_writer_end(struct sc_writer *w)
{
	if (check_end(w) < 0 || fail_if(w, sc_wout_release(w->out)) < 0)
		return w->err;
	return close_record(w);
}

int sc_writer_end_lent(struct sc_writer *w, uint64_t *lent)
{
	if (check_end(w) < 0 || fail_if(w, sc_wout_retire(w->out)) < 0)
		return w->err;
	*lent = sc_wout_mark(w->out);
	return close_record(w);
}

int sc_writer_returned(struct sc_writer *w, uint64_t lent, bool wait)
{
	int r;

	if (w->err)
		return w->err;
	r = sc_wout_returned(w->out, lent, wait);
	return r < 0 ? fail_if(w, r) : r;
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
	*end_offset = sc_wout_offset(w->out);
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
	w->file_sum = sc_wout_digest(w->out);
	sc_put_le64(t + 24, w->file_sum);
	sc_put_le64(t + 32, XXH3_64bits(t, 32));
	if (fail_if(w, sc_wout_put(w->out, t, sizeof(t))) < 0 ||
	    fail_if(w, sc_wout_finish(w->out)) < 0)
		return w->err;
	w->err = -SELFCKPT_EUSAGE; /* a finished image takes no more records */
	return 0;
}

void sc_writer_identity(const struct sc_writer *w, uint64_t *created_ns, uint64_t *file_sum)
{
	*created_ns = w->created_ns;
	*file_sum = w->file_sum;
}
