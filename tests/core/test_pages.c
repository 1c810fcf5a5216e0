/* SPDX-License-Identifier: MIT */
/*
 * sc_pages_scan() and sc_page_is_zero(): residency runs of anonymous, private
 * file and huge sparse mappings, exact to the page, from the PAGEMAP_SCAN
 * ioctl and from the old pagemap interface (SELFCKPT_NO_PAGEMAP_SCAN=1).
 *
 * Transparent huge pages (of any size) would fault in more than the page
 * touched, so every anonymous mapping here is MADV_NOHUGEPAGE.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compress/sc_compress.h"
#include "core/sc_core.h"
#include "core/sc_settings.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"

#define P SC_PAGE_PRESENT
#define A SC_PAGE_ABSENT
#define F SC_PAGE_FILE

static char tmpdir[64];
static long page;
static struct sc_page_run *runs;
static size_t runs_n;

static void setup(void)
{
	sc_log_set_level(SC_LOG_NONE);
	page = sysconf(_SC_PAGESIZE);
	strcpy(tmpdir, "/tmp/sc-pages-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];

	free(runs);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

static char *anon(size_t len, int flags)
{
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

	if (m == MAP_FAILED && errno == ENOMEM)
		cr_skip_test("cannot reserve %zu bytes (overcommit policy?)", len);
	cr_assert_neq(m, MAP_FAILED, "mmap %zu: %s", len, strerror(errno));
	cr_assert_eq(madvise(m, len, MADV_NOHUGEPAGE), 0);
	return m;
}

static void scan(const void *m, size_t len)
{
	free(runs);
	runs = NULL;
	cr_assert_eq(sc_pages_scan(0, (uintptr_t)m, (uintptr_t)m + len, &runs, &runs_n), 0);
}

/* Checks the runs against @n expected ones and that they tile [0, @pages) merged. */
static void expect(const struct sc_page_run *want, size_t n, uint64_t pages)
{
	uint64_t next = 0;

	for (size_t i = 0; i < runs_n; i++) {
		cr_assert_eq(runs[i].first, next, "run %zu starts at %llu", i,
			     (unsigned long long)runs[i].first);
		cr_assert_gt(runs[i].count, 0);
		if (i)
			cr_assert_neq(runs[i].state, runs[i - 1].state, "runs %zu, %zu unmerged",
				      i - 1, i);
		next += runs[i].count;
	}
	cr_assert_eq(next, pages);
	cr_assert_eq(runs_n, n, "%zu runs, expected %zu", runs_n, n);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(runs[i].first, want[i].first, "run %zu", i);
		cr_assert_eq(runs[i].count, want[i].count, "run %zu: count %llu, expected %llu", i,
			     (unsigned long long)runs[i].count, (unsigned long long)want[i].count);
		cr_assert_eq(runs[i].state, want[i].state, "run %zu: state %d, expected %d", i,
			     runs[i].state, want[i].state);
	}
}

Test(core, pages_fresh_mapping_is_absent, .init = setup, .fini = teardown)
{
	size_t len = 64 << 20;
	char *m = anon(len, 0);
	const struct sc_page_run want[] = { { 0, len / page, A } };

	scan(m, len);
	expect(want, 1, len / page);
}

/* Touches pages 0, 5, 6 and 100 of a fresh 64 MiB mapping. */
static char *touched_64m(size_t *len)
{
	char *m;

	*len = 64 << 20;
	m = anon(*len, 0);
	m[0] = 1;
	m[5 * page] = 1;
	m[6 * page + 17] = 1;
	m[100 * page + page - 1] = 1;
	return m;
}

Test(core, pages_touched_anon_runs, .init = setup, .fini = teardown)
{
	size_t len;
	char *m = touched_64m(&len);
	uint64_t np = len / page;
	const struct sc_page_run want[] = {
		{ 0, 1, P }, { 1, 4, A }, { 5, 2, P }, { 7, 93, A }, { 100, 1, P },
		{ 101, np - 101, A },
	};

	scan(m, len);
	expect(want, 6, np);
	/* A sub-range: page indices count from its own start. */
	scan(m + 5 * page, 4 * page);
	expect((const struct sc_page_run[]){ { 0, 2, P }, { 2, 2, A } }, 2, 4);
}

/*
 * A private file mapping whose pages are each their own VMA (alternating
 * protections), so that fault-around, which stays inside the VMA, maps only
 * the page touched: read pages are the file's, written ones private copies.
 */
