/* SPDX-License-Identifier: MIT */
/*
 * driver_call.c - running selfckpt-driver-ckpt on this process and waiting
 * for it.
 *
 * The driver's process checkpoint of a process is asked for from another
 * one. This process must not fork (a forked copy of a CUDA process holds the
 * driver's state half-made), so the tool is started with a vfork-like clone
 * that execs at once. It is a clone child with no exit signal: the program's
 * own wait() and SIGCHLD handler never see it; only waitpid() of its pid here.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/sc_core.h"
#include "cuda/lib/cuda_internal.h"
#include "cuda/lib/driver_mode.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"

#define TOOL_STACK (64 * 1024)

extern char **environ;

struct tool_run {
	const char *path;
	char *const *argv;
	char *const *env;
	int exec_errno;
};

/* Runs on its own stack, sharing our memory until it execs: no libc state. */
static int tool_child(void *arg)
{
	struct tool_run *t = arg;

	execve(t->path, t->argv, t->env);
	t->exec_errno = errno;
	_exit(127);
}

static int start_and_wait(struct tool_run *t, int *status)
{
	char *stack = mmap(NULL, TOOL_STACK, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pid_t pid;
	int err = 0;

	if (stack == MAP_FAILED)
		return -errno;
	pid = clone(tool_child, stack + TOOL_STACK, CLONE_VM | CLONE_VFORK, t);
	if (pid < 0)
		err = -errno;
	else
		while (waitpid(pid, status, __WALL) < 0)
			if (errno != EINTR) {
				err = -errno;
				break;
			}
	munmap(stack, TOOL_STACK);
	return err;
}

/* argv[0] is the tool's path, argv[1] the pid, argv[2] the action. */
static int run_tool(char *const argv[], char *const env[])
{
	struct tool_run t = { .path = argv[0], .argv = argv, .env = env };
	const char *path = argv[0], *pid = argv[1], *action = argv[2];
	int err, status = 0;

	if ((err = start_and_wait(&t, &status)) < 0)
		return sc_err(-err, "cannot run '%s': %s", path, strerror(-err));
	if (t.exec_errno)
		return sc_err(t.exec_errno, "cannot run '%s': %s", path, strerror(t.exec_errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		return sc_err(SELFCKPT_EDRIVER, "'%s %s %s' exited with %d (its reason above)",
			      path, pid, action, WEXITSTATUS(status));
	return sc_err(SELFCKPT_EDRIVER, "'%s %s %s' was killed by signal %d", path, pid, action,
		      WTERMSIG(status));
}

/* What selfckpt-driver-ckpt is needed for, when it is missing. */
#define WHY_DRIVER_TOOL "cannot run the CUDA driver's checkpoint"

int sc_cu_driver_call(const char *action, pid_t pid, unsigned timeout_ms)
{
	char path[PATH_MAX], pid_s[16], timeout_s[16];
	char *argv[] = { path, pid_s, (char *)action, timeout_s, NULL };
	int err;

	if ((err = sc_need_tool(SC_TOOL_DRIVER_CKPT, path, sizeof(path), 0, WHY_DRIVER_TOOL)) < 0)
		return err;
	snprintf(pid_s, sizeof(pid_s), "%d", (int)pid);
	snprintf(timeout_s, sizeof(timeout_s), "%u", timeout_ms);
	return run_tool(argv, environ);
}

int sc_cu_driver_resume_on(pid_t pid, const struct sc_cu_gpus *gpus)
{
	/* Static: a restart runs once, on one thread, and the stack is small there. */
	static char path[PATH_MAX], pid_s[16], names[SC_CU_GPUS_MAX][SC_CU_UUID_NAME_LEN];
	static char *argv[4 + SC_CU_GPUS_MAX + 1];
	char **env;
	unsigned n = gpus->n < SC_CU_GPUS_MAX ? gpus->n : SC_CU_GPUS_MAX;
	int err;

	if ((err = sc_need_tool(SC_TOOL_DRIVER_CKPT, path, sizeof(path), 0, WHY_DRIVER_TOOL)) < 0)
		return err;
	snprintf(pid_s, sizeof(pid_s), "%d", (int)pid);
	argv[0] = path;
	argv[1] = pid_s;
	argv[2] = "resume";
	argv[3] = "0";
	for (unsigned i = 0; i < n; i++) {
		sc_cu_uuid_name(gpus->uuid[i], names[i]);
		argv[4 + i] = names[i];
	}
	argv[4 + n] = NULL;
	if (!(env = sc_cu_tool_environment()))
		return sc_err(ENOMEM, "no memory for the environment of '%s'", path);
	err = run_tool(argv, env);
	sc_cu_tool_environment_free(env);
	return err;
}
