/* SPDX-License-Identifier: MIT */
/*
 * test_objects.c - kernel objects come back as the program left them:
 * tests/progs/objects (eventfd, timerfd, signalfd, inotify, two epoll
 * instances) and tests/progs/sockets (unix socket pairs of each type with
 * data queued, a listening socket with a connection, an abstract name, a
 * named datagram socket with a client and one connected to itself, UDP and
 * a listening TCP socket) and tests/progs/rights (messages that carry
 * descriptors), run under selfckpt-run, checkpointed by
 * SIGUSR2 at random moments, killed with -9, restored twice, and
 * checkpointed again once restored: every restore prints what an
 * uninterrupted run prints. Cites R-TYP-14, R-TYP-15 and R-TYP-23.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <linux/kcmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tests/cli/trip.h"

/* @name's program with the test's folder as its argument, and its output in @ref. */
static void setup_prog(struct trip *t, const char *name, char *prog_path, char *dir,
		       const char **prog, char *ref)
{
	trip_prog_in_work(t, name, prog_path, dir, prog, ref);
	cr_assert(strlen(ref) > 1000, "the reference run printed little: %s", ref);
}

static void objects_round_trips(const char *name)
{
	char prog_path[PATH_MAX], dir[128], ref[OUT_MAX];
	const char *prog[3];
	struct trip t;

	setup_prog(&t, name, prog_path, dir, prog, ref);
	srand((unsigned)getpid());
	for (int i = 0; i < 5; i++)
		round_trip(&t, prog, ref, 50 + rand() % 1000);
	round_trip_again(&t, prog, ref, 300, 400);
}

Test(objects, eventfd_timerfd_signalfd_inotify_and_epoll_come_back, .timeout = 240)
{
	objects_round_trips("objects");
}

/*
 * More than 1,500 descriptors: the freeze shares its reads among helper
 * threads (where the machine has two processors or more), and leaves to
 * itself the socket whose queue is longer than a helper's block and the one
 * whose message carries a descriptor.
 */
Test(objects, many_descriptors_of_each_kind_come_back, .timeout = 300)
{
	objects_round_trips("manyfds");
}

/*
 * An epoll watch whose number was since closed, or given another file,
 * comes back on its file, found by kcmp() through the descriptor that holds
 * it now; where kcmp() is not allowed (a seccomp profile) the checkpoint is
 * refused, naming the watch.
 */
Test(objects, epoll_watches_of_changed_numbers_come_back, .timeout = 240)
{
	pid_t me = getpid();

	setenv("SC_TEST_MOVED_EPOLL", "1", 1);
	if (syscall(SYS_kcmp, me, me, KCMP_FILE, 0, 0) >= 0) {
		objects_round_trips("objects");
	} else {
		char prog_path[PATH_MAX], dir[128], ref[OUT_MAX];
		const char *prog[3];
		struct trip t;

		setup_prog(&t, "objects", prog_path, dir, prog, ref);
		cr_assert(!checkpoint_at(&t, prog, 300, 3000), "an image was written");
		cr_assert(strstr(t.err, "(or kcmp() is not allowed)"), "%s", t.err);
	}
	unsetenv("SC_TEST_MOVED_EPOLL");
}

/*
 * Under Docker's default seccomp profile (no kcmp()) each object is its own
 * open file description still: eventfds, timerfds, signalfds and epoll
 * instances all share one anon inode, and must not be taken for copies of
 * one another (R-TYP-12).
 */
Test(objects, objects_come_back_under_dockers_seccomp_profile, .timeout = 240)
{
	char sandbox[PATH_MAX];

	trip_under_docker(sandbox);
	objects_round_trips("objects");
}

Test(objects, unix_and_ip_sockets_come_back_with_their_queues, .timeout = 240)
{
	objects_round_trips("sockets");
}

/*
 * Messages that carry descriptors (SCM_RIGHTS) come back in their queues,
 * with their data and boundaries: descriptions the program also holds come
 * back as the same description, and those only a message holds (a pipe end
 * with its bytes, an eventfd, a socket with its own queue of rights) come
 * back as they were (R-TYP-23).
 */
Test(objects, descriptors_in_flight_come_back_in_their_queues, .timeout = 240)
{
	objects_round_trips("rights");
}

/*
 * Under Docker's default seccomp profile (no kcmp()) a description in
 * flight is still told apart from, or found the same as, the program's
 * descriptors (R-TYP-12, R-TYP-23).
 */
Test(objects, descriptors_in_flight_come_back_under_dockers_seccomp_profile, .timeout = 240)
{
	char sandbox[PATH_MAX];

	trip_under_docker(sandbox);
	objects_round_trips("rights");
}

/*
 * What no restore could bring back refuses the image at checkpoint, naming
 * it, and the program goes on (R-TYP-13 covers what comes back as a
 * stand-in instead).
 */
static void refused(const char *what, const char *message)
{
	char prog_path[PATH_MAX], tool[PATH_MAX], dir[96], out[128], err[128], got[OUT_MAX];
	const char *argv[] = { build_path(tool, "bin/selfckpt-run"), "--dir", dir, "--",
			       build_path(prog_path, "tests/progs/unrestorable"), what, NULL };
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
	slurp(err, t.err);
	slurp(out, got);
	cr_assert(strstr(t.err, message), "no message naming it: %s", t.err);
	cr_assert(strstr(got, "descriptor 3 is the link: no"), "%s", got);
	cr_assert(access(t.latest, F_OK) < 0, "an image was written");
}

Test(objects, a_removed_working_directory_refuses_the_image, .timeout = 60)
{
	refused("cwd", "the working directory '/tmp/sc-unrestorable-");
}

