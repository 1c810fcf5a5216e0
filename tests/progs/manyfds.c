/* SPDX-License-Identifier: MIT */
/*
 * manyfds.c - a program that holds more than 1,500 descriptors, enough for
 * the freeze to share its reads among helper threads: 300 eventfds (each
 * with its own count), 300 unix socket pairs (a message of its own queued
 * in each), 200 timerfds (each with its own interval), 100 opens of one
 * file (each at its own position), two epoll instances watching 100
 * eventfds each, and the copies a helper leaves to the thread that freezes:
 * a socket pair with 100 KiB queued and one whose queued message carries
 * a pipe's read end (SCM_RIGHTS). In 100 steps of 20 ms (2 s, longer than
 * the latest checkpoint the test asks for, at 1.05 s) it changes a few of
 * each; at the end it prints the state of every one, which follows from
 * what it did, not from when. Run under selfckpt-run by
 * tests/cli/test_objects.c. Usage: manyfds DIR (a folder of its own).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define STEPS 100
#define EVENTS 300
#define PAIRS 300
#define TIMERS 200
#define OPENS 100
#define BIG (100 << 10)

struct many {
	int ev[EVENTS], pair[PAIRS][2], tm[TIMERS], file[OPENS], ep[2];
	int big[2], carrier[2], carried[2];
};

static int make_sockets(struct many *m)
{
	static char big[BIG];
	char msg[32];

	for (int i = 0; i < PAIRS; i++) {
		int len = snprintf(msg, sizeof(msg), "pair %d", i);

		if (socketpair(AF_UNIX, i % 2 ? SOCK_DGRAM : SOCK_STREAM, 0, m->pair[i]) < 0 ||
		    write(m->pair[i][1], msg, (size_t)len) != len)
			return -1;
	}
	memset(big, 'b', sizeof(big));
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, m->big) < 0 ||
	    fcntl(m->big[1], F_SETFL, O_NONBLOCK) < 0)
		return -1;
	for (size_t done = 0; done < sizeof(big);) {
		ssize_t k = write(m->big[1], big + done, sizeof(big) - done);

		if (k <= 0)
			return -1;
		done += (size_t)k;
	}
	return 0;
}

/* A message on @carrier that carries the read end of a pipe with "carried" in it. */
static int make_carrier(struct many *m)
{
	char ctl[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { "rights", 6 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			      .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, m->carrier) < 0 || pipe(m->carried) < 0 ||
	    write(m->carried[1], "carried", 7) != 7)
		return -1;
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &m->carried[0], sizeof(int));
	if (sendmsg(m->carrier[1], &msg, 0) != 6)
		return -1;
	close(m->carried[0]); /* the message holds it now */
	close(m->carried[1]);
	return 0;
}

static int make(struct many *m, const char *dir)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/file", dir);
	for (int i = 0; i < OPENS; i++)
		if ((m->file[i] = open(path, O_RDWR | O_CREAT, 0600)) < 0 ||
		    lseek(m->file[i], i, SEEK_SET) != i)
			return -1;
	for (int i = 0; i < EVENTS; i++)
		if ((m->ev[i] = eventfd((unsigned)i + 1, EFD_NONBLOCK)) < 0)
			return -1;
	for (int i = 0; i < TIMERS; i++) {
		struct itimerspec t = { .it_interval = { 1000 + i, 0 }, .it_value = { 5000, 0 } };

		if ((m->tm[i] = timerfd_create(CLOCK_MONOTONIC, 0)) < 0 ||
		    timerfd_settime(m->tm[i], 0, &t, NULL) < 0)
			return -1;
	}
	for (int k = 0; k < 2; k++) {
		if ((m->ep[k] = epoll_create1(0)) < 0)
			return -1;
		for (int i = k * 100; i < k * 100 + 100; i++) {
			struct epoll_event e = { .events = EPOLLIN, .data.u64 = 7000u + (unsigned)i };

			if (epoll_ctl(m->ep[k], EPOLL_CTL_ADD, m->ev[i], &e) < 0)
				return -1;
		}
	}
	return make_sockets(m) < 0 ? -1 : make_carrier(m);
}

/* Step @s: a few of each kind change, the same ones whenever the step runs. */
static void step(struct many *m, int s)
{
	uint64_t one = 1;
	char msg[32];
	int i = (s * 7) % PAIRS, len = snprintf(msg, sizeof(msg), "step %d", s);

	if (write(m->ev[(s * 13) % EVENTS], &one, sizeof(one)) != sizeof(one) ||
	    write(m->pair[i][0], msg, (size_t)len) != len ||
	    write(m->file[s % OPENS], "x", 1) != 1)
		perror("step");
}

/* An epoll instance's ready events, in order of their data words. */
static void report_epoll(int ep)
{
	struct epoll_event e[128];
	int n = epoll_wait(ep, e, 128, 0);
	uint64_t sum = 0;

	for (int i = 0; i < n; i++)
		sum += e[i].data.u64;
	printf("epoll: %d ready, data sum %llu\n", n, (unsigned long long)sum);
}

/* The queue of @fd, read whole, as "len:first bytes". */
static void report_queue(int fd, const char *what)
{
	static char buf[BIG + 64];
	ssize_t got = 0, k;

	fcntl(fd, F_SETFL, O_NONBLOCK);
	while ((k = read(fd, buf + got, sizeof(buf) - (size_t)got)) > 0)
		got += k;
	printf("%s: %zd bytes '%.*s'\n", what, got, (int)(got < 20 ? (got > 0 ? got : 0) : 20), buf);
}

static void report(struct many *m)
{
	char buf[64], ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			      .msg_controllen = sizeof(ctl) };
	uint64_t v;
	ssize_t k;

	for (int k2 = 0; k2 < 2; k2++)
		report_epoll(m->ep[k2]);
	for (int i = 0; i < EVENTS; i++)
		printf("eventfd %d: %llu\n", i, read(m->ev[i], &v, sizeof(v)) == sizeof(v) ?
		       (unsigned long long)v : 0ull);
	for (int i = 0; i < TIMERS; i++) {
		struct itimerspec t;

		timerfd_gettime(m->tm[i], &t);
		printf("timerfd %d: interval %lld armed %d\n", i, (long long)t.it_interval.tv_sec,
		       t.it_value.tv_sec > 0);
	}
	for (int i = 0; i < OPENS; i++)
		printf("file %d: at %lld\n", i, (long long)lseek(m->file[i], 0, SEEK_CUR));
	for (int i = 0; i < PAIRS; i++) {
		snprintf(buf, sizeof(buf), "pair %d", i);
		report_queue(m->pair[i][0], buf);
		snprintf(buf, sizeof(buf), "pair %d back", i);
		report_queue(m->pair[i][1], buf);
	}
	report_queue(m->big[0], "big");
	k = recvmsg(m->carrier[0], &msg, 0);
	if (k == 6 && CMSG_FIRSTHDR(&msg)) {
		int fd;

		memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(fd));
		report_queue(fd, "carried");
	} else {
		printf("carrier: %zd bytes, no descriptor\n", k);
	}
}

int main(int argc, char **argv)
{
	static struct many m;
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (argc != 2 || make(&m, argv[1]) < 0) {
		perror("manyfds");
		return 2;
	}
	for (int s = 0; s < STEPS; s++) {
		step(&m, s);
		usleep(20000);
	}
	report(&m);
	return 0;
}
