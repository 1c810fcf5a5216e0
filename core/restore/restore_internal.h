/* SPDX-License-Identifier: MIT */
/*
 * restore_internal.h - stage 1 of the restore engine, in ordinary C:
 *   restore.c        the order of the steps (sc_restore.h)
 *   restore_load.c   open the image once, read and check every record and the
 *                    whole file
 *   restore_ids.c    the saved pid and thread ids, in new namespaces
 *   restore_probe.c  what the system refuses, asked before the point of no return
 *   restore_plan.c   where each mapping goes, the hole, premapping and filling
 *   restore_jump.c   the blob's arguments, the unmap list, the jump
 *   restore_sysv.c, restore_timers.c  System V objects, timers
 * Stage 2 is the restorer blob (restorer.h).
 */
#ifndef SC_RESTORE_INTERNAL_H
#define SC_RESTORE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>

#include "core/restore/restorer.h"
#include "core/sc_fds.h"
#include "core/sc_locks.h"
#include "core/sc_records.h"
#include "core/sc_sysv.h"
#include "core/sc_timers.h"
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

struct sc_chain;

struct image {
	const char *path;
	int fd;              /* the image, opened once (sc_image_open()); -1 when by path */
	struct sc_reader *r; /* on one thread until sc_plan_fill() */
	pthread_t verifier;  /* the whole-file check, while the payloads are read */
	bool verifying;
	int verify_err;
	uint64_t page;
	struct sc_process_info proc;
	struct sc_signals_info sig;
	struct sc_timers timers;
	struct sc_fd *fds;
	size_t n_fds;
	struct sc_lock *locks;
	size_t n_locks;
	struct sc_sysv_obj *sysv; /* System V objects (1.5) */
	size_t n_sysv;
	struct sc_thread_record *threads;
	size_t n_threads;
	struct sc_thread_record *coord;
	struct mapping *maps;
	size_t n_maps;
	bool has_parent;            /* an incremental image: its parent record (1.7) */
	struct sc_parent_info parent;
	struct sc_chain *chain;     /* its parents, where the pages it leaves to them come from */
};

#define SC_BLOB_ROOM (64ull << 20) /* blob code, arguments, tables and stack */

struct plan {
	bool same_ids;
	uint64_t hole, hole_end, next; /* the bump allocator over the hole */
	struct sc_op *ops;
	size_t n_ops;
	struct sc_copy *copies;
	size_t n_copies, cap_copies;
	struct sc_range *guards;
	size_t n_guards, cap_guards;
	uint64_t vdso_parts[3][2];
	uint64_t vdso_temp;
	int *map_fds;
	size_t n_map_fds;
	int exe_fd; /* the program's file, one of map_fds; -1: none */
	struct sc_piece *pieces; /* one window's stored runs, where its payload goes */
	size_t cap_pieces;
};

/* restore_load.c */

/*
 * sc_image_open() - open the image for the whole restore, before any namespace
 * is entered (inside one, root may no longer open another user's file).
 * Refuses (-EACCES, reported) an image that users other than its owner may
 * write; warns about one that belongs to another user. "-" is standard input.
 * Return: 0 with *@fd open, or a negative error.
 */
int sc_image_open(const char *path, int *fd);

/* What the restore needs before it enters namespaces, from the process record. */
struct sc_peek {
	pid_t pid;         /* the saved pid */
	uint32_t attrs;    /* SC_ATTR_* */
	uint32_t loginuid; /* where attrs has SC_ATTR_LOGINUID */
	bool sysv;         /* the image holds System V objects: they need an IPC namespace */
};

/* The process record's @peek of the image open at @fd. */
int sc_image_peek(int fd, const char *path, struct sc_peek *peek);

/*
 * restore_jump.c: sc_loginuid_restore() - give this process the audit login
 * uid of @peek where it differs; warns where it cannot. Done before a user
 * namespace is entered: inside one, the uid may not be mapped.
 */
void sc_loginuid_restore(const struct sc_peek *peek);
/* sc_loginuid_check_namespace() - warn where the namespace shows the login uid otherwise. */
void sc_loginuid_check_namespace(const struct sc_peek *pr);

/* Read and check every record's metadata: of the image at @path, or at @fd (not owned). */
int sc_image_load(struct image *im, const char *path);
int sc_image_load_fd(struct image *im, int fd, const char *path);
void sc_image_release(struct image *im);
/* The System V segment of id @id the image holds, or NULL. */
const struct sc_sysv_obj *sc_image_segment_of(const struct image *im, uint64_t id);

/*
 * sc_image_verify_start() - check the whole-file checksum on a thread of its
 * own while the payloads are read; sc_image_verify_finish() joins it and
 * returns its verdict (reported). Only for an image loaded from a descriptor.
 */
int sc_image_verify_start(struct image *im);
int sc_image_verify_finish(struct image *im);

/** restore_ids.c: sc_write_knob() - write @text to the /proc file @path: 0 or -errno. */
int sc_write_knob(const char *path, const char *text);

/**
 * sc_image_held_by() - [R-SEG-7] the descriptor record of @im that comes back
 * as the file the segment @s maps (a memfd or removed file, same device and
 * inode, above 2), opened so that it can map it as @s was mapped; or NULL.
 */
const struct sc_fd *sc_image_held_by(const struct image *im, const struct sc_segment_info *s);

/*
 * A shared file mapping that the program may make writable (VM_MAYWRITE, or
 * writable now) needs the file opened for writing, or mprotect() fails later.
 */
static inline bool sc_seg_shared_writable(const struct sc_segment_info *s)
{
	return (s->flags & SC_SEG_SHARED) &&
	       ((s->prot & PROT_WRITE) || (s->vmflags & SC_VMF_MAYWRITE));
}

