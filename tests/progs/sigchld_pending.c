/* SPDX-License-Identifier: MIT */
/*
 * sigchld_pending.c - a SIGCHLD that waits, blocked, across a checkpoint: the
 * child exits with 5, the parent looks at it without reaping it (WNOWAIT),
 * then lets the signal in after 3 s and writes to out.txt how many SIGCHLD
 * came and what the last one said. The one signal must come back as the
 * kernel made it (CLD_EXITED, the child's pid, status 5), and no other: a
 * checkpoint's own helper processes must not signal the program. Run under
 * selfckpt-run by tests/cli/trees.sh.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t count, code, from, status;

static void on_child(int sig, siginfo_t *info, void *uc)
{
	(void)sig;
	(void)uc;
	count++;
	code = info->si_code;
	from = info->si_pid;
	status = info->si_status;
}

int main(void)
{
	struct sigaction act = { .sa_sigaction = on_child, .sa_flags = SA_SIGINFO };
	sigset_t chld;
	siginfo_t seen;
	pid_t child;
	FILE *out;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, NULL) || sigaction(SIGCHLD, &act, NULL))
		return 3;
	child = fork();
	if (child < 0)
		return 3;
	if (child == 0)
		_exit(5);
	if (waitid(P_PID, (id_t)child, &seen, WEXITED | WNOWAIT))
		return 3;
	for (int i = 0; i < 30; i++)
		usleep(100000);
	sigprocmask(SIG_UNBLOCK, &chld, NULL);
	usleep(100000);
	out = fopen("out.txt", "w");
	if (!out)
		return 5;
	fprintf(out, "SIGCHLD %d times: code %d, %s, status %d\n", (int)count, (int)code,
		from == child ? "from the child" : "from another process", (int)status);
	return fclose(out) ? 5 : 0;
}
