/* SPDX-License-Identifier: MIT */
/*
 * sc_fds.h - file descriptors: what a checkpoint records of each one, and how
 * the restorer re-creates them at the same numbers.
 */
#ifndef SC_FDS_H
#define SC_FDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/sc_format.h"

/* Values are part of the image format (spec §9.6). */
enum sc_fd_kind {
	SC_FD_REGULAR = 0, /* a regular file that still exists at its path */
	SC_FD_DIR = 1,
	SC_FD_PIPE_R = 2,  /* read end of a pipe or FIFO */
	SC_FD_PIPE_W = 3,  /* write end */
	SC_FD_MEMFD = 4,   /* contents saved */
	SC_FD_DELETED = 5, /* an unlinked regular file; contents saved */
	SC_FD_SOCKET = 6,  /* a socket that cannot come back: a stand-in whose peer is gone */
	SC_FD_CHAR = 7,    /* character device (tty, /dev/null, ...): reopened by path */
	SC_FD_OTHER = 8,   /* any other object: a stand-in whose peer is gone */
	/* format 1.2: kernel objects whose state the payload holds (fd_state.h) */
	SC_FD_EVENTFD = 9,
	SC_FD_TIMERFD = 10,
	SC_FD_SIGNALFD = 11,
	SC_FD_INOTIFY = 12,
	SC_FD_EPOLL = 13,
	SC_FD_UNIX = 14,   /* a unix domain socket */
	SC_FD_INET = 15,   /* an IPv4 or IPv6 socket that can come back (UDP, TCP listening) */
	SC_FD_PIDFD = 16,  /* format 1.4: a pidfd of the process itself */
	SC_FD_KIND_LAST = SC_FD_PIDFD
};

/*
 * fd_flags bit (format 1.1): a standard descriptor (0, 1, 2) that the program
 * pointed at a regular file of its own (sort -o dup2()s its output file onto
 * 1): restored from the image, where the others stay the restorer's.
 */
#define SC_FD_OWN_STDIO 0x100
/*
 * fd_flags bit (format 1.5): a description the program did not hold at that
 * number but that rode in a message queued on a socket (SCM_RIGHTS): made
 * at its number for the restore to send it again, then closed.
 */
#define SC_FD_IN_FLIGHT 0x200

struct sc_fd {
	int fd;
	enum sc_fd_kind kind;
	int open_flags;      /* O_* as in fdinfo "flags" (octal there) */
	int fd_flags;        /* FD_CLOEXEC */
	uint64_t pos;        /* fdinfo "pos" */
	uint64_t dev, inode; /* of the open file (fstat) */
	uint64_t size;       /* st_size; of a pipe end: the pipe's capacity (F_GETPIPE_SZ) */
	uint64_t mtime_ns;
	uint32_t mode;       /* st_mode */
	char *path;          /* readlink of /proc/self/fd/N, " (deleted)" removed;
				a memfd's is "/memfd:NAME" */
	uint64_t pipe_id;    /* pipe inode: the two ends of one pipe share it; 0 otherwise */
	uint64_t share_id;   /* descriptors with the same non-zero id share one open file
				description (dup, F_DUPFD, inherited); 0: not shared */
	uint32_t seals;      /* F_SEAL_* of a memfd or unlinked file (format 1.2) */
	/* (1.6) O_ASYNC: where its description sends its signal (F_GETOWN_EX), and which */
	uint32_t owner_type; /* F_OWNER_TID, F_OWNER_PID, F_OWNER_PGRP */
	int32_t owner_pid;   /* 0: no owner */
	uint32_t owner_sig;  /* F_GETSIG: 0 is SIGIO */
	void *data;          /* saved contents (memfd, deleted file, pipe buffer: in one
				read end's record per pipe), or the object's state
				(kinds 9 and up: fd_state.h); malloc'd */
	size_t data_len;
};

struct sc_fds_frozen;

/* What 0, 1 and 2 were when a program started: those stay the restorer's at a restore. */
struct sc_stdio_ids {
	bool open[3];
	uint64_t dev[3], ino[3];
};

/** sc_fds_stdio_start() - this process's, at its start (or its restart). */
void sc_fds_stdio_start(struct sc_stdio_ids *ids);

/**
 * sc_fds_job_stdio() - judge 0, 1 and 2 by the job's @ids (its top's), not by
 * this process's own start, until called with NULL: in a tree, a process whose
 * output its shell sent to a file keeps that file (job.c).
 */
void sc_fds_job_stdio(const struct sc_stdio_ids *ids);

