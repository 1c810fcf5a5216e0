/* SPDX-License-Identifier: MIT */
/*
 * reader.c - the validating image reader.
 *
 * Nothing from the file is trusted before it is checked: every length is
 * bounded by what the file (or, for a stream, the bytes actually read) could
 * hold before anything is allocated for it, and every chunk is verified
 * against its checksum before a byte of it is handed out. A seekable image
 * has its trailer and index checked at open, so truncation is refused before
 * the first record; a stream is checked as it goes and at its end.
 *
 * Chunks are decoded on the worker pool while this thread reads the next
 * ones, the mirror image of the writer's pipeline.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "compress/sc_compress.h"
#include "format/format_internal.h"
#include "format/reader_internal.h"
#include "format/sc_log.h"

const char *sc_rd_where(const struct sc_reader *r, char *buf)
{
	const char *name = r->rec.type == SC_REC_END ? "end (index)"
						     : sc_record_type_name(r->rec.type);

	if (name)
		snprintf(buf, 64, "record %u (%s)", r->rec.seq, name);
	else
		snprintf(buf, 64, "record %u (type 0x%x)", r->rec.seq, r->rec.type);
	return buf;
}

/* ---- header ---- */

static int check_magic(struct sc_reader *r, const uint8_t *b, size_t got)
{
	size_t n = got < SC_MAGIC_LEN ? got : SC_MAGIC_LEN;

	if (got == 0)
		return sc_err(SELFCKPT_EEMPTY, "'%s' is empty", r->name);
	if (memcmp(b, SC_MAGIC, n))
		return sc_err(SELFCKPT_EMAGIC,
			      "'%s' is not a selfckpt image: wrong magic at offset 0 "
			      "(found %02x %02x %02x %02x ...)",
			      r->name, b[0], n > 1 ? b[1] : 0, n > 2 ? b[2] : 0, n > 3 ? b[3] : 0);
	if (got < 16)
		return sc_err(SELFCKPT_ETRUNCATED, "'%s' is truncated: it ends at offset %zu "
			      "inside the header", r->name, got);
	return 0;
}

