/* SPDX-License-Identifier: MIT */
/*
 * format_internal.h - layout helpers shared by the writer and the reader, and
 * the interface between the writer's two halves.
 */
#ifndef SC_FORMAT_INTERNAL_H
#define SC_FORMAT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "format/sc_format.h"

/* Decoded record header (spec §5.1); the checksums are checked on parse. */
struct sc_rec_header {
	uint32_t type;
	uint16_t flags;
	uint8_t codec;
	uint8_t chunk_shift;
	uint32_t meta_len;
	uint32_t seq;
	uint64_t raw_len;
	uint64_t reserved;
	uint64_t meta_hash;
};

void sc_rec_header_encode(uint8_t out[SC_RECORD_HEADER_SIZE], const struct sc_rec_header *h);

void sc_index_entry_encode(uint8_t out[SC_INDEX_ENTRY_SIZE], const struct sc_index_entry *e);

/* Number of chunks a payload of @raw_len bytes is cut into. */
static inline uint64_t sc_chunk_count(uint64_t raw_len, unsigned shift)
{
	return (raw_len >> shift) + ((raw_len & ((1ull << shift) - 1)) != 0);
}

/* Raw length of chunk @i of a payload of @raw_len bytes. */
static inline uint32_t sc_chunk_raw_len(uint64_t raw_len, unsigned shift, uint64_t i)
{
	uint64_t start = i << shift, left = raw_len - start;

	return (uint32_t)(left < (1ull << shift) ? left : (1ull << shift));
}

/*
 * The writer's output (writer_out.c): the chunk pipeline, the descriptor and
 * the whole-file checksum. Bytes are given in image order; every function
 * returns 0 or the output's sticky error, reported once with the file's name.
 */
struct sc_wout;
struct sc_wout_slot;

/**
 * sc_wout_new() - an output on @fd: a worker pool of @o->threads (0 = all CPUs)
 * compressing chunks of at most @chunk_size bytes at @o->level, and
 * @o->writers of them writing a regular file at once.
 * @name: the file's name for messages; borrowed, it must outlive the output.
 *
 * A regular file that is not O_APPEND is written by offset, from its current
 * position on, and left positioned at the image's end by sc_wout_finish();
 * any other descriptor is written in order with write() and never seeked.
 */
int sc_wout_new(struct sc_wout **out, int fd, const char *name, const struct sc_write_opts *o,
		size_t chunk_size);

/** sc_wout_free() - wait for every task, release everything; NULL is a no-op. */
void sc_wout_free(struct sc_wout *o);

/** sc_wout_put() - the next @n bytes of the image, copied or written before return. */
int sc_wout_put(struct sc_wout *o, const void *p, size_t n);

/**
 * sc_wout_slot() - a slot for the next chunk, waiting for one when all are in
 * use. The slot before it must have been given to sc_wout_submit().
 */
int sc_wout_slot(struct sc_wout *o, struct sc_wout_slot **slot);

/** sc_wout_stage() - @s's buffer of chunk_size bytes, for a chunk gathered from pieces. */
uint8_t *sc_wout_stage(struct sc_wout *o, struct sc_wout_slot *s);

/**
 * sc_wout_submit() - compress @len raw bytes at @raw in @s; the chunk follows
 * the bytes given before it. @raw must stay unchanged until sc_wout_release()
 * or sc_wout_finish() has returned (or the output has failed).
 */
void sc_wout_submit(struct sc_wout *o, struct sc_wout_slot *s, const void *raw, size_t len);

/**
 * sc_wout_release() - every chunk submitted is retired (sc_wout_offset() is
 * final) and no task reads a byte given to sc_wout_submit() any more: the last
 * chunks still waiting for a writer may have been copied for that, so writes
 * can still be in flight. An error they meet is returned by a later call.
 */
int sc_wout_release(struct sc_wout *o);

/**
 * sc_wout_retire() - every chunk submitted is retired (sc_wout_offset() is
 * final); their writes may still read the bytes given to sc_wout_submit().
 */
int sc_wout_retire(struct sc_wout *o);
/** sc_wout_mark() - a mark after every chunk submitted so far, for sc_wout_returned(). */
uint64_t sc_wout_mark(const struct sc_wout *o);
/**
 * sc_wout_returned() - are the bytes given to sc_wout_submit() for the chunks
 * before @mark, all retired, out of every task's hands? 0 when they are (with
 * @wait, once they are), 1 when some are still being written, or an error.
 */
int sc_wout_returned(struct sc_wout *o, uint64_t mark, bool wait);

/** sc_wout_finish() - wait for every write, write what is buffered: all bytes are out. */
int sc_wout_finish(struct sc_wout *o);

/** sc_wout_cancel() - fail the output with @err (reported already) and stop every task. */
void sc_wout_cancel(struct sc_wout *o, int err);

/** sc_wout_offset() - image bytes given so far: the offset of the next one. */
uint64_t sc_wout_offset(const struct sc_wout *o);

/** sc_wout_digest() - XXH3-64 of every byte given so far. */
uint64_t sc_wout_digest(const struct sc_wout *o);

#endif /* SC_FORMAT_INTERNAL_H */
