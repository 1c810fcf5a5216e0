/* SPDX-License-Identifier: MIT */
/*
 * guards.c - a program with guard pages (madvise(MADV_GUARD_INSTALL), Linux
 * 6.13+) in each kind of mapping that takes them: private anonymous memory
 * with data on both sides of its guards, a private and a shared mapping of
 * a file, and a MADV_WIPEONFORK mapping. Every step it tries each page of
 * each mapping (a guard page faults: SIGSEGV, caught) and checks the data of
 * the others, and notes what it found, printed at the end; the pages must stay as they were
 * across a checkpoint and a restore. Run under selfckpt-run by
 * tests/cli/test_memory.c: a restore must print the same.
 *
 *   guards DIR
 *
 * On a kernel without guard pages it prints "guard pages: not supported".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif
#define PAGES 6
#define STEPS 30

struct area {
	const char *name;
	char *at;
	unsigned guards; /* bit i: page i is a guard page */
	char fill;       /* each other page is filled with fill + its index */
};

static sigjmp_buf fault_jump;

static void on_fault(int sig)
{
	(void)sig;
	siglongjmp(fault_jump, 1);
}

/* Does reading @p fault? */
static int faults(const volatile char *p)
{
	if (sigsetjmp(fault_jump, 1))
		return 1;
	(void)*p;
	return 0;
}

static char *map_file(const char *dir, const char *name, int shared, long page)
{
	char path[512];
	int fd;
	char *m;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, PAGES * page) < 0)
		return MAP_FAILED;
	m = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE, shared ? MAP_SHARED : MAP_PRIVATE,
		 fd, 0);
	close(fd);
	return m;
}

/* Fill the pages that are not guards, then make the others guard pages. */
static int set_up(struct area *a, long page)
{
	if (a->at == MAP_FAILED)
		return -1;
	for (int i = 0; i < PAGES; i++)
		if (!(a->guards >> i & 1))
			memset(a->at + i * page, a->fill + i, (size_t)page);
	for (int i = 0; i < PAGES; i++)
		if ((a->guards >> i & 1) && madvise(a->at + i * page, (size_t)page,
						    MADV_GUARD_INSTALL) < 0)
			return -1;
	return 0;
}

/* " name:1,2 ok" (its guard pages, its data) as the pages are now. */
static void report(const struct area *a, long page)
{
	const char *sep = ":";
	int ok = 1;

	printf(" %s", a->name);
	for (int i = 0; i < PAGES; i++) {
		const char *p = a->at + i * page;

		if (faults(p)) {
			printf("%s%d", sep, i);
			sep = ",";
		} else if (p[0] != (char)(a->fill + i) || p[page - 1] != (char)(a->fill + i)) {
			ok = 0;
		}
	}
	printf(" %s", ok ? "ok" : "wrong");
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	struct sigaction sa = { .sa_handler = on_fault, .sa_flags = SA_NODEFER };
	struct timespec pause = { 0, 50 * 1000 * 1000 };
	struct area areas[4] = {
		{ "anon", NULL, 0x06, 'a' },
		{ "private", NULL, 0x02, 'p' },
		{ "shared", NULL, 0x24, 's' },
		{ "wipeonfork", NULL, 0x01, 'w' },
	};
	int n = sizeof(areas) / sizeof(areas[0]);

	if (argc != 2) {
		fprintf(stderr, "usage: guards DIR\n");
		return 64;
	}
	sigaction(SIGSEGV, &sa, NULL);
	areas[0].at = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	areas[1].at = map_file(argv[1], "private", 0, page);
	areas[2].at = map_file(argv[1], "shared", 1, page);
	areas[3].at = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (areas[3].at != MAP_FAILED)
		madvise(areas[3].at, PAGES * page, MADV_WIPEONFORK);
	for (int i = 0; i < n; i++)
		if (set_up(&areas[i], page) < 0) {
			if (errno == EINVAL) {
				printf("guard pages: not supported\n");
				return 0;
			}
			fprintf(stderr, "guards: %s: %s\n", areas[i].name, strerror(errno));
			return 1;
		}
	/* printed at the end (the output stays in the image until then) */
	for (int step = 0; step < STEPS; step++) {
		printf("%d", step);
		for (int i = 0; i < n; i++)
			report(&areas[i], page);
		printf("\n");
		nanosleep(&pause, NULL);
	}
	return 0;
}
