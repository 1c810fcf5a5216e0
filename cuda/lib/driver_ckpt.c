/* SPDX-License-Identifier: MIT */
/*
 * driver_ckpt.c - the driver-assisted mode: a checkpoint and a restart of a
 * process in which the CUDA driver itself runs (the Runtime API, CUDA
 * libraries).
 *
 * Its GPU state lives in the driver's device descriptors and mappings, which
 * no image can hold. The driver's own process checkpoint (driver 570 and
 * later) moves that state into the process's host memory and releases them;
 * then the process is an ordinary one for the snapshot. So a checkpoint is:
 * lock and driver checkpoint (prepare), the snapshot, driver restore and
 * unlock (done). The restore comes once the image is written. It maps the
 * driver's device memory again (marked not to be copied by fork()); the
 * settings a fork loses are checked against the instant itself
 * (core/segment_vmflags.c), so mappings made after it never give the image
 * up. The image holds the process as the driver left it,
 * checkpointed, with the flag below set; a restart rebuilds the process and
 * has the driver restore the GPU state into it and unlock. The driver's calls
 * are made by selfckpt-driver-ckpt (driver_call.c).
 *
 * Where the driver's checkpoint cannot be made (SELFCKPT_CUDA=proxy, a driver
 * without it, a lock that times out, state the driver refuses) the checkpoint
 * is given up before anything is written: the previous image stays, and the
 * program goes on.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/job.h"
#include "core/sc_core.h"
#include "core/sc_hooks.h"
#include "core/sc_settings.h"
#include "cuda/shared/gpu_records.h"
#include "cuda/lib/cuda_internal.h"
#include "cuda/lib/driver_mode.h"
#include "format/sc_format.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"


/* The driver has checkpointed this process: true in every image it made. */
static bool held;
/*
 * A child forked from a CUDA process: it holds a copy of the driver's state
 * and descriptors but no GPU (CUDA is not usable after fork(), as the driver
 * says), so its checkpoint is a CPU process's, with no driver part.
 */
static bool forked_copy;
/* The process id the driver checkpointed: its restore needs the same one. */
static pid_t held_pid;
/* This checkpoint's image holds the driver's checkpoint (a cuda-driver record). */
static bool in_image;
static int held_driver_version;
/* The GPUs the process's driver showed at the checkpoint: a restart pairs them with its own. */
static struct sc_cu_gpus held_gpus;

/*
 * The threads' names as the driver's checkpoint left them. The driver's
 * restore finds its threads (cuda00001400006, cuda-EvtHandlr) and the program
 * by name; a restored process has the restorer's.
 */
#define NAMED_MAX 256
static struct named {
	pid_t tid;
	char name[16];
} named[NAMED_MAX];
static size_t named_n;

static void names_save(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	named_n = 0;
	while (d && (e = readdir(d)) && named_n < NAMED_MAX) {
		char path[300];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		if (fgets(named[named_n].name, sizeof(named[0].name), f)) {
			named[named_n].name[strcspn(named[named_n].name, "\n")] = '\0';
			named[named_n++].tid = (pid_t)atoi(e->d_name);
		}
		fclose(f);
	}
	if (d)
		closedir(d);
}

static int by_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/*
 * The threads' ids now, ascending, into @now: the same as saved where the
 * restore kept the ids; with new ids, the threads were made again in the
 * saved order, so the i-th lowest id now is the i-th lowest saved.
 */
static size_t tids_now(pid_t *now)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	size_t n = 0;

	while (d && (e = readdir(d)) && n < NAMED_MAX)
		if (e->d_name[0] != '.')
			now[n++] = (pid_t)atoi(e->d_name);
	if (d)
		closedir(d);
	qsort(now, n, sizeof(*now), by_tid);
	return n;
}

