/* SPDX-License-Identifier: MIT */
/*
 * piece_hash.h - the hash by which an incremental image finds the pieces of
 * device memory that did not change since its parent (spec R-INC-6). The GPU
 * computes it (cuda/proxy/zero_scan.cu), and the proxy on the host where it
 * has no kernel (cuda/proxy/proxy_zero.c): both from this one definition, so
 * that they agree bit for bit.
 *
 * A piece's hash is two sums, modulo 2^64, over its 64-bit words: each word
 * mixed with its index in the piece through a 64-bit finaliser, once per sum
 * with other constants. Sums make the hash independent of the order in which
 * the GPU's threads add their parts, so it is the same on every run; the
 * index makes words that trade places change it; the mixing makes any change
 * of a word move each sum to an unrelated value. Two sums give 128 bits: a
 * changed piece keeps its hash with a chance of about 2^-128.
 */
#ifndef SC_PIECE_HASH_H
#define SC_PIECE_HASH_H

#include <stdint.h>

#ifdef __CUDACC__
#define SC_PIECE_HASH_FN __device__ __forceinline__
#else
#define SC_PIECE_HASH_FN static inline
#endif

/* The finaliser of MurmurHash3: every input bit reaches every output bit. */
SC_PIECE_HASH_FN uint64_t sc_piece_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* Word @w at index @i of its piece, added to the sums @a and @b. */
SC_PIECE_HASH_FN void sc_piece_hash_word(uint64_t w, uint64_t i, uint64_t *a, uint64_t *b)
{
	*a += sc_piece_mix(w ^ (i * 0x9e3779b97f4a7c15ull + 0x243f6a8885a308d3ull));
	*b += sc_piece_mix((w + 0x13198a2e03707344ull) ^ (i * 0xbf58476d1ce4e5b9ull));
}

#endif /* SC_PIECE_HASH_H */
