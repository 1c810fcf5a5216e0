/* SPDX-License-Identifier: MIT */
/* sc_grow(): the project's one growable array (format/sc_array.h). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "format/sc_array.h"

Test(array, grows_by_doubling_and_keeps_what_it_held)
{
	int *v = NULL;
	size_t cap = 0, reallocs = 0;

	for (size_t n = 0; n < 1000; n++) {
		size_t before = cap;

		cr_assert_eq(sc_grow((void **)&v, &cap, n + 1, sizeof(*v)), 0);
		cr_assert_geq(cap, n + 1);
		reallocs += cap != before;
		v[n] = (int)n * 7;
	}
	for (size_t n = 0; n < 1000; n++)
		cr_assert_eq(v[n], (int)n * 7, "element %zu", n);
	cr_assert_leq(reallocs, 7, "%zu reallocations for 1,000 elements", reallocs);
	free(v);
}

Test(array, room_enough_changes_nothing)
{
	char *b = NULL, *was;
	size_t cap = 0;

	cr_assert_eq(sc_grow((void **)&b, &cap, 100, 1), 0);
	was = b;
	cr_assert_eq(cap, 128);
	cr_assert_eq(sc_grow((void **)&b, &cap, 128, 1), 0);
	cr_assert_eq(b, was);
	cr_assert_eq(cap, 128);
	free(b);
}

Test(array, a_size_past_the_address_space_is_refused_and_the_array_kept)
{
	uint64_t *v = NULL;
	size_t cap = 0;

	cr_assert_eq(sc_grow((void **)&v, &cap, 4, sizeof(*v)), 0);
	v[3] = 42;
	cr_assert_eq(sc_grow((void **)&v, &cap, SIZE_MAX / 4, sizeof(*v)), -ENOMEM);
	cr_assert_eq(sc_grow((void **)&v, &cap, SIZE_MAX, 1), -ENOMEM);
	cr_assert_eq(cap, 16);
	cr_assert_eq(v[3], 42);
	free(v);
}
