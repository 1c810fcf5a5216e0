/* SPDX-License-Identifier: MIT */
/*
 * driver_tool.c - selfckpt-driver-ckpt, the process that asks the CUDA
 * driver to checkpoint or restore another process's GPU state.
 *
 *   selfckpt-driver-ckpt PID checkpoint [TIMEOUT_MS]   lock, then checkpoint
 *   selfckpt-driver-ckpt PID resume                    restore, then unlock
 *   selfckpt-driver-ckpt PID state|tid|lock|unlock|save|restore
 *
 * The library runs it at a checkpoint and at a restart of a process whose
 * driver it cannot ask itself: the driver's process checkpoint is made from
 * another process (a CUDA process must not fork, and its own driver is the
 * one being locked). The tool is executed fresh, so it loads a driver of its
 * own (SELFCKPT_LIBCUDA, default libcuda.so.1). "checkpoint" unlocks again if
 * the checkpoint fails, so the program is never left locked.
 *
 * Exit status: 0 done; 64 usage; 69 the driver refused, or has no process
 * checkpoint (driver older than 570); a line on standard error says which.
 * With SELFCKPT_LOG_LEVEL=debug each call's time goes to standard error.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#define EXIT_USAGE 64
#define EXIT_DRIVER 69

static struct {
	CUresult (*init)(unsigned);
	CUresult (*error_name)(CUresult, const char **);
	CUresult (*get_state)(int, CUprocessState *);
	CUresult (*get_tid)(int, int *);
	CUresult (*lock)(int, CUcheckpointLockArgs *);
	CUresult (*checkpoint)(int, CUcheckpointCheckpointArgs *);
	CUresult (*restore)(int, CUcheckpointRestoreArgs *);
	CUresult (*unlock)(int, CUcheckpointUnlockArgs *);
} drv;

static int pid;
static bool timed;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static const char *result_name(CUresult r)
{
	const char *s = NULL;

	if (drv.error_name && drv.error_name(r, &s) == CUDA_SUCCESS && s)
		return s;
	return "an unknown CUresult";
}

static void *need(void *h, const char *lib, const char *sym)
{
	void *f = dlsym(h, sym);

	if (!f) {
		fprintf(stderr, "selfckpt-driver-ckpt: the CUDA driver '%s' has no %s: its "
			"process checkpoint needs driver 570 or later\n", lib, sym);
		exit(EXIT_DRIVER);
	}
	return f;
}

static void load(void)
{
	const char *lib = getenv("SELFCKPT_LIBCUDA");
	void *h;

	if (!lib || !*lib)
		lib = "libcuda.so.1";
	if (!(h = dlopen(lib, RTLD_NOW | RTLD_LOCAL))) {
		fprintf(stderr, "selfckpt-driver-ckpt: cannot load the CUDA driver '%s': %s\n",
			lib, dlerror());
		exit(EXIT_DRIVER);
	}
	*(void **)&drv.init = need(h, lib, "cuInit");
	*(void **)&drv.error_name = need(h, lib, "cuGetErrorName");
	*(void **)&drv.get_state = need(h, lib, "cuCheckpointProcessGetState");
	*(void **)&drv.get_tid = need(h, lib, "cuCheckpointProcessGetRestoreThreadId");
	*(void **)&drv.lock = need(h, lib, "cuCheckpointProcessLock");
	*(void **)&drv.checkpoint = need(h, lib, "cuCheckpointProcessCheckpoint");
	*(void **)&drv.restore = need(h, lib, "cuCheckpointProcessRestore");
	*(void **)&drv.unlock = need(h, lib, "cuCheckpointProcessUnlock");
}

/* One call: its time when asked for; a failure said on standard error. */
static CUresult done(const char *what, CUresult r, double t0)
{
	if (timed)
		fprintf(stderr, "selfckpt-driver-ckpt: %s of process %d: %.3f ms\n", what, pid,
			(now() - t0) * 1e3);
	if (r != CUDA_SUCCESS)
		fprintf(stderr, "selfckpt-driver-ckpt: the driver's %s of process %d failed: %s\n",
			what, pid, result_name(r));
	return r;
}

