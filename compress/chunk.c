/* SPDX-License-Identifier: MIT */
/*
 * chunk.c - one chunk to its stored form and back, and the checksum of its raw bytes.
 *
 * When a chunk is stored raw. A zstd frame costs a decoder pass at restore
 * (1-2 GB/s a core) where a raw chunk costs a memcpy, so a frame is kept only
 * when it buys a real saving. A chunk is stored raw when
 *   - the level is SC_LEVEL_STORE;
 *   - zstd fails (out of memory for its context, or any other error);
 *   - the frame does not save at least 1/32 of the raw size: a few percent of
 *     disk is not worth decoding every byte of the chunk again at restore;
 *   - the chunk is under SMALL_CHUNK bytes: zstd's set-up alone costs about
 *     2 us a frame, to save a few dozen bytes; an image of 10,000 descriptor
 *     records would spend 20 ms on them.
 *
 * Chunks of SAMPLE_MIN_CHUNK bytes or more are sampled first: SAMPLE_PIECES
 * pieces spread over the chunk are compressed together, and when they do not
 * shrink by at least 1/SAMPLE_MIN_SAVING the chunk is stored raw without
 * compressing the rest. Random bytes, and floats whose low mantissa bits are
 * noise, then cost little more than their checksum: zstd -1 would save 7-13%
 * on such floats but run at a tenth of memcpy's speed and decode at a sixth.
 * Memory that compresses (zero pages, pointers, text) is never taken for
 * noise: its samples shrink to 0.4 or less even at level -5. The bar is higher
 * than the 1/32 rule because on barely compressible data zstd's speed, not the
 * bytes saved, is what limits a checkpoint.
 *
 * Errors are returned, not reported: this module does not know which file or
 * record a chunk belongs to, its caller does and reports once with that context.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

#include "compress/sc_compress.h"

#define SMALL_CHUNK 512u
#define SAMPLE_MIN_CHUNK (64u << 10)
#define SAMPLE_PIECES 8u
#define SAMPLE_PIECE (1u << 10)
#define SAMPLE_LEN (SAMPLE_PIECES * SAMPLE_PIECE)
#define SAMPLE_MIN_SAVING 4u /* the sample must shrink by a quarter */

/* The sample and its frame sit in the chunk's scratch, which holds at least the chunk. */
_Static_assert(SAMPLE_LEN + ZSTD_COMPRESSBOUND(SAMPLE_LEN) <= SAMPLE_MIN_CHUNK,
	       "the sample must fit in the scratch of the smallest sampled chunk");

/*
 * Each thread keeps its own zstd contexts: they hold megabytes of tables that
 * are costly to allocate and clear per chunk, and a context is not thread-safe.
 * They are made on first use and freed when the thread exits.
 */
struct chunk_ctx {
	ZSTD_CCtx *cctx;
	ZSTD_DCtx *dctx;
};

static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static int ctx_key_err;

static void ctx_free(void *p)
{
	struct chunk_ctx *ctx = p;

	ZSTD_freeCCtx(ctx->cctx);
	ZSTD_freeDCtx(ctx->dctx);
	free(ctx);
}

static void ctx_key_create(void)
{
	ctx_key_err = pthread_key_create(&ctx_key, ctx_free);
}

/* The calling thread's contexts, or NULL when they cannot be made. */
static struct chunk_ctx *ctx_get(void)
{
	struct chunk_ctx *ctx;

	if (pthread_once(&ctx_once, ctx_key_create) || ctx_key_err)
		return NULL;
	ctx = pthread_getspecific(ctx_key);
	if (ctx)
		return ctx;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	if (pthread_setspecific(ctx_key, ctx)) {
		free(ctx);
		return NULL;
	}
	return ctx;
}

static ZSTD_CCtx *cctx_get(void)
{
	struct chunk_ctx *ctx = ctx_get();

	if (!ctx)
		return NULL;
	if (!ctx->cctx)
		ctx->cctx = ZSTD_createCCtx();
	return ctx->cctx;
}

static ZSTD_DCtx *dctx_get(void)
{
	struct chunk_ctx *ctx = ctx_get();

	if (!ctx)
		return NULL;
	if (!ctx->dctx)
		ctx->dctx = ZSTD_createDCtx();
	return ctx->dctx;
}

