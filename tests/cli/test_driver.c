/* SPDX-License-Identifier: MIT */
/*
 * test_driver.c - a program that loads the CUDA driver itself (as the CUDA
 * Runtime does) under selfckpt-run. With the driver's process checkpoint
 * (a test double of it: tests/softcuda/softcuda_procckpt.c), the checkpoint
 * is made in the driver-assisted mode: the driver locked and checkpointed,
 * then restored and unlocked, the program goes on, and a restore gives the
 * threads their names back and has the driver restore; with new ids the
 * restart stops with exit 69. Where the driver's checkpoint cannot be made (a
 * driver without it, as one older than 570, or one whose checkpoint fails), a
 * checkpoint is refused with a message naming the driver and the cause, the
 * previous image stays as it was and still restores, the driver is not left
 * locked, and the program goes on to its end. A driver loaded but never
 * initialised holds no GPU state: its checkpoint is made. The drivers are the
 * software device under the real one's soname (BUILD/tests/driver/ and
 * driver-old/libcuda.so.1); the processes come from the plain build.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "selfckpt_errors.h"
#include "tests/cli/trip.h"

struct rt {
	struct trip t;
	char out[128], err[128];
	pid_t pid;
};

/* Wait up to 20 s for DIR/@name. */
static bool appears(const struct rt *r, const char *name)
{
	char path[160];
	struct timespec t0;

	snprintf(path, sizeof(path), "%s/%s", r->t.dir, name);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (access(path, F_OK) < 0 && ms_since(&t0) < 20000)
		usleep(10000);
	return access(path, F_OK) == 0;
}

static void mark(const struct rt *r, const char *name)
{
	char path[160];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", r->t.dir, name);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
}

/* Wait up to 20 s for @text in selfckpt-run's standard error. */
static bool said(struct rt *r, const char *text)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		slurp(r->err, r->t.err);
		if (strstr(r->t.err, text))
			return true;
		usleep(20000);
	} while (ms_since(&t0) < 20000);
	return false;
}

/* rtdriver @mode under selfckpt-run, the stand-in driver of BUILD/@driver on its library path. */
static void start_with(struct rt *r, const char *mode, const char *driver)
{
	char tool[PATH_MAX], prog[PATH_MAX], lib[PATH_MAX], dir[96];
	const char *argv[] = { build_path(tool, "bin/selfckpt-run"), "--dir", dir, "--",
			       build_path(prog, "tests/progs/rtdriver"), mode, r->t.dir, NULL };

	trip_init(&r->t);
	snprintf(dir, sizeof(dir), "%s/ckpt", r->t.dir);
	snprintf(r->out, sizeof(r->out), "%s/run.out", r->t.dir);
	snprintf(r->err, sizeof(r->err), "%s/run.err", r->t.dir);
	cr_assert_eq(setenv("LD_LIBRARY_PATH", build_path(lib, driver), 1), 0);
	r->pid = spawn(argv, r->out, r->err);
	cr_assert(appears(r, "a"), "rtdriver did not start");
}

static void start(struct rt *r, const char *mode)
{
	start_with(r, mode, "tests/driver");
}

/* SIGUSR2, then the image it writes (DIR/ckpt/latest) into @st. */
static void checkpoint(struct rt *r, struct stat *st)
{
	struct timespec t0;

	kill(r->pid, SIGUSR2);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (stat(r->t.latest, st) < 0 && ms_since(&t0) < 20000)
		usleep(10000);
	cr_assert_eq(stat(r->t.latest, st), 0, "no image after SIGUSR2: %s",
		     (slurp(r->err, r->t.err), r->t.err));
}

/* The image restored: the program loads the driver again and ends. */
static void restores(struct rt *r, const char *loaded)
{
	char got[OUT_MAX];

	mark(r, "b");
	mark(r, "d"); /* the restored run waits for neither */
	cr_assert_eq(restore(&r->t, got), 0, "the restore failed: %s", r->t.err);
	cr_assert(strstr(got, loaded) && strstr(got, "devices 1\ndone\n"),
		  "the restored run printed: %s", got);
}

