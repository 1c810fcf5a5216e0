/* SPDX-License-Identifier: MIT */
/*
 * evtimer.c - a SIGEV_THREAD timer: glibc's helper thread for it blocks
 * every signal, so the process cannot be stopped for a checkpoint. Run under
 * selfckpt-run by tests/cli/test_instant.c: the checkpoint must be given up
 * at once, with a message, and the program must go on to its end.
 */
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile int ticks;

static void tick(union sigval v)
{
	(void)v;
	ticks++;
}

int main(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD, .sigev_notify_function = tick };
	struct itimerspec its = { { 0, 50000000 }, { 0, 50000000 } };
	timer_t t;

	if (timer_create(CLOCK_MONOTONIC, &ev, &t) || timer_settime(t, 0, &its, NULL))
		return 3;
	for (int i = 0; i < 30; i++)
		usleep(50000);
	printf("done, ticks: %s\n", ticks > 0 ? "yes" : "no");
	return 0;
}
