/* SPDX-License-Identifier: MIT */
/*
 * fd_objects.c - eventfd, timerfd, signalfd, inotify and epoll descriptors:
 * their state from the fdinfo text copied at the instant of the snapshot
 * (fds_freeze_rt.c), and the same objects made again at restore.
 *
 * Time: a timerfd comes back with the time it had left at the checkpoint,
 * counted from the restore: the time the process did not exist does not
 * count, for every clock (a timer set for an absolute time fires as late
 * after the restore as it would have after the checkpoint).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/fd_objects.h"
#include "core/inotify_paths.h"
#include "format/sc_log.h"

bool sc_fd_object_kind(int kind)
{
	return (kind >= SC_FD_EVENTFD && kind <= SC_FD_EPOLL) || kind == SC_FD_PIDFD;
}

/* The value after "@key" on a line of @text, by @fmt; false when absent. */
static bool field(const char *text, const char *key, const char *fmt, void *v)
{
	size_t k = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, key, k))
			return sscanf(l + k, fmt, v) == 1;
	return false;
}

static int missing(const struct sc_fd *f, const char *key)
{
	return sc_err(SELFCKPT_EHOST, "descriptor %d (%s): the kernel's account of it has no "
		      "'%s': its state cannot be recorded", f->fd, f->path, key);
}

static int collect_eventfd(const struct sc_fd *f, const char *t, struct sc_state_out *o)
{
	unsigned long long count;
	int sem = 0;

	if (!field(t, "eventfd-count:", "%llx", &count))
		return missing(f, "eventfd-count");
	/* before Linux 6.8 the kernel does not say; a semaphore is then told as not one */
	(void)field(t, "eventfd-semaphore:", "%d", &sem);
	sc_state_put_u64(o, SC_EVENTFD_COUNT, count);
	sc_state_put_u64(o, SC_EVENTFD_SEMAPHORE, sem != 0);
	return 0;
}

static void put_time(struct sc_state_out *o, uint32_t tag, uint64_t sec, uint64_t nsec)
{
	uint8_t v[16];

	sc_put_le64(v, sec);
	sc_put_le64(v + 8, nsec);
	sc_state_put(o, tag, v, sizeof(v));
}

static int collect_timerfd(const struct sc_fd *f, const char *t, struct sc_state_out *o)
{
	unsigned long long ticks, vs, vn, is, in;
	unsigned flags;
	int clock;
	const char *v = strstr(t, "it_value:"), *i = strstr(t, "it_interval:");

	if (!field(t, "clockid:", "%d", &clock))
		return missing(f, "clockid");
	if (!field(t, "ticks:", "%llu", &ticks))
		return missing(f, "ticks");
	if (!field(t, "settime flags:", "%o", &flags))
		return missing(f, "settime flags");
	if (!v || sscanf(v, "it_value: (%llu, %llu)", &vs, &vn) != 2)
		return missing(f, "it_value");
	if (!i || sscanf(i, "it_interval: (%llu, %llu)", &is, &in) != 2)
		return missing(f, "it_interval");
	sc_state_put_u64(o, SC_TIMERFD_CLOCK, (uint64_t)clock);
	sc_state_put_u64(o, SC_TIMERFD_FLAGS, flags);
	put_time(o, SC_TIMERFD_VALUE, vs, vn);
	put_time(o, SC_TIMERFD_INTERVAL, is, in);
	sc_state_put_u64(o, SC_TIMERFD_TICKS, ticks);
	return 0;
}

static int collect_signalfd(const struct sc_fd *f, const char *t, struct sc_state_out *o)
{
	unsigned long long mask;

	if (!field(t, "sigmask:", "%llx", &mask))
		return missing(f, "sigmask");
	sc_state_put_u64(o, SC_SIGNALFD_MASK, mask);
	return 0;
}

static int collect_epoll(const char *t, struct sc_state_out *o)
{
	for (const char *l = strstr(t, "tfd:"); l; l = strstr(l + 1, "\ntfd:")) {
		unsigned long long data, ino;
		unsigned events;
		int tfd;
		uint8_t v[24];

		if (*l == '\n')
			l++;
		if (sscanf(l, "tfd: %d events: %x data: %llx pos:%*d ino:%llx", &tfd, &events,
			   &data, &ino) != 4)
			return -EINVAL;
		sc_put_le32(v, (uint32_t)tfd);
		sc_put_le32(v + 4, events);
		sc_put_le64(v + 8, data);
		sc_put_le64(v + 16, ino);
		sc_state_put(o, SC_EPOLL_TARGET, v, sizeof(v));
	}
	return 0;
}

