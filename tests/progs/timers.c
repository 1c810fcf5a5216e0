/* SPDX-License-Identifier: MIT */
/*
 * timers.c - a program that knows nothing of selfckpt and lives by its timers;
 * run under selfckpt-run by tests/cli/test_timers.c, checkpointed by SIGUSR2
 * while every timer runs, killed, restored. Its output does not depend on
 * timing: each timer raises its signal until a fixed count, then the handler
 * disarms it, so the counts are exact however late a signal comes; the ids,
 * settings and values printed at the end are the program's own.
 *   - ITIMER_REAL every 20 ms (SIGALRM), 40 times; then alarm(1), once;
 *   - ITIMER_PROF every 10 ms of CPU time (SIGPROF), 20 times;
 *   - POSIX timer A: CLOCK_MONOTONIC, SIGRTMIN+1 with a value, every 15 ms, 50 times;
 *   - POSIX timer B: SIGEV_THREAD_ID at a worker thread, SIGRTMIN+2, every 25 ms, 30 times;
 *   - POSIX timer C: SIGEV_NONE, one shot in 1000 s;
 *   - POSIX timer D: CLOCK_BOOTTIME, SIGRTMIN+3, every 100 s from 100 s on.
 * With "thread-clock": also timer E on the main thread's CPU clock, which
 * cannot come back: the checkpoint is refused, and the program goes on.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define REAL_N 40
#define PROF_N 20
#define A_N 50
#define B_N 30
#define A_VALUE 0xabcdef
#define B_VALUE 0x5eed

static timer_t ta, tb, tc, td, te;
static pthread_t worker_thread;
static volatile sig_atomic_t real_n, alarm_n, prof_n, a_n, b_n, a_bad, b_bad, alarm_phase;
static volatile sig_atomic_t done, worker_tid;

static void disarm(timer_t t)
{
	struct itimerspec off = { { 0, 0 }, { 0, 0 } };

	timer_settime(t, 0, &off, NULL);
}

static void on_alarm(int sig)
{
	struct itimerval off = { { 0, 0 }, { 0, 0 } };

	(void)sig;
	if (alarm_phase) {
		alarm_n++;
		return;
	}
	if (++real_n == REAL_N)
		setitimer(ITIMER_REAL, &off, NULL);
}

static void on_prof(int sig)
{
	struct itimerval off = { { 0, 0 }, { 0, 0 } };

	(void)sig;
	if (++prof_n == PROF_N)
		setitimer(ITIMER_PROF, &off, NULL);
}

static void on_a(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	a_bad |= si->si_code != SI_TIMER || si->si_value.sival_int != A_VALUE;
	if (++a_n == A_N)
		disarm(ta);
}

static void on_b(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	b_bad |= !pthread_equal(pthread_self(), worker_thread) ||
		 si->si_value.sival_int != B_VALUE;
	if (++b_n == B_N)
		disarm(tb);
}

static void handle(int sig, void (*fn)(int, siginfo_t *, void *), void (*plain)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	if (fn) {
		sa.sa_sigaction = fn;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
	} else {
		sa.sa_handler = plain;
		sa.sa_flags = SA_RESTART;
	}
	sigaction(sig, &sa, NULL);
}

static void *worker(void *arg)
{
	(void)arg;
	worker_tid = (sig_atomic_t)syscall(SYS_gettid);
	while (!done)
		usleep(1000);
	return NULL;
}

static int make(timer_t *t, clockid_t clock, int notify, int sig, int value, pid_t tid)
{
	struct sigevent ev;

	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = notify;
	ev.sigev_signo = sig;
	ev.sigev_value.sival_int = value;
	ev._sigev_un._tid = tid;
	return timer_create(clock, &ev, t);
}

static int arm(timer_t t, long first_ms, long every_ms)
{
	struct itimerspec its = { { every_ms / 1000, every_ms % 1000 * 1000000 },
				  { first_ms / 1000, first_ms % 1000 * 1000000 } };

	return timer_settime(t, 0, &its, NULL);
}

static void report(void)
{
	struct itimerspec c, d;

	timer_gettime(tc, &c);
	timer_gettime(td, &d);
	printf("itimer real: %d signals\n", (int)real_n);
	printf("alarm: %d signal\n", (int)alarm_n);
	printf("itimer prof: %d signals\n", (int)prof_n);
	printf("timer A (id %ld): %d signals, value and code right: %s\n", (long)(intptr_t)ta,
	       (int)a_n, a_bad ? "no" : "yes");
	printf("timer B (id %ld): %d signals, on its thread with its value: %s\n",
	       (long)(intptr_t)tb, (int)b_n, b_bad ? "no" : "yes");
	printf("timer C (id %ld): SIGEV_NONE, armed for more than 900 s: %s\n",
	       (long)(intptr_t)tc, c.it_value.tv_sec > 900 ? "yes" : "no");
	printf("timer D (id %ld): interval %ld.%09ld s, armed: %s, overrun %d\n",
	       (long)(intptr_t)td, (long)d.it_interval.tv_sec, d.it_interval.tv_nsec,
	       d.it_value.tv_sec > 90 ? "yes" : "no", timer_getoverrun(td));
}

/* Spin (the CPU time ITIMER_PROF counts) until every count is reached. */
static void spin_until_counted(void)
{
	while (real_n < REAL_N || prof_n < PROF_N || a_n < A_N || b_n < B_N)
		;
	alarm_phase = 1;
	alarm(1);
	while (!alarm_n)
		;
	usleep(200000); /* a second alarm would come now */
}

int main(int argc, char **argv)
{
	struct itimerval real = { { 0, 20000 }, { 0, 20000 } };
	struct itimerval prof = { { 0, 10000 }, { 0, 10000 } };

	handle(SIGALRM, NULL, on_alarm);
	handle(SIGPROF, NULL, on_prof);
	handle(SIGRTMIN + 1, on_a, NULL);
	handle(SIGRTMIN + 2, on_b, NULL);
	if (pthread_create(&worker_thread, NULL, worker, NULL))
		return 3;
	while (!worker_tid)
		usleep(1000);
	if (make(&ta, CLOCK_MONOTONIC, SIGEV_SIGNAL, SIGRTMIN + 1, A_VALUE, 0) ||
	    make(&tb, CLOCK_MONOTONIC, SIGEV_THREAD_ID, SIGRTMIN + 2, B_VALUE, worker_tid) ||
	    make(&tc, CLOCK_MONOTONIC, SIGEV_NONE, 0, 0, 0) ||
	    make(&td, CLOCK_BOOTTIME, SIGEV_SIGNAL, SIGRTMIN + 3, 0, 0))
		return 4;
	if (argc > 1 && !strcmp(argv[1], "thread-clock") &&
	    make(&te, CLOCK_THREAD_CPUTIME_ID, SIGEV_NONE, 0, 0, 0))
		return 4;
	if (arm(tc, 1000000, 0) || arm(td, 100000, 100000) || arm(ta, 15, 15) ||
	    arm(tb, 25, 25) || setitimer(ITIMER_REAL, &real, NULL) ||
	    setitimer(ITIMER_PROF, &prof, NULL))
		return 5;
	spin_until_counted();
	done = 1;
	pthread_join(worker_thread, NULL);
	report();
	return 0;
}
