/* SPDX-License-Identifier: MIT */
/*
 * sc_locks.h - file locks and leases: the POSIX, OFD and flock() locks and
 * the leases the process held at the instant of the snapshot (read with the
 * descriptors: fds_locks_rt.c), the locks record (type 9, spec §9.11), and
 * taking them again at restore.
 */
#ifndef SC_LOCKS_H
#define SC_LOCKS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/fds_freeze.h"
#include "format/sc_format.h"

/* Values are part of the image format (spec §9.11). */
enum sc_lock_kind {
	SC_LOCK_POSIX = 1, /* fcntl(F_SETLK): the process's */
	SC_LOCK_OFD = 2,   /* fcntl(F_OFD_SETLK): the open file description's */
	SC_LOCK_FLOCK = 3, /* flock(): the open file description's */
	SC_LOCK_LEASE = 4, /* fcntl(F_SETLEASE) */
};

#define SC_LOCK_READ 0
#define SC_LOCK_WRITE 1
#define SC_LOCK_TO_EOF UINT64_MAX

struct sc_lock {
	int32_t fd;       /* a descriptor of the open file description that holds it */
	uint32_t kind;    /* enum sc_lock_kind */
	uint32_t type;    /* SC_LOCK_READ or SC_LOCK_WRITE */
	uint64_t start, end; /* bytes start to end, inclusive; end SC_LOCK_TO_EOF: to the end */
};

/**
 * sc_locks_collect() - the locks the freeze found in @z, read from the
 * copies the snapshot @pid holds, into a malloc'd array (NULL, 0: none).
 * Return: 0 or a negative error (reported).
 */
int sc_locks_collect(const struct sc_fds_frozen *z, pid_t pid, struct sc_lock **out, size_t *n);

/** sc_locks_write() - the locks record of @n locks (none is written for 0). */
int sc_locks_write(struct sc_writer *w, const struct sc_lock *locks, size_t n);

/** sc_locks_read() - decode the locks record the reader stands on, checking it (R-TYP-20). */
int sc_locks_read(struct sc_reader *r, const struct sc_record *rec, struct sc_lock **out,
		  size_t *n);

/**
 * sc_locks_restore() - take every lock of @locks again, on the descriptors
 * already restored; a lock held by another process now refuses the restore.
 * Return: 0 or a negative error (reported, naming the descriptor and range).
 */
int sc_locks_restore(const struct sc_lock *locks, size_t n);

#endif /* SC_LOCKS_H */
