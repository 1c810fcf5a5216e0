/* SPDX-License-Identifier: MIT */
/*
 * devmem_lineage.h - the pieces of device memory an incremental image leaves
 * to its parent (spec R-INC-6): those the GPU hashes, at this image's instant,
 * to the hash they had at the parent's.
 */
#ifndef SC_DEVMEM_LINEAGE_H
#define SC_DEVMEM_LINEAGE_H

#include <stdbool.h>
#include <stddef.h>

struct sc_gpu_piece;

/**
 * sc_devmem_lineage_hash() - at the instant, API lock held and GPU idle: where
 * images may be incremental (SELFCKPT_INCREMENTAL), hash every piece of @p
 * that may be left to a parent, and keep the hashes for the next image.
 * Pieces the proxy cannot hash are stored, as in a full image. Never fails
 * the checkpoint.
 */
void sc_devmem_lineage_hash(struct sc_gpu_piece *p, size_t n);

/** sc_devmem_lineage_left() - may an incremental image leave @p to its parent? */
bool sc_devmem_lineage_left(const struct sc_gpu_piece *p);

/**
 * sc_devmem_lineage_done() - the checkpoint is over: with @err 0 its image is
 * the next one's parent, and its hashes the ones to compare with; otherwise
 * the last image stays the parent.
 */
void sc_devmem_lineage_done(int err);

/** sc_devmem_lineage_forget() - a restarted process: its first image is full. */
void sc_devmem_lineage_forget(void);

#endif /* SC_DEVMEM_LINEAGE_H */
