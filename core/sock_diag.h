/* SPDX-License-Identifier: MIT */
/*
 * sock_diag.h - one dump of the kernel's sockets of a family
 * (NETLINK_SOCK_DIAG) in this network namespace.
 */
#ifndef SC_SOCK_DIAG_H
#define SC_SOCK_DIAG_H

#include <stddef.h>

/* Called with each answer's message (@msg_len bytes) and the length of the attributes after it. */
typedef int (*sc_sock_diag_each)(void *ctx, const void *msg, int attr_len);

/**
 * sc_sock_diag_dump() - send @req (@req_len bytes: a netlink header and the
 * family's request, with NLM_F_DUMP) and hand each answer to @each, whose
 * messages are @msg_len bytes before their attributes. Return: 0 at the
 * dump's end, the first non-zero value of @each, or -errno.
 */
int sc_sock_diag_dump(const void *req, size_t req_len, size_t msg_len, sc_sock_diag_each each,
		      void *ctx);

#endif /* SC_SOCK_DIAG_H */
