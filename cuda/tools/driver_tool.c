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
 * resume with UUIDs (GPU-8f4022ba-..., as nvidia-smi writes them: the GPUs
 * the process's driver showed at its checkpoint, in ordinal order) restores
 * the process onto the GPUs this tool sees, in the same order: the
 * restorer's CUDA_VISIBLE_DEVICES chooses them. Where they are the same GPUs,
 * nothing is remapped.
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

#include "cuda/shared/gpu_uuid.h"

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
static CUuuid old_gpus[SC_CU_GPUS_MAX];
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

/* CUDA_VISIBLE_DEVICES as the restore gave it: read before this tool lists every GPU. */
static const char *restore_visible;

/* Every GPU of the machine, in the driver's order, into @gpus; their number, or -1. */
static int machine_gpus(CUuuid *gpus, int cap)
{
	CUresult r;
	int n = 0;

	unsetenv("CUDA_VISIBLE_DEVICES"); /* before cuInit(), which reads it */
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

/* "GPU-8f4022ba-e0cb-...", as nvidia-smi and CUDA_VISIBLE_DEVICES write a GPU's UUID. */
static void uuid_name(const CUuuid *u, char *out)
{
	sc_cu_uuid_name((const unsigned char *)u->bytes, out);
}

/* One entry of CUDA_VISIBLE_DEVICES (@len bytes): an ordinal or a UUID's prefix; -1: neither. */
static int visible_entry(const char *e, size_t len, const CUuuid *all, int n)
{
	char name[SC_CU_UUID_NAME_LEN];
	int found = -1;

	if (len && e[0] >= '0' && e[0] <= '9') {
		char *end;
		long k = strtol(e, &end, 10);

		return (size_t)(end - e) == len && k < n ? (int)k : -1;
	}
	if (len <= 4 || strncmp(e, "GPU-", 4))
		return -1;
	for (int i = 0; i < n; i++) {
		uuid_name(&all[i], name);
		if (!strncmp(name, e, len)) {
			if (found >= 0)
				return -1; /* a prefix of two */
			found = i;
		}
	}
	return found;
}

/*
 * The GPUs the restore was given, in order, as indices into @all: every one
 * without CUDA_VISIBLE_DEVICES, else its entries up to the first that names
 * none, as the driver reads it.
 */
static int chosen_gpus(const CUuuid *all, int n, int *idx)
{
	const char *v = restore_visible;
	int k = 0;

	if (!v || !*v) {
		for (int i = 0; i < n; i++)
			idx[i] = i;
		return n;
	}
	while (*v && k < n) {
		size_t len = strcspn(v, ",");
		int d = visible_entry(v, len, all, n);

		if (d < 0)
			break;
		idx[k++] = d;
		v += len + (v[len] == ',');
	}
	return k;
}

static int index_of(const CUuuid *u, const CUuuid *all, int n)
{
	for (int i = 0; i < n; i++)
		if (!memcmp(u, &all[i], sizeof(*u)))
			return i;
	return -1;
}

static void add_pair(CUcheckpointGpuPair *pairs, int *k, const CUuuid *from, const CUuuid *to)
{
	char a[SC_CU_UUID_NAME_LEN], b[SC_CU_UUID_NAME_LEN];

	pairs[*k].oldUuid = *from;
	pairs[(*k)++].newUuid = *to;
	if (!timed)
		return;
	uuid_name(from, a);
	uuid_name(to, b);
	fprintf(stderr, "selfckpt-driver-ckpt: GPU %s of process %d: now %s\n", a, pid, b);
}

/*
 * The process's GPU k goes onto the k-th GPU the restore was given. On the
 * machine the process ran on, the driver wants every GPU it checkpointed in
 * the map: the GPUs the process did not see take, in order, the places left
 * free, so that the map is a permutation of the machine's GPUs. Fewer GPUs
 * than the process had: refused, naming what is missing.
 * Return: the number of pairs (0: the same GPUs, nothing to remap), or -1.
 */
static int pair_gpus(CUcheckpointGpuPair *pairs)
{
	static CUuuid all[SC_CU_GPUS_MAX];
	int n = machine_gpus(all, SC_CU_GPUS_MAX), chosen[SC_CU_GPUS_MAX];
	int k = 0, m, same = 1, here = 1;
	bool taken[SC_CU_GPUS_MAX] = { false }, used[SC_CU_GPUS_MAX] = { false };

	if (n < 0)
		return -1;
	m = chosen_gpus(all, n, chosen);
	if (m < old_n) {
		fprintf(stderr, "selfckpt-driver-ckpt: process %d had %d GPU%s at its checkpoint; "
			"this restore sees %d: give it as many (CUDA_VISIBLE_DEVICES)\n", pid, old_n,
			old_n == 1 ? "" : "s", m);
		return -1;
	}
	for (int i = 0; i < old_n; i++) {
		int o = index_of(&old_gpus[i], all, n);

		same &= o == chosen[i];
		here &= o >= 0;
		if (o >= 0)
			used[o] = true;
		taken[chosen[i]] = true;
	}
	if (same)
		return 0;
	for (int i = 0; i < old_n; i++)
		add_pair(pairs, &k, &old_gpus[i], &all[chosen[i]]);
	for (int o = 0, t = 0; here && o < n; o++) { /* the GPUs the process did not see */
		if (used[o])
			continue;
		while (t < n && taken[t])
			t++;
		if (t < n)
			add_pair(pairs, &k, &all[o], &all[t++]);
	}
	return k;
}

static CUresult restore(void)
{
	static CUcheckpointGpuPair pairs[SC_CU_GPUS_MAX];
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
	if (argc - 4 > SC_CU_GPUS_MAX) {
		fprintf(stderr, "selfckpt-driver-ckpt: at most %d GPUs\n", SC_CU_GPUS_MAX);
		return EXIT_USAGE;
	}
	for (int i = 4; i < argc; i++)
		if (sc_cu_uuid_parse(argv[i], (unsigned char *)old_gpus[old_n++].bytes) < 0) {
			fprintf(stderr, "selfckpt-driver-ckpt: '%s' is no GPU UUID (GPU- and 32 hex "
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
	if (getenv("CUDA_VISIBLE_DEVICES"))
		restore_visible = strdup(getenv("CUDA_VISIBLE_DEVICES"));
	load();
	return run(argv[2], (unsigned)timeout_ms) == CUDA_SUCCESS ? 0 : EXIT_DRIVER;
}
