/* SPDX-License-Identifier: MIT */
/*
 * fd_objects_restore.c - make eventfd, timerfd, signalfd, inotify and epoll
 * objects again from their item lists (spec §9.6.1).
 *
 * Stage contract: as fds_restore.c (the restorer, ordinary libc).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "core/fd_objects.h"
#include "core/restore/fd_place.h"
#include "format/sc_log.h"

#ifndef TFD_IOC_SET_TICKS
#define TFD_IOC_SET_TICKS _IOW('T', 0, uint64_t)
#endif

#define OBJECT_STATUS (O_NONBLOCK | O_ASYNC)
#define EPOLL_TARGET_LEN 24u
#define INOTIFY_WATCH_HEAD 24u

/* Walk @f's items: @one gets each; unknown ones are skipped or refused. */
static int each_item(const struct sc_fd *f, int (*one)(const struct sc_fd *f,
		     const struct sc_state_item *it, void *arg), void *arg)
{
	struct sc_state_item it;
	size_t pos = 0;
	int r;

	while ((r = sc_state_next(f, &pos, &it)) > 0) {
		r = one(f, &it, arg);
		if (r)
			return r;
	}
	return r;
}

/* --- eventfd --- */

struct eventfd_state {
	uint64_t count, semaphore;
};

static int eventfd_item(const struct sc_fd *f, const struct sc_state_item *it, void *arg)
{
	struct eventfd_state *s = arg;

	if (it->tag == SC_EVENTFD_COUNT)
		return sc_state_u64(it, &s->count) ? 0 : sc_state_bad_length(f, it);
	if (it->tag == SC_EVENTFD_SEMAPHORE)
		return sc_state_u64(it, &s->semaphore) ? 0 : sc_state_bad_length(f, it);
	return sc_state_unknown(f, it);
}

static int make_eventfd(const struct sc_fd *f)
{
	struct eventfd_state s = { 0, 0 };
	int fd, err = each_item(f, eventfd_item, &s);

	if (err)
		return err;
	/* eventfd() takes 32 bits; a write adds all 64 (up to 2^64 - 2) */
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | (s.semaphore ? EFD_SEMAPHORE : 0));
	if (fd < 0)
		return sc_err(errno, "cannot create the eventfd of descriptor %d: %s", f->fd,
			      strerror(errno));
	if (s.count && write(fd, &s.count, sizeof(s.count)) != sizeof(s.count)) {
		err = sc_err(errno, "cannot give the eventfd of descriptor %d its count %llu: %s",
			     f->fd, (unsigned long long)s.count, strerror(errno));
		close(fd);
		return err;
	}
	return fd;
}

/* --- timerfd --- */

struct timerfd_state {
	uint64_t clock, flags, ticks;
	struct itimerspec t;
	unsigned seen;
};

static bool get_time(const struct sc_state_item *it, struct timespec *ts)
{
	if (it->len != 16 || sc_get_le64(it->value + 8) >= 1000000000u ||
	    sc_get_le64(it->value) > INT64_MAX)
		return false;
	ts->tv_sec = (time_t)sc_get_le64(it->value);
	ts->tv_nsec = (long)sc_get_le64(it->value + 8);
	return true;
}

static int timerfd_item(const struct sc_fd *f, const struct sc_state_item *it, void *arg)
{
	struct timerfd_state *s = arg;
	bool ok;

	switch (it->tag) {
	case SC_TIMERFD_CLOCK:
		ok = sc_state_u64(it, &s->clock);
		break;
	case SC_TIMERFD_FLAGS:
		ok = sc_state_u64(it, &s->flags);
		break;
	case SC_TIMERFD_VALUE:
		ok = get_time(it, &s->t.it_value);
		break;
	case SC_TIMERFD_INTERVAL:
		ok = get_time(it, &s->t.it_interval);
		break;
	case SC_TIMERFD_TICKS:
		ok = sc_state_u64(it, &s->ticks);
		break;
	default:
		return sc_state_unknown(f, it);
	}
	s->seen |= 1u << (it->tag & 7);
	return ok ? 0 : sc_state_bad_length(f, it);
}

/* Arm @fd with the time @s had left; an absolute timer: left from now on @s's clock. */
static int arm_timer(int fd, struct timerfd_state *s)
{
	struct itimerspec t = s->t;
	int flags = (int)(s->flags & (TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET));

	if (!t.it_value.tv_sec && !t.it_value.tv_nsec)
		return 0; /* disarmed */
	if (flags & TFD_TIMER_ABSTIME) {
		struct timespec now;

		if (clock_gettime((clockid_t)s->clock, &now) < 0)
			return -errno;
		t.it_value.tv_sec += now.tv_sec;
		t.it_value.tv_nsec += now.tv_nsec;
		if (t.it_value.tv_nsec >= 1000000000) {
			t.it_value.tv_sec++;
			t.it_value.tv_nsec -= 1000000000;
		}
	}
	return timerfd_settime(fd, flags, &t, NULL) < 0 ? -errno : 0;
}

