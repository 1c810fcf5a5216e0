/* SPDX-License-Identifier: MIT */
/*
 * fd_socket.c - a socket's record (kinds 14 and 15, or 6 when it cannot come
 * back) from what the freeze held of it (fd_socket_freeze_rt.c), with, for a
 * unix socket, its peer as the kernel told it then (unix_diag_rt.c).
 *
 * What comes back: unix sockets of every type, bound (by path or abstract
 * name) or not, listening, connected to another socket of the process (a
 * pair made again) or to a named one, with the bytes and messages queued for
 * reading; IPv4/IPv6 UDP sockets and TCP sockets that listen or are not
 * connected, with their address. What does not: a connected TCP socket
 * (its peer is another machine's state), netlink and packet sockets; they
 * become stand-ins (R-TYP-13). A message that carries descriptors
 * (SCM_RIGHTS) is recorded with the numbers of their records (SC_SOCK_RIGHTS):
 * the program's descriptor of each description, or a record of its own in
 * flight (fds.c). Datagrams queued on a UDP socket are
 * dropped, as a network may drop them, with a warning.
 */
#include <errno.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "core/fd_socket.h"
#include "core/inet_diag.h"
#include "format/sc_log.h"

#define SOMAXCONN_DEFAULT 4096

/*
 * The IP sockets of the system, one dump per family and protocol asked for,
 * once per checkpoint, by the first thread that needs it (the records are
 * collected by several, fds.c), under this lock; read-only once there.
 */
static pthread_mutex_t dumps_lock = PTHREAD_MUTEX_INITIALIZER;
#define INET_DUMPS 4
static struct {
	int family, protocol, err;
	struct sc_inet_dump d;
} inet_dumps[INET_DUMPS];
static size_t inet_dumps_n;

void sc_fd_socket_collect_end(void)
{
	for (size_t i = 0; i < inet_dumps_n; i++)
		free(inet_dumps[i].d.socks);
	memset(inet_dumps, 0, sizeof(inet_dumps));
	inet_dumps_n = 0;
}

/*
 * The shutdown bits of the IP socket @ino, which its own calls do not tell.
 * A kernel that cannot say (no diagnostics for the protocol) is told once;
 * the socket is then taken as not shut down. Asked as the image is written,
 * not at the instant (a lookup by inode is for unix sockets only): a UDP
 * socket shut down in between is recorded as shut down.
 */
static uint32_t inet_shutdown(const struct sc_sock_frozen *s, uint64_t ino)
{
	const struct sc_inet_sock *e;
	size_t i;

	pthread_mutex_lock(&dumps_lock);
	for (i = 0; i < inet_dumps_n; i++)
		if (inet_dumps[i].family == s->domain && inet_dumps[i].protocol == s->protocol)
			break;
	if (i == inet_dumps_n) {
		if (i == INET_DUMPS) {
			pthread_mutex_unlock(&dumps_lock);
			return 0;
		}
		inet_dumps[i].family = s->domain;
		inet_dumps[i].protocol = s->protocol;
		inet_dumps[i].err = sc_inet_diag(s->domain, s->protocol, &inet_dumps[i].d);
		inet_dumps_n++;
		if (inet_dumps[i].err)
			sc_log(SC_LOG_WARN, "cannot ask the kernel whether IP sockets of protocol %d "
			       "were shut down (sock_diag: %s): they come back as not shut down",
			       s->protocol, strerror(-inet_dumps[i].err));
	}
	pthread_mutex_unlock(&dumps_lock);
	e = sc_inet_find(&inet_dumps[i].d, ino);
	return e ? e->shutdown : 0;
}

/*
 * What the kernel told of the unix socket @s at the instant: its peer, its
 * backlog, its bound file, whether it is connected and shut down.
 */
