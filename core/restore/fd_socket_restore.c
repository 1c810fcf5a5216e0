/* SPDX-License-Identifier: MIT */
/*
 * fd_socket_restore.c - make unix and IP sockets again (kinds 14 and 15).
 *
 * Stage contract: as fds_restore.c (the restorer, ordinary libc). Order:
 * sockets that stand alone (bound, listening, IP) first, so that a socket
 * connected to a listening one of the process can connect again; then the
 * connected unix sockets: two that were connected to each other come back as
 * a new pair, one connected to a named socket connects to it again, and one
 * whose peer is outside the process becomes a stand-in that gives its queued
 * data, then end of file; then the copies of shared descriptions. A queue
 * whose messages carry descriptors (SCM_RIGHTS) is sent last, once every
 * descriptor it names is made (sc_fd_sockets_send_rights()); the
 * descriptors that were only in flight are closed then.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/fd_index.h"
#include "core/restore/fd_place.h"
#include "core/fd_socket.h"
#include "format/sc_array.h"
#include "core/sock_defaults.h"
#include "format/sc_log.h"

#define TYPE_LEN 16u
#define PAIR_LEN 16u

struct sock {
	uint32_t domain, type, protocol, flags, backlog;
	uint64_t ino, peer;
	const uint8_t *name, *peer_name;
	uint32_t name_len, peer_name_len;
	uint32_t sndbuf, rcvbuf;
	bool typed;
};

static int one_item(const struct sc_fd *f, const struct sc_state_item *it, struct sock *s)
{
	switch (it->tag) {
	case SC_SOCK_TYPE:
		if (it->len != TYPE_LEN)
			return sc_state_bad_length(f, it);
		s->domain = sc_get_le32(it->value);
		s->type = sc_get_le32(it->value + 4);
		s->protocol = sc_get_le32(it->value + 8);
		s->flags = sc_get_le32(it->value + 12);
		s->typed = true;
		return 0;
	case SC_SOCK_NAME:
	case SC_SOCK_PEER_NAME:
		if (it->len < sizeof(sa_family_t) || it->len > SC_SOCK_ADDR_MAX)
			return sc_state_bad_length(f, it);
		*(it->tag == SC_SOCK_NAME ? &s->name : &s->peer_name) = it->value;
		*(it->tag == SC_SOCK_NAME ? &s->name_len : &s->peer_name_len) = it->len;
		return 0;
	case SC_SOCK_PEER:
		if (it->len != PAIR_LEN)
			return sc_state_bad_length(f, it);
		s->ino = sc_get_le64(it->value);
		s->peer = sc_get_le64(it->value + 8);
		return 0;
	case SC_SOCK_BACKLOG:
		if (it->len != 4)
			return sc_state_bad_length(f, it);
		s->backlog = sc_get_le32(it->value);
		return 0;
	case SC_SOCK_BUFFERS:
		if (it->len != 8)
			return sc_state_bad_length(f, it);
		s->sndbuf = sc_get_le32(it->value);
		s->rcvbuf = sc_get_le32(it->value + 4);
		return 0;
	case SC_SOCK_QUEUE:
		return 0; /* sent when the socket is made (send_queue()) */
	case SC_SOCK_OPTION:
		return it->len == 12 || it->len == 16 ? 0 : sc_state_bad_length(f, it); /* set_options() */
	case SC_SOCK_FILTER: /* set_filter() */
		return it->len >= 12 && (it->len - 4) % 8 == 0 ? 0 : sc_state_bad_length(f, it);
	case SC_SOCK_RIGHTS: /* send_rights() */
		return it->len >= 4 && it->len <= 4 * SC_RIGHTS_MAX && it->len % 4 == 0 ?
		       0 : sc_state_bad_length(f, it);
	default:
		return sc_state_unknown(f, it);
	}
}

