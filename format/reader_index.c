/* SPDX-License-Identifier: MIT */
/*
 * reader_index.c - the end of an image: the END record (the index) and the
 * trailer. A seekable image reads them first, so that truncation and a damaged
 * end are refused before any record is handed out; a stream meets them last
 * and checks them against the records it has seen.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/reader_internal.h"
#include "format/sc_array.h"
#include "format/sc_log.h"

struct trailer {
	uint64_t end_offset, n_records, file_hash;
};

int sc_rd_index_push(struct sc_reader *r, const struct sc_index_entry *e)
{
	if (sc_grow((void **)&r->index, &r->cap_index, r->n_index + 1, sizeof(*r->index)))
		return sc_err(ENOMEM, "out of memory reading '%s'", r->name);
	r->index[r->n_index++] = *e;
	return 0;
}

int sc_rd_parse_index(struct sc_reader *r, const uint8_t *buf, size_t n,
		      struct sc_index_entry *out)
{
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = buf + i * SC_INDEX_ENTRY_SIZE;

		if (sc_get_le32(p + 36))
			return sc_err(SELFCKPT_ERESERVED,
				      "index entry %zu of '%s' has reserved bytes set", i, r->name);
		out[i] = (struct sc_index_entry){
			.offset = sc_get_le64(p), .raw_len = sc_get_le64(p + 8),
			.stored_len = sc_get_le64(p + 16), .type = sc_get_le32(p + 24),
			.meta_len = sc_get_le32(p + 28), .flags = sc_get_le16(p + 32),
			.codec = p[34], .chunk_shift = p[35] };
	}
	return 0;
}

/* Records must tile the file from the header to the END record, in order. */
static int check_tiling(struct sc_reader *r)
{
	uint64_t expect = r->hdr.header_size;

	for (size_t i = 0; i < r->n_index; i++) {
		const struct sc_index_entry *e = &r->index[i];

		if (e->offset != expect || e->stored_len < SC_RECORD_HEADER_SIZE + (uint64_t)e->meta_len ||
		    e->stored_len > r->end_offset - e->offset)
			return sc_err(SELFCKPT_EINDEX,
				      "index entry %zu of '%s' places the record at offset %llu "
				      "(%llu bytes); expected offset %llu, before the end record at %llu",
				      i, r->name, (unsigned long long)e->offset,
				      (unsigned long long)e->stored_len, (unsigned long long)expect,
				      (unsigned long long)r->end_offset);
		expect = e->offset + e->stored_len;
	}
	if (expect != r->end_offset)
		return sc_err(SELFCKPT_EINDEX,
			      "the records of '%s' end at offset %llu but the end record is at %llu",
			      r->name, (unsigned long long)expect,
			      (unsigned long long)r->end_offset);
	return 0;
}

static int parse_trailer(struct sc_reader *r, const uint8_t *t, uint64_t at, struct trailer *out)
{
	uint64_t stored = sc_get_le64(t + 32), computed = XXH3_64bits(t, 32);
	int flipped = 0;

	for (int i = 0; i < 8; i++)
		flipped += __builtin_popcount((unsigned)(t[i] ^ (uint8_t)SC_TRAILER_MAGIC[i]));
	/* A few wrong bits are damage; anything else means the trailer is gone. */
	if (flipped > 8)
		return sc_err(SELFCKPT_ETRUNCATED,
			      "'%s' is truncated: no trailer at its end (offset %llu)", r->name,
			      (unsigned long long)at);
	if (flipped || stored != computed)
		return sc_err(SELFCKPT_ETRAILER,
			      "trailer of '%s' at offset %llu is damaged: checksum stored 0x%016llx, "
			      "computed 0x%016llx", r->name, (unsigned long long)at,
			      (unsigned long long)stored, (unsigned long long)computed);
	out->end_offset = sc_get_le64(t + 8);
	out->n_records = sc_get_le64(t + 16);
	out->file_hash = sc_get_le64(t + 24);
	return 0;
}

/* Read the END record at r->pos (header already read into r->rec) into r->index. */
static int read_index_payload(struct sc_reader *r, uint64_t n, struct sc_index_entry *out)
{
	uint64_t size = n * SC_INDEX_ENTRY_SIZE;
	uint8_t *buf;
	int err;

	if (r->rec.flags != SC_RF_REQUIRED || r->rec.meta_len || r->rec.raw_len != size)
		return sc_err(SELFCKPT_EINDEX,
			      "end record of '%s' at offset %llu holds %llu index bytes, expected "
			      "%llu for %llu records", r->name, (unsigned long long)r->rec.offset,
			      (unsigned long long)r->rec.raw_len, (unsigned long long)size,
			      (unsigned long long)n);
	buf = malloc(size ? size : 1);
	if (!buf)
		return sc_err(ENOMEM, "out of memory reading the index of '%s'", r->name);
	err = sc_rd_payload(r, &(struct sc_piece){ buf, size }, 1, size);
	if (!err)
		err = sc_rd_parse_index(r, buf, n, out);
	free(buf);
	return err;
}

