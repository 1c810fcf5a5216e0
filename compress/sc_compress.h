/* SPDX-License-Identifier: MIT */
/*
 * sc_compress.h - chunk compression and the worker pool that runs it.
 *
 * An image payload is cut into chunks that are compressed independently, so
 * chunks compress and decompress on every core at once. This module knows
 * nothing about files: it turns raw bytes into a stored form (zstd, or the raw
 * bytes themselves when compressing does not pay) and back, and it computes
 * the XXH3-64 of each chunk's raw bytes on the same core that compresses it.
 *
 * Errors are -errno: -EBADMSG for stored bytes that do not decode to exactly
 * the expected raw length, -EINVAL for an unknown codec, -ENOMEM.
 */
#ifndef SC_COMPRESS_H
#define SC_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

/* How a chunk's bytes are stored. Values are part of the image format. */
enum sc_codec {
	SC_CODEC_RAW = 0,  /* the raw bytes themselves */
	SC_CODEC_ZSTD = 1, /* one zstd frame holding exactly the raw bytes */
};

#define SC_LEVEL_STORE 0   /* never compress; still checksum */
#define SC_LEVEL_DEFAULT 1 /* a fast zstd level */

/*
 * The largest ratio of raw to stored bytes a zstd frame can reach: every block
 * of at most 128 KiB needs at least a 3-byte header and one byte. A reader uses
 * it to refuse raw lengths that stored bytes could never hold.
 */
#define SC_ZSTD_MAX_RATIO 32768u

/* One chunk to compress. Fill the inputs; sc_chunk_compress() fills the rest. */
struct sc_chunk {
	/* inputs */
	const void *raw;  /* raw bytes */
	size_t raw_len;   /* at most UINT32_MAX */
	void *out;        /* scratch of sc_chunk_bound(raw_len) bytes */
	int level;        /* SC_LEVEL_STORE, or a zstd level */
	/* results */
	const void *stored;  /* points into out, or at raw when stored raw */
	uint32_t stored_len; /* bytes at stored */
	uint8_t codec;       /* enum sc_codec */
	uint64_t hash;       /* XXH3-64 of the raw bytes */
};

/**
 * sc_chunk_bound() - scratch size sc_chunk_compress() needs for @raw_len bytes.
 */
size_t sc_chunk_bound(size_t raw_len);

/**
 * sc_chunk_compress() - compress one chunk; safe to call from any thread.
 * @c: the chunk; inputs set, results filled on return.
 *
 * Never fails: a chunk that zstd cannot shrink enough to be worth decoding
 * (see the file's comments for the rule), or that zstd refuses, is stored raw.
 * Chunks that look incompressible from a small sample are stored raw without
 * compressing the whole chunk, so random data costs little more than a copy.
 */
void sc_chunk_compress(struct sc_chunk *c);

/**
 * sc_chunk_decompress() - decode a stored chunk into exactly @raw_len bytes.
 * @codec: enum sc_codec value read from the image.
 * @stored: the stored bytes; @stored_len their count.
 * @raw: destination of @raw_len bytes.
 *
 * Does not verify the checksum; see sc_chunk_hash().
 * Return: 0; -EINVAL for an unknown codec; -EBADMSG when the bytes do not
 * decode to exactly @raw_len bytes (including a raw chunk of the wrong size).
 */
int sc_chunk_decompress(uint8_t codec, const void *stored, size_t stored_len, void *raw,
			size_t raw_len);

/**
 * sc_chunk_hash() - the XXH3-64 (seed 0) of @len bytes at @p.
 */
uint64_t sc_chunk_hash(const void *p, size_t len);

/*
 * The worker pool. A task is a function and the state it needs; the caller
 * owns the task's memory and keeps it alive until sc_pool_wait() returns.
 */
struct sc_pool;

struct sc_task {
	void (*fn)(struct sc_task *task); /* runs on a worker */
	/* private to the pool */
	struct sc_task *next;
	int done;
};

/**
 * sc_pool_new() - start a pool of worker threads.
 * @out: receives the pool.
 * @threads: number of workers; 0 means the number of online CPUs (the
 *           caller passes what the user asked for, e.g. SELFCKPT_THREADS).
 *
 * With one worker no thread is started: tasks run inside sc_pool_submit().
 * Return: 0, or -errno.
 */
int sc_pool_new(struct sc_pool **out, unsigned threads);

/**
 * sc_pool_new_taking() - as sc_pool_new(), with workers that take @take_signal:
 * a pool that lives on while the process is checkpointed must let its workers
 * be stopped like any other thread (core's stop signal).
 */
int sc_pool_new_taking(struct sc_pool **out, unsigned threads, int take_signal);

/** sc_pool_free() - stop the workers after the queued tasks ran; NULL is a no-op. */
void sc_pool_free(struct sc_pool *pool);

/** sc_pool_threads() - how many tasks can run at once. */
unsigned sc_pool_threads(const struct sc_pool *pool);

/** sc_pool_submit() - queue @task; tasks start in submission order. */
void sc_pool_submit(struct sc_pool *pool, struct sc_task *task);

/** sc_pool_wait() - return once @task has run. */
void sc_pool_wait(struct sc_pool *pool, struct sc_task *task);

#endif /* SC_COMPRESS_H */
