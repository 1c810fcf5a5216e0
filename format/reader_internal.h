/* SPDX-License-Identifier: MIT */
/*
 * reader_internal.h - state shared by the reader's files:
 *   reader.c         open, header, records
 *   reader_io.c      bytes from a seekable file or a stream, with truncation errors
 *   reader_index.c   trailer and index, the end of a stream
 *   reader_chunks.c  chunk headers, decoding on the pool, payload reads
 */
#ifndef SC_READER_INTERNAL_H
#define SC_READER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <xxhash.h>

#include "compress/sc_compress.h"
#include "format/format_internal.h"

/* Where a read's payload bytes go: consecutive pieces, filled in order. */
struct rd_scatter {
	const struct sc_piece *p;
	size_t n;
	size_t i;     /* the piece the next byte goes to */
	uint64_t off; /* bytes of that piece already filled */
};

struct rd_slot {
	struct sc_task task;
	uint8_t codec;
	const uint8_t *stored;
	uint32_t stored_len;
	uint8_t *raw;
	uint32_t raw_len;
	uint64_t want_hash, got_hash;
	int rc;
	uint64_t chunk, offset; /* for messages */
	int read_fd;            /* >= 0: the task reads the stored bytes itself, */
	uint64_t read_at;       /* from this offset (seekable images) */
	int io_err;             /* that read failed: errno, or -1 when the file ended */
	bool spreading;         /* raw is rbuf; once checked its bytes go to spread */
	struct rd_scatter spread;
	uint8_t *sbuf, *rbuf;   /* stored and raw scratch owned by the slot */
	size_t sbuf_cap, rbuf_cap;
	bool busy;
};

struct sc_reader {
	int fd;
	bool own_fd;
	char *name;
	unsigned flags;
	bool seekable;
	uint64_t file_size; /* seekable only */
	uint64_t pos;       /* offset of the next byte to read */
	uint8_t *win;       /* seekable: the bytes [win_at, win_at + win_len), read ahead */
	uint64_t win_at;
	size_t win_len;
	XXH3_state_t *hash; /* stream: every byte before the trailer */
	struct sc_header hdr;
	struct sc_pool *pool;
	struct rd_slot *slots;
	unsigned n_slots, head, count;

	/* the index: read at open (seekable) or built as records pass (stream) */
	struct sc_index_entry *index;
	size_t n_index, cap_index;
	uint64_t end_offset;
	uint64_t file_hash; /* from the trailer (seekable) */
	size_t next; /* seekable: index of the record sc_reader_next() returns */
	bool at_end;
	uint64_t skipped;

	/* the current record */
	bool have_rec;
	struct sc_record rec;
	uint64_t rec_end;      /* seekable: offset just past the record */
	uint8_t *meta;
	size_t meta_cap;
	uint64_t chunk_next;   /* next chunk to read from the file */
	uint64_t n_chunks;
	uint64_t raw_done;     /* payload bytes handed out or skipped */
	uint8_t *tail;         /* decoded chunk partly handed out */
	size_t tail_cap;
	uint32_t tail_len, tail_off;
};

/* "record 12 (segment)" for messages; @buf of 64 bytes. */
const char *sc_rd_where(const struct sc_reader *r, char *buf);

/* reader_io.c */
int sc_rd_read(struct sc_reader *r, void *buf, size_t n, const char *what);
int sc_rd_read_nohash(struct sc_reader *r, void *buf, size_t n, const char *what);
int sc_rd_skip_bytes(struct sc_reader *r, uint64_t n, const char *what);
bool sc_rd_window_copy(struct sc_reader *r, uint64_t at, void *dst, size_t n);
int sc_rd_at_eof(struct sc_reader *r);
size_t sc_rd_read_some(struct sc_reader *r, void *buf, size_t n, int *err);

/* reader_index.c */
int sc_rd_load_index(struct sc_reader *r);
int sc_rd_finish_stream(struct sc_reader *r);
int sc_rd_index_push(struct sc_reader *r, const struct sc_index_entry *e);
int sc_rd_parse_index(struct sc_reader *r, const uint8_t *buf, size_t n,
		      struct sc_index_entry *out);

/* reader.c */
int sc_rd_record_header(struct sc_reader *r, uint64_t offset, uint32_t seq,
			struct sc_rec_header *h);

/* reader_chunks.c */
int sc_rd_chunks_init(struct sc_reader *r);
void sc_rd_chunks_release(struct sc_reader *r);
int sc_rd_payload(struct sc_reader *r, const struct sc_piece *pieces, size_t n_pieces,
		  uint64_t n);
int sc_rd_skip_payload(struct sc_reader *r, bool verify);

#endif /* SC_READER_INTERNAL_H */