static int parse(const struct sc_fd *f, struct sock *s)
{
	struct sc_state_item it;
	size_t pos = 0;
	int r;

	memset(s, 0, sizeof(*s));
	while ((r = sc_state_next(f, &pos, &it)) > 0)
		if ((r = one_item(f, &it, s)))
			return r;
	if (!r && !s->typed)
		return sc_err(SELFCKPT_ELENGTH, "descriptor %d (%s): its state does not say what "
			      "socket it is", f->fd, f->path);
	return r;
}

/*
 * A queue that carries descriptors (SC_SOCK_RIGHTS) is sent once every
 * descriptor is made (sc_fd_sockets_send_rights()): its writer is kept
 * until then, and the shutdown of the sockets it writes through or to waits
 * for it. What waits, in the order it was put off.
 */
struct later {
	const struct sc_fd *f; /* the socket whose queue waits, or whose shutdown does */
	int writer;            /* a descriptor of the socket that sends it; -1: a shutdown */
};

static struct {
	struct later *list;
	size_t n, cap;
	int min;
} later_q;

static bool carries_rights(const struct sc_fd *f)
{
	struct sc_state_item it;
	size_t pos = 0;

	while (sc_state_next(f, &pos, &it) > 0)
		if (it.tag == SC_SOCK_RIGHTS)
			return true;
	return false;
}

static int put_off(const struct sc_fd *f, int writer)
{
	if (sc_grow((void **)&later_q.list, &later_q.cap, later_q.n + 1, sizeof(*later_q.list))) {
		if (writer >= 0)
			close(writer);
		return sc_err(ENOMEM, "out of memory making descriptor %d (%s)", f->fd, f->path);
	}
	later_q.list[later_q.n++] = (struct later){ f, writer };
	return 0;
}

/*
 * Keep a copy of @writer to send @f's queue later; one that sends to an
 * address (@to) is connected to it now, while the address reaches @f.
 */
static int send_later(int writer, const struct sc_fd *f, const struct sock *to)
{
	int w = fcntl(writer, F_DUPFD_CLOEXEC, later_q.min);

	if (w < 0 || (to && connect(w, (const struct sockaddr *)to->name, to->name_len) < 0)) {
		int err = sc_err(errno, "cannot keep a socket to queue again what descriptor %d "
				 "(%s) had to read: %s", f->fd, f->path, strerror(errno));

		if (w >= 0)
			close(w);
		return err;
	}
	return put_off(f, w);
}

/* Shut the socket @fd down as @s says, now or once the queues with rights are back. */
static int shut_down(int fd, const struct sc_fd *f, const struct sock *s, bool later)
{
	int how = -1;

	if (later)
		return put_off(f, -1);
	if ((s->flags & SC_SOCK_SHUT_RD) && (s->flags & SC_SOCK_SHUT_WR))
		how = SHUT_RDWR;
	else if (s->flags & SC_SOCK_SHUT_RD)
		how = SHUT_RD;
	else if (s->flags & SC_SOCK_SHUT_WR)
		how = SHUT_WR;
	if (how >= 0)
		shutdown(fd, how);
	return 0;
}

/*
 * One message of @f's queue, @q, carrying the descriptors @rights names (or
 * none), through @w: to @to's address when given, else to @w's peer.
 */
