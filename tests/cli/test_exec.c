/* SPDX-License-Identifier: MIT */
/*
 * test_exec.c - a process that executes another program while its
 * checkpoint is still being written (tests/progs/execwrite, under
 * selfckpt-run, checkpointed by SIGUSR2): through each call of the exec
 * family the exec waits for the write, so the image is complete, nothing
 * temporary stays in the folder, the new program runs, and the image
 * restores the process as it was at the checkpoint.
 *
 * The processes come from the plain build (SELFCKPT_BUILD), also under SAN=1.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdbool.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/cli/trip.h"

/* Does @dir hold an image or a set still being written (a temporary name)? */
static const char *temporary_in(const char *dir, char *name)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	cr_assert_not_null(d, "cannot read %s", dir);
	*name = '\0';
	while ((e = readdir(d)) && !*name)
		if (strstr(e->d_name, ".selfckpt-tmp.") ||
		    (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..")))
			snprintf(name, NAME_MAX + 1, "%s", e->d_name);
	closedir(d);
	return *name ? name : NULL;
}

static void wait_for(const char *path, const char *what)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (access(path, F_OK) < 0 && ms_since(&t0) < 30000)
		usleep(10000);
	cr_assert_eq(access(path, F_OK), 0, "%s: %s never came", what, path);
}

/*
 * execwrite checkpointed by SIGUSR2, executing through @how while the image
 * is written; @in_job: started by a shell that leaves a child behind, so that
 * the checkpoint is a job's set of two images.
 */
static void exec_during_the_write(const char *how, bool in_job)
{
	char prog_path[PATH_MAX], tool[PATH_MAX], work[128], ckpt[128], path[192];
	char out[128], err[128], got[OUT_MAX], want[OUT_MAX], sum[64], tmp[NAME_MAX + 1];
	const char *alone[] = { build_path(tool, "bin/selfckpt-run"), "--dir", ckpt, "--",
				build_path(prog_path, "tests/progs/execwrite"), work, ckpt, how,
				NULL };
	const char *job[] = { tool, "--dir", ckpt, "--", "/bin/sh", "-c",
			      "sleep 2 & exec \"$0\" \"$@\"", prog_path, work, ckpt, how, NULL };
	const char *const *argv = in_job ? job : alone;
	struct trip t;
	pid_t pid;
	int status;

	trip_init(&t);
	snprintf(work, sizeof(work), "%s/work", t.dir);
	snprintf(ckpt, sizeof(ckpt), "%s/ckpt", t.dir);
	snprintf(out, sizeof(out), "%s/run.out", t.dir);
	snprintf(err, sizeof(err), "%s/run.err", t.dir);
	cr_assert_eq(mkdir(work, 0700), 0);
	cr_assert_eq(mkdir(ckpt, 0700), 0);
	pid = spawn(argv, out, err);
	snprintf(path, sizeof(path), "%s/ready", work);
	wait_for(path, how);
	kill(pid, SIGUSR2);
	status = wait_status(pid);
	slurp(err, t.err);
	slurp(out, got);
	cr_assert_eq(status, 0, "%s: the run exited %d: %s", how, status, t.err);
	cr_assert_eq(sscanf(got, "sum %63s", sum), 1, "%s: the run printed %s", how, got);
	snprintf(want, sizeof(want), "sum %s\nexecuted %s\n", sum, how);
	cr_assert_str_eq(got, want, "%s: the run printed\n%sinstead of\n%s", how, got, want);
	cr_assert_null(temporary_in(ckpt, tmp), "%s: '%s' is left in the images' folder", how,
		       tmp);
	cr_assert_eq(access(t.latest, F_OK), 0, "%s: no image: %s", how, t.err);

	snprintf(path, sizeof(path), "%s/go-on", work);
	fclose(fopen(path, "w"));
	cr_assert_eq(restore(&t, got), 0, "%s: the restore failed", how);
	/*
	 * A job's set folder is made before its processes stop: execwrite may
	 * see it and be stopped inside the exec, waiting for the checkpoint.
	 * Restored at that instant, it goes on with the exec.
	 */
	snprintf(want, sizeof(want), "restored sum %s\n", sum);
	snprintf(path, sizeof(path), "executed %s\n", how);
	cr_assert(!strcmp(got, want) || (in_job && !strcmp(got, path)),
		  "%s: the restored process printed\n%sinstead of\n%s", how, got, want);
}

Test(exec, each_exec_call_waits_for_the_checkpoint_being_written, .timeout = 300)
{
	static const char *const calls[] = { "execve", "execv", "execvp", "execvpe", "execl",
					     "execlp", "execle", "fexecve", "execveat" };

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		exec_during_the_write(calls[i], false);
}

/* The process's image goes into its job's set, which is finished before the exec. */
Test(exec, an_exec_waits_for_its_jobs_set_being_written, .timeout = 120)
{
	exec_during_the_write("execvp", true);
}
