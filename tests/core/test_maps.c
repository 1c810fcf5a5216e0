/* SPDX-License-Identifier: MIT */
/*
 * sc_maps_read() on this very process: the kernel's special mappings, the
 * test binary, and mappings made here with known bounds, protections, sharing
 * and paths (deleted files, memfds, names with spaces).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/sc_core.h"
#include "format/sc_log.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

static char tmpdir[64];
static struct sc_vma *maps;
static size_t maps_n;
static long page;

static void setup(void)
{
	sc_log_set_level(SC_LOG_NONE);
	page = sysconf(_SC_PAGESIZE);
	strcpy(tmpdir, "/tmp/sc-maps-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];

	sc_maps_free(maps, maps_n);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

static void read_maps(void)
{
	sc_maps_free(maps, maps_n);
	maps = NULL;
	maps_n = 0;
	cr_assert_eq(sc_maps_read(0, &maps, &maps_n), 0);
	cr_assert_gt(maps_n, 0);
}

/* The entry that contains @addr, or NULL. */
static const struct sc_vma *vma_at(const void *addr)
{
	uint64_t a = (uintptr_t)addr;

	for (size_t i = 0; i < maps_n; i++)
		if (maps[i].start <= a && a < maps[i].end)
			return &maps[i];
	return NULL;
}

static const struct sc_vma *vma_named(const char *path)
{
	for (size_t i = 0; i < maps_n; i++)
		if (strcmp(maps[i].path, path) == 0)
			return &maps[i];
	return NULL;
}

/* Reserves 3 pages with PROT_NONE guards around the middle one, so it never merges. */
static char *guarded(int prot, int flags, int fd, off_t off)
{
	char *r = mmap(NULL, 5 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *m;

	cr_assert_neq(r, MAP_FAILED);
	m = mmap(r + page, 3 * page, prot, flags | MAP_FIXED, fd, off);
	cr_assert_eq(m, r + page, "mmap: %s", strerror(errno));
	return m;
}

/* Writes @pages pages of non-zero bytes to @path. */
static int make_file(const char *path, int pages)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	char *buf = malloc(page);

	cr_assert_geq(fd, 0, "open '%s': %s", path, strerror(errno));
	memset(buf, 0x5a, page);
	for (int i = 0; i < pages; i++)
		cr_assert_eq(write(fd, buf, page), page);
	free(buf);
	return fd;
}

Test(core, maps_kernel_specials, .init = setup, .fini = teardown)
{
	char *brk_area = sbrk(16 * page);
	const struct sc_vma *v;

	cr_assert_neq(brk_area, (void *)-1);
	brk_area[0] = 1;
	read_maps();
	v = vma_named("[stack]");
	cr_assert_not_null(v);
	cr_assert_eq(v->kind, SC_VMA_STACK);
	cr_assert_eq(v->prot, PROT_READ | PROT_WRITE);
	v = vma_named("[heap]");
	cr_assert_not_null(v);
	cr_assert_eq(v->kind, SC_VMA_HEAP);
	cr_assert_eq(v, vma_at(brk_area));
	v = vma_named("[vdso]");
	cr_assert_not_null(v);
	cr_assert_eq(v->kind, SC_VMA_VDSO);
	cr_assert_eq(v->prot, PROT_READ | PROT_EXEC);
	v = vma_named("[vvar]");
	cr_assert_not_null(v);
	cr_assert_eq(v->kind, SC_VMA_VVAR);
	v = vma_named("[vsyscall]");
	if (v)
		cr_assert_eq(v->kind, SC_VMA_VSYSCALL);
	v = vma_named("[vvar_vclock]");
	if (v)
		cr_assert_eq(v->kind, SC_VMA_VVAR_VCLOCK);
}

Test(core, maps_sorted_and_disjoint, .init = setup, .fini = teardown)
{
	read_maps();
	for (size_t i = 0; i < maps_n; i++) {
		cr_assert_lt(maps[i].start, maps[i].end);
		cr_assert_eq(maps[i].start % page, 0);
		cr_assert_not_null(maps[i].path);
		if (i)
			cr_assert_leq(maps[i - 1].end, maps[i].start);
	}
}