/**
 * sc_fds_collect() - the records of the descriptors @z holds (read at the
 * instant of the snapshot by sc_fds_freeze()), except those in @skip: their
 * paths from the descriptor table of process @snapshot (the snapshot, or this
 * process when nothing ran since the freeze), their contents from the copies
 * it holds. Sockets and unknown kinds are recorded (with a warning) so the
 * restore can name them. A description that rides in a message queued on a
 * socket (SCM_RIGHTS) and that the program does not hold gets a record of
 * its own, marked SC_FD_IN_FLIGHT, at the number the freeze's peek gave it.
 * Return: 0 or a negative error (reported), also for a failure of the freeze.
 */
int sc_fds_collect(const struct sc_fds_frozen *z, pid_t snapshot, const int *skip,
		   size_t n_skip, struct sc_fd **out, size_t *n);

/**
 * sc_fds_capture() - record every open descriptor of this process now, except
 * those in @skip: sc_fds_freeze() and sc_fds_collect() in one call, for a
 * process with no other thread running. Nothing about a descriptor changes.
 * Return: 0 or a negative error (reported).
 */
int sc_fds_capture(struct sc_fd **out, size_t *n, const int *skip, size_t n_skip);

/**
 * sc_fds_restarted() - in a process restored from an image whose descriptors
 * were frozen in @z: the standard descriptors that the restorer gave it are
 * from now on the ones it started with (sc_fds_collect() keeps a standard
 * descriptor the program pointed elsewhere).
 */
void sc_fds_restarted(const struct sc_fds_frozen *z);

/** sc_fds_in_list() - is @fd one of the @n numbers of @list? */
bool sc_fds_in_list(int fd, const int *list, size_t n);

/**
 * sc_fds_own_add() - @fd is the library's own: no checkpoint records it, and
 * a restart leaves its number free (whoever opened it opens another).
 */
void sc_fds_own_add(int fd);
/** sc_fds_own_remove() - @fd is no longer the library's own (a restart left it free). */
void sc_fds_own_remove(int fd);
/** sc_fds_own() - the descriptors sc_fds_own_add() named, @n of them. */
const int *sc_fds_own(size_t *n);

/** sc_fds_free() - free an array from sc_fds_capture() or sc_fd_read_record(). */
void sc_fds_free(struct sc_fd *fds, size_t n);

/** sc_fd_write_record() - write @f as one SC_REC_FD record (meta and saved contents). */
int sc_fd_write_record(struct sc_writer *w, const struct sc_fd *f);

/** sc_fds_find() - the record of descriptor number @fd among @fds, or NULL. */
const struct sc_fd *sc_fds_find(const struct sc_fd *fds, size_t n, int fd);

/**
 * sc_fd_read_record() - decode the SC_REC_FD record the reader stands on.
 * Checks the meta (sizes, reserved fields, kind) as spec §9.6 requires.
 */
int sc_fd_read_record(struct sc_reader *r, const struct sc_record *rec, struct sc_fd *out);

/**
 * sc_fds_restore() - re-create every descriptor of @fds at its number, in the
 * calling process (the restorer, before it becomes the restored process).
 *
 * Descriptors 0, 1 and 2 stay the restorer's own (the restored process uses the
 * terminal or files it was started with). Regular files are reopened by path
 * without O_CREAT/O_TRUNC/O_EXCL, positioned, and compared with the recorded
 * identity: a file whose size or modification time changed is reported as a
 * warning; a missing file is an error. Pipes are re-created in pairs (an end
 * whose partner was not in the process gets a fresh partner, closed) and
 * refilled; memfds and deleted files are re-created from their contents.
 * The caller must have moved its own descriptors out of the way first (see
 * sc_fd_move_above()).
 * Return: 0 or a negative error (reported, naming the descriptor and path).
 */
int sc_fds_restore(const struct sc_fd *fds, size_t n);

/**
 * sc_fd_owners_restore() - once the descriptors are back: where each one with
 * O_ASYNC sends its signal, and which (F_SETOWN_EX, F_SETSIG), as @fds say;
 * @was is the image's pid (an owner that was the process itself is this one).
 * What cannot be set is a warning (fd_owner_restore.c).
 */
void sc_fd_owners_restore(const struct sc_fd *fds, size_t n, pid_t was);

/**
 * sc_fd_move_above() - move @fd to the lowest free number >= @min (close-on-exec);
 * returns the new number (and @fd is closed) or -errno (and @fd stays open).
 */
int sc_fd_move_above(int fd, int min);

#endif /* SC_FDS_H */
