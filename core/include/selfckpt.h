/* SPDX-License-Identifier: MIT */
/*
 * selfckpt.h - the public interface of libselfckpt.
 *
 * Link with -lselfckpt (pkg-config: selfckpt).
 */
#ifndef SELFCKPT_H
#define SELFCKPT_H

#include "selfckpt_errors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SELFCKPT_VERSION_MAJOR 0
#define SELFCKPT_VERSION_MINOR 1
#define SELFCKPT_VERSION_PATCH 0
#define SELFCKPT_VERSION_STRING "0.1.0"

/**
 * selfckpt_version() - the version of the library actually loaded.
 *
 * Return: "MAJOR.MINOR.PATCH", which may differ from SELFCKPT_VERSION_STRING
 * when a program runs against a newer shared library than it was built with.
 */
SELFCKPT_API const char *selfckpt_version(void);

/* What selfckpt_save() returns on success. */
#define SELFCKPT_SAVED 1    /* the image is written, synced and in place */
#define SELFCKPT_RESTORED 2 /* the process resumes from that image */

/**
 * selfckpt_save() - checkpoint the calling process into an image file.
 * @path: the image to write. It is written to a temporary file next to it,
 *        synced and renamed, so a failure never destroys a previous image;
 *        it is created with mode 0600.
 *
 * Every thread is stopped for an instant while a copy-on-write snapshot of
 * the process is taken; the other threads then run on while the calling thread
 * writes the image. When `selfckpt-restore @path` later brings the process
 * back, it continues by returning SELFCKPT_RESTORED from this same call, in the
 * same thread, with every other thread resumed where it was.
 *
 * Under selfckpt-run a process and the processes it starts are one job: in
 * any process of a job of several, @path becomes the job's image set (a
 * directory) holding every process at one instant, which
 * `selfckpt-restore @path` brings back as the tree. Called below the job's
 * top, the top writes the set (a relative @path is the caller's); the call
 * returns as in the top: once the set is complete, or restored.
 *
 * Return: SELFCKPT_SAVED, SELFCKPT_RESTORED, or a negative error code
 * (selfckpt_strerror(), selfckpt_last_error()).
 */
SELFCKPT_API int selfckpt_save(const char *path);

#ifdef __cplusplus
}
#endif

#endif /* SELFCKPT_H */
