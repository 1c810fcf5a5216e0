/* SPDX-License-Identifier: MIT */
/*
 * Incremental images (spec §9.14), end to end with tests/progs/lineage:
 * a process checkpoints itself four times with SELFCKPT_INCREMENTAL, changing a
 * little of its memory (and dropping a page, and moving a mapping of pages it
 * did not write over another) in between. Each image of the chain restores the
 * process as it was at its instant; a chain with a parent missing, replaced or
 * damaged is refused before anything runs; the chain is never longer than the
 * setting; an image that would replace its own parent is full.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chain_harness.h"
#include "roundtrip_harness.h"

/* [R-INC-5] [R-INC-7] the pages each image leaves come from the chain */
Test(roundtrip, each_image_of_a_chain_restores_the_process_at_its_instant)
{
	char *saved = save_rounds("8", ROUNDS, NULL);

	cr_assert(!incremental(image(0)), "the first image must be full");
	for (int k = 1; k < ROUNDS; k++) {
		cr_assert(incremental(image(k)), "image %d is full", k);
		/* 5% of 16 MiB changed, 1 MiB moved, 1 MiB new at most */
		cr_assert_lt(size_of(image(k)), size_of(image(0)) / 4, "image %d holds %lld bytes "
			     "against %lld for the full one", k, (long long)size_of(image(k)),
			     (long long)size_of(image(0)));
	}
	for (int k = ROUNDS - 1; k >= 0; k--)
		expect_restores(saved, k, image(k));
	expect_restores(saved, ROUNDS - 1, image(ROUNDS - 1)); /* and again */
	free(saved);
}

/* [R-INC-4] */
Test(roundtrip, a_chain_whose_parent_is_missing_is_refused_naming_it)
{
	free(save_rounds("8", ROUNDS, NULL));
	cr_assert_eq(rename(image(1), in_base("ck/elsewhere")), 0);
	expect_refused(image(3), EX_NOINPUT, "img.1.sckpt", "a missing parent");
}

/* [R-INC-4] */
Test(roundtrip, a_chain_whose_parent_is_another_image_is_refused_naming_it)
{
	free(save_rounds("8", ROUNDS, NULL));
	/* a complete, valid image, but not the one image 2 was made on */
	cr_assert_eq(rename(image(0), image(1)), 0);
	expect_refused(image(2), EX_DATAERR, "img.1.sckpt", "another parent");
}

/* [R-INC-4] */
Test(roundtrip, a_chain_whose_full_image_is_damaged_is_refused)
{
	char *bytes;
	size_t len;
	FILE *f;

	free(save_rounds("8", ROUNDS, NULL));
	bytes = read_file(image(0), &len);
	bytes[len / 2] ^= 0x40;
	cr_assert_not_null(f = fopen(image(0), "w"));
	cr_assert_eq(fwrite(bytes, 1, len, f), len);
	fclose(f);
	free(bytes);
	expect_refused(image(3), EX_DATAERR, "img.0.sckpt", "a damaged full image");
}

/* [R-INC-7] [R-INC-3] */
Test(roundtrip, a_chain_is_no_longer_than_the_setting_says)
{
	char *saved = save_rounds("2", 5, NULL);
	const bool want[5] = { false, true, true, false, true };

	for (int k = 0; k < 5; k++)
		cr_assert_eq(incremental(image(k)), want[k], "image %d: incremental %d, expected %d",
			     k, incremental(image(k)), want[k]);
	expect_restores(saved, 4, image(4));
	expect_restores(saved, 2, image(2));
	free(saved);
}

/* [R-INC-7] */
Test(roundtrip, an_image_that_replaces_its_parent_is_full)
{
	char *saved = save_rounds("8", 2, "same");

	cr_assert(!incremental(in_base("ck/img.sckpt")), "it replaced the image it needs");
	expect_restores(saved, 1, in_base("ck/img.sckpt"));
	free(saved);
}

/* [R-INC-2] parents named in the image's own directory: the chain moves as a directory */
Test(roundtrip, a_chain_moved_to_another_directory_restores)
{
	char *saved = save_rounds("8", ROUNDS, NULL);

	cr_assert_eq(rename(in_base("ck"), in_base("moved")), 0);
	cr_assert_eq(mkdir(in_base("ck"), 0700), 0); /* the harness's own */
	expect_restores(saved, ROUNDS - 1, in_base("moved/img.%d.sckpt", ROUNDS - 1));
	free(saved);
}

Test(roundtrip, without_the_setting_every_image_is_full)
{
	char *saved = save_rounds("0", 2, NULL);

	cr_assert(!incremental(image(1)));
	expect_restores(saved, 1, image(1));
	free(saved);
}
