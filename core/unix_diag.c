/* SPDX-License-Identifier: MIT */
/*
 * unix_diag.c - one dump of the unix sockets of this network namespace
 * (unix_diag.h): inode, peer and, for listening sockets, the backlog.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/sock_diag.h"
#include "core/unix_diag.h"
#include "format/sc_array.h"
#include "format/sc_log.h"

#define TCP_ESTABLISHED_STATE 1 /* the state of a unix socket that was connected */
#define TCP_LISTEN_STATE 10     /* the state the kernel gives a listening unix socket */

struct dump {
	struct sc_unix_sock *socks;
	size_t n, cap;
};

static const struct {
	struct nlmsghdr h;
	struct unix_diag_req r;
} request = {
	.h = { .nlmsg_len = sizeof(request), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
	       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
	.r = { .sdiag_family = AF_UNIX, .udiag_states = ~0u,
	       .udiag_show = UDIAG_SHOW_PEER | UDIAG_SHOW_RQLEN | UDIAG_SHOW_VFS },
};

static int add(void *ctx, const void *msg, int len)
{
	struct dump *d = ctx;
	const struct unix_diag_msg *m = msg;
	struct sc_unix_sock s = { .ino = m->udiag_ino,
				  .connected = m->udiag_state == TCP_ESTABLISHED_STATE };

	for (struct rtattr *a = (struct rtattr *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(a) >= sizeof(uint32_t))
			s.peer = *(uint32_t *)RTA_DATA(a);
		if (a->rta_type == UNIX_DIAG_SHUTDOWN && RTA_PAYLOAD(a) >= 1)
			s.shutdown = *(uint8_t *)RTA_DATA(a);
		if (a->rta_type == UNIX_DIAG_VFS && RTA_PAYLOAD(a) >= sizeof(struct unix_diag_vfs))
			s.vfs_ino = ((struct unix_diag_vfs *)RTA_DATA(a))->udiag_vfs_ino;
		if (a->rta_type == UNIX_DIAG_RQLEN && RTA_PAYLOAD(a) >= sizeof(struct unix_diag_rqlen) &&
		    m->udiag_state == TCP_LISTEN_STATE)
			s.backlog = ((struct unix_diag_rqlen *)RTA_DATA(a))->udiag_wqueue;
	}
	if (sc_grow((void **)&d->socks, &d->cap, d->n + 1, sizeof(*d->socks)))
		return -ENOMEM;
	d->socks[d->n++] = s;
	return 0;
}

static int by_ino(const void *a, const void *b)
{
	const struct sc_unix_sock *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

int sc_unix_diag(struct sc_unix_sock **out, size_t *n)
{
	struct dump d = { 0 };
	int err = sc_sock_diag_dump(&request, sizeof(request), sizeof(struct unix_diag_msg), add,
				    &d);

	if (err) {
		free(d.socks);
		return sc_err(-err, "cannot ask the kernel which unix sockets are connected to "
			      "which (sock_diag): %s", strerror(-err));
	}
	qsort(d.socks, d.n, sizeof(*d.socks), by_ino);
	*out = d.socks;
	*n = d.n;
	return 0;
}

const struct sc_unix_sock *sc_unix_find(const struct sc_unix_sock *socks, size_t n,
					uint64_t ino)
{
	struct sc_unix_sock key = { .ino = ino };

	return n ? bsearch(&key, socks, n, sizeof(*socks), by_ino) : NULL;
}
