/* SPDX-License-Identifier: MIT */
/*
 * fds.c - record the open descriptors of this process (spec §9.6): what each
 * one is, its flags and position, which ones share an open file description,
 * and the contents a restore could not find again (memfds, deleted files,
 * pipe buffers).
 *
 * Everything that belongs to an open file description was read at the
 * instant of the snapshot (fds_freeze_rt.c); here, after the release, come
 * the paths, read from the snapshot's own descriptor table (a copy of the
 * process's at that instant), and the contents, read from the copies the
 * snapshot holds. Nothing about a live descriptor is read here.
 *
 * The descriptors the freeze's peeks installed (descriptions in flight in
 * socket queues, SCM_RIGHTS) are recorded as any other, marked in flight,
 * except where the program holds the same description or an earlier one in
 * flight has it: the messages then name that record (fd_socket.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fd_objects.h"
#include "core/fd_socket.h"
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

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}


/*
 * What 0, 1 and 2 were when the program started (or came back from an image):
 * a standard descriptor that later points at another regular file was pointed
 * there by the program itself, and is restored from the image.
 */
static struct sc_stdio_ids stdio_start;
/*
 * The job's, while the image of a process of a job is written (job.c): a
 * copy, as the memory it comes from is no part of a restored process.
 */
static struct sc_stdio_ids job_stdio_copy;
static const struct sc_stdio_ids *job_stdio;

static void note_stdio(int fd)
{
	struct stat st;

	stdio_start.open[fd] = fstat(fd, &st) == 0;
	stdio_start.dev[fd] = stdio_start.open[fd] ? st.st_dev : 0;
	stdio_start.ino[fd] = stdio_start.open[fd] ? st.st_ino : 0;
}

void sc_fds_stdio_start(struct sc_stdio_ids *ids)
{
	*ids = stdio_start;
}

void sc_fds_job_stdio(const struct sc_stdio_ids *ids)
{
	if (ids)
		job_stdio_copy = *ids;
	job_stdio = ids ? &job_stdio_copy : NULL;
}

__attribute__((constructor)) static void note_stdio_at_start(void)
{
	for (int fd = 0; fd <= 2; fd++)
		note_stdio(fd);
}

static bool own_stdio(const struct sc_fd_instant *d)
{
	const struct sc_stdio_ids *s = job_stdio ? job_stdio : &stdio_start;

	return d->fd <= 2 && S_ISREG(d->mode) &&
	       (!s->open[d->fd] || s->dev[d->fd] != d->dev || s->ino[d->fd] != d->ino);
}

void sc_fds_restarted(const struct sc_fds_frozen *z)
{
	for (int fd = 0; fd <= 2; fd++) {
		struct stat st;
		bool from_image = false;

		for (int i = 0; i < z->n; i++)
			if (z->fds[i].fd == fd && own_stdio(&z->fds[i]) && fstat(fd, &st) == 0 &&
			    st.st_ino == z->fds[i].ino && st.st_dev == z->fds[i].dev)
				from_image = true;
		if (!from_image)
			note_stdio(fd);
	}
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return sc_err(errno, "cannot list '/proc/self/fd': %s", strerror(errno));
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Tables larger than this are listed, never probed: a probe would cost 20 ms. */
#define PROBE_SLOTS_MAX (1 << 16)

/* The slots of the descriptor table (FDSize): every number is below it. 0: unknown. */
static int fd_slots(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	int slots = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "FDSize: %d", &slots) == 1)
			break;
	if (f)
		fclose(f);
	return slots > 0 ? slots : 0;
}