static int make_timerfd(const struct sc_fd *f)
{
	struct timerfd_state s;
	int fd, err;

	memset(&s, 0, sizeof(s));
	err = each_item(f, timerfd_item, &s);
	if (err)
		return err;
	if (s.seen != 0x3e)
		return sc_err(SELFCKPT_ELENGTH, "descriptor %d (timerfd): its state lacks a clock, "
			      "flags, time or count", f->fd);
	fd = timerfd_create((int)s.clock, TFD_CLOEXEC | TFD_NONBLOCK);
	if (fd < 0)
		return sc_err(errno, "cannot create the timerfd of descriptor %d on clock %llu: %s",
			      f->fd, (unsigned long long)s.clock, strerror(errno));
	err = arm_timer(fd, &s);
	if (err)
		err = sc_err(-err, "cannot arm the timerfd of descriptor %d: %s", f->fd,
			     strerror(-err));
	else if (s.ticks && ioctl(fd, TFD_IOC_SET_TICKS, &s.ticks) < 0)
		err = sc_err(errno, "cannot give the timerfd of descriptor %d its %llu expirations "
			     "not yet read: %s", f->fd, (unsigned long long)s.ticks,
			     strerror(errno));
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/* --- signalfd --- */

static int signalfd_item(const struct sc_fd *f, const struct sc_state_item *it, void *arg)
{
	if (it->tag == SC_SIGNALFD_MASK)
		return sc_state_u64(it, arg) ? 0 : sc_state_bad_length(f, it);
	return sc_state_unknown(f, it);
}

static int make_signalfd(const struct sc_fd *f)
{
	uint64_t mask = 0;
	int err = each_item(f, signalfd_item, &mask);
	long fd;

	if (err)
		return err;
	/* the kernel's 64-bit set: glibc's sigaddset() refuses its own signals 32 and 33 */
	fd = syscall(SYS_signalfd4, -1, &mask, sizeof(mask), SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return sc_err(errno, "cannot create the signalfd of descriptor %d: %s", f->fd,
			      strerror(errno));
	return (int)fd;
}

/* --- epoll --- */

/*
 * Add the watch of number @tfd on the file of descriptor @via: the file is
 * put at @tfd for the call (the kernel keys the watch by both), and what
 * @tfd holds, if anything, put back after, with its close-on-exec flag.
 * The epoll instance @ep is moved out of the way first if it sits at @tfd.
 */
static int add_via(int *ep, int tfd, int via, struct epoll_event *ev)
{
	int held = fcntl(tfd, F_GETFD), saved = -1, r, e;

	if (*ep == tfd) {
		int moved = fcntl(*ep, F_DUPFD_CLOEXEC, tfd + 1);

		if (moved < 0)
			return -1;
		close(*ep);
		*ep = moved;
		held = -1;
	}
	if (held >= 0 && (saved = fcntl(tfd, F_DUPFD_CLOEXEC, 3)) < 0)
		return -1;
	r = dup2(via, tfd) < 0 ? -1 : epoll_ctl(*ep, EPOLL_CTL_ADD, tfd, ev);
	e = errno;
	if (saved >= 0) {
		dup2(saved, tfd);
		fcntl(tfd, F_SETFD, held);
		close(saved);
	} else {
		close(tfd);
	}
	errno = e;
	return r;
}

static int epoll_item(const struct sc_fd *f, const struct sc_state_item *it, void *arg)
{
	int *ep = arg, tfd, via = -1, r;
	struct epoll_event ev;

	if (it->tag != SC_EPOLL_TARGET && it->tag != SC_EPOLL_VIA)
		return sc_state_unknown(f, it);
	if (it->len != (it->tag == SC_EPOLL_VIA ? EPOLL_TARGET_LEN + 4 : EPOLL_TARGET_LEN))
		return sc_state_bad_length(f, it);
	tfd = (int)sc_get_le32(it->value);
	ev.events = sc_get_le32(it->value + 4);
	ev.data.u64 = sc_get_le64(it->value + 8);
	if (it->tag == SC_EPOLL_VIA)
		via = (int)sc_get_le32(it->value + EPOLL_TARGET_LEN);
	r = via >= 0 ? add_via(ep, tfd, via, &ev) : epoll_ctl(*ep, EPOLL_CTL_ADD, tfd, &ev);
	if (r < 0)
		return sc_err(errno, "cannot give back epoll descriptor %d its watch of descriptor "
			      "%d%s: %s", f->fd, tfd, via >= 0 ? " (through the file it held)" : "",
			      strerror(errno));
	return 0;
}

static int make_epoll(const struct sc_fd *f)
{
	int ep = epoll_create1(EPOLL_CLOEXEC), err;

	if (ep < 0)
		return sc_err(errno, "cannot create the epoll instance of descriptor %d: %s", f->fd,
			      strerror(errno));
	err = each_item(f, epoll_item, &ep);
	if (err) {
		close(ep);
		return err;
	}
	return ep;
}

/* --- inotify --- */

/*
 * The kernel numbers the watches of one instance in turn: a watch is added,
 * and removed and added again, until it gets its old number.
 */
static int add_watch_as(int in, const char *path, uint32_t mask, int wd)
{
	int got = inotify_add_watch(in, path, mask);

	while (got >= 0 && got < wd) {
		inotify_rm_watch(in, got);
		got = inotify_add_watch(in, path, mask);
	}
	if (got < 0)
		return -errno;
	return got == wd ? 0 : -EEXIST;
}

static int inotify_item(const struct sc_fd *f, const struct sc_state_item *it, void *arg)
{
	int in = *(int *)arg, err;
	char *path;

	if (it->tag != SC_INOTIFY_WATCH)
		return sc_state_unknown(f, it);
	if (it->len <= INOTIFY_WATCH_HEAD || memchr(it->value + INOTIFY_WATCH_HEAD, 0,
						   it->len - INOTIFY_WATCH_HEAD))
		return sc_state_bad_length(f, it);
	path = strndup((const char *)it->value + INOTIFY_WATCH_HEAD, it->len - INOTIFY_WATCH_HEAD);
	if (!path)
		return sc_err(ENOMEM, "out of memory restoring descriptor %d", f->fd);
	err = add_watch_as(in, path, sc_get_le32(it->value + 4) & IN_ALL_EVENTS,
			   (int)sc_get_le32(it->value));
	if (err)
		err = sc_err(-err, "cannot give back inotify descriptor %d its watch %u of '%s': %s",
			     f->fd, sc_get_le32(it->value), path,
			     err == -EEXIST ? "the kernel gave another number" : strerror(-err));
	free(path);
	return err;
}

/* The events of the watches removed on the way (IN_IGNORED) were never the program's. */
static void drain_events(int in)
{
	char buf[4096];

	while (read(in, buf, sizeof(buf)) > 0)
		;
}

static int make_inotify(const struct sc_fd *f)
{
	int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK), err;

	if (in < 0)
		return sc_err(errno, "cannot create the inotify instance of descriptor %d: %s",
			      f->fd, strerror(errno));
	err = each_item(f, inotify_item, &in);
	if (err) {
		close(in);
		return err;
	}
	drain_events(in);
	return in;
}

/* A pidfd of the process: of this one, which it is now. */
static int make_pidfd(const struct sc_fd *f)
{
	long fd = syscall(SYS_pidfd_open, getpid(), 0);

	if (fd < 0)
		return sc_err(errno, "cannot open a pidfd of the process for descriptor %d: %s",
			      f->fd, strerror(errno));
	return (int)fd;
}

static int make_object(const struct sc_fd *f)
{
	switch (f->kind) {
	case SC_FD_EVENTFD:
		return make_eventfd(f);
	case SC_FD_TIMERFD:
		return make_timerfd(f);
	case SC_FD_SIGNALFD:
		return make_signalfd(f);
	case SC_FD_INOTIFY:
		return make_inotify(f);
	case SC_FD_EPOLL:
		return make_epoll(f);
	case SC_FD_PIDFD:
		return make_pidfd(f);
	default:
		return sc_err(SELFCKPT_EUSAGE, "descriptor %d is not an object of fd_objects.c",
			      f->fd);
	}
}

int sc_fd_object_restore(const struct sc_fd *f, int min)
{
	int fd = make_object(f), nfd;

	if (fd < 0)
		return fd;
	nfd = sc_fd_settle(fd, min, f);
	if (nfd < 0)
		return nfd;
	if (fcntl(nfd, F_SETFL, f->open_flags & OBJECT_STATUS) < 0) {
		int err = sc_err(errno, "cannot set the flags of descriptor %d (%s): %s", f->fd,
				 f->path, strerror(errno));

		close(nfd);
		return err;
	}
	return nfd;
}

static int target_open(const struct sc_fd *f, const struct sc_state_item *it, void *arg)
{
	(void)f;
	(void)arg;
	if (it->tag == SC_EPOLL_TARGET && it->len == EPOLL_TARGET_LEN &&
	    fcntl((int)sc_get_le32(it->value), F_GETFD) < 0)
		return 1;
	if (it->tag == SC_EPOLL_VIA && it->len == EPOLL_TARGET_LEN + 4 &&
	    fcntl((int)sc_get_le32(it->value + EPOLL_TARGET_LEN), F_GETFD) < 0)
		return 1; /* its file comes back through the descriptor named last */
	return 0;
}

bool sc_fd_epoll_targets_open(const struct sc_fd *f)
{
	return each_item(f, target_open, NULL) <= 0;
}
