/* SPDX-License-Identifier: MIT */
/*
 * fd_socket.h - sockets: unix domain sockets (socket pairs, named and
 * abstract, listening, with the data queued in them) and IPv4/IPv6 sockets
 * that can come back (UDP, TCP listening). What a socket is and what is
 * queued in it is read at the instant of the snapshot (fd_socket_freeze_rt.c),
 * and then too, for a unix socket, whom it is connected to, from the kernel's
 * socket diagnostics (unix_diag_rt.c); the image holds the socket's item list
 * (fd_state.h, spec §9.6.1); the restore makes the sockets again
 * (fd_socket_restore.c).
 */
#ifndef SC_FD_SOCKET_H
#define SC_FD_SOCKET_H

#include <stddef.h>
#include <stdint.h>

#include "core/fd_state.h"
#include "core/fds_freeze.h"
#include "core/unix_diag.h"

#define SC_SOCK_ADDR_MAX 128 /* sizeof(struct sockaddr_storage) */
#define SC_SOCK_OPTS_MAX 24  /* socket options read at the freeze (fd_socket_freeze_rt.c) */

/* One socket option as getsockopt() gave it. */
struct sc_sock_opt {
	int32_t level, name, len; /* len: 4 (an int) or 8 (struct linger) */
	uint8_t value[8];
};

/*
 * What the freeze writes at the start of a socket's held copy; the bytes
 * queued for reading follow as pieces: u32 length, u32 count, that many
 * descriptor numbers (int32: those a peek installed for the descriptions the
 * piece carries, SCM_RIGHTS), then the bytes. One piece per message of a
 * datagram or seqpacket socket; for a stream, any number, and one of its own
 * for each write that carried descriptors.
 */
struct sc_sock_frozen {
	int32_t domain, type, protocol;
	int32_t listening;           /* SO_ACCEPTCONN */
	int32_t sndbuf, rcvbuf;      /* SO_SNDBUF, SO_RCVBUF as the kernel reports them */
	int32_t reuseaddr;
	int32_t rights_err;          /* 0, or why the descriptors in flight cannot be recorded
					(SC_RIGHTS_*) */
	int32_t queue_err;           /* 0, or -errno: the queue could not be read whole */
	int32_t filter_len;          /* instructions of an attached filter (SO_ATTACH_FILTER) */
	int32_t tcp_closed;          /* a TCP connection that both ends have closed (TCP_CLOSE) */
	uint32_t name_len, peer_len; /* 0: not bound / not connected */
	uint8_t name[SC_SOCK_ADDR_MAX], peer[SC_SOCK_ADDR_MAX];
	int32_t n_opts;
	struct sc_sock_opt opts[SC_SOCK_OPTS_MAX];
	int32_t diag_err;            /* of a unix socket: 0, or why the kernel did not tell */
	struct sc_unix_sock diag;    /* of a unix socket: its peer and the rest (unix_diag.h) */
};

/* sc_sock_frozen.rights_err */
enum {
	SC_RIGHTS_CUT = 1,   /* the kernel cut the control data (MSG_CTRUNC) */
	SC_RIGHTS_EMPTY = 2, /* a message of no bytes carries descriptors */
	SC_RIGHTS_LARGE = 3, /* a stream write with descriptors longer than a peek takes */
};

#define SC_RIGHTS_MAX 253 /* descriptors one message carries at most (the kernel's SCM_MAX_FD) */

