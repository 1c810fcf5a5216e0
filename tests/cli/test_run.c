/* SPDX-License-Identifier: MIT */
/*
 * test_run.c - selfckpt-run, run as a program around tests/progs/counter, a
 * program that knows nothing of selfckpt: checkpoints on each trigger signal
 * and on an interval, DIR/latest, --exit-after-save, --resume after a kill -9,
 * the warning for a program that takes a trigger signal, and the exit codes.
 *
 * The processes come from the plain build (SELFCKPT_BUILD), also under SAN=1.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/cli/trip.h"
#include "core/sc_trigger.h"

#define LINE_LEN 12 /* tests/progs/counter.c: "line NNNNNN\n" */
#define WAIT_MS 20000
#define ERR_MAX (1u << 16)

struct run {
	char dir[64];      /* the checkpoint directory */
	char out[96];      /* the counter's file */
	pid_t pid;
	int err_fd;        /* its standard error */
	char err[ERR_MAX]; /* ... once it has ended */
};

static void run_init(struct run *r)
{
	memset(r, 0, sizeof(*r));
	strcpy(r->dir, "/tmp/sc-run-XXXXXX");
	cr_assert_not_null(mkdtemp(r->dir));
	trip_remove_at_exit(r->dir);
	snprintf(r->out, sizeof(r->out), "%s/out", r->dir);
	strcat(r->dir, "/ckpt"); /* selfckpt-run makes it */
	r->pid = -1;
}