static int read_end_record(struct sc_reader *r, uint64_t n)
{
	struct sc_rec_header h;
	int err = sc_rd_record_header(r, r->end_offset, (uint32_t)n, &h);

	if (err < 0)
		return err;
	if (h.type != SC_REC_END || h.seq != n)
		return sc_err(SELFCKPT_EINDEX,
			      "'%s' has no end record at offset %llu named by its trailer "
			      "(found type 0x%x number %u)", r->name,
			      (unsigned long long)r->end_offset, h.type, h.seq);
	r->rec = (struct sc_record){ .type = h.type, .flags = h.flags, .codec = h.codec,
				     .chunk_shift = h.chunk_shift, .seq = h.seq,
				     .offset = r->end_offset, .raw_len = h.raw_len,
				     .meta_len = h.meta_len };
	r->rec_end = r->file_size - SC_TRAILER_SIZE;
	r->have_rec = true;
	r->chunk_next = r->raw_done = 0;
	r->n_chunks = sc_chunk_count(h.raw_len, h.chunk_shift);
	r->index = calloc(n ? n : 1, sizeof(*r->index));
	if (!r->index)
		return sc_err(ENOMEM, "out of memory reading the index of '%s'", r->name);
	r->n_index = r->cap_index = n;
	err = read_index_payload(r, n, r->index);
	r->have_rec = false;
	if (!err && r->pos != r->rec_end)
		err = sc_err(SELFCKPT_EINDEX, "end record of '%s' ends at offset %llu but the "
			     "trailer starts at %llu", r->name, (unsigned long long)r->pos,
			     (unsigned long long)r->rec_end);
	return err;
}

int sc_rd_load_index(struct sc_reader *r)
{
	uint8_t t[SC_TRAILER_SIZE];
	uint64_t at, min_size = r->hdr.header_size + SC_RECORD_HEADER_SIZE + SC_TRAILER_SIZE;
	struct trailer tr;
	int err;

	if (r->file_size < min_size)
		return sc_err(SELFCKPT_ETRUNCATED, "'%s' is truncated: %llu bytes cannot hold a "
			      "header, an end record and a trailer (%llu)", r->name,
			      (unsigned long long)r->file_size, (unsigned long long)min_size);
	at = r->pos = r->file_size - SC_TRAILER_SIZE;
	if ((err = sc_rd_read_nohash(r, t, sizeof(t), "the trailer")) < 0 ||
	    (err = parse_trailer(r, t, at, &tr)) < 0)
		return err;
	if (tr.end_offset < r->hdr.header_size ||
	    tr.end_offset > at - SC_RECORD_HEADER_SIZE ||
	    tr.n_records > (tr.end_offset - r->hdr.header_size) / SC_RECORD_HEADER_SIZE)
		return sc_err(SELFCKPT_ELENGTH,
			      "trailer of '%s' places the end record at offset %llu with %llu records; "
			      "the file has room for neither (size %llu)", r->name,
			      (unsigned long long)tr.end_offset, (unsigned long long)tr.n_records,
			      (unsigned long long)r->file_size);
	r->end_offset = tr.end_offset;
	r->file_hash = tr.file_hash;
	if ((err = read_end_record(r, tr.n_records)) < 0)
		return err;
	r->next = 0;
	return check_tiling(r);
}

/* ---- streams ---- */

static int check_seen(struct sc_reader *r, const struct sc_index_entry *idx, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct sc_index_entry *a = &idx[i], *b = &r->index[i];

		if (a->offset != b->offset || a->raw_len != b->raw_len ||
		    a->stored_len != b->stored_len || a->type != b->type ||
		    a->meta_len != b->meta_len || a->flags != b->flags || a->codec != b->codec ||
		    a->chunk_shift != b->chunk_shift)
			return sc_err(SELFCKPT_EINDEX,
				      "index entry %zu of '%s' does not match the record read at "
				      "offset %llu", i, r->name, (unsigned long long)b->offset);
	}
	return 0;
}

static int read_stream_trailer(struct sc_reader *r, uint64_t n)
{
	uint64_t computed = XXH3_64bits_digest(r->hash), at = r->pos;
	uint8_t t[SC_TRAILER_SIZE];
	struct trailer tr;
	int err;

	if ((err = sc_rd_read_nohash(r, t, sizeof(t), "the trailer")) < 0 ||
	    (err = parse_trailer(r, t, at, &tr)) < 0)
		return err;
	if (tr.end_offset != r->rec.offset || tr.n_records != n)
		return sc_err(SELFCKPT_ETRAILER,
			      "trailer of '%s' names the end record at offset %llu with %llu records; "
			      "it is at %llu with %llu", r->name, (unsigned long long)tr.end_offset,
			      (unsigned long long)tr.n_records, (unsigned long long)r->rec.offset,
			      (unsigned long long)n);
	if (tr.file_hash != computed)
		return sc_err(SELFCKPT_EFILESUM,
			      "whole-file checksum mismatch in '%s' (trailer at offset %llu): stored "
			      "0x%016llx, computed 0x%016llx", r->name, (unsigned long long)at,
			      (unsigned long long)tr.file_hash, (unsigned long long)computed);
	err = sc_rd_at_eof(r);
	if (err == 0)
		err = sc_err(SELFCKPT_ELENGTH, "'%s' has data after its trailer at offset %llu",
			     r->name, (unsigned long long)r->pos);
	return err < 0 ? err : 0;
}

int sc_rd_finish_stream(struct sc_reader *r)
{
	size_t n = r->n_index - 1; /* the END record itself was pushed too */
	struct sc_index_entry *idx = calloc(n ? n : 1, sizeof(*idx));
	int err;

	if (!idx)
		return sc_err(ENOMEM, "out of memory reading the index of '%s'", r->name);
	err = read_index_payload(r, n, idx);
	if (!err)
		err = check_seen(r, idx, n);
	free(idx);
	if (!err)
		err = read_stream_trailer(r, n);
	r->n_index = n;
	r->end_offset = r->rec.offset;
	return err;
}