Test(objects, an_open_removed_directory_refuses_the_image, .timeout = 60)
{
	refused("dir", "descriptor 3 is the directory '/tmp/sc-unrestorable-");
}

Test(objects, a_namespace_descriptor_refuses_the_image, .timeout = 60)
{
	refused("ns", "descriptor 3 (net:[");
}

Test(objects, the_master_of_a_pseudo_terminal_refuses_the_image, .timeout = 60)
{
	refused("ptmx", "descriptor 3 is the master side of a pseudo-terminal");
}

Test(objects, a_terminal_whose_master_was_closed_refuses_the_image, .timeout = 60)
{
	refused("pts", "descriptor 3 is the terminal '/dev/pts/");
}

Test(objects, an_aio_context_refuses_the_image, .timeout = 60)
{
	refused("aio", "is the ring of an AIO context (io_setup())");
}

Test(objects, an_rseq_area_of_the_program_refuses_the_image, .timeout = 60)
{
	setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
	refused("rseq", "registered a restartable sequences area (rseq) of its own");
	unsetenv("GLIBC_TUNABLES");
}

/*
 * /proc/self/exe names the program again where the restore could take the
 * saved ids (a user namespace of its own); with new ids it names the
 * program only with a capability (CAP_CHECKPOINT_RESTORE), else the restorer.
 */
Test(objects, proc_self_exe_names_the_program_again, .timeout = 60)
{
	char prog_path[PATH_MAX], real[PATH_MAX], tool[PATH_MAX], got[OUT_MAX], err[OUT_MAX];
	char path[128], want[PATH_MAX + 8];
	const char *prog[] = { build_path(prog_path, "tests/progs/unrestorable"), "exe", NULL };
	struct trip t;

	trip_init(&t);
	cr_assert(checkpoint_at(&t, prog, 500, 5000), "no image");
	cr_assert_eq(restore(&t, got), 0);
	snprintf(path, sizeof(path), "%s/restore.err", t.dir);
	slurp(path, err);
	cr_assert_not_null(realpath(prog_path, real));
	cr_assert_not_null(realpath(build_path(tool, "bin/selfckpt-restore"), tool));
	snprintf(want, sizeof(want), "exe: %s\n", real);
	if (strstr(err, "new ids") && !strstr(got, want))
		snprintf(want, sizeof(want), "exe: %s\n", tool);
	cr_assert(strstr(got, want), "expected '%s' in: %s (restore said: %s)", want, got, err);
}

Test(objects, an_o_path_descriptor_of_a_symbolic_link_comes_back, .timeout = 60)
{
	char prog_path[PATH_MAX], ref[OUT_MAX];
	const char *prog[] = { build_path(prog_path, "tests/progs/unrestorable"), "symlink", NULL };
	struct trip t;

	trip_init(&t);
	reference(&t, prog, ref);
	cr_assert_str_eq(ref, "descriptor 3 is the link: yes\n");
	round_trip(&t, prog, ref, 500);
}

/*
 * What a program set on itself: prctl(), oom_score_adj, membarrier(), loginuid
 * (R-TYP-6), and each thread's parent-death signal (R-TYP-7).
 */
Test(objects, process_attributes_come_back, .timeout = 60)
{
	char prog_path[PATH_MAX], ref[OUT_MAX];
	const char *prog[] = { build_path(prog_path, "tests/progs/procattrs"), NULL };
	const char *head = "thp disabled: 1\nsubreaper: 1\noom_score_adj: 400\n"
			   "membarrier: registered\nparent-death signals: 28 23\nloginuid: ";
	struct trip t;

	trip_init(&t);
	reference(&t, prog, ref);
	cr_assert(!strncmp(ref, head, strlen(head)), "%s", ref);
	cr_assert(strstr(ref, "loginuid: own") || strstr(ref, "loginuid: other"), "%s", ref);
	round_trip(&t, prog, ref, 300);
}

/*
 * A descriptor with O_ASYNC sends its signal to the same owner after a
 * restore (R-TYP-12), with the saved ids and with new ones (the process
 * itself, under its new pid).
 */
Test(objects, a_descriptor_sends_its_io_signal_to_its_owner_again, .timeout = 60)
{
	char prog_path[PATH_MAX], ref[OUT_MAX];
	const char *prog[] = { build_path(prog_path, "tests/progs/sigowner"), NULL };
	struct trip t;

	trip_init(&t);
	reference(&t, prog, ref);
	cr_assert_str_eq(ref, "signals: 1 from descriptor 3\nowner is this process: yes\n"
			 "signal: SIGRTMIN+2\n");
	round_trip(&t, prog, ref, 300);
	setenv("SELFCKPT_NEW_IDS", "1", 1);
	round_trip(&t, prog, ref, 300);
	unsetenv("SELFCKPT_NEW_IDS");
}

/* POSIX, OFD and flock() locks are held again after a restore (R-TYP-20). */
Test(objects, file_locks_come_back, .timeout = 60)
{
	char prog_path[PATH_MAX], dir[128], ref[OUT_MAX];
	const char *prog[3];
	struct trip t;

	trip_init(&t);
	snprintf(dir, sizeof(dir), "%s/work", t.dir);
	cr_assert_eq(mkdir(dir, 0700), 0);
	prog[0] = build_path(prog_path, "tests/progs/locks");
	prog[1] = dir;
	prog[2] = NULL;
	reference(&t, prog, ref);
	cr_assert_str_eq(ref, "posix lock held: write (10+10)\nofd lock held: read\n"
			 "flock held: yes\n");
	round_trip(&t, prog, ref, 300);
}
