/* SPDX-License-Identifier: MIT */
/*
 * fd_socket_freeze_rt.c - a socket at the instant of the snapshot.
 *
 * Stage contract: as fds_freeze_rt.c (every other thread stopped, raw
 * system calls, the table's scratch buffer, no malloc). The data queued for
 * reading is peeked at with the socket's peek offset (SO_PEEK_OFF) moved
 * along, so each peek gives the next bytes or message, and the offset is
 * put back after: the queue is left as it was. A peek of a message that
 * carries descriptors (SCM_RIGHTS) installs new descriptors of them in this
 * process: they join the table (sc_fds_freeze_add()), the snapshot keeps
 * them, and the piece of the copy notes their numbers.
 */
#include <fcntl.h>
#include <linux/tcp.h>
#include <sys/socket.h>

#include "core/fd_socket.h"
#include "core/sc_sys.h"

#define EINVAL_ 22
#define EAGAIN_ 11
#define EMSGSIZE_ 90
#define ENOTCONN_ 107

static int get_int(int fd, int level, int name)
{
	int v = 0;
	unsigned len = sizeof(v);

	if (sc_sys5(SYS_getsockopt, fd, level, name, (long)&v, (long)&len) < 0)
		return -1;
	return v;
}

/*
 * The options that change how a socket behaves and that a program sets;
 * each is read where the socket has it and set again at restore. Those a
 * kind of socket does not have are simply not there.
 */
static const struct {
	int level, name, len;
} options[] = {
	{ SOL_SOCKET, SO_KEEPALIVE, 4 }, { SOL_SOCKET, SO_REUSEPORT, 4 },
	{ SOL_SOCKET, SO_BROADCAST, 4 }, { SOL_SOCKET, SO_PRIORITY, 4 },
	{ SOL_SOCKET, SO_RCVLOWAT, 4 }, { SOL_SOCKET, SO_PASSCRED, 4 },
	{ SOL_SOCKET, SO_OOBINLINE, 4 }, { SOL_SOCKET, SO_DONTROUTE, 4 },
	{ SOL_SOCKET, SO_LINGER, 8 }, { SOL_SOCKET, SO_TIMESTAMP, 4 },
	{ 0 /* IPPROTO_IP */, 15 /* IP_FREEBIND */, 4 }, { 0, 1 /* IP_TOS */, 4 },
	{ 0, 2 /* IP_TTL */, 4 }, { 41 /* IPPROTO_IPV6 */, 26 /* IPV6_V6ONLY */, 4 },
	{ 41, 78 /* IPV6_FREEBIND */, 4 },
	{ 6 /* IPPROTO_TCP */, 1 /* TCP_NODELAY */, 4 }, { 6, 4 /* TCP_KEEPIDLE */, 4 },
	{ 6, 5 /* TCP_KEEPINTVL */, 4 }, { 6, 6 /* TCP_KEEPCNT */, 4 },
};

static void read_options(int fd, struct sc_sock_frozen *s)
{
	for (unsigned i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		struct sc_sock_opt *o = &s->opts[s->n_opts];
		unsigned len = sizeof(o->value);

		if (s->n_opts == SC_SOCK_OPTS_MAX)
			return;
		if ((options[i].level == 0 && s->domain != AF_INET) ||
		    (options[i].level == 41 && s->domain != AF_INET6) ||
		    (options[i].level == 6 && (s->domain == AF_UNIX || s->type != SOCK_STREAM)))
			continue;
		if (sc_sys5(SYS_getsockopt, fd, options[i].level, options[i].name, (long)o->value,
			    (long)&len) < 0 || (int)len != options[i].len)
			continue;
		o->level = options[i].level;
		o->name = options[i].name;
		o->len = options[i].len;
		s->n_opts++;
	}
}

/*
 * A TCP socket that was connected and whose connection has ended (both
 * sides shut down, or reset): its state is TCP_CLOSE, as that of a socket
 * never connected, but segments went through it.
 */
