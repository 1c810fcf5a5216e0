/* SPDX-License-Identifier: MIT */
/*
 * test_fd_objects.c - eventfd, timerfd, signalfd, inotify and epoll
 * descriptors: recorded with their state, made again from it (R-TYP-15),
 * and the checks of the item list (R-TYP-14). Each test runs in its own
 * process (Criterion), so the descriptors it makes and closes are its own.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "core/fd_objects.h"
#include "core/fd_state.h"
#include "core/inotify_paths.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"

/* The record of descriptor @fd, as a checkpoint makes it now. */
static struct sc_fd capture(int fd)
{
	struct sc_fd *fds, got = { 0 };
	size_t n;

	cr_assert_eq(sc_fds_capture(&fds, &n, NULL, 0), 0, "%s", selfckpt_last_error());
	for (size_t i = 0; i < n; i++)
		if (fds[i].fd == fd) {
			got = fds[i];
			fds[i].path = NULL;
			fds[i].data = NULL;
		}
	sc_fds_free(fds, n);
	cr_assert_eq(got.fd, fd, "descriptor %d was not recorded", fd);
	return got;
}

/*
 * Close @f's descriptor and make it again from its record, at the same
 * number: where it lands (the lowest free number, its own here) or at 100 or
 * above, then moved.
 */
static void remake(struct sc_fd *f)
{
	int fd;

	close(f->fd);
	fd = sc_fd_object_restore(f, 100);
	cr_assert(fd == f->fd || fd >= 100, "made at %d: %s", fd, selfckpt_last_error());
	if (fd != f->fd) {
		cr_assert_eq(dup2(fd, f->fd), f->fd);
		close(fd);
	}
}

Test(fd_objects, eventfd_comes_back_with_its_count_and_flags)
{
	int fd = eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK);
	uint64_t v = 5000000000ull; /* more than eventfd() itself takes */
	struct sc_fd f;

	cr_assert_eq(write(fd, &v, sizeof(v)), sizeof(v));
	f = capture(fd);
	cr_assert_eq(f.kind, SC_FD_EVENTFD);
	remake(&f);
	cr_assert(fcntl(fd, F_GETFL) & O_NONBLOCK);
	cr_assert_eq(read(fd, &v, sizeof(v)), sizeof(v));
	cr_assert_eq(v, 1, "a semaphore reads 1 at a time, got %llu", (unsigned long long)v);
	free(f.path);
	free(f.data);
}

/* R-TYP-15: the time left at the checkpoint, counted from the restore; the interval. */
Test(fd_objects, timerfd_comes_back_with_its_time_left_and_expirations)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	struct itimerspec t = { .it_value = { 0, 1000000 }, .it_interval = { 0, 1000000 } }, now;
	uint64_t ticks;
	struct sc_fd f;

	cr_assert_eq(timerfd_settime(fd, 0, &t, NULL), 0);
	usleep(20000); /* some expirations, not read */
	t = (struct itimerspec){ .it_value = { 100, 0 }, .it_interval = { 3, 0 } };
	f = capture(fd);
	remake(&f);
	cr_assert_eq(read(fd, &ticks, sizeof(ticks)), sizeof(ticks));
	cr_assert_geq(ticks, 10, "the expirations not read are kept: %llu", (unsigned long long)ticks);
	cr_assert_eq(timerfd_settime(fd, 0, &t, NULL), 0);
	f = capture(fd);
	sleep(1); /* time that passes while the process is not running does not count */
	remake(&f);
	cr_assert_eq(timerfd_gettime(fd, &now), 0);
	cr_assert_eq(now.it_interval.tv_sec, 3);
	cr_assert(now.it_value.tv_sec >= 99 && now.it_value.tv_sec < 100, "%lld s left",
		  (long long)now.it_value.tv_sec);
	free(f.path);
	free(f.data);
}

