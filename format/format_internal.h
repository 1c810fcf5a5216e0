/* SPDX-License-Identifier: MIT */
/*
 * format_internal.h - layout helpers shared by the writer and the reader.
 */
#ifndef SC_FORMAT_INTERNAL_H
#define SC_FORMAT_INTERNAL_H

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

#endif /* SC_FORMAT_INTERNAL_H */