static int tcp_closed(int fd, const struct sc_sock_frozen *s)
{
	struct tcp_info info;
	unsigned len = sizeof(info);

	for (unsigned i = 0; i < sizeof(info); i++)
		((char *)&info)[i] = 0;
	if (s->type != SOCK_STREAM || (s->domain != AF_INET && s->domain != AF_INET6) ||
	    s->listening || sc_sys5(SYS_getsockopt, fd, 6 /* IPPROTO_TCP */, TCP_INFO,
				    (long)&info, (long)&len) < 0)
		return 0;
	return info.tcpi_state == 7 /* TCP_CLOSE */ && (info.tcpi_segs_in || info.tcpi_segs_out);
}

static void read_facts(int fd, struct sc_sock_frozen *s)
{
	unsigned len;

	len = SC_SOCK_ADDR_MAX;
	s->name_len = sc_sys3(SYS_getsockname, fd, (long)s->name, (long)&len) < 0 ? 0 : len;
	/* the name starts with the family, bound or not: a getsockopt() spared */
	s->domain = s->name_len >= sizeof(sa_family_t) ? ((const struct sockaddr *)s->name)->sa_family
						       : get_int(fd, SOL_SOCKET, SO_DOMAIN);
	s->type = get_int(fd, SOL_SOCKET, SO_TYPE);
	/* a unix socket's protocol is 0, always */
	s->protocol = s->domain == AF_UNIX ? 0 : get_int(fd, SOL_SOCKET, SO_PROTOCOL);
	s->listening = get_int(fd, SOL_SOCKET, SO_ACCEPTCONN) == 1;
	s->sndbuf = get_int(fd, SOL_SOCKET, SO_SNDBUF);
	s->rcvbuf = get_int(fd, SOL_SOCKET, SO_RCVBUF);
	s->reuseaddr = get_int(fd, SOL_SOCKET, SO_REUSEADDR) == 1;
	len = SC_SOCK_ADDR_MAX;
	s->peer_len = sc_sys3(SYS_getpeername, fd, (long)s->peer, (long)&len) < 0 ? 0 : len;
	if (s->name_len > SC_SOCK_ADDR_MAX)
		s->name_len = SC_SOCK_ADDR_MAX;
	if (s->peer_len > SC_SOCK_ADDR_MAX)
		s->peer_len = SC_SOCK_ADDR_MAX;
	read_options(fd, s);
	len = 0; /* asked with no room, the kernel tells the filter's length */
	if (sc_sys5(SYS_getsockopt, fd, SOL_SOCKET, SO_GET_FILTER, 0, (long)&len) == 0)
		s->filter_len = (int32_t)len;
	s->tcp_closed = tcp_closed(fd, s);
}

/* The control area at the end of the scratch buffer: a message's rights. */
#define CTL_SIZE 4096
#define DATA_SIZE(z) ((z)->scratch_size - CTL_SIZE)

/* The rights a peek gave, where it gave them. */
struct rights {
	int *fds; /* inside the control area of the peek */
	int n;
};

/*
 * The descriptors of the SCM_RIGHTS control messages in @msg, each moved
 * above 2 when it landed on a standard number the program left free (the
 * restore keeps 0, 1 and 2 for its own), into @r.
 */
static void take_rights(struct msghdr *msg, struct rights *r)
{
	char *ctl = msg->msg_control;
	size_t len = msg->msg_controllen;

	r->fds = 0;
	r->n = 0;
	for (size_t off = 0; off + sizeof(struct cmsghdr) <= len;) {
		struct cmsghdr *c = (struct cmsghdr *)(ctl + off);

		if (c->cmsg_len < sizeof(*c) || c->cmsg_len > len - off)
			break;
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && !r->fds) {
			r->fds = (int *)CMSG_DATA(c);
			r->n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		}
		off += CMSG_ALIGN(c->cmsg_len);
	}
	for (int i = 0; i < r->n; i++) {
		if (r->fds[i] > 2)
			continue;
		long moved = sc_sys3(SYS_fcntl, r->fds[i], F_DUPFD_CLOEXEC, 3);

		sc_sys1(SYS_close, r->fds[i]);
		r->fds[i] = (int)moved; /* -errno: taken as a failure by the caller */
	}
}

