/* SPDX-License-Identifier: MIT */
/*
 * test_memory.c - each mapping comes back with its own memory settings
 * (segment memory flags, format 1.3, R-SEG-6): tests/progs/madvise holds a
 * mapping for each madvise() advice a restore gives back, locked ones, one
 * with no swap reserved, a droppable one and a shared file mapping that it
 * makes writable only after the restore. Run under selfckpt-run,
 * checkpointed by SIGUSR2 at random moments, killed with -9, restored twice
 * and checkpointed again once restored: every restore prints what an
 * uninterrupted run prints - the settings /proc/self/smaps shows, the data
 * of MADV_DONTFORK and MADV_WIPEONFORK mappings (which the snapshot, a fork,
 * would not have), and what a child forked after the restore gets.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/cli/trip.h"

/* The reference shows what the test is about, or the test proves nothing. */
static void check_reference(const char *ref)
{
	static const char *const lines[] = {
		"plain: mw, data ok\n", "noreserve: nr mw, data ok\n",
		"dontfork: dc mw, data ok\n", "wipeonfork: wf mw, data ok\n",
		"locked: lo mw, data ok\n", "dontdump: dd mw, data ok\n",
		"sequential: sr mw, data ok\n", "shared file: mw\n", "read-only shared file:\n",
		"shared file: written through the mapping: yes\n",
		"fork: dontfork gone, wipeonfork empty\n",
	};

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		cr_assert(strstr(ref, lines[i]), "the reference run lacks '%s': %s", lines[i], ref);
}

Test(memory, madvise_settings_locks_and_shared_write_access_come_back, .timeout = 240)
{
	char prog_path[PATH_MAX], dir[128], ref[OUT_MAX];
	const char *prog[3];
	struct trip t;

	trip_prog_in_work(&t, "madvise", prog_path, dir, prog, ref);
	check_reference(ref);
	srand((unsigned)getpid());
	for (int i = 0; i < 3; i++)
		round_trip(&t, prog, ref, 50 + rand() % 800);
	round_trip_again(&t, prog, ref, 300, 400);
}

/* [R-SEG-6] A sealed mapping (mseal) cannot come back: the image is refused, named. */
Test(memory, a_sealed_mapping_refuses_the_image, .timeout = 60)
{
	char prog_path[PATH_MAX], tool[PATH_MAX], dir[96], out[128], err[128], got[OUT_MAX];
	const char *argv[] = { build_path(tool, "bin/selfckpt-run"), "--dir", dir, "--",
			       build_path(prog_path, "tests/progs/madvise"), "sealed", NULL };
	char want[128];
	unsigned long addr;
	struct trip t;
	int status;
	pid_t pid;

	trip_init(&t);
	snprintf(dir, sizeof(dir), "%s/ckpt", t.dir);
	snprintf(out, sizeof(out), "%s/run.out", t.dir);
	snprintf(err, sizeof(err), "%s/run.err", t.dir);
	pid = spawn(argv, out, err);
	usleep(500000);
	kill(pid, SIGUSR2);
	status = wait_status(pid);
	slurp(out, got);
	if (status == 2)
		cr_skip_test("this kernel has no mseal()");
	cr_assert_eq(status, 0, "the program did not go on to its end");
	slurp(err, t.err);
	cr_assert_eq(sscanf(got, "sealed at %lx", &addr), 1, "%s", got);
	snprintf(want, sizeof(want), "at 0x%lx-0x%lx is sealed (mseal), which cannot be "
		 "restored", addr, addr + (unsigned long)sysconf(_SC_PAGESIZE));
	cr_assert(strstr(t.err, want), "no message naming the mapping ('%s'): %s", want, t.err);
	cr_assert(access(t.latest, F_OK) < 0, "an image was written");
}

/*
 * [R-SEG-9] Guard pages (MADV_GUARD_INSTALL) come back where the program put
 * them, in private anonymous memory, private and shared file mappings and a
 * MADV_WIPEONFORK mapping, with the data around them: the snapshot never
 * reads them (a read faults), and the restore makes them again.
 */
