/* SPDX-License-Identifier: MIT */
/*
 * encode.c - serialise the fixed-size structures of the image (spec §5, §6).
 * Every field is written with an explicit little-endian store.
 */
#include <string.h>
#include <xxhash.h>

#include "format/format_internal.h"

void sc_rec_header_encode(uint8_t out[SC_RECORD_HEADER_SIZE], const struct sc_rec_header *h)
{
	memset(out, 0, SC_RECORD_HEADER_SIZE);
	sc_put_le32(out + 0, h->type);
	sc_put_le16(out + 4, h->flags);
	out[6] = h->codec;
	out[7] = h->chunk_shift;
	sc_put_le32(out + 8, h->meta_len);
	sc_put_le32(out + 12, h->seq);
	sc_put_le64(out + 16, h->raw_len);
	sc_put_le64(out + 24, h->reserved);
	sc_put_le64(out + 32, h->meta_hash);
	sc_put_le64(out + 40, XXH3_64bits(out, 40));
}

void sc_index_entry_encode(uint8_t out[SC_INDEX_ENTRY_SIZE], const struct sc_index_entry *e)
{
	memset(out, 0, SC_INDEX_ENTRY_SIZE);
	sc_put_le64(out + 0, e->offset);
	sc_put_le64(out + 8, e->raw_len);
	sc_put_le64(out + 16, e->stored_len);
	sc_put_le32(out + 24, e->type);
	sc_put_le32(out + 28, e->meta_len);
	sc_put_le16(out + 32, e->flags);
	out[34] = e->codec;
	out[35] = e->chunk_shift;
}