static void clean_env(void)
{
	static const char *const vars[] = { SC_ENV_DIR, SC_ENV_INTERVAL, SC_ENV_SIGNAL,
					    SC_ENV_SIGNAL_NOW, SC_ENV_EXIT_AFTER_SAVE,
					    SC_ENV_LIBRARY, SC_ENV_LOG_LEVEL,
					    "LD_PRELOAD" };

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

/*
 * Start selfckpt-run with @argv (NULL-terminated, without the tool's name),
 * after setting @env ("NAME=value" pairs, NULL-terminated, or NULL). Standard
 * output goes to /dev/null, standard error to a file read by finish().
 */
static void start(struct run *r, const char *const *env, const char *const *argv)
{
	char tool[PATH_MAX], tmp[] = "/tmp/sc-run-err-XXXXXX";
	const char *args[32] = { build_path(tool, "bin/selfckpt-run") };

	for (int i = 0; argv[i]; i++)
		args[i + 1] = argv[i];
	r->err_fd = mkstemp(tmp);
	cr_assert_geq(r->err_fd, 0);
	unlink(tmp);
	r->pid = fork();
	cr_assert_geq(r->pid, 0);
	if (r->pid == 0) {
		int null = open("/dev/null", O_RDWR);

		clean_env();
		for (int i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(r->err_fd, 2) < 0)
			_exit(120);
		close_range(3, ~0u, 0); /* the runner's own, which the image need not carry */
		execv(args[0], (char *const *)args);
		_exit(121);
	}
}

/* Wait for the run to end; return its exit status, or 128 + the signal that ended it. */
static int finish(struct run *r)
{
	int status;
	ssize_t n;

	cr_assert_eq(waitpid(r->pid, &status, 0), r->pid);
	n = pread(r->err_fd, r->err, sizeof(r->err) - 1, 0);
	r->err[n < 0 ? 0 : n] = '\0';
	close(r->err_fd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The argv of a run of the counter: [options...] -- counter OUT N [mode]. */
#define COUNTER(r, n, ...) "--", counter_path(), (r)->out, #n, ##__VA_ARGS__, NULL

static const char *counter_path(void)
{
	static char path[PATH_MAX];

	return build_path(path, "tests/progs/counter");
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) < 0 ? 0 : st.st_size;
}

/* Wait until the counter has written @lines lines: it is running, past its constructors. */
static void wait_lines(const struct run *r, int lines)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (file_size(r->out) < (off_t)lines * LINE_LEN) {
		cr_assert_lt(ms_since(&t0), WAIT_MS, "the counter wrote no %d lines", lines);
		usleep(5000);
	}
}

/* Wait until DIR/latest names an image; return the name. */
static const char *wait_latest(const struct run *r)
{
	static char target[PATH_MAX];
	char link[PATH_MAX];
	struct timespec t0;
	ssize_t n;

	snprintf(link, sizeof(link), "%s/latest", r->dir);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((n = readlink(link, target, sizeof(target) - 1)) < 0) {
		cr_assert_lt(ms_since(&t0), WAIT_MS, "no '%s' appeared", link);
		usleep(5000);
	}
	target[n] = '\0';
	return target;
}

/* DIR/latest names DIR/counter.<pid>.sckpt, which is a sound image. */
static void check_latest(const struct run *r)
{
	char want[64], image[2 * PATH_MAX], inspect[PATH_MAX], cmd[4 * PATH_MAX];
	const char *got = wait_latest(r);

	snprintf(want, sizeof(want), "counter.%d.sckpt", (int)r->pid);
	cr_assert_str_eq(got, want);
	snprintf(image, sizeof(image), "%s/%s", r->dir, got);
	cr_assert_gt(file_size(image), 0);
	snprintf(cmd, sizeof(cmd), "%s --verify %s > /dev/null",
		 build_path(inspect, "bin/selfckpt-inspect"), image);
	cr_assert_eq(system(cmd), 0, "'%s' does not verify", image);
}

/* The counter's file is that of an uninterrupted run of @n lines. */
static void check_output(const struct run *r, int n)
{
	char want[LINE_LEN + 1], got[LINE_LEN + 1] = "";
	int fd = open(r->out, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(file_size(r->out), (off_t)n * LINE_LEN);
	for (int i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "line %06d\n", i);
		cr_assert_eq(pread(fd, got, LINE_LEN, (off_t)i * LINE_LEN), LINE_LEN);
		cr_assert_str_eq(got, want, "line %d", i);
	}
	close(fd);
}

static void trigger_once(int sig, const char *signal_opt)
{
	struct run r;

	run_init(&r);
	if (signal_opt)
		start(&r, NULL, (const char *[]){ "--dir", r.dir, "--signal", signal_opt,
						  COUNTER(&r, 100) });
	else
		start(&r, NULL, (const char *[]){ "--dir", r.dir, COUNTER(&r, 100) });
	wait_lines(&r, 3);
	cr_assert_eq(kill(r.pid, sig), 0);
	check_latest(&r);
	cr_assert_eq(finish(&r), 0, "%s", r.err);
	check_output(&r, 100);
	cr_expect_eq(r.err[0], '\0', "%s", r.err);
}

Test(run, sigusr1_writes_an_image_and_latest, .timeout = 60)
{
	trigger_once(SIGUSR1, NULL);
}

Test(run, sigusr2_writes_an_image_and_latest, .timeout = 60)
{
	trigger_once(SIGUSR2, NULL);
}

/* Spin until @pid has executed @prog: its exe names it (the loader has started, the library not yet). */
static void wait_exec(pid_t pid, const char *prog)
{
	char link[64], exe[PATH_MAX], want[PATH_MAX];
	struct timespec t0;
	ssize_t n = 0;

	cr_assert_not_null(realpath(prog, want));
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((n = readlink(link, exe, sizeof(exe) - 1)) < 0 || (exe[n] = '\0', strcmp(exe, want)))
		cr_assert_lt(ms_since(&t0), WAIT_MS, "%s never executed %s", link, want);
}

/*
 * A trigger signal sent the moment selfckpt-run has become the program, while
 * the dynamic loader still maps its libraries and before the library's
 * constructor installs its handlers, waits for them (selfckpt-run blocks the
 * trigger signals across its exec): it never takes its default action and
 * ends the program.
 */
Test(run, a_signal_sent_as_the_program_starts_waits_for_the_library, .timeout = 120)
{
	for (int round = 0; round < 8; round++) {
		int sig = round % 2 ? SIGUSR1 : SIGUSR2, status;
		struct run r;

		run_init(&r);
		start(&r, NULL, (const char *[]){ "--dir", r.dir, COUNTER(&r, 40) });
		wait_exec(r.pid, counter_path());
		cr_assert_eq(kill(r.pid, sig), 0);
		status = finish(&r);
		cr_assert_eq(status, 0, "round %d: after %s at its start the program ended with "
			     "status %d: %s", round, strsignal(sig), status, r.err);
		check_latest(&r);
		check_output(&r, 40);
	}
}

Test(run, signal_option_beats_its_variable, .timeout = 60)
{
	struct run r;

	run_init(&r);
	start(&r, (const char *[]){ "SELFCKPT_SIGNAL=RTMIN+4", NULL },
	      (const char *[]){ "--dir", r.dir, "--signal", "rtmin+3", COUNTER(&r, 100) });
	wait_lines(&r, 3);
	cr_assert_eq(kill(r.pid, SIGRTMIN + 3), 0);
	check_latest(&r);
	cr_assert_eq(finish(&r), 0, "%s", r.err);
	check_output(&r, 100);
}

Test(run, directory_from_the_variable, .timeout = 60)
{
	char env[96];
	struct run r;

	run_init(&r);
	snprintf(env, sizeof(env), "SELFCKPT_DIR=%s", r.dir);
	start(&r, (const char *[]){ env, NULL }, (const char *[]){ COUNTER(&r, 100) });
	wait_lines(&r, 3);
	cr_assert_eq(kill(r.pid, SIGUSR2), 0);
	check_latest(&r);
	cr_assert_eq(finish(&r), 0, "%s", r.err);
}

Test(run, interval_writes_images, .timeout = 60)
{
	const char *line = "checkpoint on interval written to";
	struct run r;
	int n = 0;

	run_init(&r);
	start(&r, NULL, (const char *[]){ "--dir", r.dir, "--interval", "0.5", "--log-level",
					  "info", COUNTER(&r, 100) });
	wait_lines(&r, 1);
	check_latest(&r);
	cr_assert_eq(finish(&r), 0, "%s", r.err);
	check_output(&r, 100);
	for (const char *p = r.err; (p = strstr(p, line)); p++)
		n++;
	cr_expect_geq(n, 2, "%s", r.err);
}

/*
 * With SELFCKPT_INCREMENTAL each image gets a name of its own
 * (counter.<pid>.<n>.sckpt): an incremental image needs those before it. Once
 * DIR/latest names a new full image, the older ones go: what is left is the
 * chain of DIR/latest, which restores (and verifies, chain and all).
 */
Test(run, incremental_images_keep_the_chain_latest_needs, .timeout = 60)
{
	const char *line = "checkpoint on interval written to";
	char image[2 * PATH_MAX], want[64], inspect[PATH_MAX], cmd[4 * PATH_MAX];
	struct run r, again;
	struct dirent *e;
	int written = 0, kept = 0;
	DIR *d;

	run_init(&r);
	start(&r, (const char *[]){ "SELFCKPT_INCREMENTAL=2", NULL },
	      (const char *[]){ "--dir", r.dir, "--interval", "0.2", "--log-level", "info",
				COUNTER(&r, 100) });
	cr_assert_eq(finish(&r), 0, "%s", r.err);
	for (const char *p = r.err; (p = strstr(p, line)); p++)
		written++;
	cr_assert_geq(written, 4, "too few images to begin a second chain:\n%s", r.err);
	cr_assert_not_null(d = opendir(r.dir));
	snprintf(want, sizeof(want), "counter.%d.", (int)r.pid);
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".sckpt")) {
			cr_assert(!strncmp(e->d_name, want, strlen(want)), "%s", e->d_name);
			kept++;
		}
	closedir(d);
	/* a full image and at most two incremental ones after it */
	cr_assert(kept >= 1 && kept <= 3 && kept < written, "%d images kept of %d", kept,
		  written);
	snprintf(image, sizeof(image), "%s/%s", r.dir, wait_latest(&r));
	snprintf(cmd, sizeof(cmd), "%s --verify %s > /dev/null",
		 build_path(inspect, "bin/selfckpt-inspect"), image);
	cr_assert_eq(system(cmd), 0, "'%s' or its chain does not verify", image);
	again = r; /* the counter goes on from the chain's instant: the same 100 lines */
	start(&again, NULL, (const char *[]){ "--resume", "--dir", r.dir, COUNTER(&r, 100) });
	cr_assert_eq(finish(&again), 0, "%s", again.err);
	check_output(&r, 100);
}

