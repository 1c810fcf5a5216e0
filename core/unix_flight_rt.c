/* SPDX-License-Identifier: MIT */
/*
 * unix_flight_rt.c - connections to a listening unix socket of the job that
 * it has not accepted yet (unix_flight.h).
 *
 * Such a connection lives in the listener's queue as a socket no process
 * holds; what its client sent waits in it, and nothing but accept() reads it.
 * An image cannot hold it, and a restore would lose it: the client would wait
 * for an answer to a request the server never gets. The kernel does not say
 * whose a queued connection is (its client may have closed its end; a
 * client's peer has no inode while it is queued), so any connection queued
 * at a listening socket of the processes counts: the instant waits for them
 * to accept it. A server accepts at once; one that does not for long is
 * refused, named (job.c, checkpoint.c).
 *
 * Asked of the kernel's socket diagnostics: the listening sockets with
 * connections queued, nearly always none - then nothing more is read; else
 * the descriptors of the processes (/proc/PID/fd), for whose they are.
 *
 * Stage contract: runs while every other thread of the process is stopped
 * (possibly inside malloc): raw system calls and static buffers only.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/socket.h>

#include "core/proc_fds.h"
#include "core/sc_sys.h"
#include "core/unix_flight.h"

#define TCP_LISTEN_ 10
#define QUEUED_MAX 1024  /* listening sockets with a queue looked at */
#define HELD_MAX 4096    /* descriptors of those the processes hold */

struct queued {
	uint32_t listener; /* a listening socket */
	uint32_t count;    /* connections in its queue */
};

struct held {
	uint32_t ino;
	int32_t pid;
};

static struct queued queued[QUEUED_MAX];
static int n_queued;
static struct held held[HELD_MAX];
static int n_held;
static char buf[32 << 10] __attribute__((aligned(8)));

static const struct {
	struct nlmsghdr h;
	struct unix_diag_req r;
} listeners_req = {
	.h = { .nlmsg_len = sizeof(listeners_req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
	       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
	.r = { .sdiag_family = AF_UNIX, .udiag_states = 1u << TCP_LISTEN_,
	       .udiag_show = UDIAG_SHOW_RQLEN },
};

/* A listener with connections in its queue, into queued[]; -1 past QUEUED_MAX. */
static int take_queue(const struct unix_diag_msg *m, int len)
{
	for (struct rtattr *a = (struct rtattr *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		const struct unix_diag_rqlen *q = RTA_DATA(a);

		if (a->rta_type != UNIX_DIAG_RQLEN || RTA_PAYLOAD(a) < (int)sizeof(*q) ||
		    !q->udiag_rqueue)
			continue;
		if (n_queued >= QUEUED_MAX)
			return -1;
		queued[n_queued++] = (struct queued){ m->udiag_ino, q->udiag_rqueue };
	}
	return 0;
}

/* One dump of @req, each answer to @each. Return: 0, or -1 where the kernel did not answer. */
static int dump(const void *req, size_t req_len, int (*each)(const struct unix_diag_msg *, int))
{
	long nl = sc_sys3(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	int err = -1;

	if (nl < 0)
		return -1;
	if (sc_sys6(SYS_sendto, nl, (long)req, (long)req_len, 0, 0, 0) != (long)req_len)
		goto out;
	for (;;) {
		long len = sc_sys6(SYS_recvfrom, nl, (long)buf, sizeof(buf), 0, 0, 0);

		if (len == -4) /* EINTR */
			continue;
		if (len <= 0)
			goto out;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (unsigned long)len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				err = 0;
				goto out;
			}
			if (h->nlmsg_type == NLMSG_ERROR ||
			    each(NLMSG_DATA(h), (int)(h->nlmsg_len -
						      NLMSG_LENGTH(sizeof(struct unix_diag_msg)))) < 0)
				goto out;
		}
	}
out:
	sc_sys1(SYS_close, nl);
	return err;
}

/* The inode of "socket:[N]" (@n bytes), or 0. */
static uint32_t socket_inode(const char *link, long n)
{
	static const char head[] = "socket:[";
	uint32_t v = 0;
	long i = 0;

	for (; head[i]; i++)
		if (i >= n || link[i] != head[i])
			return 0;
	for (; i < n && link[i] >= '0' && link[i] <= '9'; i++)
		v = v * 10 + (uint32_t)(link[i] - '0');
	return i < n && link[i] == ']' ? v : 0;
}

static bool is_queued(uint32_t ino)
{
	for (int k = 0; k < n_queued; k++)
		if (queued[k].listener == ino)
			return true;
	return false;
}

/* One descriptor of process *@ctx: kept where it is a listening socket with a queue. */
static int take_listener(void *ctx, long dir, const char *name, int fd)
{
	char link[64];
	long len = sc_sys4(SYS_readlinkat, dir, (long)name, (long)link, sizeof(link));
	uint32_t ino = len > 0 ? socket_inode(link, len) : 0;

	(void)fd;
	if (!ino || !is_queued(ino))
		return 0;
	if (n_held >= HELD_MAX)
		return -1;
	held[n_held++] = (struct held){ ino, *(const int32_t *)ctx };
	return 0;
}

/* The listening sockets with a queue that process @pid holds, into held[]; -1 past HELD_MAX. */
static int take_held(int32_t pid)
{
	return sc_proc_fds_each(pid, take_listener, &pid);
}

static int32_t holder(uint32_t ino)
{
	for (int k = 0; k < n_held; k++)
		if (held[k].ino == ino)
			return held[k].pid;
	return 0;
}

int sc_unix_in_flight(const int32_t *pids, int n, struct sc_unix_flight *out)
{
	n_queued = n_held = 0;
	*out = (struct sc_unix_flight){ 0 };
	if (dump(&listeners_req, sizeof(listeners_req), take_queue) < 0)
		return SC_FLIGHT_UNKNOWN;
	if (!n_queued)
		return 0;
	for (int i = 0; i < n; i++)
		if (take_held(pids[i]) < 0)
			return SC_FLIGHT_UNKNOWN;
	for (int k = 0; k < n_queued; k++) {
		int32_t server = holder(queued[k].listener);

		if (server) {
			out->server = server;
			out->count += (int32_t)queued[k].count;
		}
	}
	return out->count > 0;
}
