/* SPDX-License-Identifier: MIT */
/*
 * fd_place.h - the steps of putting a re-created descriptor at its number,
 * shared by fds_restore.c and the restore of each kind (fd_socket_restore.c).
 * Stage contract: the restorer, ordinary libc.
 */
#ifndef SC_FD_PLACE_H
#define SC_FD_PLACE_H

#include "core/sc_fds.h"

/** sc_fd_keep_above() - move @fd, just made for @f, to @min or above; closes it on failure. */
int sc_fd_keep_above(int fd, int min, const struct sc_fd *f);

/** sc_fd_place_copy() - put a copy of @src at @f's number, with @f's close-on-exec bit. */
int sc_fd_place_copy(int src, const struct sc_fd *f);

/** sc_fd_place() - as sc_fd_place_copy(), then close @tmp whatever happened. */
int sc_fd_place(int tmp, const struct sc_fd *f);

/** sc_fd_shares_with() - the first of @fds before @i sharing its description, or NULL. */
const struct sc_fd *sc_fd_shares_with(const struct sc_fd *fds, size_t i);

#endif /* SC_FD_PLACE_H */