static int send_message(int w, const struct sc_fd *f, const struct sock *to,
			const struct sc_state_item *q, const struct sc_state_item *rights)
{
	union {
		char buf[CMSG_SPACE(4 * SC_RIGHTS_MAX)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { (void *)(uintptr_t)q->value, q->len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_name = to ? (void *)(uintptr_t)to->name : NULL,
			      .msg_namelen = to ? to->name_len : 0 };
	uint32_t k = rights ? rights->len / 4 : 0;

	if (k) {
		struct cmsghdr *c = (struct cmsghdr *)ctl.buf;

		memset(&ctl, 0, sizeof(ctl));
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(4 * k);
		for (uint32_t i = 0; i < k; i++)
			((int *)CMSG_DATA(c))[i] = (int)sc_get_le32(rights->value + 4 * i);
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(4 * k);
	}
	if (sendmsg(w, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)q->len)
		return sc_err(errno ? errno : EIO, "cannot queue again the %u bytes (and %u "
			      "descriptors) that descriptor %d (%s) had to read: %s", q->len, k,
			      f->fd, f->path, strerror(errno));
	return 0;
}

/* @f's whole queue through @w (to @to, as send_message()), each message with its descriptors. */
static int send_all(int w, const struct sc_fd *f, const struct sock *to)
{
	struct sc_state_item it, rights;
	bool have = false;
	size_t pos = 0;
	int r, err = 0;

	while (!err && (r = sc_state_next(f, &pos, &it)) > 0) {
		if (it.tag == SC_SOCK_RIGHTS) {
			rights = it;
			have = true;
		} else if (it.tag == SC_SOCK_QUEUE) {
			err = send_message(w, f, to, &it, have ? &rights : NULL);
			have = false;
		}
	}
	return err ? err : r;
}

/*
 * Send @f's queued messages through @writer, so that @f's socket reads them
 * again: to @to when given (a datagram socket reached by its address), else
 * to @writer's peer. A queue with descriptors in flight waits.
 */
static int send_queue_to(int writer, const struct sc_fd *f, const struct sock *to)
{
	return carries_rights(f) ? send_later(writer, f, to) : send_all(writer, f, to);
}

static int send_queue(int writer, const struct sc_fd *f)
{
	return send_queue_to(writer, f, NULL);
}

static bool unix_datagram(const struct sock *s)
{
	return s->domain == AF_UNIX && s->type == SOCK_DGRAM;
}

/*
 * The datagrams a bound unix datagram socket had to read, sent to its
 * address again from a socket of no address. Done before it connects: a
 * connected datagram socket takes datagrams from its peer only.
 */
static int requeue_datagrams(const struct sc_fd *f, const struct sock *s)
{
	int from, err;

	if (!unix_datagram(s) || s->name_len <= sizeof(sa_family_t))
		return 0;
	from = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (from < 0)
		return sc_err(errno, "cannot create a socket to queue again what descriptor %d "
			      "(%s) had to read: %s", f->fd, f->path, strerror(errno));
	err = send_queue_to(from, f, s);
	close(from);
	return err;
}

/*
 * The kernel doubles what it is given: half of what it reported. A size
 * that a new socket has already is left alone: set, even to the same value,
 * it would no longer follow the kernel's own tuning.
 */
static void set_buffer(int fd, const struct sock *s, int name, uint32_t reported)
{
	int half = (int)(reported / 2), was = (int)reported;

	if (half > 0 && !sc_sock_option_is_default((int)s->domain, (int)s->type, (int)s->protocol,
						   SOL_SOCKET, name, &was, sizeof(was)))
		setsockopt(fd, SOL_SOCKET, name, &half, sizeof(half));
}

static void set_buffers(int fd, const struct sock *s)
{
	set_buffer(fd, s, SO_SNDBUF, s->sndbuf);
	set_buffer(fd, s, SO_RCVBUF, s->rcvbuf);
}

/*
 * The filter @it (SC_SOCK_FILTER) attached to @fd again, and locked if it
 * was: once the queue is back, which the filter would otherwise judge.
 */
static int set_filter(int fd, const struct sc_fd *f, const struct sc_state_item *it)
{
	struct sock_fprog prog = { .len = (unsigned short)((it->len - 4) / 8),
				   .filter = (struct sock_filter *)(uintptr_t)(it->value + 4) };
	int on = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0 ||
	    (sc_get_le32(it->value) && setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &on,
						   sizeof(on)) < 0))
		return sc_err(errno, "cannot attach the socket filter of descriptor %d (%s) "
			      "again: %s", f->fd, f->path, strerror(errno));
	return 0;
}

/*
 * The options @f had, on the new socket @fd (of @s's kind), before it is
 * bound (some, such as SO_REUSEPORT and IPV6_V6ONLY, count only then); those
 * a new socket has already are left alone. An option the kernel refuses
 * here is told only where the socket does not have that value.
 */