static void copy_string(char *dst, const uint8_t *src, size_t n)
{
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static int parse_header(struct sc_reader *r, const uint8_t *b)
{
	struct sc_header *h = &r->hdr;
	uint64_t incompat;

	h->arch = sc_get_le32(b + 16);
	h->page_size = sc_get_le32(b + 20);
	h->flags = sc_get_le64(b + 24);
	h->created_ns = sc_get_le64(b + 32);
	copy_string(h->producer, b + 40, 32);
	copy_string(h->kernel, b + 72, 64);
	incompat = h->flags & ~SC_HF_COMPAT_MASK & ~SC_HF_KNOWN_INCOMPAT;
	if (incompat)
		return sc_err(SELFCKPT_EUNKNOWN,
			      "'%s' needs features this reader does not know: header flags 0x%llx "
			      "at offset 24", r->name, (unsigned long long)incompat);
	return 0;
}

static int read_header(struct sc_reader *r)
{
	uint8_t b[SC_HEADER_MAX];
	struct sc_header *h = &r->hdr;
	uint64_t stored, computed;
	size_t got;
	int err;

	got = sc_rd_read_some(r, b, 16, &err);
	if (err < 0 || (err = check_magic(r, b, got)) < 0)
		return err;
	h->major = sc_get_le16(b + 8);
	h->minor = sc_get_le16(b + 10);
	h->header_size = sc_get_le32(b + 12);
	if (h->major != SC_FORMAT_MAJOR)
		return sc_err(SELFCKPT_EVERSION,
			      "'%s' has image format %u.%u at offset 8; this reader reads %u.x",
			      r->name, h->major, h->minor, SC_FORMAT_MAJOR);
	if (h->header_size < SC_HEADER_SIZE || h->header_size > SC_HEADER_MAX)
		return sc_err(SELFCKPT_EHEADER,
			      "'%s' has a header size of %u bytes at offset 12, expected %u..%u",
			      r->name, h->header_size, SC_HEADER_SIZE, SC_HEADER_MAX);
	err = sc_rd_read(r, b + 16, h->header_size - 16, "the header");
	if (err < 0)
		return err;
	stored = sc_get_le64(b + h->header_size - 8);
	computed = XXH3_64bits(b, h->header_size - 8);
	if (stored != computed)
		return sc_err(SELFCKPT_EHEADER,
			      "header checksum mismatch in '%s' at offset %u: stored 0x%016llx, "
			      "computed 0x%016llx", r->name, h->header_size - 8,
			      (unsigned long long)stored, (unsigned long long)computed);
	return parse_header(r, b);
}

/* ---- record headers ---- */

static int check_record_fields(struct sc_reader *r, uint64_t off, uint32_t seq,
			       const struct sc_rec_header *h)
{
	if (h->type == 0 || (h->flags & ~SC_RF_KNOWN_MASK) || h->reserved)
		return sc_err(SELFCKPT_ERESERVED,
			      "record %u of '%s' at offset %llu has type 0x%x, flags 0x%x, "
			      "reserved 0x%llx: type 0, unknown flags and reserved bits are not "
			      "allowed", seq, r->name, (unsigned long long)off, h->type, h->flags,
			      (unsigned long long)h->reserved);
	if (h->codec > SC_CODEC_ZSTD)
		return sc_err(SELFCKPT_ECODEC, "record %u of '%s' at offset %llu uses unknown "
			      "codec %u", seq, r->name, (unsigned long long)off, h->codec);
	if (h->chunk_shift < SC_CHUNK_SHIFT_MIN || h->chunk_shift > SC_CHUNK_SHIFT_MAX ||
	    h->meta_len > SC_META_MAX)
		return sc_err(SELFCKPT_ELENGTH,
			      "record %u of '%s' at offset %llu has chunk shift %u (allowed %d..%d) "
			      "and %u bytes of metadata (at most %u)", seq, r->name,
			      (unsigned long long)off, h->chunk_shift, SC_CHUNK_SHIFT_MIN,
			      SC_CHUNK_SHIFT_MAX, h->meta_len, SC_META_MAX);
	return 0;
}

/* Read and check the record header at @offset, expected to be record @seq. */
int sc_rd_record_header(struct sc_reader *r, uint64_t offset, uint32_t seq,
			struct sc_rec_header *h)
{
	uint8_t b[SC_RECORD_HEADER_SIZE];
	uint64_t stored, computed;
	int err;

	r->pos = r->seekable ? offset : r->pos;
	err = sc_rd_read(r, b, sizeof(b), "a record header");
	if (err < 0)
		return err;
	stored = sc_get_le64(b + 40);
	computed = XXH3_64bits(b, 40);
	if (stored != computed)
		return sc_err(SELFCKPT_ERECORD,
			      "record header checksum mismatch in '%s' record %u at offset %llu: "
			      "stored 0x%016llx, computed 0x%016llx", r->name, seq,
			      (unsigned long long)offset, (unsigned long long)stored,
			      (unsigned long long)computed);
	h->type = sc_get_le32(b);
	h->flags = sc_get_le16(b + 4);
	h->codec = b[6];
	h->chunk_shift = b[7];
	h->meta_len = sc_get_le32(b + 8);
	h->seq = sc_get_le32(b + 12);
	h->raw_len = sc_get_le64(b + 16);
	h->reserved = sc_get_le64(b + 24);
	h->meta_hash = sc_get_le64(b + 32);
	return check_record_fields(r, offset, seq, h);
}

/* ---- the current record ---- */

/* Grow the metadata buffer only as bytes arrive, so a bogus length in a
 * stream costs no more memory than the stream really holds. */
static int read_meta(struct sc_reader *r, uint32_t len)
{
	uint32_t done = 0;

	while (done < len) {
		uint32_t step = len - done < (1u << 20) ? len - done : (1u << 20);
		int err;

		if (done + step > r->meta_cap) {
			uint8_t *m = realloc(r->meta, done + step);

			if (!m)
				return sc_err(ENOMEM, "out of memory reading '%s'", r->name);
			r->meta = m;
			r->meta_cap = done + step;
		}
		err = sc_rd_read(r, r->meta + done, step, "record metadata");
		if (err < 0)
			return err;
		done += step;
	}
	return 0;
}

static int check_meta(struct sc_reader *r, const struct sc_rec_header *h)
{
	uint64_t computed = XXH3_64bits(h->meta_len ? r->meta : (const uint8_t *)"", h->meta_len);
	char where[64];

	if (computed != h->meta_hash)
		return sc_err(SELFCKPT_ERECORD,
			      "metadata checksum mismatch in '%s' %s at offset %llu: stored "
			      "0x%016llx, computed 0x%016llx", r->name, sc_rd_where(r, where),
			      (unsigned long long)(r->rec.offset + SC_RECORD_HEADER_SIZE),
			      (unsigned long long)h->meta_hash, (unsigned long long)computed);
	return 0;
}

/* A seekable record must be exactly what the index said it would be. */
static int check_against_index(struct sc_reader *r, const struct sc_rec_header *h)
{
	const struct sc_index_entry *e = &r->index[r->next];
	char where[64];

	if (h->seq == r->next && h->type == e->type && h->flags == e->flags &&
	    h->codec == e->codec && h->chunk_shift == e->chunk_shift &&
	    h->meta_len == e->meta_len && h->raw_len == e->raw_len)
		return 0;
	return sc_err(SELFCKPT_EINDEX,
		      "index entry %zu of '%s' does not match %s at offset %llu "
		      "(type 0x%x vs 0x%x, %llu vs %llu payload bytes)",
		      r->next, r->name, sc_rd_where(r, where), (unsigned long long)e->offset,
		      e->type, h->type, (unsigned long long)e->raw_len,
		      (unsigned long long)h->raw_len);
}

static int open_record(struct sc_reader *r)
{
	struct sc_rec_header h;
	uint64_t offset = r->seekable ? r->index[r->next].offset : r->pos;
	uint32_t expect_seq = r->seekable ? (uint32_t)r->next : (uint32_t)r->n_index;
	int err;

	err = sc_rd_record_header(r, offset, expect_seq, &h);
	if (err < 0)
		return err;
	r->rec = (struct sc_record){ .type = h.type, .flags = h.flags, .codec = h.codec,
				     .chunk_shift = h.chunk_shift, .seq = h.seq, .offset = offset,
				     .raw_len = h.raw_len, .meta_len = h.meta_len };
	r->rec.seq = expect_seq; /* messages name the position, not a damaged field */
	if (r->seekable && (err = check_against_index(r, &h)) < 0)
		return err;
	if (h.seq != expect_seq)
		return sc_err(SELFCKPT_ERECORD,
			      "record at offset %llu of '%s' says it is number %u, expected %u",
			      (unsigned long long)offset, r->name, h.seq, expect_seq);
	if ((err = read_meta(r, h.meta_len)) < 0 || (err = check_meta(r, &h)) < 0)
		return err;
	r->rec.meta = h.meta_len ? r->meta : NULL;
	r->rec_end = r->seekable ? offset + r->index[r->next].stored_len : 0;
	r->have_rec = true;
	r->chunk_next = 0;
	r->n_chunks = sc_chunk_count(h.raw_len, h.chunk_shift);
	r->raw_done = 0;
	r->tail_len = r->tail_off = 0;
	if (r->seekable)
		return 0;
	return sc_rd_index_push(r, &(struct sc_index_entry){
		.offset = offset, .raw_len = h.raw_len, .type = h.type, .meta_len = h.meta_len,
		.flags = h.flags, .codec = h.codec, .chunk_shift = h.chunk_shift });
}

/* Leave the current record: skip what is left of its payload. */
static int close_record(struct sc_reader *r)
{
	int err;

	if (!r->have_rec)
		return 0;
	err = sc_rd_skip_payload(r, !r->seekable);
	if (err < 0)
		return err;
	r->have_rec = false;
	if (r->seekable)
		r->next++;
	else
		r->index[r->n_index - 1].stored_len = r->pos - r->rec.offset;
	return 0;
}

static bool skip_unknown(struct sc_reader *r)
{
	char where[64];

	if (sc_record_type_name(r->rec.type) || (r->flags & SC_RD_ALL_RECORDS))
		return false;
	sc_log(SC_LOG_INFO, "skipping unknown optional %s in '%s' at offset %llu",
	       sc_rd_where(r, where), r->name, (unsigned long long)r->rec.offset);
	r->skipped++;
	return true;
}

int sc_reader_next(struct sc_reader *r, struct sc_record *rec)
{
	char where[64];
	int err;

	for (;;) {
		if ((err = close_record(r)) < 0)
			return err;
		if (r->at_end || (r->seekable && r->next == r->n_index)) {
			r->at_end = true;
			return 0;
		}
		if ((err = open_record(r)) < 0)
			return err;
		if (r->rec.type == SC_REC_END && !r->seekable) {
			err = sc_rd_finish_stream(r);
			r->have_rec = false;
			if (err < 0)
				return err;
			r->at_end = true;
			return 0;
		}
		if (r->rec.type == SC_REC_END)
			return sc_err(SELFCKPT_EINDEX, "'%s' has an END record at offset %llu "
				      "before its last record", r->name,
				      (unsigned long long)r->rec.offset);
		if (!sc_record_type_name(r->rec.type) && (r->rec.flags & SC_RF_REQUIRED))
			return sc_err(SELFCKPT_EUNKNOWN,
				      "'%s' needs a newer reader: %s at offset %llu is required "
				      "and of a type this version does not know",
				      r->name, sc_rd_where(r, where),
				      (unsigned long long)r->rec.offset);
		if (skip_unknown(r))
			continue;
		*rec = r->rec;
		return 1;
	}
}

int sc_reader_read(struct sc_reader *r, void *dst, size_t n)
{
	struct sc_piece one = { dst, n };

	return sc_reader_read_pieces(r, &one, 1);
}

#define READ_ALL_STEP (1u << 20)

int sc_reader_read_all(struct sc_reader *r, const struct sc_record *rec, void **data,
		       size_t *len)
{
	size_t cap = 0;

	while (*len < rec->raw_len) {
		size_t step = rec->raw_len - *len < READ_ALL_STEP ? (size_t)(rec->raw_len - *len)
								   : READ_ALL_STEP;
		int err;

		if (*len + step > cap) {
			size_t want = cap ? 2 * cap : step;
			void *grown;

			if (want > rec->raw_len)
				want = (size_t)rec->raw_len;
			if (!(grown = realloc(*data, want)))
				return sc_err(ENOMEM, "out of memory reading %s record %u of '%s'",
					      sc_record_type_name(rec->type), rec->seq,
					      sc_reader_name(r));
			*data = grown;
			cap = want;
		}
		if ((err = sc_reader_read(r, (char *)*data + *len, step)))
			return err;
		*len += step;
	}
	return 0;
}

int sc_reader_read_pieces(struct sc_reader *r, const struct sc_piece *pieces, size_t n)
{
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++)
		total += pieces[i].len;
	if (!r->have_rec || total > r->rec.raw_len - r->raw_done)
		return sc_err(SELFCKPT_EUSAGE, "read of %llu payload bytes past the end of the "
			      "current record of '%s'", (unsigned long long)total, r->name);
	return sc_rd_payload(r, pieces, n, total);
}

