/* SPDX-License-Identifier: MIT */
/*
 * fds_freeze_rt.c - read every descriptor at the instant of the snapshot.
 *
 * Stage contract: sc_fds_freeze() runs in the checkpointing thread while every
 * other thread is stopped (possibly inside malloc or stdio), before the
 * snapshot is cloned; sc_fds_freeze_drop() right after the clone. Raw system
 * calls and the table sc_fds_prepare() allocated only: no malloc, no locks, no
 * errno. What is read here belongs to open file descriptions, which the
 * snapshot shares with the process that goes on: positions, status flags,
 * which descriptors share a description, pipe buffers and the contents of
 * unlinked files. The copies are made before the clone, so the snapshot holds
 * them; the process closes its own at once. The small ones (fdinfo, socket
 * state) share one memfd, z->held: with 10,000 descriptors, making and
 * closing a memfd each cost more than all the rest of the freeze.
 *
 * A peek at a socket's queue whose message carries descriptors (SCM_RIGHTS)
 * installs new descriptors of those descriptions here: they join the table,
 * marked in flight, and are looked at in a further round as the program's
 * own are (a socket among them may carry more), until a round brings none.
 * The snapshot holds them; the process closes them with its copies.
 */
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "core/fd_socket.h"
#include "core/sc_sys.h"

#define EIO_ 5
#define E2BIG_ 7
#define EAGAIN_ 11
#define ESPIPE_ 29
#define FIONREAD_ 0x541B
#define MFD_CLOEXEC_ 1u
#define SPLICE_F_NONBLOCK_ 2u
#define SENDFILE_MAX 0x7ffff000l

void sc_fds_freeze_fail(struct sc_fds_frozen *z, int err, int what, int fd)
{
	if (z->err)
		return; /* the first failure is the one to tell */
	z->err = err;
	z->err_what = what;
	z->err_fd = fd;
}

/* Where a description with O_ASYNC sends its signal: nowhere it was not asked to, after a restore. */
static void read_owner(struct sc_fd_instant *d, int fd)
{
	struct { int type, pid; } owner = { 0, 0 };

	d->owner_type = d->owner_pid = d->owner_sig = 0;
	if (d->status < 0 || !(d->status & O_ASYNC))
		return;
	if (sc_sys3(SYS_fcntl, fd, F_GETOWN_EX, (long)&owner) == 0) {
		d->owner_type = owner.type;
		d->owner_pid = owner.pid;
	}
	d->owner_sig = (int32_t)sc_sys2(SYS_fcntl, fd, F_GETSIG);
	if (d->owner_sig < 0)
		d->owner_sig = 0;
}

/* Identity, flags and position of @fd; 0 or -errno (the descriptor was closed). */
int sc_fds_freeze_read_one(struct sc_fd_instant *d, int fd)
{
	struct stat st;
	long r = sc_sys2(SYS_fstat, fd, (long)&st);

	if (r < 0)
		return (int)r;
	d->fd = fd;
	d->in_flight = 0;
	d->held = -1;
	d->locks = -1;
	d->leased = 0;
	d->locks_len = 0;
	d->locks_off = 0;
	d->held_len = 0;
	d->held_off = 0;
	d->pipe_cap = 0;
	d->anon_kind = 0;
	d->anon_id = -1;
	d->queued = 0;
	d->owner_type = d->owner_pid = d->owner_sig = 0;
	d->dev = st.st_dev;
	d->ino = st.st_ino;
	d->size = (uint64_t)st.st_size;
	d->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
	d->mode = st.st_mode;
	d->nlink = (uint32_t)st.st_nlink;
	d->fd_flags = (int32_t)sc_sys2(SYS_fcntl, fd, F_GETFD);
	if (!(st.st_mode & S_IFMT)) {
		d->status = 0; /* an object without a file: its fdinfo, read next, tells */
		d->pos = 0;
		return d->fd_flags < 0 ? d->fd_flags : 0;
	}
	d->status = (int32_t)sc_sys2(SYS_fcntl, fd, F_GETFL);
	read_owner(d, fd);
	/* a pipe, FIFO or socket has no position: the kernel's lseek() says ESPIPE, always */
	d->pos = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ? -ESPIPE_
							      : sc_sys3(SYS_lseek, fd, 0, SEEK_CUR);
	if (S_ISFIFO(st.st_mode))
		d->pipe_cap = (int32_t)sc_sys2(SYS_fcntl, fd, F_GETPIPE_SZ);
	d->seals = 0;
	if (S_ISREG(st.st_mode) && st.st_nlink == 0) {
		long seals = sc_sys2(SYS_fcntl, fd, F_GET_SEALS);

		d->seals = seals > 0 ? (int32_t)seals : 0;
	}
	if (d->status < 0 || d->fd_flags < 0)
		return d->status < 0 ? d->status : d->fd_flags;
	return 0;
}