static void close_rights(const struct rights *r)
{
	for (int i = 0; i < r->n; i++)
		if (r->fds[i] >= 0)
			sc_sys1(SYS_close, r->fds[i]);
}

/*
 * One peek at the next bytes or message into @buf, its control data into
 * @ctl (CTL_SIZE bytes): its length, or -errno; the descriptors it carries
 * (new ones, close-on-exec) into @r.
 */
static long peek(int fd, char *buf, long size, char *ctl, struct rights *r,
		 struct sc_sock_frozen *s)
{
	struct iovec iov = { buf, (size_t)size };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			      .msg_controllen = CTL_SIZE };
	long n = sc_sys3(SYS_recvmsg, fd, (long)&msg,
			 MSG_PEEK | MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);

	r->n = 0;
	if (n == -EAGAIN_ || n == -ENOTCONN_ || n == -EINVAL_)
		return 0; /* nothing queued, or a socket that is not connected: no queue */
	if (n < 0)
		return n;
	take_rights(&msg, r);
	if (msg.msg_flags & MSG_CTRUNC)
		s->rights_err = SC_RIGHTS_CUT; /* no room for them, or no numbers left */
	if (s->type != SOCK_STREAM && n > size)
		return -EMSGSIZE_; /* a datagram larger than the scratch buffer */
	return n;
}

/* One piece into z->held at *@len after @at: u32 length, u32 count, the numbers, the bytes. */
static long put_piece(struct sc_fds_frozen *z, int64_t at, int64_t *len, const char *buf,
		      uint32_t n, const struct rights *r)
{
	uint32_t head[2] = { n, r ? (uint32_t)r->n : 0 };
	long w = sc_fds_freeze_put(z, at + *len, head, sizeof(head));

	*len += (int64_t)sizeof(head);
	if (!w && head[1])
		w = sc_fds_freeze_put(z, at + *len, r->fds, (long)(head[1] * sizeof(int)));
	*len += (int64_t)(head[1] * sizeof(int));
	if (!w)
		w = sc_fds_freeze_put(z, at + *len, buf, n);
	*len += n;
	return w;
}

/*
 * The descriptors @r a peek installed: into the table (a failure is kept in
 * z->err, and closes those not yet in it). Return: 0 or -errno.
 */
static long note_rights(struct sc_fds_frozen *z, const struct rights *r)
{
	long err = 0;

	if (z->held_limit && r->n) { /* a helper: the table is the coordinator's, the socket too */
		close_rights(r);
		sc_fds_freeze_fail(z, -EAGAIN_, SC_FREEZE_COPY_SOCKET, -1);
		return -EAGAIN_;
	}

	for (int i = 0; i < r->n; i++) {
		if (err || r->fds[i] < 0) {
			err = err ? err : r->fds[i];
			if (r->fds[i] >= 0)
				sc_sys1(SYS_close, r->fds[i]);
			continue;
		}
		err = sc_fds_freeze_add(z, r->fds[i]);
	}
	return err;
}

/*
 * One message (or run of stream bytes) of @n bytes, with the rights @r it
 * carries, into a piece. A stream peek stops at the end of the first write
 * that carried descriptors, but gives them for any bytes before it too: where
 * that write began cannot be seen, and the piece holds the bytes written
 * before it since the last such write as well. Return: 0 or -errno; 1 where
 * it cannot be recorded (s->rights_err).
 */
static long put_message(struct sc_fds_frozen *z, int64_t at, int64_t *len, long n,
			struct rights *r, struct sc_sock_frozen *s)
{
	long w;

