/* SPDX-License-Identifier: MIT */
/*
 * test_chunk.c - chunk compression: round trips, the raw-fallback rules, the
 * checksum, and decompression of malformed stored bytes.
 *
 * Buffers are malloc'd at their exact size so that AddressSanitizer catches
 * any byte read or written past them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

#include "compress/sc_compress.h"

#define KiB (1u << 10)
#define MiB (1u << 20)
#define HIGH_LEVEL 19

static uint64_t rng_state;

/* splitmix64: a fixed sequence, so a failure is reproducible */
static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill_random(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rng();
}

static void fill_text(uint8_t *p, size_t n)
{
	static const char *const words[] = {
		"checkpoint", "restore", "the", "memory", "of", "segment", "page", "thread",
		"signal", "and", "image", "chunk", "to", "file", "error", "value",
	};
	size_t i = 0;

	while (i < n) {
		for (const char *w = words[rng() % 16]; *w && i < n; w++)
			p[i++] = (uint8_t)*w;
		if (i < n)
			p[i++] = rng() % 12 ? ' ' : '\n';
	}
}

/* 8-byte user-space pointers, each a small step after the one before */
static void fill_pointers(uint8_t *p, size_t n)
{
	uint64_t v = 0x00007f0000000000ull | (rng() & 0xfffffff0ull);

	for (size_t i = 0; i + 8 <= n; i += 8) {
		v += 16 * (1 + rng() % 4);
		memcpy(p + i, &v, 8);
	}
	memset(p + (n & ~(size_t)7), 0, n & 7);
}

/* 4 KiB pages: half all zero, the rest pointers and some text */
static void fill_heap(uint8_t *p, size_t n)
{
	for (size_t off = 0; off < n; off += 4 * KiB) {
		size_t len = n - off < 4 * KiB ? n - off : 4 * KiB;
		unsigned kind = rng() % 20;

		if (kind < 10)
			memset(p + off, 0, len);
		else if (kind < 17)
			fill_pointers(p + off, len);
		else
			fill_text(p + off, len);
	}
}

/*
 * float32 samples of a sine (a rotation, so no libm) with the 16 low mantissa
 * bits random: zstd -1 gives about x1.1 on them.
 */
static void fill_noisy_floats(uint8_t *p, size_t n)
{
	float s = 0.0f, c = 1.0f;

	for (size_t i = 0; i + 4 <= n; i += 4) {
		uint32_t u;

		s += 0.001f * c;
		c -= 0.001f * s;
		memcpy(&u, &s, 4);
		u ^= (uint32_t)rng() & 0xffff;
		memcpy(p + i, &u, 4);
	}
	memset(p + (n & ~(size_t)3), 0, n & 3);
}

static void fill_zero(uint8_t *p, size_t n)
{
	memset(p, 0, n);
}

struct compressed {
	uint8_t *raw;
	uint8_t *out;
	struct sc_chunk c;
};

static void compress_new(struct compressed *z, void (*fill)(uint8_t *, size_t), size_t n,
			 int level)
{
	z->raw = malloc(n ? n : 1);
	z->out = malloc(sc_chunk_bound(n));
	cr_assert(z->raw && z->out);
	fill(z->raw, n);
	z->c = (struct sc_chunk){ .raw = z->raw, .raw_len = n, .out = z->out, .level = level };
	sc_chunk_compress(&z->c);
}

static void compress_free(struct compressed *z)
{
	free(z->raw);
	free(z->out);
}

/* Decode into a buffer of exactly @raw_len bytes; returns sc_chunk_decompress()'s result. */
static int decode_exact(uint8_t codec, const void *stored, size_t stored_len, size_t raw_len)
{
	uint8_t *back = malloc(raw_len ? raw_len : 1);
	int ret;

	cr_assert(back);
	ret = sc_chunk_decompress(codec, stored, stored_len, back, raw_len);
	free(back);
	return ret;
}

static void check_round_trip(void (*fill)(uint8_t *, size_t), size_t n, int level)
{
	struct compressed z;
	uint8_t *back = malloc(n ? n : 1);
	int ret;

	cr_assert(back);
	compress_new(&z, fill, n, level);
	cr_assert(z.c.codec == SC_CODEC_RAW || z.c.codec == SC_CODEC_ZSTD);
	cr_assert_leq(z.c.stored_len, n, "stored %u bytes for %zu raw", z.c.stored_len, n);
	cr_assert_eq(z.c.hash, XXH3_64bits(z.raw, n));
	ret = sc_chunk_decompress(z.c.codec, z.c.stored, z.c.stored_len, back, n);
	cr_assert_eq(ret, 0, "decompress of %zu bytes at level %d: %d", n, level, ret);
	cr_assert(n == 0 || memcmp(back, z.raw, n) == 0, "%zu bytes at level %d differ", n, level);
	free(back);
	compress_free(&z);
}

