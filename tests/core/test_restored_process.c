/* SPDX-License-Identifier: MIT */
/*
 * Process round trips, zdtm style, with the programs of tests/progs/ (see
 * tests/progs/prog.h for their protocol). For each program:
 *   1. a reference run that never checkpoints;
 *   2. a run that checkpoints and kills itself with SIGKILL right after;
 *   3. selfckpt-restore of that image, twice in a row: each exits 0, and the
 *      output of run 2 followed by the restored output is the reference,
 *      bit for bit;
 *   4. a third restore that checkpoints the restored process again (and dies
 *      likewise), then a restore of that second image: run 2, 4 and this
 *      output together are the reference again.
 * After every restore, the memory map and the descriptors the program wrote
 * right before its checkpoint must equal those it wrote right after it came
 * back. Then the restores that must be refused: a corrupt image, a missing
 * one, a mapped file that changed, and the command line.
 * The harness (running programs, the round trip) is tests/core/roundtrip_harness.c.
 *
 * SELFCKPT_BUILD names the build directory (make test sets it);
 * SELFCKPT_TEST_HEAP_MIB sizes the heap test (default 1024);
 * SELFCKPT_TEST_KEEP=1 keeps the work directories in /tmp.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/sc_format.h"
#include "tests/core/roundtrip_harness.h"

Test(roundtrip, a_large_heap_and_an_untouched_reservation_come_back)
{
	const char *mib = getenv("SELFCKPT_TEST_HEAP_MIB");

	roundtrip("heap", (const char *[]){ mib && *mib ? mib : "1024", NULL });
}

Test(roundtrip, threads_sharing_a_mutex_and_barriers_finish_their_work)
{
	roundtrip("threads", NULL);
}

/* Checkpoints while threads are created and exit: every one of them succeeds. */
Test(roundtrip, a_checkpoint_amid_threads_being_born_and_exiting_succeeds)
{
	roundtrip("churn", NULL);
}

Test(roundtrip, thread_local_storage_errno_and_thread_ids_come_back)
{
	roundtrip("tlsmisc", NULL);
}

/* New thread ids: mutexes held across the checkpoint name the old ones (tlsmisc skips them). */
Test(roundtrip, threads_and_their_mutexes_work_with_new_ids)
{
	roundtrip_ids("threads", NULL, true);
}

Test(roundtrip, thread_local_storage_works_with_new_ids)
{
	roundtrip_ids("tlsmisc", (const char *[]){ "new-ids", NULL }, true);
}

Test(roundtrip, open_files_keep_offsets_appends_deleted_files_and_pipe_bytes)
{
	roundtrip("files", NULL);
}

Test(roundtrip, signal_actions_masks_alternate_stacks_and_pending_signals_come_back)
{
	roundtrip("signals", NULL);
}

Test(roundtrip, clocks_never_go_back_after_a_restart)
{
	roundtrip("clock", NULL);
}

Test(roundtrip, the_heap_and_the_stack_grow_after_a_restart)
{
	roundtrip("growth", NULL);
}

Test(roundtrip, libraries_loaded_before_still_work_and_new_ones_load)
{
	roundtrip("dlopen", NULL);
}

/* ---- a private mapping of a file; and what must be refused ---- */

#define DATA_LEN (5 * 4096 + 100)

static const char *make_data_file(void)
{
	static char path[4096];
	char buf[DATA_LEN];
	int fd;

	snprintf(path, sizeof(path), "%s", in_base("mapped.dat"));
	for (int i = 0; i < DATA_LEN; i++)
		buf[i] = (char)(i * 13 + (i >> 9));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	close(fd);
	return path;
}

Test(roundtrip, a_private_file_mapping_takes_its_clean_pages_from_the_file)
{
	roundtrip("mapfile", (const char *[]){ make_data_file(), NULL });
}

/* Checkpoint mapfile into ck/img.sckpt; return the image's path. */
static const char *checkpoint_mapfile(const char *data)
{
	static char image[4096];
	const char *argv[MAX_ARGS];
	struct run r;

	snprintf(image, sizeof(image), "%s", in_base("ck/img.sckpt"));
	prog_argv(argv, "mapfile", image, in_base("ck"), (const char *[]){ data, NULL });
	run(argv, &r);
	expect_killed(&r, "mapfile's checkpoint");
	run_free(&r);
	return image;
}