/* Is @path the file of inode @ino on the device the kernel numbers @kdev (major << 20)? */
static bool same_file(const char *path, unsigned long long ino, unsigned kdev)
{
	struct stat st;

	return stat(path, &st) == 0 && st.st_ino == ino && major(st.st_dev) == kdev >> 20 &&
	       minor(st.st_dev) == (kdev & 0xfffff);
}

static int collect_inotify(const struct sc_fd *f, const char *t, struct sc_state_out *o)
{
	for (const char *l = strstr(t, "inotify wd:"); l; l = strstr(l + 1, "inotify wd:")) {
		unsigned wd, dev, mask;
		unsigned long long ino;
		const char *path;
		size_t len;
		uint8_t *v;

		if (sscanf(l, "inotify wd:%x ino:%llx sdev:%x mask:%x", &wd, &ino, &dev,
			   &mask) != 4)
			return missing(f, "inotify wd");
		path = sc_inotify_path(f->fd, (int)wd);
		if (!path)
			return sc_err(SELFCKPT_EHOST, "descriptor %d (inotify) watches inode %llu as "
				      "watch %u, added where the library could not see it: the "
				      "watch cannot come back, so no image is written", f->fd, ino,
				      wd);
		if (!same_file(path, ino, dev))
			return sc_err(SELFCKPT_EHOST, "descriptor %d (inotify) watch %u was added "
				      "for '%s', which is now another file or gone: the watch "
				      "cannot come back, so no image is written", f->fd, wd, path);
		len = strlen(path);
		v = malloc(24 + len);
		if (!v)
			return -ENOMEM;
		sc_put_le32(v, wd);
		sc_put_le32(v + 4, mask);
		sc_put_le64(v + 8, ino);
		sc_put_le64(v + 16, dev);
		memcpy(v + 24, path, len);
		sc_state_put(o, SC_INOTIFY_WATCH, v, (uint32_t)(24 + len));
		free(v);
	}
	return 0;
}

/*
 * A pidfd of the process itself comes back as one (of the restored process,
 * whose pid is the same where the ids are taken again); one of another
 * process cannot: NOT_OURS, and it becomes a stand-in, named at checkpoint.
 */
#define NOT_OURS 1

static int collect_pidfd(const struct sc_fd *f, const char *text, struct sc_state_out *o)
{
	long long pid;

	if (!field(text, "Pid:", "%lld", &pid))
		return missing(f, "Pid");
	if (pid != (long long)getpid())
		return NOT_OURS;
	sc_state_put_u64(o, SC_PIDFD_PID, (uint64_t)pid);
	return 0;
}

static int collect_kind(const struct sc_fd *f, const char *text, struct sc_state_out *o)
{
	switch (f->kind) {
	case SC_FD_EVENTFD:
		return collect_eventfd(f, text, o);
	case SC_FD_TIMERFD:
		return collect_timerfd(f, text, o);
	case SC_FD_SIGNALFD:
		return collect_signalfd(f, text, o);
	case SC_FD_INOTIFY:
		return collect_inotify(f, text, o);
	case SC_FD_EPOLL:
		return collect_epoll(text, o) ? missing(f, "tfd") : 0;
	case SC_FD_PIDFD:
		return collect_pidfd(f, text, o);
	default:
		return 0;
	}
}

int sc_fd_object_collect(struct sc_fd *f)
{
	struct sc_state_out o = { 0 };
	char *text;
	int err;

	if (!sc_fd_object_kind(f->kind))
		return 0;
	text = malloc(f->data_len + 1);
	if (!text)
		return sc_err(ENOMEM, "out of memory recording descriptor %d (%s)", f->fd, f->path);
	memcpy(text, f->data, f->data_len);
	text[f->data_len] = '\0';
	err = collect_kind(f, text, &o);
	free(text);
	if (err == NOT_OURS) {
		free(o.buf);
		free(f->data);
		f->data = NULL;
		f->data_len = 0;
		f->kind = SC_FD_OTHER;
		return 0;
	}
	if (err) {
		free(o.buf);
		return err == -ENOMEM ? sc_err(ENOMEM, "out of memory recording descriptor %d",
					      f->fd) : err;
	}
	return sc_state_finish(&o, f);
}