static const size_t sizes[] = {
	0, 1, 31, 100, 4 * KiB - 1, 64 * KiB - 1, 64 * KiB, 256 * KiB + 3, MiB,
};
static const int levels[] = { SC_LEVEL_STORE, SC_LEVEL_DEFAULT, -1, -3, HIGH_LEVEL };

static void check_round_trips(void (*fill)(uint8_t *, size_t))
{
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (size_t j = 0; j < sizeof(levels) / sizeof(levels[0]); j++)
			if (!(levels[j] == HIGH_LEVEL && sizes[i] > 256 * KiB + 3))
				check_round_trip(fill, sizes[i], levels[j]);
}

Test(compress, round_trip_random)
{
	check_round_trips(fill_random);
}

Test(compress, round_trip_zero)
{
	check_round_trips(fill_zero);
}

Test(compress, round_trip_text)
{
	check_round_trips(fill_text);
}

Test(compress, round_trip_heap_like)
{
	check_round_trips(fill_heap);
}

Test(compress, round_trip_noisy_floats)
{
	check_round_trips(fill_noisy_floats);
}

Test(compress, level_store_keeps_raw_bytes)
{
	struct compressed z;

	compress_new(&z, fill_zero, MiB, SC_LEVEL_STORE);
	cr_assert_eq(z.c.codec, SC_CODEC_RAW);
	cr_assert_eq(z.c.stored, z.raw);
	cr_assert_eq(z.c.stored_len, MiB);
	cr_assert_eq(z.c.hash, XXH3_64bits(z.raw, MiB));
	compress_free(&z);
}

Test(compress, random_data_is_stored_raw)
{
	struct compressed z;

	compress_new(&z, fill_random, MiB, SC_LEVEL_DEFAULT);
	cr_assert_eq(z.c.codec, SC_CODEC_RAW);
	cr_assert_eq(z.c.stored, z.raw);
	cr_assert_eq(z.c.stored_len, MiB);
	compress_free(&z);
}

Test(compress, noisy_floats_are_stored_raw)
{
	static const int lv[] = { SC_LEVEL_DEFAULT, -1, -3, 3 };

	for (size_t i = 0; i < sizeof(lv) / sizeof(lv[0]); i++) {
		struct compressed z;

		compress_new(&z, fill_noisy_floats, MiB, lv[i]);
		cr_assert_eq(z.c.codec, SC_CODEC_RAW, "level %d", lv[i]);
		cr_assert_eq(z.c.stored, z.raw);
		compress_free(&z);
	}
}

/* Under 512 bytes zstd's set-up costs more than the bytes it saves: zeros too stay raw. */
Test(compress, small_chunks_are_stored_raw)
{
	struct compressed z;

	compress_new(&z, fill_zero, 511, SC_LEVEL_DEFAULT);
	cr_assert_eq(z.c.codec, SC_CODEC_RAW);
	cr_assert_eq(z.c.stored, z.raw);
	cr_assert_eq(z.c.stored_len, 511);
	compress_free(&z);
	compress_new(&z, fill_zero, 512, SC_LEVEL_DEFAULT);
	cr_assert_eq(z.c.codec, SC_CODEC_ZSTD);
	compress_free(&z);
}

Test(compress, heap_like_data_shrinks_to_a_fifth)
{
	static const int lv[] = { SC_LEVEL_DEFAULT, -1, 3 };

	for (size_t i = 0; i < sizeof(lv) / sizeof(lv[0]); i++) {
		struct compressed z;

		compress_new(&z, fill_heap, MiB, lv[i]);
		cr_assert_eq(z.c.codec, SC_CODEC_ZSTD, "level %d", lv[i]);
		cr_assert_leq(z.c.stored_len, MiB / 5, "level %d: %u bytes", lv[i], z.c.stored_len);
		cr_assert_eq((const uint8_t *)z.c.stored, z.out);
		compress_free(&z);
	}
}

/* A chunk too small to be sampled, made of @zeros zero bytes then random bytes. */
static void compress_partly_zero(struct compressed *z, size_t n, size_t zeros)
{
	z->raw = malloc(n);
	z->out = malloc(sc_chunk_bound(n));
	cr_assert(z->raw && z->out);
	memset(z->raw, 0, zeros);
	fill_random(z->raw + zeros, n - zeros);
	z->c = (struct sc_chunk){ .raw = z->raw, .raw_len = n, .out = z->out, .level = 1 };
	sc_chunk_compress(&z->c);
}

