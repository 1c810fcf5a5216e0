/* SPDX-License-Identifier: MIT */
/*
 * fd_index.h - records of an image found by a key in log n steps rather than
 * by a scan: a sorted array of (key, record) pairs. The restore looks up the
 * other end of every pipe and socket; with a scan each, 10,000 descriptors
 * cost 10^8 comparisons. Stage contract: the restorer, ordinary libc.
 */
#ifndef SC_FD_INDEX_H
#define SC_FD_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct sc_fd_key {
	uint64_t a, b; /* the key: (device, pipe inode), (socket inode, 0), ... */
	size_t i;      /* the record's place in the image's list */
};

struct sc_fd_index {
	struct sc_fd_key *keys; /* sorted by (a, b, i) once sc_fd_index_sort() ran */
	size_t n, cap;
};

/**
 * sc_fd_index_init() - room in @x for @cap keys. Return: 0 or a negative
 * error (reported).
 */
int sc_fd_index_init(struct sc_fd_index *x, size_t cap);
/** sc_fd_index_add() - add the key (@a, @b) of record @i; room for it was made. */
void sc_fd_index_add(struct sc_fd_index *x, uint64_t a, uint64_t b, size_t i);
/** sc_fd_index_sort() - sort the keys: records of one key follow each other, in list order. */
void sc_fd_index_sort(struct sc_fd_index *x);
/**
 * sc_fd_index_find() - where the keys (@a, @b) start in x->keys; x->n when
 * there is none. The others with that key follow it.
 */
size_t sc_fd_index_find(const struct sc_fd_index *x, uint64_t a, uint64_t b);
/** sc_fd_index_free() - release @x's memory; @x zeroed may be freed too. */
void sc_fd_index_free(struct sc_fd_index *x);

#endif /* SC_FD_INDEX_H */
