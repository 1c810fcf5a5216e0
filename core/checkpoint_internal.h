/* SPDX-License-Identifier: MIT */
/*
 * checkpoint_internal.h - the steps of writing an image from a frozen snapshot.
 */
#ifndef SC_CHECKPOINT_INTERNAL_H
#define SC_CHECKPOINT_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/core_internal.h"
#include "core/fds_freeze.h"
#include "core/shared_freeze.h"
#include "core/sc_records.h"
#include "core/sc_sysv.h"
#include "core/sc_timers.h"
#include "core/unix_flight.h"
#include "core/vmflags.h"
#include "format/sc_format.h"

struct sc_vma;

/* What phase 1 (every thread stopped) records besides the threads. */
struct sc_frozen {
	pid_t child;
	uint64_t brk;
	struct sc_signals_info signals;
	struct sc_fds_frozen fds; /* the descriptors at the instant */
	struct sc_shared_frozen shared; /* copies of the shared memory at the instant */
	struct sc_timers_frozen timers; /* itimers and POSIX timers at the instant */
	struct sc_vmflags vmflags; /* mappings whose settings a fork loses, read just before */
	struct sc_vmflags own_flags; /* every mapping's settings, from the same read */
	bool settings_cached; /* ... or the last checkpoint's, standing in for it */
	struct sc_sysv_frozen sysv; /* System V objects at the instant */
	struct sc_unix_flight flight; /* connections queued at its sockets (count 0: none) */
	/* for the debug log: when the threads had stopped, the instant's state was taken, the clone ended */
	double at_stopped, at_taken, at_cloned;
};

/* A memfd or removed file that descriptors of the image hold: its mappings map that file. */
struct sc_held_file {
	uint64_t dev, inode;
	bool readable;  /* a descriptor of it reads (O_RDONLY or O_RDWR) */
	bool writable;  /* a descriptor of it reads and writes (O_RDWR) */
};

struct sc_save_opts {
	bool embed_files; /* store clean file pages too */
	bool incremental; /* leave the pages the watch vouches for to the parent (lineage.h) */
	struct sc_held_file *held; /* from the descriptors written (segment_held.c) */
	size_t n_held;
};

/* snapshot.c */
/** sc_snapshot_fd() - /proc/<child>/mem, opened once; safe for pread() from any thread. */
int sc_snapshot_fd(pid_t child);
/**
 * sc_snapshot_kill() - end the snapshot @child; a raw thread reaps it meanwhile.
 * sc_snapshot_reaped() - wait until the last snapshot killed is reaped.
 */
void sc_snapshot_kill(pid_t child);
void sc_snapshot_reaped(void);
char *sc_snapshot_file(pid_t child, const char *name, size_t *len);

/* process_info.c */
int sc_process_collect(const struct sc_frozen *fz, struct sc_process_info *p);

/* copier.c: the checkpoint's side of the copier (core_internal.h), one at a time */
/** sc_copier_start() - map the region with @buf_size bytes of buffers; 0 or -errno. */
int sc_copier_start(size_t buf_size);
/** sc_copier_stop() - unmap it; no-op without one. */
void sc_copier_stop(void);
/**
 * sc_copier_forget() - drop the copier without unmapping: in a restored process,
 * which never had the region (it is not in the image).
 */
void sc_copier_forget(void);
/** sc_copier_buffer() - the buffers shared with the snapshot, or NULL without a copier. */
uint8_t *sc_copier_buffer(size_t *size);
/** sc_copier_threads() - snapshot threads that copy, each with its own block; 0: none. */
int sc_copier_threads(void);
/*
 * sc_copier_scan() - have the snapshot's thread @i flag the pages of the @len
 * bytes at @src, 1 where a page is all zero, into @flags (in the region), and
 * count the others (sc_copier_count() once it is done).
 * sc_copier_pack() - have it copy the pages @flags marks not zero, packed, to
 * @dst (in the region).
 * sc_copier_gather() - have it do both in one pass for the pages @flags does
 * not mark SC_COPY_LEFT already, which stay so.
 * One request per thread at a time: wait before the next.
 */
void sc_copier_scan(int i, uint64_t src, uint64_t len, uint8_t *flags);
void sc_copier_pack(int i, void *dst, uint64_t src, uint64_t len, const uint8_t *flags);
void sc_copier_gather(int i, void *dst, uint64_t src, uint64_t len, uint8_t *flags);
uint64_t sc_copier_count(int i);
/* A piece of a read, in pages of its flags; @before: pages to read in the pieces before it. */
struct sc_copier_piece {
	uint64_t first, pages, before;
};
/**
 * sc_copier_split() - cut the @pages flags at @flags, @to_read of them not
 * SC_COPY_LEFT, into at most @k pieces in order that tile them, each with as
 * many pages to read as the others (@min at least; the last the rest), into
 * @piece. Return: the pieces, 1 to @k.
 */
int sc_copier_split(const uint8_t *flags, uint64_t pages, uint64_t to_read, int k, uint64_t min,
		    struct sc_copier_piece *piece);