Test(compress, frame_must_save_a_32nd)
{
	struct compressed z;

	/* zstd itself keeps a block that saves 1/64; the frame must save 1/32 to be kept */
	compress_partly_zero(&z, 32 * KiB, 32 * KiB / 48);
	cr_assert_eq(z.c.codec, SC_CODEC_RAW);
	cr_assert_eq(z.c.stored, z.raw);
	compress_free(&z);
	compress_partly_zero(&z, 32 * KiB, 32 * KiB / 16);
	cr_assert_eq(z.c.codec, SC_CODEC_ZSTD);
	cr_assert_leq(z.c.stored_len, 32 * KiB - 32 * KiB / 32);
	compress_free(&z);
}

Test(compress, hash_is_xxh3_64)
{
	uint8_t buf[1000];

	fill_random(buf, sizeof(buf));
	/* the XXH3-64 of no bytes, from the xxHash test vectors: the image format depends on it */
	cr_assert_eq(sc_chunk_hash(buf, 0), 0x2D06800538D394C2ull);
	for (size_t n = 1; n <= sizeof(buf); n = n * 3 + 1)
		cr_assert_eq(sc_chunk_hash(buf, n), XXH3_64bits(buf, n), "%zu bytes", n);
}

Test(compress, bound_is_enough)
{
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		cr_assert_geq(sc_chunk_bound(sizes[i]), ZSTD_compressBound(sizes[i]));
		/* exact-size scratch: ASan fails the test on any write past it */
		check_round_trip(fill_random, sizes[i], SC_LEVEL_DEFAULT);
		check_round_trip(fill_heap, sizes[i], SC_LEVEL_DEFAULT);
	}
	cr_assert_geq(sc_chunk_bound(UINT32_MAX), (size_t)UINT32_MAX);
}

Test(compress, decompress_refuses_wrong_raw_len)
{
	struct compressed z;

	compress_new(&z, fill_heap, 256 * KiB, SC_LEVEL_DEFAULT);
	cr_assert_eq(z.c.codec, SC_CODEC_ZSTD);
	cr_assert_eq(decode_exact(z.c.codec, z.c.stored, z.c.stored_len, 256 * KiB), 0);
	cr_assert_eq(decode_exact(z.c.codec, z.c.stored, z.c.stored_len, 256 * KiB - 1), -EBADMSG);
	cr_assert_eq(decode_exact(z.c.codec, z.c.stored, z.c.stored_len, 256 * KiB + 1), -EBADMSG);
	cr_assert_eq(decode_exact(z.c.codec, z.c.stored, z.c.stored_len, 0), -EBADMSG);
	compress_free(&z);
}

Test(compress, decompress_refuses_truncated_frame)
{
	struct compressed z;

	compress_new(&z, fill_text, 256 * KiB, SC_LEVEL_DEFAULT);
	cr_assert_eq(z.c.codec, SC_CODEC_ZSTD);
	for (size_t len = 0; len < z.c.stored_len; len += 1 + len / 4) {
		/* copy to an exact-size buffer so a read past the truncation is caught */
		uint8_t *cut = malloc(len ? len : 1);

		cr_assert(cut);
		memcpy(cut, z.c.stored, len);
		cr_assert_eq(decode_exact(SC_CODEC_ZSTD, cut, len, 256 * KiB), -EBADMSG,
			     "%zu of %u bytes", len, z.c.stored_len);
		free(cut);
	}
	cr_assert_eq(decode_exact(SC_CODEC_ZSTD, z.c.stored, z.c.stored_len - 1, 256 * KiB),
		     -EBADMSG);
	compress_free(&z);
}

/* A skippable frame of 4 content bytes: valid zstd that holds no data. */
static const uint8_t skippable[12] = { 0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4 };

