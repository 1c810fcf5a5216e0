/* SPDX-License-Identifier: MIT */
/*
 * fd_socket.c - a socket's record (kinds 14 and 15, or 6 when it cannot come
 * back) from what the freeze held of it (fd_socket_freeze_rt.c) and, for a
 * unix socket, the inode of its peer (unix_diag.c).
 *
 * What comes back: unix sockets of every type, bound (by path or abstract
 * name) or not, listening, connected to another socket of the process (a
 * pair made again) or to a named one, with the bytes and messages queued for
 * reading; IPv4/IPv6 UDP sockets and TCP sockets that listen or are not
 * connected, with their address. What does not: a connected TCP socket
 * (its peer is another machine's state), netlink and packet sockets; they
 * become stand-ins (R-TYP-13). A message in flight that carries descriptors
 * (SCM_RIGHTS) refuses the image. Datagrams queued on a UDP socket are
 * dropped, as a network may drop them, with a warning.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "core/fd_socket.h"
#include "core/inet_diag.h"
#include "core/unix_diag.h"
#include "format/sc_log.h"

#define SOMAXCONN_DEFAULT 4096

/* The unix sockets of the system, asked once per checkpoint. */
static struct sc_unix_sock *diag;
static size_t diag_n;
static bool diag_done;

/* The IP sockets of the system, one dump per family and protocol asked for, once per checkpoint. */
#define INET_DUMPS 4
static struct {
	int family, protocol, err;
	struct sc_inet_dump d;
} inet_dumps[INET_DUMPS];
static size_t inet_dumps_n;

void sc_fd_socket_collect_end(void)
{
	free(diag);
	diag = NULL;
	diag_n = 0;
	diag_done = false;
	for (size_t i = 0; i < inet_dumps_n; i++)
		free(inet_dumps[i].d.socks);
	memset(inet_dumps, 0, sizeof(inet_dumps));
	inet_dumps_n = 0;
}

/*
 * The shutdown bits of the IP socket @ino, which its own calls do not tell.
 * A kernel that cannot say (no diagnostics for the protocol) is told once;
 * the socket is then taken as not shut down.
 */
static uint32_t inet_shutdown(const struct sc_sock_frozen *s, uint64_t ino)
{
	const struct sc_inet_sock *e;
	size_t i;

	for (i = 0; i < inet_dumps_n; i++)
		if (inet_dumps[i].family == s->domain && inet_dumps[i].protocol == s->protocol)
			break;
	if (i == inet_dumps_n) {
		if (i == INET_DUMPS)
			return 0;
		inet_dumps[i].family = s->domain;
		inet_dumps[i].protocol = s->protocol;
		inet_dumps[i].err = sc_inet_diag(s->domain, s->protocol, &inet_dumps[i].d);
		inet_dumps_n++;
		if (inet_dumps[i].err)
			sc_log(SC_LOG_WARN, "cannot ask the kernel whether IP sockets of protocol %d "
			       "were shut down (sock_diag: %s): they come back as not shut down",
			       s->protocol, strerror(-inet_dumps[i].err));
	}
	e = sc_inet_find(&inet_dumps[i].d, ino);
	return e ? e->shutdown : 0;
}

static int unix_peer(uint64_t ino, uint64_t *peer, uint32_t *backlog, uint32_t *flags,
		     uint64_t *vfs_ino)
{
	const struct sc_unix_sock *s;

	if (!diag_done) {
		int err = sc_unix_diag(&diag, &diag_n);

		if (err)
			return err;
		diag_done = true;
	}
	s = sc_unix_find(diag, diag_n, ino);
	*peer = s ? s->peer : 0;
	*backlog = s && s->backlog ? s->backlog : SOMAXCONN_DEFAULT;
	*vfs_ino = s ? s->vfs_ino : 0;
	if (s && s->connected)
		*flags |= SC_SOCK_CONNECTED;
	if (s && (s->shutdown & 1))
		*flags |= SC_SOCK_SHUT_RD;
	if (s && (s->shutdown & 2))
		*flags |= SC_SOCK_SHUT_WR;
	return 0;
}

static void put_type(struct sc_state_out *o, const struct sc_sock_frozen *s, uint32_t flags)
{
	uint8_t v[16];

	sc_put_le32(v, (uint32_t)s->domain);
	sc_put_le32(v + 4, (uint32_t)s->type);
	sc_put_le32(v + 8, (uint32_t)s->protocol);
	sc_put_le32(v + 12, flags);
	sc_state_put(o, SC_SOCK_TYPE, v, sizeof(v));
}

static void put_options(struct sc_state_out *o, const struct sc_sock_frozen *s)
{
	for (int i = 0; i < s->n_opts && i < SC_SOCK_OPTS_MAX; i++) {
		uint8_t v[16];

		sc_put_le32(v, (uint32_t)s->opts[i].level);
		sc_put_le32(v + 4, (uint32_t)s->opts[i].name);
		memcpy(v + 8, s->opts[i].value, (size_t)s->opts[i].len);
		sc_state_put(o, SC_SOCK_OPTION, v, 8 + (uint32_t)s->opts[i].len);
	}
}

