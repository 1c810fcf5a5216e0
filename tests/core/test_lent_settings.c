/* SPDX-License-Identifier: MIT */
/*
 * The memory settings a checkpoint vouched for stand in for the read of the
 * process's own smaps at the next one (core/vmflags_cache.c), and are
 * refuted when the program changed them in between: tests/progs/advised
 * gives eight mappings their settings (MADV_DONTFORK and MADV_WIPEONFORK
 * among them) between two images, over the whole of each mapping, so that
 * nothing shows the change but the snapshot's smaps. The second image must
 * be taken again and hold every setting and the bytes written before it,
 * and still leave the rest to the first.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "chain_harness.h"
#include "roundtrip_harness.h"

static const char *const settings_shown[] = {
	"dontfork: dc, data ok\n", "wipeonfork: wf, data ok\n", "dontdump: dd, data ok\n",
	"sequential: sr, data ok\n", "random: rr, data ok\n",
	"fork: dontfork gone, wipeonfork empty\n",
};

/* The lines both the saving and the restored process print, from the first setting on. */
static const char *report(const char *out)
{
	const char *at = strstr(out, "dontfork:");

	cr_assert(at, "no report in: %s", out);
	return at;
}

Test(roundtrip, settings_changed_since_the_last_checkpoint_take_the_instant_again)
{
	const char *argv[] = { prog_path("advised"), in_base("ck"), NULL };
	const char *restore[] = { restorer(), image(1), NULL };
	struct run saved, back;

	setenv("SELFCKPT_INCREMENTAL", "8", 1);
	setenv("SELFCKPT_LOG_LEVEL", "debug", 1);
	run(argv, &saved);
	unsetenv("SELFCKPT_INCREMENTAL");
	unsetenv("SELFCKPT_LOG_LEVEL");
	expect_exit(&saved, 0, "advised");
	cr_assert(!strncmp(saved.out, "saved\n", 6), "%s", saved.out);
	for (size_t i = 0; i < sizeof(settings_shown) / sizeof(settings_shown[0]); i++)
		cr_assert(strstr(saved.out, settings_shown[i]), "the saving process lacks '%s': %s",
			  settings_shown[i], saved.out);
	/* the second image used the first's settings, found them changed, and began again */
	cr_assert(strstr(saved.err, "memory flags of") &&
		  strstr(saved.err, "known from the last checkpoint"),
		  "the settings were not lent: %s", saved.err);
	cr_assert(strstr(saved.err, "the instant is taken again"), "%s", saved.err);
	cr_assert(!strstr(saved.err, "error:"), "a change the checkpoint took again was reported "
		  "as an error: %s", saved.err);
	cr_assert(!incremental(image(0)), "the first image must be full");
	cr_assert(incremental(image(1)), "the image taken again must still be incremental");
	expect_no_temporary();

	run(restore, &back);
	expect_exit(&back, 0, "the restore of img.1");
	cr_assert(!strncmp(back.out, "restored\n", 9), "%s", back.out);
	cr_assert_str_eq(report(back.out), report(saved.out));
	run_free(&saved);
	run_free(&back);
}
