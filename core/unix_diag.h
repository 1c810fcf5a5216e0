/* SPDX-License-Identifier: MIT */
/*
 * unix_diag.h - whom a unix socket is connected to, whether it is shut down,
 * the backlog of a listening one and the file it is bound to, from the
 * kernel's socket diagnostics (NETLINK_SOCK_DIAG, open to any user for the
 * sockets of its network namespace). A socket's own calls do not tell its
 * peer's identity.
 */
#ifndef SC_UNIX_DIAG_H
#define SC_UNIX_DIAG_H

#include <stdint.h>

struct sc_unix_sock {
	uint64_t ino, peer;  /* peer: the inode of the socket it is connected to, or 0 */
	uint32_t backlog;    /* of a listening socket: the listen() backlog */
	uint32_t connected;  /* it was connected: its peer may since have closed */
	uint32_t shutdown;   /* 1: shut down for reading, 2: for writing (the kernel's bits) */
	uint32_t pad;
	uint64_t vfs_ino;    /* of a socket bound to a path: the inode of that file; else 0 */
};

/* unix_diag_rt.c: raw system calls and the stack only */
/**
 * sc_unix_diag_one() - the unix socket of inode @ino as the kernel tells it
 * now, into @out. Asked at the instant (while the job is stopped): read
 * later, a connection accepted since would be recorded as accepted before.
 * Return: 0, or -errno (-ENOENT: the kernel knows no such socket).
 */
int sc_unix_diag_one(uint64_t ino, struct sc_unix_sock *out);

#endif /* SC_UNIX_DIAG_H */