/* What every socket's record holds: its backlog if it listens, its buffers, its options. */
static void put_common(struct sc_state_out *o, const struct sc_sock_frozen *s, uint32_t backlog)
{
	uint8_t v[8];

	if (s->listening) {
		sc_put_le32(v, backlog);
		sc_state_put(o, SC_SOCK_BACKLOG, v, 4);
	}
	sc_put_le32(v, (uint32_t)s->sndbuf);
	sc_put_le32(v + 4, (uint32_t)s->rcvbuf);
	sc_state_put(o, SC_SOCK_BUFFERS, v, 8);
	put_options(o, s);
}

static void put_pair(struct sc_state_out *o, uint32_t tag, uint64_t a, uint64_t b)
{
	uint8_t v[16];

	sc_put_le64(v, a);
	sc_put_le64(v + 8, b);
	sc_state_put(o, tag, v, sizeof(v));
}

/*
 * Is the bound path of @s gone, or another file now (another socket bound
 * there since)? Then it comes back unlinked. @vfs_ino: the inode of the
 * file the socket was bound to, where the kernel told it.
 */
static bool path_gone(const struct sc_sock_frozen *s, uint64_t vfs_ino)
{
	const struct sockaddr_un *un = (const struct sockaddr_un *)s->name;
	char path[sizeof(un->sun_path) + 1] = { 0 };
	struct stat st;

	if (s->name_len <= sizeof(sa_family_t) || !un->sun_path[0])
		return false; /* unbound, or an abstract name */
	memcpy(path, un->sun_path, s->name_len - sizeof(sa_family_t));
	return stat(path, &st) < 0 || !S_ISSOCK(st.st_mode) || (vfs_ino && st.st_ino != vfs_ino);
}

/*
 * The queued pieces after the header: one item per message, or one for the
 * whole stream. @bytes gets their total. Return: 0 or -EINVAL (cut short).
 */
static int put_queue(struct sc_state_out *o, const struct sc_fd *f, bool stream, size_t *bytes)
{
	const uint8_t *p = (const uint8_t *)f->data + sizeof(struct sc_sock_frozen);
	const uint8_t *end = (const uint8_t *)f->data + f->data_len;
	size_t total = 0;
	uint8_t *all;

	for (const uint8_t *q = p; q < end; q += 4 + sc_get_le32(q))
		if ((size_t)(end - q) < 4 || sc_get_le32(q) > (size_t)(end - q) - 4)
			return -EINVAL;
	for (const uint8_t *q = p; q < end; q += 4 + sc_get_le32(q)) {
		total += sc_get_le32(q);
		if (!stream)
			sc_state_put(o, SC_SOCK_QUEUE, q + 4, sc_get_le32(q));
	}
	*bytes = total;
	if (!stream || !total)
		return 0;
	all = malloc(total);
	if (!all)
		return -ENOMEM;
	total = 0;
	for (const uint8_t *q = p; q < end; q += 4 + sc_get_le32(q)) {
		memcpy(all + total, q + 4, sc_get_le32(q));
		total += sc_get_le32(q);
	}
	sc_state_put(o, SC_SOCK_QUEUE, all, (uint32_t)total);
	free(all);
	return 0;
}

static int collect_unix(struct sc_fd *f, const struct sc_sock_frozen *s, struct sc_state_out *o)
{
	uint64_t peer, vfs_ino;
	uint32_t backlog, flags = s->listening ? SC_SOCK_LISTENING : 0;
	size_t bytes;
	int err = unix_peer(f->inode, &peer, &backlog, &flags, &vfs_ino);

	if (err)
		return err;
	if (path_gone(s, vfs_ino))
		flags |= SC_SOCK_UNLINKED;
	put_type(o, s, flags);
	if (s->name_len > sizeof(sa_family_t))
		sc_state_put(o, SC_SOCK_NAME, s->name, s->name_len);
	put_pair(o, SC_SOCK_PEER, f->inode, peer);
	if (s->peer_len > sizeof(sa_family_t))
		sc_state_put(o, SC_SOCK_PEER_NAME, s->peer, s->peer_len);
	put_common(o, s, backlog);
	f->kind = SC_FD_UNIX;
	return put_queue(o, f, s->type == SOCK_STREAM, &bytes);
}

/*
 * A TCP socket that is connected cannot come back: its peer is not in the
 * process. One whose connection has ended is not connected, but not a new
 * socket either: its stand-in (end of file, EPIPE) behaves as it does.
 */
static bool inet_can_come_back(const struct sc_sock_frozen *s)
{
	return s->type == SOCK_DGRAM || (s->type == SOCK_STREAM && !s->tcp_closed &&
					 (s->listening || !s->peer_len));
}

