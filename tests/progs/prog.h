/* SPDX-License-Identifier: MIT */
/*
 * prog.h - what the round-trip test programs share (tests/core/test_roundtrip.c
 * runs them).
 *
 * Command line of every program:
 *   PROG IMAGE DIR [ARGS...]
 * IMAGE is the image to write, or "-" for the reference run, which does the
 * same work without checkpointing. DIR is a directory of the program's own
 * (files, and the snapshots below). The output on standard output must not
 * depend on the run: the test compares it bit for bit with the reference.
 *
 * Checkpoint point 1 writes IMAGE and the process kills itself with SIGKILL
 * right after, so the image is the only way forward. Point 2 is reached only
 * in a restored process, and only when the file IMAGE.again exists: it writes
 * IMAGE.2 and kills itself likewise (checkpoint a restored process again).
 *
 * Around each save the program writes DIR/snap.beforeN (right before the
 * call) and DIR/snap.afterN (right after it returns SELFCKPT_RESTORED): its
 * memory map and descriptor set, normalized, for the test to compare. They
 * are made with raw system calls and static buffers only, so that taking
 * them changes neither the map nor the descriptors.
 *
 * Work after a checkpoint that changes files outside the process must be
 * repeatable: the same image is restored several times.
 */
#ifndef SC_TEST_PROG_H
#define SC_TEST_PROG_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "selfckpt.h"

struct prog {
	const char *image; /* NULL: reference run */
	const char *dir;
	char image2[PATH_MAX];
	char again[PATH_MAX];
	int argc;          /* the ARGS */
	char **argv;
};

/* Report a broken setup (not a failed check: those go to standard output). */
__attribute__((noreturn, format(printf, 1, 2))) static void prog_die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("prog: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(3);
}

/* One check on standard output: "name: ok", or "name: FAILED (details)". */
__attribute__((format(printf, 3, 4), unused))
static void prog_check(const char *name, int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", name);
	if (ok) {
		puts("ok");
		return;
	}
	printf("FAILED (");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	puts(")");
}

static void prog_init(struct prog *p, int argc, char **argv)
{
	if (argc < 3)
		prog_die("usage: %s IMAGE|- DIR [ARGS...]", argv[0]);
	memset(p, 0, sizeof(*p));
	p->image = strcmp(argv[1], "-") ? argv[1] : NULL;
	p->dir = argv[2];
	snprintf(p->image2, sizeof(p->image2), "%s.2", argv[1]);
	snprintf(p->again, sizeof(p->again), "%s.again", argv[1]);
	p->argc = argc - 3;
	p->argv = argv + 3;
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
}

/* ---- snapshots of the memory map and the descriptors, without libc state ---- */

#define SNAP_BUF (4u << 20)
static char snap_in[SNAP_BUF], snap_out[SNAP_BUF];
static size_t snap_len;

static void snap_put(const char *s, size_t n)
{
	if (snap_len + n > SNAP_BUF)
		n = SNAP_BUF - snap_len;
	memcpy(snap_out + snap_len, s, n);
	snap_len += n;
}

static void snap_puts(const char *s)
{
	snap_put(s, strlen(s));
}

static void snap_putu(unsigned long long v, int base)
{
	char b[32];
	int i = sizeof(b);

	do {
		b[--i] = "0123456789abcdef"[v % (unsigned)base];
		v /= (unsigned)base;
	} while (v);
	snap_put(b + i, sizeof(b) - (size_t)i);
}

