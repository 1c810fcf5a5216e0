/* SPDX-License-Identifier: MIT */
/*
 * tool.c - what every selfckpt command-line tool shares.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "cli/tool.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"

static const char *tool_name = "selfckpt";

void sc_tool_init(const char *name)
{
	tool_name = name;
	sc_log_set_prefix(name);
}

int sc_tool_exit_code(int err)
{
	if (err >= 0)
		return SC_EXIT_OK;
	err = -err;
	if (err == SELFCKPT_EUSAGE)
		return SC_EXIT_USAGE;
	if (err == SELFCKPT_EIPCNS)
		return SC_EXIT_NOPERM;
	if (err == SELFCKPT_ENOPARENT)
		return SC_EXIT_NOINPUT;
	if (err == SELFCKPT_EHOST || err == SELFCKPT_ECUDA)
		return SC_EXIT_UNAVAILABLE;
	if (err >= SELFCKPT_EFIRST && err < SELFCKPT_ELAST)
		return SC_EXIT_DATAERR;
	switch (err) {
	case ENOENT:
	case EACCES:
	case EISDIR:
	case ENOTDIR:
	case ELOOP:
		return SC_EXIT_NOINPUT;
	default:
		return SC_EXIT_IOERR;
	}
}

int sc_tool_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", tool_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", tool_name);
	return SC_EXIT_USAGE;
}

int sc_tool_count(const char *what, const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || errno || v > max)
		return sc_tool_usage_error("invalid %s '%s' (expected 0 to %lu)", what, s, max);
	*out = v;
	return -1;
}

const char *sc_tool_size(char *buf, uint64_t bytes)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes / 1024;
	int u = 0;

	if (bytes < 1024) {
		snprintf(buf, SC_TOOL_SIZE_BUF, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	/* 1023.996 KiB would print as "1024.00 KiB": move up a unit first. */
	while (v >= 1023.995 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, SC_TOOL_SIZE_BUF, "%.2f %s", v, units[u]);
	return buf;
}

/*
 * The length of the valid UTF-8 sequence at @s and its code point, or 0 when
 * the byte at @s starts none (overlong forms and surrogates are invalid).
 */
static size_t utf8_next(const unsigned char *s, uint32_t *cp)
{
	static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	uint32_t c = s[0];
	size_t len;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	len = (size_t)__builtin_clz((~c & 0xff) << 24 | 1); /* leading one bits */
	if (len < 2 || len > 4)
		return 0;
	c &= 0x7fu >> len;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80) /* the terminating NUL stops here too */
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

static bool is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp < 0xa0);
}

void sc_tool_print_text(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		uint32_t cp;
		size_t len = utf8_next(p, &cp);

		if (!len || is_control(cp)) {
			len = len ? len : 1;
			for (size_t i = 0; i < len; i++)
				fprintf(f, "\\x%02x", p[i]);
		} else if (cp == '\\') {
			fputs("\\\\", f);
		} else {
			fwrite(p, 1, len, f);
		}
		p += len;
	}
}

static void json_escape(FILE *f, uint32_t cp)
{
	switch (cp) {
	case '"': fputs("\\\"", f); break;
	case '\\': fputs("\\\\", f); break;
	case '\b': fputs("\\b", f); break;
	case '\f': fputs("\\f", f); break;
	case '\n': fputs("\\n", f); break;
	case '\r': fputs("\\r", f); break;
	case '\t': fputs("\\t", f); break;
	default: fprintf(f, "\\u%04x", (unsigned)cp); break;
	}
}

void sc_tool_print_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	while (*p) {
		uint32_t cp;
		size_t len = utf8_next(p, &cp);

		if (!len) {
			fputs("\\ufffd", f);
			len = 1;
		} else if (cp < 0x20 || cp == '"' || cp == '\\') {
			json_escape(f, cp);
		} else {
			fwrite(p, 1, len, f);
		}
		p += len;
	}
	fputc('"', f);
}
