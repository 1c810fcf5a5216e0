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
#include <unistd.h>

#include "core/unix_diag.h"
#include "format/sc_log.h"

#define DIAG_BUF (32 << 10)
#define TCP_ESTABLISHED_STATE 1 /* the state of a unix socket that was connected */
#define TCP_LISTEN_STATE 10     /* the state the kernel gives a listening unix socket */

struct dump {
	struct sc_unix_sock *socks;
	size_t n, cap;
};

static int ask(int nl)
{
	struct {
		struct nlmsghdr h;
		struct unix_diag_req r;
	} req = {
		.h = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.r = { .sdiag_family = AF_UNIX, .udiag_states = ~0u,
		       .udiag_show = UDIAG_SHOW_PEER | UDIAG_SHOW_RQLEN | UDIAG_SHOW_VFS },
	};

	return send(nl, &req, sizeof(req), 0) == (ssize_t)sizeof(req) ? 0 : -errno;
}

static int add(struct dump *d, const struct unix_diag_msg *m, int len)
{
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
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 64;
		struct sc_unix_sock *g = realloc(d->socks, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		d->socks = g;
		d->cap = cap;
	}
	d->socks[d->n++] = s;
	return 0;
}

/* Read answers until the dump's end; 0 or -errno. */
static int read_all(int nl, struct dump *d, char *buf)
{
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
			err = add(d, NLMSG_DATA(h), (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(
					struct unix_diag_msg))));
			if (err)
				return err;
		}
	}
}

static int by_ino(const void *a, const void *b)
{
	const struct sc_unix_sock *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

int sc_unix_diag(struct sc_unix_sock **out, size_t *n)
{
	struct dump d = { 0 };
	char *buf = malloc(DIAG_BUF);
	int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), err;

	err = !buf ? -ENOMEM : nl < 0 ? -errno : ask(nl);
	if (!err)
		err = read_all(nl, &d, buf);
	if (nl >= 0)
		close(nl);
	free(buf);
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
