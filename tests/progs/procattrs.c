/* SPDX-License-Identifier: MIT */
/*
 * procattrs.c - a program that sets attributes on itself (transparent huge
 * pages disabled, child subreaper, an OOM score adjustment of 400, a
 * registration for private expedited membarrier(), its own uid as audit
 * login uid where none was set, which needs no privilege, a parent-death
 * signal in the main thread and another in a second thread), waits
 * about a second, and prints them. Run under selfckpt-run by
 * tests/cli/test_objects.c: a restore must print the same.
 */
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* "own", "unset" or "other": the audit login uid against the process's uid. */
static const char *loginuid(void)
{
	char buf[32] = "";
	int fd = open("/proc/self/loginuid", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	unsigned long v = n > 0 ? strtoul(buf, NULL, 10) : 0;

	if (fd >= 0)
		close(fd);
	return n <= 0 ? "unreadable" : v == 4294967295ul ? "unset" :
	       v == (unsigned long)getuid() ? "own" : "other";
}

/* The process's uid as its audit login uid, where none is set yet. */
static void set_loginuid(void)
{
	char v[16];
	int fd, len = snprintf(v, sizeof(v), "%u", (unsigned)getuid());

	if (strcmp(loginuid(), "unset"))
		return;
	fd = open("/proc/self/loginuid", O_WRONLY);
	if (fd >= 0 && write(fd, v, (size_t)len) != len)
		perror("loginuid");
	if (fd >= 0)
		close(fd);
}

static int oom_score_adj(void)
{
	char buf[32] = "";
	int fd = open("/proc/self/oom_score_adj", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	return n > 0 ? atoi(buf) : -9999;
}

/* A thread with a parent-death signal of its own (SIGURG: ignored, were the parent to go). */
static void *second_thread(void *arg)
{
	int *sig = arg;

	prctl(PR_SET_PDEATHSIG, SIGURG, 0, 0, 0);
	for (int i = 0; i < 60; i++)
		usleep(20000);
	prctl(PR_GET_PDEATHSIG, (unsigned long)sig, 0, 0, 0);
	return NULL;
}

int main(void)
{
	int main_sig = 0, thread_sig = 0;
	pthread_t th;

	int fd = open("/proc/self/oom_score_adj", O_WRONLY), sub = 0;

	if (fd < 0 || write(fd, "400", 3) != 3 || prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) < 0)
		return 2;
	close(fd);
	set_loginuid();
	/* SIGWINCH is ignored by default: harmless were the parent to go */
	if (prctl(PR_SET_PDEATHSIG, SIGWINCH, 0, 0, 0) < 0 ||
	    pthread_create(&th, NULL, second_thread, &thread_sig))
		return 2;
	for (int i = 0; i < 50; i++)
		usleep(20000); /* a signal ends a sleep early: wait in steps */
	prctl(PR_GET_CHILD_SUBREAPER, (unsigned long)&sub, 0, 0, 0);
	printf("thp disabled: %d\nsubreaper: %d\noom_score_adj: %d\nmembarrier: %s\n",
	       prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0), sub, oom_score_adj(),
	       syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0 ? "registered" :
									     "not registered");
	pthread_join(th, NULL);
	prctl(PR_GET_PDEATHSIG, (unsigned long)&main_sig, 0, 0, 0);
	printf("parent-death signals: %d %d\n", main_sig, thread_sig);
	printf("loginuid: %s\n", loginuid());
	return 0;
}
