/* SPDX-License-Identifier: MIT */
/*
 * fds_restore.c - re-create recorded descriptors at their numbers.
 *
 * Stage contract: runs in the restorer (stage 1, ordinary libc), before it
 * becomes the restored program. The caller has moved its own descriptors above
 * every recorded number (sc_fd_move_above()); descriptors 0, 1 and 2 stay the
 * restorer's. The sockets come first, then the other descriptors in the
 * order of their numbers, each made where it lands if that is its own number
 * (the numbers of the descriptors made later are held meanwhile: fd_place.c),
 * else kept above the highest recorded number, so that it never sits on a
 * number still to be restored, and then dup3()ed onto its own, which must be
 * free; the epoll instances last, once what they watch is back.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/socket.h>

#include "core/fd_index.h"
#include "core/fd_objects.h"
#include "core/restore/fd_place.h"
#include "core/restore/tree_shared.h"
#include "core/fd_socket.h"
#include "format/sc_log.h"

#define MEMFD_PREFIX "/memfd:"
#define MEMFD_NAME_MAX 249 /* memfd_create(2) */

/* Never re-create or truncate a file; the close-on-exec bit is set at the end. */
#define REOPEN_DROP (O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY | O_CLOEXEC | O_TMPFILE)

static int reopen_flags(const struct sc_fd *f)
{
	return (f->open_flags & ~REOPEN_DROP) | O_CLOEXEC | O_NOCTTY;
}

static int open_path(const char *path, int flags, int min, const struct sc_fd *f)
{
	int fd = open(path, flags);

	if (fd < 0)
		return sc_err(errno, "cannot reopen '%s' (descriptor %d): %s", path, f->fd,
			      strerror(errno));
	return sc_fd_settle(fd, min, f);
}

/* Warn when the file reopened for @f is not the one recorded, or was changed. */
static void check_identity(int fd, const struct sc_fd *f)
{
	char what[256];
	struct stat st;
	uint64_t mtime;
	int len = 0;

	if (fstat(fd, &st) < 0)
		return;
	mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
	if (st.st_ino != f->inode)
		len += snprintf(what + len, sizeof(what) - (size_t)len, ", inode %llu -> %llu",
				(unsigned long long)f->inode, (unsigned long long)st.st_ino);
	if ((uint64_t)st.st_size != f->size)
		len += snprintf(what + len, sizeof(what) - (size_t)len, ", size %llu -> %llu",
				(unsigned long long)f->size, (unsigned long long)st.st_size);
	if (mtime != f->mtime_ns)
		len += snprintf(what + len, sizeof(what) - (size_t)len,
				", mtime %llu.%09llu -> %llu.%09llu",
				(unsigned long long)(f->mtime_ns / 1000000000u),
				(unsigned long long)(f->mtime_ns % 1000000000u),
				(unsigned long long)(mtime / 1000000000u),
				(unsigned long long)(mtime % 1000000000u));
	if (len)
		sc_log(SC_LOG_WARN, "'%s' (descriptor %d) changed since the checkpoint: %s", f->path,
		       f->fd, what + 2);
}

static int seek_to(int fd, const struct sc_fd *f)
{
	if ((f->open_flags & O_PATH) || lseek(fd, (off_t)f->pos, SEEK_SET) >= 0)
		return 0;
	return sc_err(errno, "cannot move '%s' (descriptor %d) to offset %llu: %s", f->path, f->fd,
		      (unsigned long long)f->pos, strerror(errno));
}

/* Move @fd, made for @f, to @f's position and put it at @f's number; @fd is closed either way. */
static int seek_and_place(int fd, const struct sc_fd *f)
{
	int err = seek_to(fd, f);

	if (err) {
		close(fd);
		return err;
	}
	return sc_fd_place(fd, f);
}

static int restore_regular(const struct sc_fd *f, int min)
{
	int fd = sc_fd_open_regular(f, min);

	return fd < 0 ? fd : sc_fd_place(fd, f);
}

