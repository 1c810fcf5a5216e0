/* SPDX-License-Identifier: MIT */
/*
 * test_objects.c - kernel objects come back as the program left them:
 * tests/progs/objects (eventfd, timerfd, signalfd, inotify, two epoll
 * instances) and tests/progs/sockets (unix socket pairs of each type with
 * data queued, a listening socket with a connection, an abstract name, UDP
 * and a listening TCP socket), run under selfckpt-run, checkpointed by
 * SIGUSR2 at random moments, killed with -9, restored twice, and
 * checkpointed again once restored: every restore prints what an
 * uninterrupted run prints. Cites R-TYP-14 and R-TYP-15.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/cli/trip.h"

/* @name's program with the test's folder as its argument, and its output in @ref. */
static void setup_prog(struct trip *t, const char *name, char *prog_path, char *dir,
		       const char **prog, char *ref)
{
	char rel[64];

	trip_init(t);
	snprintf(rel, sizeof(rel), "tests/progs/%s", name);
	snprintf(dir, 128, "%s/work", t->dir);
	cr_assert_eq(mkdir(dir, 0700), 0);
	prog[0] = build_path(prog_path, rel);
	prog[1] = dir;
	prog[2] = NULL;
	reference(t, prog, ref);
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

Test(objects, unix_and_ip_sockets_come_back_with_their_queues, .timeout = 240)
{
	objects_round_trips("sockets");
}