/*
 * A program that ends while an interval checkpoint is being written (here
 * its first, of 96 MiB, which cuts the counter's sleep short) leaves DIR/latest naming
 * that image: the exit waits for the link too, not only for the image, and
 * no temporary link is left behind.
 */
Test(run, a_program_ending_during_a_checkpoint_leaves_latest, .timeout = 60)
{
	char link[PATH_MAX], target[PATH_MAX], want[64];
	struct run r;
	struct dirent *e;
	DIR *d;
	ssize_t n;

	run_init(&r);
	start(&r, NULL, (const char *[]){ "--dir", r.dir, "--interval", "0.05",
					  COUNTER(&r, 3, "append") });
	cr_assert_eq(finish(&r), 0, "%s", r.err);
	snprintf(link, sizeof(link), "%s/latest", r.dir);
	n = readlink(link, target, sizeof(target) - 1);
	cr_assert_gt(n, 0, "no %s after the run: %s", link, r.err);
	target[n] = '\0';
	snprintf(want, sizeof(want), "counter.%d.sckpt", (int)r.pid);
	cr_assert_str_eq(target, want);
	d = opendir(r.dir);
	cr_assert_not_null(d);
	while ((e = readdir(d)))
		cr_assert_null(strstr(e->d_name, ".tmp"), "'%s' left in %s", e->d_name, r.dir);
	closedir(d);
}