int sc_fd_open_regular(const struct sc_fd *f, int min)
{
	int fd = open_path(f->path, reopen_flags(f), min, f), err;

	if (fd < 0)
		return fd;
	check_identity(fd, f);
	if ((err = seek_to(fd, f)) < 0) {
		close(fd);
		return err;
	}
	return fd;
}

/* A file the tree holds open at one position: a copy of the one the tree opened. */
static int place_tree_file(const struct sc_fd *fds, size_t i)
{
	const struct sc_fd *same = sc_fd_shares_with(fds, i);

	return sc_fd_place_copy(same ? same->fd : sc_tree_file_of(&fds[i])->fd, &fds[i]);
}

/* A directory's position is a file-system cookie: failing to restore it is not fatal. */
static int restore_dir(const struct sc_fd *f, int min)
{
	int fd = open_path(f->path, reopen_flags(f) | O_DIRECTORY, min, f);

	if (fd < 0)
		return fd;
	if (f->pos && lseek(fd, (off_t)f->pos, SEEK_SET) < 0)
		sc_log(SC_LOG_WARN, "cannot move directory '%s' (descriptor %d) to position %llu: %s",
		       f->path, f->fd, (unsigned long long)f->pos, strerror(errno));
	return sc_fd_place(fd, f);
}

/* Terminals and most devices cannot seek: the position is restored where it means something. */
static int restore_char(const struct sc_fd *f, int min)
{
	int fd = open_path(f->path, reopen_flags(f), min, f);

	if (fd < 0)
		return fd;
	if (f->pos)
		(void)lseek(fd, (off_t)f->pos, SEEK_SET);
	return sc_fd_place(fd, f);
}

#define HOLE_BLOCK 4096

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Write @n bytes of @buf at @off of @fd. */
static int write_at(int fd, const uint8_t *buf, size_t n, size_t off, const struct sc_fd *f)
{
	for (size_t done = 0; done < n;) {
		ssize_t k = pwrite(fd, buf + done, n - done, (off_t)(off + done));

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return sc_err(errno, "cannot write the contents of '%s' (descriptor %d) at "
				      "offset %zu: %s", f->path, f->fd, off + done, strerror(errno));
		done += (size_t)k;
	}
	return 0;
}

/*
 * Size @fd as recorded and write the saved contents from offset 0. Blocks
 * of zeros are not written: the file is sized first, so they read as zeros
 * and stay holes, as the holes of the file that was saved were.
 */
static int fill_file(int fd, const struct sc_fd *f)
{
	uint64_t size = f->size > f->data_len ? f->size : f->data_len;
	const uint8_t *data = f->data;
	int err = 0;

	if (ftruncate(fd, (off_t)size) < 0)
		return sc_err(errno, "cannot size the new file for '%s' (descriptor %d) to %llu "
			      "bytes: %s", f->path, f->fd, (unsigned long long)size, strerror(errno));
	for (size_t off = 0, run = 0; off < f->data_len + HOLE_BLOCK && !err; off += HOLE_BLOCK) {
		size_t n = off < f->data_len ? f->data_len - off : 0;

		n = n < HOLE_BLOCK ? n : HOLE_BLOCK;
		if (n && !all_zero(data + off, n))
			continue; /* data: the run goes on */
		if (off > run) /* a run of data blocks ends here: one write for all */
			err = write_at(fd, data + run, (off + n > f->data_len ? f->data_len : off) -
				       run, run, f);
		run = off + HOLE_BLOCK;
	}
	return err;
}

/*
 * Give the file made in @tmp (read-write) @f's access mode and status flags:
 * open it again through /proc, which makes a new open file description.
 */
static int finish_file(int tmp, const struct sc_fd *f, int min)
{
	char proc[48];
	int fd, err = 0;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tmp);
	fd = open(proc, reopen_flags(f) & ~O_NOFOLLOW); /* /proc/self/fd/N is a link */
	if (fd < 0)
		err = sc_err(errno, "cannot reopen the new file for '%s' (descriptor %d) through "
			     "'%s': %s", f->path, f->fd, proc, strerror(errno));
	close(tmp);
	if (fd < 0)
		return err;
	fd = sc_fd_keep_above(fd, min, f);
	if (fd < 0)
		return fd;
	return seek_and_place(fd, f);
}