int sc_reader_skip(struct sc_reader *r, bool verify)
{
	if (!r->have_rec)
		return sc_err(SELFCKPT_EUSAGE, "no current record to skip in '%s'", r->name);
	return sc_rd_skip_payload(r, verify || !r->seekable);
}

int sc_reader_index(struct sc_reader *r, const struct sc_index_entry **entries, size_t *n)
{
	if (!r->seekable && !r->at_end)
		return sc_err(SELFCKPT_EUSAGE, "'%s' is read as a stream: its index is known "
			      "only once the last record was read", r->name);
	*entries = r->index;
	*n = r->n_index;
	return 0;
}

int sc_reader_seek(struct sc_reader *r, size_t i)
{
	if (!r->seekable || i > r->n_index)
		return sc_err(SELFCKPT_EUSAGE, "cannot seek to record %zu of '%s'", i, r->name);
	r->have_rec = false;
	r->at_end = false;
	r->next = i;
	return 0;
}

uint64_t sc_reader_end_offset(const struct sc_reader *r)
{
	return r->seekable || r->at_end ? r->end_offset : 0;
}

uint64_t sc_reader_size(const struct sc_reader *r)
{
	return r->seekable ? r->file_size : r->pos;
}

uint64_t sc_reader_skipped(const struct sc_reader *r)
{
	return r->skipped;
}