Test(run, exit_after_save_exits_75, .timeout = 60)
{
	struct run r;

	run_init(&r);
	start(&r, NULL, (const char *[]){ "--dir", r.dir, "--exit-after-save", COUNTER(&r, 1000) });
	wait_lines(&r, 3);
	cr_assert_eq(kill(r.pid, SIGUSR1), 0);
	cr_assert_eq(finish(&r), SC_TRIGGER_EXIT_SAVED, "%s", r.err);
	check_latest(&r);
	cr_expect_lt(file_size(r.out), 1000 * LINE_LEN);
}

/*
 * --exit-after-save ends the program at the instant of its image: what it
 * did while the image was being written, the restored program would do
 * again. A counter that appends its lines, with 96 MiB of memory so that the
 * image takes a while, is told to checkpoint, exits with 75, is resumed and
 * finishes: its file holds each line once.
 */
Test(run, exit_after_save_ends_the_program_at_its_image, .timeout = 90)
{
	struct run r, again;

	run_init(&r);
	start(&r, NULL, (const char *[]){ "--dir", r.dir, "--exit-after-save",
					  COUNTER(&r, 60, "append") });
	wait_lines(&r, 3);
	cr_assert_eq(kill(r.pid, SIGUSR2), 0);
	cr_assert_eq(finish(&r), SC_TRIGGER_EXIT_SAVED, "%s", r.err);
	check_latest(&r);
	again = r;
	start(&again, NULL, (const char *[]){ "--resume", "--dir", r.dir,
					      COUNTER(&r, 60, "append") });
	cr_assert_eq(finish(&again), 0, "%s", again.err);
	check_output(&r, 60);
}

Test(run, resume_after_kill_finishes_the_work, .timeout = 60)
{
	struct run r, again;

	run_init(&r);
	start(&r, NULL, (const char *[]){ "--dir", r.dir, COUNTER(&r, 150) });
	wait_lines(&r, 10);
	cr_assert_eq(kill(r.pid, SIGUSR1), 0);
	check_latest(&r);
	wait_lines(&r, 30); /* work the image must redo */
	cr_assert_eq(kill(r.pid, SIGKILL), 0);
	cr_assert_eq(finish(&r), 128 + SIGKILL);
	cr_assert_lt(file_size(r.out), 150 * LINE_LEN, "the counter ended before the kill");

	again = r;
	start(&again, NULL, (const char *[]){ "--resume", "--dir", r.dir, COUNTER(&r, 150) });
	cr_assert_eq(finish(&again), 0, "%s", again.err);
	check_output(&r, 150);
}

/*
 * The batch-job cycle: each round resumes, is told to checkpoint and leaves
 * with 75. With new ids, so that each round writes an image of another name.
 */
