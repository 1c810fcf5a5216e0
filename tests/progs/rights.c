/* SPDX-License-Identifier: MIT */
/*
 * rights.c - a program whose socket queues always hold messages that carry
 * descriptors (SCM_RIGHTS), with data:
 *   - a stream pair: a plain write, then a write that carries the read end
 *     of a pipe that only the message holds (with bytes buffered in it) and
 *     a file the program holds too (one open file description: its position
 *     moves with the program's);
 *   - a datagram pair: a message that carries a unix socket that only the
 *     message holds, whose own queue holds a message carrying the file (a
 *     description in flight inside one in flight; its peer is closed);
 *   - a seqpacket pair: a message that carries the write end of a pipe the
 *     program reads, and an eventfd that only the message holds.
 * Each is sent at step i and received at step i + 2, in 60 steps of 20 ms;
 * what it prints (one line a step, under the 4 KiB that stdio holds until
 * the end) follows from what it did, not from when. Run under
 * selfckpt-run by tests/cli/test_objects.c.
 * Usage: rights DIR (a folder of its own, for the file).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define STEPS 60
#define MAX_FDS 4

struct rights {
	int stream[2], dgram[2], seq[2];
	int file;    /* held by the program, and sent */
	int pipe[2]; /* the program reads [0]; [1] is sent */
};

/* Send @len bytes of @data with the @n descriptors of @fds on @sk. */
static int send_fds(int sk, const char *data, size_t len, const int *fds, int n)
{
	union {
		char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { (void *)data, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = CMSG_SPACE((size_t)n * sizeof(int)) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	memset(&ctl, 0, sizeof(ctl));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, (size_t)n * sizeof(int));
	return sendmsg(sk, &msg, 0) == (ssize_t)len ? 0 : -1;
}

/* Receive a message into @data (its length, or -1) and its descriptors into @fds (@n). */
static ssize_t recv_fds(int sk, char *data, size_t size, int *fds, int *n)
{
	union {
		char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { data, size };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = sizeof(ctl.buf) };
	ssize_t r = recvmsg(sk, &msg, MSG_DONTWAIT);
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	*n = 0;
	if (r >= 0 && c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
		*n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(c), (size_t)*n * sizeof(int));
	}
	return r;
}

static void close_all(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* Does @fd share the program's file description: a byte written through it moves ours? */
static const char *same_file(const struct rights *r, int fd)
{
	off_t before = lseek(r->file, 0, SEEK_CUR);

	if (write(fd, "+", 1) != 1)
		return "unwritable";
	return lseek(r->file, 0, SEEK_CUR) == before + 1 ? "shared" : "apart";
}

/* A pipe whose read end only the message will hold, with "p@i" buffered in it. */
static int lone_pipe_end(int i)
{
	char text[16];
	int p[2];

	if (pipe(p) < 0)
		return -1;
	snprintf(text, sizeof(text), "p%d", i);
	if (write(p[1], text, strlen(text)) < 0)
		return -1;
	close(p[1]);
	return p[0];
}

static void send_stream(const struct rights *r, int i)
{
	char text[16];
	int fds[2] = { lone_pipe_end(i), r->file };

	snprintf(text, sizeof(text), "x%d", i);
	send(r->stream[0], text, strlen(text), 0);
	snprintf(text, sizeof(text), "a%d", i);
	send_fds(r->stream[0], text, strlen(text), fds, 2);
	close(fds[0]);
}

static void recv_stream(const struct rights *r, int i)
{
	char in[64], piped[16];
	int fds[MAX_FDS], n;
	ssize_t len = recv_fds(r->stream[1], in, sizeof(in), fds, &n), p = -1, end = -1;

	if (n == 2) {
		p = read(fds[0], piped, sizeof(piped));
		end = read(fds[0], piped + 15, 1);
	}
	printf("%d s:%.*s/%d/%.*s/%s/%s", i, (int)(len > 0 ? len : 0), in, n, (int)(p > 0 ? p : 0),
	       piped, end == 0 ? "eof" : "-", n == 2 ? same_file(r, fds[1]) : "-");
	close_all(fds, n);
}

/* A socket that only the message holds, with a message carrying the file queued in it. */
static void send_dgram(const struct rights *r, int i)
{
	char text[16];
	int inner[2], fd;

	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, inner) < 0)
		return;
	snprintf(text, sizeof(text), "n%d", i);
	send_fds(inner[1], text, strlen(text), &r->file, 1);
	close(inner[1]);
	fd = inner[0];
	snprintf(text, sizeof(text), "d%d", i);
	send_fds(r->dgram[0], text, strlen(text), &fd, 1);
	close(fd);
}

static void recv_dgram(const struct rights *r)
{
	char in[64], inner[64];
	int fds[MAX_FDS], n, got[MAX_FDS], k = 0;
	ssize_t len = recv_fds(r->dgram[1], in, sizeof(in), fds, &n), m = -1;

	if (n == 1)
		m = recv_fds(fds[0], inner, sizeof(inner), got, &k);
	printf(" d:%.*s/%d/%.*s/%d/%s", (int)(len > 0 ? len : 0), in, n, (int)(m > 0 ? m : 0), inner,
	       k, k == 1 ? same_file(r, got[0]) : "-");
	close_all(got, k);
	close_all(fds, n);
}

/* The program's pipe write end, and an eventfd counting @i + 1 that only the message holds. */
static void send_seq(const struct rights *r, int i)
{
	char text[16];
	int fds[2] = { r->pipe[1], eventfd((unsigned)i + 1, 0) };

	snprintf(text, sizeof(text), "q%d", i);
	send_fds(r->seq[1], text, strlen(text), fds, 2);
	close(fds[1]);
}

static void recv_seq(const struct rights *r, int i)
{
	char in[64], piped[16], text[16];
	int fds[MAX_FDS], n;
	ssize_t len = recv_fds(r->seq[0], in, sizeof(in), fds, &n), p = -1;
	uint64_t count = 0;

	if (n == 2) {
		snprintf(text, sizeof(text), "w%d", i);
		if (write(fds[0], text, strlen(text)) > 0)
			p = read(r->pipe[0], piped, sizeof(piped));
		if (read(fds[1], &count, sizeof(count)) != sizeof(count))
			count = 0;
	}
	printf(" q:%.*s/%d/%.*s/%llu\n", (int)(len > 0 ? len : 0), in, n, (int)(p > 0 ? p : 0), piped,
	       (unsigned long long)count);
	close_all(fds, n);
}

int main(int argc, char **argv)
{
	struct rights r;
	char path[256];

	if (argc != 2)
		return 2;
	snprintf(path, sizeof(path), "%s/rights.txt", argv[1]);
	r.file = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (r.file < 0 || pipe(r.pipe) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, r.stream) < 0 ||
	    socketpair(AF_UNIX, SOCK_DGRAM, 0, r.dgram) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, r.seq) < 0) {
		perror("rights");
		return 2;
	}
	for (int i = 0; i < STEPS; i++) {
		send_stream(&r, i);
		send_dgram(&r, i);
		send_seq(&r, i);
		if (i >= 2) {
			recv_stream(&r, i - 2);
			recv_dgram(&r);
			recv_seq(&r, i - 2);
		}
		usleep(20000);
	}
	return 0;
}
