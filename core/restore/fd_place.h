/* SPDX-License-Identifier: MIT */
/*
 * fd_place.h - the steps of putting a re-created descriptor at its number,
 * shared by fds_restore.c and the restore of each kind (fd_socket_restore.c).
 * Stage contract: the restorer, ordinary libc.
 */
#ifndef SC_FD_PLACE_H
#define SC_FD_PLACE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/sc_fds.h"

/** sc_fd_keep_above() - move @fd, just made for @f, to @min or above; closes it on failure. */
int sc_fd_keep_above(int fd, int min, const struct sc_fd *f);

/**
 * sc_fd_settle() - @fd, just made for @f, where it may stay until it is
 * placed: on @f's own number, where it landed there, else moved to @min or
 * above (sc_fd_keep_above()). Only for a descriptor placed before anything
 * else is made.
 */
int sc_fd_settle(int fd, int min, const struct sc_fd *f);

/**
 * sc_fd_open_regular() - fds_restore.c: @f's regular file opened again (its
 * identity checked, warned about where it changed) at @min or above, at its
 * position. Return: the descriptor, or a refusal (reported).
 */
int sc_fd_open_regular(const struct sc_fd *f, int min);

/**
 * sc_fd_make_held_file() - fds_restore.c: @f's memfd or removed file made
 * again with its saved contents, at @f's number (with @min above it).
 */
int sc_fd_make_held_file(const struct sc_fd *f, int min);

/**
 * sc_fd_reopen_held() - another open file description of the memfd or
 * removed file made at descriptor @made, with @f's flags and position, at
 * @min or above. Return: the descriptor, or a refusal (reported).
 */
int sc_fd_reopen_held(int made, const struct sc_fd *f, int min);

/** sc_fd_place_copy() - put a copy of @src at @f's number, with @f's close-on-exec bit. */
int sc_fd_place_copy(int src, const struct sc_fd *f);

/**
 * sc_fd_place() - as sc_fd_place_copy(), then close @tmp whatever happened,
 * unless it is @f's own number (sc_fd_settle() left it there).
 */
int sc_fd_place(int tmp, const struct sc_fd *f);

/**
 * sc_fd_hold_free_numbers() - put a placeholder on every free number in
 * [3, @min) that no record of @fds for which @made_now() says yes will take,
 * so that the descriptors made for those records, one after the other in
 * the order of their numbers, land on their own (sc_fd_settle()). Best
 * effort, never fails: where it cannot, or the gaps are many, none is held.
 */
void sc_fd_hold_free_numbers(const struct sc_fd *fds, size_t n, int min,
			     bool (*made_now)(const struct sc_fd *fds, size_t i));

/** sc_fd_release_free_numbers() - close the placeholders (at once: nothing else is held). */
void sc_fd_release_free_numbers(void);

/** sc_fd_shares_with() - the first of @fds before @i sharing its description, or NULL. */
const struct sc_fd *sc_fd_shares_with(const struct sc_fd *fds, size_t i);

#endif /* SC_FD_PLACE_H */
