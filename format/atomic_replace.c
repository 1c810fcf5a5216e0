/* SPDX-License-Identifier: MIT */
/*
 * atomic_replace.c - create an image so that a crash, a full disk or a kill at any
 * moment leaves the previous image at the same path intact: the bytes go to
 * a temporary file in the same directory (same file system, so rename() is
 * atomic), which is fsync'd and only then renamed over the final name.
 *
 * Nothing is left behind either. The temporary file is named
 * IMAGE.selfckpt-tmp.PID.XXXXXX, and its writer holds an open file
 * description write lock on it from its creation until it has its final name
 * or is removed. The kernel drops that lock with the writer's last
 * descriptor, so the temporary file of a writer that was killed is one that
 * nobody holds locked: the next image created in the same directory (and
 * selfckpt-run, at start) removes it. A cleaner takes a read lock itself
 * before it removes a file, and a writer checks that its file still has a
 * name once it holds its lock (and makes another otherwise), so a file
 * created at the instant a cleaner looks is never lost. Where the file system
 * has no such locks, a temporary file is stale when the process named in it
 * is gone and it has not been written for a minute.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "format/sc_format.h"
#include "format/sc_log.h"

#define TMP_TAG ".selfckpt-tmp."
#define TMP_RANDOM 6        /* mkostemp's XXXXXX */
#define OPEN_TRIES 8        /* temporary files removed by a cleaner as they were made */
#define UNLOCKED_STALE_S 60 /* without locks: unwritten this long, and its writer gone */

/* Errors of F_OFD_SETLK that mean "this file system has no such locks". */
static bool no_locks(int err)
{
	return err == EINVAL || err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS;
}

/* An open file description lock on the whole file; 0 or -errno (-EAGAIN: held). */
static int take_lock(int fd, short type)
{
	struct flock l = { .l_type = type, .l_whence = SEEK_SET };

	if (fcntl(fd, F_OFD_SETLK, &l) == 0)
		return 0;
	return errno == EACCES ? -EAGAIN : -errno;
}

/*
 * Create and lock one temporary file for f->path. Return: 0, -EAGAIN when a
 * cleaner took the file as it was made (try again), or another error (reported).
 */
static int create_locked(struct sc_atomic_file *f)
{
	struct stat st;
	int err;

	free(f->tmp_path);
	if (asprintf(&f->tmp_path, "%s" TMP_TAG "%d.XXXXXX", f->path, (int)getpid()) < 0) {
		f->tmp_path = NULL;
		return sc_err(ENOMEM, "out of memory creating '%s'", f->path);
	}
	/* mkostemp creates the file with mode 0600: images hold process memory. */
	f->fd = mkostemp(f->tmp_path, O_CLOEXEC);
	if (f->fd < 0)
		return sc_err(errno, "cannot create a temporary file next to '%s': %s", f->path,
			      strerror(errno));
	err = take_lock(f->fd, F_WRLCK);
	if (!err && fstat(f->fd, &st) == 0 && st.st_nlink == 0)
		err = -EAGAIN; /* removed between its creation and the lock */
	if (err == -EAGAIN) {
		close(f->fd); /* the cleaner that holds it removes it */
		f->fd = -1;
		return err;
	}
	if (err)
		sc_log(no_locks(-err) ? SC_LOG_DEBUG : SC_LOG_WARN, "cannot lock '%s' (%s): a "
		       "writer that is killed leaves it for a minute more", f->tmp_path,
		       strerror(-err));
	return 0;
}

/* The directory of @path, cleared of the temporary files of writers that are gone. */
static void clean_next_to(const char *path)
{
	char *copy = strdup(path);
	int n;

	if (!copy)
		return;
	n = sc_atomic_clean_dir(dirname(copy));
	if (n < 0)
		sc_log(SC_LOG_DEBUG, "cannot look for stale temporary images next to '%s': %s",
		       path, strerror(-n));
	free(copy);
}

int sc_atomic_open(struct sc_atomic_file *f, const char *path)
{
	int err = -EAGAIN;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->path = strdup(path);
	if (!f->path) {
		err = sc_err(ENOMEM, "out of memory creating '%s'", path);
		goto fail;
	}
	clean_next_to(path); /* first: what they hold may be the space this image needs */
	for (int i = 0; i < OPEN_TRIES && err == -EAGAIN; i++)
		err = create_locked(f);
	if (err == -EAGAIN)
		err = sc_err(EAGAIN, "cannot create a temporary file next to '%s': each of %d "
			     "was removed as it was made", path, OPEN_TRIES);
	if (err < 0)
		goto fail;
	return 0;
fail:
	free(f->path);
	free(f->tmp_path);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	return err;
}

