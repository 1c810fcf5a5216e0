/* SPDX-License-Identifier: MIT */
/*
 * softcuda_procckpt.c - the driver's process checkpoint (cuCheckpointProcess*)
 * as a test double, built only into the stand-in that plays a driver loaded
 * by the program itself (BUILD/tests/driver/libcuda.so.1).
 *
 * It keeps what the real driver showed (H100, driver 580) where selfckpt can
 * get it wrong, and nothing of the GPU. A process's state (running, locked,
 * checkpointed) lives in the process, in a memfd the library makes as it
 * loads; the process that asks (selfckpt-driver-ckpt) reaches it through
 * /proc/PID/fd/N, as the real driver's caller reaches the target's eventfds,
 * so the state is in an image of the process and comes back with it. A call
 * out of turn fails with CUDA_ERROR_ILLEGAL_STATE, as the driver's. The
 * library starts a thread named "cuda-EvtHandlr" as it loads, and a restore
 * into a process that has no thread of that name answers
 * CUDA_ERROR_NOT_INITIALIZED, as the real driver did when a restore lost its
 * threads' names.
 * SOFTCUDA_CKPT_FAIL=lock|checkpoint|restore|unlock makes that step fail with
 * CUDA_ERROR_UNKNOWN. A call into the driver by a process whose GPU state the
 * checkpoint holds aborts it, as the real driver crashed such a process (a
 * thread of a restored program that called it before the driver's restore).
 * A restore's GPU pairs must each name a device of the
 * software device as old and one the caller sees as new (else
 * CUDA_ERROR_INVALID_DEVICE); SOFTCUDA_CKPT_LOG=FILE has them written there,
 * one line each: "pair OLD NEW" (the devices' numbers).
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "softcuda_internal.h"

#define THREAD_NAME "cuda-EvtHandlr"

enum { RUNNING, LOCKED, CHECKPOINTED };

#define STATE_MEMFD "softcuda-procckpt"

/* The state memfd of process @pid, opened through /proc/PID/fd; -1 when it has none. */
static int state_open(int pid)
{
	char dir[64], link[400], target[256];
	struct dirent *e;
	int fd = -1;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	if (!(d = opendir(dir)))
		return -1;
	while (fd < 0 && (e = readdir(d))) {
		ssize_t n;

		snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (!strncmp(target, "/memfd:" STATE_MEMFD, strlen("/memfd:" STATE_MEMFD)))
			fd = open(link, O_RDWR | O_CLOEXEC);
	}
	closedir(d);
	return fd;
}

static int state_get(int fd)
{
	int s = RUNNING;

	if (pread(fd, &s, sizeof(s), 0) != (ssize_t)sizeof(s))
		s = RUNNING;
	return s;
}

static CUresult state_set(int fd, int s)
{
	return pwrite(fd, &s, sizeof(s), 0) == (ssize_t)sizeof(s) ? CUDA_SUCCESS :
								     CUDA_ERROR_OPERATING_SYSTEM;
}

static bool fails(const char *step)
{
	const char *f = getenv("SOFTCUDA_CKPT_FAIL");

	return f && !strcmp(f, step);
}

/* The id of @pid's thread named THREAD_NAME, or 0. */
static int driver_thread(int pid)
{
	char dir[64], path[400], name[32];
	struct dirent *e;
	int tid = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	if (!(d = opendir(dir)))
		return 0;
	while (!tid && (e = readdir(d))) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s/comm", dir, e->d_name);
		if (e->d_name[0] == '.' || !(f = fopen(path, "re")))
			continue;
		if (fgets(name, sizeof(name), f) && !strncmp(name, THREAD_NAME "\n", 16))
			tid = atoi(e->d_name);
		fclose(f);
	}
	closedir(d);
	return tid;
}

/* One step from state @from to @to, if the process has the driver and is in @from. */
static CUresult step(int pid, int from, int to, const char *name)
{
	int fd = pid > 0 ? state_open(pid) : -1;
	CUresult rc;

	if (fd < 0)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (state_get(fd) != from)
		rc = CUDA_ERROR_ILLEGAL_STATE;
	else if (fails(name))
		rc = CUDA_ERROR_UNKNOWN;
	else
		rc = state_set(fd, to);
	close(fd);
	return rc;
}