static char *private_file(int pages)
{
	char path[128], *buf = malloc(page), *m;
	int fd;

	snprintf(path, sizeof(path), "%s/file", tmpdir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	memset(buf, 0x5a, page);
	for (int i = 0; i < pages; i++)
		cr_assert_eq(write(fd, buf, page), page);
	free(buf);
	m = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	cr_assert_neq(m, MAP_FAILED);
	close(fd);
	for (int i = 0; i < pages; i += 2)
		cr_assert_eq(mprotect(m + i * page, page, PROT_READ), 0);
	return m;
}

/* Pages: 0 read, 1 read then written, 2 and 3 read, 4 untouched, 5 written, 6 read, 7 untouched. */
static char *touched_file(void)
{
	char *m = private_file(8);
	volatile char sink;

	sink = m[0];
	sink = m[page];
	m[page] = 1;
	sink = m[2 * page];
	sink = m[3 * page];
	m[5 * page] = 2;
	sink = m[6 * page];
	(void)sink;
	return m;
}

static const struct sc_page_run file_want[] = {
	{ 0, 1, F }, { 1, 1, P }, { 2, 2, F }, { 4, 1, A }, { 5, 1, P }, { 6, 1, F }, { 7, 1, A },
};

Test(core, pages_private_file_read_and_written, .init = setup, .fini = teardown)
{
	char *m = touched_file();

	scan(m, 8 * page);
	expect(file_want, 7, 8);
}

/* Documented: the pages of shared anonymous memory are file pages to the kernel. */
Test(core, pages_shared_anon_is_file, .init = setup, .fini = teardown)
{
	char *m = anon(4 * page, 0);

	cr_assert_eq(munmap(m, 4 * page), 0);
	m = mmap(m, 4 * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 0);
	cr_assert_neq(m, MAP_FAILED);
	m[page] = 1;
	scan(m, 4 * page);
	expect((const struct sc_page_run[]){ { 0, 1, A }, { 1, 1, F }, { 2, 2, A } }, 3, 4);
}

/* 1 TiB reserved, three pages touched far apart: the ioctl walks three page tables. */
Test(core, pages_sparse_terabyte, .init = setup, .fini = teardown, .timeout = 60)
{
	size_t len = (size_t)1 << 40;
	char *m = anon(len, MAP_NORESERVE);
	uint64_t np = len / page, mid = np / 3;

	m[0] = 1;
	m[mid * page] = 1;
	m[len - 1] = 1;
	scan(m, len);
	expect((const struct sc_page_run[]){ { 0, 1, P }, { 1, mid - 1, A }, { mid, 1, P },
					     { mid + 1, np - mid - 2, A }, { np - 1, 1, P } },
	       5, np);
	cr_assert_eq(munmap(m, len), 0);
}

Test(core, pages_range_checks, .init = setup, .fini = teardown)
{
	char *m = anon(4 * page, 0);

	runs_n = 99;
	cr_assert_eq(sc_pages_scan(0, (uintptr_t)m, (uintptr_t)m, &runs, &runs_n), 0);
	cr_assert_eq(runs_n, 0);
	cr_assert_null(runs);
	cr_assert_eq(sc_pages_scan(0, (uintptr_t)m + 1, (uintptr_t)m + page, &runs, &runs_n),
		     -EINVAL);
	cr_assert_eq(sc_pages_scan(0, (uintptr_t)m, (uintptr_t)m + 100, &runs, &runs_n), -EINVAL);
	cr_assert_eq(sc_pages_scan(0, (uintptr_t)m + page, (uintptr_t)m, &runs, &runs_n),
		     -EINVAL);
	cr_assert_null(runs);
	/* Unmapped addresses are simply absent. */
	cr_assert_eq(munmap(m, 4 * page), 0);
	scan(m, 4 * page);
	expect((const struct sc_page_run[]){ { 0, 4, A } }, 1, 4);
}

/*
 * Scans the parent's [@start, @start + @len) from a child, with the ioctl or
 * (@fallback) the old interface, and checks it gets @want. The parent waits,
 * so its pages stay as they are.
 */
static void child_scan(bool fallback, const void *start, size_t len,
		       const struct sc_page_run *want, size_t n)
{
	pid_t parent = getpid(), pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct sc_page_run *r = NULL;
		size_t rn = 0;
		int ok;

		if (fallback) {
			setenv("SELFCKPT_NO_PAGEMAP_SCAN", "1", 1);
			sc_settings_reload();
		}
		ok = sc_pages_scan(parent, (uintptr_t)start, (uintptr_t)start + len, &r, &rn) == 0 &&
		     rn == n;
		for (size_t i = 0; ok && i < n; i++)
			ok = r[i].first == want[i].first && r[i].count == want[i].count &&
			     r[i].state == want[i].state;
		_exit(ok ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "%s scan of the parent differs", fallback ? "pagemap" : "PAGEMAP_SCAN");
}

/*
 * Both interfaces, each in a fresh child scanning this process: the knob is
 * read once per process, at its first scan, so this test scans nothing
 * itself before forking and states the expected runs instead.
 */
Test(core, pages_fallback_agrees, .init = setup, .fini = teardown)
{
	size_t len, sparse_len = (size_t)1 << 32;
	char *m = touched_64m(&len), *f = touched_file(), *s = anon(sparse_len, MAP_NORESERVE);
	uint64_t np = len / page, snp = sparse_len / page;
	const struct sc_page_run anon_want[] = {
		{ 0, 1, P }, { 1, 4, A }, { 5, 2, P }, { 7, 93, A }, { 100, 1, P },
		{ 101, np - 101, A },
	};
	const struct sc_page_run sparse_want[] = {
		{ 0, 12345, A }, { 12345, 1, P }, { 12346, snp - 12347, A }, { snp - 1, 1, P },
	};

	s[12345 * page] = 1;
	s[sparse_len - page] = 1;
	for (int fallback = 0; fallback < 2; fallback++) {
		child_scan(fallback, m, len, anon_want, 6);
		child_scan(fallback, f, 8 * page, file_want, 7);
		child_scan(fallback, s, sparse_len, sparse_want, 4);
	}
}

/*
 * Guard pages (MADV_GUARD_INSTALL) are told apart from data by both
 * interfaces, whatever the pages around them hold (Linux 6.15+ tells them).
 */
Test(core, pages_guard_pages_are_their_own_runs, .init = setup, .fini = teardown)
{
	char *m = anon(8 * page, 0);
	const struct sc_page_run want[] = {
		{ 0, 1, P }, { 1, 2, SC_PAGE_GUARD }, { 3, 1, P }, { 4, 3, A },
		{ 7, 1, SC_PAGE_GUARD },
	};

	m[0] = m[3 * page] = 1;
	if (madvise(m + page, 2 * page, 102 /* MADV_GUARD_INSTALL */) < 0)
		cr_skip_test("no guard pages on this kernel: %s", strerror(errno));
	cr_assert_eq(madvise(m + 7 * page, page, 102), 0);
	for (int fallback = 0; fallback < 2; fallback++)
		child_scan(fallback, m, 8 * page, want, 5);
}

/*
 * sc_pages_scan_pool(): a range walked in parts on a pool gives the runs one
 * walk gives, joined where a run crosses a part's edge (every 16 MiB here).
 */
Test(core, pages_pool_scan_joins_parts, .init = setup, .fini = teardown)
{
	size_t len = 256 << 20, edge = 16 << 20;
	char *m = anon(len, 0);
	struct sc_page_run *whole;
	size_t whole_n;
	struct sc_pool *pool;

	m[0] = 1;
	for (size_t at = edge; at < len; at += 3 * edge) /* present across an edge */
		memset(m + at - 2 * page, 1, 4 * page);
	memset(m + 5 * edge + page, 1, edge); /* present from just past one edge to past the next */
	m[len - 1] = 1;
	cr_assert_eq(sc_pages_scan(0, (uintptr_t)m, (uintptr_t)m + len, &whole, &whole_n), 0);
	cr_assert_eq(sc_pool_new(&pool, 4), 0);
	free(runs);
	runs = NULL;
	cr_assert_eq(sc_pages_scan_pool(pool, 0, (uintptr_t)m, (uintptr_t)m + len, &runs,
					&runs_n), 0);
	sc_pool_free(pool);
	cr_assert_gt(whole_n, 10);
	expect(whole, whole_n, len / page);
	free(whole);
}

/* A part that fails fails the scan, with its message on the caller's thread. */
Test(core, pages_pool_scan_failure_is_said, .init = setup, .fini = teardown)
{
	struct sc_pool *pool;
	pid_t gone = fork();

	cr_assert_geq(gone, 0);
	if (gone == 0)
		_exit(0);
	cr_assert_eq(waitpid(gone, NULL, 0), gone);
	cr_assert_eq(sc_pool_new(&pool, 4), 0);
	runs = NULL;
	cr_assert_lt(sc_pages_scan_pool(pool, gone, 1ull << 30, 2ull << 30, &runs, &runs_n), 0);
	sc_pool_free(pool);
	cr_assert_null(runs);
	cr_assert_not_null(strstr(selfckpt_last_error(), "pagemap"), "%s", selfckpt_last_error());
}

Test(core, pages_is_zero)
{
	static const size_t offs[] = { 0, 7, 63, 64, 100, 511, 512, 4095, 8191 };
	char *buf = aligned_alloc(64, 8192 + 64);

	cr_assert_not_null(buf);
	memset(buf, 0, 8192 + 64);
	cr_assert(sc_page_is_zero(buf, 8192));
	cr_assert(sc_page_is_zero(buf, 64));
	cr_assert(sc_page_is_zero(buf, 0));
	cr_assert(sc_page_is_zero(buf + 1, 8192));
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		buf[offs[i]] = (char)0x80;
		cr_assert_not(sc_page_is_zero(buf, 8192), "byte %zu set", offs[i]);
		cr_assert_not(sc_page_is_zero(buf + (offs[i] & ~(size_t)63), 64));
		cr_assert(offs[i] < 64 || sc_page_is_zero(buf, offs[i] & ~(size_t)63));
		buf[offs[i]] = 0;
	}
	/* Bytes past @len do not count. */
	buf[8192] = 1;
	cr_assert(sc_page_is_zero(buf, 8192));
	cr_assert_not(sc_page_is_zero(buf + 64, 8192));
	free(buf);
}
