/* SPDX-License-Identifier: MIT */
/*
 * sc_devmem_parents.h - what the tools do with the device memory an
 * incremental image leaves to its parents (spec R-INC-6): the restore checks
 * it before anything changes, the merge writes it whole (devmem_parents.c).
 */
#ifndef SC_DEVMEM_PARENTS_H
#define SC_DEVMEM_PARENTS_H

#include "cuda/shared/devmem_chain.h"

struct sc_reader;
struct sc_record;
struct sc_writer;

/**
 * sc_devmem_parents_check() - for the image at @path (open at @fd when it is
 * one, not owned): every parent piece is stored by an image of its chain
 * (-SELFCKPT_EPARENT, -SELFCKPT_ENOPARENT), and the records that store them
 * are whole (every chunk's checksum: the bytes the restart will read), read
 * on @threads threads. 0 for an image without parent pieces. Reported.
 */
int sc_devmem_parents_check(const char *path, int fd, unsigned threads);

/* A merge's view of the chain, opened at its first parent piece. */
struct sc_devmem_merge {
	const char *path; /* the image merged */
	unsigned threads;
	struct sc_devmem_chain chain;
	struct sc_reader *r[SC_CHAIN_MAX + 1]; /* the chain's images, opened when first read */
	uint8_t *buf;
	uint64_t chain_bytes; /* device memory the chain gave */
};

/**
 * sc_devmem_merge_record() - devmem record @rec, which @src reads, written to
 * @out as a full image holds it: the 32-byte meta of 1.6, and its bytes, for
 * a parent piece those the chain stores. Return: 0, or a negative error
 * (reported).
 */
int sc_devmem_merge_record(struct sc_devmem_merge *m, struct sc_reader *src,
			   const struct sc_record *rec, struct sc_writer *out);

/** sc_devmem_merge_free() - what @m holds. */
void sc_devmem_merge_free(struct sc_devmem_merge *m);

#endif /* SC_DEVMEM_PARENTS_H */