static void set_options(int fd, const struct sc_fd *f, const struct sock *s)
{
	struct sc_state_item it;
	size_t pos = 0;

	while (sc_state_next(f, &pos, &it) > 0) {
		int level, name;
		uint8_t now[8];
		socklen_t len = sizeof(now);

		if (it.tag != SC_SOCK_OPTION || (it.len != 12 && it.len != 16))
			continue;
		level = (int)sc_get_le32(it.value);
		name = (int)sc_get_le32(it.value + 4);
		if (sc_sock_option_is_default((int)s->domain, (int)s->type, (int)s->protocol,
					      level, name, it.value + 8, it.len - 8) ||
		    setsockopt(fd, level, name, it.value + 8, it.len - 8) == 0)
			continue;
		if (getsockopt(fd, level, name, now, &len) < 0 || len != it.len - 8 ||
		    memcmp(now, it.value + 8, len))
			sc_log(SC_LOG_WARN, "descriptor %d (%s): cannot set socket option %d:%d "
			       "again: %s", f->fd, f->path, level, name, strerror(errno));
	}
}

/* A bound path left by the process that wrote the image: removed, if nobody listens there. */
static void clear_stale_path(const struct sock *s)
{
	const struct sockaddr_un *un = (const struct sockaddr_un *)s->name;
	char path[sizeof(un->sun_path) + 1] = { 0 };
	struct stat st;
	int probe;

	if (s->domain != AF_UNIX || s->name_len <= sizeof(sa_family_t) || !un->sun_path[0])
		return;
	memcpy(path, un->sun_path, s->name_len - sizeof(sa_family_t));
	if (stat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
		return;
	probe = socket(AF_UNIX, (int)s->type | SOCK_CLOEXEC, 0);
	if (probe >= 0 && connect(probe, (const struct sockaddr *)s->name, s->name_len) < 0 &&
	    errno == ECONNREFUSED)
		unlink(path);
	if (probe >= 0)
		close(probe);
}

/*
 * A socket whose path was removed is bound to that path and the path removed
 * again; a file that has the path now (another socket bound there since) is
 * moved aside meanwhile and put back.
 */
static int bind_unlinked(int fd, const struct sc_fd *f, const struct sock *s)
{
	const struct sockaddr_un *un = (const struct sockaddr_un *)s->name;
	char path[sizeof(un->sun_path) + 1] = { 0 }, aside[sizeof(path) + 32];
	bool moved;
	int err = 0;

	memcpy(path, un->sun_path, s->name_len - sizeof(sa_family_t));
	snprintf(aside, sizeof(aside), "%s.selfckpt-aside.%d", path, (int)getpid());
	moved = rename(path, aside) == 0;
	if (bind(fd, (const struct sockaddr *)s->name, s->name_len) < 0) {
		err = sc_err(errno, "cannot bind descriptor %d (%s) to its removed path '%s' "
			     "again: %s", f->fd, f->path, path, strerror(errno));
	} else {
		err = requeue_datagrams(f, s); /* while the path still reaches it */
		unlink(path);
	}
	if (moved && rename(aside, path) < 0)
		sc_log(SC_LOG_WARN, "cannot put '%s' back at '%s': %s", aside, path,
		       strerror(errno));
	return err;
}

#define BIND_TRIES 100 /* 5 s: a loaded machine took more than 1 s (sanitizer build) */
#define BIND_WAIT_US 50000

/*
 * Bind @fd to @s's address. The connections of the process that wrote the
 * image may still be closing (a second or so on the loopback, more on a
 * loaded machine) and hold the port: tried again for up to five seconds. An address that is not (or no longer) on
 * this machine is bound as IP_FREEBIND allows, and the option then set back
 * as the program had it.
 */
static int bind_ip(int fd, const struct sock *s)
{
	int level = s->domain == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP;
	int name = s->domain == AF_INET6 ? IPV6_FREEBIND : IP_FREEBIND, on = 1, was = 0, r;
	socklen_t len = sizeof(was);

	for (int i = 0; (r = bind(fd, (const struct sockaddr *)s->name, s->name_len)) < 0 &&
			errno == EADDRINUSE && s->domain != AF_UNIX && i < BIND_TRIES; i++)
		usleep(BIND_WAIT_US);
	if (r == 0 || errno != EADDRNOTAVAIL || s->domain == AF_UNIX ||
	    getsockopt(fd, level, name, &was, &len) < 0 ||
	    setsockopt(fd, level, name, &on, sizeof(on)) < 0)
		return r;
	r = bind(fd, (const struct sockaddr *)s->name, s->name_len);
	setsockopt(fd, level, name, &was, sizeof(was));
	return r;
}

/* Bind @fd to @s's name; a unix datagram socket also gets its queued datagrams again. */
static int bind_name(int fd, const struct sc_fd *f, const struct sock *s)
{
	int on = 1;

	if (!s->name_len || (s->domain == AF_UNIX && s->name_len <= sizeof(sa_family_t)))
		return 0;
	if (s->flags & SC_SOCK_REUSEADDR || s->domain != AF_UNIX)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	clear_stale_path(s);
	if (s->flags & SC_SOCK_UNLINKED)
		return bind_unlinked(fd, f, s);
	if (bind_ip(fd, s) < 0)
		return sc_err(errno, "cannot bind descriptor %d (%s) to its address again: %s",
			      f->fd, f->path, strerror(errno));
	return requeue_datagrams(f, s);
}

/* Give the new socket @fd @f's filter and flags, and put it at its number. */
static int finish(int fd, const struct sc_fd *f, int min)
{
	struct sc_state_item it;
	size_t pos = 0;
	int err;

	while (sc_state_next(f, &pos, &it) > 0)
		if (it.tag == SC_SOCK_FILTER && (err = set_filter(fd, f, &it)) < 0) {
			close(fd);
			return err;
		}
	fd = sc_fd_keep_above(fd, min, f);
	if (fd < 0)
		return fd;
	if (fcntl(fd, F_SETFL, f->open_flags & (O_NONBLOCK | O_ASYNC)) < 0) {
		err = sc_err(errno, "cannot set the flags of descriptor %d (%s): %s", f->fd,
			     f->path, strerror(errno));
		close(fd);
		return err;
	}
	return sc_fd_place(fd, f);
}

/* The value of the socket option @level:@name that @f had: 0 if it was not recorded. */
static int recorded_option(const struct sc_fd *f, int level, int name)
{
	struct sc_state_item it;
	size_t pos = 0;

	while (sc_state_next(f, &pos, &it) > 0)
		if (it.tag == SC_SOCK_OPTION && it.len == 12 &&
		    (int)sc_get_le32(it.value) == level && (int)sc_get_le32(it.value + 4) == name)
			return (int)sc_get_le32(it.value + 8);
	return 0;
}

/*
 * A socket that stands alone: made, bound, listening as it was; connected,
 * if a datagram one. @shared: another IP socket of the image has its
 * address. Those were bound with SO_REUSEPORT, which one may have turned off
 * since: each is bound with it on, and then given its own value.
 */
static int make_alone(const struct sc_fd *f, const struct sock *s, bool shared, int min)
{
	int fd = socket((int)s->domain, (int)s->type | SOCK_CLOEXEC, (int)s->protocol), err;
	int on = 1, own;

	if (fd < 0)
		return sc_err(errno, "cannot create the socket of descriptor %d (%s): %s", f->fd,
			      f->path, strerror(errno));
	set_buffers(fd, s);
	set_options(fd, f, s);
	if (shared)
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on));
	err = bind_name(fd, f, s);
	if (!err && (s->flags & SC_SOCK_LISTENING) && listen(fd, (int)s->backlog) < 0)
		err = sc_err(errno, "cannot make descriptor %d (%s) listen again: %s", f->fd,
			     f->path, strerror(errno));
	if (!err && s->type == SOCK_DGRAM && s->peer_name_len &&
	    connect(fd, (const struct sockaddr *)s->peer_name, s->peer_name_len) < 0)
		err = sc_err(errno, "cannot connect descriptor %d (%s) to its peer again: %s",
			     f->fd, f->path, strerror(errno));
	if (err) {
		close(fd);
		return err;
	}
	own = recorded_option(f, SOL_SOCKET, SO_REUSEPORT);
	if (shared && !own)
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &own, sizeof(own));
	err = shut_down(fd, f, s, carries_rights(f));
	if (err) {
		close(fd);
		return err;
	}
	return finish(fd, f, min);
}