/* restore_chain.c: the parents of an incremental image (spec §9.14). */

/* @len bytes at @addr: pages asked of the chain; or an area staged at @dst. */
struct sc_ask {
	uint64_t addr, len;
	uint8_t *dst;
};

struct sc_chain {
	size_t n;                                /* parents: [0] the image's, [1] its parent's */
	int fd[SC_CHAIN_MAX];
	char *path[SC_CHAIN_MAX];
	struct sc_parent_info want[SC_CHAIN_MAX]; /* each as its child names it */
	struct image *im;                        /* loaded, @loaded of them */
	size_t loaded;
	struct sc_ask *asks;                     /* the image's parent runs, in address order */
	size_t n_asks, cap_asks;
	struct sc_ask *areas;                    /* its mappings with parent runs, staged */
	size_t n_areas, cap_areas;
	bool threaded;                           /* the parents' decoding threads are started */
	const char *undone; /* the end of a refusal's message; NULL: "nothing was restored" */
};

/*
 * sc_chain_open() - before the restore enters namespaces: open every parent
 * of the image at @path (open at @fd), following each one's parent record.
 * @c: all zero, but for @c->undone.
 * Return: 0 (a full image: @c empty), or -SELFCKPT_ENOPARENT where a parent
 * cannot be opened, or another error; reported.
 */
int sc_chain_open(const char *path, int fd, struct sc_chain *c);
/** sc_chain_load() - load each parent, check it is the image its child names (R-INC-4). */
int sc_chain_load(struct sc_chain *c, const char *path);
/** sc_chain_ask() - note that the chain gives the @len bytes at @addr (a parent run). */
int sc_chain_ask(struct sc_chain *c, uint64_t addr, uint64_t len);
/** sc_chain_stage() - the mapping [@start, @end), which has parent runs, is staged at @premap. */
int sc_chain_stage(struct sc_chain *c, uint64_t start, uint64_t end, void *premap);
/**
 * sc_chain_give() - check that the chain gives every page asked (R-INC-5), then
 * write the staged areas from its images, on @threads threads; the asks and
 * areas are then forgotten, so that the next ones can be given (a merge).
 */
int sc_chain_give(struct sc_chain *c, const char *path, unsigned threads);
/**
 * sc_chain_fill() - sc_chain_give() for a restore, whose image's own pages go
 * over the staged areas after; the parents' readers and threads end.
 */
int sc_chain_fill(struct sc_chain *c, const char *path, unsigned threads);
void sc_chain_release(struct sc_chain *c);

/* restore_plan.c */
int sc_plan_build(struct image *im, struct plan *p);
int sc_plan_fill(struct image *im, struct plan *p, unsigned threads);

/*
 * restore_ids.c: sc_same_ids_enter() - become the process at @pid in new user,
 * pid and mount namespaces. Return: 0 there; 1 when the system does not allow
 * it (warned), this process unchanged. @image_fd stays open in the restoring
 * process only. The processes that wait in between die with the one that ran
 * selfckpt-restore, and take the restored process with them. With @ipc, a new
 * IPC namespace too, where System V objects get back their ids.
 */
int sc_same_ids_enter(pid_t pid, int image_fd, bool ipc);

struct sc_restore_opts;
/*
 * tree_restore.c: sc_restore_tree() - sc_restore() of a job's image set: the
 * process tree it holds. Return: never once restored; a refusal (reported),
 * with nothing changed.
 */
int sc_restore_tree(const struct sc_restore_opts *o);

/*
 * restore_sysv.c: sc_sysv_restore() - make every System V object of @im
 * again, in this process's own IPC namespace, with its id, owner, mode and
 * contents (an attached segment's contents come with its mapping, staged by
 * sc_plan_fill()). Return: 0 or a negative error (reported).
 */
int sc_sysv_restore(const struct image *im);

/**
 * sc_sysv_make_all() - the same for the @n objects @objs (of a process tree's
 * images, each once: tree_restore.c). Return: 0 or a negative error (reported).
 */
int sc_sysv_make_all(const struct sc_sysv_obj *objs, size_t n);

/* restore_probe.c */

/*
 * Is clone3 allowed? 0, or what a seccomp profile answers: -ENOSYS (libc then
 * falls back to clone), or -EPERM (then libc cannot start a thread at all).
 */
int sc_probe_clone3(void);

/* The kernel's prctl_mm_map of the saved process (auxv not set). */
void sc_mm_map_fill(const struct sc_process_info *pr, struct sc_mm_map *mm);

/*
 * sc_probe_mm_map() - would the blob's prctl(PR_SET_MM, PR_SET_MM_MAP) with the
 * saved layout pass? Asked without effect. @exact once the restored process's
 * limits are set (RLIMIT_DATA bounds brk): before, only a refusal of the call
 * itself counts. Return: 0, or -SELFCKPT_EHOST (reported).
 */
int sc_probe_mm_map(const struct image *im, bool exact);

/* restore_jump.c */
int sc_restore_jump(struct image *im, struct plan *p);

/* restore_timers.c */

/*
 * sc_timers_probe() - can every POSIX timer of @im come back with its id and
 * clock here? Each SIGEV_THREAD_ID timer must name a thread of the image.
 * Sets *@restore_ids where the kernel gives a timer a chosen id
 * (PR_TIMER_CREATE_RESTORE_IDS, Linux 6.16); elsewhere the blob makes timers
 * until the id comes, which only small ids allow.
 * Return: 0, or an error (reported).
 */
int sc_timers_probe(const struct image *im, bool *restore_ids);
/* The blob's timer arguments: @t has room for im->timers.n entries. */
void sc_timers_fill(const struct image *im, struct sc_restorer_args *a, struct sc_timer_args *t);

#endif /* SC_RESTORE_INTERNAL_H */