static CUresult lock(unsigned timeout_ms)
{
	CUcheckpointLockArgs a = { .timeoutMs = timeout_ms };
	double t0 = now();

	return done("lock", drv.lock(pid, &a), t0);
}

static CUresult save(void)
{
	CUcheckpointCheckpointArgs a = { 0 };
	double t0 = now();

	return done("checkpoint", drv.checkpoint(pid, &a), t0);
}

static CUresult restore(void)
{
	CUcheckpointRestoreArgs a = { 0 };
	double t0 = now();

	return done("restore", drv.restore(pid, &a), t0);
}

static CUresult unlock(void)
{
	CUcheckpointUnlockArgs a = { 0 };
	double t0 = now();

	return done("unlock", drv.unlock(pid, &a), t0);
}

static CUresult state(void)
{
	static const char *const names[] = { "running", "locked", "checkpointed", "failed" };
	CUprocessState s;
	CUresult r = drv.get_state(pid, &s);

	if (r == CUDA_SUCCESS)
		printf("%s\n", (unsigned)s < 4 ? names[s] : "unknown");
	return done("state query", r, now());
}

static CUresult restore_tid(void)
{
	int tid = 0;
	CUresult r = drv.get_tid(pid, &tid);

	if (r == CUDA_SUCCESS)
		printf("%d\n", tid);
	return done("restore thread query", r, now());
}

static CUresult run(const char *verb, unsigned timeout_ms)
{
	CUresult r;

	if (!strcmp(verb, "checkpoint")) {
		if ((r = lock(timeout_ms)) != CUDA_SUCCESS)
			return r;
		if ((r = save()) != CUDA_SUCCESS)
			unlock(); /* the program goes on, its GPU state where it was */
		return r;
	}
	if (!strcmp(verb, "resume")) {
		if ((r = restore()) != CUDA_SUCCESS)
			return r;
		return unlock();
	}
	if (!strcmp(verb, "state"))
		return state();
	if (!strcmp(verb, "tid"))
		return restore_tid();
	if (!strcmp(verb, "lock"))
		return lock(timeout_ms);
	if (!strcmp(verb, "save"))
		return save();
	if (!strcmp(verb, "restore"))
		return restore();
	if (!strcmp(verb, "unlock"))
		return unlock();
	fprintf(stderr, "selfckpt-driver-ckpt: unknown action '%s'\n", verb);
	exit(EXIT_USAGE);
}

int main(int argc, char **argv)
{
	const char *level = getenv("SELFCKPT_LOG_LEVEL");
	unsigned long timeout_ms = 0;
	char *end;

	if (argc < 3 || argc > 4 || !strcmp(argv[1], "--help")) {
		fprintf(argc == 2 ? stdout : stderr,
			"usage: selfckpt-driver-ckpt PID checkpoint|resume|state|tid|lock|save|"
			"restore|unlock [TIMEOUT_MS]\n");
		return argc == 2 ? 0 : EXIT_USAGE;
	}
	pid = (int)strtol(argv[1], &end, 10);
	if (*end || pid <= 0) {
		fprintf(stderr, "selfckpt-driver-ckpt: '%s' is no process id\n", argv[1]);
		return EXIT_USAGE;
	}
	if (argc == 4 && ((timeout_ms = strtoul(argv[3], &end, 10)), *end)) {
		fprintf(stderr, "selfckpt-driver-ckpt: '%s' is no time in ms\n", argv[3]);
		return EXIT_USAGE;
	}
	timed = level && (!strcmp(level, "debug") || !strcmp(level, "4"));
	load();
	return run(argv[2], (unsigned)timeout_ms) == CUDA_SUCCESS ? 0 : EXIT_DRIVER;
}
