/* SPDX-License-Identifier: MIT */
/*
 * inet_diag.h - what an IP socket's own calls do not tell: whether it was
 * shut down, from the kernel's socket diagnostics (NETLINK_SOCK_DIAG, open
 * to any user for the sockets of its network namespace).
 */
#ifndef SC_INET_DIAG_H
#define SC_INET_DIAG_H

#include <stddef.h>
#include <stdint.h>

struct sc_inet_sock {
	uint64_t ino;
	uint32_t shutdown; /* 1: shut down for reading, 2: for writing (the kernel's bits) */
};

struct sc_inet_dump {
	struct sc_inet_sock *socks; /* sorted by inode */
	size_t n;
};

/**
 * sc_inet_diag() - every socket of @family (AF_INET or AF_INET6) and
 * @protocol (IPPROTO_TCP, IPPROTO_UDP, ...) of this network namespace into
 * @d (its array malloc'd). Return: 0 or a negative errno, not reported: a
 * kernel without diagnostics for that protocol answers -ENOENT.
 */
int sc_inet_diag(int family, int protocol, struct sc_inet_dump *d);

/** sc_inet_find() - the entry of inode @ino in @d, or NULL. */
const struct sc_inet_sock *sc_inet_find(const struct sc_inet_dump *d, uint64_t ino);

#endif /* SC_INET_DIAG_H */