Test(compress, decompress_refuses_trailing_bytes)
{
	struct compressed z;
	uint8_t *two;
	uint32_t len;

	compress_new(&z, fill_text, 64 * KiB, SC_LEVEL_DEFAULT);
	cr_assert_eq(z.c.codec, SC_CODEC_ZSTD);
	len = z.c.stored_len;
	two = malloc(2 * len + sizeof(skippable));
	cr_assert(two);
	memcpy(two, z.c.stored, len);
	memcpy(two + len, skippable, sizeof(skippable));
	/* zstd alone would skip a skippable frame after the data */
	cr_assert_eq(decode_exact(SC_CODEC_ZSTD, two, len + sizeof(skippable), 64 * KiB), -EBADMSG);
	cr_assert_eq(decode_exact(SC_CODEC_ZSTD, two, len + 1, 64 * KiB), -EBADMSG);
	memcpy(two + len, z.c.stored, len);
	cr_assert_eq(decode_exact(SC_CODEC_ZSTD, two, 2 * len, 64 * KiB), -EBADMSG);
	cr_assert_eq(decode_exact(SC_CODEC_ZSTD, two, 2 * len, 128 * KiB), -EBADMSG);
	free(two);
	compress_free(&z);
}

Test(compress, decompress_refuses_frame_without_content_size)
{
	uint8_t raw[4096], frame[ZSTD_COMPRESSBOUND(4096)];
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	size_t len;

	cr_assert(cctx);
	fill_text(raw, sizeof(raw));
	ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
	len = ZSTD_compress2(cctx, frame, sizeof(frame), raw, sizeof(raw));
	cr_assert(!ZSTD_isError(len));
	cr_assert_eq(ZSTD_getFrameContentSize(frame, len), ZSTD_CONTENTSIZE_UNKNOWN);
	cr_assert_eq(decode_exact(SC_CODEC_ZSTD, frame, len, sizeof(raw)), -EBADMSG);
	ZSTD_freeCCtx(cctx);
}

Test(compress, decompress_refuses_skippable_frame)
{
	cr_assert_eq(decode_exact(SC_CODEC_ZSTD, skippable, sizeof(skippable), 0), -EBADMSG);
	cr_assert_eq(decode_exact(SC_CODEC_ZSTD, skippable, sizeof(skippable), 4), -EBADMSG);
}

Test(compress, decompress_refuses_garbage)
{
	uint8_t junk[4096];

	for (int round = 0; round < 64; round++) {
		fill_random(junk, sizeof(junk));
		if (round & 1) /* a valid magic number, so the header parser is reached */
			memcpy(junk, "\x28\xb5\x2f\xfd", 4);
		cr_assert_eq(decode_exact(SC_CODEC_ZSTD, junk, sizeof(junk), 64 * KiB), -EBADMSG);
	}
	cr_assert_eq(decode_exact(SC_CODEC_ZSTD, junk, 0, 0), -EBADMSG);
	cr_assert_eq(decode_exact(SC_CODEC_ZSTD, NULL, 0, 0), -EBADMSG);
}

Test(compress, decompress_survives_corrupted_frame)
{
	struct compressed z;
	uint8_t *bad;

	compress_new(&z, fill_heap, 128 * KiB, SC_LEVEL_DEFAULT);
	cr_assert_eq(z.c.codec, SC_CODEC_ZSTD);
	bad = malloc(z.c.stored_len);
	cr_assert(bad);
	for (uint32_t i = 0; i < z.c.stored_len; i += 1 + i / 16) {
		int ret;

		memcpy(bad, z.c.stored, z.c.stored_len);
		bad[i] ^= (uint8_t)(1 + rng() % 255);
		/* undetected damage is the checksum's job; this must only stay in bounds */
		ret = decode_exact(SC_CODEC_ZSTD, bad, z.c.stored_len, 128 * KiB);
		cr_assert(ret == 0 || ret == -EBADMSG, "byte %u: %d", i, ret);
	}
	free(bad);
	compress_free(&z);
}

Test(compress, decompress_refuses_unknown_codec)
{
	uint8_t raw[64] = { 0 };

	cr_assert_eq(decode_exact(2, raw, sizeof(raw), sizeof(raw)), -EINVAL);
	cr_assert_eq(decode_exact(255, raw, sizeof(raw), sizeof(raw)), -EINVAL);
}

Test(compress, decompress_refuses_raw_of_wrong_length)
{
	uint8_t raw[64];

	fill_random(raw, sizeof(raw));
	cr_assert_eq(decode_exact(SC_CODEC_RAW, raw, sizeof(raw), sizeof(raw)), 0);
	cr_assert_eq(decode_exact(SC_CODEC_RAW, raw, sizeof(raw) - 1, sizeof(raw)), -EBADMSG);
	cr_assert_eq(decode_exact(SC_CODEC_RAW, raw, sizeof(raw), sizeof(raw) - 1), -EBADMSG);
	cr_assert_eq(decode_exact(SC_CODEC_RAW, NULL, 0, 0), 0);
}