/* Each thread gets its name back (a thread of ours may name any of ours). */
static void names_restore(void)
{
	static pid_t now[NAMED_MAX];
	size_t n = tids_now(now);

	qsort(named, named_n, sizeof(named[0]), by_tid);
	for (size_t i = 0; i < named_n && i < n; i++) {
		char path[64];
		int fd;

		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)now[i]);
		if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
			continue;
		if (write(fd, named[i].name, strlen(named[i].name)) < 0)
			sc_log(SC_LOG_DEBUG, "thread %d keeps its name: %s", (int)now[i],
			       strerror(errno));
		close(fd);
	}
}

/*
 * A thread of the program, not one of the driver's (named cuda...): held at a
 * restart until the driver has restored the GPU state. Measured (H100, driver
 * 580): a call into the driver before then, from a thread that woke at once
 * (its read returned), crashed the restored process in libcuda. Raw code.
 */
static int program_thread(int tid)
{
	for (size_t i = 0; i < named_n; i++)
		if (named[i].tid == tid)
			return strncmp(named[i].name, "cuda", 4) != 0;
	return 1;
}

void sc_cu_driver_frozen(void)
{
	if (in_image)
		sc_threads_hold_at_restart(program_thread);
}

/* SELFCKPT_CUDA; a wrong value was said when the settings were read. */
enum sc_cu_mode sc_cu_mode(void)
{
	switch (sc_settings()->cuda) {
	case SC_CUDA_DRIVER:
		return SC_CU_MODE_DRIVER;
	case SC_CUDA_PROXY:
		return SC_CU_MODE_PROXY;
	default:
		return SC_CU_MODE_AUTO;
	}
}

/* SELFCKPT_CUDA_LOCK_MS: how long the driver may wait for CUDA calls in flight. */
static unsigned lock_timeout_ms(void)
{
	return sc_settings()->cuda_lock_ms;
}

/* Once, where the driver @s saw is initialised: see sc_cu_driver_warn_mixed(). */
static void warn_mixed(const struct sc_cu_driver_seen *s)
{
	static bool said;

	if (said || !s->initialised)
		return;
	said = true;
	sc_log(SC_LOG_WARN, "this program calls the CUDA Driver API through selfckpt's GPU proxy, "
	       "and the CUDA driver '%s' runs in it too (the CUDA Runtime or a CUDA library "
	       "loaded it): the two share no memory, streams or contexts, so a pointer or stream "
	       "of one is not valid in the other; run it with selfckpt-run --cuda=driver, which "
	       "gives every call to the driver", s->path);
}

void sc_cu_driver_warn_mixed(void)
{
	struct sc_cu_driver_seen s;

	sc_cu_driver_seen(&s);
	warn_mixed(&s);
}

static int refuse(const struct sc_cu_driver_seen *s, const char *why)
{
	return sc_err(SELFCKPT_EDRIVER,
		      "the CUDA driver '%s' is in use in this process (%s; %u /dev/nvidia* "
		      "descriptors, %u device mappings)%s and %s: the GPU state it holds cannot "
		      "be saved in an image, so none is written; the checkpoint is given up, the "
		      "previous image stays and the program goes on",
		      s->path, s->initialised ? "initialised" : "not initialised",
		      s->device_fds, s->device_maps,
		      sc_cu.started ? ", besides the GPU proxy that serves the program's own "
				      "Driver API calls," : "", why);
}

static void forked_child(void)
{
	unsigned fds, maps;

	forked_copy = true;
	held = in_image = false;
	if (sc_nvidia_devices_used(&fds, &maps)) /* the parent used the GPU: its driver's objects */
		sc_job_gpu_copy = 1;
}

__attribute__((constructor)) static void driver_at_load(void)
{
	pthread_atfork(NULL, NULL, forked_child);
}

