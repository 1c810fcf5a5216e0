/* SPDX-License-Identifier: MIT */
/*
 * interpose_inotify.c - inotify_add_watch() and inotify_rm_watch() as the
 * program sees them, noting each watch's path for the checkpoint
 * (inotify_paths.h): the kernel keeps only the inode.
 *
 * Built into the shared library only, like interpose.c: in a static link
 * these definitions would meet the C library's own.
 */
#include <stdint.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/inotify_paths.h"
#include "selfckpt.h"

SELFCKPT_API int inotify_add_watch(int fd, const char *path, uint32_t mask)
{
	long wd = syscall(SYS_inotify_add_watch, fd, path, mask);

	if (wd >= 0)
		sc_inotify_note(fd, (int)wd, path);
	return (int)wd;
}

SELFCKPT_API int inotify_rm_watch(int fd, int wd)
{
	long r = syscall(SYS_inotify_rm_watch, fd, wd);

	if (r == 0)
		sc_inotify_forget(fd, wd);
	return (int)r;
}
