/* SPDX-License-Identifier: MIT */
/*
 * inet_diag.c - one dump of the IP sockets of one family and protocol of
 * this network namespace (inet_diag.h): inode and shutdown bits.
 */
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <stdlib.h>
#include <string.h>

#include "core/inet_diag.h"
#include "core/sock_diag.h"
#include "format/sc_array.h"

/* The request of a dump of every socket of @family and @protocol. */
struct request {
	struct nlmsghdr h;
	struct inet_diag_req_v2 r;
};

static struct request request(int family, int protocol)
{
	return (struct request){
		.h = { .nlmsg_len = sizeof(struct request), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.r = { .sdiag_family = (uint8_t)family, .sdiag_protocol = (uint8_t)protocol,
		       .idiag_states = ~0u },
	};
}

struct dump {
	struct sc_inet_dump *d;
	size_t cap;
};

static int add(void *ctx, const void *msg, int len)
{
	struct dump *x = ctx;
	struct sc_inet_dump *d = x->d;
	const struct inet_diag_msg *m = msg;
	struct sc_inet_sock s = { .ino = m->idiag_inode };

	for (struct rtattr *a = (struct rtattr *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == INET_DIAG_SHUTDOWN && RTA_PAYLOAD(a) >= 1)
			s.shutdown = *(uint8_t *)RTA_DATA(a);
	if (sc_grow((void **)&d->socks, &x->cap, d->n + 1, sizeof(*d->socks)))
		return -ENOMEM;
	d->socks[d->n++] = s;
	return 0;
}

static int by_ino(const void *a, const void *b)
{
	const struct sc_inet_sock *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

int sc_inet_diag(int family, int protocol, struct sc_inet_dump *d)
{
	struct request req = request(family, protocol);
	struct dump x = { d, 0 };
	int err;

	memset(d, 0, sizeof(*d));
	err = sc_sock_diag_dump(&req, sizeof(req), sizeof(struct inet_diag_msg), add, &x);
	if (err) {
		free(d->socks);
		memset(d, 0, sizeof(*d));
		return err;
	}
	qsort(d->socks, d->n, sizeof(*d->socks), by_ino);
	return 0;
}

const struct sc_inet_sock *sc_inet_find(const struct sc_inet_dump *d, uint64_t ino)
{
	struct sc_inet_sock key = { .ino = ino };

	return d->n ? bsearch(&key, d->socks, d->n, sizeof(*d->socks), by_ino) : NULL;
}