Test(driver, in_use_refuses_the_checkpoint_and_keeps_the_last_image, .timeout = 120)
{
	struct stat first, now;
	char out[OUT_MAX];
	struct rt r;

	start_with(&r, "init", "tests/driver-old");
	checkpoint(&r, &first);
	mark(&r, "b");
	cr_assert(appears(&r, "c"), "rtdriver did not load the driver");
	kill(r.pid, SIGUSR2);
	cr_assert(said(&r, "the checkpoint on SIGUSR2 failed"), "no refusal: %s", r.t.err);
	cr_assert(strstr(r.t.err, "tests/driver-old/libcuda.so.1") &&
		  strstr(r.t.err, "is in use in this process") &&
		  strstr(r.t.err, "has no cuCheckpointProcess") &&
		  strstr(r.t.err, "needs driver 570 or later") &&
		  strstr(r.t.err, "the previous image stays") &&
		  strstr(r.t.err, "the checkpoint on SIGUSR2 failed; the program goes on"),
		  "the refusal does not say what and why: %s", r.t.err);
	cr_assert_eq(stat(r.t.latest, &now), 0);
	cr_assert(now.st_ino == first.st_ino && now.st_size == first.st_size &&
		  now.st_mtim.tv_sec == first.st_mtim.tv_sec &&
		  now.st_mtim.tv_nsec == first.st_mtim.tv_nsec,
		  "the image of the first checkpoint was replaced");
	mark(&r, "d");
	cr_assert_eq(wait_status(r.pid), 0, "the program did not go on: %s", r.t.err);
	slurp(r.out, out);
	cr_assert_str_eq(out, "before the driver\ndriver loaded and initialised\n"
			 "devices 1\ndone\n");
	restores(&r, "driver loaded and initialised\n");
}

Test(driver, loaded_but_never_initialised_is_checkpointed, .timeout = 120)
{
	struct stat st;
	struct rt r;

	start(&r, "load");
	mark(&r, "b");
	cr_assert(appears(&r, "c"), "rtdriver did not load the driver");
	checkpoint(&r, &st);
	kill(r.pid, SIGKILL);
	wait_status(r.pid);
	restores(&r, "");
}

/* --cuda takes auto, driver or proxy, and passes it on as SELFCKPT_CUDA. */
Test(driver, cuda_option_is_checked_and_passed_on, .timeout = 30)
{
	char tool[PATH_MAX], out[OUT_MAX], err[OUT_MAX];
	const char *bad[] = { build_path(tool, "bin/selfckpt-run"), "--cuda", "gpu", "--",
			      "/bin/true", NULL };
	const char *good[] = { tool, "--cuda=proxy", "--", "/bin/sh", "-c",
			       "echo mode=$SELFCKPT_CUDA", NULL };
	struct trip t;

	trip_init(&t);
	cr_assert_eq(wait_status(spawn(bad, "/dev/null", "/tmp/sc-driver-opt.err")), 64);
	slurp("/tmp/sc-driver-opt.err", err);
	unlink("/tmp/sc-driver-opt.err");
	cr_assert(strstr(err, "CUDA mode 'gpu' is none of auto, driver, proxy"), "%s", err);
	cr_assert_eq(wait_status(spawn(good, "/tmp/sc-driver-opt.out", "/dev/null")), 0);
	slurp("/tmp/sc-driver-opt.out", out);
	unlink("/tmp/sc-driver-opt.out");
	cr_assert_str_eq(out, "mode=proxy\n");
}

/* selfckpt-driver-ckpt PID state: what the driver says of the process, as @want. */
static void driver_state(struct rt *r, const char *want)
{
	char tool[PATH_MAX], cmd[PATH_MAX + 64], got[64] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s %d state 2>&1", build_path(tool, "bin/selfckpt-driver-ckpt"),
		 (int)r->pid);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	if (!fgets(got, sizeof(got), p))
		got[0] = '\0';
	pclose(p);
	cr_assert_str_eq(got, want, "the driver says the process is %s", got);
}