/*
 * Writing the contents made the file's modification time now: it gets the
 * saved one back (the access time is left as it is).
 */
static int give_time(int fd, const struct sc_fd *f)
{
	struct timespec t[2] = { { .tv_nsec = UTIME_OMIT },
				 { .tv_sec = (time_t)(f->mtime_ns / 1000000000ull),
				   .tv_nsec = (long)(f->mtime_ns % 1000000000ull) } };

	if (futimens(fd, t) < 0)
		return sc_err(errno, "cannot give '%s' (descriptor %d) its modification time "
			      "again: %s", f->path, f->fd, strerror(errno));
	return 0;
}

/* Status flags F_SETFL changes (the access mode and O_LARGEFILE stay as made). */
#define SETFL_FLAGS (O_APPEND | O_ASYNC | O_DIRECT | O_NOATIME | O_NONBLOCK)

/*
 * A read-write memfd keeps the descriptor memfd_create() made: opened again
 * through /proc, the new file would count as a writer of it, and execveat()
 * of the memfd would fail with ETXTBSY where the program's did not.
 */
static int keep_memfd(int fd, const struct sc_fd *f)
{
	if (fcntl(fd, F_SETFL, f->open_flags & SETFL_FLAGS) < 0) {
		int err = sc_err(errno, "cannot set the status flags of memfd '%s' (descriptor "
				 "%d): %s", f->path, f->fd, strerror(errno));

		close(fd);
		return err;
	}
	return seek_and_place(fd, f);
}

static int restore_memfd(const struct sc_fd *f, int min)
{
	char name[MEMFD_NAME_MAX + 1] = "selfckpt";
	int fd, err;

	if (!strncmp(f->path, MEMFD_PREFIX, strlen(MEMFD_PREFIX)))
		snprintf(name, sizeof(name), "%s", f->path + strlen(MEMFD_PREFIX));
	/* sealing allowed: the seals recorded are added once the contents are back */
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return sc_err(errno, "cannot create memfd '%s' (descriptor %d): %s", name, f->fd,
			      strerror(errno));
	fd = sc_fd_keep_above(fd, min, f);
	if (fd < 0)
		return fd;
	err = fill_file(fd, f);
	if (!err && fchmod(fd, f->mode & 07777) < 0)
		sc_log(SC_LOG_DEBUG, "cannot give memfd '%s' (descriptor %d) mode %o: %s", name,
		       f->fd, f->mode & 07777, strerror(errno));
	if (!err)
		err = give_time(fd, f);
	if (!err && f->seals && fcntl(fd, F_ADD_SEALS, (int)f->seals) < 0)
		err = sc_err(errno, "cannot seal memfd '%s' (descriptor %d) again with 0x%x: %s",
			     name, f->fd, f->seals, strerror(errno));
	if (err) {
		close(fd);
		return err;
	}
	if ((f->open_flags & O_ACCMODE) == O_RDWR)
		return keep_memfd(fd, f);
	return finish_file(fd, f, min);
}

/*
 * An unlinked file comes back unlinked: created under its old name and
 * unlinked at once, so that it shows as "name (deleted)" as before; when that
 * name is taken again, O_TMPFILE in its old directory, else in /tmp.
 */
static int restore_deleted(const struct sc_fd *f, int min)
{
	char dir[PATH_MAX];
	char *slash;
	int fd, err;

	snprintf(dir, sizeof(dir), "%s", f->path);
	slash = strrchr(dir, '/');
	if (slash)
		slash[slash == dir] = '\0';
	fd = open(f->path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0)
		unlink(f->path);
	if (fd < 0 && slash)
		fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return sc_err(errno, "cannot create an unlinked file for '%s' (descriptor %d) in "
			      "'%s' or '/tmp': %s", f->path, f->fd, slash ? dir : "?",
			      strerror(errno));
	fd = sc_fd_keep_above(fd, min, f);
	if (fd < 0)
		return fd;
	err = fill_file(fd, f);
	if (!err && fchmod(fd, f->mode & 07777) < 0)
		sc_log(SC_LOG_DEBUG, "cannot give '%s' (descriptor %d) mode %o: %s", f->path, f->fd,
		       f->mode & 07777, strerror(errno));
	if (!err)
		err = give_time(fd, f);
	if (err) {
		close(fd);
		return err;
	}
	return finish_file(fd, f, min);
}