/* Items of kinds 14 (unix) and 15 (IPv4/IPv6), spec §9.6.1. */
enum {
	SC_SOCK_TYPE = SC_STATE_REQUIRED | 1,    /* u32 domain, u32 type, u32 protocol, u32 flags */
	SC_SOCK_NAME = SC_STATE_REQUIRED | 2,    /* the bound address (a sockaddr) */
	SC_SOCK_PEER = SC_STATE_REQUIRED | 3,    /* u64 own inode, u64 peer's inode (0: none) */
	SC_SOCK_PEER_NAME = SC_STATE_REQUIRED | 4, /* the peer's address (a sockaddr) */
	SC_SOCK_QUEUE = SC_STATE_REQUIRED | 5,   /* bytes queued for reading: one message */
	SC_SOCK_BACKLOG = SC_STATE_REQUIRED | 6, /* u32: the listen() backlog */
	SC_SOCK_BUFFERS = 7,                     /* u32 SO_SNDBUF, u32 SO_RCVBUF */
	SC_SOCK_OPTION = SC_STATE_REQUIRED | 8,  /* u32 level, u32 name, the value (4 or 8 bytes) */
	SC_SOCK_FILTER = SC_STATE_REQUIRED | 9,  /* u32 locked, the classic BPF instructions */
	SC_SOCK_RIGHTS = SC_STATE_REQUIRED | 10, /* format 1.5: u32 descriptor numbers that the
						    next SC_SOCK_QUEUE item's message carries */
};

/* SC_SOCK_TYPE flags */
#define SC_SOCK_LISTENING 1u
#define SC_SOCK_REUSEADDR 2u
#define SC_SOCK_UNLINKED 4u  /* a unix socket whose bound path was removed */
#define SC_SOCK_CONNECTED 8u /* a unix socket that was connected (its peer may be gone) */
#define SC_SOCK_SHUT_RD 16u  /* shut down for reading (by itself or its peer) */
#define SC_SOCK_SHUT_WR 32u  /* shut down for writing */

/* fd_socket_freeze_rt.c: raw, while every other thread is stopped */
/**
 * sc_fd_socket_freeze() - the socket @d into z->held, the memfd the snapshot
 * holds (at @d->held_off): an sc_sock_frozen and the bytes queued for reading,
 * peeked at, left where they are. A failure is kept in @z->err.
 */
void sc_fd_socket_freeze(struct sc_fds_frozen *z, struct sc_fd_instant *d);

/* fd_socket.c */
/**
 * sc_fd_socket_collect() - turn the held copy in @f->data into @f's kind
 * and item list; a socket that cannot come back becomes SC_FD_SOCKET (a
 * stand-in) with its reason logged. @z: the table of the freeze, where each
 * descriptor in flight that the copy names is found (its record is the
 * program's descriptor of that description, or the first one in flight);
 * @skip, @n_skip: the numbers left out of the image.
 * Return: 0, or a negative error (reported) that refuses the image.
 */
int sc_fd_socket_collect(struct sc_fd *f, const struct sc_fds_frozen *z, const int *skip,
			 size_t n_skip);

/** sc_fd_socket_collect_end() - forget what sc_fd_socket_collect() learned of the system. */
void sc_fd_socket_collect_end(void);

/* fd_socket_restore.c */
/**
 * sc_fd_sockets_restore() - make the unix and IP sockets of @fds again at
 * their numbers: listening and bound ones first, then socket pairs and
 * connected ones; then copies of shared descriptions. Made descriptors are
 * kept at @min or above until placed.
 * Return: 0 or a negative error (reported).
 */
int sc_fd_sockets_restore(const struct sc_fd *fds, size_t n, int min);

/** sc_fd_socket_peer() - the inode of the peer of the unix socket @f records, or 0. */
uint64_t sc_fd_socket_peer(const struct sc_fd *f);

/**
 * sc_fd_sockets_check() - before anything is made: every descriptor number a
 * message of @fds carries (SC_SOCK_RIGHTS) names a record of @fds, and no
 * descriptor in flight (SC_FD_IN_FLIGHT) has a standard number.
 * Return: 0 or -SELFCKPT_EUSAGE (reported).
 */
int sc_fd_sockets_check(const struct sc_fd *fds, size_t n);

/**
 * sc_fd_sockets_send_rights() - once every descriptor of @fds is made: queue
 * again the messages that carry descriptors (and those after them in the
 * same queue), each with its SCM_RIGHTS, shut down the sockets whose
 * shutdown waited for them, then close the descriptors in flight, which the
 * program does not have. Return: 0 or a negative error (reported).
 */
int sc_fd_sockets_send_rights(const struct sc_fd *fds, size_t n);

#endif /* SC_FD_SOCKET_H */
