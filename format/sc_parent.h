/* SPDX-License-Identifier: MIT */
/*
 * sc_parent.h - the parent record of an incremental image (spec §9.14): the
 * image that holds what this one leaves to it, by creation time, size and
 * file checksum, and where it is. Read by the restore, the merge and the GPU
 * proxy, which follows a chain for the device memory left to it.
 */
#ifndef SC_PARENT_H
#define SC_PARENT_H

#include <stdbool.h>
#include <stdint.h>

#include "format/sc_format.h"

struct sc_parent_info {
	uint64_t created_ns; /* the parent's header */
	uint64_t size;       /* the parent's size, bytes */
	uint64_t file_sum;   /* the parent's file checksum (its trailer's) */
	uint32_t depth;      /* incremental images from this one to the full one, this one included */
	char *path;          /* as written: relative to the image's directory, or absolute */
};

#define SC_CHAIN_MAX 64 /* [R-INC-3] the deepest a chain may be */

int sc_parent_write(struct sc_writer *w, const struct sc_parent_info *p);
/** sc_parent_read() - decode and check a parent record (R-INC-1 to R-INC-3). */
int sc_parent_read(struct sc_reader *r, const struct sc_record *rec, struct sc_parent_info *p);
void sc_parent_free(struct sc_parent_info *p);
/**
 * sc_parent_find() - the parent record of the image @r reads, its next records
 * read up to it. Return: 1 with @p filled, 0 for a full image, or a negative
 * error (an incremental image without one before its memory: R-INC-1).
 */
int sc_parent_find(struct sc_reader *r, struct sc_parent_info *p);
/** sc_parent_is() - is the image @r reads the one @want names (creation time, size, checksum)? */
bool sc_parent_is(const struct sc_reader *r, const struct sc_parent_info *want);
/** sc_parent_path() - where the parent @parent that the image at @child names is (R-INC-2). */
char *sc_parent_path(const char *child, const char *parent);

#endif /* SC_PARENT_H */