/* The list being restored, and what every step of it looks up. */
struct fds_restore {
	const struct sc_fd *fds;
	size_t n;
	int min;                  /* above every recorded number */
	struct sc_fd_index pipes; /* (device, pipe id) of each pipe end above 2 */
};

static bool is_pipe(const struct sc_fd *f)
{
	return f->kind == SC_FD_PIPE_R || f->kind == SC_FD_PIPE_W;
}

/* Index the pipe ends restored here: the ends of one pipe are then neighbours, in list order. */
static int index_pipes(struct fds_restore *r)
{
	int err = sc_fd_index_init(&r->pipes, r->n);

	for (size_t i = 0; !err && i < r->n; i++)
		if (r->fds[i].fd > 2 && is_pipe(&r->fds[i]))
			sc_fd_index_add(&r->pipes, r->fds[i].dev, r->fds[i].pipe_id, i);
	sc_fd_index_sort(&r->pipes);
	return err;
}

/* The first of the ends above 2 of @p's pipe in r->pipes.keys; the others follow it. */
static size_t pipe_ends(const struct fds_restore *r, const struct sc_fd *p)
{
	return sc_fd_index_find(&r->pipes, p->dev, p->pipe_id);
}

/* Is r->pipes.keys[@k] an end of the pipe whose ends start at @first? */
static bool pipe_end_at(const struct fds_restore *r, size_t first, size_t k)
{
	const struct sc_fd_key *a = &r->pipes.keys[first], *b = &r->pipes.keys[k];

	return k < r->pipes.n && a->a == b->a && a->b == b->b;
}

/* The capacity and saved buffer of @p's pipe, from all its records. */
static void pipe_contents(const struct fds_restore *r, const struct sc_fd *p, int *cap,
			  const struct sc_fd **with_data)
{
	size_t first = pipe_ends(r, p);

	*cap = 0;
	*with_data = NULL;
	for (size_t k = first; pipe_end_at(r, first, k); k++) {
		const struct sc_fd *e = &r->fds[r->pipes.keys[k].i];

		if (e->size > (uint64_t)*cap && e->size <= INT_MAX)
			*cap = (int)e->size;
		if (e->data_len && !*with_data)
			*with_data = e;
	}
}

/* Size the new pipe (write end @w) and put the saved bytes back in it. */
static int refill_pipe(int w, const struct fds_restore *r, const struct sc_fd *p)
{
	const struct sc_fd *src;
	int cap;

	pipe_contents(r, p, &cap, &src);
	if (cap > fcntl(w, F_GETPIPE_SZ) && fcntl(w, F_SETPIPE_SZ, cap) < 0 && src &&
	    src->data_len > (size_t)fcntl(w, F_GETPIPE_SZ))
		return sc_err(errno, "cannot give the pipe of descriptor %d ('%s') its %d bytes of "
			      "capacity for %zu saved bytes: %s", src->fd, src->path, cap,
			      src->data_len, strerror(errno));
	/* @w is non-blocking: the bytes fit, or this fails instead of hanging */
	for (size_t done = 0; src && done < src->data_len;) {
		ssize_t k = write(w, (const char *)src->data + done, src->data_len - done);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return sc_err(errno, "cannot refill the pipe of descriptor %d ('%s') with "
				      "%zu bytes: %s", src->fd, src->path, src->data_len,
				      strerror(errno));
		done += (size_t)k;
	}
	return 0;
}

/* Status flags a descriptor of a pipe can have changed with F_SETFL. */
#define PIPE_STATUS (O_NONBLOCK | O_ASYNC | O_DIRECT | O_NOATIME)

