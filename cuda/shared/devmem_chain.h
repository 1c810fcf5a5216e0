/* SPDX-License-Identifier: MIT */
/*
 * devmem_chain.h - where the bytes of a parent piece are: the devmem record of
 * the same kind, address, length and device that an image of the chain stores
 * (spec R-INC-6). Used by the GPU proxy, which uploads them at a restart, by
 * the restore's check before anything changes, and by the merge. No CUDA
 * header needed.
 */
#ifndef SC_DEVMEM_CHAIN_H
#define SC_DEVMEM_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/sc_parent.h"
#include "cuda/shared/gpu_records.h"

struct sc_reader;

/* One devmem record of an image of the chain. */
struct sc_devmem_entry {
	struct sc_devmem d;
	size_t index; /* the record's position in its image */
};

/* The images of a chain, level 0 the one named, 1 its parent, and so on. */
struct sc_devmem_chain {
	char *path[SC_CHAIN_MAX + 1];
	struct sc_devmem_entry *entries[SC_CHAIN_MAX + 1]; /* sorted; listed when first asked */
	size_t n_entries[SC_CHAIN_MAX + 1];
	bool listed[SC_CHAIN_MAX + 1];
	size_t n;
};

/* Where a parent piece's bytes are. */
struct sc_devmem_source {
	size_t level; /* the image of the chain that stores them */
	size_t index; /* its devmem record */
};

/**
 * sc_devmem_chain_open() - follow the parent records from the image at @path
 * to its full image: each parent must be readable (-SELFCKPT_ENOPARENT) and
 * the image its child names (-SELFCKPT_EPARENT). Reported; @c is freed on
 * failure too.
 */
int sc_devmem_chain_open(struct sc_devmem_chain *c, const char *path);

/**
 * sc_devmem_chain_find() - the record that stores the bytes of @d, a parent
 * piece of the image at @level, into @src. Return: 0, or -SELFCKPT_EPARENT
 * (reported) where no parent holds it so, or an error reading a parent.
 */
int sc_devmem_chain_find(struct sc_devmem_chain *c, size_t level, const struct sc_devmem *d,
			 struct sc_devmem_source *src);

/**
 * sc_devmem_chain_source() - where the bytes of devmem record @index of the
 * image at level 0 are, which @r reads: the record itself (level 0), or for
 * a parent piece the record of the chain that stores them. Return: 1 for a
 * parent piece, 0 for a stored record, or a negative error (reported).
 */
int sc_devmem_chain_source(struct sc_devmem_chain *c, struct sc_reader *r, size_t index,
			   struct sc_devmem_source *src);

/** sc_devmem_chain_free() - what @c holds. */
void sc_devmem_chain_free(struct sc_devmem_chain *c);

#endif /* SC_DEVMEM_CHAIN_H */
