/* SPDX-License-Identifier: MIT */
/*
 * The watch of written pages (core/written.h): which pages of private
 * anonymous memory the process wrote between two instants, as an incremental
 * image may leave the others to its parent (spec §9.14, R-INC-7). Every way a page
 * can change without a write through its old mapping must leave it not clean.
 *
 * Mappings are MADV_NOHUGEPAGE: a huge page is written and protected whole,
 * and these tests count single pages.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/written.h"
#include "format/sc_log.h"

#define PAGES 64

static long page;

static void setup(void)
{
	sc_log_set_level(SC_LOG_NONE);
	page = sysconf(_SC_PAGESIZE);
}

TestSuite(written, .init = setup, .timeout = 30);

static char *map_touched(void *at)
{
	char *p = mmap(at, PAGES * page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);

	cr_assert_neq(p, MAP_FAILED);
	madvise(p, PAGES * page, MADV_NOHUGEPAGE);
	for (int i = 0; i < PAGES; i++)
		p[i * page] = (char)(i + 1);
	return p;
}

/* One checkpoint's instant, as checkpoint.c takes it (the threads are the test's). */
static void instant(void)
{
	int r = sc_written_arm();

	if (r == 1)
		cr_skip_test("this kernel has no asynchronous write protection (Linux 6.7+)");
	cr_assert_eq(r, 0);
	sc_written_take();
}

/* Is each page of @p clean? One char per page: 'c' clean, 'w' not. */
static void clean_map(const char *p, char *out)
{
	uint64_t at = (uint64_t)(uintptr_t)p, end = at + PAGES * page;

	while (at < end) {
		bool clean;
		uint64_t len = sc_written_clean_run(at, end, &clean);

		cr_assert_gt(len, 0);
		cr_assert_eq(len % page, 0, "a run of %llu bytes", (unsigned long long)len);
		for (uint64_t i = 0; i < len / page; i++)
			out[(at - (uint64_t)(uintptr_t)p) / page + i] = clean ? 'c' : 'w';
		at += len;
	}
	out[PAGES] = 0;
}

static void expect(const char *p, const char *want)
{
	char got[PAGES + 1];

	clean_map(p, got);
	cr_assert_str_eq(got, want);
}

static char all(char c, char *buf)
{
	memset(buf, c, PAGES);
	buf[PAGES] = 0;
	return c;
}

Test(written, nothing_is_clean_at_the_first_instant)
{
	char *p = map_touched(NULL), want[PAGES + 1];

	instant();
	all('w', want);
	expect(p, want);
	sc_written_settle(true);
}

Test(written, the_pages_written_since_the_last_instant_are_the_ones_not_clean)
{
	char *p = map_touched(NULL), want[PAGES + 1];

	instant();
	sc_written_settle(true);
	p[3 * page] = 9;
	memset(p + 10 * page, 7, 3 * page);
	p[63 * page + 100] = 1;
	instant();
	all('c', want);
	want[3] = want[10] = want[11] = want[12] = want[63] = 'w';
	expect(p, want);
	sc_written_settle(true);
	/* and at the next instant, only what was written since this one */
	p[20 * page] = 1;
	instant();
	all('c', want);
	want[20] = 'w';
	expect(p, want);
	sc_written_settle(true);
}

Test(written, a_write_by_the_kernel_counts)
{
	char *p = map_touched(NULL), want[PAGES + 1];
	int fds[2];

	cr_assert_eq(pipe(fds), 0);
	instant();
	sc_written_settle(true);
	cr_assert_eq(write(fds[1], "kernel", 6), 6);
	cr_assert_eq(read(fds[0], p + 5 * page, 6), 6); /* the kernel writes the page */
	instant();
	all('c', want);
	want[5] = 'w';
	expect(p, want);
}

Test(written, after_a_checkpoint_that_failed_nothing_is_clean)
{
	char *p = map_touched(NULL), want[PAGES + 1];

	instant();
	sc_written_settle(true);
	p[7 * page] = 3; /* written before the failed instant, whose scan protects it again */
	instant();
	sc_written_settle(false);
	instant();
	all('w', want);
	expect(p, want);
}

Test(written, a_mapping_made_again_at_the_same_place_is_not_clean)
{
	char *p = map_touched(NULL), want[PAGES + 1];
	volatile char sink = 0;

	instant();
	sc_written_settle(true);
	cr_assert_eq(mmap(p, PAGES * page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), p);
	madvise(p, PAGES * page, MADV_NOHUGEPAGE);
	for (int i = 0; i < PAGES; i++)
		sink += p[i * page]; /* read only: the zero page, never written */
	(void)sink;
	instant();
	all('w', want);
	expect(p, want);
}

Test(written, pages_moved_in_by_mremap_are_not_clean)
{
	char *p = map_touched(NULL), *q = map_touched(NULL), want[PAGES + 1];

	instant();
	sc_written_settle(true);
	/* q's pages, unwritten since the instant, replace p's */
	cr_assert_eq(mremap(q, PAGES * page, PAGES * page, MREMAP_MAYMOVE | MREMAP_FIXED, p), p);
	instant();
	all('w', want);
	expect(p, want);
}

Test(written, a_page_dropped_and_read_again_is_not_clean)
{
	char *p = map_touched(NULL), want[PAGES + 1];
	volatile char sink;

	instant();
	sc_written_settle(true);
	cr_assert_eq(madvise(p + 8 * page, page, MADV_DONTNEED), 0);
	sink = p[8 * page]; /* a zero page now, with no write */
	cr_assert_eq(sink, 0);
	instant();
	all('c', want);
	want[8] = 'w';
	expect(p, want);
}

Test(written, memory_the_watch_does_not_cover_is_never_clean)
{
	char *p = mmap(NULL, PAGES * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		       -1, 0), want[PAGES + 1];

	cr_assert_neq(p, MAP_FAILED);
	memset(p, 1, PAGES * page);
	instant();
	sc_written_settle(true);
	instant();
	all('w', want);
	expect(p, want);
}

/*
 * A reservation the program cannot write is not watched; a part of it made
 * writable and written between two instants is not clean, and the rest of the
 * mapping it came from still is.
 */
Test(written, a_reservation_made_writable_after_an_instant_is_not_clean)
{
	char *p = map_touched(NULL), want[PAGES + 1];

	cr_assert_eq(mprotect(p + 32 * page, 32 * page, PROT_NONE), 0);
	instant();
	sc_written_settle(true);
	instant();
	sc_written_settle(true);
	cr_assert_eq(mprotect(p + 32 * page, 32 * page, PROT_READ | PROT_WRITE), 0);
	p[40 * page] = 5;
	instant();
	all('c', want);
	memset(want + 32, 'w', 32);
	expect(p, want);
}
