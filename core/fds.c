/* SPDX-License-Identifier: MIT */
/*
 * fds.c - record the open descriptors of this process (spec §9.6): what each
 * one is, its flags and position, and the contents a restore could not find
 * again (memfds, deleted files, pipe buffers).
 *
 * Sources of truth: readlink of /proc/self/fd/N, fstat, and the "pos" and
 * "flags" lines of /proc/self/fdinfo/N. Nothing about a descriptor changes:
 * contents are read with pread (or through a second open of the same file),
 * and a pipe's buffer is copied with tee, which does not consume it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sc_fds.h"
#include "format/sc_log.h"

#define DELETED_SUFFIX " (deleted)"
#define MEMFD_PREFIX "/memfd:"
#define LINK_MAX_LEN (PATH_MAX + sizeof(DELETED_SUFFIX))

void sc_fds_free(struct sc_fd *fds, size_t n)
{
	if (!fds)
		return;
	for (size_t i = 0; i < n; i++) {
		free(fds[i].path);
		free(fds[i].data);
	}
	free(fds);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/*
 * The descriptor numbers, all read before any is looked at: the look-ups open
 * descriptors of their own (fdinfo, the tee pipe), which must not show up.
 */
static int list_fds(int **out, size_t *n)
{
	DIR *d = opendir("/proc/self/fd");
	int *nums = NULL, err = 0;
	size_t count = 0, cap = 0;
	struct dirent *e;

	if (!d)
		return sc_err(errno, "cannot list '/proc/self/fd': %s", strerror(errno));
	for (errno = 0; (e = readdir(d)); errno = 0) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] == '.' || fd == dirfd(d))
			continue;
		if (count == cap) {
			int *grown = realloc(nums, (cap = cap ? 2 * cap : 64) * sizeof(*nums));

			if (!grown) {
				err = sc_err(ENOMEM, "out of memory listing descriptors");
				goto out;
			}
			nums = grown;
		}
		nums[count++] = fd;
	}
	if (errno)
		err = sc_err(errno, "cannot list '/proc/self/fd': %s", strerror(errno));
out:
	closedir(d);
	if (err) {
		free(nums);
		return err;
	}
	qsort(nums, count, sizeof(*nums), cmp_int);
	*out = nums;
	*n = count;
	return 0;
}

