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

#ifdef __cplusplus
}
#endif

#endif /* SELFCKPT_H */
