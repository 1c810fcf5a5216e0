/* SPDX-License-Identifier: MIT */
/*
 * objects.c - a program that holds one of each kernel object a descriptor
 * can name without a file: an eventfd (a semaphore, non-blocking), a
 * timerfd, a signalfd, an inotify instance, two epoll instances (one
 * watching the other) and a pidfd of itself, and uses them in 100 steps of
 * 20 ms. With
 * SC_TEST_MOVED_EPOLL=1 in its environment it also holds a third epoll
 * instance whose watches' numbers were closed or now hold another file (the
 * watched pipes still open at other numbers). Everything it
 * prints follows from what it did, not from when: run under selfckpt-run
 * by tests/cli/test_objects.c and checkpointed at any moment, every restore
 * must print what an uninterrupted run prints. Usage: objects DIR (a folder
 * of its own, for the inotify watch).
 */
#define _GNU_SOURCE /* memfd_create, SEEK_HOLE */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define STEPS 100
#define TIMER_LONG 1000 /* seconds: a timer that cannot fire during the run */

struct objects {
	int ev, tm, sig, in, ep, outer, self;
	int moved, pipe_a[2], pipe_b[2]; /* epoll whose watches were added at numbers since changed */
	int mem, ghost, ghost2; /* a sealed memfd; a removed file with a hole, opened twice */
	int wd;
	char dir[256];
};

/*
 * A memfd with mode 0642 and seals; a file with data, a hole of 64 KiB and
 * data again, opened twice and removed.
 */
static int make_files(struct objects *o, const char *dir)
{
	char path[300];

	o->mem = memfd_create("sealed", MFD_ALLOW_SEALING);
	if (o->mem < 0 || write(o->mem, "memfd", 5) != 5 || fchmod(o->mem, 0642) < 0 ||
	    fcntl(o->mem, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/ghost", dir);
	o->ghost = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	o->ghost2 = open(path, O_RDWR);
	if (o->ghost < 0 || o->ghost2 < 0 || pwrite(o->ghost, "head", 4, 0) != 4 ||
	    pwrite(o->ghost, "tail", 4, 4096 + 65536) != 4)
		return -1;
	return unlink(path);
}

/* What the files are at the end: seals, mode, one file behind two descriptors, the hole. */
static void report_files(const struct objects *o)
{
	struct stat st;
	char got[8] = "";

	fstat(o->mem, &st);
	printf("memfd seals:%x mode:%o\n", fcntl(o->mem, F_GET_SEALS), st.st_mode & 07777);
	pwrite(o->ghost, "both", 4, 0);
	pread(o->ghost2, got, 4, 0);
	printf("removed file: one file:%s hole at:%lld data at:%lld\n",
	       strcmp(got, "both") ? "no" : "yes", (long long)lseek(o->ghost, 0, SEEK_HOLE),
	       (long long)lseek(o->ghost, 4096, SEEK_DATA));
}

/*
 * @moved watches the read ends of two pipes, added at their first numbers:
 * then pipe_a's is moved (dup, then the number closed) and pipe_b's number
 * is given another file (dup2 of the eventfd over it).
 */
static int make_moved(struct objects *o)
{
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 0xa };
	int a, b;

	o->moved = epoll_create1(0);
	if (o->moved < 0 || pipe(o->pipe_a) < 0 || pipe(o->pipe_b) < 0 ||
	    epoll_ctl(o->moved, EPOLL_CTL_ADD, o->pipe_a[0], &e) < 0)
		return -1;
	e.data.u64 = 0xb;
	if (epoll_ctl(o->moved, EPOLL_CTL_ADD, o->pipe_b[0], &e) < 0)
		return -1;
	a = fcntl(o->pipe_a[0], F_DUPFD, 200);
	b = fcntl(o->pipe_b[0], F_DUPFD, 210);
	if (a < 0 || b < 0 || close(o->pipe_a[0]) < 0 || dup2(o->ev, o->pipe_b[0]) < 0)
		return -1;
	o->pipe_a[0] = a;
	o->pipe_b[0] = b;
	return 0;
}

static int make(struct objects *o, const char *dir)
{
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 0xfeedfacecafe0001ull };
	struct itimerspec long_timer = { .it_interval = { 7, 0 }, .it_value = { TIMER_LONG, 0 } };
	sigset_t urg;

	snprintf(o->dir, sizeof(o->dir), "%s", dir);
	if (make_files(o, dir) < 0)
		return -1;
	sigemptyset(&urg);
	sigaddset(&urg, SIGURG);
	sigprocmask(SIG_BLOCK, &urg, NULL);
	o->ev = eventfd(3, EFD_SEMAPHORE | EFD_NONBLOCK);
	o->tm = timerfd_create(CLOCK_MONOTONIC, 0);
	o->sig = signalfd(-1, &urg, SFD_NONBLOCK);
	o->in = inotify_init1(IN_NONBLOCK);
	o->ep = epoll_create1(0);
	o->outer = epoll_create1(EPOLL_CLOEXEC);
	if (o->ev < 0 || o->tm < 0 || o->sig < 0 || o->in < 0 || o->ep < 0 || o->outer < 0)
		return -1;
	/* a watch added and removed: the one kept is number 2, not 1 */
	inotify_rm_watch(o->in, inotify_add_watch(o->in, dir, IN_DELETE));
	o->wd = inotify_add_watch(o->in, dir, IN_CREATE);
	if (o->wd < 0 || timerfd_settime(o->tm, 0, &long_timer, NULL) < 0 ||
	    epoll_ctl(o->ep, EPOLL_CTL_ADD, o->ev, &e) < 0)
		return -1;
	e.events = EPOLLIN | EPOLLET;
	e.data.u64 = 0xfeedfacecafe0002ull;
	if (epoll_ctl(o->ep, EPOLL_CTL_ADD, o->sig, &e) < 0)
		return -1;
	e.events = EPOLLIN;
	e.data.u64 = 0xfeedfacecafe0003ull;
	if (epoll_ctl(o->outer, EPOLL_CTL_ADD, o->ep, &e) < 0)
		return -1;
	o->moved = -1;
	o->self = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (o->self < 0)
		return -1;
	return getenv("SC_TEST_MOVED_EPOLL") ? make_moved(o) : 0;
}