/* Index the unix sockets of the image by inode, for find_ino(). */
static int index_inodes(const struct sc_fd *fds, size_t n, struct sc_fd_index *x)
{
	int err = sc_fd_index_init(x, n);

	for (size_t i = 0; !err && i < n; i++)
		if (fds[i].kind == SC_FD_UNIX && fds[i].fd > 2)
			sc_fd_index_add(x, fds[i].inode, 0, i);
	sc_fd_index_sort(x);
	return err;
}

/* The first socket of the image (not a copy) whose inode is @ino, or -1. */
static long find_ino(const struct sc_fd *fds, const struct sc_fd_index *x, uint64_t ino)
{
	struct sock s;

	/* the record's own inode is the socket's: parse only the one that matches */
	for (size_t k = sc_fd_index_find(x, ino, 0); k < x->n && x->keys[k].a == ino; k++) {
		size_t i = x->keys[k].i;

		if (!sc_fd_shares_with(fds, i) && fds[i].data_len && parse(&fds[i], &s) == 0 &&
		    s.ino == ino)
			return (long)i;
	}
	return -1;
}

/* @a and @b were connected to each other: a new pair, each end with its queue. */
static int make_pair(const struct sc_fd *a, const struct sc_fd *b, const struct sock *s,
		     int min)
{
	bool later = carries_rights(a) || carries_rights(b);
	struct sock t;
	int p[2], err;

	if (socketpair(AF_UNIX, (int)s->type | SOCK_CLOEXEC, 0, p) < 0)
		return sc_err(errno, "cannot create the socket pair of descriptors %d and %d: %s",
			      a->fd, b->fd, strerror(errno));
	set_buffers(p[0], s);
	set_options(p[0], a, s);
	set_options(p[1], b, s);
	err = send_queue(p[1], a);
	if (!err)
		err = send_queue(p[0], b);
	if (!err)
		err = shut_down(p[0], a, s, later);
	if (!err && parse(b, &t) == 0)
		err = shut_down(p[1], b, &t, later);
	if (err) {
		close(p[0]);
		close(p[1]);
		return err;
	}
	/* off any number still to be restored (@a's, say) before @a's end takes its own */
	p[1] = sc_fd_keep_above(p[1], min, b);
	if (p[1] < 0) {
		close(p[0]);
		return p[1];
	}
	err = finish(p[0], a, min);
	if (err) {
		close(p[1]);
		return err;
	}
	return finish(p[1], b, min);
}

