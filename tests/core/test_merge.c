/* SPDX-License-Identifier: MIT */
/*
 * selfckpt-merge (spec/image-format.md R-INC-8): a chain of images made by
 * tests/progs/lineage is merged into one full image, which restores the same
 * process with every parent deleted; a merge that cannot be made (a parent
 * missing or damaged, an output that is a parent) is refused with the
 * restore's exit codes and leaves every file as it was.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chain_harness.h"
#include "roundtrip_harness.h"

/* selfckpt-merge @image [-o @output]; its run in @r (run_free() it). */
static void merge(const char *image_path, const char *output, struct run *r)
{
	char tool_path[4096];
	const char *argv[] = { tool_path, image_path, output ? "-o" : NULL, output, NULL };

	snprintf(tool_path, sizeof(tool_path), "%s", tool("selfckpt-merge"));
	run(argv, r);
}

static void expect_merged(const char *image_path, const char *output)
{
	struct run r;

	merge(image_path, output, &r);
	expect_exit(&r, 0, "selfckpt-merge");
	cr_assert(strstr(r.out, "a full image"), "no summary:\n%s", r.out);
	run_free(&r);
	cr_assert(!incremental(output ? output : image_path), "the merged image is incremental");
}

static void delete_parents(int below)
{
	for (int k = 0; k < below; k++)
		cr_assert_eq(unlink(image(k)), 0, "cannot delete image %d", k);
}

/* The file at @path holds the @len bytes @want. */
static void expect_unchanged(const char *path, const char *want, size_t len)
{
	size_t now_len;
	char *now = read_file(path, &now_len);

	cr_assert(now_len == len && !memcmp(now, want, len), "'%s' was changed", path);
	free(now);
}

/* [R-INC-8] */
Test(roundtrip, a_merged_image_restores_its_instant_without_its_parents)
{
	char *saved = save_rounds("8", ROUNDS, NULL);

	for (int k = 1; k < ROUNDS; k++)
		expect_merged(image(k), in_base("merged.%d.sckpt", k));
	delete_parents(ROUNDS);
	for (int k = 1; k < ROUNDS; k++)
		expect_restores(saved, k, in_base("merged.%d.sckpt", k));
	free(saved);
}

/* [R-INC-8] in place: the newest image no longer needs the others */
Test(roundtrip, a_merge_in_place_lets_the_parents_be_deleted)
{
	char *saved = save_rounds("8", ROUNDS, NULL);
	off_t before = size_of(image(ROUNDS - 1));

	expect_merged(image(ROUNDS - 1), NULL);
	cr_assert_gt(size_of(image(ROUNDS - 1)), before * 4, "the merged image holds too little");
	delete_parents(ROUNDS - 1);
	expect_no_temporary();
	expect_restores(saved, ROUNDS - 1, image(ROUNDS - 1));
	free(saved);
}

/* [R-INC-4] a merge checks the chain as a restore does, and changes nothing */
Test(roundtrip, a_merge_with_a_missing_parent_is_refused_naming_it)
{
	size_t len;
	char *bytes;
	struct run r;

	free(save_rounds("8", ROUNDS, NULL));
	bytes = read_file(image(3), &len);
	cr_assert_eq(rename(image(1), in_base("elsewhere")), 0);
	merge(image(3), NULL, &r);
	expect_exit(&r, EX_NOINPUT, "a merge with a missing parent");
	cr_assert(strstr(r.err, "img.1.sckpt") && strstr(r.err, "nothing was written"),
		  "the message does not name it, or what was left undone:\n%s", r.err);
	run_free(&r);
	expect_unchanged(image(3), bytes, len);
	expect_no_temporary();
	free(bytes);
}

/* [R-INC-4] a damaged parent is found while its bytes are used: nothing is replaced */
Test(roundtrip, a_merge_with_a_damaged_parent_leaves_the_image)
{
	size_t len, plen;
	char *bytes, *parent;
	FILE *f;
	struct run r;

	free(save_rounds("8", ROUNDS, NULL));
	bytes = read_file(image(3), &len);
	parent = read_file(image(0), &plen);
	parent[plen / 2] ^= 0x40; /* in the middle of its memory */
	cr_assert_not_null(f = fopen(image(0), "w"));
	cr_assert_eq(fwrite(parent, 1, plen, f), plen);
	fclose(f);
	merge(image(3), NULL, &r);
	expect_exit(&r, EX_DATAERR, "a merge with a damaged parent");
	cr_assert(strstr(r.err, "img.0.sckpt"), "the message does not name it:\n%s", r.err);
	run_free(&r);
	expect_unchanged(image(3), bytes, len);
	expect_no_temporary();
	free(bytes);
	free(parent);
}

Test(roundtrip, a_merge_into_a_parent_of_the_image_is_refused)
{
	size_t len;
	char *bytes;
	struct run r;

	free(save_rounds("8", ROUNDS, NULL));
	bytes = read_file(image(1), &len);
	merge(image(3), image(1), &r);
	expect_exit(&r, EX_USAGE, "a merge into a parent");
	cr_assert(strstr(r.err, "is a parent"), "no reason given:\n%s", r.err);
	run_free(&r);
	expect_unchanged(image(1), bytes, len);
	free(bytes);
}

Test(roundtrip, a_full_image_is_left_as_it_is)
{
	size_t len;
	char *saved = save_rounds("8", 2, NULL), *bytes = read_file(image(0), &len);
	struct run r;

	merge(image(0), NULL, &r);
	expect_exit(&r, 0, "a merge of a full image");
	cr_assert(strstr(r.out, "full image already"), "not said:\n%s", r.out);
	run_free(&r);
	expect_unchanged(image(0), bytes, len);
	expect_restores(saved, 0, image(0));
	free(bytes);
	free(saved);
}

/* selfckpt-run's "latest" is a link: the image it leads to is made full, the link stays */
Test(roundtrip, a_merge_through_a_link_replaces_the_image_it_leads_to)
{
	char *saved = save_rounds("8", ROUNDS, NULL);
	struct stat st;

	cr_assert_eq(symlink("img.3.sckpt", in_base("ck/latest")), 0);
	expect_merged(in_base("ck/latest"), NULL);
	cr_assert_eq(lstat(in_base("ck/latest"), &st), 0);
	cr_assert(S_ISLNK(st.st_mode), "the link was replaced");
	cr_assert(!incremental(image(3)), "the image the link leads to is still incremental");
	delete_parents(ROUNDS - 1);
	expect_restores(saved, ROUNDS - 1, in_base("ck/latest"));
	free(saved);
}
