/* SPDX-License-Identifier: MIT */
/*
 * sock_diag.c - one dump of the kernel's sockets of a family: the request
 * sent on a netlink socket of its own, the answers read until the dump's end
 * and handed out one by one. inet_diag.c says what to ask and
 * what to keep.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/sock_diag.h"

#define DIAG_BUF (32 << 10)

/* Read answers until the dump's end; 0, -errno, or what @each returned. */
static int read_all(int nl, char *buf, size_t msg_len, sc_sock_diag_each each, void *ctx)
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
			err = each(ctx, NLMSG_DATA(h), (int)(h->nlmsg_len - NLMSG_LENGTH(msg_len)));
			if (err)
				return err;
		}
	}
}

int sc_sock_diag_dump(const void *req, size_t req_len, size_t msg_len, sc_sock_diag_each each,
		      void *ctx)
{
	char *buf = malloc(DIAG_BUF);
	int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), err;

	err = !buf ? -ENOMEM : nl < 0 ? -errno : 0;
	if (!err && send(nl, req, req_len, 0) != (ssize_t)req_len)
		err = -errno;
	if (!err)
		err = read_all(nl, buf, msg_len, each, ctx);
	if (nl >= 0)
		close(nl);
	free(buf);
	return err;
}