Test(memory, guard_pages_come_back_and_still_fault, .timeout = 240)
{
	char prog_path[PATH_MAX], dir[128], ref[OUT_MAX];
	const char *prog[3];
	struct trip t;

	trip_prog_in_work(&t, "guards", prog_path, dir, prog, ref);
	if (strstr(ref, "guard pages: not supported"))
		cr_skip_test("this kernel has no MADV_GUARD_INSTALL");
	cr_assert(strstr(ref, "\n29 anon:1,2 ok private:1 ok shared:2,5 ok wipeonfork:0 ok\n"),
		  "%s", ref);
	srand((unsigned)getpid());
	for (int i = 0; i < 3; i++)
		round_trip(&t, prog, ref, 100 + rand() % 1000);
	round_trip_again(&t, prog, ref, 300, 400);
}

/*
 * A read-write memfd still runs with execveat() after a restore (nothing
 * holds it open for writing that did not before), and a removed file keeps
 * its modification time. [R-SEG-7] A memfd and a removed file mapped shared
 * and private while a descriptor holds them come back as one file with
 * their mappings: writes through each are seen through the others, and the
 * page the private mapping wrote is its own.
 */
Test(memory, memfds_and_removed_files_stay_one_file_with_their_mappings, .timeout = 120)
{
	char prog_path[PATH_MAX], dir[128], ref[OUT_MAX];
	const char *prog[3];
	struct trip t;

	trip_init(&t);
	snprintf(dir, sizeof(dir), "%s/work", t.dir);
	cr_assert_eq(mkdir(dir, 0700), 0);
	prog[0] = build_path(prog_path, "tests/progs/memfiles");
	prog[1] = dir;
	prog[2] = NULL;
	reference(&t, prog, ref);
	cr_assert_str_eq(ref, "memfd script: ran\n"
			 "removed file: mtime kept, mode 640, 9 bytes\n"
			 "memfd: shared mapping same file, private mapping same file\n"
			 "memfd: mappings hold 'before' and 'before', own page 'own'\n"
			 "memfd: a write through the descriptor is seen by both mappings; "
			 "through the shared mapping, by the descriptor\n"
			 "memfd: the private mapping's own page holds 'own'\n"
			 "removed file: shared mapping same file, private mapping same file\n"
			 "removed file: mappings hold 'before' and 'before', own page 'own'\n"
			 "removed file: a write through the descriptor is seen by both mappings; "
			 "through the shared mapping, by the descriptor\n"
			 "removed file: the private mapping's own page holds 'own'\n");
	round_trip(&t, prog, ref, 300);
	round_trip_again(&t, prog, ref, 300, 400);
}

/*
 * [R-SEG-7] A memfd mapped shared and writable whose only descriptor left is
 * read-only: no restore could map that descriptor's file so, and a copy would
 * be another file. The image is refused, naming the mapping.
 */
Test(memory, a_writable_mapping_of_a_read_only_memfd_refuses_the_image, .timeout = 60)
{
	char prog_path[PATH_MAX], tool[PATH_MAX], dir[96], out[128], err[128], got[OUT_MAX];
	const char *argv[] = { build_path(tool, "bin/selfckpt-run"), "--dir", dir, "--",
			       build_path(prog_path, "tests/progs/memfiles"), "readonly", NULL };
	char want[160];
	unsigned long addr;
	struct trip t;
	pid_t pid;

	trip_init(&t);
	snprintf(dir, sizeof(dir), "%s/ckpt", t.dir);
	snprintf(out, sizeof(out), "%s/run.out", t.dir);
	snprintf(err, sizeof(err), "%s/run.err", t.dir);
	pid = spawn(argv, out, err);
	usleep(500000);
	kill(pid, SIGUSR2);
	cr_assert_eq(wait_status(pid), 0, "the program did not go on to its end");
	slurp(out, got);
	slurp(err, t.err);
	cr_assert_eq(sscanf(got, "memfd mapped at %lx", &addr), 1, "%s", got);
	snprintf(want, sizeof(want), "the shared mapping of '/memfd:rw-mapped' at 0x%lx-0x%lx "
		 "maps a file that the program's descriptors hold read-only", addr,
		 addr + (unsigned long)sysconf(_SC_PAGESIZE));
	cr_assert(strstr(t.err, want), "no message naming the mapping ('%s'): %s", want, t.err);
	cr_assert(access(t.latest, F_OK) < 0, "an image was written");
}
