/* SPDX-License-Identifier: MIT */
/*
 * test_timers.c - a process's timers come back: tests/progs/timers (an
 * interval ITIMER_REAL and ITIMER_PROF, alarm(), POSIX timers that signal the
 * process with a value, one thread, or nobody) run under selfckpt-run,
 * checkpointed by SIGUSR2 while every timer runs, killed with -9, restored
 * twice, and checkpointed again once restored: every restore prints what an
 * uninterrupted run prints, timer ids and settings included. A timer that
 * cannot come back is refused at checkpoint, named. Cites R-TYP-19.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/cli/trip.h"

/* [R-TYP-19] each timer comes back with its id, clock, target, value and time left */
Test(timers, itimers_alarm_and_posix_timers_come_back, .timeout = 300)
{
	char prog_path[PATH_MAX], ref[OUT_MAX];
	const char *prog[2] = { build_path(prog_path, "tests/progs/timers"), NULL };
	struct trip t;

	trip_init(&t);
	reference(&t, prog, ref);
	cr_assert(strstr(ref, "timer D (id 3): interval 100.000000000 s, armed: yes"), "%s", ref);
	cr_assert(!strstr(ref, ": no"), "the reference run failed its own checks: %s", ref);
	srand((unsigned)getpid());
	/* while the itimers and timers A and B tick (~0.8 s), then while alarm() waits */
	for (int i = 0; i < 4; i++)
		round_trip(&t, prog, ref, 100 + rand() % 600);
	round_trip(&t, prog, ref, 1300);
	round_trip_again(&t, prog, ref, 300, 400);
}

/* A POSIX timer on a thread's CPU clock: no image, a message naming it, the program goes on. */
Test(timers, a_thread_cpu_clock_timer_is_refused_at_checkpoint, .timeout = 120)
{
	char prog_path[PATH_MAX], ref[OUT_MAX], tool[PATH_MAX], dir[96], out[128], err[128];
	const char *prog[3] = { build_path(prog_path, "tests/progs/timers"), "thread-clock",
				NULL };
	const char *argv[] = { build_path(tool, "bin/selfckpt-run"), "--dir", dir, "--", prog[0],
			       prog[1], NULL };
	struct trip t;
	char got[OUT_MAX];
	pid_t pid;

	trip_init(&t);
	reference(&t, prog, ref);
	snprintf(dir, sizeof(dir), "%s/ckpt", t.dir);
	snprintf(out, sizeof(out), "%s/run.out", t.dir);
	snprintf(err, sizeof(err), "%s/run.err", t.dir);
	pid = spawn(argv, out, err);
	usleep(300000);
	kill(pid, SIGUSR2);
	cr_assert_eq(wait_status(pid), 0, "the program did not go on to its end");
	slurp(out, got);
	slurp(err, t.err);
	cr_assert_str_eq(got, ref);
	cr_assert(strstr(t.err, "POSIX timer 4 counts the CPU time of one thread"),
		  "no message naming the timer: %s", t.err);
	cr_assert(access(t.latest, F_OK) < 0, "an image was written");
}
