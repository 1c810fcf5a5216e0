/* SPDX-License-Identifier: MIT */
/*
 * fds_freeze.h - the descriptors of the process at the instant of the snapshot.
 *
 * A snapshot made by clone() gets a copy of the descriptor table, but shares
 * every open file description with the process that goes on: positions,
 * status flags, pipe buffers and the contents of unlinked files keep moving
 * after the release. So whatever belongs to an open file description is read
 * while every thread is stopped (fds_freeze_rt.c), into a table prepared
 * beforehand; the image is then written from that table.
 */
#ifndef SC_FDS_FREEZE_H
#define SC_FDS_FREEZE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* One descriptor as it was at the instant. */
struct sc_fd_instant {
	int32_t fd;
	int32_t status;   /* F_GETFL: access mode and status flags */
	int32_t fd_flags; /* F_GETFD */
	int32_t held;     /* in the snapshot: a copy of the contents (memfd or pipe), or of the
			     fdinfo of an anon inode or a socket's state (in z->held); -1: none */
	int64_t pos;      /* lseek(SEEK_CUR); -errno where the file cannot seek */
	int64_t held_len; /* bytes in the copy */
	int64_t held_off; /* where the copy starts in @held */
	uint64_t dev, ino, size, mtime_ns;
	uint32_t mode, nlink;
	int32_t share;    /* index of the first descriptor of the same open file description */
	int32_t pipe_cap; /* F_GETPIPE_SZ of a pipe, else 0 */
	int32_t seals;    /* F_GET_SEALS of a memfd or unlinked file that has them, else 0 */
	int32_t locks;    /* in the snapshot: a copy of the fdinfo of a locked file (z->held);
			     -1: none */
	int32_t leased;   /* 1: its description holds a lease (its fdinfo says so) */
	int64_t locks_len;
	int64_t locks_off; /* where the copy starts in @locks */
	int32_t in_flight; /* 1: not the program's: a peek at a socket's queue installed it, a
			      new descriptor of a description that rides in a message
			      (SCM_RIGHTS); the snapshot keeps it, the program never has it */
	/*
	 * What its fdinfo tells of an object without a file (every one shares
	 * one anon inode): which kind it is, and for an eventfd its id, which
	 * names its one open file description. Descriptors that differ in either
	 * do not share one, which spares kcmp() most of its comparisons.
	 */
	int32_t anon_kind; /* SC_ANON_*, 0: not such an object, or not told */
	int64_t anon_id;   /* eventfd-id, or -1 */
	int32_t queued;    /* an inotify instance: bytes of events not read yet (FIONREAD) */
	/* O_ASYNC: to whom its description sends SIGIO (F_GETOWN_EX), and which signal (F_GETSIG) */
	int32_t owner_type, owner_pid, owner_sig;
};

enum { SC_ANON_EVENTFD = 1, SC_ANON_TIMERFD, SC_ANON_SIGNALFD, SC_ANON_EPOLL, SC_ANON_INOTIFY };

#define SC_FDS_SCRATCH_SIZE (256 << 10) /* getdents64, fdinfo, the peeks at a socket's queue */
#define SC_FDS_STAGE_SIZE (64 << 10)    /* the newest bytes of the copies, written at once */