static size_t snap_read_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	ssize_t r;

	if (fd < 0)
		prog_die("cannot open %s: %s", path, strerror(errno));
	while ((r = read(fd, snap_in + n, SNAP_BUF - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	snap_in[n] = '\0';
	return n;
}

/* "start-end perms [offset] path": no device or inode; the offset of file mappings only. */
static void snap_maps(void)
{
	char *line = snap_in, *nl;

	snap_read_file("/proc/self/maps");
	snap_puts("# maps\n");
	for (; *line; line = nl + 1) {
		char *f[6], *s = line;
		int k;

		nl = strchr(line, '\n');
		if (!nl)
			break;
		*nl = '\0';
		for (k = 0; k < 5; k++) { /* range perms offset dev inode */
			f[k] = s;
			s = strchr(s, ' ');
			if (!s)
				prog_die("cannot parse maps line '%s'", line);
			*s++ = '\0';
		}
		while (*s == ' ')
			s++;
		f[5] = s;
		snap_puts(f[0]);
		snap_puts(" ");
		snap_puts(f[1]);
		if (f[5][0] == '/') {
			snap_puts(" ");
			snap_puts(f[2]);
		}
		if (f[5][0]) {
			snap_puts(" ");
			snap_puts(f[5]);
		}
		snap_puts("\n");
	}
}

/* Inode numbers of pipes, sockets and anonymous inodes become their order of appearance. */
static char snap_seen[64][64];
static int snap_n_seen;

static void snap_target(const char *t)
{
	const char *br = strchr(t, '[');
	int i;

	if (t[0] == '/' || !br) {
		snap_puts(t);
		return;
	}
	for (i = 0; i < snap_n_seen && strcmp(snap_seen[i], t); i++)
		;
	if (i == snap_n_seen && i < 64) {
		size_t tl = strnlen(t, sizeof(snap_seen[0]) - 1);

		memcpy(snap_seen[i], t, tl);
		snap_seen[i][tl] = '\0';
		snap_n_seen++;
	}
	snap_put(t, (size_t)(br - t));
	snap_puts("#");
	snap_putu((unsigned)i, 10);
}

struct snap_dirent {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

static int snap_fd_list(int *fds, int max)
{
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;
	long got;

	if (dir < 0)
		prog_die("cannot open /proc/self/fd: %s", strerror(errno));
	while ((got = syscall(SYS_getdents64, dir, snap_in, 65536)) > 0) {
		for (long off = 0; off < got;) {
			struct snap_dirent *d = (struct snap_dirent *)(snap_in + off);

			off += d->reclen;
			if (d->name[0] >= '0' && d->name[0] <= '9' && atoi(d->name) != dir &&
			    n < max)
				fds[n++] = atoi(d->name);
		}
	}
	close(dir);
	return n;
}

/* "fd target flags=.. cloexec=.. pos=..", in descriptor order. */
static void snap_fds(void)
{
	int fds[1024], n = snap_fd_list(fds, 1024);

	snap_puts("# fds\n");
	snap_n_seen = 0;
	for (int i = 0; i < n; i++) /* getdents order is not promised: sort */
		for (int j = i + 1; j < n; j++)
			if (fds[j] < fds[i]) {
				int t = fds[i];

				fds[i] = fds[j];
				fds[j] = t;
			}
	for (int i = 0; i < n; i++) {
		char path[64], target[PATH_MAX];
		ssize_t len;
		off_t pos;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[i]);
		len = readlink(path, target, sizeof(target) - 1);
		target[len < 0 ? 0 : len] = '\0';
		snap_putu((unsigned)fds[i], 10);
		snap_puts(" ");
		snap_target(target);
		snap_puts(" flags=0x");
		snap_putu((unsigned)fcntl(fds[i], F_GETFL), 16);
		snap_puts(" cloexec=");
		snap_putu((unsigned)(fcntl(fds[i], F_GETFD) & FD_CLOEXEC), 10);
		pos = lseek(fds[i], 0, SEEK_CUR);
		snap_puts(" pos=");
		if (pos < 0)
			snap_puts("-");
		else
			snap_putu((unsigned long long)pos, 10);
		snap_puts("\n");
	}
}

static void prog_snapshot(const struct prog *p, const char *what, int point)
{
	char path[PATH_MAX];
	int saved = errno, fd;

	snap_len = 0;
	snap_maps();
	snap_fds();
	snprintf(path, sizeof(path), "%s/snap.%s%d", p->dir, what, point);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, snap_out, snap_len) != (ssize_t)snap_len)
		prog_die("cannot write %s: %s", path, strerror(errno));
	close(fd);
	errno = saved;
}

/* ---- the checkpoint ---- */

/*
 * Checkpoint point @point (1 or 2): see the top of this file. errno is kept
 * as selfckpt_save() leaves it, so a program can check that it survives.
 */
static void prog_checkpoint(struct prog *p, int point)
{
	const char *image = point == 1 ? p->image : p->image2;
	int r, e;

	fflush(stdout);
	if (!p->image || (point == 2 && access(p->again, F_OK) != 0))
		return;
	prog_snapshot(p, "before", point);
	r = selfckpt_save(image);
	e = errno;
	if (r == SELFCKPT_SAVED) {
		raise(SIGKILL);
		_exit(4);
	}
	if (r != SELFCKPT_RESTORED)
		prog_die("selfckpt_save('%s') returned %d: %s", image, r, selfckpt_last_error());
	prog_snapshot(p, "after", point);
	errno = e;
}

#endif /* SC_TEST_PROG_H */
