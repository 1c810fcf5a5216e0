/* SPDX-License-Identifier: MIT */
/*
 * sigowner.c - a pipe whose read end asks for a signal when data comes
 * (O_ASYNC, F_SETOWN_EX to the process itself, F_SETSIG to SIGRTMIN+2), as
 * programs that take I/O by signals do. It waits about a second, writes
 * into the pipe, and prints what it got and how the read end is set. Run
 * under selfckpt-run by tests/cli/test_objects.c: a restore must print the
 * same.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t got, from_fd;

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	got++;
	from_fd = si->si_fd;
}

int main(void)
{
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART };
	struct f_owner_ex owner = { F_OWNER_PID, getpid() };
	int p[2];

	if (pipe(p) || sigaction(SIGRTMIN + 2, &sa, NULL) ||
	    fcntl(p[0], F_SETOWN_EX, &owner) || fcntl(p[0], F_SETSIG, SIGRTMIN + 2) ||
	    fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_ASYNC))
		return 2;
	for (int i = 0; i < 50; i++)
		usleep(20000); /* a signal ends a sleep early: wait in steps */
	if (write(p[1], "x", 1) != 1)
		return 3;
	for (int i = 0; i < 100 && !got; i++)
		usleep(1000);
	owner = (struct f_owner_ex){ 0, 0 };
	fcntl(p[0], F_GETOWN_EX, &owner);
	printf("signals: %d from descriptor %d\nowner is this process: %s\nsignal: SIGRTMIN+%d\n",
	       (int)got, (int)from_fd, owner.pid == getpid() ? "yes" : "no",
	       fcntl(p[0], F_GETSIG) - SIGRTMIN);
	return 0;
}
