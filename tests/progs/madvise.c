/* SPDX-License-Identifier: MIT */
/*
 * madvise.c - a program with a mapping for each memory setting a restore
 * gives back (format 1.3): no swap reserved or reserved, MADV_DONTFORK and
 * MADV_WIPEONFORK with data in them, mlock() and mlock2(MLOCK_ONFAULT),
 * MADV_DONTDUMP, MADV_HUGEPAGE, MADV_NOHUGEPAGE, MADV_MERGEABLE,
 * MADV_SEQUENTIAL, MADV_RANDOM, MAP_DROPPABLE, a shared mapping of a
 * file opened for writing but mapped read-only, and one of the same file
 * opened read-only, which shows no setting at all. It waits about a second,
 * then prints each mapping's settings as /proc/self/smaps shows them, checks
 * its data, makes the shared mapping writable and writes through it, and
 * forks to see what a child gets. Run under selfckpt-run by
 * tests/cli/test_objects.c: a restore must print the same.
 * With "sealed" as its argument, it seals a mapping (mseal) and sleeps: a
 * checkpoint must refuse the image, naming the mapping.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "smaps_settings.h"

#ifndef MAP_DROPPABLE
#define MAP_DROPPABLE 0x08
#endif
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif
#define PAGES 2

struct area {
	const char *name;
	int map_flags, advice; /* advice -1: none; -2: mlock; -3: mlock2(MLOCK_ONFAULT) */
	int data;              /* filled with a pattern that must come back */
	char *at;
	int unsupported;
};

#define AREA(n, f, a, d) { .name = n, .map_flags = f, .advice = a, .data = d }

static struct area areas[] = {
	AREA("plain", MAP_PRIVATE, -1, 1),
	AREA("noreserve", MAP_PRIVATE | MAP_NORESERVE, -1, 1),
	AREA("dontfork", MAP_PRIVATE, MADV_DONTFORK, 1),
	AREA("wipeonfork", MAP_PRIVATE, MADV_WIPEONFORK, 1),
	AREA("locked", MAP_PRIVATE, -2, 1),
	AREA("lockonfault", MAP_PRIVATE, -3, 0),
	AREA("dontdump", MAP_PRIVATE, MADV_DONTDUMP, 1),
	AREA("hugepage", MAP_PRIVATE, MADV_HUGEPAGE, 0),
	AREA("nohugepage", MAP_PRIVATE, MADV_NOHUGEPAGE, 1),
	AREA("mergeable", MAP_PRIVATE, MADV_MERGEABLE, 1),
	AREA("sequential", MAP_PRIVATE, MADV_SEQUENTIAL, 1),
	AREA("random", MAP_PRIVATE, MADV_RANDOM, 0),
	AREA("droppable", MAP_DROPPABLE, -1, 0),
};
#define N_AREAS (sizeof(areas) / sizeof(areas[0]))

static const char *const shown[] = { "nr", "lo", "lf", "dc", "wf", "dd", "hg", "nh",
				      "mg", "sr", "rr", "dp", "mw" };

/* The settings of the mapping holding @addr, among those shown, into @out. */
static void settings(const void *addr, char *out, size_t size)
{
	smaps_settings(addr, shown, sizeof(shown) / sizeof(shown[0]), out, size);
}

static int make_area(struct area *a, long page)
{
	int r = 0;

	a->at = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE, a->map_flags | MAP_ANONYMOUS,
		     -1, 0);
	if (a->at == MAP_FAILED) {
		a->at = NULL;
		a->unsupported = 1; /* MAP_DROPPABLE before Linux 6.11 */
		return 0;
	}
	if (a->advice >= 0)
		r = madvise(a->at, PAGES * page, a->advice);
	else if (a->advice == -2)
		r = mlock(a->at, PAGES * page);
	else if (a->advice == -3)
		r = (int)syscall(SYS_mlock2, a->at, PAGES * page, MLOCK_ONFAULT);
	if (r < 0 && errno == EINVAL)
		a->unsupported = 1; /* no THP or KSM in this kernel */
	else if (r < 0)
		return -1;
	for (long i = 0; a->data && i < PAGES * page; i++)
		a->at[i] = (char)(i * 7 + a->name[0]);
	return 0;
}

static int data_ok(const struct area *a, long page)
{
	for (long i = 0; a->data && i < PAGES * page; i++)
		if (a->at[i] != (char)(i * 7 + a->name[0]))
			return 0;
	return 1;
}

/* In a child: is the MADV_DONTFORK mapping gone and the MADV_WIPEONFORK one empty? */
static const char *what_a_child_gets(long page)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		unsigned char vec[PAGES];
		int gone = mincore(areas[2].at, PAGES * page, vec) < 0 && errno == ENOMEM;
		int wiped = areas[3].at[0] == 0 && areas[3].at[page] == 0;

		_exit(gone && wiped ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return "no child";
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "dontfork gone, wipeonfork empty"
							       : "dontfork or wipeonfork wrong";
}

/* A file opened for writing, mapped shared and read-only: made writable later. */
static char *shared_file(const char *dir, long page, int *fd)
{
	char path[4096];
	char *at;

	snprintf(path, sizeof(path), "%s/shared", dir);
	*fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (*fd < 0 || ftruncate(*fd, page) < 0)
		return NULL;
	at = mmap(NULL, page, PROT_READ, MAP_SHARED, *fd, 0);
	return at == MAP_FAILED ? NULL : at;
}

/* The same file opened read-only and mapped shared: no setting shown at all (not even mw). */
static char *read_only_file(const char *dir, long page)
{
	char path[4096];
	int fd;
	char *at;

	snprintf(path, sizeof(path), "%s/shared", dir);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	at = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	return at == MAP_FAILED ? NULL : at;
}

static int sealed(long page)
{
	char *at = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (at == MAP_FAILED || syscall(462 /* mseal */, at, page, 0) < 0)
		return 2;
	printf("sealed at %p\n", (void *)at);
	fflush(stdout);
	for (int i = 0; i < 100; i++)
		usleep(20000);
	return 0;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	char set[128], c = 0;
	char *file, *ro;
	int fd;

	if (argc == 2 && !strcmp(argv[1], "sealed"))
		return sealed(page);
	if (argc != 2)
		return 2;
	for (size_t i = 0; i < N_AREAS; i++)
		if (make_area(&areas[i], page) < 0)
			return 2;
	file = shared_file(argv[1], page, &fd);
	ro = file ? read_only_file(argv[1], page) : NULL;
	if (!ro)
		return 2;
	for (int i = 0; i < 50; i++)
		usleep(20000); /* a signal ends a sleep early: wait in steps */
	for (size_t i = 0; i < N_AREAS; i++) {
		if (areas[i].unsupported) {
			printf("%s: unsupported here\n", areas[i].name);
			continue;
		}
		settings(areas[i].at, set, sizeof(set));
		printf("%s:%s, data %s\n", areas[i].name, set, data_ok(&areas[i], page) ? "ok"
											: "changed");
	}
	settings(file, set, sizeof(set));
	printf("shared file:%s\n", set);
	settings(ro, set, sizeof(set));
	printf("read-only shared file:%s\n", set);
	if (mprotect(file, page, PROT_READ | PROT_WRITE) < 0) {
		printf("shared file: mprotect: %s\n", strerror(errno));
	} else {
		file[0] = 'w';
		printf("shared file: written through the mapping: %s\n",
		       pread(fd, &c, 1, 0) == 1 && c == 'w' ? "yes" : "no");
	}
	printf("fork: %s\n", what_a_child_gets(page));
	return 0;
}
