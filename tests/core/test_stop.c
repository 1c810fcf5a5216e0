/* SPDX-License-Identifier: MIT */
/*
 * Stopping the threads for a checkpoint when some of them are gone: a process
 * whose main thread called pthread_exit() (it stays listed as a zombie and
 * can never stop) is refused at once, with the reason. Threads that exit while
 * being stopped are covered by the round trip of tests/progs/churn.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "selfckpt.h"

static char image[] = "/tmp/sc-stop-XXXXXX";

/* Runs in the child once its main thread is gone; the exit status says what happened. */
static void *save_without_main_thread(void *arg)
{
	const char *msg;
	int r;

	(void)arg;
	usleep(50000); /* let the main thread finish exiting */
	r = selfckpt_save(image);
	msg = selfckpt_last_error();
	if (r != -ESRCH)
		_exit(10 + (r < 0 ? 0 : r));
	_exit(strstr(msg, "main thread has exited") && access(image, F_OK) != 0 ? 0 : 2);
}

Test(stop, main_thread_gone_is_refused, .timeout = 30)
{
	int status = 0, fd = mkstemp(image);
	pid_t pid;

	cr_assert_geq(fd, 0, "mkstemp: %s", strerror(errno));
	close(fd);
	unlink(image);
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		pthread_t t;

		alarm(20); /* a stop that hangs fails the test instead of the run */
		if (pthread_create(&t, NULL, save_without_main_thread, NULL))
			_exit(3);
		pthread_exit(NULL);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "the child died of signal %d (SIGALRM: the stop hung)",
		  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	cr_assert_eq(WEXITSTATUS(status), 0,
		     "exit %d: 2 = wrong message or an image was written, 1x = save returned x-10 "
		     "instead of -ESRCH", WEXITSTATUS(status));
}