/* DIR/ckpt/latest restored, with @env ("NAME=VALUE", or "" for none): its status. */
static int restore_with(struct rt *r, const char *env, char *out, char *err)
{
	char tool[PATH_MAX], o[160], e[160], name[64];
	const char *argv[] = { build_path(tool, "bin/selfckpt-restore"), r->t.latest, NULL };
	int st;

	snprintf(o, sizeof(o), "%s/restored.out", r->t.dir);
	snprintf(e, sizeof(e), "%s/restored.err", r->t.dir);
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(env, "="), env);
	if (*env)
		cr_assert_eq(setenv(name, env + strlen(name) + 1, 1), 0);
	st = wait_status(spawn(argv, o, e));
	if (*env)
		unsetenv(name);
	slurp(o, out);
	slurp(e, err);
	return st;
}

/* Whether this machine restores with the same ids (user namespaces); where not, the restart
 * must have stopped with exit 69, saying that the driver restores only into the same id. */
static bool same_ids_here(const char *err, int status)
{
	if (!strstr(err, "comes back with new ids"))
		return true;
	cr_assert(status == 69 && strstr(err, "only into a process of the same id"),
		  "restored with new ids: exit %d: %s", status, err);
	return false;
}

Test(driver, checkpointed_with_the_drivers_help_and_restored, .timeout = 120)
{
	char out[OUT_MAX], err[OUT_MAX];
	struct stat st;
	struct rt r;
	int status;

	start(&r, "init");
	mark(&r, "b");
	cr_assert(appears(&r, "c"), "rtdriver did not load the driver");
	checkpoint(&r, &st);
	driver_state(&r, "running\n"); /* restored and unlocked again */
	mark(&r, "d");
	cr_assert_eq(wait_status(r.pid), 0, "the program did not go on: %s", r.t.err);
	slurp(r.out, out);
	cr_assert_str_eq(out, "before the driver\ndriver loaded and initialised\n"
			 "devices 1\ndone\n");
	cr_assert_null(strstr(r.t.err, "error"), "%s", r.t.err);

	/* another process id: the driver cannot restore into it */
	status = restore_with(&r, "SELFCKPT_NEW_IDS=1", out, err);
	cr_assert(status == 69 && strstr(err, "only into a process of the same id"),
		  "restored with new ids: exit %d: %s", status, err);

	status = restore_with(&r, "", out, err);
	if (same_ids_here(err, status))
		cr_assert(status == 0 && !strcmp(out, "devices 1\ndone\n"),
			  "the restore: exit %d, printed '%s': %s", status, out, err);
}

/*
 * Two devices; the program sees the first (CUDA_VISIBLE_DEVICES=0). Restored
 * with the second, the driver is told that it takes the first one's place;
 * restored with the first, it is told nothing.
 */
Test(driver, restored_onto_the_gpu_the_restorer_sees, .timeout = 120)
{
	char out[OUT_MAX], err[OUT_MAX], log[160], pairs[OUT_MAX];
	struct stat st;
	struct rt r;
	int status;

	cr_assert_eq(setenv("SOFTCUDA_DEVICES", "2", 1), 0);
	cr_assert_eq(setenv("CUDA_VISIBLE_DEVICES", "0", 1), 0);
	start(&r, "init");
	snprintf(log, sizeof(log), "%s/pairs", r.t.dir);
	cr_assert_eq(setenv("SOFTCUDA_CKPT_LOG", log, 1), 0);
	mark(&r, "b");
	cr_assert(appears(&r, "c"), "rtdriver did not load the driver");
	checkpoint(&r, &st);
	mark(&r, "d");
	cr_assert_eq(wait_status(r.pid), 0, "the program did not go on: %s", r.t.err);
	cr_assert_eq(access(log, F_OK), -1, "the checkpoint's own restore was remapped");

	status = restore_with(&r, "CUDA_VISIBLE_DEVICES=1", out, err);
	if (!same_ids_here(err, status))
		return;
	cr_assert(status == 0 && !strcmp(out, "devices 1\ndone\n"),
		  "restored onto device 1: exit %d, printed '%s': %s", status, out, err);
	slurp(log, pairs);
	/* device 1, which the program did not see, takes device 0's place: a permutation */
	cr_assert_str_eq(pairs, "pair 0 1\npair 1 0\n", "the driver was given the wrong GPU pairs");

	status = restore_with(&r, "CUDA_VISIBLE_DEVICES=0", out, err);
	cr_assert(status == 0 && !strcmp(out, "devices 1\ndone\n"),
		  "restored onto device 0: exit %d, printed '%s': %s", status, out, err);
	slurp(log, pairs);
	cr_assert_str_eq(pairs, "pair 0 1\npair 1 0\n", "the same GPU was remapped");
}