struct sc_fds_frozen {
	struct sc_fd_instant *fds; /* prepared with room for cap entries */
	int cap, n;
	/*
	 * How the freeze finds the descriptors: 1, by trying each number below
	 * the table's size (FDSize, read again at the freeze), 0.3 us a number;
	 * 0, by listing /proc/self/fd, about 3 us a descriptor, for a table
	 * much larger than what it holds.
	 */
	int probe;
	int32_t *order;            /* room for cap indexes: the table sorted by open file description */
	char *scratch;             /* a buffer for getdents64, fdinfo and socket queues */
	int scratch_size;
	/*
	 * One memfd holds every small copy, one after the other: the fdinfo of
	 * each anon inode and locked file, the state and queue of each socket.
	 * A memfd of its own each would cost 10,000 descriptors 10,000 memfds.
	 */
	int held;                  /* that memfd, made at the first copy; -1: none yet */
	int64_t held_end;          /* bytes in it, the staged ones included */
	/*
	 * Its newest bytes, gathered here and written in one call: a write
	 * each (fdinfo, socket state, queue) would be three system calls a
	 * descriptor while every thread is stopped.
	 */
	char *stage;               /* prepared: stage_size bytes */
	int stage_size;
	int stage_len;             /* the bytes of z->held [stage_at, stage_at + stage_len) */
	int64_t stage_at;
	int fdinfo_dir;            /* /proc/self/fdinfo, opened at the first copy; -1: not yet */
	int err;                   /* 0, or -errno of the first failure (the image is refused) */
	int err_fd;                /* the descriptor it concerns, or -1 */
	int err_what;              /* which step failed (SC_FREEZE_*) */
	/*
	 * Helpers that share the reads of a large table (fds_workers_rt.c),
	 * prepared with it; none for a small one. A helper works on a copy of
	 * this struct of its own: its scratch and stage, and a block of z->held
	 * that ends at held_limit, where a copy that does not fit stops.
	 */
	struct sc_fds_helper *helpers;
	int n_helpers;
	int cursor;                /* the next index the helpers take */
	int64_t held_limit;        /* in a helper's copy, the end of its block, where copies stop
				      and a peek that brings descriptors in flight leaves the
				      socket to the coordinator; 0: no block yet, or the table's
				      own struct */
};

/* sc_fd_instant.held of a copy a helper left to the coordinator (fds_workers_rt.c). */
#define SC_HELD_LEFT (-2)

enum {
	SC_FREEZE_LIST = 1,   /* listing /proc/self/fd */
	SC_FREEZE_TOO_MANY,   /* more descriptors than prepared for */
	SC_FREEZE_STAT,       /* fstat or fcntl of a descriptor */
	SC_FREEZE_COPY_FILE,  /* copying an unlinked file or memfd */
	SC_FREEZE_COPY_PIPE,  /* copying a pipe's buffer */
	SC_FREEZE_COPY_FDINFO, /* copying /proc/self/fdinfo of an anon inode */
	SC_FREEZE_COPY_SOCKET, /* copying a socket's state and queue */
};

/* fds.c */
/* Room for descriptors opened between the count and the freeze, at the first try. */
#define SC_FDS_SPARE 256

/**
 * sc_fds_prepare() - allocate @z for the descriptors this process has, with room
 * for @spare more (at least SC_FDS_SPARE) that it opens before the threads
 * stop. Ordinary libc: call it before the freeze.
 * Return: 0 or a negative error (reported).
 */
int sc_fds_prepare(struct sc_fds_frozen *z, unsigned spare);
/**
 * sc_fds_outgrown() - after the freeze: the process had opened more
 * descriptors than @z had room for, so the instant holds none of them; it
 * may be taken again with more room. Nothing was reported.
 */
bool sc_fds_outgrown(const struct sc_fds_frozen *z);
/* How long a checkpoint waits for the program to read queued inotify events. */
#define SC_FDS_QUEUE_WAIT_MS 100

/**
 * sc_fds_events_queued() - after the freeze: the index in @z of the first
 * inotify descriptor with events queued that the program has not read (the kernel keeps
 * them in the object, where no image can), or -1. An instant taken a moment
 * later, once the program has read them, has none.
 */
int sc_fds_events_queued(const struct sc_fds_frozen *z);
/** sc_fds_frozen_free() - release @z's memory (the copies belong to the snapshot). */
void sc_fds_frozen_free(struct sc_fds_frozen *z);

/* fds_freeze_rt.c: raw, while every other thread is stopped */
/**
 * sc_fds_freeze() - fill @z with every descriptor of this process: position,
 * flags, identity, which ones share an open file description, and a copy of
 * the contents of unlinked files, memfds and pipe buffers. Never fails: a
 * failure is kept in z->err for the writer to report.
 */
void sc_fds_freeze(struct sc_fds_frozen *z);
/* fds_locks_rt.c: raw, as sc_fds_freeze() */
/** sc_fds_freeze_lockable() - May @d have locks (a file or a directory)? Its fdinfo tells. */
int sc_fds_freeze_lockable(const struct sc_fd_instant *d);
/**
 * sc_fds_freeze_locks_once() - once descriptors that share a description are
 * known, keep the copy of its locks on the first one only.
 */
