/* SPDX-License-Identifier: MIT */
/*
 * advised.c - a process that gives its mappings their settings between two
 * checkpoints: the case where the settings the first checkpoint vouched for
 * are not the second's (core/vmflags_cache.c).
 *
 *   advised DIR
 *
 * It maps one area per setting, each a mapping of its own (a hole between
 * two), fills them and writes DIR/img.0.sckpt. Then, without changing where
 * any mapping starts or ends, it gives each area its setting with madvise()
 * over the whole of it, fills it again with other bytes, and writes
 * DIR/img.1.sckpt. Both the saving process and a restore of img.1 then print
 * each area's settings as /proc/self/smaps shows them, whether its bytes are
 * the second ones, and what a child forked then gets: the lines must match.
 */
#include <errno.h>
#include <selfckpt.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "smaps_settings.h"

#define PAGES 4

struct area {
	const char *name;
	int advice;
	char *at;
	int unsupported; /* no THP or KSM in this kernel */
};

static struct area areas[] = {
	{ "dontfork", MADV_DONTFORK },	{ "wipeonfork", MADV_WIPEONFORK },
	{ "dontdump", MADV_DONTDUMP },	{ "nohugepage", MADV_NOHUGEPAGE },
	{ "hugepage", MADV_HUGEPAGE },	{ "mergeable", MADV_MERGEABLE },
	{ "sequential", MADV_SEQUENTIAL }, { "random", MADV_RANDOM },
};
#define N_AREAS (sizeof(areas) / sizeof(areas[0]))

static const char *const shown[] = { "dc", "wf", "dd", "hg", "nh", "mg", "sr", "rr" };

static size_t len(void)
{
	return PAGES * (size_t)sysconf(_SC_PAGESIZE);
}

static void fill(const struct area *a, int round)
{
	for (size_t i = 0; i < len(); i++)
		a->at[i] = (char)(i * 13 + a->name[0] + round);
}

static int holds(const struct area *a, int round)
{
	for (size_t i = 0; i < len(); i++)
		if (a->at[i] != (char)(i * 13 + a->name[0] + round))
			return 0;
	return 1;
}

/* The settings of the mapping holding @addr, among those shown, into @out. */
static void settings(const void *addr, char *out, size_t size)
{
	smaps_settings(addr, shown, sizeof(shown) / sizeof(shown[0]), out, size);
}

static int save(const char *dir, int k)
{
	char path[4096];
	int r;

	snprintf(path, sizeof(path), "%s/img.%d.sckpt", dir, k);
	r = selfckpt_save(path);
	if (r != SELFCKPT_SAVED && r != SELFCKPT_RESTORED)
		fprintf(stderr, "advised: cannot write '%s': %s\n", path, selfckpt_last_error());
	return r;
}

static void report(const char *how)
{
	pid_t child;
	int status;

	printf("%s\n", how);
	for (size_t i = 0; i < N_AREAS; i++) {
		char s[64];

		settings(areas[i].at, s, sizeof(s));
		printf("%s:%s%s, %s\n", areas[i].name, areas[i].unsupported ? " (unsupported)" : "",
		       areas[i].unsupported ? "" : s, holds(&areas[i], 1) ? "data ok" : "DATA WRONG");
	}
	fflush(stdout);
	child = fork();
	if (child == 0)
		_exit(!areas[0].unsupported && msync(areas[0].at, len(), MS_ASYNC) == 0 ? 1 :
		      (areas[1].at[0] != 0) * 2);
	waitpid(child, &status, 0);
	printf("fork: dontfork %s, wipeonfork %s\n", WEXITSTATUS(status) & 1 ? "there" : "gone",
	       WEXITSTATUS(status) & 2 ? "kept" : "empty");
}

int main(int argc, char **argv)
{
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: advised DIR\n");
		return 2;
	}
	for (size_t i = 0; i < N_AREAS; i++) {
		char *p = mmap(NULL, len() + 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED || munmap(p + len(), 4096))
			return 2;
		areas[i].at = p;
		fill(&areas[i], 0);
	}
	if (save(argv[1], 0) != SELFCKPT_SAVED)
		return 1;
	for (size_t i = 0; i < N_AREAS; i++) {
		if (madvise(areas[i].at, len(), areas[i].advice) < 0 && errno == EINVAL)
			areas[i].unsupported = 1;
		fill(&areas[i], 1);
	}
	r = save(argv[1], 1);
	if (r != SELFCKPT_SAVED && r != SELFCKPT_RESTORED)
		return 1;
	report(r == SELFCKPT_SAVED ? "saved" : "restored");
	return 0;
}
