/* SPDX-License-Identifier: MIT */
/*
 * test_deploy.c - where users deploy, and the restorer's guards. Each test
 * runs a case of tests/cli/deploy.sh (which says what each one checks):
 *   - round trips of a single-threaded C program, a C program with 4 threads
 *     and python3, checkpointed by SIGUSR2 under selfckpt-run, killed with
 *     SIGKILL and restored twice, the checkpoint and the restores inside one
 *     setting of tests/progs/sandbox: plain root; an unprivileged user;
 *     Docker's default seccomp profile and capabilities as root and as a user;
 *     Kubernetes "restricted" (a user, no capabilities, no_new_privs, the
 *     profile);
 *   - an image others may write, an image of another user restored by root,
 *     kill -9 of selfckpt-restore, 60 restores under load that must all get
 *     their ids back, a system that refuses PR_SET_MM or clone3, random bit
 *     flips.
 * The settings are made by dropping from root, as CI runs: as another user,
 * these tests are skipped.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define SKIPPED 77 /* deploy.sh: this machine cannot run the case */

static void deploy(const char *args)
{
	const char *build = getenv("SELFCKPT_BUILD");
	char cmd[512];
	int status;

	if (geteuid() != 0)
		cr_skip_test("the settings are made by dropping from root");
	snprintf(cmd, sizeof(cmd), "sh tests/cli/deploy.sh '%s' %s", build ? build : "build", args);
	status = system(cmd);
	if (WIFEXITED(status) && WEXITSTATUS(status) == SKIPPED)
		cr_skip_test("deploy.sh %s: not possible on this machine", args);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "deploy.sh %s: see above", args);
}

#define ROUNDTRIP(setting, name, program)                                                       \
	Test(deploy, setting##_##name, .timeout = 120)                                           \
	{                                                                                        \
		deploy("roundtrip " #setting " " program);                                       \
	}

ROUNDTRIP(root, c_single, "c-single")
ROUNDTRIP(root, c_threads, "c-threads")
ROUNDTRIP(root, python3, "python")
ROUNDTRIP(user, c_single, "c-single")
ROUNDTRIP(user, c_threads, "c-threads")
ROUNDTRIP(user, python3, "python")

/* deploy.sh's setting names have dashes: one wrapper per setting. */
#define ROUNDTRIP_AS(id, setting, name, program)                                                \
	Test(deploy, id##_##name, .timeout = 120)                                                \
	{                                                                                        \
		deploy("roundtrip " setting " " program);                                        \
	}

ROUNDTRIP_AS(docker_root, "docker-root", c_single, "c-single")
ROUNDTRIP_AS(docker_root, "docker-root", c_threads, "c-threads")
ROUNDTRIP_AS(docker_root, "docker-root", python3, "python")
ROUNDTRIP_AS(docker_user, "docker-user", c_single, "c-single")
ROUNDTRIP_AS(docker_user, "docker-user", c_threads, "c-threads")
ROUNDTRIP_AS(docker_user, "docker-user", python3, "python")
ROUNDTRIP_AS(k8s_restricted, "k8s-restricted", c_single, "c-single")
ROUNDTRIP_AS(k8s_restricted, "k8s-restricted", c_threads, "c-threads")
ROUNDTRIP_AS(k8s_restricted, "k8s-restricted", python3, "python")

Test(deploy, image_writable_by_others_is_refused, .timeout = 60)
{
	deploy("guard writable");
}

Test(deploy, root_restores_another_users_image_opened_before_the_namespace, .timeout = 60)
{
	deploy("guard owner");
}

Test(deploy, killing_the_restorer_kills_the_restored_process, .timeout = 60)
{
	deploy("guard killed");
}

Test(deploy, sixty_restores_under_load_keep_their_ids, .timeout = 180)
{
	deploy("guard race");
}

Test(deploy, refused_set_mm_refuses_the_restore_before_the_point_of_no_return, .timeout = 60)
{
	deploy("guard set-mm");
}

Test(deploy, refused_clone3_restores_with_clone, .timeout = 60)
{
	deploy("guard clone3");
}

Test(deploy, every_random_bit_flip_is_refused_before_anything_runs, .timeout = 180)
{
	deploy("guard bitflips 300");
}