/*
 * The peer is gone or outside the process: an end whose partner is closed
 * once it has queued this socket's data again; or a connection made again
 * to a listening socket of the process named as the peer.
 */
static int make_orphan(const struct sc_fd *f, const struct sock *s, int min)
{
	size_t mark = later_q.n;
	int p[2], err;

	if (s->peer_name_len > sizeof(sa_family_t)) {
		int fd = socket(AF_UNIX, (int)s->type | SOCK_CLOEXEC, 0);

		if (fd >= 0 && bind_name(fd, f, s) == 0 &&
		    connect(fd, (const struct sockaddr *)s->peer_name, s->peer_name_len) == 0)
			return finish(fd, f, min);
		if (fd >= 0)
			close(fd);
		for (; later_q.n > mark; later_q.n--) /* what waited for the socket just closed */
			if (later_q.list[later_q.n - 1].writer >= 0)
				close(later_q.list[later_q.n - 1].writer);
	}
	if (socketpair(AF_UNIX, (int)s->type | SOCK_CLOEXEC, 0, p) < 0)
		return sc_err(errno, "cannot create a socket for descriptor %d (%s): %s", f->fd,
			      f->path, strerror(errno));
	set_options(p[0], f, s);
	err = send_queue(p[1], f);
	close(p[1]);
	if (!err)
		err = shut_down(p[0], f, s, carries_rights(f));
	if (err) {
		close(p[0]);
		return err;
	}
	sc_log(SC_LOG_WARN, "descriptor %d (%s): its peer was outside the process; it reads what "
	       "was queued, then end of file", f->fd, f->path);
	return finish(p[0], f, min);
}