Test(run, requeue_cycle_finishes_the_work, .timeout = 60)
{
	struct run r;
	off_t lines = 0;

	run_init(&r);
	for (int round = 0; round < 3; round++) {
		start(&r, (const char *[]){ "SELFCKPT_NEW_IDS=1", NULL },
		      (const char *[]){ "--dir", r.dir, "--exit-after-save", "--resume",
					COUNTER(&r, 150) });
		if (round == 2)
			break;
		wait_lines(&r, (int)lines + 10);
		cr_assert_eq(kill(r.pid, SIGUSR1), 0);
		cr_assert_eq(finish(&r), SC_TRIGGER_EXIT_SAVED, "round %d: %s", round, r.err);
		check_latest(&r); /* the restored process's own pid, from round 1 on */
		lines = file_size(r.out) / LINE_LEN;
		cr_assert_lt(lines, 150, "round %d: the counter ended before the signal", round);
	}
	cr_assert_eq(finish(&r), 0, "%s", r.err);
	check_output(&r, 150);
}

Test(run, resume_without_image_starts_the_program, .timeout = 60)
{
	struct run r;

	run_init(&r);
	start(&r, NULL, (const char *[]){ "--resume", "--dir", r.dir, COUNTER(&r, 20) });
	cr_assert_eq(finish(&r), 0, "%s", r.err);
	check_output(&r, 20);
}

static void own_action(const char *mode, int sig, const char *name)
{
	char want[128];
	struct run r;

	run_init(&r);
	start(&r, NULL, (const char *[]){ "--dir", r.dir, COUNTER(&r, 50, mode) });
	wait_lines(&r, 3);
	cr_assert_eq(kill(r.pid, sig), 0); /* the program's now: no checkpoint */
	cr_assert_eq(finish(&r), 0, "%s", r.err);
	snprintf(want, sizeof(want), "selfckpt: warning: the program sets its own action for %s: "
		 "checkpointing on %s is now up to the program", name, name);
	cr_expect(strstr(r.err, want), "%s", r.err);
	cr_expect_null(strstr(strstr(r.err, want) + 1, want), "warned twice: %s", r.err);
	snprintf(want, sizeof(want), "%s/latest", r.dir);
	cr_expect_neq(access(want, F_OK), 0, "an image was written");
}

Test(run, own_sigaction_is_warned_about, .timeout = 60)
{
	own_action("own-sigaction", SIGUSR1, "SIGUSR1");
}

Test(run, own_signal_is_warned_about, .timeout = 60)
{
	own_action("own-signal", SIGUSR2, "SIGUSR2");
}

/* A program the run's program starts is left alone: only one process has triggers. */
Test(run, programs_it_starts_are_of_the_job, .timeout = 60)
{
	char script[3 * PATH_MAX];
	const char *p, *line = "debug: checkpoints to";
	struct run r;
	int n = 0;

	run_init(&r);
	snprintf(script, sizeof(script), "%s %s 2; %s %s 2; exit 0", counter_path(), r.out,
		 counter_path(), r.out);
	start(&r, NULL, (const char *[]){ "--dir", r.dir, "--log-level", "debug", "--", "sh",
					  "-c", script, NULL });
	cr_assert_eq(finish(&r), 0, "%s", r.err);
	for (p = r.err; (p = strstr(p, line)); p++)
		n++;
	cr_expect_eq(n, 3, "the shell and the two programs it ran each take triggers: %s", r.err);
}

static int run_status(const char *const *argv, char *err)
{
	struct run r;
	int status;

	run_init(&r);
	start(&r, NULL, argv);
	status = finish(&r);
	if (err)
		strcpy(err, r.err);
	return status;
}

Test(run, help_version_and_usage_errors, .timeout = 60)
{
	static char err[ERR_MAX];

	cr_expect_eq(run_status((const char *[]){ "--help", NULL }, NULL), 0);
	cr_expect_eq(run_status((const char *[]){ "--version", NULL }, NULL), 0);
	cr_expect_eq(run_status((const char *[]){ "--bogus", "--", "true", NULL }, err), 64);
	cr_expect(strstr(err, "unknown option '--bogus'"), "%s", err);
	cr_expect_eq(run_status((const char *[]){ "--dir", "/tmp", NULL }, err), 64);
	cr_expect(strstr(err, "no program named"), "%s", err);
	cr_expect_eq(run_status((const char *[]){ "--interval", "0", "--", "true", NULL }, err),
		     64);
	cr_expect(strstr(err, "interval '0'"), "%s", err);
	cr_expect_eq(run_status((const char *[]){ "--signal", "KILL", "--", "true", NULL }, err),
		     64);
	cr_expect(strstr(err, "SIGKILL cannot be caught"), "%s", err);
	cr_expect_eq(run_status((const char *[]){ "--signal-now", "USR1", "--", "true", NULL },
				err), 64);
	cr_expect_eq(run_status((const char *[]){ "--log-level", "loud", "--", "true", NULL },
				err), 64);
}

