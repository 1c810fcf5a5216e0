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
 * unlock (done). The image holds the process as the driver left it,
 * checkpointed, with the flag below set; a restart rebuilds the process and
 * has the driver restore the GPU state into it and unlock. The driver's calls
 * are made by selfckpt-driver-ckpt (driver_call.c).
 *
 * Where the driver's checkpoint cannot be made (SELFCKPT_CUDA=proxy, a driver
 * without it, a lock that times out, state the driver refuses) the checkpoint
 * is given up before anything is written: the previous image stays, and the
 * program goes on.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/cuda_internal.h"
#include "cuda/driver_mode.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"

#define LOCK_TIMEOUT_MS 10000

/* The driver has checkpointed this process: true in every image it made. */
static bool held;

enum sc_cu_mode sc_cu_mode(void)
{
	const char *m = getenv("SELFCKPT_CUDA");

	if (!m || !*m || !strcmp(m, "auto"))
		return SC_CU_MODE_AUTO;
	if (!strcmp(m, "driver"))
		return SC_CU_MODE_DRIVER;
	if (!strcmp(m, "proxy"))
		return SC_CU_MODE_PROXY;
	sc_log(SC_LOG_WARN, "SELFCKPT_CUDA='%s' is none of auto, driver, proxy: auto is used", m);
	return SC_CU_MODE_AUTO;
}

/* SELFCKPT_CUDA_LOCK_MS: how long the driver may wait for CUDA calls in flight. */
static unsigned lock_timeout_ms(void)
{
	const char *v = getenv("SELFCKPT_CUDA_LOCK_MS");
	char *end;
	unsigned long ms;

	if (!v || !*v)
		return LOCK_TIMEOUT_MS;
	ms = strtoul(v, &end, 10);
	if (*end || ms == 0 || ms > 3600000) {
		sc_log(SC_LOG_WARN, "SELFCKPT_CUDA_LOCK_MS='%s' is not 1 to 3600000: %d is used",
		       v, LOCK_TIMEOUT_MS);
		return LOCK_TIMEOUT_MS;
	}
	return (unsigned)ms;
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

int sc_cu_driver_prepare(void)
{
	struct sc_cu_driver_seen s;
	double t0;

	if (!sc_cu_driver_seen(&s))
		return 0;
	if (sc_cu_mode() == SC_CU_MODE_PROXY)
		return refuse(&s, "SELFCKPT_CUDA=proxy forbids the driver's process checkpoint "
			      "(use auto or driver)");
	t0 = sc_log_seconds();
	if (sc_cu_driver_call("checkpoint", getpid(), lock_timeout_ms()) < 0)
		return refuse(&s, "the driver's process checkpoint failed (it needs driver 570 "
			      "or later, a lock within SELFCKPT_CUDA_LOCK_MS, no managed memory, "
			      "MPS or MIG)");
	held = true;
	sc_log(SC_LOG_DEBUG, "checkpoint: the driver locked and checkpointed the GPU state in "
	       "%.3f s", sc_log_seconds() - t0);
	return 0;
}

void sc_cu_driver_done(void)
{
	double t0 = sc_log_seconds();

	if (!held)
		return;
	held = false;
	if (sc_cu_driver_call("resume", getpid(), 0) < 0) {
		sc_log(SC_LOG_ERROR, "the driver did not give the GPU state back to the program: "
		       "its CUDA calls will fail");
		return;
	}
	sc_log(SC_LOG_DEBUG, "checkpoint: the driver restored the GPU state and unlocked in "
	       "%.3f s", sc_log_seconds() - t0);
}

int sc_cu_driver_restored(void)
{
	double t0 = sc_log_seconds();

	if (!held)
		return 0;
	held = false;
	if (sc_cu_driver_call("resume", getpid(), 0) < 0)
		return sc_err(SELFCKPT_EDRIVER, "the CUDA driver cannot restore the GPU state of "
			      "the restored process %d", (int)getpid());
	sc_log(SC_LOG_DEBUG, "restart: the driver restored the GPU state and unlocked in %.3f s",
	       sc_log_seconds() - t0);
	return 0;
}
