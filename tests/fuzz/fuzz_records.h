/* SPDX-License-Identifier: MIT */
/*
 * fuzz_records.h - the input of the record fuzz targets (fuzz_records.c) and of
 * the program that makes their seeds from real images (fuzz_seed.c).
 *
 * An input is a list of records of the target's type, one after another:
 *
 *   Offset | Size     | Field
 *   0      | 4        | meta_len
 *   4      | 4        | raw_len: the record's payload length
 *   8      | 4        | data_len
 *   12     | meta_len | the meta, as the record stores it
 *   ...    | data_len | data: the payload is these bytes over and over, to raw_len
 *
 * All little-endian. A length that runs past the input's end is cut to what is
 * left; raw_len is cut to FUZZ_RAW_MAX; a payload without data is zeros. The
 * target writes the records into an image with the image writer, so every
 * checksum holds and a mutation reaches the record's decoder, not a checksum.
 */
#ifndef SC_FUZZ_RECORDS_H
#define SC_FUZZ_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "format/sc_format.h"

#define FUZZ_REC_HEADER 12
#define FUZZ_RAW_MAX (1u << 20)  /* payload bytes of one record */
#define FUZZ_RECORDS_MAX 256     /* records of one input; the rest is ignored */

/* One record of an input: pointers into the input. */
struct fuzz_rec {
	const uint8_t *meta, *data;
	uint32_t meta_len, data_len;
	uint32_t raw_len;
};

static inline uint32_t fuzz_cut(uint32_t want, size_t left)
{
	return want < left ? want : (uint32_t)left;
}

/* The record at *@off of @in (@n bytes), and *@off moved past it; 0 at the end. */
static inline int fuzz_rec_next(const uint8_t *in, size_t n, size_t *off, struct fuzz_rec *r)
{
	size_t at = *off;

	if (n - at < FUZZ_REC_HEADER)
		return 0;
	r->meta_len = sc_get_le32(in + at);
	r->raw_len = sc_get_le32(in + at + 4);
	r->data_len = sc_get_le32(in + at + 8);
	at += FUZZ_REC_HEADER;
	r->meta_len = fuzz_cut(r->meta_len, n - at);
	r->meta = in + at;
	at += r->meta_len;
	r->data_len = fuzz_cut(r->data_len, n - at);
	r->data = in + at;
	at += r->data_len;
	if (r->raw_len > FUZZ_RAW_MAX)
		r->raw_len = FUZZ_RAW_MAX;
	*off = at;
	return 1;
}

/* Write the header of a record into @h (FUZZ_REC_HEADER bytes). */
static inline void fuzz_rec_header(uint8_t *h, uint32_t meta_len, uint32_t raw_len,
				   uint32_t data_len)
{
	sc_put_le32(h, meta_len);
	sc_put_le32(h + 4, raw_len);
	sc_put_le32(h + 8, data_len);
}

/* The payload of @r into @buf (FUZZ_RAW_MAX bytes): its data over and over. */
static inline void fuzz_rec_payload(const struct fuzz_rec *r, uint8_t *buf)
{
	if (!r->data_len) {
		memset(buf, 0, r->raw_len);
		return;
	}
	for (uint32_t done = 0; done < r->raw_len;) {
		uint32_t k = fuzz_cut(r->data_len, r->raw_len - done);

		memcpy(buf + done, r->data, k);
		done += k;
	}
}

/* The fuzz targets, by the record type they fuzz: "fuzz_<name>". */
struct fuzz_target {
	const char *name;
	uint32_t type;
};

static const struct fuzz_target fuzz_targets[] = {
	{ "process", SC_REC_PROCESS }, { "thread", SC_REC_THREAD },
	{ "segment", SC_REC_SEGMENT }, { "fd", SC_REC_FD },
	{ "signals", SC_REC_SIGNALS }, { "cuda_log", SC_REC_CUDA_LOG },
	{ "devmem", SC_REC_DEVMEM }, { "timers", SC_REC_TIMERS },
	{ "locks", SC_REC_LOCKS }, { "sysv", SC_REC_SYSV },
};

#define FUZZ_TARGETS_N (sizeof(fuzz_targets) / sizeof(fuzz_targets[0]))

#endif /* SC_FUZZ_RECORDS_H */
