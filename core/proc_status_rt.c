/* SPDX-License-Identifier: MIT */
/*
 * proc_status_rt.c - a /proc text file (maps, status) read with raw system
 * calls into the caller's buffer, and the fields of a status file ("VmLck:",
 * "FDSize:", "SigPnd:").
 *
 * Stage contract: callable anywhere, a stop-signal handler and the
 * checkpointing thread while every other thread is stopped among them: raw
 * system calls and the caller's memory only.
 */
#include <fcntl.h>

#include "core/sc_sys.h"

long sc_proc_read(const char *path, char *buf, long size)
{
	long fd = sc_sys4(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
	long len = 0, n = 0;

	if (fd < 0)
		return -1;
	while (len < size - 1 && (n = sc_sys3(SYS_read, fd, (long)(buf + len), size - 1 - len)) > 0)
		len += n;
	sc_sys1(SYS_close, fd);
	buf[len] = '\0';
	return n < 0 ? -1 : len;
}

/* Past @key where the line at @line starts with it, else NULL. */
static const char *after_key(const char *line, const char *key)
{
	while (*key && *line == *key) {
		line++;
		key++;
	}
	return *key ? NULL : line;
}

const char *sc_status_field(const char *text, const char *key)
{
	for (const char *line = text, *value; *line;) {
		if ((value = after_key(line, key))) {
			while (*value == ' ' || *value == '\t')
				value++;
			return value;
		}
		while (*line && *line != '\n')
			line++;
		if (*line)
			line++;
	}
	return NULL;
}

const char *sc_status_value(const char *path, const char *key, char *buf, long size)
{
	return sc_proc_read(path, buf, size) < 0 ? NULL : sc_status_field(buf, key);
}