Test(fd_objects, signalfd_comes_back_with_its_mask)
{
	sigset_t set;
	struct signalfd_siginfo si;
	struct sc_fd f;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGURG);
	sigaddset(&set, SIGRTMIN + 3);
	sigprocmask(SIG_BLOCK, &set, NULL);
	fd = signalfd(-1, &set, 0);
	f = capture(fd);
	cr_assert_eq(f.kind, SC_FD_SIGNALFD);
	remake(&f);
	raise(SIGRTMIN + 3);
	cr_assert_eq(read(fd, &si, sizeof(si)), sizeof(si));
	cr_assert_eq(si.ssi_signo, (uint32_t)(SIGRTMIN + 3));
	free(f.path);
	free(f.data);
}

/* An epoll instance watching another, with edge-triggered and one-shot watches. */
Test(fd_objects, epoll_comes_back_with_its_watches_and_data_words)
{
	int ev = eventfd(1, 0), inner = epoll_create1(0), outer = epoll_create1(0);
	struct epoll_event e = { .events = EPOLLIN | EPOLLET, .data.u64 = 0x1122334455667788ull };
	struct epoll_event got[2];
	struct sc_fd fi, fo;

	cr_assert_eq(epoll_ctl(inner, EPOLL_CTL_ADD, ev, &e), 0);
	e = (struct epoll_event){ .events = EPOLLIN | EPOLLONESHOT, .data.u64 = 42 };
	cr_assert_eq(epoll_ctl(outer, EPOLL_CTL_ADD, inner, &e), 0);
	fi = capture(inner);
	fo = capture(outer);
	cr_assert_eq(sc_fd_objects_check(getpid(), &fi, 1), -SELFCKPT_EHOST,
		     "a record without the watched descriptor is refused");
	close(outer);
	close(inner);
	cr_assert(!sc_fd_epoll_targets_open(&fo), "the watched instance is not there yet");
	remake(&fi);
	cr_assert(sc_fd_epoll_targets_open(&fo));
	remake(&fo);
	cr_assert_eq(epoll_wait(outer, got, 2, 0), 1);
	cr_assert_eq(got[0].data.u64, 42);
	cr_assert_eq(epoll_wait(outer, got, 2, 0), 0, "one-shot");
	cr_assert_eq(epoll_wait(inner, got, 2, 0), 1);
	cr_assert_eq(got[0].data.u64, 0x1122334455667788ull);
	cr_assert_eq(epoll_wait(inner, got, 2, 0), 0, "edge-triggered");
	free(fi.path);
	free(fi.data);
	free(fo.path);
	free(fo.data);
}

Test(fd_objects, inotify_watch_comes_back_with_its_number)
{
	char dir[] = "/tmp/sc-inotify-XXXXXX", path[64], buf[256];
	struct inotify_event *e = (struct inotify_event *)buf;
	struct sc_fd f;
	int in = inotify_init1(0), wd;

	cr_assert_not_null(mkdtemp(dir));
	for (int i = 0; i < 3; i++)
		inotify_rm_watch(in, inotify_add_watch(in, dir, IN_DELETE));
	wd = inotify_add_watch(in, dir, IN_CREATE);
	cr_assert_eq(wd, 4);
	while (fcntl(in, F_SETFL, O_NONBLOCK) == 0 && read(in, buf, sizeof(buf)) > 0)
		; /* the IN_IGNORED of the watches removed */
	fcntl(in, F_SETFL, 0);
	{
		struct sc_fd *fds;
		size_t n;

		cr_assert_eq(sc_fds_capture(&fds, &n, NULL, 0), -SELFCKPT_EHOST,
			     "a watch whose path is not known refuses the image");
		cr_assert(strstr(selfckpt_last_error(), "added where the library could not see"));
	}
	sc_inotify_note(in, wd, dir); /* what the shared library's inotify_add_watch() does */
	f = capture(in);
	remake(&f);
	snprintf(path, sizeof(path), "%s/new", dir);
	close(open(path, O_CREAT | O_WRONLY, 0600));
	cr_assert_gt(read(in, buf, sizeof(buf)), 0);
	cr_assert_eq(e->wd, 4, "watch %d", e->wd);
	cr_assert_eq(e->mask, IN_CREATE, "the first event is the file's, not a removed watch's");
	unlink(path);
	rmdir(dir);
	free(f.path);
	free(f.data);
}

