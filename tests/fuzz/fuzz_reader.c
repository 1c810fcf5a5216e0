/* SPDX-License-Identifier: MIT */
/*
 * fuzz_reader.c - libFuzzer target for the image reader (`make fuzz`).
 *
 * Each input is put in a memfd and read as a seekable image and as a stream
 * (SC_RD_STREAM), the way selfckpt-inspect and restore read: every record,
 * part of each payload into a bounded buffer, the rest skipped with
 * verification, the index, and the whole-file checksum. Whatever the bytes,
 * the reader must return an error or success, never crash, hang or allocate
 * without bound (libFuzzer's -rss_limit_mb and -malloc_limit_mb catch that).
 *
 * Random bytes rarely pass a 64-bit checksum, so each input is read a second
 * time with every checksum it carries recomputed (repair()): the fuzzer then
 * reaches the checks behind the checksums (lengths, index, trailer fields).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string.h>
#include <xxhash.h>

#include "compress/sc_compress.h"
#include "format/format_internal.h"
#include "format/sc_format.h"
#include "format/sc_log.h"

#define READ_MAX (256u << 10) /* payload bytes read per record; the rest is skipped */
#define RECORDS_MAX 4096      /* a bound on the walk, far above what a small input holds */

#define REPAIR_RAW_MAX (1u << 20) /* largest zstd chunk repair() decodes */

static int memfd = -1;
static uint8_t *buf, *fixed, *raw;
static size_t fixed_cap;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	sc_log_set_level(SC_LOG_NONE);
	memfd = memfd_create("fuzz", MFD_CLOEXEC);
	buf = malloc(READ_MAX);
	raw = malloc(REPAIR_RAW_MAX);
	if (memfd < 0 || !buf || !raw)
		abort();
	return 0;
}

static void walk(struct sc_reader *r, unsigned flags)
{
	const struct sc_index_entry *idx;
	struct sc_record rec;
	size_t n_idx;
	int err = 0;

	for (unsigned i = 0; i < RECORDS_MAX && (err = sc_reader_next(r, &rec)) == 1; i++) {
		/* Reads of odd sizes cut chunks in pieces; the first record's are read whole. */
		uint64_t want = rec.raw_len < READ_MAX ? rec.raw_len : READ_MAX;
		size_t step = i == 0 ? READ_MAX : 1000 + (i * 4099) % 7000;

		for (uint64_t done = 0; done < want && err == 0;) {
			size_t k = want - done < step ? (size_t)(want - done) : step;

			err = sc_reader_read(r, buf, k);
			done += k;
		}
		if (err < 0 || (err = sc_reader_skip(r, (flags + i) & 1)) < 0)
			return;
	}
	if (err == 0 && sc_reader_index(r, &idx, &n_idx) == 0 && n_idx && idx[0].offset == 0)
		abort(); /* record 0 can never start at offset 0: the index was not checked */
	if (err == 0 && sc_reader_seekable(r)) {
		sc_reader_verify_file(r);
		/* Seek back and read again, in the other order of skipping. */
		if (sc_reader_seek(r, 0) == 0)
			while (sc_reader_next(r, &rec) == 1 && sc_reader_skip(r, !(flags & 1)) == 0)
				;
	}
}

static void read_as(unsigned flags)
{
	struct sc_read_opts o = { .flags = flags, .threads = 1 };
	struct sc_reader *r;

	if (lseek(memfd, 0, SEEK_SET) != 0)
		abort();
	if (sc_reader_open_fd(&r, memfd, "fuzz", &o) == 0) {
		walk(r, flags);
		sc_reader_free(r);
	}
}

/* Recompute the checksum of the chunk whose header is at @b, if its bytes are all there. */
static void repair_chunk(uint8_t *b, size_t avail, uint32_t raw_len)
{
	uint32_t stored = sc_get_le32(b);

	if (stored > avail - SC_CHUNK_HEADER_SIZE)
		return;
	if (b[4] == SC_CODEC_RAW)
		sc_put_le64(b + 8, XXH3_64bits(b + SC_CHUNK_HEADER_SIZE, stored));
	else if (b[4] == SC_CODEC_ZSTD && raw_len <= REPAIR_RAW_MAX &&
		 sc_chunk_decompress(SC_CODEC_ZSTD, b + SC_CHUNK_HEADER_SIZE, stored, raw,
				     raw_len) == 0)
		sc_put_le64(b + 8, XXH3_64bits(raw, raw_len));
}

/*
 * Walk @b as a stream reader would, trusting its lengths only as far as the
 * bytes go, and rewrite every checksum to match: header, record headers,
 * meta, chunks, file and trailer.
 */
static void repair(uint8_t *b, size_t n)
{
	size_t off, end = n >= SC_TRAILER_SIZE ? n - SC_TRAILER_SIZE : 0;
	uint32_t hs;

	if (n < 16 || memcmp(b, SC_MAGIC, SC_MAGIC_LEN))
		return;
	hs = sc_get_le32(b + 12);
	if (hs < SC_HEADER_SIZE || hs > SC_HEADER_MAX || hs > n)
		return;
	sc_put_le64(b + hs - 8, XXH3_64bits(b, hs - 8));
	for (off = hs; off + SC_RECORD_HEADER_SIZE <= end;) {
		uint8_t *h = b + off;
		uint32_t meta_len = sc_get_le32(h + 8);
		uint64_t raw_len = sc_get_le64(h + 16), chunks;
		unsigned shift = h[7];

		if (meta_len > end - off - SC_RECORD_HEADER_SIZE)
			break;
		sc_put_le64(h + 32, XXH3_64bits(h + SC_RECORD_HEADER_SIZE, meta_len));
		sc_put_le64(h + 40, XXH3_64bits(h, 40));
		off += SC_RECORD_HEADER_SIZE + meta_len;
		if (shift < SC_CHUNK_SHIFT_MIN || shift > SC_CHUNK_SHIFT_MAX)
			break;
		chunks = sc_chunk_count(raw_len, shift);
		for (uint64_t i = 0; i < chunks && off + SC_CHUNK_HEADER_SIZE <= end; i++) {
			repair_chunk(b + off, end - off, sc_chunk_raw_len(raw_len, shift, i));
			off += SC_CHUNK_HEADER_SIZE + (size_t)sc_get_le32(b + off);
			if (off > end)
				break;
		}
		if (sc_get_le32(h) == SC_REC_END)
			break;
	}
	if (n >= hs + SC_TRAILER_SIZE) {
		sc_put_le64(b + end + 24, XXH3_64bits(b, end));
		sc_put_le64(b + end + 32, XXH3_64bits(b + end, 32));
	}
}

static void read_all_ways(const uint8_t *data, size_t size)
{
	if (ftruncate(memfd, 0) < 0 || pwrite(memfd, data, size, 0) != (ssize_t)size)
		abort();
	read_as(0);
	read_as(SC_RD_STREAM);
	read_as(SC_RD_ALL_RECORDS);
	read_as(SC_RD_STREAM | SC_RD_ALL_RECORDS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	read_all_ways(data, size);
	if (size > fixed_cap) {
		free(fixed);
		fixed = malloc(size);
		fixed_cap = fixed ? size : 0;
		if (!fixed)
			abort();
	}
	if (size) {
		memcpy(fixed, data, size);
		repair(fixed, size);
		if (memcmp(fixed, data, size))
			read_all_ways(fixed, size);
	}
	return 0;
}