const struct sc_header *sc_reader_header(const struct sc_reader *r)
{
	return &r->hdr;
}

int sc_reader_file_identity(const struct sc_reader *r, uint64_t *size, uint64_t *file_sum)
{
	if (!r->seekable)
		return -SELFCKPT_EUSAGE;
	*size = r->file_size;
	*file_sum = r->file_hash;
	return 0;
}

const char *sc_reader_name(const struct sc_reader *r)
{
	return r->name;
}

bool sc_reader_seekable(const struct sc_reader *r)
{
	return r->seekable;
}

/* ---- open and close ---- */

static int classify_fd(struct sc_reader *r)
{
	struct stat st;

	if (fstat(r->fd, &st) < 0)
		return sc_err(errno, "cannot stat '%s': %s", r->name, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return sc_err(EISDIR, "'%s' is a directory, not an image", r->name);
	r->seekable = S_ISREG(st.st_mode) && !(r->flags & SC_RD_STREAM);
	r->file_size = (uint64_t)st.st_size;
	if (r->seekable && st.st_size == 0)
		return sc_err(SELFCKPT_EEMPTY, "'%s' is empty", r->name);
	return 0;
}

/* The pool that decodes the chunks, and the slots of the chunks in flight. */
static int start_threads(struct sc_reader *r, unsigned threads)
{
	int err = sc_pool_new(&r->pool, threads);

	if (err < 0)
		return sc_err(-err, "cannot start reader threads for '%s': %s", r->name,
			      strerror(-err));
	return sc_rd_chunks_init(r);
}

static int reader_setup(struct sc_reader *r, const struct sc_read_opts *o)
{
	int err = classify_fd(r);

	if (err < 0)
		return err;
	r->hash = XXH3_createState();
	if (!r->hash)
		return sc_err(ENOMEM, "out of memory reading '%s'", r->name);
	XXH3_64bits_reset(r->hash);
	if ((err = start_threads(r, o ? o->threads : 0)) < 0 || (err = read_header(r)) < 0)
		return err;
	if (r->seekable)
		return sc_rd_load_index(r);
	return 0;
}

int sc_reader_open_fd(struct sc_reader **out, int fd, const char *name,
		      const struct sc_read_opts *o)
{
	struct sc_reader *r = calloc(1, sizeof(*r));
	int err;

	*out = NULL;
	if (!r || !(r->name = strdup(name))) {
		free(r);
		return sc_err(ENOMEM, "out of memory opening '%s'", name);
	}
	r->fd = fd;
	r->flags = o ? o->flags : 0;
	err = reader_setup(r, o);
	if (err < 0) {
		sc_reader_free(r);
		return err;
	}
	*out = r;
	return 0;
}

int sc_reader_open(struct sc_reader **out, const char *path, const struct sc_read_opts *o)
{
	int fd, err;

	*out = NULL;
	if (!strcmp(path, "-"))
		return sc_reader_open_fd(out, STDIN_FILENO, "<stdin>", o);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sc_err(errno, "cannot open '%s': %s", path, strerror(errno));
	err = sc_reader_open_fd(out, fd, path, o);
	if (err < 0) {
		close(fd);
		return err;
	}
	(*out)->own_fd = true;
	return 0;
}

int sc_reader_set_threads(struct sc_reader *r, unsigned threads)
{
	sc_rd_chunks_release(r); /* waits for any chunk still in flight */
	sc_pool_free(r->pool);
	r->pool = NULL;
	return start_threads(r, threads);
}

void sc_reader_free(struct sc_reader *r)
{
	if (!r)
		return;
	sc_rd_chunks_release(r);
	sc_pool_free(r->pool);
	if (r->hash)
		XXH3_freeState(r->hash);
	if (r->own_fd)
		close(r->fd);
	free(r->index);
	free(r->meta);
	free(r->win);
	free(r->tail);
	free(r->name);
	free(r);
}

int sc_reader_verify_file(struct sc_reader *r)
{
	uint64_t end = r->file_size - SC_TRAILER_SIZE, off = 0, computed;
	XXH3_state_t *st;
	uint8_t *buf;
	int err = 0;

	if (!r->seekable)
		return sc_err(SELFCKPT_EUSAGE, "'%s' is a stream: its checksum is checked at "
			      "its end", r->name);
	st = XXH3_createState();
	buf = malloc(1 << 20);
	if (!st || !buf) {
		err = sc_err(ENOMEM, "out of memory verifying '%s'", r->name);
		goto out;
	}
	XXH3_64bits_reset(st);
	while (off < end && !err) {
		size_t n = end - off < (1 << 20) ? (size_t)(end - off) : (1 << 20);
		ssize_t k = pread(r->fd, buf, n, (off_t)off);

		if (k <= 0) {
			err = k < 0 && errno == EINTR ? 0 : sc_err(k < 0 ? errno : EIO,
				"cannot read '%s' at offset %llu", r->name, (unsigned long long)off);
			continue;
		}
		XXH3_64bits_update(st, buf, (size_t)k);
		off += (uint64_t)k;
	}
	computed = XXH3_64bits_digest(st);
	if (!err && computed != r->file_hash)
		err = sc_err(SELFCKPT_EFILESUM,
			     "whole-file checksum mismatch in '%s' (trailer at offset %llu): "
			     "stored 0x%016llx, computed 0x%016llx", r->name,
			     (unsigned long long)end, (unsigned long long)r->file_hash,
			     (unsigned long long)computed);
out:
	free(buf);
	if (st)
		XXH3_freeState(st);
	return err;
}
