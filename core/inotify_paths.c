/* SPDX-License-Identifier: MIT */
/*
 * inotify_paths.c - the table of watch paths (inotify_paths.h). A path is
 * made absolute when noted, since the working directory may change before
 * the checkpoint. A stale entry (its descriptor closed, the number reused
 * for another inotify instance) is harmless: the checkpoint compares the
 * path's file with the inode the kernel tells for the watch.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/inotify_paths.h"
#include "format/sc_array.h"

struct watch {
	int fd, wd;
	char *path;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct watch *watches;
static size_t n_watches, cap_watches;

static struct watch *find(int fd, int wd)
{
	for (size_t i = 0; i < n_watches; i++)
		if (watches[i].fd == fd && watches[i].wd == wd)
			return &watches[i];
	return NULL;
}

static char *absolute(const char *path)
{
	char cwd[PATH_MAX], *abs;

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return strdup(path);
	if (asprintf(&abs, "%s/%s", strcmp(cwd, "/") ? cwd : "", path) < 0)
		return NULL;
	return abs;
}

static struct watch *new_entry(void)
{
	if (sc_grow((void **)&watches, &cap_watches, n_watches + 1, sizeof(*watches)))
		return NULL;
	return &watches[n_watches++];
}

void sc_inotify_note(int fd, int wd, const char *path)
{
	char *abs = absolute(path);
	struct watch *w;

	if (!abs)
		return; /* out of memory: the watch is unknown, and a checkpoint says so */
	pthread_mutex_lock(&lock);
	w = find(fd, wd);
	if (w)
		free(w->path);
	else
		w = new_entry();
	if (w) {
		w->fd = fd;
		w->wd = wd;
		w->path = abs;
		abs = NULL;
	}
	pthread_mutex_unlock(&lock);
	free(abs);
}

void sc_inotify_forget(int fd, int wd)
{
	struct watch *w;

	pthread_mutex_lock(&lock);
	w = find(fd, wd);
	if (w) {
		free(w->path);
		*w = watches[--n_watches];
	}
	pthread_mutex_unlock(&lock);
}

const char *sc_inotify_path(int fd, int wd)
{
	struct watch *w;

	pthread_mutex_lock(&lock);
	w = find(fd, wd);
	pthread_mutex_unlock(&lock);
	return w ? w->path : NULL;
}