/* The first descriptor before @fds[i] that shares its open file description, or NULL. */
const struct sc_fd *sc_fd_shares_with(const struct sc_fd *fds, size_t i)
{
	if (!fds[i].share_id)
		return NULL;
	for (size_t j = 0; j < i; j++)
		if (fds[j].share_id == fds[i].share_id)
			return &fds[j];
	return NULL;
}

/*
 * Put one end of the new pipe at @f's number. The first end of each kind is
 * the new end itself, with @f's status flags, so it is the same kind of
 * descriptor as before (an open() through /proc would add O_LARGEFILE); an
 * end that shares a description placed already is a copy of it; any other
 * (a FIFO opened again, or read-write) gets its own open file, through /proc.
 */
static int place_end(const int ends[2], const struct sc_fd *fds, size_t i, bool *kind_done,
		     int min)
{
	const struct sc_fd *f = &fds[i], *same = sc_fd_shares_with(fds, i);
	int end = f->kind == SC_FD_PIPE_W, err, fd;
	char proc[48];

	if (same)
		return sc_fd_place_copy(same->fd, f);
	if ((f->open_flags & O_ACCMODE) == O_RDWR || kind_done[end]) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", ends[(f->open_flags & O_ACCMODE) ==
								     O_RDWR ? 0 : end]);
		fd = open_path(proc, reopen_flags(f), min, f);
		return fd < 0 ? fd : sc_fd_place(fd, f);
	}
	kind_done[end] = true;
	err = sc_fd_place_copy(ends[end], f);
	if (!err && fcntl(f->fd, F_SETFL, f->open_flags & PIPE_STATUS) < 0)
		err = sc_err(errno, "cannot set the flags of descriptor %d ('%s'): %s", f->fd,
			     f->path, strerror(errno));
	return err;
}

/*
 * An end of a pipe another process of the tree holds too: a copy of the end
 * the tree made (tree_pipes.h), whose bytes are in it already.
 */
static int place_tree_end(const struct sc_fd *fds, size_t i, int min)
{
	const struct sc_fd *f = &fds[i], *same = sc_fd_shares_with(fds, i);
	const struct sc_tree_pipe *p = sc_tree_pipe_of(f);
	bool kind_done[2] = { false, false };

	if (same && same->fd <= 2 && !sc_tree_pipe_of(same))
		return 0; /* a copy of the restorer's own, made with it */
	return place_end(p->ends, fds, i, kind_done, min);
}

/* Restored as a copy of the restorer's own 0, 1 or 2, in restore_shared(). */
static bool shares_stdio(const struct sc_fd *fds, size_t i)
{
	const struct sc_fd *same = sc_fd_shares_with(fds, i);

	return same && same->fd <= 2;
}

/*
 * Re-create the pipe of @fds[first] once for all its ends. The fresh ends are
 * closed last: an end the process did not hold is then gone, and readers see
 * the saved bytes, then end of file.
 */
static int restore_pipe(const struct fds_restore *r, size_t first)
{
	const struct sc_fd *fds = r->fds;
	bool kind_done[2] = { false, false };
	int ends[2], err = 0, min = r->min;
	size_t k0 = pipe_ends(r, &fds[first]);

	if (pipe2(ends, O_CLOEXEC | O_NONBLOCK) < 0)
		return sc_err(errno, "cannot create the pipe of descriptor %d ('%s'): %s",
			      fds[first].fd, fds[first].path, strerror(errno));
	ends[0] = sc_fd_keep_above(ends[0], min, &fds[first]);
	ends[1] = ends[0] < 0 ? -1 : sc_fd_keep_above(ends[1], min, &fds[first]);
	if (ends[0] < 0 || ends[1] < 0) {
		if (ends[0] >= 0)
			close(ends[0]);
		return ends[0] < 0 ? ends[0] : ends[1];
	}
	err = refill_pipe(ends[1], r, &fds[first]);
	for (size_t k = k0; pipe_end_at(r, k0, k) && !err; k++) {
		size_t i = r->pipes.keys[k].i;

		if (i >= first && !shares_stdio(fds, i))
			err = place_end(ends, fds, i, kind_done, min);
	}
	close(ends[0]);
	close(ends[1]);
	return err;
}

