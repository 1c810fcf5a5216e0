/* SPDX-License-Identifier: MIT */
/*
 * error.c - error strings, the last error message, and the logger.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "format/sc_log.h"
#include "selfckpt_errors.h"

static const char *const error_strings[SELFCKPT_ELAST - SELFCKPT_EFIRST] = {
	[SELFCKPT_EMAGIC - SELFCKPT_EFIRST] = "not a selfckpt image",
	[SELFCKPT_EEMPTY - SELFCKPT_EFIRST] = "empty file",
	[SELFCKPT_EVERSION - SELFCKPT_EFIRST] = "unsupported image format version",
	[SELFCKPT_EARCH - SELFCKPT_EFIRST] = "image made for another architecture",
	[SELFCKPT_ETRUNCATED - SELFCKPT_EFIRST] = "image is truncated",
	[SELFCKPT_EHEADER - SELFCKPT_EFIRST] = "image header is corrupt",
	[SELFCKPT_ERECORD - SELFCKPT_EFIRST] = "record header is corrupt",
	[SELFCKPT_ECHUNK - SELFCKPT_EFIRST] = "chunk checksum mismatch",
	[SELFCKPT_ECODEC - SELFCKPT_EFIRST] = "compressed chunk does not decode",
	[SELFCKPT_EINDEX - SELFCKPT_EFIRST] = "image index is corrupt",
	[SELFCKPT_ETRAILER - SELFCKPT_EFIRST] = "image trailer is corrupt",
	[SELFCKPT_EFILESUM - SELFCKPT_EFIRST] = "whole-file checksum mismatch",
	[SELFCKPT_ELENGTH - SELFCKPT_EFIRST] = "length or offset out of bounds",
	[SELFCKPT_EUNKNOWN - SELFCKPT_EFIRST] = "unknown required record or flag",
	[SELFCKPT_ERESERVED - SELFCKPT_EFIRST] = "reserved field is not zero",
	[SELFCKPT_EUSAGE - SELFCKPT_EFIRST] = "invalid use of the interface",
	[SELFCKPT_EHOST - SELFCKPT_EFIRST] = "the image cannot be restored on this machine",
	[SELFCKPT_ECUDA - SELFCKPT_EFIRST] = "a CUDA call failed in the GPU proxy",
	[SELFCKPT_EDRIVER - SELFCKPT_EFIRST] = "the CUDA driver in the process holds GPU state "
					       "that cannot be saved",
	[SELFCKPT_EIPCNS - SELFCKPT_EFIRST] = "the image holds System V IPC objects, which need "
					      "an IPC namespace this restore cannot make",
	[SELFCKPT_ENOPARENT - SELFCKPT_EFIRST] = "an image the incremental image needs is missing",
	[SELFCKPT_EPARENT - SELFCKPT_EFIRST] = "an image the incremental image needs is another "
					       "image, or damaged",
};

SELFCKPT_API const char *selfckpt_strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err >= SELFCKPT_EFIRST && err < SELFCKPT_ELAST)
		return error_strings[err - SELFCKPT_EFIRST];
	if (err == 0)
		return "success";
	return strerror(err);
}

static __thread char last_error[1024];

SELFCKPT_API const char *selfckpt_last_error(void)
{
	return last_error;
}

/* Whoever reads the settings sets it: the library (core/settings.c), each tool, the proxy. */
static int log_level = SC_LOG_WARN;
static const char *log_prefix = "selfckpt";

enum sc_log_level sc_log_level_parse(const char *v)
{
	static const char *const names[] = { "none", "error", "warn", "info", "debug" };

	if (!v || !*v)
		return SC_LOG_WARN;
	for (int i = 0; i < 5; i++)
		if (!strcasecmp(v, names[i]) || (v[0] == '0' + i && !v[1]))
			return (enum sc_log_level)i;
	return SC_LOG_WARN;
}

void sc_log_set_level(enum sc_log_level level)
{
	log_level = level;
}

void sc_log_set_prefix(const char *prefix)
{
	log_prefix = prefix;
}

double sc_log_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int current_level(void)
{
	return log_level;
}

/* One write() per message, so lines from several threads do not interleave. */
static void emit(const char *kind, const char *msg)
{
	char line[1200];
	int n = snprintf(line, sizeof(line), "%s: %s%s\n", log_prefix, kind, msg);

	if (n > (int)sizeof(line) - 1)
		n = sizeof(line) - 1;
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return; /* nowhere left to report to */
}

int sc_err(int code, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	if (current_level() >= SC_LOG_ERROR)
		emit("error: ", last_error);
	errno = saved;
	return -code;
}

int sc_err_quiet(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return -code;
}

void sc_log(enum sc_log_level level, const char *fmt, ...)
{
	static const char *const kinds[] = { "", "error: ", "warning: ", "", "debug: " };
	char msg[1024];
	va_list ap;

	if (level == SC_LOG_NONE || current_level() < (int)level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	emit(kinds[level], msg);
}
