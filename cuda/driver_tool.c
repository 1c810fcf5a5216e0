/* SPDX-License-Identifier: MIT */
/*
 * driver_tool.c - selfckpt-driver-ckpt, the process that asks the CUDA
 * driver to checkpoint or restore another process's GPU state.
 *
 *   selfckpt-driver-ckpt PID checkpoint [TIMEOUT_MS]   lock, then checkpoint
 *   selfckpt-driver-ckpt PID resume [TIMEOUT_MS [UUID...]]
 *                                                      restore, then unlock
 *   selfckpt-driver-ckpt PID state|tid|lock|unlock|save|restore
 *
 * resume with UUIDs (32 hex digits each: the GPUs the process's driver showed
 * at its checkpoint, in ordinal order) restores the process onto the GPUs this
 * tool sees, in the same order: the restorer's CUDA_VISIBLE_DEVICES chooses
 * them. Where they are the same GPUs, nothing is remapped.
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
	CUresult (*device_count)(int *);
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*device_uuid)(CUuuid *, CUdevice);
} drv;

/* The GPUs of the process at its checkpoint, in ordinal order (resume's UUIDs). */
#define GPUS_MAX 64
static CUuuid old_gpus[GPUS_MAX];
static int old_n;

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
	*(void **)&drv.device_count = need(h, lib, "cuDeviceGetCount");
	*(void **)&drv.device_get = need(h, lib, "cuDeviceGet");
	*(void **)&drv.device_uuid = need(h, lib, "cuDeviceGetUuid_v2");
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

static void uuid_str(const CUuuid *u, char *out)
{
	for (int i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", (unsigned char)u->bytes[i]);
}

/* The GPUs this tool sees, in ordinal order, into @gpus; their number, or -1. */
static int visible_gpus(CUuuid *gpus, int cap)
{
	CUresult r;
	int n = 0;

	if ((r = drv.init(0)) != CUDA_SUCCESS || (r = drv.device_count(&n)) != CUDA_SUCCESS) {
		fprintf(stderr, "selfckpt-driver-ckpt: cannot list the GPUs: %s\n", result_name(r));
		return -1;
	}
	for (int i = 0; i < n && i < cap; i++) {
		CUdevice dev;

		if ((r = drv.device_get(&dev, i)) != CUDA_SUCCESS ||
		    (r = drv.device_uuid(&gpus[i], dev)) != CUDA_SUCCESS) {
			fprintf(stderr, "selfckpt-driver-ckpt: no UUID for GPU %d: %s\n", i,
				result_name(r));
			return -1;
		}
	}
	return n < cap ? n : cap;
}

/*
 * The process's GPU k onto the GPU k this tool sees, where they differ. Fewer
 * GPUs than the process had: the restore is refused, naming what is missing.
 * Return: the number of pairs (0: same GPUs, nothing to remap), or -1.
 */
static int pair_gpus(CUcheckpointGpuPair *pairs)
{
	static CUuuid now_gpus[GPUS_MAX];
	int n = visible_gpus(now_gpus, GPUS_MAX), k = 0;
	char a[33], b[33];

	if (n < 0)
		return -1;
	if (n < old_n) {
		fprintf(stderr, "selfckpt-driver-ckpt: process %d had %d GPU%s at its checkpoint; "
			"this restore sees %d: give it as many (CUDA_VISIBLE_DEVICES)\n", pid, old_n,
			old_n == 1 ? "" : "s", n);
		return -1;
	}
	for (int i = 0; i < old_n; i++) {
		if (!memcmp(&old_gpus[i], &now_gpus[i], sizeof(CUuuid)))
			continue;
		pairs[k].oldUuid = old_gpus[i];
		pairs[k++].newUuid = now_gpus[i];
		uuid_str(&old_gpus[i], a);
		uuid_str(&now_gpus[i], b);
		if (timed)
			fprintf(stderr, "selfckpt-driver-ckpt: GPU %d of process %d: %s now %s\n", i,
				pid, a, b);
	}
	return k;
}

static CUresult restore(void)
{
	static CUcheckpointGpuPair pairs[GPUS_MAX];
	CUcheckpointRestoreArgs a = { 0 };
	int n = old_n ? pair_gpus(pairs) : 0;
	double t0;

	if (n < 0)
		return CUDA_ERROR_INVALID_DEVICE;
	if (n) {
		a.gpuPairs = pairs;
		a.gpuPairsCount = (unsigned)n;
	}
	t0 = now();
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

/* A GPU's UUID from 32 hex digits (dashes allowed); -1 when it is none. */
static int parse_uuid(const char *s, CUuuid *u)
{
	int k = 0;

	for (; *s && k < 32; s++) {
		int v;

		if (*s == '-')
			continue;
		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			v = *s - 'A' + 10;
		else
			return -1;
		if (k % 2)
			u->bytes[k / 2] = (char)((unsigned char)u->bytes[k / 2] | v);
		else
			u->bytes[k / 2] = (char)(v << 4);
		k++;
	}
	return k == 32 && !*s ? 0 : -1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: selfckpt-driver-ckpt PID checkpoint|resume|state|tid|lock|save|"
		"restore|unlock [TIMEOUT_MS]\n"
		"       selfckpt-driver-ckpt PID resume|restore TIMEOUT_MS UUID...\n");
}

int main(int argc, char **argv)
{
	const char *level = getenv("SELFCKPT_LOG_LEVEL");
	unsigned long timeout_ms = 0;
	char *end;

	if (argc < 3 || !strcmp(argv[1], "--help")) {
		usage(argc == 2 ? stdout : stderr);
		return argc == 2 ? 0 : EXIT_USAGE;
	}
	if (argc > 4 && strcmp(argv[2], "resume") && strcmp(argv[2], "restore")) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (argc - 4 > GPUS_MAX) {
		fprintf(stderr, "selfckpt-driver-ckpt: at most %d GPUs\n", GPUS_MAX);
		return EXIT_USAGE;
	}
	for (int i = 4; i < argc; i++)
		if (parse_uuid(argv[i], &old_gpus[old_n++]) < 0) {
			fprintf(stderr, "selfckpt-driver-ckpt: '%s' is no GPU UUID (32 hex "
				"digits)\n", argv[i]);
			return EXIT_USAGE;
		}
	pid = (int)strtol(argv[1], &end, 10);
	if (*end || pid <= 0) {
		fprintf(stderr, "selfckpt-driver-ckpt: '%s' is no process id\n", argv[1]);
		return EXIT_USAGE;
	}
	if (argc >= 4 && ((timeout_ms = strtoul(argv[3], &end, 10)), *end)) {
		fprintf(stderr, "selfckpt-driver-ckpt: '%s' is no time in ms\n", argv[3]);
		return EXIT_USAGE;
	}
	timed = level && (!strcmp(level, "debug") || !strcmp(level, "4"));
	load();
	return run(argv[2], (unsigned)timeout_ms) == CUDA_SUCCESS ? 0 : EXIT_DRIVER;
}
