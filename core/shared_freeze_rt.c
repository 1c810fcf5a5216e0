/* SPDX-License-Identifier: MIT */
/*
 * shared_freeze_rt.c - copy the shared mappings an image stores at the instant.
 *
 * Stage contract: sc_shared_freeze() runs in the checkpointing thread while
 * every other thread is stopped (possibly inside malloc or stdio), before the
 * snapshot is cloned. Raw system calls, and the buffers and staging area that
 * sc_shared_prepare() mapped, only: no malloc, no locks, no errno. Memory is
 * copied with process_vm_readv() on this very process, which fails where a
 * plain copy would fault (a mapping that reaches past the end of its file).
 * sc_shared_stores_file() is also called by the writer, with libc around.
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>

#include "core/sc_core.h"
#include "core/sc_sys.h"
#include "core/shared_freeze.h"

#define PAGE 4096ull
#define PM_PRESENT (1ull << 63)
#define PM_SWAPPED (1ull << 62)
#define PAGEMAP_BATCH 4096 /* entries per read */

bool sc_shared_stores_file(const char *path, uint64_t offset, uint64_t len)
{
	struct statfs fs;
	struct stat st;

	if (sc_sys2(SYS_stat, (long)path, (long)&st) < 0 || (uint64_t)st.st_size < offset + len)
		return false;
	if (len <= SC_SHARED_FILE_KEEP)
		return true;
	return sc_sys2(SYS_statfs, (long)path, (long)&fs) == 0 &&
	       (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC);
}

static int starts_with(const char *s, const char *prefix)
{
	while (*prefix)
		if (*s++ != *prefix++)
			return 0;
	return 1;
}

static int ends_with(const char *s, const char *suffix)
{
	const char *a = s, *b = suffix;

	while (*a)
		a++;
	while (*b)
		b++;
	while (b > suffix && a > s)
		if (*--a != *--b)
			return 0;
	return b == suffix;
}

/* Copy [addr, addr + len) of this process to @to; 0 or -1 where it could not all be read. */
static int copy_range(uint64_t to, uint64_t addr, uint64_t len, long pid)
{
	while (len) {
		struct iovec local = { (void *)to, len }, remote = { (void *)addr, len };
		long n = sc_sys6(SYS_process_vm_readv, pid, (long)&local, 1, (long)&remote, 1, 0);

		if (n <= 0)
			return -1;
		to += (uint64_t)n;
		addr += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

/*
 * Shared anonymous memory: only the pages in memory or in swap hold data; the
 * others were never touched, are zero, and stay zero in the copy, which
 * costs nothing for them.
 */
static int copy_resident(struct sc_shared_frozen *z, uint64_t to, uint64_t start, uint64_t end)
{
	uint64_t *pm = (uint64_t *)z->pagemap_buf;
	long fd = sc_sys4(SYS_openat, AT_FDCWD, (long)"/proc/self/pagemap", O_RDONLY | O_CLOEXEC,
			  0);
	int err = fd < 0 ? -1 : 0;

	for (uint64_t at = start; !err && at < end;) {
		uint64_t pages = (end - at) / PAGE < PAGEMAP_BATCH ? (end - at) / PAGE : PAGEMAP_BATCH;
		long got = sc_sys4(SYS_pread64, fd, (long)pm, (long)(pages * 8), (long)(at / PAGE * 8));

		if (got != (long)(pages * 8)) {
			err = -1;
			break;
		}
		for (uint64_t i = 0; !err && i < pages;) {
			uint64_t j = i;

			while (j < pages && (pm[j] & (PM_PRESENT | PM_SWAPPED)))
				j++;
			if (j > i) /* resident: a plain copy cannot fault */
				sc_copy_bytes(to + (at - start) + i * PAGE, at + i * PAGE,
					      (j - i) * PAGE);
			i = j + 1;
		}
		at += pages * PAGE;
	}
	if (fd >= 0)
		sc_sys1(SYS_close, fd);
	return err;
}

enum what { SKIP, RESIDENT, WHOLE };

/* Which shared mappings an image stores, and how they are copied (segments.c agrees). */
static enum what classify(const char *path, uint64_t start, uint64_t end, uint64_t offset)
{
	/* a System V segment is copied whole by sysv_freeze_rt.c, attached or not */
	if (sc_skip_covers(start, end) || starts_with(path, "/SYSV"))
		return SKIP;
	if (!*path || starts_with(path, "/dev/zero") || starts_with(path, "[anon_shmem"))
		return RESIDENT;
	if (*path == '[' || (starts_with(path, "/dev/") && !starts_with(path, "/dev/shm/")))
		return SKIP; /* devices are the CUDA layer's, or nobody's */
	if (ends_with(path, " (deleted)"))
		return WHOLE; /* a memfd or an unlinked file: every page is stored */
	return sc_shared_stores_file(path, offset, end - start) ? WHOLE : SKIP;
}

static void copy_one(struct sc_shared_frozen *z, const char *path, uint64_t start, uint64_t end,
		     uint64_t offset, long pid)
{
	enum what w = classify(path, start, end, offset);
	struct sc_shared_copy *c;
	uint64_t to;
	int err;

	if (w == SKIP)
		return;
	if (z->measuring) {
		z->used += end - start;
		z->n++;
		return;
	}
	if (z->n == z->cap || z->used + (end - start) > z->stage_len) {
		z->missed++;
		return;
	}
	to = z->stage + z->used;
	err = w == WHOLE ? copy_range(to, start, end - start, pid)
			 : copy_resident(z, to, start, end);
	if (err) {
		z->missed++;
		return;
	}
	z->used += end - start;
	c = &z->c[z->n++];
	c->start = start;
	c->end = end;
	c->copy = to;
}

/* One line of /proc/self/maps: "start-end perms offset dev inode   path". */
static void parse_line(struct sc_shared_frozen *z, char *line, long pid)
{
	const char *p = line;
	uint64_t start = sc_parse_hex(&p), end, offset;
	char perms[4];

	if (*p++ != '-')
		return;
	end = sc_parse_hex(&p);
	if (*p++ != ' ')
		return;
	for (int i = 0; i < 4; i++)
		perms[i] = *p ? *p++ : '-';
	if (*p++ != ' ' || perms[3] != 's' || perms[0] != 'r')
		return;
	offset = sc_parse_hex(&p);
	for (int field = 0; field < 2 && *p; field++) { /* dev, inode */
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')
			p++;
	}
	while (*p == ' ')
		p++;
	copy_one(z, p, start, end, offset, pid);
}

static void parse_maps(struct sc_shared_frozen *z)
{
	long pid = sc_sys0(SYS_getpid);
	long len = sc_proc_read("/proc/self/maps", z->maps, z->maps_size);

	z->n = 0;
	z->used = 0;
	z->missed = 0;
	if (len < 0 || len >= z->maps_size - 1)
		z->missed++; /* more mappings than prepared for: those past the end are not copied */
	if (len < 0)
		return;
	for (char *line = z->maps, *nl; *line; line = nl + 1) {
		for (nl = line; *nl && *nl != '\n'; nl++)
			;
		if (!*nl)
			break; /* a line cut short */
		*nl = '\0';
		parse_line(z, line, pid);
	}
}

void sc_shared_freeze(struct sc_shared_frozen *z)
{
	z->measuring = false;
	parse_maps(z);
}

void sc_shared_measure(struct sc_shared_frozen *z)
{
	z->measuring = true;
	parse_maps(z);
	z->measuring = false;
}
