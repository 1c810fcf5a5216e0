/* SPDX-License-Identifier: MIT */
/*
 * fd_objects.h - kernel objects without a file behind them (anon inodes):
 * eventfd, timerfd, signalfd, inotify and epoll. Their state is read from
 * the kernel's account of them at the instant of the snapshot (fdinfo) and
 * written as the fd record's item list (fd_state.h, spec §9.6.1).
 */
#ifndef SC_FD_OBJECTS_H
#define SC_FD_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/fd_state.h"

/* Items of each kind (spec §9.6.1). */
enum {
	SC_EVENTFD_COUNT = SC_STATE_REQUIRED | 1,    /* u64 */
	SC_EVENTFD_SEMAPHORE = SC_STATE_REQUIRED | 2, /* u64: 1 with EFD_SEMAPHORE */
	SC_TIMERFD_CLOCK = SC_STATE_REQUIRED | 1,    /* u64: clock id */
	SC_TIMERFD_FLAGS = SC_STATE_REQUIRED | 2,    /* u64: TFD_TIMER_* of the last settime */
	SC_TIMERFD_VALUE = SC_STATE_REQUIRED | 3,    /* u64 s, u64 ns: time left; 0: disarmed */
	SC_TIMERFD_INTERVAL = SC_STATE_REQUIRED | 4, /* u64 s, u64 ns */
	SC_TIMERFD_TICKS = SC_STATE_REQUIRED | 5,    /* u64: expirations not yet read */
	SC_SIGNALFD_MASK = SC_STATE_REQUIRED | 1,    /* u64: signal n is bit n - 1 */
	SC_EPOLL_TARGET = SC_STATE_REQUIRED | 1,     /* u32 fd, u32 events, u64 data, u64 inode */
	SC_EPOLL_VIA = SC_STATE_REQUIRED | 2,        /* a target, then u32 the fd holding its file */
	SC_INOTIFY_WATCH = SC_STATE_REQUIRED | 1,    /* u32 wd, u32 mask, u64 inode, u64 dev, path */
	SC_PIDFD_PID = SC_STATE_REQUIRED | 1,        /* u64: the process's pid at the checkpoint */
};

/**
 * sc_fd_object_collect() - for an object kind, turn the fdinfo text that
 * @f->data holds into its item list; other kinds are left as they are.
 * Return: 0, or a negative error (reported) that refuses the image: an
 * object whose state cannot be recorded.
 */
int sc_fd_object_collect(struct sc_fd *f);

/**
 * sc_fd_objects_check() - fd_epoll_check.c: record each epoll watch whose
 * number is closed or now holds another file through a descriptor that
 * holds its file, compared in process @snapshot (which holds the
 * descriptors @fds records); refuse an image where none does. Return: 0 or
 * a negative error (reported).
 */
int sc_fd_objects_check(pid_t snapshot, struct sc_fd *fds, size_t n);

/** sc_fd_object_kind() - is @kind one of this file's (eventfd ... epoll, pidfd)? */
bool sc_fd_object_kind(int kind);

/**
 * sc_fd_object_restore() - re-create the object of @f with its state, as a
 * new descriptor with @f's status flags: on @f's number, where it landed
 * there, else numbered @min or above (sc_fd_settle()); an epoll instance's
 * targets must already be at their numbers.
 * Return: the new descriptor, or a negative error (reported).
 */
int sc_fd_object_restore(const struct sc_fd *f, int min);

/**
 * sc_fd_epoll_targets_open() - are the descriptors epoll instance @f watches
 * all open now (so that it can be made: one epoll instance may watch
 * another)? A malformed list counts as ready: making it reports the fault.
 */
bool sc_fd_epoll_targets_open(const struct sc_fd *f);

#endif /* SC_FD_OBJECTS_H */
