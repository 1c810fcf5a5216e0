/* SPDX-License-Identifier: MIT */
/*
 * sockets.c - a program that holds the sockets a process commonly has: a
 * stream, a datagram and a seqpacket socket pair with data queued in them,
 * a listening unix socket bound to a path, a client connected to it and the
 * accepted end, a datagram socket bound to an abstract name (with a locked
 * filter that takes only messages starting with 'h'), a datagram
 * socket bound to a path with a client connected to it and one connected to
 * itself (messages queued in both), a UDP socket and a listening TCP socket
 * on the loopback, two UDP sockets connected to each other, one shut down
 * for writing, and two TCP sockets listening on one port (SO_REUSEPORT,
 * turned off on one once both listen), and both ends of a TCP connection
 * on the loopback that both have shut down; below them all, /dev/null. In
 * 60 steps of 20 ms it moves data through all of them; everything it prints
 * follows from what it did, not from when. Run under selfckpt-run by tests/cli/test_objects.c.
 * Usage: sockets DIR (a folder of its own, for the socket's path).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <linux/filter.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define STEPS 60

struct socks {
	int stream[2], dgram[2], seq[2], shut[2];
	int listener, client, server, abstract, udp, tcp;
	int dgram_server, dgram_client, dgram_self;
	int udp_a, udp_b, reuse_a, reuse_b, closed_a, closed_b;
	char path[108], dgram_path[108];
};

static int unix_addr(struct sockaddr_un *a, const char *path, int abstract)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path + abstract, sizeof(a->sun_path) - (size_t)abstract, "%.*s",
		 (int)sizeof(a->sun_path) - 2, path);
	return (int)(offsetof(struct sockaddr_un, sun_path) + abstract + strlen(path));
}

/* A locked classic BPF filter: messages whose first byte is 'h' pass, others are dropped. */
static int attach_filter(int fd)
{
	static struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 'h', 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 0xffff),
		BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = { sizeof(code) / sizeof(code[0]), code };
	int on = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0)
		return -1;
	return setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &on, sizeof(on));
}

static int make_unix(struct socks *s, const char *dir)
{
	struct sockaddr_un a;
	char name[64];
	int len;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, s->shut) < 0 || shutdown(s->shut[0], SHUT_WR) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, s->stream) < 0 ||
	    socketpair(AF_UNIX, SOCK_DGRAM, 0, s->dgram) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, s->seq) < 0)
		return -1;
	snprintf(s->path, sizeof(s->path), "%s/listen.sock", dir);
	len = unix_addr(&a, s->path, 0);
	s->listener = socket(AF_UNIX, SOCK_STREAM, 0);
	if (bind(s->listener, (struct sockaddr *)&a, len) < 0 || listen(s->listener, 8) < 0)
		return -1;
	s->client = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (connect(s->client, (struct sockaddr *)&a, len) < 0)
		return -1;
	s->server = accept(s->listener, NULL, NULL);
	snprintf(name, sizeof(name), "selfckpt-test-%d", (int)getpid());
	len = unix_addr(&a, name, 1);
	s->abstract = socket(AF_UNIX, SOCK_DGRAM, 0);
	return s->server < 0 || bind(s->abstract, (struct sockaddr *)&a, len) < 0 ||
	       attach_filter(s->abstract) < 0 ? -1 : 0;
}

/* A named datagram socket, a client connected to it, and one bound and connected to itself. */
static int make_datagrams(struct socks *s, const char *dir)
{
	struct sockaddr_un a;
	char name[64];
	int len;

	snprintf(s->dgram_path, sizeof(s->dgram_path), "%s/dgram.sock", dir);
	len = unix_addr(&a, s->dgram_path, 0);
	s->dgram_server = socket(AF_UNIX, SOCK_DGRAM, 0);
	s->dgram_client = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (bind(s->dgram_server, (struct sockaddr *)&a, len) < 0 ||
	    connect(s->dgram_client, (struct sockaddr *)&a, len) < 0)
		return -1;
	snprintf(name, sizeof(name), "selfckpt-test-self-%d", (int)getpid());
	len = unix_addr(&a, name, 1);
	s->dgram_self = socket(AF_UNIX, SOCK_DGRAM, 0);
	return bind(s->dgram_self, (struct sockaddr *)&a, len) < 0 ||
	       connect(s->dgram_self, (struct sockaddr *)&a, len) < 0 ? -1 : 0;
}