CUresult CUDAAPI cuCheckpointProcessGetState(int pid, CUprocessState *state)
{
	static const CUprocessState states[] = { CU_PROCESS_STATE_RUNNING,
						 CU_PROCESS_STATE_LOCKED,
						 CU_PROCESS_STATE_CHECKPOINTED };

	int fd = pid > 0 ? state_open(pid) : -1, s;

	if (!state)
		return CUDA_ERROR_INVALID_VALUE;
	if (fd < 0)
		return CUDA_ERROR_NOT_INITIALIZED;
	s = state_get(fd);
	close(fd);
	*state = states[s >= RUNNING && s <= CHECKPOINTED ? s : RUNNING];
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCheckpointProcessGetRestoreThreadId(int pid, int *tid)
{
	if (!tid)
		return CUDA_ERROR_INVALID_VALUE;
	*tid = driver_thread(pid);
	return *tid ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult CUDAAPI cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args)
{
	(void)args;
	return step(pid, RUNNING, LOCKED, "lock");
}

CUresult CUDAAPI cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *args)
{
	(void)args;
	return step(pid, LOCKED, CHECKPOINTED, "checkpoint");
}

/* The device a UUID of the software device names, or -1 (device_uuid() makes them). */
static int uuid_device(const CUuuid *u)
{
	CUuuid want;

	if (cuDeviceGetUuid_v2(&want, 0) != CUDA_SUCCESS ||
	    memcmp(want.bytes, u->bytes, sizeof(want.bytes) - 1))
		return -1;
	return (unsigned char)u->bytes[15] < SD_MAX_DEVICES ? (unsigned char)u->bytes[15] : -1;
}

static bool visible_device(int d)
{
	for (int i = 0; i < sd.n_devices; i++)
		if (sd.visible[i] == d)
			return true;
	return false;
}

/* The restore's GPU pairs: checked, and written to SOFTCUDA_CKPT_LOG. */
static CUresult check_pairs(const CUcheckpointRestoreArgs *args)
{
	const char *log = getenv("SOFTCUDA_CKPT_LOG");
	FILE *f = NULL;
	CUresult rc = CUDA_SUCCESS;

	if (!args || !args->gpuPairsCount)
		return CUDA_SUCCESS;
	if (!args->gpuPairs)
		return CUDA_ERROR_INVALID_VALUE;
	if (log && *log && !(f = fopen(log, "ae")))
		return CUDA_ERROR_OPERATING_SYSTEM;
	for (unsigned i = 0; i < args->gpuPairsCount && rc == CUDA_SUCCESS; i++) {
		int old = uuid_device(&args->gpuPairs[i].oldUuid);
		int now = uuid_device(&args->gpuPairs[i].newUuid);

		if (old < 0 || now < 0 || !visible_device(now))
			rc = CUDA_ERROR_INVALID_DEVICE;
		else if (f)
			fprintf(f, "pair %d %d\n", old, now);
	}
	if (f)
		fclose(f);
	return rc;
}

CUresult CUDAAPI cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *args)
{
	CUresult rc = check_pairs(args);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (pid > 0 && !driver_thread(pid))
		return CUDA_ERROR_NOT_INITIALIZED;
	return step(pid, CHECKPOINTED, LOCKED, "restore");
}

CUresult CUDAAPI cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *args)
{
	(void)args;
	return step(pid, LOCKED, RUNNING, "unlock");
}

static void *driver_thread_main(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* This process's own state memfd: at the same number in a restored process. */
static int own_state = -1;

void sd_procckpt_enter(const char *func)
{
	if (own_state >= 0 && state_get(own_state) == CHECKPOINTED) {
		fprintf(stderr, "softcuda: %s called in a process whose GPU state the driver's "
			"checkpoint holds: the real driver crashes here\n", func);
		abort();
	}
}

/* The state memfd, and the driver's own thread, named as the real driver names it. */
__attribute__((constructor)) static void start_driver(void)
{
	int fd = memfd_create(STATE_MEMFD, MFD_CLOEXEC), running = RUNNING;
	pthread_t t;

	if (fd >= 0 && pwrite(fd, &running, sizeof(running), 0) != (ssize_t)sizeof(running))
		close(fd); /* no state: this process's checkpoint is refused */
	else
		own_state = fd;
	if (pthread_create(&t, NULL, driver_thread_main, NULL) == 0) {
		pthread_setname_np(t, THREAD_NAME);
		pthread_detach(t);
	}
}
