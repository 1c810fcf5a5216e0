/* SPDX-License-Identifier: MIT */
/*
 * lineage.h - the last image this process completed, and whether the next
 * one may leave memory to it: incremental images (spec §9.14).
 *
 * With SELFCKPT_INCREMENTAL=N a checkpoint writes an incremental image where
 * R-INC-7 allows it: its parent is the last image completed, still at its
 * path and unchanged, the new image goes to another path, the chain stays
 * within N images after a full one, and the watch of written pages
 * (written.h) vouches for the pages it leaves. Otherwise the image is full,
 * and the log says why at the info level. Only a process checkpointed on its
 * own: a job's images are full.
 */
#ifndef SC_LINEAGE_H
#define SC_LINEAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/sc_records.h"

/* One checkpoint's choice. */
struct sc_lineage_plan {
	bool incremental;
	struct sc_parent_info parent; /* where incremental: the parent record */
};

/** sc_lineage_prepare() - before the stop: arm the watch where images may be incremental. */
void sc_lineage_prepare(bool job);
/** sc_lineage_instant() - among stopped threads, right before the snapshot (async-signal-safe). */
void sc_lineage_instant(void);
/** sc_lineage_snapshot_taken() - the same, right after it (async-signal-safe). */
void sc_lineage_snapshot_taken(void);

/**
 * sc_lineage_plan() - whether the image to @path may be incremental, into
 * @p. Return: 0, or a negative error (out of memory).
 */
int sc_lineage_plan(const char *path, struct sc_lineage_plan *p);

/**
 * sc_lineage_leaves() - while writing an incremental image: the length of
 * the run of pages from @addr to at most @end that the image leaves to its
 * parent (*@leave true) or holds (*@leave false).
 */
uint64_t sc_lineage_leaves(uint64_t addr, uint64_t end, bool *leave);

/** sc_lineage_note_held() - the image holds [@start, @end) of private memory (any run but file). */
void sc_lineage_note_held(uint64_t start, uint64_t end);

/**
 * sc_lineage_done() - the checkpoint of @p is over: with @err 0 the image
 * at @path (@size bytes, created at @created_ns, file checksum @file_sum) is
 * the next one's parent; otherwise the last image stays it, and the next
 * image is full. Frees @p.
 */
void sc_lineage_done(struct sc_lineage_plan *p, const char *path, int err, uint64_t created_ns,
		     uint64_t size, uint64_t file_sum);

/**
 * sc_lineage_again() - the image of @p failed, and its instant is taken again
 * at once: the last image stays the parent, and the pages written before the
 * failed instant still count as written (sc_written_carry()). Frees @p.
 */
void sc_lineage_again(struct sc_lineage_plan *p);

/** sc_lineage_last_full() - is the last image completed a full one? */
bool sc_lineage_last_full(void);

/** sc_lineage_forget() - a restarted process: its first image is full. */
void sc_lineage_forget(void);

#endif /* SC_LINEAGE_H */