/* FDSize of /proc/self/status, read now (every number is below it), or -errno. */
static long fd_slots_now(struct sc_fds_frozen *z)
{
	const char *p = sc_status_value("/proc/self/status", "FDSize:", z->scratch,
					z->scratch_size);

	return p ? (long)sc_parse_dec(&p) : -EIO_;
}

/* Every descriptor number below the table's size, tried in turn. */
static void probe_all(struct sc_fds_frozen *z)
{
	long slots = fd_slots_now(z);

	z->n = 0;
	if (slots < 0) {
		sc_fds_freeze_fail(z, (int)slots, SC_FREEZE_LIST, -1);
		return;
	}
	if (sc_fds_parallel(z, SC_PASS_LIST, 0, (int)slots) == 0)
		return;
	for (int fd = 0; fd < slots; fd++) {
		if (z->n < z->cap) {
			z->n += sc_fds_freeze_read_one(&z->fds[z->n], fd) == 0;
		} else if (sc_sys2(SYS_fcntl, fd, F_GETFD) >= 0) {
			sc_fds_freeze_fail(z, -E2BIG_, SC_FREEZE_TOO_MANY, fd);
			return;
		}
	}
}

/* Every descriptor number, with its identity; the listing's own is left out. */
static void list_all(struct sc_fds_frozen *z)
{
	long dir = sc_sys4(SYS_openat, AT_FDCWD, (long)"/proc/self/fd",
			   O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0), n;

	z->n = 0;
	if (dir < 0) {
		sc_fds_freeze_fail(z, (int)dir, SC_FREEZE_LIST, -1);
		return;
	}
	while ((n = sc_sys3(SYS_getdents64, dir, (long)z->scratch, z->scratch_size)) > 0) {
		for (long off = 0; off < n;) {
			struct sc_dirent64 *e = (struct sc_dirent64 *)(z->scratch + off);
			int fd = sc_parse_uint(e->d_name);

			off += e->d_reclen;
			if (fd < 0 || fd == dir)
				continue;
			if (z->n == z->cap) {
				sc_fds_freeze_fail(z, -E2BIG_, SC_FREEZE_TOO_MANY, fd);
				break;
			}
			if (sc_fds_freeze_read_one(&z->fds[z->n], fd) == 0)
				z->n++;
		}
	}
	if (n < 0)
		sc_fds_freeze_fail(z, (int)n, SC_FREEZE_LIST, -1);
	sc_sys1(SYS_close, dir);
}