/* A variable the program would inherit with a value the library cannot use: refused, named. */
Test(run, a_wrong_variable_is_refused_before_the_program_starts, .timeout = 60)
{
	struct run r;

	run_init(&r);
	start(&r, (const char *[]){ "SELFCKPT_CUDA_LOCK_MS=0", NULL },
	      (const char *[]){ "--", "true", NULL });
	cr_expect_eq(finish(&r), 64, "%s", r.err);
	cr_expect(strstr(r.err, "SELFCKPT_CUDA_LOCK_MS='0' is not a whole number from 1 to "
			 "3600000"), "%s", r.err);
	run_init(&r);
	start(&r, (const char *[]){ "SELFCKPT_LEVEL=fast", NULL },
	      (const char *[]){ "--level", "3", "--", "true", NULL });
	cr_expect_eq(finish(&r), 0, "an option beats its variable: %s", r.err);
	cr_expect_null(strstr(r.err, "SELFCKPT_LEVEL"), "%s", r.err);
}

Test(run, missing_program_is_127_and_unrunnable_126, .timeout = 60)
{
	static char err[ERR_MAX];

	cr_expect_eq(run_status((const char *[]){ "--dir", "/tmp", "--", "/nonexistent/prog",
						  NULL }, err), 127);
	cr_expect(strstr(err, "selfckpt-run: error: cannot find the program '/nonexistent/prog'"),
		  "%s", err);
	cr_expect_eq(run_status((const char *[]){ "--dir", "/tmp", "--", "no-such-program-sc",
						  NULL }, NULL), 127);
	cr_expect_eq(run_status((const char *[]){ "--dir", "/tmp", "--", "/tmp", NULL }, err), 126);
	cr_expect(strstr(err, "cannot execute '/tmp': Permission denied"), "%s", err);
}

Test(run, options_after_the_program_are_its_own, .timeout = 60)
{
	cr_expect_eq(run_status((const char *[]){ "--dir", "/tmp", "sh", "-c", "exit 7", "--help",
						  NULL }, NULL), 7);
}

Test(run, signal_names)
{
	char buf[SC_SIGNAL_NAME_MAX];

	cr_expect_eq(sc_signal_parse("USR1"), SIGUSR1);
	cr_expect_eq(sc_signal_parse("SIGUSR2"), SIGUSR2);
	cr_expect_eq(sc_signal_parse("sigterm"), SIGTERM);
	cr_expect_eq(sc_signal_parse("10"), 10);
	cr_expect_eq(sc_signal_parse("RTMIN+3"), SIGRTMIN + 3);
	cr_expect_eq(sc_signal_parse("SIGRTMAX-1"), SIGRTMAX - 1);
	cr_expect_eq(sc_signal_parse("RTMAX"), SIGRTMAX);
	cr_expect_eq(sc_signal_parse("USR3"), -EINVAL);
	cr_expect_eq(sc_signal_parse("0"), -EINVAL);
	cr_expect_eq(sc_signal_parse("99"), -EINVAL);
	cr_expect_eq(sc_signal_parse("10x"), -EINVAL);
	cr_expect_eq(sc_signal_parse(""), -EINVAL);
	cr_expect_str_eq(sc_signal_name(SIGUSR1, buf), "SIGUSR1");
	cr_expect_str_eq(sc_signal_name(SIGRTMIN + 2, buf), "SIGRTMIN+2");
	cr_expect_str_eq(sc_signal_name(SIGRTMAX - 2, buf), "SIGRTMAX-2");
	cr_expect_null(sc_trigger_signal_check(SIGUSR1));
	cr_expect_null(sc_trigger_signal_check(SIGTERM));
	cr_expect_not_null(sc_trigger_signal_check(SIGKILL));
	cr_expect_not_null(sc_trigger_signal_check(SIGSEGV));
	cr_expect_not_null(sc_trigger_signal_check(32));
	cr_expect_not_null(sc_trigger_signal_check(sc_stop_signal()));
}