	if (r->n && !n)
		s->rights_err = SC_RIGHTS_EMPTY; /* a peek cannot step past it */
	else if (r->n && s->type == SOCK_STREAM && n >= DATA_SIZE(z))
		s->rights_err = SC_RIGHTS_LARGE; /* it may go on past the peek */
	if (s->rights_err) {
		close_rights(r);
		return 1;
	}
	w = note_rights(z, r);
	if (!w)
		w = put_piece(z, at, len, z->scratch, (uint32_t)n, r);
	return w;
}

/*
 * Is the queue of @fd, whose peek offset is @old, empty? Most are: where the
 * offset is off (-1, as sockets start), one peek tells, before the offset
 * is set and put back.
 */
static int queue_empty(struct sc_fds_frozen *z, int fd, int old, struct sc_sock_frozen *s)
{
	struct rights r;
	long n;

	if (old >= 0)
		return 0; /* a peek would start at the offset: it cannot tell */
	n = peek(fd, z->scratch, DATA_SIZE(z), z->scratch + DATA_SIZE(z), &r, s);
	close_rights(&r); /* peeked again, with the offset, to be kept */
	return n == 0 && !r.n;
}

/*
 * The queue, message by message, after the header at @at in z->held. A
 * stream ends at the first empty peek; so does a datagram queue (an empty
 * datagram at its end is not kept: a peek cannot tell it from an empty
 * queue, unless it carries descriptors).
 */
static int copy_queue(struct sc_fds_frozen *z, int fd, int64_t at, struct sc_sock_frozen *s,
		      int64_t *len)
{
	int old, zero = 0;
	struct rights r;
	long n, w = 0;

	if (s->listening)
		return 0; /* a listening socket's queue is of connections: not kept */
	old = get_int(fd, SOL_SOCKET, SO_PEEK_OFF);
	if (queue_empty(z, fd, old, s))
		return 0;
	s->rights_err = 0; /* the first peek's rights are peeked again */
	if (sc_sys5(SYS_setsockopt, fd, SOL_SOCKET, SO_PEEK_OFF, (long)&zero, sizeof(zero)) < 0)
		return 0; /* a socket that cannot peek further: nothing kept */
	while ((n = peek(fd, z->scratch, DATA_SIZE(z), z->scratch + DATA_SIZE(z), &r, s)) > 0 ||
	       (n == 0 && r.n)) {
		w = put_message(z, at, len, n, &r, s);
		if (w)
			break;
	}
	if (n < 0)
		close_rights(&r);
	sc_sys5(SYS_setsockopt, fd, SOL_SOCKET, SO_PEEK_OFF, (long)&old, sizeof(old));
	if (w == 1)
		return 0; /* refused by the record, named */
	return n < 0 ? (int)n : (int)w;
}

/* The socket's copy goes at the end of z->held, which holds every small copy. */
void sc_fd_socket_freeze(struct sc_fds_frozen *z, struct sc_fd_instant *d)
{
	struct sc_sock_frozen s;
	int64_t at = z->held_end, len = sizeof(s);
	long err;

	for (unsigned i = 0; i < sizeof(s); i++)
		((char *)&s)[i] = 0;
	read_facts(d->fd, &s);
	if (s.domain == AF_UNIX)
		s.diag_err = sc_unix_diag_one(d->ino, &s.diag);
	err = sc_fds_freeze_put(z, at, &s, sizeof(s));
	if (!err) {
		s.queue_err = copy_queue(z, d->fd, at, &s, &len);
		err = sc_fds_freeze_put(z, at, &s, sizeof(s)); /* with what the peeks found */
	}
	if (err < 0) {
		sc_fds_freeze_fail(z, (int)err, SC_FREEZE_COPY_SOCKET, d->fd);
		return;
	}
	d->held = z->held;
	d->held_off = at;
	d->held_len = len;
}