/**
 * sc_copier_wait() - return once thread @i of snapshot @child served its request:
 * 0; 1 when that thread never started (read the memory another way); -ESRCH
 * (reported) when the snapshot process ended.
 */
int sc_copier_wait(pid_t child, int i);

/* segments.c */
#define SC_WINDOW (64ull << 20) /* bytes of page data read per segment record */
/*
 * A flag per page a read spans, pages of 4 KiB or more: a window's worth, or
 * for an incremental image, whose reads mostly skip pages left to the parent,
 * up to SC_SPAN_WINDOWS windows of address space.
 */
#define SC_SPAN_WINDOWS 8
#define SC_WINDOW_FLAGS (SC_SPAN_WINDOWS * SC_WINDOW / 4096)
#define SC_WINDOWS 3 /* filled by the reader, written, or waiting for their writes */
/* The memory shared with the snapshot: the windows and their flags. */
#define SC_SHARED_SIZE (SC_WINDOWS * (SC_WINDOW + SC_WINDOW_FLAGS))

int sc_segments_write(struct sc_writer *w, const struct sc_frozen *fz,
		      const struct sc_save_opts *o);
/** sc_vma_saved() - does an image hold this mapping? (Not kernel-provided or a device.) */
bool sc_vma_saved(const struct sc_vma *v);

/* segment_held.c */
struct sc_fd;
/** sc_held_files() - the memfds and removed files of @fds, into @o; 0 or -ENOMEM (reported). */
int sc_held_files(const struct sc_fd *fds, size_t n, struct sc_save_opts *o);
/**
 * sc_segments_held() - mark the mappings of @v that map a file of @o->held
 * (SC_VMA_HELD): they come back mapping the file the descriptor comes back
 * with.
 */
void sc_segments_held(const struct sc_save_opts *o, struct sc_vma *v, size_t n);
/**
 * sc_segments_held_check() - once the mappings have their memory flags: refuse,
 * named, a held mapping that no descriptor of its file can map as it was
 * mapped (shared and writable, the descriptors read-only). 0 or the refusal.
 */
int sc_segments_held_check(const struct sc_save_opts *o, const struct sc_vma *v, size_t n);

/* segment_vmflags.c */
/**
 * sc_segments_split() - cut the snapshot's mappings (@v, @n, from its maps)
 * where the process's own settings differ within one, so that each has one
 * set of memory flags. Return: 0 or -ENOMEM (reported); @v may be replaced.
 */
int sc_segments_split(const struct sc_frozen *fz, struct sc_vma **v, size_t *n);
/** The memory flags of the mappings, known early or read on a thread of their own. */
struct sc_vmf_reader {
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	const struct sc_frozen *fz;
	const struct sc_save_opts *o;
	struct sc_vma *v;
	size_t n;
	bool *early;                 /* per mapping: its flags were known at the start */
	size_t n_saved, n_late;      /* mappings saved, and those not known early */
	double waited;               /* seconds sc_segments_vmflags_wait() waited */
	uint64_t known_below;        /* under lock: mappings below have their flags */
	bool flags_done, check_done; /* under lock */
	int flags_err, check_err;
	char msg[1024];              /* the first error's message */
};
/**
 * sc_segments_vmflags_start() - give each mapping of the snapshot (@v, @n,
 * split by sc_segments_split(), marked by sc_segments_held()) its memory
 * flags: the snapshot's VmFlags, and the process's for the settings a fork
 * loses. Those the process's own read before the stop covers are given at
 * once; the others on a thread, which then checks them all. It writes only
 * the vmflags of @v, which no reader of the snapshot's memory looks at.
 * Return: 0, or a negative error (reported; a mapping whose settings no
 * restore can give is refused, named) with nothing started.
 */
int sc_segments_vmflags_start(struct sc_vmf_reader *r, const struct sc_frozen *fz,
			      const struct sc_save_opts *o, struct sc_vma *v, size_t n);
/**
 * sc_segments_vmflags_wait() - wait until mapping @v (of those given to the
 * start) has its flags. Return: 0, or a refusal of the thread's: a mapping
 * whose settings no restore can give, a held mapping no descriptor can map as
 * it was (sc_segments_held_check()), settings changed under the snapshot.
 */
int sc_segments_vmflags_wait(struct sc_vmf_reader *r, const struct sc_vma *v);
/**
 * sc_segments_vmflags_end() - wait for the thread; the refusals of
 * sc_segments_vmflags_wait(), and one of an image whose fork-lost settings
 * changed while the snapshot was taken. Return: 0 or the refusal.
 */
int sc_segments_vmflags_end(struct sc_vmf_reader *r);

/**
 * sc_gpu_guard() - gpu_guard.c: 0, or the refusal (reported) of a process in
 * which a CUDA driver works where no CUDA hooks are installed.
 */
int sc_gpu_guard(void);

#endif /* SC_CHECKPOINT_INTERNAL_H */