/*
 * A socket made on its own, before the connected ones. The kernel marks a
 * unix datagram socket connected once another has connected to it: such a
 * socket, with no peer of its own and a name, stands alone too (its clients
 * connect to it afterwards, its queue is sent to its name). One with no
 * name was connected to a peer that is gone: an orphan.
 */
static bool alone(const struct sock *s)
{
	if (unix_datagram(s))
		return !s->peer && s->peer_name_len <= sizeof(sa_family_t) &&
		       (s->name_len > sizeof(sa_family_t) || !(s->flags & SC_SOCK_CONNECTED));
	return s->domain != AF_UNIX || (!s->peer && !(s->flags & SC_SOCK_CONNECTED));
}

static bool is_socket(const struct sc_fd *fds, size_t i)
{
	return (fds[i].kind == SC_FD_UNIX || fds[i].kind == SC_FD_INET) && fds[i].fd > 2 &&
	       !sc_fd_shares_with(fds, i);
}

/* A key of the address @s is bound to (FNV-1a of its bytes); 0 for none or a unix one. */
static uint64_t address_key(const struct sock *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	if (s->domain == AF_UNIX || s->name_len <= sizeof(sa_family_t))
		return 0;
	for (uint32_t k = 0; k < s->name_len; k++)
		h = (h ^ s->name[k]) * 0x100000001b3ull;
	return h | 1;
}

/* Index the bound IP sockets of the image by address, for address_shared(). */
static int index_addresses(const struct sc_fd *fds, size_t n, struct sc_fd_index *x)
{
	struct sock s;
	int err = sc_fd_index_init(x, n);

	for (size_t i = 0; !err && i < n; i++)
		if (fds[i].kind == SC_FD_INET && is_socket(fds, i) && parse(&fds[i], &s) == 0 &&
		    address_key(&s))
			sc_fd_index_add(x, address_key(&s), s.type, i);
	sc_fd_index_sort(x);
	return err;
}

/* Another IP socket of the image (before or after @i) is bound to @s's address. */
static bool address_shared(const struct sc_fd *fds, const struct sc_fd_index *x, size_t i,
			   const struct sock *s)
{
	uint64_t key = address_key(s);
	struct sock t;

	if (!key)
		return false;
	for (size_t k = sc_fd_index_find(x, key, s->type);
	     k < x->n && x->keys[k].a == key && x->keys[k].b == s->type; k++) {
		size_t j = x->keys[k].i;

		if (j != i && parse(&fds[j], &t) == 0 && t.name_len == s->name_len &&
		    !memcmp(t.name, s->name, s->name_len))
			return true;
	}
	return false;
}

static int restore_alone(const struct sc_fd *fds, size_t n, int min)
{
	struct sc_fd_index x = { 0 };
	struct sock s;
	int err = index_addresses(fds, n, &x);

	for (size_t i = 0; !err && i < n; i++) {
		if (!is_socket(fds, i))
			continue;
		err = parse(&fds[i], &s);
		if (!err && alone(&s))
			err = make_alone(&fds[i], &s, address_shared(fds, &x, i, &s), min);
	}
	sc_fd_index_free(&x);
	return err;
}