/*
 * Events queued in an inotify instance live in the kernel's object, where no
 * image can hold them: a capture while some are unread is refused, naming
 * the descriptor, and succeeds once the program has read them.
 */
Test(fd_objects, inotify_events_not_read_refuse_the_image)
{
	char dir[] = "/tmp/sc-inotify-XXXXXX", path[64], buf[256], want[64];
	int in = inotify_init1(IN_NONBLOCK), wd;
	struct sc_fd *fds;
	size_t n;

	cr_assert_not_null(mkdtemp(dir));
	wd = inotify_add_watch(in, dir, IN_CREATE);
	sc_inotify_note(in, wd, dir);
	snprintf(path, sizeof(path), "%s/new", dir);
	close(open(path, O_CREAT | O_WRONLY, 0600));
	cr_assert_eq(sc_fds_capture(&fds, &n, NULL, 0), -EAGAIN, "%s", selfckpt_last_error());
	snprintf(want, sizeof(want), "inotify descriptor %d has ", in);
	cr_expect(strstr(selfckpt_last_error(), want), "%s", selfckpt_last_error());
	cr_expect(strstr(selfckpt_last_error(), "no image can hold them"), "%s",
		  selfckpt_last_error());
	cr_assert_gt(read(in, buf, sizeof(buf)), 0);
	cr_assert_eq(sc_fds_capture(&fds, &n, NULL, 0), 0, "%s", selfckpt_last_error());
	sc_fds_free(fds, n);
	unlink(path);
	rmdir(dir);
	close(in);
}

/* An eventfd record whose payload is @len bytes of @items. */
static struct sc_fd with_items(const void *items, size_t len)
{
	struct sc_fd f = { .fd = 9, .kind = SC_FD_EVENTFD, .path = (char *)"anon_inode:[eventfd]" };

	f.data = malloc(len ? len : 1);
	memcpy(f.data, items, len);
	f.data_len = len;
	return f;
}

static int make_from(const void *items, size_t len)
{
	struct sc_fd f = with_items(items, len);
	int fd = sc_fd_object_restore(&f, 100);

	free(f.data);
	if (fd >= 0)
		close(fd);
	return fd >= 0 ? 0 : fd;
}

/* R-TYP-14 */
Test(fd_objects, item_list_is_checked)
{
	/* count 7 (tag 0x80000001, 8 bytes), then the cases' last item */
	uint8_t ok[16] = { 1, 0, 0, 0x80, 8, 0, 0, 0, 7 };
	uint8_t buf[64];

	sc_log_set_level(SC_LOG_NONE);
	cr_assert_eq(make_from(ok, sizeof(ok)), 0, "%s", selfckpt_last_error());
	/* a length that runs past the end */
	memcpy(buf, ok, 16);
	buf[4] = 9;
	cr_assert_eq(make_from(buf, 16), -SELFCKPT_ELENGTH);
	/* a known tag of the wrong length */
	memcpy(buf, (uint8_t[]){ 1, 0, 0, 0x80, 4, 0, 0, 0, 7, 0, 0, 0 }, 12);
	cr_assert_eq(make_from(buf, 12), -SELFCKPT_ELENGTH);
	/* an unknown tag that may be skipped, then one that must be understood */
	memcpy(buf, ok, 16);
	memcpy(buf + 16, (uint8_t[]){ 9, 0, 0, 0, 2, 0, 0, 0, 1, 2 }, 10);
	cr_assert_eq(make_from(buf, 26), 0, "%s", selfckpt_last_error());
	buf[19] = 0x80;
	cr_assert_eq(make_from(buf, 26), -SELFCKPT_EUNKNOWN);
	cr_assert(strstr(selfckpt_last_error(), "0x80000009"), "%s", selfckpt_last_error());
	/* a header cut short */
	cr_assert_eq(make_from(ok, 5), -SELFCKPT_ELENGTH);
}