Test(core, maps_own_binary_is_file, .init = setup, .fini = teardown)
{
	char exe[PATH_MAX], line[PATH_MAX + 128], perms[8];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	unsigned long long start, end, off, ino;
	unsigned int major, minor;
	const struct sc_vma *v;
	FILE *f;

	cr_assert_gt(len, 0);
	exe[len] = '\0';
	read_maps();
	v = vma_at((void *)(uintptr_t)&vma_at);
	cr_assert_not_null(v);
	cr_assert_str_eq(v->path, exe);
	cr_assert_eq(v->kind, SC_VMA_FILE);
	cr_assert_eq(v->prot, PROT_READ | PROT_EXEC);
	cr_assert_eq(v->flags, 0);
	/* The same line, parsed independently. */
	f = fopen("/proc/self/maps", "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		cr_assert_eq(sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &start, &end, perms,
				    &off, &major, &minor, &ino), 7);
		if (start == v->start)
			break;
	}
	fclose(f);
	cr_assert_eq(start, v->start);
	cr_assert_eq(end, v->end);
	cr_assert_str_eq(perms, "r-xp");
	cr_assert_eq(off, v->offset);
	cr_assert_eq(makedev(major, minor), v->dev);
	cr_assert_eq(ino, v->inode);
	cr_assert_neq(ino, 0);
}

