/* SPDX-License-Identifier: MIT */
/*
 * fds_locks_rt.c - the file locks of the process at the instant of the
 * snapshot. Stage contract: as fds_freeze_rt.c (every other thread stopped,
 * raw system calls, the table's scratch buffer, no malloc).
 *
 * The fdinfo of a descriptor lists the locks of its open file description
 * (POSIX locks of this process taken through it, OFD locks, flock() locks
 * and leases): it is read for every file and directory, 8 us each, shared
 * among the freeze's helpers where there are many (fds_workers_rt.c).
 * /proc/locks would name the locked inodes in one read, but the kernel takes
 * it only after an RCU grace period (5 to 25 ms), holding every file lock
 * of the system meanwhile. A description with a lease is never marked to
 * tell it apart from others (fd_share_rt.c): its F_SETSIG number is the
 * signal its lease break sends.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "core/fds_freeze.h"

int sc_fds_freeze_lockable(const struct sc_fd_instant *d)
{
	return (S_ISREG(d->mode) || S_ISDIR(d->mode)) && !(d->status & O_PATH);
}

void sc_fds_freeze_locks_once(struct sc_fds_frozen *z)
{
	for (int i = 0; i < z->n; i++)
		if (z->fds[i].share != i)
			z->fds[i].locks = -1; /* the first descriptor's copy lists them */
}