/* @fds[i], unless made already (alone, or as a pair's end): with its peer, or an orphan. */
static int restore_connected_one(const struct sc_fd *fds, const struct sc_fd_index *x, size_t i,
				 int min)
{
	struct sock s, t;
	long j;
	int err;

	if (!is_socket(fds, i) || fcntl(fds[i].fd, F_GETFD) >= 0)
		return 0;
	err = parse(&fds[i], &s);
	if (err)
		return err;
	j = find_ino(fds, x, s.peer);
	if (j >= 0 && (size_t)j != i && parse(&fds[j], &t) == 0 && t.peer == s.ino &&
	    fcntl(fds[j].fd, F_GETFD) < 0)
		return make_pair(&fds[i], &fds[j], &s, min);
	return make_orphan(&fds[i], &s, min);
}

static int restore_connected(const struct sc_fd *fds, size_t n, int min)
{
	struct sc_fd_index x;
	int err = index_inodes(fds, n, &x);

	for (size_t i = 0; i < n && !err; i++)
		err = restore_connected_one(fds, &x, i, min);
	sc_fd_index_free(&x);
	return err;
}

int sc_fd_sockets_restore(const struct sc_fd *fds, size_t n, int min)
{
	int err;

	later_q.n = 0;
	later_q.min = min;
	err = restore_alone(fds, n, min);

	if (!err)
		err = restore_connected(fds, n, min);
	for (size_t i = 0; i < n && !err; i++) {
		const struct sc_fd *same = sc_fd_shares_with(fds, i);

		if ((fds[i].kind == SC_FD_UNIX || fds[i].kind == SC_FD_INET) && same &&
		    fds[i].fd > 2 && fcntl(same->fd, F_GETFD) >= 0)
			err = sc_fd_place_copy(same->fd, &fds[i]);
	}
	return err;
}

static int check_one(const struct sc_fd *fds, size_t n, const struct sc_fd *f)
{
	struct sc_state_item it;
	size_t pos = 0;
	int r;

	if ((f->fd_flags & SC_FD_IN_FLIGHT) && f->fd <= 2)
		return sc_err(SELFCKPT_EUSAGE, "descriptor %d (%s) is in flight and has a "
			      "standard number: expected 3 or more", f->fd, f->path);
	if (f->kind != SC_FD_UNIX)
		return 0;
	while ((r = sc_state_next(f, &pos, &it)) > 0) {
		if (it.tag != SC_SOCK_RIGHTS)
			continue;
		for (uint32_t k = 0; k + 4 <= it.len; k += 4) {
			uint32_t fd = sc_get_le32(it.value + k);

			if (fd > INT32_MAX || !sc_fds_find(fds, n, (int)fd))
				return sc_err(SELFCKPT_EUSAGE, "descriptor %d (%s) has a message in "
					      "its queue that carries descriptor %u, which the "
					      "image does not hold", f->fd, f->path, fd);
		}
	}
	return r;
}

int sc_fd_sockets_check(const struct sc_fd *fds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int err = check_one(fds, n, &fds[i]);

		if (err)
			return err;
	}
	return 0;
}

static void close_in_flight(const struct sc_fd *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((fds[i].fd_flags & SC_FD_IN_FLIGHT) && fds[i].fd > 2)
			close(fds[i].fd);
}

int sc_fd_sockets_send_rights(const struct sc_fd *fds, size_t n)
{
	struct sock s;
	int err = 0;

	for (size_t i = 0; i < later_q.n; i++) {
		const struct later *l = &later_q.list[i];

		if (l->writer >= 0) {
			if (!err)
				err = send_all(l->writer, l->f, NULL); /* connected already */
			close(l->writer);
		}
	}
	for (size_t i = 0; i < later_q.n && !err; i++) /* the shutdowns once every queue is back */
		if (later_q.list[i].writer < 0 && parse(later_q.list[i].f, &s) == 0)
			shut_down(later_q.list[i].f->fd, later_q.list[i].f, &s, false);
	free(later_q.list);
	later_q.list = NULL;
	later_q.n = later_q.cap = 0;
	close_in_flight(fds, n);
	return err;
}