/* The program saw two devices; a restore that sees one is refused with exit 69, saying so. */
Test(driver, restore_with_fewer_gpus_is_refused, .timeout = 120)
{
	char out[OUT_MAX], err[OUT_MAX];
	struct stat st;
	struct rt r;
	int status;

	cr_assert_eq(setenv("SOFTCUDA_DEVICES", "2", 1), 0);
	start(&r, "init");
	mark(&r, "b");
	cr_assert(appears(&r, "c"), "rtdriver did not load the driver");
	checkpoint(&r, &st);
	mark(&r, "d");
	cr_assert_eq(wait_status(r.pid), 0, "the program did not go on: %s", r.t.err);

	status = restore_with(&r, "CUDA_VISIBLE_DEVICES=1", out, err);
	if (!same_ids_here(err, status))
		return;
	cr_assert(status == 69 && strstr(err, "had 2 GPUs at its checkpoint; this restore "
					       "sees 1"),
		  "restored with one GPU of two: exit %d: %s", status, err);
}

Test(driver, failed_driver_checkpoint_refuses_and_unlocks, .timeout = 120)
{
	struct stat first, now;
	struct rt r;

	cr_assert_eq(setenv("SOFTCUDA_CKPT_FAIL", "checkpoint", 1), 0);
	start(&r, "init");
	checkpoint(&r, &first);
	mark(&r, "b");
	cr_assert(appears(&r, "c"), "rtdriver did not load the driver");
	kill(r.pid, SIGUSR2);
	cr_assert(said(&r, "the checkpoint on SIGUSR2 failed"), "no refusal: %s", r.t.err);
	cr_assert(strstr(r.t.err, "the driver's process checkpoint failed") &&
		  strstr(r.t.err, "the driver's checkpoint of process") &&
		  strstr(r.t.err, "CUDA_ERROR_UNKNOWN"), "the cause is not said: %s", r.t.err);
	driver_state(&r, "running\n"); /* not left locked */
	cr_assert_eq(stat(r.t.latest, &now), 0);
	cr_assert(now.st_ino == first.st_ino && now.st_mtim.tv_nsec == first.st_mtim.tv_nsec,
		  "the image of the first checkpoint was replaced");
	mark(&r, "d");
	cr_assert_eq(wait_status(r.pid), 0, "the program did not go on: %s", r.t.err);
}

/*
 * Linked statically with the flags pkg-config --static gives, a program that
 * loads the driver itself still has its checkpoint refused (the driver has no
 * process checkpoint here) rather than an image written.
 */
Test(driver, static_link_sees_the_driver, .timeout = 30)
{
	char prog[PATH_MAX], lib[PATH_MAX], tool[PATH_MAX], image[96], out[OUT_MAX], want[64];
	const char *argv[] = { build_path(prog, "tests/progs/rtstatic"),
			       build_path(lib, "tests/driver-old/libcuda.so.1"), image, NULL };
	struct trip t;

	trip_init(&t);
	snprintf(image, sizeof(image), "%s/static.sckpt", t.dir);
	cr_assert_eq(setenv("SELFCKPT_LIBCUDA", lib, 1), 0);
	cr_assert_eq(setenv("SELFCKPT_DRIVER_CKPT", build_path(tool, "bin/selfckpt-driver-ckpt"),
			    1), 0);
	cr_assert_eq(wait_status(spawn(argv, "/tmp/sc-rtstatic.out", "/dev/null")), 0);
	slurp("/tmp/sc-rtstatic.out", out);
	unlink("/tmp/sc-rtstatic.out");
	snprintf(want, sizeof(want), "selfckpt_save: %d\n", -SELFCKPT_EDRIVER);
	cr_assert(strstr(out, want), "not refused (-SELFCKPT_EDRIVER): %s", out);
	cr_assert_neq(access(image, F_OK), 0, "an image was written");
}

