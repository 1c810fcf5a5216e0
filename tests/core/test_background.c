/* SPDX-License-Identifier: MIT */
/*
 * Checkpoints written in the background (SELFCKPT_FORK=1: selfckpt_save()
 * returns once the snapshot is taken, a library thread writes the image),
 * with tests/progs/lineage: an image is complete when the program exits right
 * after, a checkpoint waits for the one before it (its writer thread is no
 * thread of the next image), and incremental images make a chain.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "chain_harness.h"
#include "roundtrip_harness.h"

/* lineage for @rounds images in the background, with SELFCKPT_INCREMENTAL=@setting. */
static char *save_in_background(const char *setting, int rounds)
{
	char *saved;

	setenv("SELFCKPT_FORK", "1", 1);
	saved = save_rounds(setting, rounds, NULL);
	unsetenv("SELFCKPT_FORK");
	return saved;
}

Test(roundtrip, a_background_checkpoint_is_complete_when_the_program_exits_after_it)
{
	char *saved = save_in_background("0", 1);

	expect_no_temporary();
	expect_restores(saved, 0, image(0));
	free(saved);
}

Test(roundtrip, background_checkpoints_in_a_row_each_restore)
{
	char *saved = save_in_background("0", ROUNDS);

	expect_no_temporary();
	for (int k = 0; k < ROUNDS; k++)
		expect_restores(saved, k, image(k));
	free(saved);
}

/* [R-INC-7] the parent is the last image completed: the writer's, not the caller's */
Test(roundtrip, background_incremental_images_make_a_chain)
{
	char *saved = save_in_background("8", ROUNDS);

	cr_assert(!incremental(image(0)), "the first image must be full");
	for (int k = 1; k < ROUNDS; k++)
		cr_assert(incremental(image(k)), "image %d is full", k);
	for (int k = ROUNDS - 1; k >= 0; k--)
		expect_restores(saved, k, image(k));
	free(saved);
}