/* A byte into one pipe or the other; what @moved reports; the byte read back. */
static void step_moved(const struct objects *o, int step)
{
	struct epoll_event got[2];
	char c;
	int n;

	if (step % 6 || o->moved < 0)
		return;
	write(step % 12 ? o->pipe_a[1] : o->pipe_b[1], "x", 1);
	n = epoll_wait(o->moved, got, 2, 0);
	printf("%d moved:%d", step, n);
	for (int i = 0; i < n; i++)
		printf(" %llx", (unsigned long long)got[i].data.u64);
	printf("\n");
	read(step % 12 ? o->pipe_a[0] : o->pipe_b[0], &c, 1);
}

/* The pidfd still names this process: its fdinfo's pid is getpid(), and it can signal. */
static void step_pidfd(const struct objects *o, int step)
{
	char path[64], buf[512];
	const char *pid;
	ssize_t n;
	int fd;

	if (step % 20 != 3)
		return;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", o->self);
	fd = open(path, O_RDONLY);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	pid = strstr(buf, "Pid:");
	printf("%d pidfd: self:%s signal:%s\n", step,
	       pid && atoi(pid + 4) == (int)getpid() ? "yes" : "no",
	       syscall(SYS_pidfd_send_signal, o->self, 0, NULL, 0) == 0 ? "ok" : "failed");
}

/* What the epoll instances report now, as text. */
static void report_epoll(const struct objects *o, int step)
{
	struct epoll_event got[4];
	int n = epoll_wait(o->outer, got, 4, 0), k;

	printf("%d outer:%d", step, n);
	for (int i = 0; i < n; i++)
		printf(" %llx", (unsigned long long)got[i].data.u64);
	k = epoll_wait(o->ep, got, 4, 0);
	/* the order of ready events is the kernel's: not part of what comes back */
	if (k == 2 && got[0].data.u64 > got[1].data.u64) {
		struct epoll_event swap = got[0];

		got[0] = got[1];
		got[1] = swap;
	}
	printf(" inner:%d", k);
	for (int i = 0; i < k; i++)
		printf(" %llx/%x", (unsigned long long)got[i].data.u64, got[i].events);
	printf("\n");
}

static void step_eventfd(const struct objects *o, int step)
{
	uint64_t v = 0;
	ssize_t r;

	if (step % 3 == 0) {
		v = 2;
		r = write(o->ev, &v, sizeof(v));
	}
	r = read(o->ev, &v, sizeof(v));
	printf("%d eventfd:%lld nonblock:%d\n", step, r < 0 ? -1ll : (long long)v,
	       !!(fcntl(o->ev, F_GETFL) & O_NONBLOCK));
}

static void step_signal(const struct objects *o, int step)
{
	struct signalfd_siginfo si;

	if (step % 4 == 0)
		raise(SIGURG);
	if (step % 4 != 1)
		return;
	report_epoll(o, step); /* the edge-triggered watch sees the signal once */
	if (read(o->sig, &si, sizeof(si)) == sizeof(si))
		printf("%d signal:%u\n", step, si.ssi_signo);
}

static void step_inotify(const struct objects *o, int step)
{
	char buf[4096], path[300];
	ssize_t n;

	if (step % 5)
		return;
	snprintf(path, sizeof(path), "%s/f%d", o->dir, step);
	/* made without a descriptor: an image taken in between would need the file back */
	mknod(path, S_IFREG | 0600, 0);
	n = read(o->in, buf, sizeof(buf));
	for (char *p = buf; n > 0 && p < buf + n;) {
		struct inotify_event *e = (struct inotify_event *)p;

		printf("%d inotify wd:%d mask:%x name:%s\n", step, e->wd, e->mask,
		       e->len ? e->name : "");
		p += sizeof(*e) + e->len;
	}
	unlink(path); /* the folder is as it was: a restore that creates it again is told */
}

static void step_timer(const struct objects *o, int step)
{
	struct itimerspec t;

	if (step % 10)
		return;
	timerfd_gettime(o->tm, &t);
	printf("%d timer left:%s interval:%lld\n", step,
	       t.it_value.tv_sec < TIMER_LONG && t.it_value.tv_sec > TIMER_LONG - 60 ? "ok" : "wrong",
	       (long long)t.it_interval.tv_sec);
}

/* A short timer at the end: it fires, once. */
static void fire_timer(const struct objects *o)
{
	struct itimerspec t = { .it_value = { 0, 30000000 } };
	uint64_t ticks = 0;

	timerfd_settime(o->tm, 0, &t, NULL);
	if (read(o->tm, &ticks, sizeof(ticks)) != sizeof(ticks))
		ticks = 0;
	printf("timer fired:%llu\n", (unsigned long long)ticks);
}

int main(int argc, char **argv)
{
	struct objects o;

	if (argc != 2 || make(&o, argv[1]) < 0) {
		perror("objects");
		return 2;
	}

	for (int step = 0; step < STEPS; step++) {
		step_eventfd(&o, step);
		step_signal(&o, step);
		step_inotify(&o, step);
		step_timer(&o, step);
		step_moved(&o, step);
		step_pidfd(&o, step);
		usleep(20000);
	}
	fire_timer(&o);
	report_files(&o);
	return 0;
}