/*
 * rtdriver-linked @mode under selfckpt-run with @cuda_opt, checkpointed: what
 * the image says of its mode; selfckpt-run's standard error into @err.
 */
static void linked_run(const char *mode, const char *cuda_opt, const char *want, char *err)
{
	char tool[PATH_MAX], prog[PATH_MAX], lib[PATH_MAX], dir[96], out[OUT_MAX], insp[PATH_MAX];
	const char *argv[] = { build_path(tool, "bin/selfckpt-run"), cuda_opt, "--dir", dir, "--",
			       build_path(prog, "tests/progs/rtdriver-linked"), mode, NULL, NULL };
	const char *inspect[] = { build_path(insp, "bin/selfckpt-inspect"), NULL, NULL };
	struct stat st;
	struct rt r;

	trip_init(&r.t);
	argv[7] = r.t.dir;
	snprintf(dir, sizeof(dir), "%s/ckpt", r.t.dir);
	snprintf(r.out, sizeof(r.out), "%s/run.out", r.t.dir);
	snprintf(r.err, sizeof(r.err), "%s/run.err", r.t.dir);
	cr_assert_eq(setenv("LD_LIBRARY_PATH", build_path(lib, "tests/driver"), 1), 0);
	/* the GPU proxy of the proxy mode loads the same device */
	cr_assert_eq(setenv("SELFCKPT_LIBCUDA", build_path(lib, "tests/driver/libcuda.so.1"), 1),
		     0);
	r.pid = spawn(argv, r.out, r.err);
	cr_assert(appears(&r, "a"), "rtdriver-linked did not start");
	mark(&r, "b");
	cr_assert(appears(&r, "c"), "rtdriver-linked did not initialise the driver: %s",
		  (slurp(r.err, r.t.err), r.t.err));
	checkpoint(&r, &st);
	mark(&r, "d");
	cr_assert_eq(wait_status(r.pid), 0, "the program did not go on: %s", r.t.err);
	inspect[1] = r.t.latest;
	cr_assert_eq(wait_status(spawn(inspect, r.out, "/dev/null")), 0);
	slurp(r.out, out);
	cr_assert(strstr(out, want), "the image is not of the mode '%s':\n%s", want, out);
	slurp(r.err, err);
}

static void linked_mode(const char *cuda_opt, const char *want)
{
	char err[OUT_MAX];

	linked_run("linked", cuda_opt, want, err);
	cr_assert_null(strstr(err, "--cuda=driver"), "a warning for a program that does not mix "
		       "the APIs: %s", err);
}

/*
 * A -lcuda program: by default its Driver API calls reach selfckpt's entry
 * points and the GPU proxy; with --cuda=driver they reach the driver, and the
 * checkpoint is driver-assisted.
 */
Test(driver, linked_program_proxy_by_default, .timeout = 120)
{
	linked_mode("--cuda=auto", "CUDA mode     proxy");
}

Test(driver, linked_program_driver_assisted_with_cuda_driver, .timeout = 120)
{
	linked_mode("--cuda=driver", "CUDA mode     driver-assisted");
}

/*
 * A -lcuda program that also initialises the driver itself (as the Runtime
 * would) under the default mode: its own calls reach the GPU proxy, so it is
 * told, once, that the two share nothing and that --cuda=driver is the cure.
 */
Test(driver, mixed_program_is_told_to_use_cuda_driver, .timeout = 120)
{
	char err[OUT_MAX];
	const char *w = "runs in it too";

	linked_run("mixed", "--cuda=auto", "CUDA mode", err);
	cr_assert(strstr(err, w) && strstr(err, "selfckpt-run --cuda=driver"),
		  "no warning: %s", err);
	cr_assert_null(strstr(strstr(err, w) + 1, w), "said more than once: %s", err);
}