/* A descriptor @d can be read through: itself, or a second open of its file. */
static int readable(const struct sc_fd_instant *d)
{
	char path[40];
	int acc = d->status & O_ACCMODE;

	if ((acc == O_RDONLY || acc == O_RDWR) && !(d->status & O_PATH))
		return d->fd;
	sc_path_number(path, "/proc/self/fd/", d->fd, "");
	return (int)sc_sys4(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
}

/* The whole contents of an unlinked file or memfd, into a memfd of ours. */
static void copy_file(struct sc_fds_frozen *z, struct sc_fd_instant *d)
{
	int in = readable(d);
	long out, r = 0;
	int64_t off = 0;

	if (in < 0) {
		sc_fds_freeze_fail(z, in, SC_FREEZE_COPY_FILE, d->fd);
		return;
	}
	out = sc_sys2(SYS_memfd_create, (long)"selfckpt-held", MFD_CLOEXEC_);
	while (out >= 0 && (uint64_t)off < d->size) {
		uint64_t left = d->size - (uint64_t)off;

		r = sc_sys4(SYS_sendfile, out, in, (long)&off,
			    left < SENDFILE_MAX ? (long)left : SENDFILE_MAX);
		if (r <= 0)
			break; /* 0: the file is shorter than fstat said; keep what there is */
	}
	if (in != d->fd)
		sc_sys1(SYS_close, in);
	if (out < 0 || r < 0) {
		if (out >= 0)
			sc_sys1(SYS_close, out);
		sc_fds_freeze_fail(z, out < 0 ? (int)out : (int)r, SC_FREEZE_COPY_FILE, d->fd);
		return;
	}
	d->held = (int32_t)out;
	d->held_len = off;
}

static int pipe_copied(const struct sc_fds_frozen *z, const struct sc_fd_instant *d)
{
	for (const struct sc_fd_instant *e = z->fds; e < d; e++)
		if (e->held >= 0 && S_ISFIFO(e->mode) && e->ino == d->ino && e->dev == d->dev)
			return 1;
	return 0;
}

/*
 * The bytes buffered in the pipe @d reads from, left where they are: tee()d
 * into a pipe of ours whose write end is closed at once, so the snapshot
 * holds a read end that gives those bytes, then end of file.
 */
static void copy_pipe(struct sc_fds_frozen *z, struct sc_fd_instant *d)
{
	int avail = 0, ends[2];
	long r;

	/* an empty pipe first: most are, and looking for a copy costs a pass over the table */
	if (sc_sys3(SYS_ioctl, d->fd, FIONREAD_, (long)&avail) < 0 || avail <= 0 ||
	    pipe_copied(z, d))
		return;
	r = sc_sys2(SYS_pipe2, (long)ends, O_CLOEXEC | O_NONBLOCK);
	if (r < 0) {
		sc_fds_freeze_fail(z, (int)r, SC_FREEZE_COPY_PIPE, d->fd);
		return;
	}
	if (d->pipe_cap > 0)
		sc_sys3(SYS_fcntl, ends[1], F_SETPIPE_SZ, d->pipe_cap);
	r = sc_sys4(SYS_tee, d->fd, ends[1], avail, SPLICE_F_NONBLOCK_);
	sc_sys1(SYS_close, ends[1]);
	if (r != avail) {
		sc_sys1(SYS_close, ends[0]);
		sc_fds_freeze_fail(z, r < 0 ? (int)r : -EAGAIN_, SC_FREEZE_COPY_PIPE, d->fd);
		return;
	}
	d->held = ends[0];
	d->held_len = r;
}

/* z->held, made now if it is not yet; or -errno. */
static long held_fd(struct sc_fds_frozen *z)
{
	long fd = z->held;

	if (fd < 0 && (fd = sc_sys2(SYS_memfd_create, (long)"selfckpt-held", MFD_CLOEXEC_)) >= 0)
		z->held = (int)fd;
	return fd;
}

static long write_at(int fd, int64_t at, const char *buf, long len)
{
	for (long done = 0, w; done < len; done += w) {
		w = sc_sys4(SYS_pwrite64, fd, (long)(buf + done), len - done, at + done);
		if (w <= 0)
			return w < 0 ? w : -EIO_;
	}
	return 0;
}

/* Write the staged bytes; the stage then starts at the end of the copies. */
static long stage_flush(struct sc_fds_frozen *z)
{
	long err = z->stage_len ? write_at(z->held, z->stage_at, z->stage, z->stage_len) : 0;

	z->stage_len = 0;
	z->stage_at = z->held_end;
	return err;
}

/*
 * Staged when the bytes go inside the stage or right after what it holds
 * (a socket's header is written again once its queue is known), and fit;
 * anything else is written at once, after the stage.
 */
long sc_fds_freeze_put(struct sc_fds_frozen *z, int64_t at, const void *buf, long len)
{
	long err = held_fd(z);
	int64_t end = at + len;

	if (err < 0)
		return err;
	if (z->held_limit && end > z->held_limit) {
		/* a helper's block is full: the copy is the coordinator's, whoever asked */
		sc_fds_freeze_fail(z, -E2BIG_, 0, -1);
		return -E2BIG_;
	}
	err = 0;
	if (at >= z->stage_at && at <= z->stage_at + z->stage_len &&
	    end <= z->stage_at + z->stage_size) {
		sc_copy_bytes((uint64_t)(z->stage + (at - z->stage_at)), (uint64_t)buf,
			      (uint64_t)len);
		if (end - z->stage_at > z->stage_len)
			z->stage_len = (int)(end - z->stage_at);
	} else {
		err = stage_flush(z);
		if (!err)
			err = write_at(z->held, at, buf, len);
	}
	if (end > z->held_end)
		z->held_end = end;
	if (!err && !z->stage_len)
		z->stage_at = z->held_end; /* the next bytes are staged from the end on */
	return err;
}

/* /proc/self/fdinfo/@fd, opened from the folder opened once: a shorter walk than the path. */
static long fdinfo_dir(struct sc_fds_frozen *z)
{
	if (z->fdinfo_dir < 0) {
		long dir = sc_sys4(SYS_openat, AT_FDCWD, (long)"/proc/self/fdinfo",
				   O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);

		if (dir < 0)
			return dir;
		z->fdinfo_dir = (int)dir;
	}
	return z->fdinfo_dir;
}

static long open_fdinfo(struct sc_fds_frozen *z, int fd)
{
	char name[12];
	long dir = fdinfo_dir(z);

	if (dir < 0)
		return dir;
	sc_path_number(name, "", fd, "");
	return sc_sys4(SYS_openat, dir, (long)name, O_RDONLY | O_CLOEXEC, 0);
}

/*
 * The kernel's own account of an object without a file behind it (an anon
 * inode: eventfd, timerfd, signalfd, inotify, epoll): /proc/self/fdinfo/N,
 * copied as it reads now into z->held, which the snapshot holds; fd_objects.c
 * makes the object's state of it.
 */
/* Does a line of the @n bytes at @t start with @key? Then *@value: what follows it. */
static int has_line(const char *t, long n, const char *key, const char **value)
{
	for (long i = 0; i < n; i++) {
		long k = 0;

		if (i && t[i - 1] != '\n')
			continue;
		while (key[k] && i + k < n && t[i + k] == key[k])
			k++;
		if (!key[k]) {
			*value = t + i + k;
			return 1;
		}
	}
	return 0;
}

/* Do the @n bytes at @t hold @word? */
static int has_word(const char *t, long n, const char *word)
{
	for (long i = 0; i < n; i++) {
		long k = 0;

		while (word[k] && i + k < n && t[i + k] == word[k])
			k++;
		if (!word[k])
			return 1;
	}
	return 0;
}

/* The number after @key in the @n bytes at @t, in @base; -1 where there is none. */
static int64_t number_of(const char *t, long n, const char *key, int base)
{
	const char *v;
	int64_t x = 0;

	if (!has_line(t, n, key, &v))
		return -1;
	while (v < t + n && (*v == ' ' || *v == '\t'))
		v++;
	if (v == t + n || *v < '0' || *v > '0' + base - 1)
		return -1;
	while (v < t + n && *v >= '0' && *v <= '0' + base - 1)
		x = x * base + (*v++ - '0');
	return x;
}

/*
 * What the fdinfo @t (@n bytes, its start) of an object without a file
 * tells: its kind, an eventfd's id, and its status flags, which fdinfo gives
 * with O_CLOEXEC added where the descriptor has FD_CLOEXEC (F_GETFD tells
 * that): the fcntl(F_GETFL) that sc_fds_freeze_read_one() spared. Return: 0, or -EIO where
 * they are not there.
 */
static int note_object(struct sc_fd_instant *d, const char *t, long n)
{
	static const struct {
		const char *line;
		int kind;
	} kinds[] = {
		{ "eventfd-count:", SC_ANON_EVENTFD }, { "clockid:", SC_ANON_TIMERFD },
		{ "sigmask:", SC_ANON_SIGNALFD },      { "tfd:", SC_ANON_EPOLL },
		{ "inotify wd:", SC_ANON_INOTIFY },
	};
	const char *v;
	int64_t flags = number_of(t, n, "flags:", 8);

	for (unsigned k = 0; k < sizeof(kinds) / sizeof(kinds[0]) && !d->anon_kind; k++)
		if (has_line(t, n, kinds[k].line, &v))
			d->anon_kind = kinds[k].kind;
	if (d->anon_kind == SC_ANON_EVENTFD)
		d->anon_id = number_of(t, n, "eventfd-id:", 10);
	/* events the program has not read yet: the kernel keeps them, no image can */
	if (d->anon_kind == SC_ANON_INOTIFY &&
	    sc_sys3(SYS_ioctl, d->fd, FIONREAD, (long)&d->queued) < 0)
		d->queued = 0;
	if (flags < 0)
		return -EIO_;
	d->status = (int32_t)(flags & ~(int64_t)O_CLOEXEC);
	return 0;
}

static void copy_fdinfo_to(struct sc_fds_frozen *z, struct sc_fd_instant *d, int32_t *held,
			   int64_t *held_off, int64_t *held_len)
{
	long its[4], in, r = 0, w = held_fd(z);
	int64_t at = z->held_end, len = 0;
	int object = held == &d->held, locks = 0;
	const char *v;

	/*
	 * A periodic timerfd counts the periods that passed since it fired only
	 * when asked: timerfd_gettime() brings its count of expirations up to
	 * date without reading them (on any other object it fails, harmlessly).
	 */
	if (object)
		sc_sys2(SYS_timerfd_gettime, d->fd, (long)its);
	in = w < 0 ? w : open_fdinfo(z, d->fd);
	w = 0; /* a failure to make z->held is in @in */
	while (in >= 0 && (r = sc_sys3(SYS_read, in, (long)z->scratch, z->scratch_size)) > 0) {
		if (object && !len && note_object(d, z->scratch, r) < 0)
			w = -EIO_;
		locks = locks || has_line(z->scratch, r, "lock:", &v);
		if (!object && locks && has_word(z->scratch, r, "LEASE"))
			d->leased = 1;
		if (!w)
			w = sc_fds_freeze_put(z, at + len, z->scratch, r);
		if (w < 0)
			break;
		len += r;
		if (r < z->scratch_size)
			break; /* fdinfo is one seq_file record: a short read is its end */
	}
	if (in >= 0)
		sc_sys1(SYS_close, in);
	if (!w && !len)
		w = -EIO_; /* every fdinfo has lines: its end came too early */
	if (in < 0 || r < 0 || w < 0) {
		sc_fds_freeze_fail(z, in < 0 ? (int)in : r < 0 ? (int)r : (int)w, SC_FREEZE_COPY_FDINFO, d->fd);
		return;
	}
	if (!object && !locks)
		return; /* a file without locks: nothing to note (its bytes stay, unused) */
	*held = z->held;
	*held_off = at;
	*held_len = len;
}

void sc_fds_freeze_object(struct sc_fds_frozen *z, struct sc_fd_instant *d)
{
	copy_fdinfo_to(z, d, &d->held, &d->held_off, &d->held_len);
}

long sc_fds_freeze_ready(struct sc_fds_frozen *z)
{
	long err = held_fd(z);

	if (err >= 0)
		err = fdinfo_dir(z);
	return err < 0 ? err : stage_flush(z);
}

void sc_fds_freeze_fdinfo_locks(struct sc_fds_frozen *z, struct sc_fd_instant *d)
{
	copy_fdinfo_to(z, d, &d->locks, &d->locks_off, &d->locks_len);
}

/*
 * The fdinfo of each object without a file of [@from, @to), read before the
 * descriptors that share a description are found: it tells their kinds
 * (sc_fds_find_shared() compares only those alike), with the fdinfo of each
 * file and directory, which lists its locks.
 */
static void read_fdinfo(struct sc_fds_frozen *z, int from, int to)
{
	int helped = sc_fds_parallel(z, SC_PASS_FDINFO, from, to) == 0;

	for (int i = from; i < to && !z->err; i++) { /* those left, or all */
		struct sc_fd_instant *d = &z->fds[i];

		if (!(d->mode & S_IFMT) && d->held < 0) {
			sc_fds_freeze_object(z, d);
		} else if (sc_fds_freeze_lockable(d) && (!helped || d->locks == SC_HELD_LEFT)) {
			d->locks = -1;
			sc_fds_freeze_fdinfo_locks(z, d);
		}
	}
}

/* The descriptors [@from, @to) of the table: the copies each description needs. */
static void copy_contents(struct sc_fds_frozen *z, int from, int to)
{
	for (int i = from; i < to; i++) {
		struct sc_fd_instant *d = &z->fds[i];
		int acc = d->status & O_ACCMODE;

		if (d->share != i) {
			d->held = -1; /* a copy of its object's fdinfo: the first one's serves */
			continue; /* one copy per open file description */
		}
		if (S_ISREG(d->mode) && d->nlink == 0 && d->size)
			copy_file(z, d);
		if (S_ISFIFO(d->mode) && (acc == O_RDONLY || acc == O_RDWR) &&
		    !(d->status & O_PATH))
			copy_pipe(z, d);
		if (S_ISSOCK(d->mode) && d->held < 0) /* not copied by a helper */
			sc_fd_socket_freeze(z, d);
	}
}

void sc_fds_freeze(struct sc_fds_frozen *z)
{
	long err;

	z->err = 0;
	z->err_fd = -1;
	z->err_what = 0;
	z->held = -1;
	z->held_end = 0;
	z->stage_at = 0;
	z->stage_len = 0;
	z->fdinfo_dir = -1;
	if (z->probe)
		probe_all(z);
	else
		list_all(z);
	if (z->err)
		return;
	read_fdinfo(z, 0, z->n);
	sc_fds_find_shared(z);
	/* each round looks at what the last one's peeks installed (descriptions in flight) */
	for (int done = 0, end; done < z->n && !z->err; done = end) {
		end = z->n;
		sc_fds_parallel(z, SC_PASS_SOCKETS, done, end);
		copy_contents(z, done, end);
		if (z->n > end) {
			read_fdinfo(z, end, z->n);
			sc_fds_find_shared(z);
		}
	}
	sc_fds_freeze_locks_once(z);
	if (z->held >= 0 && (err = stage_flush(z)) < 0)
		sc_fds_freeze_fail(z, (int)err, SC_FREEZE_COPY_FDINFO, -1);
	if (z->fdinfo_dir >= 0)
		sc_sys1(SYS_close, z->fdinfo_dir);
	z->fdinfo_dir = -1;
}

int sc_fds_freeze_add(struct sc_fds_frozen *z, int fd)
{
	long r;

	if (z->n == z->cap) {
		sc_sys1(SYS_close, fd);
		sc_fds_freeze_fail(z, -E2BIG_, SC_FREEZE_TOO_MANY, fd);
		return -E2BIG_;
	}
	r = sc_fds_freeze_read_one(&z->fds[z->n], fd);
	if (r < 0) {
		sc_sys1(SYS_close, fd);
		sc_fds_freeze_fail(z, (int)r, SC_FREEZE_STAT, fd);
		return (int)r;
	}
	z->fds[z->n].in_flight = 1;
	z->fds[z->n].share = z->n; /* until sc_fds_find_shared() runs again */
	z->n++;
	return 0;
}

void sc_fds_freeze_drop(const struct sc_fds_frozen *z)
{
	for (int i = 0; i < z->n; i++) {
		if (z->fds[i].in_flight)
			sc_sys1(SYS_close, z->fds[i].fd);
		if (z->fds[i].held >= 0 && z->fds[i].held != z->held)
			sc_sys1(SYS_close, z->fds[i].held);
		if (z->fds[i].locks >= 0 && z->fds[i].locks != z->held)
			sc_sys1(SYS_close, z->fds[i].locks);
	}
	if (z->held >= 0)
		sc_sys1(SYS_close, z->held);
}