Test(core, maps_anon_exact_bounds_and_prot, .init = setup, .fini = teardown)
{
	char *m = guarded(PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const struct sc_vma *v;

	read_maps();
	v = vma_at(m + page);
	cr_assert_not_null(v);
	cr_assert_eq(v->start, (uintptr_t)m);
	cr_assert_eq(v->end, (uintptr_t)m + 3 * page);
	cr_assert_eq(v->prot, PROT_READ | PROT_EXEC);
	cr_assert_eq(v->flags, 0);
	cr_assert_eq(v->kind, SC_VMA_ANON);
	cr_assert_str_eq(v->path, "");
	cr_assert_eq(v->inode, 0);
	cr_assert_eq(v->dev, 0);
	v = vma_at(m - 1);
	cr_assert_not_null(v);
	cr_assert_eq(v->prot, 0);
	cr_assert_eq(v->end, (uintptr_t)m);
}

Test(core, maps_shared_anon, .init = setup, .fini = teardown)
{
	char *m = guarded(PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	const struct sc_vma *v;

	m[0] = 1;
	read_maps();
	v = vma_at(m);
	cr_assert_not_null(v);
	cr_assert_eq(v->start, (uintptr_t)m);
	cr_assert_eq(v->end, (uintptr_t)m + 3 * page);
	cr_assert_eq(v->prot, PROT_READ | PROT_WRITE);
	cr_assert_eq(v->flags, SC_VMA_SHARED);
	cr_assert_eq(v->kind, SC_VMA_ANON);
	cr_assert_str_eq(v->path, "/dev/zero");
}

Test(core, maps_private_dev_zero_is_anon, .init = setup, .fini = teardown)
{
	int fd = open("/dev/zero", O_RDONLY);
	char *m;
	const struct sc_vma *v;

	cr_assert_geq(fd, 0);
	m = guarded(PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	read_maps();
	v = vma_at(m);
	cr_assert_not_null(v);
	cr_assert_eq(v->flags, 0);
	cr_assert_eq(v->kind, SC_VMA_ANON);
}

Test(core, maps_deleted_file, .init = setup, .fini = teardown)
{
	char path[128];
	struct stat st;
	int fd;
	char *m;
	const struct sc_vma *v;

	snprintf(path, sizeof(path), "%s/gone", tmpdir);
	fd = make_file(path, 4);
	cr_assert_eq(fstat(fd, &st), 0);
	m = guarded(PROT_READ, MAP_PRIVATE, fd, page);
	close(fd);
	cr_assert_eq(unlink(path), 0);
	read_maps();
	v = vma_at(m);
	cr_assert_not_null(v);
	cr_assert_eq(v->kind, SC_VMA_DELETED);
	cr_assert_str_eq(v->path, path);
	cr_assert_eq(v->offset, (uint64_t)page);
	cr_assert_eq(v->inode, (uint64_t)st.st_ino);
	cr_assert_eq(v->prot, PROT_READ);
	cr_assert_eq(v->flags, 0);
}

/* Maps @name in tmpdir shared and checks what the maps say of it. */
static void check_named_file(const char *name, bool unlink_it, enum sc_vma_kind kind)
{
	char path[160];
	struct stat st;
	int fd;
	char *m;
	const struct sc_vma *v;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	fd = make_file(path, 4);
	cr_assert_eq(fstat(fd, &st), 0);
	m = guarded(PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (unlink_it)
		cr_assert_eq(unlink(path), 0);
	read_maps();
	v = vma_at(m);
	cr_assert_not_null(v);
	cr_assert_eq(v->kind, kind, "'%s': kind %s", name, sc_vma_kind_name(v->kind));
	cr_assert_str_eq(v->path, path);
	cr_assert_eq(v->flags, SC_VMA_SHARED);
	cr_assert_eq(v->prot, PROT_READ | PROT_WRITE);
	cr_assert_eq(v->offset, 0);
	cr_assert_eq(v->inode, (uint64_t)st.st_ino);
}

Test(core, maps_file_names_with_spaces, .init = setup, .fini = teardown)
{
	check_named_file(" a file  with spaces ", false, SC_VMA_FILE);
	/* A name that really ends in " (deleted)", of a file that exists. */
	check_named_file("b (deleted)", false, SC_VMA_FILE);
	check_named_file("c file (deleted)", true, SC_VMA_DELETED);
}

Test(core, maps_memfd_is_deleted, .init = setup, .fini = teardown)
{
	int fd = memfd_create("sc test", 0);
	char *m;
	const struct sc_vma *v;

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 3 * page), 0);
	m = guarded(PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	read_maps();
	v = vma_at(m);
	cr_assert_not_null(v);
	cr_assert_eq(v->kind, SC_VMA_DELETED);
	cr_assert_str_eq(v->path, "/memfd:sc test");
	cr_assert_eq(v->flags, SC_VMA_SHARED);
}

Test(core, maps_named_anon, .init = setup, .fini = teardown)
{
	char *m = guarded(PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const struct sc_vma *v;

	if (prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, m, 3 * page, "sc-test") != 0)
		cr_skip_test("PR_SET_VMA_ANON_NAME unsupported: %s", strerror(errno));
	read_maps();
	v = vma_at(m);
	cr_assert_not_null(v);
	cr_assert_eq(v->kind, SC_VMA_ANON);
	cr_assert_str_eq(v->path, "[anon:sc-test]");
	cr_assert_eq(v->start, (uintptr_t)m);
}

Test(core, maps_other_pid, .init = setup, .fini = teardown)
{
	struct sc_vma *v = NULL;
	size_t n = 0;

	cr_assert_eq(sc_maps_read(getpid(), &v, &n), 0);
	cr_assert_gt(n, 0);
	sc_maps_free(v, n);
	cr_assert_eq(sc_maps_read(INT_MAX, &v, &n), -ENOENT);
	cr_assert_null(v);
	cr_assert_eq(n, 0);
	sc_maps_free(NULL, 0);
}

Test(core, maps_kind_names, .init = setup, .fini = teardown)
{
	cr_assert_str_eq(sc_vma_kind_name(SC_VMA_ANON), "anon");
	cr_assert_str_eq(sc_vma_kind_name(SC_VMA_FILE), "file");
	cr_assert_str_eq(sc_vma_kind_name(SC_VMA_DELETED), "deleted");
	cr_assert_str_eq(sc_vma_kind_name(SC_VMA_VVAR_VCLOCK), "vvar_vclock");
	cr_assert_str_eq(sc_vma_kind_name(SC_VMA_SPECIAL), "special");
	cr_assert_str_eq(sc_vma_kind_name((enum sc_vma_kind)99), "unknown");
}
