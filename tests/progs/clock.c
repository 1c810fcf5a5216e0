/* SPDX-License-Identifier: MIT */
/*
 * clock - the clocks after a restart, through the vDSO: CLOCK_MONOTONIC never
 * goes backwards within the restored run, every clock agrees with the system
 * call, CLOCK_REALTIME is past the checkpoint, and sleeping takes time.
 */
#include <sys/time.h>
#include <time.h>

#include "prog.h"

#define NS 1000000000ll
#define CLOSE_NS (50 * 1000000ll) /* vDSO and system call agree within 50 ms */

static long long ns(const struct timespec *t)
{
	return t->tv_sec * NS + t->tv_nsec;
}

static long long vdso_ns(clockid_t c)
{
	struct timespec t;

	if (clock_gettime(c, &t))
		prog_die("clock_gettime(%d): %s", (int)c, strerror(errno));
	return ns(&t);
}

static long long sys_ns(clockid_t c)
{
	struct timespec t;

	if (syscall(SYS_clock_gettime, c, &t))
		prog_die("clock_gettime(%d) system call: %s", (int)c, strerror(errno));
	return ns(&t);
}

static void agree(const char *name, clockid_t c)
{
	long long a = vdso_ns(c), b = sys_ns(c), d = b - a;

	prog_check(name, d >= 0 && d < CLOSE_NS, "vDSO %lld, system call %lld", a, b);
}

static void checks(long long real_before)
{
	long long last = vdso_ns(CLOCK_MONOTONIC), t0 = last, backwards = 0, t;
	struct timespec res, nap = { 0, 20 * 1000000 };
	struct timeval tv;

	for (int i = 0; i < 200000; i++) {
		t = vdso_ns(CLOCK_MONOTONIC);
		backwards += t < last;
		last = t;
	}
	prog_check("monotonic never backwards", backwards == 0, "%lld times", backwards);
	agree("monotonic agrees with the kernel", CLOCK_MONOTONIC);
	agree("realtime agrees with the kernel", CLOCK_REALTIME);
	agree("boottime agrees with the kernel", CLOCK_BOOTTIME);
	agree("monotonic raw agrees with the kernel", CLOCK_MONOTONIC_RAW);
	t = vdso_ns(CLOCK_REALTIME);
	prog_check("realtime after the checkpoint", t >= real_before, "%lld < %lld", t,
		   real_before);
	gettimeofday(&tv, NULL);
	t = tv.tv_sec * NS + tv.tv_usec * 1000ll - sys_ns(CLOCK_REALTIME);
	prog_check("gettimeofday agrees", t > -CLOSE_NS && t <= 0, "off by %lld ns", t);
	t = (long long)time(NULL) - sys_ns(CLOCK_REALTIME) / NS;
	prog_check("time agrees", t >= -1 && t <= 0, "off by %lld s", t);
	prog_check("resolution", clock_getres(CLOCK_MONOTONIC, &res) == 0 && ns(&res) > 0 &&
		   ns(&res) <= 1000000, "%lld ns", ns(&res));
	nanosleep(&nap, NULL);
	t = vdso_ns(CLOCK_MONOTONIC) - t0;
	prog_check("a 20 ms sleep takes 20 ms", t >= 20 * 1000000ll, "%lld ns", t);
}

int main(int argc, char **argv)
{
	long long real_before;
	struct prog p;

	prog_init(&p, argc, argv);
	checks(0);
	real_before = vdso_ns(CLOCK_REALTIME);

	prog_checkpoint(&p, 1);

	checks(real_before);
	real_before = vdso_ns(CLOCK_REALTIME);

	prog_checkpoint(&p, 2);

	checks(real_before);
	return 0;
}