/* Make the rename itself durable: it lives in the directory's data. */
static int sync_parent_dir(const char *path)
{
	char *copy = strdup(path);
	int fd, err = 0;

	if (!copy)
		return -ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		err = -errno;
	if (fd >= 0)
		close(fd);
	free(copy);
	return err;
}

int sc_atomic_commit(struct sc_atomic_file *f)
{
	int err;

	if (fsync(f->fd) < 0) {
		err = sc_err(errno, "cannot sync '%s': %s", f->tmp_path, strerror(errno));
		goto fail;
	}
	if (rename(f->tmp_path, f->path) < 0) {
		err = sc_err(errno, "cannot rename '%s' to '%s': %s", f->tmp_path, f->path,
			     strerror(errno));
		goto fail;
	}
	/* Closed only now: the lock marks the file as in use until it has its name. */
	if (close(f->fd) < 0)
		sc_log(SC_LOG_WARN, "cannot close '%s' after it was synced: %s", f->path,
		       strerror(errno));
	f->fd = -1;
	err = sync_parent_dir(f->path);
	if (err < 0)
		sc_log(SC_LOG_WARN, "cannot sync the directory of '%s': %s", f->path,
		       strerror(-err));
	free(f->path);
	free(f->tmp_path);
	f->path = f->tmp_path = NULL;
	return 0;
fail:
	sc_atomic_abort(f);
	return err;
}

void sc_atomic_abort(struct sc_atomic_file *f)
{
	if (f->tmp_path)
		unlink(f->tmp_path);
	if (f->fd >= 0)
		close(f->fd);
	free(f->path);
	free(f->tmp_path);
	f->path = f->tmp_path = NULL;
	f->fd = -1;
}

/* ---- stale temporary files ---- */

/* The writer's pid in NAME.selfckpt-tmp.PID.XXXXXX, or 0 when @name is not of that form. */
static pid_t tmp_writer(const char *name)
{
	const char *tag = NULL, *s, *digits;
	long pid = 0;

	for (s = name; (s = strstr(s, TMP_TAG)); s++)
		tag = s;
	if (!tag || tag == name)
		return 0;
	digits = tag + strlen(TMP_TAG);
	for (s = digits; isdigit((unsigned char)*s) && s - digits < 10; s++)
		pid = pid * 10 + (*s - '0');
	if (s == digits || *s != '.' || pid <= 0 || pid > INT_MAX)
		return 0;
	for (int i = 1; i <= TMP_RANDOM; i++)
		if (!isalnum((unsigned char)s[i]))
			return 0;
	return s[TMP_RANDOM + 1] ? 0 : (pid_t)pid;
}

/* Is the writer of the temporary file open as @fd gone? If so, @fd holds a read lock. */
static bool writer_gone(int fd, const struct stat *st, pid_t pid)
{
	int err = take_lock(fd, F_RDLCK);

	if (!err)
		return true;
	if (!no_locks(-err))
		return false; /* locked: its writer is at work */
	if (pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH)
		return false;
	return time(NULL) - st->st_mtime > UNLOCKED_STALE_S;
}

/* Remove @name in @dirfd if it is a temporary image of ours whose writer is gone. */
static bool remove_if_stale(int dirfd, const char *dir, const char *name)
{
	pid_t pid = tmp_writer(name);
	struct stat st, now;
	bool removed = false;
	int fd;

	if (!pid)
		return false;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return false;
	/* Still the file we locked (not one made under that name since), then removed. */
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    writer_gone(fd, &st, pid) && !fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) &&
	    now.st_dev == st.st_dev && now.st_ino == st.st_ino && !unlinkat(dirfd, name, 0)) {
		sc_log(SC_LOG_INFO, "removed '%s/%s' (%lld bytes), the temporary image of a "
		       "checkpoint of process %d that did not finish", dir, name,
		       (long long)st.st_size, (int)pid);
		removed = true;
	}
	close(fd);
	return removed;
}

int sc_atomic_clean_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (e->d_type == DT_REG || e->d_type == DT_UNKNOWN)
			n += remove_if_stale(dirfd(d), dir, e->d_name);
	closedir(d);
	return n;
}
