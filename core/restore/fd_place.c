/* SPDX-License-Identifier: MIT */
/*
 * fd_place.c - putting re-created descriptors at their numbers.
 *
 * Stage contract: the restorer, ordinary libc, one thread.
 *
 * A descriptor is made at the lowest free number. Made anywhere, it must be
 * moved: above every recorded number first (so that it never sits on a
 * number still to be restored), then onto its own; with the checks, five
 * system calls a descriptor. But the restore goes up the numbers, so where
 * every lower number is taken a new descriptor lands on its own number and
 * stays there: sc_fd_settle(). The numbers no record of that pass takes (the
 * gaps in the program's table, and those of descriptors made later) are held
 * meanwhile by placeholders, so that they do not catch the new descriptors:
 * sc_fd_hold_free_numbers(). Nothing depends on it but speed: a descriptor
 * that lands elsewhere is moved, as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/restore/fd_place.h"
#include "format/sc_log.h"

#define HOLD_MAX_EXTRA 4096 /* placeholders beyond one a record: a sparse table is not held */

int sc_fd_move_above(int fd, int min)
{
	int nfd = fcntl(fd, F_DUPFD_CLOEXEC, min);

	if (nfd < 0)
		return -errno;
	close(fd);
	return nfd;
}

/* Take @fd, just made for @f, above the recorded numbers; closes it on failure. */
int sc_fd_keep_above(int fd, int min, const struct sc_fd *f)
{
	int nfd;

	if (fd >= min)
		return fd; /* above them already */
	nfd = sc_fd_move_above(fd, min);

	if (nfd < 0) {
		close(fd);
		return sc_err(-nfd, "cannot move a descriptor for %d ('%s') to %d or above: %s",
			      f->fd, f->path, min, strerror(-nfd));
	}
	return nfd;
}

int sc_fd_settle(int fd, int min, const struct sc_fd *f)
{
	return fd == f->fd ? fd : sc_fd_keep_above(fd, min, f);
}

/* @f's close-on-exec bit on its own number, where its descriptor was made. */
static int set_cloexec(const struct sc_fd *f)
{
	if (fcntl(f->fd, F_SETFD, f->fd_flags & FD_CLOEXEC) < 0)
		return sc_err(errno, "cannot set the descriptor flags of %d ('%s'): %s", f->fd,
			      f->path, strerror(errno));
	return 0;
}

/* Put a copy of @src at @f's number, with @f's close-on-exec bit. */
int sc_fd_place_copy(int src, const struct sc_fd *f)
{
	if (src == f->fd)
		return set_cloexec(f); /* made there: sc_fd_settle() */
	if (f->fd > 2 && fcntl(f->fd, F_GETFD) >= 0)
		return sc_err(EBUSY, "cannot restore descriptor %d ('%s'): the restorer already "
			      "uses that number", f->fd, f->path);
	if (dup3(src, f->fd, (f->fd_flags & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0)
		return sc_err(errno, "cannot restore descriptor %d ('%s'): %s", f->fd, f->path,
			      strerror(errno));
	return 0;
}

/* As sc_fd_place_copy(), then close @tmp whatever happened, unless it is at its number. */
int sc_fd_place(int tmp, const struct sc_fd *f)
{
	int err = sc_fd_place_copy(tmp, f);

	if (tmp != f->fd)
		close(tmp);
	return err;
}

/* The placeholders sc_fd_hold_free_numbers() put, by number: the restorer is one thread. */
static struct {
	uint8_t *held;
	int min;
} holds;

void sc_fd_hold_free_numbers(const struct sc_fd *fds, size_t n, int min,
			     bool (*made_now)(const struct sc_fd *fds, size_t i))
{
	uint8_t *mine;
	int src;

	/* a sparse table is not held: a placeholder costs two calls, a move three */
	if ((size_t)min > n + HOLD_MAX_EXTRA)
		return;
	mine = calloc((size_t)min, 1);
	holds.held = calloc((size_t)min, 1);
	holds.min = min;
	src = mine && holds.held ? open("/", O_PATH | O_CLOEXEC) : -1; /* else every one moves */
	for (size_t i = 0; src >= 0 && i < n; i++)
		if (fds[i].fd > 2 && fds[i].fd < min && made_now(fds, i))
			mine[fds[i].fd] = 1; /* free, and to be taken by its own descriptor */
	/* F_GETFD: 0.3 us a number, where listing /proc/self/fd costs 3 us a descriptor */
	for (int k = 3; src >= 0 && k < min; k++)
		if (!mine[k] && fcntl(k, F_GETFD) < 0 && dup3(src, k, O_CLOEXEC) == k)
			holds.held[k] = 1;
	if (src >= 0)
		close(src);
	free(mine);
}

void sc_fd_release_free_numbers(void)
{
	for (int k = 3; holds.held && k < holds.min; k++)
		if (holds.held[k])
			close(k);
	free(holds.held);
	holds.held = NULL;
	holds.min = 0;
}