/* The last byte of the segment record with the most stored bytes: inside its last chunk. */
static uint64_t segment_byte(const char *image)
{
	const struct sc_index_entry *e, *best = NULL;
	struct sc_reader *rd;
	size_t n;

	cr_assert_eq(sc_reader_open(&rd, image, NULL), 0, "cannot read '%s'", image);
	cr_assert_eq(sc_reader_index(rd, &e, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (e[i].type == SC_REC_SEGMENT && e[i].raw_len &&
		    (!best || e[i].stored_len > best->stored_len))
			best = &e[i];
	cr_assert_not_null(best, "'%s' has no segment with stored pages", image);
	n = best->offset + best->stored_len - 1;
	sc_reader_free(rd);
	return n;
}

Test(roundtrip, refuses_corrupt_image)
{
	const char *image = checkpoint_mapfile(make_data_file());
	uint64_t at = segment_byte(image);
	uint8_t byte;
	int fd = open(image, O_RDWR | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &byte, 1, (off_t)at), 1);
	byte ^= 0x40;
	cr_assert_eq(pwrite(fd, &byte, 1, (off_t)at), 1);
	close(fd);
	expect_refused(image, 65, image, "a corrupt segment chunk");
}

Test(roundtrip, refuses_missing_image)
{
	const char *image = in_base("ck/no-such.sckpt");

	expect_refused(image, 66, image, "a missing image");
}

Test(roundtrip, refuses_changed_mapped_file)
{
	const char *data = make_data_file();
	const char *image = checkpoint_mapfile(data);
	int fd = open(data, O_WRONLY | O_APPEND | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "x", 1), 1);
	close(fd);
	expect_refused(image, 69, data, "a mapped file that changed");
}

/* The restored process logs at the level selfckpt-restore's environment asks for. */
Test(roundtrip, restore_takes_restorers_log_level)
{
	const char *image = checkpoint_mapfile(make_data_file());
	const char *argv[] = { restorer(), image, NULL };
	char want[4200];
	struct run r;

	snprintf(want, sizeof(want), "selfckpt: debug: restored from '%s'", image);
	setenv("SELFCKPT_LOG_LEVEL", "debug", 1);
	run(argv, &r);
	unsetenv("SELFCKPT_LOG_LEVEL");
	expect_exit(&r, 0, "mapfile restored");
	cr_assert(strstr(r.err, want), "no '%s' in the restored process's messages:\n%s", want,
		  r.err);
	run_free(&r);
	run(argv, &r);
	expect_exit(&r, 0, "mapfile restored again");
	cr_assert_null(strstr(r.err, "debug:"), "debug messages without the variable:\n%s",
		       r.err);
	run_free(&r);
}

Test(roundtrip, restorer_command_line)
{
	const char *help[] = { restorer(), "--help", NULL }, *none[] = { restorer(), NULL };
	struct run r;

	run(help, &r);
	expect_exit(&r, 0, "selfckpt-restore --help");
	cr_assert(strstr(r.out, "Usage:"), "--help prints no usage:\n%s", r.out);
	run_free(&r);
	run(none, &r);
	expect_exit(&r, 64, "selfckpt-restore without an image");
	cr_assert(r.err_len > 0, "no message for a missing argument");
	run_free(&r);
}

/*
 * Threads that open descriptors as fast as they can during the checkpoint
 * open more between the count and the stop than the first table holds: the
 * instant is taken again with more room, and the checkpoint succeeds; the
 * restored process ends with every descriptor, as the saving one does.
 */
Test(roundtrip, a_checkpoint_amid_descriptors_opened_fast_is_taken_again)
{
	for (int i = 0; i < 10; i++) {
		const char *image = in_base("fdrace-%d.img", i);
		const char *save[] = { prog_path("fdrace"), image, NULL };
		const char *back[] = { restorer(), image, NULL };
		struct run r;

		run(save, &r);
		expect_exit(&r, 0, "fdrace");
		cr_expect_str_eq(r.out, "saved\ndescriptors 6003\n", "%s", r.err);
		run_free(&r);
		run(back, &r);
		expect_exit(&r, 0, "fdrace restored");
		cr_expect_str_eq(r.out, "restored\ndescriptors 6003\n", "%s", r.err);
		run_free(&r);
	}
}
