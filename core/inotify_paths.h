/* SPDX-License-Identifier: MIT */
/*
 * inotify_paths.h - the path of each inotify watch the program added. The
 * kernel tells a watch's inode but not its path, and only a privileged
 * process can open a file by its handle: the library notes the path as the
 * watch is added (interpose_inotify.c, in the shared library).
 */
#ifndef SC_INOTIFY_PATHS_H
#define SC_INOTIFY_PATHS_H

/** sc_inotify_note() - watch @wd of inotify descriptor @fd was added for @path. */
void sc_inotify_note(int fd, int wd, const char *path);

/** sc_inotify_forget() - watch @wd of @fd was removed. */
void sc_inotify_forget(int fd, int wd);

/**
 * sc_inotify_path() - the absolute path noted for watch @wd of @fd, or NULL
 * (the watch was added where the library could not see it). Valid until the
 * next call of these functions.
 */
const char *sc_inotify_path(int fd, int wd);

#endif /* SC_INOTIFY_PATHS_H */
