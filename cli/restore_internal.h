/* SPDX-License-Identifier: MIT */
/*
 * restore_internal.h - stage 1 of selfckpt-restore, in ordinary C:
 *   restore.c        command line and the order of the steps
 *   restore_load.c   read and check every record of the image
 *   restore_plan.c   where each mapping goes, the hole, premapping and filling
 *   restore_jump.c   the blob's arguments, the unmap list, the jump
 *   restore_cuda.c   can this machine's GPUs run the CUDA modules of the image
 */
#ifndef SC_RESTORE_INTERNAL_H
#define SC_RESTORE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/restorer.h"
#include "core/sc_fds.h"
#include "core/sc_records.h"
#include "format/sc_format.h"

/* A window of a mapping, as one segment record. */
struct window {
	size_t record;      /* index of its record, to read its payload later */
	struct sc_segment_info seg;
};

/* One mapping of the restored process, made of one or more windows. */
struct mapping {
	struct window *win;
	size_t n_win;
	uint64_t start, end;
	int fd;             /* backing file or memfd, -1 for none */
	uint64_t premap;    /* where its content is staged in the hole, 0 for none */
	uint32_t op_kind;
	bool staged_copy;   /* content goes in by copies (stack, private file) */
	bool remade;        /* a shared file that was gone, made again from the image */
};

struct image {
	const char *path;
	struct sc_reader *r; /* on one thread until sc_plan_fill() */
	uint64_t page;
	struct sc_process_info proc;
	struct sc_signals_info sig;
	struct sc_fd *fds;
	size_t n_fds;
	struct sc_thread_record *threads;
	size_t n_threads;
	struct sc_thread_record *coord;
	struct mapping *maps;
	size_t n_maps;
};

#define SC_BLOB_ROOM (64ull << 20) /* blob code, arguments, tables and stack */

struct plan {
	bool same_ids;
	uint64_t hole, hole_end, next; /* the bump allocator over the hole */
	struct sc_op *ops;
	size_t n_ops;
	struct sc_copy *copies;
	size_t n_copies, cap_copies;
	uint64_t vdso_parts[3][2];
	uint64_t vdso_temp;
	int *map_fds;
	size_t n_map_fds;
	struct sc_piece *pieces; /* one window's stored runs, where its payload goes */
	size_t cap_pieces;
};

/* restore_load.c */
int sc_image_load(struct image *im, const char *path);
void sc_image_release(struct image *im);

/* restore_plan.c */
int sc_plan_build(struct image *im, struct plan *p);
int sc_plan_fill(struct image *im, struct plan *p, unsigned threads);

/* restore_ids.c */
int sc_same_ids_enter(pid_t pid);

/* restore_jump.c */
int sc_restore_jump(struct image *im, struct plan *p);

/*
 * restore_cuda.c: for an image with a cuda-log record, 0 when every GPU it used
 * is here and can run each of its modules; -SELFCKPT_EHOST (reported) otherwise.
 */
int sc_restore_cuda_check(const char *path, unsigned threads);

#endif /* SC_RESTORE_INTERNAL_H */