static int make_inet(struct socks *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct linger linger = { 1, 7 };
	int on = 1, idle = 123;

	s->udp = socket(AF_INET, SOCK_DGRAM, 0);
	s->tcp = socket(AF_INET, SOCK_STREAM, 0);
	if (setsockopt(s->udp, SOL_SOCKET, SO_BROADCAST, &on, sizeof(on)) < 0 ||
	    setsockopt(s->tcp, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) < 0 ||
	    setsockopt(s->tcp, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) < 0 ||
	    setsockopt(s->tcp, SOL_SOCKET, SO_LINGER, &linger, sizeof(linger)) < 0 ||
	    setsockopt(s->tcp, IPPROTO_IP, IP_FREEBIND, &on, sizeof(on)) < 0)
		return -1;
	if (bind(s->udp, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    bind(s->tcp, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s->tcp, 4) < 0)
		return -1;
	return 0;
}

/* Two UDP sockets connected to each other, @udp_a shut down for writing. */
static int make_udp_pair(struct socks *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in b = a;
	socklen_t len = sizeof(a);

	s->udp_a = socket(AF_INET, SOCK_DGRAM, 0);
	s->udp_b = socket(AF_INET, SOCK_DGRAM, 0);
	if (bind(s->udp_a, (struct sockaddr *)&a, len) < 0 ||
	    bind(s->udp_b, (struct sockaddr *)&b, len) < 0 ||
	    getsockname(s->udp_a, (struct sockaddr *)&a, &len) < 0 ||
	    getsockname(s->udp_b, (struct sockaddr *)&b, &len) < 0 ||
	    connect(s->udp_a, (struct sockaddr *)&b, len) < 0 ||
	    connect(s->udp_b, (struct sockaddr *)&a, len) < 0)
		return -1;
	return shutdown(s->udp_a, SHUT_WR);
}

/* Two TCP sockets listening on one port by SO_REUSEPORT, which @reuse_a then turns off. */
static int make_reuseport(struct socks *s)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int on = 1, off = 0;

	s->reuse_a = socket(AF_INET, SOCK_STREAM, 0);
	s->reuse_b = socket(AF_INET, SOCK_STREAM, 0);
	if (setsockopt(s->reuse_a, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) < 0 ||
	    setsockopt(s->reuse_b, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) < 0 ||
	    bind(s->reuse_a, (struct sockaddr *)&a, len) < 0 || listen(s->reuse_a, 4) < 0 ||
	    getsockname(s->reuse_a, (struct sockaddr *)&a, &len) < 0 ||
	    bind(s->reuse_b, (struct sockaddr *)&a, len) < 0 || listen(s->reuse_b, 4) < 0)
		return -1;
	return setsockopt(s->reuse_a, SOL_SOCKET, SO_REUSEPORT, &off, sizeof(off));
}

/* A TCP connection through the listening socket, ended by both ends: each reads end of file. */
static int make_closed(struct socks *s)
{
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);
	char c;

	s->closed_a = socket(AF_INET, SOCK_STREAM, 0);
	if (getsockname(s->tcp, (struct sockaddr *)&a, &len) < 0 ||
	    connect(s->closed_a, (struct sockaddr *)&a, len) < 0)
		return -1;
	s->closed_b = accept(s->tcp, NULL, NULL);
	if (s->closed_b < 0 || shutdown(s->closed_a, SHUT_WR) < 0 ||
	    shutdown(s->closed_b, SHUT_WR) < 0)
		return -1;
	return read(s->closed_a, &c, 1) == 0 && read(s->closed_b, &c, 1) == 0 ? 0 : -1;
}

/* Messages sent at step @i and read at step @i + 2: two are always queued. */
static void step_pairs(const struct socks *s, int i)
{
	char out[32], in[64];
	ssize_t n;

	snprintf(out, sizeof(out), "m%d", i);
	send(s->stream[0], out, strlen(out), 0);
	send(s->dgram[0], out, strlen(out), 0);
	send(s->seq[1], out, strlen(out), 0);
	if (i < 2)
		return;
	n = recv(s->stream[1], in, 3 + (i - 2 >= 10), 0); /* "mN" or "mNN", a byte stream */
	printf("%d stream:%.*s", i, (int)(n > 0 ? n : 0), in);
	n = recv(s->dgram[1], in, sizeof(in), 0);
	printf(" dgram:%.*s", (int)(n > 0 ? n : 0), in);
	n = recv(s->seq[0], in, sizeof(in), 0);
	printf(" seq:%.*s\n", (int)(n > 0 ? n : 0), in);
}

/* Datagrams sent at step @i and read at step @i + 2, to a named socket and to itself. */
static void step_datagrams(const struct socks *s, int i)
{
	char out[32], in[64];
	ssize_t n, m;

	snprintf(out, sizeof(out), "d%d", i);
	send(s->dgram_client, out, strlen(out), 0);
	send(s->dgram_self, out, strlen(out), 0);
	if (i < 2)
		return;
	n = recv(s->dgram_server, in, sizeof(in) / 2, 0);
	m = recv(s->dgram_self, in + 32, sizeof(in) / 2, 0);
	printf("%d named:%.*s self:%.*s\n", i, (int)(n > 0 ? n : 0), in, (int)(m > 0 ? m : 0),
	       in + 32);
}

static void step_connection(const struct socks *s, int i)
{
	char in[64];
	ssize_t n;

	if (i % 5)
		return;
	send(s->client, "ping", 4, MSG_DONTWAIT);
	n = recv(s->server, in, sizeof(in), 0);
	send(s->server, in, n > 0 ? (size_t)n : 0, 0);
	n = recv(s->client, in, sizeof(in), MSG_DONTWAIT);
	printf("%d echo:%.*s nonblock:%d\n", i, (int)(n > 0 ? n : 0), in,
	       !!(fcntl(s->client, F_GETFL) & O_NONBLOCK));
}

