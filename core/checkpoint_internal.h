/* SPDX-License-Identifier: MIT */
/*
 * checkpoint_internal.h - the steps of writing an image from a frozen snapshot.
 */
#ifndef SC_CHECKPOINT_INTERNAL_H
#define SC_CHECKPOINT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/core_internal.h"
#include "core/sc_records.h"
#include "format/sc_format.h"

/* What phase 1 (every thread stopped) records besides the threads. */
struct sc_frozen {
	pid_t child;
	uint64_t brk;
	struct sc_signals_info signals;
};

struct sc_save_opts {
	bool embed_files; /* store clean file pages too */
};

/* snapshot.c */
/** sc_snapshot_fd() - /proc/<child>/mem, opened once; safe for pread() from any thread. */
int sc_snapshot_fd(pid_t child);
void sc_snapshot_kill(pid_t child);
char *sc_snapshot_file(pid_t child, const char *name, size_t *len);

/* process_info.c */
int sc_process_collect(const struct sc_frozen *fz, struct sc_process_info *p);

/* segments.c */
int sc_segments_write(struct sc_writer *w, const struct sc_frozen *fz,
		      const struct sc_save_opts *o);

#endif /* SC_CHECKPOINT_INTERNAL_H */
