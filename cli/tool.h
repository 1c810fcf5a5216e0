/* SPDX-License-Identifier: MIT */
/*
 * tool.h - what every selfckpt command-line tool shares: exit codes, usage
 * errors, and printing sizes and untrusted strings.
 *
 * Exit codes follow sysexits(3), so scripts can tell a bad command line from
 * a damaged image from a missing file. They are part of every tool's
 * documented interface: append only.
 */
#ifndef SC_TOOL_H
#define SC_TOOL_H

#include <stdint.h>
#include <stdio.h>

#define SC_EXIT_OK 0       /* success */
#define SC_EXIT_USAGE 64   /* the command line is wrong */
#define SC_EXIT_DATAERR 65 /* the image is corrupt or unsupported */
#define SC_EXIT_NOINPUT 66 /* the input is missing or cannot be opened */
#define SC_EXIT_IOERR 74   /* any other operating-system failure */
#define SC_EXIT_UNAVAILABLE 69 /* this machine cannot take the image (kernel, files) */
/* 75 is reserved: "checkpoint saved, exit requested". */
#define SC_EXIT_NOPERM 77  /* System V objects, and no IPC namespace of the restore's own */

#define SC_TOOL_SIZE_BUF 32 /* enough for any sc_tool_size() result */

/**
 * sc_tool_init() - name the tool: the prefix of every message it and the
 * library print ("<name>: error: ...").
 * @name: a string that outlives every later call, usually a literal.
 */
void sc_tool_init(const char *name);

/**
 * sc_tool_exit_code() - the exit code for a library or tool return value.
 * @err: 0 (or positive) for success, -errno, or -SELFCKPT_E*.
 *
 * Return: SC_EXIT_OK; SC_EXIT_USAGE for -SELFCKPT_EUSAGE; SC_EXIT_DATAERR for
 * every other -SELFCKPT_E*; SC_EXIT_NOINPUT for -ENOENT, -EACCES, -EISDIR,
 * -ENOTDIR and -ELOOP; SC_EXIT_IOERR for any other -errno.
 */
int sc_tool_exit_code(int err);

/**
 * sc_tool_usage_error() - print "<name>: <message>" and a pointer to --help
 * on standard error.
 * @fmt: printf format of the message: lowercase, no final period.
 *
 * Return: SC_EXIT_USAGE, for the caller to exit with.
 */
int sc_tool_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/**
 * sc_tool_count() - an option's value @s, a decimal count from 0 to @max
 * (digits only: no sign, no spaces), into *@out.
 * @what: what it counts, for the message ("thread count").
 *
 * Return: -1 to go on, or SC_EXIT_USAGE (reported) for the caller to exit with.
 */
int sc_tool_count(const char *what, const char *s, unsigned long max, unsigned long *out);

/**
 * sc_tool_size() - format a byte count for people: "512 B", "1.50 GiB".
 * @buf: at least SC_TOOL_SIZE_BUF bytes.
 *
 * Return: @buf.
 */
const char *sc_tool_size(char *buf, uint64_t bytes);

/**
 * sc_tool_print_text() - print a string read from an image or given by a user
 * on a terminal without letting it drive the terminal: valid UTF-8 other than
 * control characters is printed as is, anything else as \xNN (and '\' as \\).
 */
void sc_tool_print_text(FILE *f, const char *s);

/**
 * sc_tool_print_json_string() - print @s as a quoted JSON string. Control
 * characters, quotes and backslashes are escaped; bytes that are not valid
 * UTF-8 become U+FFFD, so the document always parses.
 */
void sc_tool_print_json_string(FILE *f, const char *s);

#endif /* SC_TOOL_H */
