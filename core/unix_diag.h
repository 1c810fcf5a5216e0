/* SPDX-License-Identifier: MIT */
/*
 * unix_diag.h - who is connected to whom among unix sockets, and the
 * backlog of listening ones, from the kernel's socket diagnostics
 * (NETLINK_SOCK_DIAG, open to any user for the sockets of its network
 * namespace). A socket's own calls do not tell its peer's identity.
 */
#ifndef SC_UNIX_DIAG_H
#define SC_UNIX_DIAG_H

#include <stddef.h>
#include <stdint.h>

struct sc_unix_sock {
	uint64_t ino, peer;  /* peer: the inode of the socket it is connected to, or 0 */
	uint32_t backlog;    /* of a listening socket: the listen() backlog */
	uint32_t connected;  /* it was connected: its peer may since have closed */
	uint32_t shutdown;   /* 1: shut down for reading, 2: for writing (the kernel's bits) */
	uint64_t vfs_ino;    /* of a socket bound to a path: the inode of that file; else 0 */
};

/**
 * sc_unix_diag() - every unix socket of this network namespace, sorted by
 * inode, into a malloc'd array. Return: 0 or a negative error (reported).
 */
int sc_unix_diag(struct sc_unix_sock **out, size_t *n);

/** sc_unix_find() - the entry of inode @ino in @socks (sorted), or NULL. */
const struct sc_unix_sock *sc_unix_find(const struct sc_unix_sock *socks, size_t n,
					uint64_t ino);

#endif /* SC_UNIX_DIAG_H */