static int unix_peer(const struct sc_fd *f, const struct sc_sock_frozen *s, uint64_t *peer,
		     uint32_t *backlog, uint32_t *flags, uint64_t *vfs_ino)
{
	const struct sc_unix_sock *d = &s->diag;

	if (s->diag_err)
		return sc_err(-s->diag_err, "cannot ask the kernel whom unix socket descriptor %d "
			      "(%s) is connected to (sock_diag): %s", f->fd, f->path,
			      strerror(-s->diag_err));
	*peer = d->peer;
	*backlog = d->backlog ? d->backlog : SOMAXCONN_DEFAULT;
	*vfs_ino = d->vfs_ino;
	if (d->connected)
		*flags |= SC_SOCK_CONNECTED;
	if (d->shutdown & 1)
		*flags |= SC_SOCK_SHUT_RD;
	if (d->shutdown & 2)
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

static int refuse(const struct sc_fd *f, const char *why);

/* Where the numbers of the descriptors in flight are found (sc_fd_socket_collect()). */
struct in_flight {
	const struct sc_fds_frozen *z;
	const int *skip;
	size_t n_skip;
};

/*
 * The record that stands for descriptor @fd, which a peek installed: the
 * first descriptor of its description, the program's where it holds one.
 * Return: its number, or -1 where it gets no record.
 */
static int record_of(const struct in_flight *m, int fd)
{
	const struct sc_fds_frozen *z = m ? m->z : NULL;

	for (int i = 0; z && i < z->n; i++) {
		const struct sc_fd_instant *first;

		if (z->fds[i].fd != fd || !z->fds[i].in_flight)
			continue;
		first = &z->fds[z->fds[i].share];
		return sc_fds_in_list(first->fd, m->skip, m->n_skip) ? -1 : first->fd;
	}
	return -1;
}

/* Pieces of the held copy: u32 length, u32 count, count int32 numbers, the bytes. */
#define PIECE_HEAD 8u

static uint32_t piece_rights(const uint8_t *q)
{
	return sc_get_le32(q + 4);
}

static size_t piece_size(const uint8_t *q)
{
	return PIECE_HEAD + 4 * (size_t)piece_rights(q) + sc_get_le32(q);
}

static const uint8_t *piece_bytes(const uint8_t *q)
{
	return q + PIECE_HEAD + 4 * (size_t)piece_rights(q);
}

/* Is every piece from @p to @end whole? */
static bool pieces_whole(const uint8_t *p, const uint8_t *end)
{
	for (const uint8_t *q = p; q < end; q += piece_size(q))
		if ((size_t)(end - q) < PIECE_HEAD || piece_rights(q) > SC_RIGHTS_MAX ||
		    piece_size(q) > (size_t)(end - q))
			return false;
	return true;
}

/* The SC_SOCK_RIGHTS item of the piece @q: the records' numbers. Return: 0 or -ENOENT. */
static int put_rights(struct sc_state_out *o, const uint8_t *q, const struct in_flight *m)
{
	uint8_t v[4 * SC_RIGHTS_MAX];
	uint32_t n = piece_rights(q);

	for (uint32_t i = 0; i < n; i++) {
		int fd = record_of(m, (int)sc_get_le32(q + PIECE_HEAD + 4 * i));

		if (fd < 0)
			return -ENOENT;
		sc_put_le32(v + 4 * i, (uint32_t)fd);
	}
	sc_state_put(o, SC_SOCK_RIGHTS, v, 4 * n);
	return 0;
}

/*
 * The queued pieces after the header: one item per message, or, for a
 * stream, one per run of bytes between the writes that carried descriptors
 * (each of those an item of its own). A message that carries descriptors is
 * preceded by its SC_SOCK_RIGHTS item. @bytes gets their total.
 * Return: 0, -EINVAL (cut short) or -ENOENT (a descriptor with no record).
 */
static int put_queue(struct sc_state_out *o, const struct sc_fd *f, bool stream, size_t *bytes,
		     const struct in_flight *m)
{
	const uint8_t *p = (const uint8_t *)f->data + sizeof(struct sc_sock_frozen);
	const uint8_t *end = (const uint8_t *)f->data + f->data_len;
	size_t total = 0, run = 0;
	uint8_t *all = NULL; /* a stream's runs of bytes are joined here */
	int err = 0;

	if (!pieces_whole(p, end))
		return -EINVAL;
	for (const uint8_t *q = p; q < end; q += piece_size(q))
		total += sc_get_le32(q);
	*bytes = total;
	if (stream && total && !(all = malloc(total)))
		return -ENOMEM;
	for (const uint8_t *q = p; q < end && !err; q += piece_size(q)) {
		uint32_t len = sc_get_le32(q);

		if (stream && !piece_rights(q)) {
			memcpy(all + run, piece_bytes(q), len);
			run += len;
			continue;
		}
		if (run)
			sc_state_put(o, SC_SOCK_QUEUE, all, (uint32_t)run);
		run = 0;
		if (piece_rights(q))
			err = put_rights(o, q, m);
		sc_state_put(o, SC_SOCK_QUEUE, piece_bytes(q), len);
	}
	if (run && !err)
		sc_state_put(o, SC_SOCK_QUEUE, all, (uint32_t)run);
	free(all);
	return err;
}

/* Does a piece of @f's held queue carry descriptors? */
static bool queue_has_rights(const struct sc_fd *f)
{
	const uint8_t *p = (const uint8_t *)f->data + sizeof(struct sc_sock_frozen);
	const uint8_t *end = (const uint8_t *)f->data + f->data_len;

	if (!pieces_whole(p, end))
		return false; /* put_queue() says so */
	for (const uint8_t *q = p; q < end; q += piece_size(q))
		if (piece_rights(q))
			return true;
	return false;
}

static int collect_unix(struct sc_fd *f, const struct sc_sock_frozen *s, struct sc_state_out *o,
			const struct in_flight *m)
{
	uint64_t peer = 0, vfs_ino = 0;
	uint32_t backlog = 0, flags = s->listening ? SC_SOCK_LISTENING : 0;
	size_t bytes;
	int err = unix_peer(f, s, &peer, &backlog, &flags, &vfs_ino);

	if (err)
		return err;
	/*
	 * Its queue comes back through its name, and its peer then takes all it
	 * may receive: messages that carry descriptors are sent last, too late.
	 */
	if (s->type == SOCK_DGRAM && s->name_len > sizeof(sa_family_t) &&
	    s->peer_len > sizeof(sa_family_t) && queue_has_rights(f))
		return refuse(f, "is a bound datagram socket connected to a peer, with descriptors "
			      "in flight in its queue (SCM_RIGHTS)");
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
	return put_queue(o, f, s->type == SOCK_STREAM, &bytes, m);
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
	if (put_queue(&drop, f, false, &bytes, NULL) == 0 && bytes)
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

/* Why the descriptors in flight in @s's queue cannot be recorded, or NULL. */
static const char *rights_refused(const struct sc_sock_frozen *s)
{
	switch (s->rights_err) {
	case 0:
		return NULL;
	case SC_RIGHTS_CUT:
		return "has a message in its queue whose descriptors in flight (SCM_RIGHTS) the "
		       "kernel would not all give (the descriptor limit, RLIMIT_NOFILE, is reached)";
	case SC_RIGHTS_EMPTY:
		return "has a message of no bytes that carries descriptors (SCM_RIGHTS) in its "
		       "queue";
	case SC_RIGHTS_LARGE:
		return "has in its queue a write that carries descriptors (SCM_RIGHTS) and is "
		       "longer than a peek at the queue takes";
	default:
		return "has descriptors in flight in its queue (SCM_RIGHTS) that cannot be read";
	}
}

int sc_fd_socket_collect(struct sc_fd *f, const struct sc_fds_frozen *z, const int *skip,
			 size_t n_skip)
{
	const struct in_flight m = { z, skip, n_skip };
	struct sc_sock_frozen s;
	struct sc_state_out o = { 0 };
	const char *refused;
	int err;

	if (f->kind != SC_FD_SOCKET || f->data_len < sizeof(s))
		return 0;
	memcpy(&s, f->data, sizeof(s));
	if ((refused = rights_refused(&s)))
		return refuse(f, refused);
	if (s.queue_err)
		return sc_err(-s.queue_err, "cannot read the queue of descriptor %d (%s): %s",
			      f->fd, f->path, strerror(-s.queue_err));
	if (s.domain == AF_UNIX)
		err = collect_unix(f, &s, &o, &m);
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
		if (err == -ENOENT)
			return refuse(f, "has in flight in its queue (SCM_RIGHTS) a descriptor "
				      "that the image leaves out");
		return err < 0 ? err : 0; /* reported, or a stand-in */
	}
	return sc_state_finish(&o, f);
}

uint64_t sc_fd_socket_peer(const struct sc_fd *f)
{
	struct sc_state_item it;
	size_t pos = 0;
	uint64_t peer = 0;

	if (f->kind != SC_FD_UNIX)
		return 0;
	while (f->data && sc_state_next(f, &pos, &it) > 0)
		if (it.tag == SC_SOCK_PEER && it.len == 16)
			memcpy(&peer, it.value + 8, 8);
	return peer;
}