/* Was @fds[i]'s pipe made already, for an end before it? */
static bool pipe_done(const struct fds_restore *r, size_t i)
{
	size_t k0 = pipe_ends(r, &r->fds[i]);

	for (size_t k = k0; pipe_end_at(r, k0, k) && r->pipes.keys[k].i < i; k++)
		if (!shares_stdio(r->fds, r->pipes.keys[k].i))
			return true;
	return false;
}

/*
 * What cannot come back as it was (a connected TCP socket, a netlink socket,
 * an object this version does not know) comes back as one end of a unix
 * socket pair whose other end is closed: reads give end of file and writes
 * fail with EPIPE, as after a peer closed; the number is not left free for
 * the program's next open() to take unseen.
 */
static int restore_stand_in(const struct sc_fd *f, int min)
{
	int pair[2], fd;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
		return sc_err(errno, "cannot make a stand-in for descriptor %d (%s): %s", f->fd,
			      f->path, strerror(errno));
	close(pair[1]);
	fd = sc_fd_settle(pair[0], min, f);
	if (fd < 0)
		return fd;
	if (fcntl(fd, F_SETFL, f->open_flags & O_NONBLOCK) < 0) {
		int err = sc_err(errno, "cannot set the flags of descriptor %d's stand-in: %s",
				 f->fd, strerror(errno));

		close(fd);
		return err;
	}
	sc_log(SC_LOG_WARN, "descriptor %d (%s) did not come back: it reads as end of file and "
	       "fails to write, as if its peer had closed", f->fd, f->path);
	return sc_fd_place(fd, f);
}

static int restore_object(const struct sc_fd *f, int min)
{
	int fd = sc_fd_object_restore(f, min);

	return fd < 0 ? fd : sc_fd_place(fd, f);
}

/*
 * An earlier unlinked file or memfd of the image that is the same file as
 * @fds[i] (opened twice, not dup'd), made already: @fds[i] opens it again,
 * so that both see one file, as before.
 */
static const struct sc_fd *same_file_made(const struct sc_fd *fds, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (fds[j].kind == fds[i].kind && fds[j].inode == fds[i].inode &&
		    fds[j].dev == fds[i].dev && fds[j].fd > 2 && fcntl(fds[j].fd, F_GETFD) >= 0)
			return &fds[j];
	return NULL;
}

int sc_fd_reopen_held(int made, const struct sc_fd *f, int min)
{
	char proc[48];
	int fd, err;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", made);
	fd = open_path(proc, reopen_flags(f) & ~O_NOFOLLOW, min, f);
	if (fd >= 0 && (err = seek_to(fd, f)) < 0) {
		close(fd);
		return err;
	}
	return fd;
}

static int reopen_made(const struct sc_fd *made, const struct sc_fd *f, int min)
{
	int fd = sc_fd_reopen_held(made->fd, f, min);

	return fd < 0 ? fd : sc_fd_place(fd, f);
}

int sc_fd_make_held_file(const struct sc_fd *f, int min)
{
	return f->kind == SC_FD_MEMFD ? restore_memfd(f, min) : restore_deleted(f, min);
}

static int restore_one(const struct fds_restore *r, size_t i)
{
	const struct sc_fd *fds = r->fds, *f = &fds[i], *same;
	int min = r->min;

	switch (f->kind) {
	case SC_FD_REGULAR:
		if (sc_tree_file_of(f))
			return place_tree_file(fds, i);
		return restore_regular(f, min);
	case SC_FD_DIR:
		return restore_dir(f, min);
	case SC_FD_CHAR:
		return restore_char(f, min);
	case SC_FD_PIPE_R:
	case SC_FD_PIPE_W:
		if (sc_tree_pipe_of(f))
			return place_tree_end(fds, i, min);
		return pipe_done(r, i) ? 0 : restore_pipe(r, i);
	case SC_FD_MEMFD:
	case SC_FD_DELETED:
		if (sc_tree_file_of(f))
			return place_tree_file(fds, i);
		if ((same = same_file_made(fds, i)))
			return reopen_made(same, f, min);
		return f->kind == SC_FD_MEMFD ? restore_memfd(f, min) : restore_deleted(f, min);
	case SC_FD_SOCKET:
	case SC_FD_OTHER:
		return restore_stand_in(f, min);
	case SC_FD_EVENTFD:
	case SC_FD_TIMERFD:
	case SC_FD_SIGNALFD:
	case SC_FD_INOTIFY:
	case SC_FD_EPOLL:
	case SC_FD_PIDFD:
		return restore_object(f, min);
	case SC_FD_UNIX:
	case SC_FD_INET:
		break;
	}
	return sc_err(SELFCKPT_EUSAGE, "descriptor %d ('%s') has unknown kind %u", f->fd, f->path,
		      (unsigned)f->kind);
}

