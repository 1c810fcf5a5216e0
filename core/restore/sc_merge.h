/* SPDX-License-Identifier: MIT */
/*
 * sc_merge.h - the merge of an incremental image's chain into one full image
 * (spec/image-format.md R-INC-8), so that its parents can be deleted
 * (selfckpt-merge, cli/merge.c).
 */
#ifndef SC_MERGE_H
#define SC_MERGE_H

#include <stdint.h>

struct sc_reader;
struct sc_record;
struct sc_writer;

struct sc_merge_opts {
	const char *path;   /* the newest image of the chain */
	const char *output; /* where the full image goes; NULL: replaces @path */
	unsigned threads;   /* threads that decode and compress; 0: every online CPU */
	int level;          /* the writer's level (SELFCKPT_LEVEL's values) */
	/*
	 * The records of other modules that may leave bytes to the parents (the
	 * CUDA layer's devmem, R-INC-6): @take writes record @rec, which @src
	 * reads, whole to @out and returns 1, or returns 0 to have it copied as
	 * it is, or a negative error (reported). NULL: every such record copied.
	 */
	int (*take)(void *arg, struct sc_reader *src, const struct sc_record *rec,
		    struct sc_writer *out);
	void *take_arg;
};

struct sc_merge_stats {
	unsigned images;       /* in the chain: the image and its parents */
	uint64_t chain_bytes;  /* of memory the chain gave: parent runs resolved */
	uint64_t written;      /* size of the full image */
};

/**
 * sc_merge() - write the full image of @o->path: its records in their order,
 * with the pages it leaves to its parents taken from them (stored, or zero
 * runs where they are all zero), the header without INCREMENTAL and no parent
 * record. The chain is checked as a restore checks it (R-INC-4, R-INC-5)
 * before the output is committed; the output is written to a temporary file
 * and renamed, so a failure leaves every file as it was. An image that is
 * full already is copied (or, in place, left alone).
 * Return: 0 with @st filled, or a negative error (reported).
 */
int sc_merge(const struct sc_merge_opts *o, struct sc_merge_stats *st);

#endif /* SC_MERGE_H */
