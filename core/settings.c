/* SPDX-License-Identifier: MIT */
/*
 * settings.c - reading the SELFCKPT_* environment variables once, checking
 * each, and keeping the result for the whole process (sc_settings.h).
 *
 * Each variable has one parser and the same rule for a wrong value (its
 * default, said once, never a typo quietly taken for 0), and the environment
 * is read at one moment: a program that changes its environment afterwards
 * changes nothing of selfckpt's, as a restored process never could.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/sc_handoff.h"
#include "core/sc_records.h"
#include "core/sc_settings.h"
#include "core/sc_trigger.h"
#include "format/sc_log.h"

static struct sc_settings current;
static pthread_once_t current_once = PTHREAD_ONCE_INIT;
static bool fresh; /* load() has just run: for sc_settings_reload() */

/* A value that cannot be used: kept in @s->bad for a warning or a refusal. */
__attribute__((format(printf, 4, 5)))
static void bad(struct sc_settings *s, const char *name, const char *instead, const char *fmt, ...)
{
	struct sc_setting_bad *b;
	va_list ap;

	if (s->bad_n == SC_SETTINGS_BAD_MAX)
		return;
	b = &s->bad[s->bad_n++];
	b->name = name;
	snprintf(b->instead, sizeof(b->instead), "%s", instead);
	va_start(ap, fmt);
	vsnprintf(b->problem, sizeof(b->problem), fmt, ap);
	va_end(ap);
}

/* The value of @name, or NULL when it is unset or empty (which mean the default alike). */
static const char *value(sc_settings_lookup_fn lookup, const char *name)
{
	const char *v = lookup(name);

	return v && *v ? v : NULL;
}

/* A copy of the value of @name, NULL when unset or empty; -ENOMEM when no copy was made. */
static int text(sc_settings_lookup_fn lookup, const char *name, char **out)
{
	const char *v = value(lookup, name);

	*out = v ? strdup(v) : NULL;
	return v && !*out ? -ENOMEM : 0;
}

/* "0" or "1"; another value is said and read as @other, what the library always did. */
static bool flag(struct sc_settings *s, sc_settings_lookup_fn lookup, const char *name,
		 bool dflt, bool other)
{
	const char *v = value(lookup, name);

	if (!v)
		return dflt;
	if (!strcmp(v, "0") || !strcmp(v, "1"))
		return v[0] == '1';
	bad(s, name, other ? "1" : "0", "%s='%s' is neither 0 nor 1", name, v);
	return other;
}

/* A whole number, decimal, or hexadecimal with 0x when @base is 0; nothing after it. */
static int whole(const char *v, int base, long long min, unsigned long long max,
		 long long *out)
{
	unsigned long long u;
	char *end;

	errno = 0;
	if (v[0] == '-') {
		long long n = strtoll(v, &end, base);

		if (errno || *end || end == v || n < min)
			return -EINVAL;
		*out = n;
		return 0;
	}
	u = strtoull(v, &end, base);
	if (errno || *end || end == v || u > max || (v[0] < '0' || v[0] > '9'))
		return -EINVAL;
	*out = (long long)u;
	return 0;
}

/* An address or a size: decimal, or hexadecimal with 0x. */
static uint64_t number(struct sc_settings *s, sc_settings_lookup_fn lookup, const char *name,
		       uint64_t dflt, uint64_t max)
{
	const char *v = value(lookup, name);
	char *end;
	unsigned long long u;
	char instead[24];

	if (!v)
		return dflt;
	errno = 0;
	u = strtoull(v, &end, 0);
	if (!errno && !*end && v[0] >= '0' && v[0] <= '9' && u <= max)
		return u;
	snprintf(instead, sizeof(instead), "%#llx", (unsigned long long)dflt);
	if (dflt < 0x10000)
		snprintf(instead, sizeof(instead), "%llu", (unsigned long long)dflt);
	bad(s, name, instead, "%s='%s' is not a number from 0 to %llu (decimal, or hexadecimal "
	    "with 0x)", name, v, (unsigned long long)max);
	return dflt;
}

static int read_level(struct sc_settings *s, sc_settings_lookup_fn lookup)
{
	const char *v = value(lookup, SC_ENV_LEVEL);
	long long n;

	if (!v)
		return 1;
	if (whole(v, 10, SC_SETTINGS_LEVEL_MIN, SC_SETTINGS_LEVEL_MAX, &n) == 0)
		return (int)n;
	bad(s, SC_ENV_LEVEL, "1", "%s='%s' is not a whole number from %d to %d", SC_ENV_LEVEL, v,
	    SC_SETTINGS_LEVEL_MIN, SC_SETTINGS_LEVEL_MAX);
	return 1;
}

