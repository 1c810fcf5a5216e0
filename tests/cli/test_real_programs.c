/* SPDX-License-Identifier: MIT */
/*
 * Real programs not written here, unmodified under selfckpt-run: python3 in a
 * loop and bc computing digits of pi are checkpointed by each signal, killed
 * with SIGKILL and restored, and must end with exactly the output of an
 * uninterrupted run. The scenario is tests/cli/real_programs.sh.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

static void scenario(const char *program, const char *sig)
{
	const char *build = getenv("SELFCKPT_BUILD");
	char cmd[512];
	int status;

	snprintf(cmd, sizeof(cmd), "sh tests/cli/real_programs.sh '%s' %s %s", build ? build : "build",
		 program, sig);
	status = system(cmd);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s checkpointed by SIG%s: see above",
		  program, sig);
}

Test(real, python3_by_sigusr1, .timeout = 90)
{
	scenario("python", "USR1");
}

Test(real, python3_by_sigusr2, .timeout = 90)
{
	scenario("python", "USR2");
}

Test(real, bc_pi_digits_by_sigusr1, .timeout = 120)
{
	scenario("bc", "USR1");
}

Test(real, bc_pi_digits_by_sigusr2, .timeout = 120)
{
	scenario("bc", "USR2");
}
