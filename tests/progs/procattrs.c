/* SPDX-License-Identifier: MIT */
/*
 * procattrs.c - a program that sets attributes on itself (transparent huge
 * pages disabled, child subreaper, an OOM score adjustment of 400, a
 * registration for private expedited membarrier()), waits
 * about a second, and prints them. Run under selfckpt-run by
 * tests/cli/test_objects.c: a restore must print the same.
 */
#include <fcntl.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int oom_score_adj(void)
{
	char buf[32] = "";
	int fd = open("/proc/self/oom_score_adj", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	return n > 0 ? atoi(buf) : -9999;
}

int main(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY), sub = 0;

	if (fd < 0 || write(fd, "400", 3) != 3 || prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) < 0)
		return 2;
	close(fd);
	for (int i = 0; i < 50; i++)
		usleep(20000); /* a signal ends a sleep early: wait in steps */
	prctl(PR_GET_CHILD_SUBREAPER, (unsigned long)&sub, 0, 0, 0);
	printf("thp disabled: %d\nsubreaper: %d\noom_score_adj: %d\nmembarrier: %s\n",
	       prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0), sub, oom_score_adj(),
	       syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0 ? "registered" :
									     "not registered");
	return 0;
}