/* fdinfo "pos:" (decimal) and "flags:" (octal, O_CLOEXEC included). -ENOENT: fd gone. */
static int read_fdinfo(int fd, uint64_t *pos, unsigned *flags)
{
	char name[48], buf[4096];
	bool got_pos = false, got_flags = false;
	ssize_t len;
	int in;

	snprintf(name, sizeof(name), "/proc/self/fdinfo/%d", fd);
	in = open(name, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	len = read(in, buf, sizeof(buf) - 1);
	if (len < 0)
		len = -errno;
	close(in);
	if (len < 0)
		return sc_err((int)-len, "cannot read '%s': %s", name, strerror((int)-len));
	buf[len] = '\0';
	for (char *line = buf, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!strncmp(line, "pos:", 4)) {
			*pos = strtoull(line + 4, NULL, 10);
			got_pos = true;
		} else if (!strncmp(line, "flags:", 6)) {
			*flags = (unsigned)strtoul(line + 6, NULL, 8);
			got_flags = true;
		}
	}
	if (!got_pos || !got_flags)
		return sc_err(EPROTO, "'%s' lacks its 'pos' or 'flags' line", name);
	return 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/*
 * A regular file whose link ends in " (deleted)" was unlinked, unless that is
 * its real name: then the name still leads to the same inode.
 */
static bool is_unlinked(const char *link, const struct stat *st)
{
	struct stat now;

	if (!ends_with(link, DELETED_SUFFIX))
		return false;
	return stat(link, &now) || now.st_dev != st->st_dev || now.st_ino != st->st_ino;
}

/* The kind of @fd; strips " (deleted)" from @link where the kernel added it. */
static enum sc_fd_kind classify(char *link, const struct stat *st, unsigned flags)
{
	enum sc_fd_kind kind;

	if (S_ISREG(st->st_mode) && !strncmp(link, MEMFD_PREFIX, strlen(MEMFD_PREFIX)))
		kind = SC_FD_MEMFD;
	else if (S_ISREG(st->st_mode))
		kind = is_unlinked(link, st) ? SC_FD_DELETED : SC_FD_REGULAR;
	else if (S_ISDIR(st->st_mode))
		kind = SC_FD_DIR;
	else if (S_ISFIFO(st->st_mode))
		kind = (flags & O_ACCMODE) == O_WRONLY ? SC_FD_PIPE_W : SC_FD_PIPE_R;
	else if (S_ISSOCK(st->st_mode))
		kind = SC_FD_SOCKET;
	else if (S_ISCHR(st->st_mode))
		kind = SC_FD_CHAR;
	else
		kind = SC_FD_OTHER;
	if (kind != SC_FD_REGULAR && ends_with(link, DELETED_SUFFIX))
		link[strlen(link) - strlen(DELETED_SUFFIX)] = '\0';
	return kind;
}

/*
 * The whole contents of a memfd or deleted file. A descriptor that cannot be
 * read (write-only, O_PATH) is read through a second open of the same file.
 */
static int save_file(struct sc_fd *f)
{
	int in = f->fd, acc = f->open_flags & O_ACCMODE, err = 0;
	size_t got = 0;

	if (!f->size)
		return 0;
	if ((acc != O_RDONLY && acc != O_RDWR) || (f->open_flags & O_PATH)) {
		char proc[48];

		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
		in = open(proc, O_RDONLY | O_CLOEXEC);
		if (in < 0)
			return sc_err(errno, "cannot reopen descriptor %d ('%s') to save its "
				      "contents: %s", f->fd, f->path, strerror(errno));
	}
	f->data = malloc(f->size);
	if (!f->data) {
		err = sc_err(ENOMEM, "out of memory saving the %llu bytes of descriptor %d ('%s')",
			     (unsigned long long)f->size, f->fd, f->path);
		goto out;
	}
	while (got < f->size) {
		ssize_t r = pread(in, (char *)f->data + got, f->size - got, (off_t)got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = sc_err(errno, "cannot read descriptor %d ('%s') at offset %zu: %s",
				     f->fd, f->path, got, strerror(errno));
			goto out;
		}
		if (r == 0) /* shrank since fstat: keep what there is */
			break;
		got += (size_t)r;
	}
	f->data_len = got;
	f->size = got;
out:
	if (in != f->fd)
		close(in);
	return err;
}

static int read_all(int fd, void *buf, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = read(fd, (char *)buf + got, n - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		got += (size_t)r;
	}
	return 0;
}

/*
 * Copy the bytes buffered in the pipe @f reads from, leaving them there: tee
 * them into a temporary pipe of the same capacity and read that one.
 */
static int snapshot_pipe(struct sc_fd *f)
{
	int avail = 0, tmp[2], err = 0;
	ssize_t n;

	if (ioctl(f->fd, FIONREAD, &avail) < 0)
		return sc_err(errno, "cannot query the buffer of descriptor %d ('%s'): %s", f->fd,
			      f->path, strerror(errno));
	if (avail <= 0)
		return 0;
	if (pipe2(tmp, O_CLOEXEC | O_NONBLOCK) < 0)
		return sc_err(errno, "cannot create a pipe to copy descriptor %d ('%s'): %s",
			      f->fd, f->path, strerror(errno));
	if (fcntl(tmp[1], F_SETPIPE_SZ, (int)f->size) < 0) {
		err = sc_err(errno, "cannot size a pipe to %llu bytes to copy descriptor %d "
			     "('%s'): %s", (unsigned long long)f->size, f->fd, f->path,
			     strerror(errno));
		goto out;
	}
	n = tee(f->fd, tmp[1], (size_t)avail, SPLICE_F_NONBLOCK);
	if (n != avail) {
		err = sc_err(n < 0 ? errno : EAGAIN, "cannot copy the buffer of descriptor %d "
			     "('%s'): %zd of %d bytes copied: %s", f->fd, f->path, n, avail,
			     n < 0 ? strerror(errno) : "short copy");
		goto out;
	}
	f->data = malloc((size_t)n);
	if (!f->data) {
		err = sc_err(ENOMEM, "out of memory copying the buffer of descriptor %d", f->fd);
		goto out;
	}
	f->data_len = (size_t)n;
	err = read_all(tmp[0], f->data, f->data_len);
	if (err)
		err = sc_err(-err, "cannot read the copy of the buffer of descriptor %d ('%s'): %s",
			     f->fd, f->path, strerror(-err));
out:
	close(tmp[0]);
	close(tmp[1]);
	return err;
}

/* True when an end of @f's pipe that can be read was captured already. */
static bool pipe_seen(const struct sc_fd *f, const struct sc_fd *prev, size_t n_prev)
{
	for (size_t i = 0; i < n_prev; i++)
		if (prev[i].kind == SC_FD_PIPE_R && prev[i].pipe_id == f->pipe_id &&
		    prev[i].dev == f->dev)
			return true;
	return false;
}

static int capture_contents(struct sc_fd *f, const struct sc_fd *prev, size_t n_prev)
{
	int cap;

	switch (f->kind) {
	case SC_FD_MEMFD:
	case SC_FD_DELETED:
		return save_file(f);
	case SC_FD_PIPE_R:
	case SC_FD_PIPE_W:
		/* fstat gives a pipe no size: record its capacity, needed to refill it */
		cap = fcntl(f->fd, F_GETPIPE_SZ);
		if (cap < 0)
			return sc_err(errno, "cannot get the capacity of descriptor %d ('%s'): %s",
				      f->fd, f->path, strerror(errno));
		f->size = (uint64_t)cap;
		f->pipe_id = f->inode;
		/* only a read end can be copied from, and one copy per pipe is enough */
		if (f->kind == SC_FD_PIPE_W || pipe_seen(f, prev, n_prev))
			return 0;
		return snapshot_pipe(f);
	case SC_FD_SOCKET:
	case SC_FD_OTHER:
		sc_log(SC_LOG_WARN, "descriptor %d (%s) will come back closed after a restore",
		       f->fd, f->path);
		return 0;
	default:
		return 0;
	}
}

/* Record @fd in @f. Return: 0, 1 when @fd was closed meanwhile, or an error. */
static int capture_one(int fd, struct sc_fd *f, const struct sc_fd *prev, size_t n_prev)
{
	char proc[48], link[LINK_MAX_LEN];
	unsigned flags = 0;
	struct stat st;
	ssize_t len;
	int err;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	len = readlink(proc, link, sizeof(link) - 1);
	if (len < 0 && errno == ENOENT)
		return 1;
	if (len < 0)
		return sc_err(errno, "cannot read link '%s': %s", proc, strerror(errno));
	link[len] = '\0';
	if (fstat(fd, &st) < 0)
		return errno == EBADF ? 1 : sc_err(errno, "cannot stat descriptor %d ('%s'): %s",
						   fd, link, strerror(errno));
	err = read_fdinfo(fd, &f->pos, &flags);
	if (err == -ENOENT)
		return 1;
	if (err < 0)
		return err == -EPROTO ? err : sc_err(-err, "cannot open '/proc/self/fdinfo/%d': %s",
						     fd, strerror(-err));
	f->fd = fd;
	f->open_flags = (int)(flags & ~(unsigned)O_CLOEXEC);
	f->fd_flags = (flags & O_CLOEXEC) ? FD_CLOEXEC : 0;
	f->dev = st.st_dev;
	f->inode = st.st_ino;
	f->size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
	f->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
	f->mode = st.st_mode;
	f->kind = classify(link, &st, flags);
	f->path = strdup(link);
	if (!f->path)
		return sc_err(ENOMEM, "out of memory recording descriptor %d", fd);
	return capture_contents(f, prev, n_prev);
}

static bool in_list(int fd, const int *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == fd)
			return true;
	return false;
}

int sc_fds_capture(struct sc_fd **out, size_t *n, const int *skip, size_t n_skip)
{
	struct sc_fd *fds;
	size_t count = 0, k = 0;
	int *nums = NULL, err;

	err = list_fds(&nums, &count);
	if (err)
		return err;
	fds = calloc(count ? count : 1, sizeof(*fds));
	if (!fds) {
		free(nums);
		return sc_err(ENOMEM, "out of memory recording %zu descriptors", count);
	}
	for (size_t i = 0; i < count; i++) {
		if (in_list(nums[i], skip, n_skip))
			continue;
		err = capture_one(nums[i], &fds[k], fds, k);
		if (err < 0) {
			sc_fds_free(fds, k + 1);
			free(nums);
			return err;
		}
		if (err == 0)
			k++;
		else
			memset(&fds[k], 0, sizeof(fds[k]));
	}
	free(nums);
	*out = fds;
	*n = k;
	return 0;
}