/* Options and a shut down half stay as they were set. */
static void step_options(const struct socks *s, int i)
{
	struct linger linger = { 0, 0 };
	int bcast = 0, keep = 0, idle = 0, freebind = 0;
	socklen_t len = sizeof(int), llen = sizeof(linger);
	char c;

	if (i % 10 != 5)
		return;
	getsockopt(s->udp, SOL_SOCKET, SO_BROADCAST, &bcast, &len);
	getsockopt(s->tcp, SOL_SOCKET, SO_KEEPALIVE, &keep, &len);
	getsockopt(s->tcp, IPPROTO_TCP, TCP_KEEPIDLE, &idle, &len);
	getsockopt(s->tcp, IPPROTO_IP, IP_FREEBIND, &freebind, &len);
	getsockopt(s->tcp, SOL_SOCKET, SO_LINGER, &linger, &llen);
	printf("%d options broadcast:%d keepalive:%d idle:%d freebind:%d linger:%d/%d\n", i, bcast,
	       keep, idle, freebind, linger.l_onoff, linger.l_linger);
	printf("%d shut: read:%zd write:%s\n", i, recv(s->shut[1], &c, 1, MSG_DONTWAIT),
	       send(s->shut[0], "x", 1, MSG_NOSIGNAL) < 0 && errno == EPIPE ? "EPIPE" : "ok");
}

/* The shut down half and the shared port stay as they were. */
static void step_ports(const struct socks *s, int i)
{
	struct sockaddr_in a, b;
	socklen_t len = sizeof(a);
	int ra = -1, rb = -1;
	char in[8];

	if (i % 10 != 7)
		return;
	getsockopt(s->reuse_a, SOL_SOCKET, SO_REUSEPORT, &ra, &len);
	getsockopt(s->reuse_b, SOL_SOCKET, SO_REUSEPORT, &rb, &len);
	len = sizeof(a);
	getsockname(s->reuse_a, (struct sockaddr *)&a, &len);
	len = sizeof(b);
	getsockname(s->reuse_b, (struct sockaddr *)&b, &len);
	printf("%d closed tcp: reads:%zd/%zd writes:%s\n", i, read(s->closed_a, in, 1),
	       read(s->closed_b, in, 1), send(s->closed_a, "z", 1, MSG_NOSIGNAL) < 0 &&
	       errno == EPIPE ? "EPIPE" : "ok");
	printf("%d udp: a sends:%s b sends:%s reuseport:%d/%d same port:%s\n", i,
	       send(s->udp_a, "x", 1, MSG_NOSIGNAL) < 0 && errno == EPIPE ? "EPIPE" : "ok",
	       send(s->udp_b, "y", 1, 0) == 1 && recv(s->udp_a, in, sizeof(in), MSG_DONTWAIT) == 1 ? "ok" :
											 "lost",
	       ra, rb, a.sin_port == b.sin_port ? "yes" : "no");
}

/* The bound and listening sockets still answer at their addresses. */
static void step_names(const struct socks *s, int i)
{
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);
	char in[32];
	int c, ok;

	if (i % 10)
		return;
	getsockname(s->abstract, (struct sockaddr *)&a, &len);
	c = socket(AF_UNIX, SOCK_DGRAM, 0);
	sendto(c, "xx", 2, 0, (struct sockaddr *)&a, len); /* the filter drops it */
	ok = sendto(c, "hi", 2, 0, (struct sockaddr *)&a, len) == 2 &&
	     recv(s->abstract, in, sizeof(in), 0) == 2 && in[0] == 'h';
	close(c);
	len = sizeof(a);
	getsockname(s->tcp, (struct sockaddr *)&a, &len);
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(c, (struct sockaddr *)&a, len) < 0)
		ok = 0;
	close(c);
	c = accept(s->tcp, NULL, NULL);
	printf("%d names:%s accepted:%s\n", i, ok ? "ok" : "wrong", c >= 0 ? "yes" : "no");
	if (c >= 0)
		close(c);
}

int main(int argc, char **argv)
{
	struct socks s;
	/*
	 * A descriptor that is not a socket below the first pair: the restore
	 * makes the sockets first, and the new pair's ends land on the lowest
	 * free numbers, this one's and the first socket's.
	 */
	int below = open("/dev/null", O_RDONLY);

	if (argc != 2 || below < 0 || make_unix(&s, argv[1]) < 0 || make_datagrams(&s, argv[1]) < 0 ||
	    make_inet(&s) < 0 || make_udp_pair(&s) < 0 || make_reuseport(&s) < 0 ||
	    make_closed(&s) < 0) {
		perror("sockets");
		return 2;
	}

	for (int i = 0; i < STEPS; i++) {
		step_pairs(&s, i);
		step_datagrams(&s, i);
		step_connection(&s, i);
		step_names(&s, i);
		step_options(&s, i);
		step_ports(&s, i);
		usleep(20000);
	}
	unlink(s.path);
	unlink(s.dgram_path);
	return 0;
}