/* An IP socket that is not bound has port 0 in its name: binding it would bind it. */
static bool inet_bound(const struct sc_sock_frozen *s)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)s->name;

	return s->name_len >= sizeof(*in) && in->sin_port != 0; /* at the same place in IPv6 */
}

static int collect_inet(struct sc_fd *f, const struct sc_sock_frozen *s, struct sc_state_out *o)
{
	uint32_t flags = (s->listening ? SC_SOCK_LISTENING : 0) |
			 (s->reuseaddr ? SC_SOCK_REUSEADDR : 0);
	struct sc_state_out drop = { 0 };
	size_t bytes = 0;

	if (s->type == SOCK_DGRAM) {
		uint32_t shut = inet_shutdown(s, f->inode);

		flags |= (shut & 1 ? SC_SOCK_SHUT_RD : 0) | (shut & 2 ? SC_SOCK_SHUT_WR : 0);
	}

	put_type(o, s, flags);
	if (inet_bound(s))
		sc_state_put(o, SC_SOCK_NAME, s->name, s->name_len);
	if (s->peer_len)
		sc_state_put(o, SC_SOCK_PEER_NAME, s->peer, s->peer_len);
	put_common(o, s, SOMAXCONN_DEFAULT);
	if (put_queue(&drop, f, false, &bytes) == 0 && bytes)
		sc_log(SC_LOG_WARN, "descriptor %d (%s): the %zu bytes of datagrams queued on it "
		       "are dropped at restore, as a network may drop them", f->fd, f->path, bytes);
	free(drop.buf);
	f->kind = SC_FD_INET;
	return 0;
}

static int refuse(const struct sc_fd *f, const char *why)
{
	return sc_err(SELFCKPT_EHOST, "descriptor %d (%s) %s: it cannot come back, so no image is "
		      "written", f->fd, f->path, why);
}

/*
 * The classic BPF filter attached to the socket (SO_ATTACH_FILTER), whose
 * length the freeze read: its instructions are read here, through the
 * program's own descriptor, once its inode is checked to be the socket's
 * still (a program that closed it since, or put another filter of another
 * length, is refused: the checkpoint can be tried again).
 */
static int put_filter(struct sc_state_out *o, const struct sc_fd *f, int32_t n)
{
	socklen_t len = (socklen_t)n, size = sizeof(int);
	struct stat st;
	uint8_t *v = malloc(4 + 8 * (size_t)n);
	int locked = 0, err = 0;

	if (!v)
		return -ENOMEM;
	if (n > 4096 || fstat(f->fd, &st) < 0 || (uint64_t)st.st_ino != f->inode ||
	    getsockopt(f->fd, SOL_SOCKET, SO_GET_FILTER, v + 4, &len) < 0 || len != (socklen_t)n)
		err = refuse(f, "has a socket filter (SO_ATTACH_FILTER) that changed while it was "
			     "read, or one this version cannot read");
	getsockopt(f->fd, SOL_SOCKET, SO_LOCK_FILTER, &locked, &size);
	sc_put_le32(v, locked ? 1 : 0);
	if (!err)
		sc_state_put(o, SC_SOCK_FILTER, v, 4 + 8 * (uint32_t)n);
	free(v);
	return err;
}

int sc_fd_socket_collect(struct sc_fd *f)
{
	struct sc_sock_frozen s;
	struct sc_state_out o = { 0 };
	int err;

	if (f->kind != SC_FD_SOCKET || f->data_len < sizeof(s))
		return 0;
	memcpy(&s, f->data, sizeof(s));
	if (s.in_flight)
		return refuse(f, "has descriptors in flight in its queue (SCM_RIGHTS)");
	if (s.queue_err)
		return sc_err(-s.queue_err, "cannot read the queue of descriptor %d (%s): %s",
			      f->fd, f->path, strerror(-s.queue_err));
	if (s.domain == AF_UNIX)
		err = collect_unix(f, &s, &o);
	else if ((s.domain == AF_INET || s.domain == AF_INET6) && inet_can_come_back(&s))
		err = collect_inet(f, &s, &o);
	else
		err = 1; /* a stand-in: the record keeps kind 6 and no state */
	if (!err && s.filter_len > 0)
		err = put_filter(&o, f, s.filter_len);
	if (err) {
		free(o.buf);
		free(f->data);
		f->data = NULL;
		f->data_len = 0;
		if (err == -EINVAL)
			return sc_err(EIO, "descriptor %d (%s): the copy of its queue is cut short",
				      f->fd, f->path);
		if (err == -ENOMEM)
			return sc_err(ENOMEM, "out of memory recording descriptor %d", f->fd);
		return err < 0 ? err : 0; /* reported, or a stand-in */
	}
	return sc_state_finish(&o, f);
}