/*
 * @f shares its open file description with @same, restored before it (or one
 * of the restorer's own 0, 1, 2): a copy of that descriptor, so that both move
 * one position and carry one set of status flags again. A description that
 * did not come back (a socket) leaves @f to be handled on its own.
 */
static int restore_shared(const struct sc_fd *same, const struct fds_restore *r, size_t i)
{
	if (fcntl(same->fd, F_GETFD) < 0)
		return restore_one(r, i);
	return sc_fd_place_copy(same->fd, &r->fds[i]);
}

/* Refuse before touching anything: a bad entry, or a number the restorer uses. */
static int check_list(const struct sc_fd *fds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct sc_fd *f = &fds[i];

		if (f->fd < 0 || f->fd == INT_MAX || !f->path)
			return sc_err(SELFCKPT_EUSAGE, "cannot restore descriptor %d: bad number "
				      "or no path", f->fd);
		if (f->fd > 2 && fcntl(f->fd, F_GETFD) >= 0)
			return sc_err(EBUSY, "cannot restore descriptor %d ('%s'): the restorer "
				      "already uses that number", f->fd, f->path);
	}
	return 0;
}

/* Re-create @fds[i] at its number: a copy of a description made already, or made anew. */
static int restore_at(const struct fds_restore *r, size_t i)
{
	const struct sc_fd *same = sc_fd_shares_with(r->fds, i);

	if (same && (same->fd <= 2 || !is_pipe(&r->fds[i])))
		return restore_shared(same, r, i);
	return restore_one(r, i);
}

/* The standard descriptors stay the restorer's own, unless the program had its own there. */
static bool restorers_own(const struct sc_fd *f)
{
	/* in a tree, a pipe to another process of it is the tree's, not the restorer's */
	return f->fd <= 2 && !(f->fd_flags & SC_FD_OWN_STDIO) && !sc_tree_pipe_of(f) &&
	       !sc_tree_socket_of(f);
}

/* A unix or IP socket, or a copy of one: made by sc_fd_sockets_restore(). */
static bool of_socket(const struct sc_fd *fds, size_t i)
{
	const struct sc_fd *same = sc_fd_shares_with(fds, i);

	if (same && same->fd <= 2)
		return false; /* a copy of the restorer's own */
	return fds[i].kind == SC_FD_UNIX || fds[i].kind == SC_FD_INET;
}

/* An epoll instance, or a copy of one: made once every descriptor it watches is back. */
static bool of_epoll(const struct sc_fd *fds, size_t i)
{
	const struct sc_fd *same = sc_fd_shares_with(fds, i);

	return fds[i].kind == SC_FD_EPOLL || (same && same->kind == SC_FD_EPOLL);
}

/*
 * The epoll instances last, each once what it watches is open (it may watch
 * another epoll instance, made before it in this loop); one whose targets
 * never all come back is made anyway, and reports the missing one.
 */
static int restore_epolls(const struct fds_restore *r)
{
	const struct sc_fd *fds = r->fds;
	size_t n = r->n;
	bool force = false;

	for (;;) {
		bool made = false, waiting = false;

		for (size_t i = 0; i < n; i++) {
			const struct sc_fd *f = &fds[i];
			int err;

			if (!of_epoll(fds, i) || f->fd <= 2 || fcntl(f->fd, F_GETFD) >= 0)
				continue;
			if (!force && f->kind == SC_FD_EPOLL && !sc_fd_epoll_targets_open(f)) {
				waiting = true;
				continue;
			}
			err = restore_at(r, i);
			if (err)
				return err;
			made = true;
		}
		if (!waiting)
			return 0;
		force = !made;
	}
}