void sc_fds_freeze_locks_once(struct sc_fds_frozen *z);
/* fds_workers_rt.c: raw, as sc_fds_freeze() */
struct sc_fds_helper {
	struct sc_fds_frozen own; /* its copy of the table's state */
	struct sc_fds_frozen *z;
	uint64_t stack;           /* the top of its stack */
	int tid;                  /* the kernel zeroes it when the helper exits */
	int pass;                 /* SC_PASS_* */
	int to;                   /* the end of the pass's indexes */
};

enum { SC_PASS_LIST = 1, SC_PASS_FDINFO, SC_PASS_SOCKETS };

/** sc_fds_helpers_size() - the memory sc_fds_helpers_place() takes for @n helpers. */
unsigned long sc_fds_helpers_size(int n);
/**
 * sc_fds_helpers_place() - lay out @n helpers in @mem (sc_fds_helpers_size()
 * bytes, prepared with the table): ordinary libc, before the freeze.
 */
void sc_fds_helpers_place(struct sc_fds_frozen *z, void *mem, int n);
/**
 * sc_fds_parallel() - do @pass with the helpers and this thread: try each
 * number of [@from, @to) and list the open ones in the table, in the order
 * of their numbers (SC_PASS_LIST); or for the descriptors [@from, @to) of
 * the table, copy the fdinfo of each object without a file and of each file
 * or directory (SC_PASS_FDINFO), or the state of each socket that is the
 * first of its description (SC_PASS_SOCKETS); a copy a helper cannot make is
 * marked SC_HELD_LEFT for the caller to make. Return: 0, or -1 where it did
 * nothing (no helpers, or too few descriptors).
 */
int sc_fds_parallel(struct sc_fds_frozen *z, int pass, int from, int to);
/* fds_freeze_rt.c: keep the failure @err (-errno) of step @what on @fd, unless one is kept. */
void sc_fds_freeze_fail(struct sc_fds_frozen *z, int err, int what, int fd);
/* fds_freeze_rt.c: identity, flags and position of @fd into @d; 0 or -errno (not open). */
int sc_fds_freeze_read_one(struct sc_fd_instant *d, int fd);
/* fds_freeze_rt.c: copy the fdinfo of @d, an object without a file, into z->held. */
void sc_fds_freeze_object(struct sc_fds_frozen *z, struct sc_fd_instant *d);
/*
 * fds_freeze_rt.c: make z->held and open /proc/self/fdinfo where not yet
 * done, and write the staged bytes, so that the next copy may go anywhere
 * after z->held_end. Return: 0 or -errno.
 */
long sc_fds_freeze_ready(struct sc_fds_frozen *z);

/* fd_share_rt.c: raw, as sc_fds_freeze() */
/**
 * sc_fds_find_shared() - set each descriptor's share to the index of the
 * first descriptor of its open file description. Needs the kinds of objects
 * and leases (their fdinfo read).
 */
void sc_fds_find_shared(struct sc_fds_frozen *z);
/** sc_fds_sort() - z->order: the indexes of the table, sorted by @cmp (<0, 0, >0). */
void sc_fds_sort(struct sc_fds_frozen *z,
		 int (*cmp)(const struct sc_fd_instant *x, const struct sc_fd_instant *y));
/*
 * fds_freeze_rt.c: copy the fdinfo of @d, a file or directory, into d->locks
 * where it lists locks, and note a lease in d->leased (a failure is kept in
 * z->err).
 */
void sc_fds_freeze_fdinfo_locks(struct sc_fds_frozen *z, struct sc_fd_instant *d);
/**
 * sc_fds_freeze_put() - write @len bytes of @buf at @at in z->held, made on
 * first use; staged, written by sc_fds_freeze() before it returns. Return: 0
 * or -errno.
 */
long sc_fds_freeze_put(struct sc_fds_frozen *z, int64_t at, const void *buf, long len);
/**
 * sc_fds_freeze_add() - note in @z the descriptor @fd that a peek at a
 * socket's queue installed (a description in flight): looked at as the
 * program's own are, marked in flight. Where the table is full it is closed
 * and the failure kept in z->err. Return: 0 or -errno.
 */
int sc_fds_freeze_add(struct sc_fds_frozen *z, int fd);
/**
 * sc_fds_freeze_drop() - close, in this process, the copies sc_fds_freeze()
 * made and the descriptors in flight it took: once the snapshot is cloned it
 * holds them, and the program must not.
 */
void sc_fds_freeze_drop(const struct sc_fds_frozen *z);

#endif /* SC_FDS_FREEZE_H */
