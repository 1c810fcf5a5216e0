/* SPDX-License-Identifier: MIT */
/*
 * atomic.c - create an image so that a crash, a full disk or a kill at any
 * moment leaves the previous image at the same path intact: the bytes go to
 * a temporary file in the same directory (same file system, so rename() is
 * atomic), which is fsync'd and only then renamed over the final name.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/sc_format.h"
#include "format/sc_log.h"

int sc_atomic_open(struct sc_atomic_file *f, const char *path)
{
	int err;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->path = strdup(path);
	if (!f->path || asprintf(&f->tmp_path, "%s.tmp.XXXXXX", path) < 0) {
		f->tmp_path = NULL;
		err = sc_err(ENOMEM, "out of memory creating '%s'", path);
		goto fail;
	}
	/* mkostemp creates the file with mode 0600: images hold process memory. */
	f->fd = mkostemp(f->tmp_path, O_CLOEXEC);
	if (f->fd < 0) {
		err = sc_err(errno, "cannot create '%s': %s", f->tmp_path, strerror(errno));
		goto fail;
	}
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
	if (close(f->fd) < 0) {
		f->fd = -1;
		err = sc_err(errno, "cannot close '%s': %s", f->tmp_path, strerror(errno));
		goto fail;
	}
	f->fd = -1;
	if (rename(f->tmp_path, f->path) < 0) {
		err = sc_err(errno, "cannot rename '%s' to '%s': %s", f->tmp_path, f->path,
			     strerror(errno));
		goto fail;
	}
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
	if (f->fd >= 0)
		close(f->fd);
	if (f->tmp_path)
		unlink(f->tmp_path);
	free(f->path);
	free(f->tmp_path);
	f->path = f->tmp_path = NULL;
	f->fd = -1;
}
