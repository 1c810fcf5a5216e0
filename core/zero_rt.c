/* SPDX-License-Identifier: MIT */
/*
 * zero_rt.c - whether memory is all zero: sc_page_is_zero() (sc_core.h).
 *
 * Stage contract: pure computation over the bytes it is given, no system call
 * and no libc, so that the snapshot's copier threads (copier_rt.c) use the same
 * check as the checkpoint's pool and the CUDA checkpoint.
 */
#include "core/sc_core.h"

/* Loads of any alignment that may alias anything: no memcpy in freestanding code. */
typedef uint64_t __attribute__((may_alias, aligned(1))) any_u64;

/*
 * OR-ing whole words keeps the loop branch-free so the compiler vectorises
 * it; the early exit is taken once per 512 bytes, as non-zero data usually
 * shows in the first block anyway.
 */
static uint64_t or_64(const unsigned char *c)
{
	const any_u64 *w = (const any_u64 *)c;

	return w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7];
}

bool sc_page_is_zero(const void *p, size_t len)
{
	const unsigned char *c = p;
	uint64_t acc;

	while (len >= 512) {
		acc = 0;
		for (size_t i = 0; i < 512; i += 64)
			acc |= or_64(c + i);
		if (acc)
			return false;
		c += 512;
		len -= 512;
	}
	for (acc = 0; len >= 64; c += 64, len -= 64)
		acc |= or_64(c);
	return acc == 0;
}
