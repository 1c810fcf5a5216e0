/* SPDX-License-Identifier: MIT */
/*
 * test_hold.c - the watchdog of a checkpoint that keeps the program's threads
 * stopped while it writes (hold_rt.c): it lets them go only when the process
 * reads and writes nothing for as long as it was given.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "core/core_internal.h"

#define MS 1000000ll

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

Test(hold, a_writer_that_ends_in_time_keeps_the_hold)
{
	cr_assert_gt(sc_hold_start(2000 * MS), 0);
	usleep(100000);
	cr_assert(sc_hold_end(), "let go though the writer ended in time");
}

Test(hold, a_writer_that_stands_still_is_let_go)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_gt(sc_hold_start(300 * MS), 0);
	usleep(1500000); /* no byte read or written meanwhile */
	cr_assert(!sc_hold_end(), "still held after 1.5 s without any input or output");
}

Test(hold, a_writer_that_writes_is_not_taken_for_stuck)
{
	char buf[4096] = { 0 };
	int fd = open("/dev/null", O_WRONLY);
	struct timespec t0;

	cr_assert_geq(fd, 0);
	cr_assert_gt(sc_hold_start(600 * MS), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (ms_since(&t0) < 2000) { /* longer than the stall allowed, but never still */
		cr_assert_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
		usleep(50000);
	}
	cr_assert(sc_hold_end(), "let go though the process kept writing");
	close(fd);
}