/* A count from 1 to @max; 0 is a wrong value too: @dflt (@dflt_text in words) is used. */
static unsigned count(struct sc_settings *s, sc_settings_lookup_fn lookup, const char *name,
		      unsigned max, unsigned dflt, const char *dflt_text)
{
	const char *v = value(lookup, name);
	long long n;

	if (!v)
		return dflt;
	if (whole(v, 10, 1, max, &n) == 0 && n >= 1)
		return (unsigned)n;
	bad(s, name, dflt_text, "%s='%s' is not a whole number from 1 to %u", name, v, max);
	return dflt;
}

/* How many incremental images may follow a full one: 0 (every image full) to the deepest chain. */
static unsigned read_incremental(struct sc_settings *s, sc_settings_lookup_fn lookup)
{
	const char *v = value(lookup, "SELFCKPT_INCREMENTAL");
	long long n;

	if (!v)
		return 0;
	if (whole(v, 10, 0, SC_CHAIN_MAX, &n) == 0)
		return (unsigned)n;
	bad(s, "SELFCKPT_INCREMENTAL", "0", "SELFCKPT_INCREMENTAL='%s' is not a whole number from 0 "
	    "to %d", v, SC_CHAIN_MAX);
	return 0;
}

static enum sc_log_level read_log_level(struct sc_settings *s, sc_settings_lookup_fn lookup)
{
	static const char *const names[] = { "none", "error", "warn", "info", "debug" };
	const char *v = value(lookup, SC_ENV_LOG_LEVEL);

	if (!v)
		return SC_LOG_WARN;
	for (int i = 0; i < 5; i++)
		if (!strcasecmp(v, names[i]) || (v[0] == '0' + i && !v[1]))
			return (enum sc_log_level)i;
	bad(s, SC_ENV_LOG_LEVEL, "warn", "%s='%s' is none of none, error, warn, info, debug, 0-4",
	    SC_ENV_LOG_LEVEL, v);
	return SC_LOG_WARN;
}

/* The stop signal must be real-time: the program's own signals keep their meaning. */
static int read_stop_signal(struct sc_settings *s, sc_settings_lookup_fn lookup)
{
	const char *v = value(lookup, "SELFCKPT_STOP_SIGNAL");
	char name[SC_SIGNAL_NAME_MAX];
	int sig;

	if (!v)
		return SIGRTMAX - 2;
	sig = sc_signal_parse(v);
	if (sig >= SIGRTMIN && sig <= SIGRTMAX)
		return sig;
	bad(s, "SELFCKPT_STOP_SIGNAL", sc_signal_name(SIGRTMAX - 2, name),
	    "SELFCKPT_STOP_SIGNAL='%s' is not a real-time signal (%d to %d, or RTMIN+N, "
	    "RTMAX-N)", v, SIGRTMIN, SIGRTMAX);
	return SIGRTMAX - 2;
}

static enum sc_cuda_mode read_cuda(struct sc_settings *s, sc_settings_lookup_fn lookup)
{
	const char *v = value(lookup, "SELFCKPT_CUDA");

	if (!v || !strcmp(v, "auto"))
		return SC_CUDA_AUTO;
	if (!strcmp(v, "driver"))
		return SC_CUDA_DRIVER;
	if (!strcmp(v, "proxy"))
		return SC_CUDA_PROXY;
	bad(s, "SELFCKPT_CUDA", "auto", "SELFCKPT_CUDA='%s' is none of auto, driver, proxy", v);
	return SC_CUDA_AUTO;
}

static enum sc_cuda_capture read_capture(struct sc_settings *s, sc_settings_lookup_fn lookup)
{
	const char *v = value(lookup, "SELFCKPT_CUDA_CAPTURE");

	if (!v || !strcmp(v, "auto"))
		return SC_CUDA_CAPTURE_AUTO;
	if (!strcmp(v, "device"))
		return SC_CUDA_CAPTURE_DEVICE;
	if (!strcmp(v, "host"))
		return SC_CUDA_CAPTURE_HOST;
	if (!strcmp(v, "off"))
		return SC_CUDA_CAPTURE_OFF;
	bad(s, "SELFCKPT_CUDA_CAPTURE", "auto",
	    "SELFCKPT_CUDA_CAPTURE='%s' is none of auto, device, host, off", v);
	return SC_CUDA_CAPTURE_AUTO;
}

static void read_checkpoint(struct sc_settings *s, sc_settings_lookup_fn lookup)
{
	s->exit_after_save = flag(s, lookup, SC_ENV_EXIT_AFTER_SAVE, false, false);
	s->leave_out_escaped = flag(s, lookup, SC_ENV_LEAVE_OUT_ESCAPED, false, false);
	s->stop_signal = read_stop_signal(s, lookup);
	s->level = read_level(s, lookup);
	s->threads = count(s, lookup, "SELFCKPT_THREADS", SC_SETTINGS_THREADS_MAX, 0,
			   "online CPUs");
	s->writers = count(s, lookup, "SELFCKPT_WRITERS", UINT_MAX, 1, "1");
	s->writeback = flag(s, lookup, "SELFCKPT_WRITEBACK", true, true);
	s->embed_files = flag(s, lookup, "SELFCKPT_EMBED_FILES", false, false);
	s->fork = flag(s, lookup, "SELFCKPT_FORK", false, false);
	s->no_pagemap_scan = flag(s, lookup, "SELFCKPT_NO_PAGEMAP_SCAN", false, true);
	s->new_ids = flag(s, lookup, "SELFCKPT_NEW_IDS", false, false);
	s->incremental = read_incremental(s, lookup);
}

