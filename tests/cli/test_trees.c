/* SPDX-License-Identifier: MIT */
/*
 * Process trees under selfckpt-run (tests/cli/trees.sh): jobs of several
 * processes - a shell pipeline with data in its pipes, a parent with a zombie
 * child, a double-forked daemon, make -j2, three generations of pipes, a
 * parent and child that work through anonymous shared memory, a Python
 * multiprocessing.Pool map, a pre-forked pool of 4 workers serving a unix
 * socket, a request waiting to be accepted, a parent and child sharing a System V
 * semaphore, segment and queue, a SIGCHLD pending from a zombie, a file opened
 * twice of which the child inherited one - are checkpointed by a signal at a random moment,
 * killed with SIGKILL, restored twice, and must end with exactly the output of
 * an uninterrupted run (the pipeline once more with --exit-after-save: the
 * whole job ends with status 75 once the set is written). A
 * process that escapes the job refuses the checkpoint, naming it (or, with
 * --leave-out-escaped, is left out of a set that comes back whole), and so does
 * a connection its server leaves unaccepted for long, or an eventfd two
 * processes share; a set
 * missing an image, or with a changed manifest, refuses its restore; and
 * selfckpt_save() in the top of a job, or in its child, writes the job's set
 * at its path; and a job restored from a shell with job control gets the
 * shell's terminal.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

static void scenario(const char *job)
{
	const char *build = getenv("SELFCKPT_BUILD");
	char cmd[512];
	int status;

	snprintf(cmd, sizeof(cmd), "sh tests/cli/trees.sh '%s' %s", build ? build : "build", job);
	status = system(cmd);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		cr_skip_test("the %s job cannot run here: see above", job);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the %s job: see above", job);
}

Test(trees, a_pipeline_with_data_in_its_pipes_comes_back_whole, .timeout = 120)
{
	scenario("pipeline");
}

Test(trees, a_zombie_child_is_still_there_to_be_waited_for, .timeout = 120)
{
	scenario("zombie");
}

Test(trees, a_double_forked_daemon_is_a_job_of_its_own, .timeout = 120)
{
	scenario("daemon");
}

Test(trees, make_j2_of_a_small_project_builds_the_same, .timeout = 120)
{
	scenario("make");
}

Test(trees, three_generations_and_their_pipes_come_back, .timeout = 120)
{
	scenario("grandchild");
}

Test(trees, a_process_that_escapes_the_job_refuses_the_checkpoint, .timeout = 60)
{
	scenario("escape");
}

/* A top that exits during its job's checkpoint waits for it: the refusal is said, nothing left. */
Test(trees, a_top_that_exits_during_the_checkpoint_waits_for_it, .timeout = 60)
{
	scenario("topexits");
}

Test(trees, a_set_missing_an_image_or_with_a_changed_manifest_is_refused, .timeout = 60)
{
	scenario("missing");
}

Test(trees, selfckpt_save_in_the_top_writes_the_job_set_at_its_path, .timeout = 60)
{
	scenario("save");
}

Test(trees, a_parent_and_child_keep_working_through_shared_memory, .timeout = 120)
{
	scenario("shared");
}

Test(trees, a_python_multiprocessing_pool_map_comes_back_whole, .timeout = 120)
{
	scenario("pool");
}

Test(trees, a_pre_forked_pool_of_4_workers_serving_a_unix_socket_comes_back, .timeout = 120)
{
	scenario("prefork");
}

Test(trees, a_checkpoint_waits_for_a_queued_connection_to_be_accepted, .timeout = 120)
{
	scenario("queued");
}

Test(trees, a_connection_left_unaccepted_refuses_the_checkpoint_naming_the_server, .timeout = 60)
{
	scenario("unaccepted");
}

Test(trees, a_parent_and_child_share_system_v_objects_and_anonymous_memory, .timeout = 120)
{
	scenario("sysv");
}

Test(trees, a_pending_sigchld_comes_back_as_the_kernel_made_it_and_alone, .timeout = 120)
{
	scenario("sigchld");
}

Test(trees, a_file_opened_twice_comes_back_as_two_descriptions_one_inherited, .timeout = 120)
{
	scenario("files");
}

/*
 * The same under Docker's default seccomp profile, which refuses kcmp(): the
 * processes tell which descriptors are one description (a flag toggled).
 */
Test(trees, descriptions_are_told_apart_under_dockers_seccomp_profile, .timeout = 120)
{
	setenv("TREES_SECCOMP", "docker", 1);
	scenario("files");
	unsetenv("TREES_SECCOMP");
}

/* An eventfd two processes share is found without kcmp() too, and refused. */
Test(trees, a_shared_eventfd_refuses_under_dockers_seccomp_profile, .timeout = 60)
{
	setenv("TREES_SECCOMP", "docker", 1);
	scenario("eventfd");
	unsetenv("TREES_SECCOMP");
}

Test(trees, exit_after_save_ends_the_whole_job_once_its_set_is_written, .timeout = 120)
{
	scenario("exit");
}

Test(trees, leave_out_escaped_checkpoints_the_job_without_a_static_child, .timeout = 120)
{
	scenario("leaveout");
}

Test(trees, selfckpt_save_in_a_child_writes_the_job_set_at_its_path, .timeout = 60)
{
	scenario("savechild");
}

Test(trees, a_job_restored_from_a_shell_reads_its_terminal, .timeout = 90)
{
	scenario("terminal");
}

Test(trees, an_eventfd_shared_by_two_processes_refuses_the_checkpoint_naming_it, .timeout = 60)
{
	scenario("eventfd");
}