/* The open descriptors below @slots. */
static int count_by_probe(int slots)
{
	int n = 0;

	for (int fd = 0; fd < slots; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

/* The table, the listing buffer and the helpers, in one mapping of their own. */
static size_t table_size(const struct sc_fds_frozen *z)
{
	return (size_t)z->cap * (sizeof(*z->fds) + sizeof(*z->order)) + SC_FDS_SCRATCH_SIZE +
	       SC_FDS_STAGE_SIZE + 64 + sc_fds_helpers_size(z->n_helpers);
}

/*
 * Helpers for a table of @n descriptors: one fewer than the processors this
 * thread may run on, up to 7; none below 1,024 descriptors, where making
 * them costs about what they save.
 */
#define HELPERS_MIN_FDS 1024
#define HELPERS_MAX 7

static int helpers_for(int n)
{
	cpu_set_t cpus;
	int count;

	if (n < HELPERS_MIN_FDS || sched_getaffinity(0, sizeof(cpus), &cpus) < 0)
		return 0;
	count = CPU_COUNT(&cpus) - 1;
	return count < 0 ? 0 : count > HELPERS_MAX ? HELPERS_MAX : count;
}

/*
 * The table is mapped, not malloc'd: malloc could move the break, and the
 * program's break must be at the instant what it was before the call.
 */
int sc_fds_prepare(struct sc_fds_frozen *z, unsigned spare)
{
	int slots = fd_slots();
	bool small = slots > 0 && slots <= PROBE_SLOTS_MAX;
	int n = small ? count_by_probe(slots) : count_fds();
	void *m;

	memset(z, 0, sizeof(*z));
	if (n < 0)
		return n;
	/* a table mostly empty (a few descriptors at high numbers) is listed */
	z->probe = small && slots <= 8 * n + 1024;
	z->cap = n + (int)(spare > SC_FDS_SPARE ? spare : SC_FDS_SPARE);
	z->n_helpers = helpers_for(n);
	m = mmap(NULL, table_size(z), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		memset(z, 0, sizeof(*z));
		return sc_err(errno, "cannot map a table for %d descriptors: %s", n,
			      strerror(errno));
	}
	z->fds = m;
	z->held = -1;
	z->fdinfo_dir = -1;
	z->order = (int32_t *)((char *)m + (size_t)z->cap * sizeof(*z->fds));
	z->scratch = (char *)(z->order + z->cap);
	z->scratch_size = SC_FDS_SCRATCH_SIZE;
	z->stage = z->scratch + SC_FDS_SCRATCH_SIZE;
	z->stage_size = SC_FDS_STAGE_SIZE;
	if (z->n_helpers)
		sc_fds_helpers_place(z, (void *)(((uintptr_t)z->stage + SC_FDS_STAGE_SIZE + 63) &
						 ~(uintptr_t)63), z->n_helpers);
	return 0;
}

void sc_fds_frozen_free(struct sc_fds_frozen *z)
{
	if (z->fds)
		munmap(z->fds, table_size(z));
	memset(z, 0, sizeof(*z));
}

bool sc_fds_outgrown(const struct sc_fds_frozen *z)
{
	return z->err && z->err_what == SC_FREEZE_TOO_MANY;
}

int sc_fds_events_queued(const struct sc_fds_frozen *z)
{
	for (int i = 0; i < z->n; i++)
		if (z->fds[i].anon_kind == SC_ANON_INOTIFY && z->fds[i].queued > 0)
			return i;
	return -1;
}

/* An instant with inotify events queued, after the checkpoint waited for the program. */
static int report_events_queued(const struct sc_fds_frozen *z, int i)
{
	return sc_err(EAGAIN, "inotify descriptor %d has %d bytes of events queued that the "
		      "program did not read within %d ms: the kernel keeps them in the object, "
		      "and no image can hold them, so none is written", z->fds[i].fd,
		      z->fds[i].queued, SC_FDS_QUEUE_WAIT_MS);
}

static int report_freeze_error(const struct sc_fds_frozen *z)
{
	static const char *const step[] = {
		[SC_FREEZE_LIST] = "cannot list '/proc/self/fd'",
		[SC_FREEZE_TOO_MANY] = "too many descriptors were opened while the threads stopped",
		[SC_FREEZE_STAT] = "cannot read a descriptor's flags",
		[SC_FREEZE_COPY_FILE] = "cannot copy the contents of an unlinked file or memfd",
		[SC_FREEZE_COPY_PIPE] = "cannot copy the buffer of a pipe",
		[SC_FREEZE_COPY_FDINFO] = "cannot copy the kernel's account of an object",
		[SC_FREEZE_COPY_SOCKET] = "cannot copy a socket's state",
	};
	const char *what = z->err_what > 0 && z->err_what <= SC_FREEZE_COPY_SOCKET ?
			   step[z->err_what] : "cannot read the descriptors";

	if (z->err_fd >= 0)
		return sc_err(-z->err, "%s (descriptor %d): %s", what, z->err_fd,
			      strerror(-z->err));
	return sc_err(-z->err, "%s: %s", what, strerror(-z->err));
}

/*
 * What is read from the snapshot for every descriptor, opened once: its
 * /proc/PID/fd folder, and the memfd of the small copies (z->held) mapped.
 * With 10,000 descriptors, walking /proc/PID/fd/N and opening a copy for
 * each cost tens of milliseconds.
 */
struct snap {
	pid_t pid;
	int fd_dir;         /* /proc/PID/fd */
	int held;           /* z->held: its number in the snapshot, or -1 */
	const uint8_t *map; /* its bytes, or NULL when the freeze made none */
	size_t len;
	struct known_name {
		bool known;
		uint64_t dev, ino;
	} sockfs, pipefs, anon[3]; /* where a link has shown each (link_of()) */
	/* the name of each file with one name, by inode (name_of()); open addressing */
	struct file_name {
		uint64_t dev, ino;
		char *link; /* NULL: a free slot */
	} *names;         /* a thread's own: NULL in the snap the threads share */
	size_t names_cap; /* a power of two, or 0: none kept */
};

static int map_held(const struct sc_fds_frozen *z, struct snap *s)
{
	char name[16];
	int fd;
	void *m;

	if (z->held < 0 || z->held_end <= 0)
		return 0;
	snprintf(name, sizeof(name), "%d", z->held);
	fd = openat(s->fd_dir, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sc_err(errno, "cannot open '/proc/%d/fd/%d', the copies of the "
			      "descriptors: %s", (int)s->pid, z->held, strerror(errno));
	m = mmap(NULL, (size_t)z->held_end, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return sc_err(errno, "cannot map '/proc/%d/fd/%d', the copies of the descriptors "
			      "(%lld bytes): %s", (int)s->pid, z->held, (long long)z->held_end,
			      strerror(errno));
	s->map = m;
	s->len = (size_t)z->held_end;
	return 0;
}

static void snap_close(struct snap *s)
{
	if (s->map)
		munmap((void *)s->map, s->len);
	if (s->fd_dir >= 0)
		close(s->fd_dir);
	s->map = NULL;
	s->fd_dir = -1;
}

static int snap_open(const struct sc_fds_frozen *z, pid_t pid, struct snap *s)
{
	char proc[64];
	int err;

	*s = (struct snap){ .pid = pid, .held = z->held };
	snprintf(proc, sizeof(proc), "/proc/%d/fd", (int)pid);
	s->fd_dir = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->fd_dir < 0)
		return sc_err(errno, "cannot open '%s': %s", proc, strerror(errno));
	err = map_held(z, s);
	if (err)
		snap_close(s);
	return err;
}

/* The link of descriptor @fd in the snapshot, into @link (LINK_MAX_LEN bytes). */
static int read_link(const struct snap *s, int fd, char *link)
{
	char name[16];
	ssize_t len;

	snprintf(name, sizeof(name), "%d", fd);
	len = readlinkat(s->fd_dir, name, link, LINK_MAX_LEN - 1);
	if (len < 0)
		return sc_err(errno, "cannot read link '/proc/%d/fd/%d': %s", (int)s->pid, fd,
			      strerror(errno));
	link[len] = '\0';
	return 0;
}

/*
 * Objects without a file whose fdinfo tells their kind: the line each one's
 * own fdinfo has, and the name the kernel gives them all.
 */
static const struct {
	const char *line, *name;
} anon_kinds[] = {
	{ "eventfd-count:", "anon_inode:[eventfd]" },
	{ "clockid:", "anon_inode:[timerfd]" },
	{ "sigmask:", "anon_inode:[signalfd]" },
};

/* Does the text @t of @n bytes have a line that starts with @line? */
static bool has_line(const char *t, size_t n, const char *line)
{
	size_t k = strlen(line);

	for (size_t at = 0; at + k <= n;) {
		const char *eol = memchr(t + at, '\n', n - at);

		if (!strncmp(t + at, line, k))
			return true;
		if (!eol)
			break;
		at = (size_t)(eol - t) + 1;
	}
	return false;
}

/* Which of anon_kinds the fdinfo copied for @d says it is, or -1. */
static int anon_kind_of(const struct snap *s, const struct sc_fd_instant *d)
{
	if ((d->mode & S_IFMT) || d->held != s->held || !s->map || d->held_off < 0 ||
	    d->held_len < 0 || (uint64_t)(d->held_off + d->held_len) > s->len)
		return -1;
	for (int k = 0; k < (int)(sizeof(anon_kinds) / sizeof(anon_kinds[0])); k++)
		if (has_line((const char *)s->map + d->held_off, (size_t)d->held_len,
			     anon_kinds[k].line))
			return k;
	return -1;
}

/* The link @d has if it is a socket, a pipe or a known anon inode, into @name; its slot. */
static struct known_name *expected_link(struct snap *s, const struct sc_fd_instant *d,
					char *name, size_t size)
{
	int k;

	if (S_ISSOCK(d->mode) || S_ISFIFO(d->mode)) {
		snprintf(name, size, "%s:[%llu]", S_ISSOCK(d->mode) ? "socket" : "pipe",
			 (unsigned long long)d->ino);
		return S_ISSOCK(d->mode) ? &s->sockfs : &s->pipefs;
	}
	k = anon_kind_of(s, d);
	if (k < 0)
		return NULL;
	snprintf(name, size, "%s", anon_kinds[k].name);
	return &s->anon[k];
}

/* Sockets and pipes each have an inode of their own; every anon inode object shares one. */
static uint64_t name_ino(const struct sc_fd_instant *d)
{
	return (d->mode & S_IFMT) ? 0 : d->ino;
}

/*
 * The link of @d, into @link (LINK_MAX_LEN bytes). The kernel names every
 * socket "socket:[INODE]" and every pipe "pipe:[INODE]", each kind on a file
 * system of its own (sockfs, pipefs), and every eventfd, timerfd and
 * signalfd after its kind, on the one anon inode, whose fdinfo (copied at
 * the freeze) tells which kind it is. Once one link has shown where each
 * lives, the name of another there is written here, sparing a readlink
 * through /proc (4 us each: 10,000 descriptors, 40 ms). A socket file or
 * FIFO opened by its path lives on another device, and is read.
 */
static int link_of(struct snap *s, const struct sc_fd_instant *d, char *link)
{
	char name[64];
	struct known_name *k = expected_link(s, d, name, sizeof(name));
	int err;

	if (k && k->known && k->dev == d->dev && k->ino == name_ino(d)) {
		snprintf(link, LINK_MAX_LEN, "%s", name);
		return 0;
	}
	err = read_link(s, d->fd, link);
	if (!err && k && !k->known && !strcmp(link, name)) {
		k->known = true;
		k->dev = d->dev;
		k->ino = name_ino(d);
	}
	return err;
}

/* An object without a file (an anon inode), by the name the kernel gives it. */
static enum sc_fd_kind anon_kind(const char *link)
{
	static const struct {
		const char *link;
		enum sc_fd_kind kind;
	} known[] = {
		{ "anon_inode:[eventfd]", SC_FD_EVENTFD },
		{ "anon_inode:[timerfd]", SC_FD_TIMERFD },
		{ "anon_inode:[signalfd]", SC_FD_SIGNALFD },
		{ "anon_inode:inotify", SC_FD_INOTIFY },
		{ "anon_inode:[eventpoll]", SC_FD_EPOLL },
		{ "anon_inode:[pidfd]", SC_FD_PIDFD }, /* of this process, or a stand-in: fd_objects.c */
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(link, known[i].link))
			return known[i].kind;
	return SC_FD_OTHER;
}

/* The kind of @d; strips the " (deleted)" the kernel adds to an unlinked file's name. */
static enum sc_fd_kind classify(char *link, const struct sc_fd_instant *d)
{
	bool unlinked = S_ISREG(d->mode) && d->nlink == 0;
	enum sc_fd_kind kind;

	if (!(d->mode & S_IFMT))
		return anon_kind(link);
	if (S_ISLNK(d->mode) && (d->status & O_PATH))
		return SC_FD_REGULAR; /* O_PATH | O_NOFOLLOW of a symbolic link: opened so again */
	if (unlinked)
		kind = strncmp(link, MEMFD_PREFIX, strlen(MEMFD_PREFIX)) ? SC_FD_DELETED
									   : SC_FD_MEMFD;
	else if (S_ISREG(d->mode))
		kind = SC_FD_REGULAR;
	else if (S_ISDIR(d->mode))
		kind = SC_FD_DIR;
	else if (S_ISFIFO(d->mode))
		kind = (d->status & O_ACCMODE) == O_WRONLY ? SC_FD_PIPE_W : SC_FD_PIPE_R;
	else if (S_ISSOCK(d->mode))
		kind = SC_FD_SOCKET;
	else if (S_ISCHR(d->mode))
		kind = SC_FD_CHAR;
	else
		kind = SC_FD_OTHER;
	if ((kind != SC_FD_REGULAR || unlinked) && ends_with(link, DELETED_SUFFIX))
		link[strlen(link) - strlen(DELETED_SUFFIX)] = '\0';
	return kind;
}

/* @f's copy in the mapped memfd of small copies. */
static int take_held(const struct snap *h, const struct sc_fd_instant *d, struct sc_fd *f)
{
	if (d->held_off < 0 || d->held_len < 0 || (uint64_t)d->held_off > h->len ||
	    (uint64_t)d->held_len > h->len - (size_t)d->held_off)
		return sc_err(EIO, "the copy of descriptor %d ('%s') at %lld (%lld bytes) is not "
			      "inside the %zu bytes of copies", f->fd, f->path,
			      (long long)d->held_off, (long long)d->held_len, h->len);
	f->data = malloc(d->held_len ? (size_t)d->held_len : 1);
	if (!f->data)
		return sc_err(ENOMEM, "out of memory saving the %lld bytes of descriptor %d ('%s')",
			      (long long)d->held_len, f->fd, f->path);
	memcpy(f->data, h->map + d->held_off, (size_t)d->held_len);
	f->data_len = (size_t)d->held_len;
	return 0;
}

/* Read the @d->held_len bytes of the copy the snapshot holds for @f. */
static int read_held(const struct snap *s, const struct sc_fd_instant *d, struct sc_fd *f)
{
	char proc[64];
	int in, err = 0;
	size_t got = 0;

	if (d->held == s->held && s->map)
		return take_held(s, d, f);
	snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", (int)s->pid, d->held);
	in = open(proc, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (in < 0)
		return sc_err(errno, "cannot open '%s', the copy of descriptor %d ('%s'): %s", proc,
			      f->fd, f->path, strerror(errno));
	f->data = malloc(d->held_len ? (size_t)d->held_len : 1);
	if (!f->data)
		err = sc_err(ENOMEM, "out of memory saving the %lld bytes of descriptor %d ('%s')",
			     (long long)d->held_len, f->fd, f->path);
	while (!err && got < (size_t)d->held_len) {
		ssize_t r = pread(in, (char *)f->data + got, (size_t)d->held_len - got,
				  (off_t)(d->held_off + (int64_t)got));

		if (r < 0 && errno == ESPIPE) /* the copy of a pipe's buffer */
			r = read(in, (char *)f->data + got, (size_t)d->held_len - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			err = sc_err(r < 0 ? errno : EIO, "cannot read the copy of descriptor %d "
				     "('%s') at offset %zu: %s", f->fd, f->path, got,
				     r < 0 ? strerror(errno) : "it ended early");
		else
			got += (size_t)r;
	}
	close(in);
	f->data_len = got;
	return err;
}

/*
 * A descriptor that gets no record: one left out, or one in flight of a
 * description that has a record already (the program's descriptor of it, or
 * the first one in flight): the messages name that record.
 */
static bool unrecorded(const struct sc_fds_frozen *z, int i, const int *skip, size_t n_skip)
{
	return (z->fds[i].in_flight && z->fds[i].share != i) ||
	       sc_fds_in_list(z->fds[i].fd, skip, n_skip);
}

/* How many descriptors (recorded) each open file description has, by its first's index. */
static int *count_sharers(const struct sc_fds_frozen *z, const int *skip, size_t n_skip)
{
	int *count = calloc(z->n ? (size_t)z->n : 1, sizeof(*count));

	for (int i = 0; count && i < z->n; i++)
		if (!unrecorded(z, i, skip, n_skip))
			count[z->fds[i].share]++;
	return count;
}

/* The terminal @path can be opened: its master side is open (somewhere). */
static bool terminal_open(const char *path)
{
	int fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd >= 0 || (errno != EIO && errno != ENOENT);
}

/*
 * A descriptor reopened by its path must have one: refuse now what no
 * restore could open again (a namespace file of /proc/self/ns names no
 * path; a removed directory is gone; opening /dev/ptmx makes a new
 * pseudo-terminal, not the program's).
 */
static int check_reopenable(const struct sc_fd *f, const struct sc_fd_instant *d)
{
	if (f->kind != SC_FD_REGULAR && f->kind != SC_FD_DIR && f->kind != SC_FD_CHAR)
		return 0;
	if (f->path[0] != '/')
		return sc_err(SELFCKPT_EHOST, "descriptor %d (%s) is not a file that can be opened "
			      "again by its path: it cannot come back, so no image is written",
			      f->fd, f->path);
	if (f->kind == SC_FD_REGULAR && ends_with(f->path, DELETED_SUFFIX))
		return sc_err(SELFCKPT_EHOST, "descriptor %d ('%s') names a file removed from that "
			      "path that still has other names: it cannot come back as the same "
			      "file, so no image is written", f->fd, f->path);
	if (f->kind == SC_FD_CHAR && (!strcmp(f->path, "/dev/ptmx") ||
				      !strcmp(f->path, "/dev/pts/ptmx")))
		return sc_err(SELFCKPT_EHOST, "descriptor %d is the master side of a "
			      "pseudo-terminal the program made ('%s'): pseudo-terminals do not "
			      "come back, so no image is written", f->fd, f->path);
	if (f->kind == SC_FD_CHAR && !strncmp(f->path, "/dev/pts/", 9) && !terminal_open(f->path))
		return sc_err(SELFCKPT_EHOST, "descriptor %d is the terminal '%s', whose master "
			      "side was closed: it cannot come back, so no image is written",
			      f->fd, f->path);
	if (f->kind == SC_FD_DIR && d->nlink == 0)
		return sc_err(SELFCKPT_EHOST, "descriptor %d is the directory '%s', which was "
			      "removed: it cannot come back, so no image is written", f->fd,
			      f->path);
	return 0;
}

/*
 * Links are read after the program went on: a file whose name it removed
 * since the instant shows " (deleted)" though it had that name then. Fewer
 * links now than at the instant tell it apart from a name removed before.
 */
static void strip_name_removed_since(const struct snap *s, const struct sc_fd_instant *d,
				     char *link)
{
	char name[16];
	struct stat st;

	if (!S_ISREG(d->mode) || d->nlink == 0 || !ends_with(link, DELETED_SUFFIX))
		return;
	snprintf(name, sizeof(name), "%d", d->fd);
	if (fstatat(s->fd_dir, name, &st, 0) == 0 && st.st_nlink < d->nlink)
		link[strlen(link) - strlen(DELETED_SUFFIX)] = '\0';
}

/*
 * The slot of @d's file among the names kept, or NULL where none is kept for
 * it: only a file with one name (one link) has the same name through every
 * descriptor of it.
 */
static struct file_name *name_slot(const struct snap *s, const struct sc_fd_instant *d)
{
	size_t mask = s->names_cap - 1, i;

	if (!s->names_cap || !S_ISREG(d->mode) || d->nlink != 1)
		return NULL;
	i = (size_t)((d->ino * 0x9E3779B97F4A7C15ull) ^ d->dev) & mask;
	while (s->names[i].link && (s->names[i].dev != d->dev || s->names[i].ino != d->ino))
		i = (i + 1) & mask; /* never full: twice the descriptors */
	return &s->names[i];
}

/*
 * The name of @d into @link (LINK_MAX_LEN bytes), as the snapshot's table
 * shows it; read once for all descriptors of a file with one name (1,000
 * opens of one log file: 1,000 readlinks through /proc, 10 us each).
 */
static int name_of(struct snap *s, const struct sc_fd_instant *d, char *link)
{
	struct file_name *slot = name_slot(s, d);
	int err;

	if (slot && slot->link) {
		snprintf(link, LINK_MAX_LEN, "%s", slot->link);
		return 0;
	}
	err = link_of(s, d, link);
	if (err)
		return err;
	strip_name_removed_since(s, d, link);
	if (slot && (slot->link = strdup(link))) {
		slot->dev = d->dev;
		slot->ino = d->ino;
	}
	return 0;
}

static int collect_one(const struct sc_fds_frozen *z, int i, struct snap *s, struct sc_fd *f,
		       bool is_shared, const int *skip, size_t n_skip)
{
	const struct sc_fd_instant *d = &z->fds[i];
	char link[LINK_MAX_LEN];
	int err = name_of(s, d, link);

	if (err)
		return err;
	f->fd = d->fd;
	f->kind = classify(link, d);
	f->open_flags = d->status & ~O_CLOEXEC;
	f->fd_flags = d->in_flight ? SC_FD_IN_FLIGHT :
		      (d->fd_flags & FD_CLOEXEC) | (own_stdio(d) ? SC_FD_OWN_STDIO : 0);
	f->pos = d->pos > 0 ? (uint64_t)d->pos : 0;
	f->dev = d->dev;
	f->inode = d->ino;
	f->size = S_ISREG(d->mode) || S_ISLNK(d->mode) ? d->size : 0;
	f->mtime_ns = d->mtime_ns;
	f->mode = d->mode;
	f->share_id = is_shared ? (uint64_t)z->fds[d->share].fd + 1 : 0;
	f->seals = (uint32_t)d->seals;
	f->owner_type = (uint32_t)d->owner_type;
	f->owner_pid = d->owner_pid;
	f->owner_sig = (uint32_t)d->owner_sig;
	if (f->kind == SC_FD_PIPE_R || f->kind == SC_FD_PIPE_W) {
		/* fstat gives a pipe no size: record its capacity, needed to refill it */
		f->size = d->pipe_cap > 0 ? (uint64_t)d->pipe_cap : 0;
		f->pipe_id = d->ino;
	}
	if (!(f->path = strdup(link)))
		return sc_err(ENOMEM, "out of memory recording descriptor %d", d->fd);
	err = f->fd > 2 || (f->fd_flags & SC_FD_OWN_STDIO) ? check_reopenable(f, d) : 0;
	if (err || d->held < 0)
		return err;
	err = read_held(s, d, f);
	if (!err)
		err = sc_fd_object_collect(f);
	return err ? err : sc_fd_socket_collect(f, z, skip, n_skip);
}

/* A copy of a description has the kind its first descriptor was found to have. */
static void inherit_kinds(struct sc_fd *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i && fds[i].share_id; j++)
			if (fds[j].share_id == fds[i].share_id) {
				fds[i].kind = fds[j].kind;
				break;
			}
}

/*
 * Say once, by number and kind, which descriptors cannot come back as they
 * are: they come back as stand-ins whose peer is gone (fds_restore.c).
 */
static void report_stand_ins(const struct sc_fd *fds, size_t n)
{
	char list[512];
	size_t len = 0, count = 0;

	for (size_t i = 0; i < n; i++) {
		if (fds[i].kind != SC_FD_SOCKET && fds[i].kind != SC_FD_OTHER)
			continue;
		if (len < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d (%s)",
						count ? ", " : "", fds[i].fd, fds[i].path);
		count++;
	}
	if (count)
		sc_log(SC_LOG_WARN, "%zu descriptor%s cannot come back as %s: %s%s; after a "
		       "restore each reads as end of file and fails to write (EPIPE), as if its "
		       "peer had closed", count, count > 1 ? "s" : "", count > 1 ? "they are" :
		       "it is", list, len >= sizeof(list) ? "..." : "");
}

/*
 * The library's own descriptors, which no image holds: the CUDA support's
 * write watch (a userfaultfd and /proc/self/pagemap) is opened again at a
 * restart, by whoever needs it.
 */
#define OWN_FDS_MAX 8
static int own_fds[OWN_FDS_MAX];
static size_t own_fds_n;

void sc_fds_own_add(int fd)
{
	if (own_fds_n < OWN_FDS_MAX && !sc_fds_in_list(fd, own_fds, own_fds_n))
		own_fds[own_fds_n++] = fd;
}

void sc_fds_own_remove(int fd)
{
	for (size_t i = 0; i < own_fds_n; i++)
		if (own_fds[i] == fd) {
			own_fds[i] = own_fds[--own_fds_n];
			return;
		}
}

const int *sc_fds_own(size_t *n)
{
	*n = own_fds_n;
	return own_fds;
}

bool sc_fds_in_list(int fd, const int *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (list[i] == fd)
			return true;
	return false;
}

/*
 * The records of a large table are made by several threads: each takes the
 * next indexes from one counter and has its own caches of names (struct
 * snap), sharing the snapshot's folder and the map of the copies. The first
 * failure stops them all; its message is the one reported.
 */
#define COLLECT_THREADS_MAX 8
#define COLLECT_PARALLEL_MIN 1024 /* fewer descriptors: the caller alone */
#define COLLECT_TAKE 32

struct collect_job {
	const struct sc_fds_frozen *z;
	const struct snap *snap;
	struct sc_fd *fds;
	const int *slot;    /* the record each descriptor makes, or -1 */
	const int *sharers; /* by the index of the first descriptor of a description */
	const int *skip;
	size_t n_skip;
	int next;           /* the next index to take */
	int err;            /* the first failure, and its message */
	char message[1024];
	pthread_mutex_t lock;
};

static void collect_some(struct collect_job *j)
{
	const struct sc_fds_frozen *z = j->z;
	struct snap s = *j->snap;

	for (s.names_cap = 16; s.names_cap < 2 * (size_t)z->n;)
		s.names_cap *= 2;
	s.names = calloc(s.names_cap, sizeof(*s.names));
	if (!s.names)
		s.names_cap = 0; /* each link is read: slower, as right */
	for (;;) {
		int first = __atomic_fetch_add(&j->next, COLLECT_TAKE, __ATOMIC_RELAXED), err = 0;

		if (first >= z->n || __atomic_load_n(&j->err, __ATOMIC_ACQUIRE))
			break;
		for (int i = first; i < first + COLLECT_TAKE && i < z->n && !err; i++)
			if (j->slot[i] >= 0)
				err = collect_one(z, i, &s, &j->fds[j->slot[i]],
						  j->sharers[z->fds[i].share] > 1, j->skip, j->n_skip);
		if (err) {
			pthread_mutex_lock(&j->lock);
			if (!j->err) {
				snprintf(j->message, sizeof(j->message), "%s", selfckpt_last_error());
				__atomic_store_n(&j->err, err, __ATOMIC_RELEASE);
			}
			pthread_mutex_unlock(&j->lock);
			break;
		}
	}
	for (size_t i = 0; i < s.names_cap; i++)
		free(s.names[i].link);
	free(s.names);
}

static void *collect_thread(void *job)
{
	collect_some(job);
	return NULL;
}

/* Threads for @n descriptors, the caller's included: 1 where few. */
static int collect_threads(int n)
{
	return n < COLLECT_PARALLEL_MIN ? 1 : 1 + helpers_for(n);
}

/* Every record of @j, by the caller and the threads it starts (signals blocked in them). */
static int collect_all(struct collect_job *j, int threads)
{
	pthread_t tid[COLLECT_THREADS_MAX];
	sigset_t all, old;
	int started = 0;

	if (threads > COLLECT_THREADS_MAX)
		threads = COLLECT_THREADS_MAX;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int t = 1; t < threads; t++)
		started += pthread_create(&tid[started], NULL, collect_thread, j) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	collect_some(j);
	for (int t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	if (j->err)
		sc_err_quiet(-j->err, "%s", j->message); /* the caller's last error: emitted once */
	return j->err;
}

int sc_fds_collect(const struct sc_fds_frozen *z, pid_t snapshot, const int *skip,
		   size_t n_skip, struct sc_fd **out, size_t *n)
{
	struct sc_fd *fds;
	struct snap snap;
	size_t k = 0;
	int err = 0, *sharers, *slot, queued;

	*out = NULL;
	*n = 0;
	if (z->err)
		return report_freeze_error(z);
	if ((queued = sc_fds_events_queued(z)) >= 0)
		return report_events_queued(z, queued);
	err = snap_open(z, snapshot, &snap);
	if (err)
		return err;
	fds = calloc(z->n ? (size_t)z->n : 1, sizeof(*fds));
	sharers = count_sharers(z, skip, n_skip);
	slot = malloc((z->n ? (size_t)z->n : 1) * sizeof(*slot));
	if (!fds || !sharers || !slot) {
		free(fds);
		free(sharers);
		free(slot);
		snap_close(&snap);
		return sc_err(ENOMEM, "out of memory recording %d descriptors", z->n);
	}
	for (int i = 0; i < z->n; i++)
		slot[i] = unrecorded(z, i, skip, n_skip) ? -1 : (int)k++;
	{
		struct collect_job job = { .z = z, .snap = &snap, .fds = fds, .slot = slot,
					   .sharers = sharers, .skip = skip, .n_skip = n_skip,
					   .lock = PTHREAD_MUTEX_INITIALIZER };

		err = collect_all(&job, collect_threads(z->n));
	}
	free(slot);
	free(sharers);
	snap_close(&snap);
	sc_fd_socket_collect_end();
	inherit_kinds(fds, k);
	if (!err)
		err = sc_fd_objects_check(snapshot, fds, k);
	if (err) {
		sc_fds_free(fds, k);
		return err;
	}
	report_stand_ins(fds, k);
	*out = fds;
	*n = k;
	return 0;
}

int sc_fds_capture(struct sc_fd **out, size_t *n, const int *skip, size_t n_skip)
{
	struct sc_fds_frozen z;
	int err = sc_fds_prepare(&z, 0);

	if (err)
		return err;
	sc_fds_freeze(&z);
	err = sc_fds_collect(&z, getpid(), skip, n_skip, out, n);
	sc_fds_freeze_drop(&z);
	sc_fds_frozen_free(&z);
	return err;
}