static void read_cuda_numbers(struct sc_settings *s, sc_settings_lookup_fn lookup)
{
	char dflt[16];

	s->cuda = read_cuda(s, lookup);
	snprintf(dflt, sizeof(dflt), "%u", SC_SETTINGS_LOCK_MS_DEFAULT);
	s->cuda_lock_ms = count(s, lookup, "SELFCKPT_CUDA_LOCK_MS", SC_SETTINGS_LOCK_MS_MAX,
				SC_SETTINGS_LOCK_MS_DEFAULT, dflt);
	s->cuda_arena = number(s, lookup, "SELFCKPT_CUDA_ARENA", SC_SETTINGS_ARENA_DEFAULT,
			       UINT64_MAX);
	s->cuda_channel = number(s, lookup, "SELFCKPT_CUDA_CHANNEL", SC_SETTINGS_CHANNEL_DEFAULT,
				 UINT64_MAX);
	s->cuda_pinned_mb = number(s, lookup, "SELFCKPT_CUDA_PINNED_MB",
				   SC_SETTINGS_PINNED_MB_DEFAULT, SC_SETTINGS_PINNED_MB_MAX);
	s->cuda_capture = read_capture(s, lookup);
}

/* The values kept as text: paths, and the triggers' values core/trigger.c checks. */
static int read_texts(struct sc_settings *s, sc_settings_lookup_fn lookup)
{
	int err = 0;

	err |= text(lookup, SC_ENV_DIR, &s->dir);
	err |= text(lookup, SC_ENV_INTERVAL, &s->interval);
	err |= text(lookup, SC_ENV_SIGNAL, &s->signal);
	err |= text(lookup, SC_ENV_SIGNAL_NOW, &s->signal_now);
	err |= text(lookup, "SELFCKPT_PROXY", &s->proxy);
	err |= text(lookup, "SELFCKPT_DRIVER_CKPT", &s->driver_ckpt);
	err |= text(lookup, SC_ENV_LIBRARY, &s->library);
	return err ? -ENOMEM : 0;
}

/* An empty environment: the defaults, and nothing to copy. */
static const char *nothing(const char *name)
{
	(void)name;
	return NULL;
}

int sc_settings_parse(struct sc_settings *s, sc_settings_lookup_fn lookup)
{
	memset(s, 0, sizeof(*s));
	s->log_level = read_log_level(s, lookup);
	read_checkpoint(s, lookup);
	read_cuda_numbers(s, lookup);
	if (read_texts(s, lookup) < 0) {
		sc_settings_release(s);
		sc_settings_parse(s, nothing);
		return -ENOMEM;
	}
	return 0;
}

void sc_settings_release(struct sc_settings *s)
{
	char **texts[] = { &s->dir, &s->interval, &s->signal, &s->signal_now,
			   &s->proxy, &s->driver_ckpt, &s->library };

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		free(*texts[i]);
		*texts[i] = NULL;
	}
	memset(s, 0, sizeof(*s));
}

void sc_settings_warn(const struct sc_settings *s)
{
	for (unsigned i = 0; i < s->bad_n; i++)
		sc_log(SC_LOG_WARN, "%s: %s is used instead", s->bad[i].problem,
		       s->bad[i].instead);
}

static const char *from_environment(const char *name)
{
	return getenv(name);
}

/* The log level first, so that the warnings about the other values obey it. */
static void load(void)
{
	if (sc_settings_parse(&current, from_environment) < 0)
		sc_log(SC_LOG_WARN, "out of memory reading the SELFCKPT_* variables: the "
		       "defaults are used");
	sc_log_set_level(current.log_level);
	sc_settings_warn(&current);
	fresh = true;
}

const struct sc_settings *sc_settings(void)
{
	pthread_once(&current_once, load);
	return &current;
}

void sc_settings_reload(void)
{
	fresh = false;
	sc_settings();
	if (fresh)
		return; /* that first read was this one: the values are new, and said once */
	sc_settings_release(&current);
	load();
}

void sc_settings_follow_restorer(void)
{
	const char *v = sc_restart_getenv(SC_ENV_LOG_LEVEL);
	struct sc_settings restorer = { 0 };

	sc_settings();
	if (!v)
		return;
	/* the log level only: the rest stays the saved process's, as its memory does */
	restorer.log_level = read_log_level(&restorer, sc_restart_getenv);
	current.log_level = restorer.log_level;
	sc_log_set_level(current.log_level);
	sc_settings_warn(&restorer);
}
