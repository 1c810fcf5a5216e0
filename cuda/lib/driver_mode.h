/* SPDX-License-Identifier: MIT */
/*
 * driver_mode.h - CUDA programs whose driver runs in the process itself (the
 * Runtime API, CUDA libraries), as opposed to the proxy mode of cuda_internal.h.
 */
#ifndef SC_CUDA_DRIVER_MODE_H
#define SC_CUDA_DRIVER_MODE_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "cuda/shared/gpu_uuid.h"

/* The name by which cudart and the CUDA libraries load the driver. */
#define SC_CU_DRIVER_SONAME "libcuda.so.1"

/* How a process with the driver in it is checkpointed (SELFCKPT_CUDA). */
enum sc_cu_mode {
	SC_CU_MODE_AUTO,   /* the driver's process checkpoint when the driver is in use */
	SC_CU_MODE_DRIVER, /* the same, asked for by name */
	SC_CU_MODE_PROXY,  /* never the driver's: a driver in use refuses the checkpoint */
};

/* The GPUs a process's driver shows, by UUID, in ordinal order. */
struct sc_cu_gpus {
	unsigned n;
	unsigned char uuid[SC_CU_GPUS_MAX][SC_CU_UUID_LEN];
};

/* What shows that the driver is in the process, and in use. */
struct sc_cu_driver_seen {
	bool loaded;           /* libcuda.so.1 is loaded */
	bool initialised;      /* and says cuInit() was called */
	unsigned device_fds;   /* open descriptors of /dev/nvidia* */
	unsigned device_maps;  /* mappings of /dev/nvidia* */
	int driver_version;    /* cuDriverGetVersion(), 0 when unknown */
	char path[PATH_MAX];   /* the file the driver was loaded from */
	struct sc_cu_gpus gpus; /* the GPUs it shows, in ordinal order (when initialised) */
};

/**
 * sc_cu_driver_seen() - look for the CUDA driver in use in this process.
 * @s: filled with what was seen, whatever the answer.
 *
 * Return: true when the driver is initialised or holds device descriptors or
 * mappings: GPU state that an image of the process alone cannot hold.
 */
bool sc_cu_driver_seen(struct sc_cu_driver_seen *s);

/**
 * sc_cu_mode() - the mode SELFCKPT_CUDA asks for ("auto", "driver", "proxy").
 * Return: the mode; SC_CU_MODE_AUTO, with a warning, for another value.
 */
enum sc_cu_mode sc_cu_mode(void);

/**
 * sc_cu_driver_call() - run selfckpt-driver-ckpt PID ACTION TIMEOUT_MS and
 * wait for it.
 * Return: 0 when it succeeded; -SELFCKPT_EDRIVER (or -errno when it could
 * not be run) reported otherwise.
 */
int sc_cu_driver_call(const char *action, pid_t pid, unsigned timeout_ms);

/**
 * sc_cu_driver_resume_on() - at a restart: run selfckpt-driver-ckpt PID
 * resume 0 UUID... with the restorer's environment, so that the GPUs the
 * restore is given (CUDA_VISIBLE_DEVICES) take the place of @gpus, the ones
 * the process had, in ordinal order.
 * Return: as sc_cu_driver_call().
 */
int sc_cu_driver_resume_on(pid_t pid, const struct sc_cu_gpus *gpus);

/**
 * sc_cu_driver_done() - at the end of a checkpoint, made or failed: the
 * driver restores the GPU state into the process and unlocks it, and the
 * program's CUDA calls go on.
 */
void sc_cu_driver_done(void);

/**
 * sc_cu_driver_warn_mixed() - once: where the driver itself is initialised in
 * a process whose own Driver API calls the GPU proxy serves, say that the two
 * share nothing and that --cuda=driver gives every call to the driver.
 */
void sc_cu_driver_warn_mixed(void);

/**
 * sc_cu_driver_frozen() - in the frozen hook of a checkpoint whose image holds
 * the driver's checkpoint: at a restart from it, the program's threads wait
 * until sc_cu_driver_restored() has had the driver restore the GPU state.
 */
void sc_cu_driver_frozen(void);

struct sc_writer;

/**
 * sc_cu_driver_write() - the cuda-driver record, when this checkpoint's image
 * holds the driver's process checkpoint.
 * Return: 0 or the writer's error.
 */
int sc_cu_driver_write(struct sc_writer *w);

/**
 * sc_cu_driver_restored() - in a restored process whose image holds the
 * driver's checkpoint: the driver restores the GPU state and unlocks.
 * Return: 0, or -SELFCKPT_EDRIVER reported (the restart cannot go on).
 */
int sc_cu_driver_restored(void);

/**
 * sc_cu_driver_prepare() - the driver's part of a checkpoint's prepare step:
 * when the driver is in use in the process, lock it and have it move the GPU
 * state into the process's host memory (sc_cu_driver_done() undoes it).
 *
 * Return: 0 when the driver is not in use, or its checkpoint is made;
 * otherwise -SELFCKPT_EDRIVER (or -errno), reported with what was seen and
 * what to do, so that the checkpoint is given up before anything is written.
 */
int sc_cu_driver_prepare(void);

#endif /* SC_CUDA_DRIVER_MODE_H */
