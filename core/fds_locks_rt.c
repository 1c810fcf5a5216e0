/* SPDX-License-Identifier: MIT */
/*
 * fds_locks_rt.c - the file locks of the process at the instant of the
 * snapshot. Stage contract: as fds_freeze_rt.c (every other thread stopped,
 * raw system calls, the table's scratch buffer, no malloc).
 *
 * The fdinfo of a descriptor lists the locks of its open file description
 * (POSIX locks of this process taken through it, OFD locks, flock() locks
 * and leases), at 8 us a descriptor. /proc/locks, read once, names the inode
 * of every lock on the system, so that only descriptors of those inodes need
 * their fdinfo copied; but the kernel holds every file lock of the system
 * while it is read, and takes that hold only after an RCU grace period: 5 to
 * 25 ms. So a process with few files has the fdinfo of each read, and one
 * with many reads /proc/locks.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "core/fds_freeze.h"
#include "core/sc_sys.h"

/* The inode of a "MAJ:MIN:INODE" token, or 0 when @tok (up to @end) is not one. */
static uint64_t token_inode(const char *tok, const char *end)
{
	const char *last = NULL;
	int colons = 0;
	uint64_t ino = 0;

	for (const char *p = tok; p < end; p++)
		if (*p == ':') {
			colons++;
			last = p;
		}
	if (colons != 2 || last + 1 >= end)
		return 0;
	for (const char *p = last + 1; p < end; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		ino = ino * 10 + (uint64_t)(*p - '0');
	}
	return ino;
}

static void note_inode(struct sc_fds_frozen *z, uint64_t ino)
{
	for (int i = 0; i < z->n_locked && i < SC_LOCKED_MAX; i++)
		if (z->locked[i] == ino)
			return;
	if (z->n_locked < SC_LOCKED_MAX)
		z->locked[z->n_locked] = ino;
	if (z->n_locked <= SC_LOCKED_MAX)
		z->n_locked++;
}

/* Every "MAJ:MIN:INODE" of the @n bytes of /proc/locks in @text. */
static void parse_locks(struct sc_fds_frozen *z, const char *text, long n)
{
	const char *tok = text;

	for (const char *p = text; p <= text + n; p++) {
		if (p < text + n && *p != ' ' && *p != '\n')
			continue;
		if (p > tok) {
			uint64_t ino = token_inode(tok, p);

			if (ino)
				note_inode(z, ino);
		}
		tok = p + 1;
	}
}

/* The inodes of /proc/locks into z->locked; all of them unknown when it does not fit. */
static void read_locked(struct sc_fds_frozen *z)
{
	long fd = sc_sys4(SYS_openat, AT_FDCWD, (long)"/proc/locks", O_RDONLY | O_CLOEXEC, 0);
	long n = 0, r = 1;

	z->n_locked = 0;
	if (fd < 0) {
		z->n_locked = SC_LOCKED_MAX + 1; /* cannot tell: read every file's fdinfo */
		return;
	}
	while (n < z->scratch_size && (r = sc_sys3(SYS_read, fd, (long)(z->scratch + n),
						  z->scratch_size - n)) > 0)
		n += r;
	sc_sys1(SYS_close, fd);
	if (r < 0 || n == z->scratch_size)
		z->n_locked = SC_LOCKED_MAX + 1;
	else
		parse_locks(z, z->scratch, n);
}

/* May @d have a lock? Only files and directories are looked at (as /proc/locks shows). */
static int lockable(const struct sc_fd_instant *d)
{
	return S_ISREG(d->mode) || S_ISDIR(d->mode);
}

void sc_fds_freeze_locked_inodes(struct sc_fds_frozen *z)
{
	int files = 0;

	for (int i = 0; i < z->n && files <= SC_LOCKS_BY_FDINFO_MAX; i++)
		files += lockable(&z->fds[i]);
	if (files <= SC_LOCKS_BY_FDINFO_MAX)
		z->n_locked = -1; /* not read: the fdinfo of each file tells */
	else
		read_locked(z);
}

/* May the inode @ino have a lock? Yes where /proc/locks was not read, or named too many. */
static int locked(const struct sc_fds_frozen *z, uint64_t ino)
{
	if (z->n_locked < 0 || z->n_locked > SC_LOCKED_MAX)
		return 1;
	for (int i = 0; i < z->n_locked; i++)
		if (z->locked[i] == ino)
			return 1;
	return 0;
}

int sc_fds_freeze_unlocked(const struct sc_fds_frozen *z, uint64_t ino)
{
	return !locked(z, ino);
}

void sc_fds_freeze_locks(struct sc_fds_frozen *z)
{
	if (!z->n_locked)
		return;
	for (int i = 0; i < z->n && !z->err; i++) {
		struct sc_fd_instant *d = &z->fds[i];

		if (d->share == i && lockable(d) && locked(z, d->ino))
			sc_fds_freeze_fdinfo_locks(z, d);
	}
}
