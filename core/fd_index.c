/* SPDX-License-Identifier: MIT */
/*
 * fd_index.c - a sorted array of (key, record) pairs and its binary search
 * (fd_index.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/fd_index.h"
#include "format/sc_log.h"

int sc_fd_index_init(struct sc_fd_index *x, size_t cap)
{
	memset(x, 0, sizeof(*x));
	x->keys = malloc((cap ? cap : 1) * sizeof(*x->keys));
	if (!x->keys)
		return sc_err(ENOMEM, "out of memory indexing %zu descriptors", cap);
	x->cap = cap;
	return 0;
}

void sc_fd_index_add(struct sc_fd_index *x, uint64_t a, uint64_t b, size_t i)
{
	if (x->n < x->cap)
		x->keys[x->n++] = (struct sc_fd_key){ a, b, i };
}

static int compare_key(uint64_t a, uint64_t b, const struct sc_fd_key *k)
{
	if (a != k->a)
		return a < k->a ? -1 : 1;
	if (b != k->b)
		return b < k->b ? -1 : 1;
	return 0;
}

static int compare(const void *p, const void *q)
{
	const struct sc_fd_key *x = p, *y = q;
	int c = compare_key(x->a, x->b, y);

	if (c)
		return c;
	return x->i < y->i ? -1 : x->i > y->i;
}

void sc_fd_index_sort(struct sc_fd_index *x)
{
	if (x->n > 1)
		qsort(x->keys, x->n, sizeof(*x->keys), compare);
}

size_t sc_fd_index_find(const struct sc_fd_index *x, uint64_t a, uint64_t b)
{
	size_t lo = 0, hi = x->n;

	/* the first key not below (a, b) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (compare_key(a, b, &x->keys[mid]) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < x->n && !compare_key(a, b, &x->keys[lo]) ? lo : x->n;
}

void sc_fd_index_free(struct sc_fd_index *x)
{
	free(x->keys);
	memset(x, 0, sizeof(*x));
}