/* Is @fds[i] made by restore_files()? Not a socket, an epoll instance or the restorer's. */
static bool of_files(const struct sc_fd *fds, size_t i)
{
	return !of_epoll(fds, i) && !of_socket(fds, i) && !restorers_own(&fds[i]);
}

/*
 * The program's own 0, 1 and 2 (files it opened there) first, before the
 * restorer writes a warning to its standard error, which may be one of them
 * (its identity is checked as it is opened).
 */
static int restore_stdio(const struct fds_restore *r)
{
	int err = 0;

	for (size_t i = 0; i < r->n && !err; i++) {
		const struct sc_fd *f = &r->fds[i];

		if (restorers_own(f))
			sc_log(SC_LOG_DEBUG, "descriptor %d ('%s') stays the restorer's own", f->fd,
			       f->path);
		else if (f->fd <= 2 && of_files(r->fds, i))
			err = restore_at(r, i);
	}
	return err;
}

/*
 * Every other descriptor but the sockets and epoll instances, in list order
 * (that of the numbers); the numbers none of them takes are held meanwhile.
 */
static int restore_files(const struct fds_restore *r)
{
	int err = 0;

	sc_fd_hold_free_numbers(r->fds, r->n, r->min, of_files);
	for (size_t i = 0; i < r->n && !err; i++)
		if (r->fds[i].fd > 2 && of_files(r->fds, i))
			err = restore_at(r, i);
	sc_fd_release_free_numbers();
	return err;
}

/*
 * The sockets another process of the tree holds too, or whose peer it holds:
 * copies of those the tree made (tree_shared.h), with their queues in them.
 * The others, in @rest (@n_rest), are made here.
 */
static int place_tree_sockets(const struct sc_fd *fds, size_t n, struct sc_fd *rest,
			      size_t *n_rest)
{
	int err = 0;

	*n_rest = 0;
	for (size_t i = 0; i < n && !err; i++) {
		const struct sc_tree_socket *t = sc_tree_socket_of(&fds[i]);
		const struct sc_fd *same = sc_fd_shares_with(fds, i);

		if (!t)
			rest[(*n_rest)++] = fds[i];
		else
			err = sc_fd_place_copy(same && sc_tree_socket_of(same) ? same->fd : t->fd,
					       &fds[i]);
	}
	return err;
}

int sc_fds_restore(const struct sc_fd *fds, size_t n)
{
	struct fds_restore r = { .fds = fds, .n = n, .min = 3 };
	const struct sc_fd *socks = fds; /* those sc_fd_sockets_restore() makes */
	size_t n_rest = n;
	int err;

	for (size_t i = 0; i < n; i++)
		if (fds[i].fd >= r.min && fds[i].fd < INT_MAX)
			r.min = fds[i].fd + 1;
	err = check_list(fds, n);
	if (!err)
		err = sc_fd_sockets_check(fds, n);
	if (err)
		return err;
	err = index_pipes(&r);
	if (!err && sc_tree_n_sockets) {
		struct sc_fd *rest = malloc((n ? n : 1) * sizeof(*rest));

		if (!rest)
			err = sc_err(ENOMEM, "out of memory");
		if (!err)
			err = place_tree_sockets(fds, n, rest, &n_rest);
		socks = rest;
	}
	if (!err)
		err = restore_stdio(&r);
	if (!err)
		err = sc_fd_sockets_restore(socks, n_rest, r.min);
	if (!err)
		err = restore_files(&r);
	if (!err)
		err = restore_epolls(&r);
	if (!err)
		err = sc_fd_sockets_send_rights(socks, n_rest);
	sc_fd_index_free(&r.pipes);
	if (socks != fds)
		free((void *)socks);
	return err;
}
