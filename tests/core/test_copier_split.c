/* SPDX-License-Identifier: MIT */
/*
 * test_copier_split.c - how an incremental image's read is shared among the
 * copier's threads (sc_copier_split(), copier.c): the pieces tile the read in
 * order, none is empty, each holds its share of the pages to read and knows
 * how many come before it, and a read too small to share takes one thread.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "core/checkpoint_internal.h"
#include "core/core_internal.h"

#define PAGES 16384

static uint8_t flags[PAGES];

/* Every @every-th page from @from on is to be read, up to page @until; the others are left. */
static uint64_t mark(uint64_t from, uint64_t every, uint64_t until)
{
	uint64_t n = 0;

	memset(flags, SC_COPY_LEFT, sizeof(flags));
	for (uint64_t i = from; i < until; i += every, n++)
		flags[i] = 0;
	return n;
}

static uint64_t to_read_in(const struct sc_copier_piece *p)
{
	uint64_t n = 0;

	for (uint64_t i = p->first; i < p->first + p->pages; i++)
		n += flags[i] != SC_COPY_LEFT;
	return n;
}

/* The pieces tile [0, PAGES) in order, each with pages, and count the reads before them. */
static void expect_tiling(const struct sc_copier_piece *p, int n, uint64_t to_read, uint64_t per)
{
	uint64_t at = 0, before = 0;

	for (int j = 0; j < n; j++) {
		cr_assert_eq(p[j].first, at, "piece %d starts at page %llu, not %llu", j,
			     (unsigned long long)p[j].first, (unsigned long long)at);
		cr_assert_gt(p[j].pages, 0, "piece %d is empty", j);
		cr_assert_eq(p[j].before, before, "piece %d: %llu pages to read before it, not %llu",
			     j, (unsigned long long)p[j].before, (unsigned long long)before);
		cr_assert_leq(to_read_in(&p[j]), per, "piece %d holds %llu pages to read, more than "
			      "its share %llu", j, (unsigned long long)to_read_in(&p[j]),
			      (unsigned long long)per);
		at += p[j].pages;
		before += to_read_in(&p[j]);
	}
	cr_assert_eq(at, PAGES, "the pieces end at page %llu of %d", (unsigned long long)at, PAGES);
	cr_assert_eq(before, to_read);
}

Test(copier, scattered_pages_are_shared_evenly_among_the_threads)
{
	struct sc_copier_piece p[SC_COPIER_MAX];
	uint64_t to_read = mark(3, 20, PAGES);
	int n = sc_copier_split(flags, PAGES, to_read, 8, 64, p);

	cr_assert_eq(n, 8, "%d pieces for 8 threads", n);
	expect_tiling(p, n, to_read, (to_read + 7) / 8);
	for (int j = 0; j + 1 < n; j++)
		cr_assert_eq(to_read_in(&p[j]), (to_read + 7) / 8, "piece %d is not a full share", j);
}

Test(copier, a_read_smaller_than_a_piece_takes_one_thread)
{
	struct sc_copier_piece p[SC_COPIER_MAX];
	uint64_t to_read = mark(100, 100, PAGES);
	int n = sc_copier_split(flags, PAGES, to_read, 8, 256, p);

	cr_assert_eq(n, 1, "%llu pages to read made %d pieces", (unsigned long long)to_read, n);
	expect_tiling(p, n, to_read, to_read);
}

Test(copier, the_pages_left_after_the_last_to_read_make_no_piece_of_their_own)
{
	struct sc_copier_piece p[SC_COPIER_MAX];
	uint64_t to_read = mark(0, 1, 1024); /* 4 shares of 256, then 15 Ki pages left */
	int n = sc_copier_split(flags, PAGES, to_read, 4, 64, p);

	cr_assert_eq(n, 4, "%d pieces for 4 threads", n);
	expect_tiling(p, n, to_read, 256);
	cr_assert_eq(p[3].first + p[3].pages, PAGES, "the last piece does not take the pages left");
}

Test(copier, one_thread_takes_the_whole_read)
{
	struct sc_copier_piece p[SC_COPIER_MAX];
	uint64_t to_read = mark(7, 3, PAGES);
	int n = sc_copier_split(flags, PAGES, to_read, 1, 256, p);

	cr_assert_eq(n, 1);
	expect_tiling(p, n, to_read, to_read);
}
