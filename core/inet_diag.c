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
#include <sys/socket.h>
#include <unistd.h>

#include "core/inet_diag.h"

#define DIAG_BUF (32 << 10)

static int ask(int nl, int family, int protocol)
{
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} req = {
		.h = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.r = { .sdiag_family = (uint8_t)family, .sdiag_protocol = (uint8_t)protocol,
		       .idiag_states = ~0u },
	};

	return send(nl, &req, sizeof(req), 0) == (ssize_t)sizeof(req) ? 0 : -errno;
}

static int add(struct sc_inet_dump *d, size_t *cap, const struct inet_diag_msg *m, int len)
{
	struct sc_inet_sock s = { .ino = m->idiag_inode };

	for (struct rtattr *a = (struct rtattr *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == INET_DIAG_SHUTDOWN && RTA_PAYLOAD(a) >= 1)
			s.shutdown = *(uint8_t *)RTA_DATA(a);
	if (d->n == *cap) {
		size_t more = *cap ? 2 * *cap : 64;
		struct sc_inet_sock *g = realloc(d->socks, more * sizeof(*g));

		if (!g)
			return -ENOMEM;
		d->socks = g;
		*cap = more;
	}
	d->socks[d->n++] = s;
	return 0;
}

static int read_all(int nl, struct sc_inet_dump *d, char *buf)
{
	size_t cap = 0;

	for (;;) {
		ssize_t len = recv(nl, buf, DIAG_BUF, 0);

		if (len < 0 && errno == EINTR)
			continue;
		if (len <= 0)
			return len < 0 ? -errno : -EIO;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len);
		     h = NLMSG_NEXT(h, len)) {
			int err;

			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(h))->error ?: -EIO;
			err = add(d, &cap, NLMSG_DATA(h), (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(
					struct inet_diag_msg))));
			if (err)
				return err;
		}
	}
}

static int by_ino(const void *a, const void *b)
{
	const struct sc_inet_sock *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

int sc_inet_diag(int family, int protocol, struct sc_inet_dump *d)
{
	char *buf = malloc(DIAG_BUF);
	int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), err;

	memset(d, 0, sizeof(*d));
	err = !buf ? -ENOMEM : nl < 0 ? -errno : ask(nl, family, protocol);
	if (!err)
		err = read_all(nl, d, buf);
	if (nl >= 0)
		close(nl);
	free(buf);
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
