/* SPDX-License-Identifier: MIT */
/*
 * test_fd_index.c - the sorted index the restore finds the ends of a pipe
 * and the peer of a socket through: every record of a key, in list order,
 * and nothing for a key no record has.
 */
#include <criterion/criterion.h>

#include "core/fd_index.h"

/* Keys added out of order, some shared: (a, b) for records 0..7. */
static const struct {
	uint64_t a, b;
} keys[] = { { 7, 1 }, { 3, 9 }, { 7, 1 }, { 3, 2 }, { 7, 0 }, { 3, 9 }, { 7, 1 }, { 1, 1 } };

#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static void build(struct sc_fd_index *x)
{
	cr_assert_eq(sc_fd_index_init(x, N_KEYS), 0);
	for (size_t i = 0; i < N_KEYS; i++)
		sc_fd_index_add(x, keys[i].a, keys[i].b, i);
	sc_fd_index_sort(x);
}

Test(fd_index, records_of_one_key_follow_each_other_in_list_order)
{
	struct sc_fd_index x;
	size_t k;

	build(&x);
	k = sc_fd_index_find(&x, 7, 1);
	cr_assert_lt(k + 2, x.n);
	cr_assert(x.keys[k].i == 0 && x.keys[k + 1].i == 2 && x.keys[k + 2].i == 6);
	cr_assert(k + 3 == x.n || x.keys[k + 3].a != 7 || x.keys[k + 3].b != 1);
	k = sc_fd_index_find(&x, 3, 9);
	cr_assert(x.keys[k].i == 1 && x.keys[k + 1].i == 5);
	cr_assert_eq(x.keys[sc_fd_index_find(&x, 1, 1)].i, 7);
	cr_assert_eq(x.keys[sc_fd_index_find(&x, 7, 0)].i, 4);
	sc_fd_index_free(&x);
}

Test(fd_index, a_key_no_record_has_is_not_found)
{
	struct sc_fd_index x;

	build(&x);
	cr_assert_eq(sc_fd_index_find(&x, 0, 0), x.n);
	cr_assert_eq(sc_fd_index_find(&x, 3, 5), x.n);
	cr_assert_eq(sc_fd_index_find(&x, 9, 9), x.n);
	sc_fd_index_free(&x);
}

Test(fd_index, an_empty_index_finds_nothing_and_takes_no_more_than_its_room)
{
	struct sc_fd_index x;

	cr_assert_eq(sc_fd_index_init(&x, 0), 0);
	sc_fd_index_add(&x, 1, 1, 0);
	sc_fd_index_sort(&x);
	cr_assert_eq(x.n, 0);
	cr_assert_eq(sc_fd_index_find(&x, 1, 1), 0);
	sc_fd_index_free(&x);
	sc_fd_index_free(&x); /* a freed index is zeroed: freeing it again is harmless */
}
