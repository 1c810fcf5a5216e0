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
 * client's peer has no inode while it is queued), so connections queued at
 * a listening socket of the processes count, unless every one of them has a
 * client among the processes' own sockets that sent nothing yet (then the
 * restore connects the client again, and nothing is lost): the instant waits
 * for the server to accept them. A server accepts at once; one that does not
 * for long is refused, named (job.c, checkpoint.c).
 *
 * Asked of the kernel's socket diagnostics: the listening sockets with
 * connections queued, nearly always none - then nothing more is read; else
 * the descriptors of the processes (/proc/PID/fd), for whose they are, and
 * the connected sockets, for their clients.
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
#define SOCKS_MAX 16384  /* socket descriptors of the processes looked at */
#define TCP_ESTABLISHED_ 1

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
static uint32_t socks[SOCKS_MAX]; /* every socket the processes hold, sorted once listed */
static int n_socks;
/* The clients of queued connections among the processes' sockets, and those with data sent. */
static int n_waiting, n_sent;
static char buf[32 << 10] __attribute__((aligned(8)));

static const struct {
	struct nlmsghdr h;
	struct unix_diag_req r;
} listeners_req = {
	.h = { .nlmsg_len = sizeof(listeners_req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
	       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
	.r = { .sdiag_family = AF_UNIX, .udiag_states = 1u << TCP_LISTEN_,
	       .udiag_show = UDIAG_SHOW_RQLEN },
}, connected_req = {
	.h = { .nlmsg_len = sizeof(connected_req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
	       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
	.r = { .sdiag_family = AF_UNIX, .udiag_states = 1u << TCP_ESTABLISHED_,
	       .udiag_show = UDIAG_SHOW_PEER | UDIAG_SHOW_MEMINFO },
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

/*
 * One descriptor of process *@ctx: a listening socket with a queue into
 * held[], any socket into socks[]; -1 past their room.
 */
static int take_socket(void *ctx, long dir, const char *name, int fd)
{
	char link[64];
	long len = sc_sys4(SYS_readlinkat, dir, (long)name, (long)link, sizeof(link));
	uint32_t ino = len > 0 ? socket_inode(link, len) : 0;

	(void)fd;
	if (!ino)
		return 0;
	if (n_socks >= SOCKS_MAX)
		return -1;
	socks[n_socks++] = ino;
	if (!is_queued(ino))
		return 0;
	if (n_held >= HELD_MAX)
		return -1;
	held[n_held++] = (struct held){ ino, *(const int32_t *)ctx };
	return 0;
}

/* The sockets process @pid holds, into held[] and socks[]; -1 past their room. */
static int take_held(int32_t pid)
{
	return sc_proc_fds_each(pid, take_socket, &pid);
}

static void sort_socks(void)
{
	for (int gap = n_socks / 2; gap > 0; gap /= 2)
		for (int i = gap; i < n_socks; i++) {
			uint32_t t = socks[i];
			int j = i;

			for (; j >= gap && socks[j - gap] > t; j -= gap)
				socks[j] = socks[j - gap];
			socks[j] = t;
		}
}

static bool is_ours(uint32_t ino)
{
	int lo = 0, hi = n_socks;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (socks[mid] == ino)
			return true;
		if (socks[mid] < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * A connected socket: one of the processes' whose peer has no inode and
 * which is not shut down is the client of a queued connection (a peer that
 * closed shuts it down): counted, and whether what it sent is still unread
 * (its write memory, which the queued socket holds until read).
 */
static int take_client(const struct unix_diag_msg *m, int len)
{
	uint32_t peer = 0, wmem = 0;
	uint8_t shut = 0;

	if (!is_ours(m->udiag_ino))
		return 0;
	for (struct rtattr *a = (struct rtattr *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(a) >= (int)sizeof(uint32_t))
			peer = *(uint32_t *)RTA_DATA(a);
		if (a->rta_type == UNIX_DIAG_SHUTDOWN && RTA_PAYLOAD(a) >= 1)
			shut = *(uint8_t *)RTA_DATA(a);
		if (a->rta_type == UNIX_DIAG_MEMINFO &&
		    RTA_PAYLOAD(a) > (int)(SK_MEMINFO_WMEM_ALLOC * sizeof(uint32_t)))
			wmem = ((uint32_t *)RTA_DATA(a))[SK_MEMINFO_WMEM_ALLOC];
	}
	if (peer || shut)
		return 0;
	n_waiting++;
	n_sent += wmem > 0;
	return 0;
}

/*
 * Queued connections whose clients are all processes' own sockets that sent
 * nothing yet lose nothing: the restore connects each client again, and the
 * server accepts it then. So do they where the kernel cannot say.
 */
static bool harmless(int32_t queued_here)
{
	n_waiting = n_sent = 0;
	sort_socks();
	if (dump(&connected_req, sizeof(connected_req), take_client) < 0)
		return false;
	return !n_sent && n_waiting >= queued_here;
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
	n_queued = n_held = n_socks = 0;
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
	if (out->count && harmless(out->count))
		*out = (struct sc_unix_flight){ 0 };
	return out->count > 0;
}