int sc_cu_driver_prepare(void)
{
	struct sc_cu_driver_seen s;
	double t0;

	if (forked_copy) { /* no CUDA call here: they are not to be made after fork() */
		unsigned fds, maps;

		if (sc_nvidia_devices_used(&fds, &maps))
			sc_log(SC_LOG_DEBUG, "checkpoint: a child forked from a CUDA process: "
			       "its copy of the driver's state holds no GPU, and its image no "
			       "driver part");
		return 0;
	}
	if (!sc_cu_driver_seen(&s))
		return 0;
	if (sc_cu.started)
		warn_mixed(&s);
	if (sc_cu_mode() == SC_CU_MODE_PROXY)
		return refuse(&s, "SELFCKPT_CUDA=proxy forbids the driver's process checkpoint "
			      "(use auto or driver)");
	t0 = sc_log_seconds();
	if (sc_cu_driver_call("checkpoint", getpid(), lock_timeout_ms()) < 0)
		return refuse(&s, "the driver's process checkpoint failed (it needs driver 570 "
			      "or later, a lock within SELFCKPT_CUDA_LOCK_MS, no managed memory, "
			      "MPS or MIG)");
	held = in_image = true;
	held_pid = getpid();
	held_driver_version = s.driver_version;
	held_gpus = s.gpus;
	names_save();
	sc_log(SC_LOG_DEBUG, "checkpoint: the driver locked and checkpointed the GPU state in "
	       "%.3f s", sc_log_seconds() - t0);
	return 0;
}

/* The driver restores the GPU state into this process and unlocks it. */
static void resume(void)
{
	double t0 = sc_log_seconds();

	if (sc_cu_driver_call("resume", getpid(), 0) < 0) {
		sc_log(SC_LOG_ERROR, "the driver did not give the GPU state back to the program: "
		       "its CUDA calls will fail");
		return;
	}
	sc_log(SC_LOG_DEBUG, "checkpoint: the driver restored the GPU state and unlocked in "
	       "%.3f s", sc_log_seconds() - t0);
}

int sc_cu_driver_write(struct sc_writer *w)
{
	struct sc_cuda_driver d = { .pid = (uint32_t)held_pid,
				    .driver_version = (uint32_t)held_driver_version,
				    .threads = (uint32_t)named_n };
	uint8_t meta[SC_CUDA_DRIVER_META];

	if (!in_image)
		return 0;
	sc_cuda_driver_encode(&d, meta);
	return sc_writer_record(w, SC_REC_CUDA_DRIVER, 0, meta, sizeof(meta), NULL, 0);
}

void sc_cu_driver_done(void)
{
	in_image = false;
	if (!held)
		return;
	held = false;
	resume();
}

int sc_cu_driver_restored(void)
{
	double t0 = sc_log_seconds();

	in_image = false; /* that was the image's checkpoint, not the next one's */
	if (!held)
		return 0; /* the threads held, if any, are the proxy's restart's to release */
	held = false;
	/*
	 * Measured (H100, driver 580): restored with new ids, the driver's restore
	 * never returns; its unix socket is named after the old id
	 * (@cuda-uvmfd-<netns>-<pid>@). So a restart with another id stops here.
	 */
	if (getpid() != held_pid)
		return sc_err(SELFCKPT_EDRIVER, "this image holds GPU state that the CUDA driver "
			      "checkpointed in process %d, and the driver restores it only into a "
			      "process of the same id, not into process %d: restore without "
			      "--new-ids (SELFCKPT_NEW_IDS), where user namespaces and clone3() "
			      "are allowed", (int)held_pid, (int)getpid());
	names_restore();
	if (sc_cu_driver_resume_on(getpid(), &held_gpus) < 0)
		return sc_err(SELFCKPT_EDRIVER, "the CUDA driver cannot restore the GPU state of "
			      "the restored process %d", (int)getpid());
	sc_log(SC_LOG_DEBUG, "restart: the driver restored the GPU state and unlocked in %.3f s",
	       sc_log_seconds() - t0);
	sc_threads_release_held(); /* the program's threads: the GPU is theirs again */
	return 0;
}
