/* SPDX-License-Identifier: MIT */
/*
 * unix_diag_rt.c - one unix socket asked of the kernel's socket diagnostics
 * by its inode (unix_diag.h): one request, one answer.
 *
 * Stage contract: runs while every other thread of the process is stopped
 * (possibly inside malloc), from the freeze (fd_socket_freeze_rt.c): raw
 * system calls and the stack only.
 */
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/socket.h>

#include "core/sc_sys.h"
#include "core/unix_diag.h"

#define EINTR_ 4
#define EIO_ 5
#define TCP_ESTABLISHED_ 1 /* the state of a unix socket that was connected */
#define TCP_LISTEN_ 10     /* the state the kernel gives a listening unix socket */

/* The attributes of the answer @m (@len bytes of them) into @out. */
static void take(const struct unix_diag_msg *m, int len, struct sc_unix_sock *out)
{
	out->ino = m->udiag_ino;
	out->connected = m->udiag_state == TCP_ESTABLISHED_;
	for (struct rtattr *a = (struct rtattr *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(a) >= sizeof(uint32_t))
			out->peer = *(uint32_t *)RTA_DATA(a);
		if (a->rta_type == UNIX_DIAG_SHUTDOWN && RTA_PAYLOAD(a) >= 1)
			out->shutdown = *(uint8_t *)RTA_DATA(a);
		if (a->rta_type == UNIX_DIAG_VFS && RTA_PAYLOAD(a) >= sizeof(struct unix_diag_vfs))
			out->vfs_ino = ((struct unix_diag_vfs *)RTA_DATA(a))->udiag_vfs_ino;
		if (a->rta_type == UNIX_DIAG_RQLEN &&
		    RTA_PAYLOAD(a) >= sizeof(struct unix_diag_rqlen) &&
		    m->udiag_state == TCP_LISTEN_)
			out->backlog = ((struct unix_diag_rqlen *)RTA_DATA(a))->udiag_wqueue;
	}
}

/* The answer in @buf (@len bytes) into @out: 0, or the kernel's -errno. */
static int answer(const char *buf, long len, uint64_t ino, struct sc_unix_sock *out)
{
	const struct nlmsghdr *h = (const struct nlmsghdr *)buf;

	if (!NLMSG_OK(h, (unsigned long)len))
		return -EIO_;
	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(h);

		return e->error ? e->error : -EIO_;
	}
	if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg)))
		return -EIO_;
	take(NLMSG_DATA(h), (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(struct unix_diag_msg))), out);
	return out->ino == ino ? 0 : -EIO_;
}

int sc_unix_diag_one(uint64_t ino, struct sc_unix_sock *out)
{
	struct {
		struct nlmsghdr h;
		struct unix_diag_req r;
	} req = {
		.h = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		       .nlmsg_flags = NLM_F_REQUEST },
		.r = { .sdiag_family = AF_UNIX, .udiag_ino = (uint32_t)ino,
		       .udiag_show = UDIAG_SHOW_PEER | UDIAG_SHOW_RQLEN | UDIAG_SHOW_VFS,
		       .udiag_cookie = { ~0u, ~0u } /* any: the inode says which */ },
	};
	char buf[512] __attribute__((aligned(8)));
	long nl = sc_sys3(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	long len;

	for (unsigned i = 0; i < sizeof(*out); i++)
		((char *)out)[i] = 0;
	if (nl < 0)
		return (int)nl;
	len = sc_sys6(SYS_sendto, nl, (long)&req, sizeof(req), 0, 0, 0);
	if (len == (long)sizeof(req))
		do
			len = sc_sys6(SYS_recvfrom, nl, (long)buf, sizeof(buf), 0, 0, 0);
		while (len == -EINTR_);
	else if (len >= 0)
		len = -EIO_;
	sc_sys1(SYS_close, nl);
	return len < 0 ? (int)len : answer(buf, len, ino, out);
}