size_t sc_chunk_bound(size_t raw_len)
{
	return ZSTD_compressBound(raw_len);
}

uint64_t sc_chunk_hash(const void *p, size_t len)
{
	return XXH3_64bits(p, len);
}

/*
 * The largest frame worth keeping for @raw_len bytes (see the 1/32 rule above).
 * zstd is given exactly this much room, so it gives up as soon as the frame
 * cannot pay instead of finishing a frame that would be thrown away.
 */
static size_t frame_limit(size_t raw_len)
{
	return raw_len - raw_len / 32;
}

/* Whether a sample of the chunk shrinks enough for the whole chunk to be worth compressing. */
static bool sample_shrinks(ZSTD_CCtx *cctx, const struct sc_chunk *c)
{
	const uint8_t *raw = c->raw;
	uint8_t *sample = c->out;
	uint8_t *frame = sample + SAMPLE_LEN;
	size_t step = (c->raw_len - SAMPLE_PIECE) / (SAMPLE_PIECES - 1);
	size_t len;
	unsigned i;

	for (i = 0; i < SAMPLE_PIECES; i++)
		memcpy(sample + i * SAMPLE_PIECE, raw + i * step, SAMPLE_PIECE);
	len = ZSTD_compressCCtx(cctx, frame, SAMPLE_LEN - SAMPLE_LEN / SAMPLE_MIN_SAVING, sample,
				SAMPLE_LEN, c->level);
	return !ZSTD_isError(len);
}

void sc_chunk_compress(struct sc_chunk *c)
{
	ZSTD_CCtx *cctx;
	size_t len;

	assert(c->raw_len <= UINT32_MAX);
	c->hash = sc_chunk_hash(c->raw, c->raw_len);
	c->stored = c->raw;
	c->stored_len = (uint32_t)c->raw_len;
	c->codec = SC_CODEC_RAW;
	if (c->level == SC_LEVEL_STORE || c->raw_len < SMALL_CHUNK)
		return;
	cctx = cctx_get();
	if (!cctx)
		return;
	if (c->raw_len >= SAMPLE_MIN_CHUNK && !sample_shrinks(cctx, c))
		return;
	len = ZSTD_compressCCtx(cctx, c->out, frame_limit(c->raw_len), c->raw, c->raw_len,
				c->level);
	if (ZSTD_isError(len) || len > frame_limit(c->raw_len))
		return;
	c->stored = c->out;
	c->stored_len = (uint32_t)len;
	c->codec = SC_CODEC_ZSTD;
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * Decode a chunk stored as one zstd frame. The frame is checked before any
 * byte is written: it must be a zstd frame (a skippable frame holds no data),
 * declare exactly @raw_len bytes of content and end exactly at @stored_len,
 * so a frame followed by more frames or by garbage is refused too.
 */
static int zstd_decode(const void *stored, size_t stored_len, void *raw, size_t raw_len)
{
	unsigned long long content;
	ZSTD_DCtx *dctx;
	size_t len;

	if (stored_len < 4 || get_le32(stored) != ZSTD_MAGICNUMBER)
		return -EBADMSG;
	content = ZSTD_getFrameContentSize(stored, stored_len);
	if (content == ZSTD_CONTENTSIZE_UNKNOWN || content == ZSTD_CONTENTSIZE_ERROR ||
	    content != raw_len)
		return -EBADMSG;
	len = ZSTD_findFrameCompressedSize(stored, stored_len);
	if (ZSTD_isError(len) || len != stored_len)
		return -EBADMSG;
	dctx = dctx_get();
	if (!dctx)
		return -ENOMEM;
	len = ZSTD_decompressDCtx(dctx, raw, raw_len, stored, stored_len);
	if (ZSTD_isError(len) || len != raw_len)
		return -EBADMSG;
	return 0;
}

int sc_chunk_decompress(uint8_t codec, const void *stored, size_t stored_len, void *raw,
			size_t raw_len)
{
	switch (codec) {
	case SC_CODEC_RAW:
		if (stored_len != raw_len)
			return -EBADMSG;
		if (raw_len) /* memcpy with a NULL pointer is undefined even for 0 bytes */
			memcpy(raw, stored, raw_len);
		return 0;
	case SC_CODEC_ZSTD:
		return zstd_decode(stored, stored_len, raw, raw_len);
	default:
		return -EINVAL;
	}
}
