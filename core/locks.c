/* SPDX-License-Identifier: MIT */
/*
 * locks.c - file locks: from the fdinfo copies the freeze made (the "lock:"
 * lines of each locked open file description), into the locks record, and
 * back at restore (sc_locks.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/sc_locks.h"
#include "format/sc_array.h"
#include "format/sc_log.h"


/* The copy of @d's fdinfo that snapshot @pid holds, NUL-terminated; NULL on failure. */
static char *read_copy(pid_t pid, const struct sc_fd_instant *d)
{
	char proc[64], *text = malloc((size_t)d->locks_len + 1);
	int fd;
	ssize_t got = 0, r = 1;

	snprintf(proc, sizeof(proc), "/proc/%d/fd/%d", (int)pid, d->locks);
	fd = open(proc, O_RDONLY | O_CLOEXEC);
	while (text && fd >= 0 && got < d->locks_len &&
	       (r = pread(fd, text + got, (size_t)(d->locks_len - got), d->locks_off + got)) > 0)
		got += r;
	if (fd >= 0)
		close(fd);
	if (!text || fd < 0 || got != d->locks_len) {
		free(text);
		return NULL;
	}
	text[got] = '\0';
	return text;
}

static int kind_of(const char *word)
{
	static const struct {
		const char *word;
		int kind;
	} kinds[] = { { "POSIX", SC_LOCK_POSIX }, { "OFDLCK", SC_LOCK_OFD },
		      { "FLOCK", SC_LOCK_FLOCK }, { "LEASE", SC_LOCK_LEASE } };

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(word, kinds[i].word))
			return kinds[i].kind;
	return 0;
}

/* One "lock:" line of @fd's fdinfo into @l; 0, or -EINVAL for one this version cannot take. */
static int parse_line(const char *line, int fd, struct sc_lock *l)
{
	char kind[16], adv[16], mode[16], end[32];
	unsigned long long start;

	if (strstr(line, "->"))
		return 1; /* a lock this process waits for: not one it holds */
	if (sscanf(line, "lock: %*d: %15s %15s %15s %*d %*s %llu %31s", kind, adv, mode, &start,
		   end) != 5)
		return -EINVAL;
	l->fd = fd;
	l->kind = (uint32_t)kind_of(kind);
	l->type = !strcmp(mode, "WRITE") ? SC_LOCK_WRITE : SC_LOCK_READ;
	l->start = start;
	l->end = !strcmp(end, "EOF") ? SC_LOCK_TO_EOF : strtoull(end, NULL, 10);
	/* a lease being broken (BREAKING) is on its way out: not one to take again */
	if (!l->kind || strcmp(adv, l->kind == SC_LOCK_LEASE ? "ACTIVE" : "ADVISORY") ||
	    (strcmp(mode, "WRITE") && strcmp(mode, "READ")))
		return -EINVAL;
	return 0;
}

static int add_locks(const char *text, int fd, struct sc_lock **out, size_t *n, size_t *cap)
{
	for (const char *l = strstr(text, "lock:"); l; l = strstr(l + 1, "\nlock:")) {
		struct sc_lock lk;
		int r;

		if (*l == '\n')
			l++;
		r = parse_line(l, fd, &lk);
		if (r < 0)
			return sc_err(SELFCKPT_EHOST, "descriptor %d holds a lock this version cannot "
				      "take again ('%.60s'), so no image is written", fd, l);
		if (r > 0)
			continue;
		if (sc_grow((void **)out, cap, *n + 1, sizeof(**out)))
			return sc_err(ENOMEM, "out of memory recording file locks");
		(*out)[(*n)++] = lk;
	}
	return 0;
}

int sc_locks_collect(const struct sc_fds_frozen *z, pid_t pid, struct sc_lock **out, size_t *n)
{
	size_t cap = 0;
	int err = 0;

	*out = NULL;
	*n = 0;
	for (int i = 0; i < z->n && !err; i++) {
		const struct sc_fd_instant *d = &z->fds[i];
		char *text;

		if (d->locks < 0)
			continue;
		text = read_copy(pid, d);
		if (!text)
			err = sc_err(EIO, "cannot read the locks of descriptor %d", d->fd);
		else
			err = add_locks(text, d->fd, out, n, &cap);
		free(text);
		/* the restore closes a description in flight before it takes locks again */
		if (!err && d->in_flight && *n && (*out)[*n - 1].fd == d->fd)
			err = sc_err(SELFCKPT_EHOST, "a file that only a message queued on a socket "
				     "holds (SCM_RIGHTS) is locked through it: the lock cannot come back, "
				     "so no image is written");
	}
	if (err) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return err;
}

static const char *const kind_names[] = { "", "POSIX lock", "OFD lock", "flock() lock", "lease" };

/* Take @l again on its descriptor; 0 or -errno. */
static int take(const struct sc_lock *l)
{
	struct flock fl = { .l_type = l->type == SC_LOCK_WRITE ? F_WRLCK : F_RDLCK,
			    .l_whence = SEEK_SET, .l_start = (off_t)l->start,
			    .l_len = l->end == SC_LOCK_TO_EOF ? 0 : (off_t)(l->end - l->start + 1) };
	int r;

	switch (l->kind) {
	case SC_LOCK_POSIX:
		r = fcntl(l->fd, F_SETLK, &fl);
		break;
	case SC_LOCK_OFD:
		r = fcntl(l->fd, F_OFD_SETLK, &fl);
		break;
	case SC_LOCK_FLOCK:
		r = flock(l->fd, (l->type == SC_LOCK_WRITE ? LOCK_EX : LOCK_SH) | LOCK_NB);
		break;
	default:
		r = fcntl(l->fd, F_SETLEASE, l->type == SC_LOCK_WRITE ? F_WRLCK : F_RDLCK);
		break;
	}
	return r < 0 ? -errno : 0;
}

int sc_locks_restore(const struct sc_lock *locks, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct sc_lock *l = &locks[i];
		int err = take(l);
		char range[64];

		if (!err)
			continue;
		if (l->end == SC_LOCK_TO_EOF)
			snprintf(range, sizeof(range), "bytes %llu to the end",
				 (unsigned long long)l->start);
		else
			snprintf(range, sizeof(range), "bytes %llu to %llu",
				 (unsigned long long)l->start, (unsigned long long)l->end);
		return sc_err(-err, "cannot take the %s %s of descriptor %d (%s) again: %s%s",
			      l->type == SC_LOCK_WRITE ? "write" : "read", kind_names[l->kind],
			      l->fd, range, strerror(-err),
			      err == -EAGAIN || err == -EACCES ? " (another process holds it now)" : "");
	}
	return 0;
}
