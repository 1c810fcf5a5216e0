/* SPDX-License-Identifier: MIT */
/*
 * fd_epoll_check.c - at checkpoint, the file each epoll watch refers to.
 *
 * The kernel keys a watch by the file and the number it was added with, and
 * keeps it while the file lives, even once that number is closed or holds
 * another file. Such a watch is recorded through a descriptor of the process
 * that holds its file (kcmp(KCMP_EPOLL_TFD) compares the two files): the
 * restore opens that file at the watch's number for the time it takes to add
 * the watch (fd_objects_restore.c). Where no descriptor holds the file, or
 * kcmp is not allowed (containers' seccomp profiles), the checkpoint is
 * refused, named.
 *
 * Runs after the threads went on, so the files are compared in the snapshot,
 * which holds the descriptors of the instant at their numbers: what the
 * program opens or closes since changes nothing here.
 */
#include <errno.h>
#include <linux/kcmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/fd_objects.h"
#include "format/sc_log.h"

#define EPOLL_TARGET_LEN 24u

struct watch_slot { /* the kernel's struct kcmp_epoll_slot */
	uint32_t efd, tfd, toff;
};

/*
 * In process @snap: is the file of descriptor @fd the one watch @toff of
 * number @tfd of epoll @efd watches?
 */
static bool same_file(pid_t snap, int efd, int tfd, uint32_t toff, int fd)
{
	struct watch_slot slot = { (uint32_t)efd, (uint32_t)tfd, toff };

	return syscall(SYS_kcmp, snap, snap, KCMP_EPOLL_TFD, fd, (unsigned long)&slot) == 0;
}

/* A descriptor of the image (not the epoll itself) holding the watched file, or -1. */
static int holder(pid_t snap, const struct sc_fd *fds, size_t n, const struct sc_fd *ep,
		  int tfd, uint32_t toff, uint64_t ino)
{
	for (size_t i = 0; i < n; i++)
		if (&fds[i] != ep && fds[i].inode == ino && fds[i].fd != tfd &&
		    same_file(snap, ep->fd, tfd, toff, fds[i].fd))
			return fds[i].fd;
	return -1;
}

/* How many watches before item @pos of @ep also have number @tfd: the kernel's toff. */
static uint32_t earlier_with(const struct sc_fd *ep, size_t pos, int tfd)
{
	struct sc_state_item it;
	size_t at = 0, before;
	uint32_t k = 0;

	for (before = at; sc_state_next(ep, &at, &it) > 0 && before < pos; before = at)
		if (it.tag == SC_EPOLL_TARGET && it.len == EPOLL_TARGET_LEN &&
		    (int)sc_get_le32(it.value) == tfd)
			k++;
	return k;
}

/*
 * Each watch of @ep as it is, or through the descriptor that holds its file
 * (SC_EPOLL_VIA), into @o; a watch of a file no descriptor holds refuses.
 */
static int rewrite(pid_t snap, const struct sc_fd *fds, size_t n, const struct sc_fd *ep,
		   struct sc_state_out *o)
{
	struct sc_state_item it;
	size_t pos = 0, here = 0;
	int r;

	while ((r = sc_state_next(ep, &pos, &it)) > 0) {
		const struct sc_fd *t;
		uint8_t v[EPOLL_TARGET_LEN + 4];
		uint64_t ino;
		int tfd, via;

		if (it.tag != SC_EPOLL_TARGET || it.len != EPOLL_TARGET_LEN) {
			sc_state_put(o, it.tag, it.value, it.len);
			here = pos;
			continue;
		}
		tfd = (int)sc_get_le32(it.value);
		ino = sc_get_le64(it.value + 16);
		t = sc_fds_find(fds, n, tfd);
		if (t && t->inode == ino) {
			sc_state_put(o, it.tag, it.value, it.len);
			here = pos;
			continue;
		}
		via = holder(snap, fds, n, ep, tfd, earlier_with(ep, here, tfd), ino);
		if (via < 0)
			return sc_err(SELFCKPT_EHOST, "epoll descriptor %d watches a file it knows as "
				      "descriptor %d, which is now %s, and no other descriptor of the "
				      "process holds that file (or kcmp() is not allowed): the watch "
				      "cannot come back, so no image is written", ep->fd, tfd,
				      t ? "another file" : "closed");
		memcpy(v, it.value, EPOLL_TARGET_LEN);
		sc_put_le32(v + EPOLL_TARGET_LEN, (uint32_t)via);
		sc_state_put(o, SC_EPOLL_VIA, v, sizeof(v));
		here = pos;
	}
	return r;
}

/* Does every watch of @ep name an open descriptor of its own file? */
static bool all_direct(const struct sc_fd *fds, size_t n, const struct sc_fd *ep)
{
	struct sc_state_item it;
	size_t pos = 0;

	while (sc_state_next(ep, &pos, &it) > 0) {
		const struct sc_fd *t;

		if (it.tag != SC_EPOLL_TARGET || it.len != EPOLL_TARGET_LEN)
			continue;
		t = sc_fds_find(fds, n, (int)sc_get_le32(it.value));
		if (!t || t->inode != sc_get_le64(it.value + 16))
			return false;
	}
	return true;
}

int sc_fd_objects_check(pid_t snapshot, struct sc_fd *fds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct sc_state_out o = { 0 };
		int err;

		if (fds[i].kind != SC_FD_EPOLL || all_direct(fds, n, &fds[i]))
			continue;
		err = rewrite(snapshot, fds, n, &fds[i], &o);
		if (err < 0) {
			free(o.buf);
			return err;
		}
		if ((err = sc_state_finish(&o, &fds[i])) < 0)
			return err;
	}
	return 0;
}
