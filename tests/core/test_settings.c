/* SPDX-License-Identifier: MIT */
/*
 * test_settings.c - the SELFCKPT_* variables (core/settings.c): the defaults,
 * every value read, a wrong value named with what is used instead, and one
 * read of the environment per process.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sc_settings.h"

/* The environment a test gives sc_settings_parse(): "NAME=value" strings, NULL-terminated. */
static const char *const *table;

static const char *from_table(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; table && table[i]; i++)
		if (!strncmp(table[i], name, n) && table[i][n] == '=')
			return table[i] + n + 1;
	return NULL;
}

static void parse(struct sc_settings *s, const char *const *env)
{
	table = env;
	cr_assert_eq(sc_settings_parse(s, from_table), 0);
}

/* The problem said about @name, or NULL. */
static const struct sc_setting_bad *bad_of(const struct sc_settings *s, const char *name)
{
	for (unsigned i = 0; i < s->bad_n; i++)
		if (!strcmp(s->bad[i].name, name))
			return &s->bad[i];
	return NULL;
}

static void expect_defaults(const struct sc_settings *s)
{
	cr_expect_null(s->dir);
	cr_expect_null(s->interval);
	cr_expect_null(s->signal);
	cr_expect_null(s->signal_now);
	cr_expect_not(s->exit_after_save);
	cr_expect_eq(s->stop_signal, SIGRTMAX - 2);
	cr_expect_eq(s->level, 1);
	cr_expect_eq(s->threads, 0, "0: online CPUs");
	cr_expect_eq(s->writers, 1);
	cr_expect(s->writeback);
	cr_expect_not(s->embed_files);
	cr_expect_not(s->fork);
	cr_expect_not(s->no_pagemap_scan);
	cr_expect_eq(s->log_level, SC_LOG_WARN);
	cr_expect_eq(s->cuda, SC_CUDA_AUTO);
	cr_expect_eq(s->cuda_lock_ms, 10000);
	cr_expect_eq(s->cuda_arena, 0x40000000000ull);
	cr_expect_eq(s->cuda_channel, 0x6f0000000000ull);
	cr_expect_eq(s->cuda_pinned_mb, 16384);
	cr_expect_eq(s->cuda_capture, SC_CUDA_CAPTURE_AUTO);
	cr_expect_null(s->proxy);
	cr_expect_null(s->driver_ckpt);
	cr_expect_not(s->new_ids);
	cr_expect_null(s->library);
}

Test(settings, unset_and_empty_variables_give_the_defaults)
{
	static const char *const empty[] = {
		"SELFCKPT_DIR=", "SELFCKPT_LEVEL=", "SELFCKPT_THREADS=", "SELFCKPT_WRITEBACK=",
		"SELFCKPT_LOG_LEVEL=", "SELFCKPT_STOP_SIGNAL=", "SELFCKPT_CUDA=",
		"SELFCKPT_CUDA_ARENA=", "SELFCKPT_CUDA_CAPTURE=", "SELFCKPT_PROXY=", NULL,
	};
	struct sc_settings s;

	parse(&s, NULL);
	expect_defaults(&s);
	cr_expect_eq(s.bad_n, 0);
	sc_settings_release(&s);
	parse(&s, empty);
	expect_defaults(&s);
	cr_expect_eq(s.bad_n, 0, "%s", s.bad_n ? s.bad[0].problem : "");
	sc_settings_release(&s);
}

Test(settings, every_variable_is_read)
{
	static const char *const env[] = {
		"SELFCKPT_DIR=/tmp/ck", "SELFCKPT_INTERVAL=0.5", "SELFCKPT_SIGNAL=USR2",
		"SELFCKPT_SIGNAL_NOW=RTMIN+1", "SELFCKPT_EXIT_AFTER_SAVE=1",
		"SELFCKPT_STOP_SIGNAL=RTMIN+3", "SELFCKPT_LEVEL=-5", "SELFCKPT_THREADS=3",
		"SELFCKPT_WRITERS=2", "SELFCKPT_WRITEBACK=0", "SELFCKPT_EMBED_FILES=1",
		"SELFCKPT_FORK=1", "SELFCKPT_NO_PAGEMAP_SCAN=1", "SELFCKPT_LOG_LEVEL=DEBUG",
		"SELFCKPT_CUDA=driver", "SELFCKPT_CUDA_LOCK_MS=3600000",
		"SELFCKPT_CUDA_ARENA=0x50000000000", "SELFCKPT_CUDA_CHANNEL=123",
		"SELFCKPT_CUDA_PINNED_MB=64", "SELFCKPT_CUDA_CAPTURE=host", "SELFCKPT_PROXY=/opt/proxy",
		"SELFCKPT_DRIVER_CKPT=/opt/dc", "SELFCKPT_NEW_IDS=1",
		"SELFCKPT_LIBRARY=/opt/lib.so",
		NULL,
	};
	struct sc_settings s;

	parse(&s, env);
	cr_expect_eq(s.bad_n, 0, "%s", s.bad_n ? s.bad[0].problem : "");
	cr_expect_str_eq(s.dir, "/tmp/ck");
	cr_expect_str_eq(s.interval, "0.5");
	cr_expect_str_eq(s.signal, "USR2");
	cr_expect_str_eq(s.signal_now, "RTMIN+1");
	cr_expect(s.exit_after_save);
	cr_expect_eq(s.stop_signal, SIGRTMIN + 3);
	cr_expect_eq(s.level, -5);
	cr_expect_eq(s.threads, 3);
	cr_expect_eq(s.writers, 2);
	cr_expect_not(s.writeback);
	cr_expect(s.embed_files);
	cr_expect(s.fork);
	cr_expect(s.no_pagemap_scan);
	cr_expect_eq(s.log_level, SC_LOG_DEBUG);
	cr_expect_eq(s.cuda, SC_CUDA_DRIVER);
	cr_expect_eq(s.cuda_lock_ms, 3600000);
	cr_expect_eq(s.cuda_arena, 0x50000000000ull);
	cr_expect_eq(s.cuda_channel, 123);
	cr_expect_eq(s.cuda_pinned_mb, 64);
	cr_expect_eq(s.cuda_capture, SC_CUDA_CAPTURE_HOST);
	cr_expect_str_eq(s.proxy, "/opt/proxy");
	cr_expect_str_eq(s.driver_ckpt, "/opt/dc");
	cr_expect(s.new_ids);
	cr_expect_str_eq(s.library, "/opt/lib.so");
	sc_settings_release(&s);
}

Test(settings, numbers_keep_their_old_meaning)
{
	static const char *const env[] = {
		"SELFCKPT_LEVEL=0", "SELFCKPT_STOP_SIGNAL=40", "SELFCKPT_LOG_LEVEL=0",
		"SELFCKPT_WRITEBACK=1", "SELFCKPT_CUDA=proxy", "SELFCKPT_THREADS=4096", NULL,
	};
	struct sc_settings s;

	parse(&s, env);
	cr_expect_eq(s.bad_n, 0, "%s", s.bad_n ? s.bad[0].problem : "");
	cr_expect_eq(s.level, 0, "0 stores");
	cr_expect_eq(s.stop_signal, 40);
	cr_expect_eq(s.log_level, SC_LOG_NONE);
	cr_expect(s.writeback);
	cr_expect_eq(s.cuda, SC_CUDA_PROXY);
	cr_expect_eq(s.threads, 4096);
	sc_settings_release(&s);
}

/* Each wrong value: the default in the field, a problem naming variable and value. */
Test(settings, wrong_values_are_named_with_what_is_used_instead)
{
	static const struct {
		const char *env, *name, *instead;
	} cases[] = {
		{ "SELFCKPT_LEVEL=fast", "SELFCKPT_LEVEL", "1" },
		{ "SELFCKPT_THREADS=0", "SELFCKPT_THREADS", "online CPUs" },
		{ "SELFCKPT_WRITERS=4x", "SELFCKPT_WRITERS", "1" },
		{ "SELFCKPT_WRITEBACK=no", "SELFCKPT_WRITEBACK", "1" },
		{ "SELFCKPT_EMBED_FILES=yes", "SELFCKPT_EMBED_FILES", "0" },
		{ "SELFCKPT_FORK=true", "SELFCKPT_FORK", "0" },
		{ "SELFCKPT_NEW_IDS=2", "SELFCKPT_NEW_IDS", "0" },
		{ "SELFCKPT_LOG_LEVEL=loud", "SELFCKPT_LOG_LEVEL", "warn" },
		{ "SELFCKPT_STOP_SIGNAL=USR1", "SELFCKPT_STOP_SIGNAL", "SIGRTMAX-2" },
		{ "SELFCKPT_CUDA=gpu", "SELFCKPT_CUDA", "auto" },
		{ "SELFCKPT_CUDA_LOCK_MS=0", "SELFCKPT_CUDA_LOCK_MS", "10000" },
		{ "SELFCKPT_CUDA_ARENA=4TiB", "SELFCKPT_CUDA_ARENA", "0x40000000000" },
		{ "SELFCKPT_CUDA_PINNED_MB=-1", "SELFCKPT_CUDA_PINNED_MB", "16384" },
		{ "SELFCKPT_CUDA_CAPTURE=gpu", "SELFCKPT_CUDA_CAPTURE", "auto" },
	};
	struct sc_settings s;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *env[] = { cases[i].env, NULL };
		const struct sc_setting_bad *b;
		char quoted[64];

		parse(&s, env);
		expect_defaults(&s);
		cr_assert_eq(s.bad_n, 1, "%s: %u problems", cases[i].env, s.bad_n);
		b = bad_of(&s, cases[i].name);
		cr_assert_not_null(b, "%s: not named", cases[i].env);
		snprintf(quoted, sizeof(quoted), "%s='%s'", cases[i].name,
			 strchr(cases[i].env, '=') + 1);
		cr_expect(strstr(b->problem, quoted), "'%s' does not say %s", b->problem, quoted);
		cr_expect_str_eq(b->instead, cases[i].instead, "%s", cases[i].env);
		sc_settings_release(&s);
	}
}

/* What sc_settings_warn() prints for @s, into @out. */
static void warnings(const struct sc_settings *s, char *out, size_t len)
{
	FILE *f = tmpfile();
	int saved = dup(2);
	size_t n;

	cr_assert(f && saved >= 0);
	cr_assert_geq(dup2(fileno(f), 2), 0);
	sc_settings_warn(s);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	fclose(f);
}

Test(settings, a_warning_names_the_variable_the_value_and_the_default)
{
	static const char *const env[] = { "SELFCKPT_THREADS=5000", NULL };
	struct sc_settings s;
	char out[1024];

	parse(&s, env);
	warnings(&s, out, sizeof(out));
	cr_expect(strstr(out, "warning: SELFCKPT_THREADS='5000' is not a whole number from 1 to "
			 "4096: online CPUs is used instead\n"), "%s", out);
	sc_settings_release(&s);
}

/* The process's own read: the log level set, each wrong value said once. */
Test(settings, the_process_warns_once)
{
	FILE *f = tmpfile();
	int saved = dup(2);
	char out[1024];
	size_t n;

	cr_assert(f && saved >= 0);
	cr_assert_eq(setenv("SELFCKPT_WRITERS", "many", 1), 0);
	cr_assert_geq(dup2(fileno(f), 2), 0);
	sc_settings_reload();
	sc_settings();
	sc_settings();
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	fclose(f);
	cr_assert(strstr(out, "SELFCKPT_WRITERS='many'"), "%s", out);
	cr_expect_null(strstr(strstr(out, "SELFCKPT_WRITERS") + 1, "SELFCKPT_WRITERS"),
		       "said twice: %s", out);
	cr_expect_eq(sc_settings()->writers, 1);
	cr_assert_eq(unsetenv("SELFCKPT_WRITERS"), 0);
}

/* The environment is read once: later changes are not seen until a reload (tests only). */
Test(settings, the_environment_is_read_once)
{
	const struct sc_settings *s;

	cr_assert_eq(setenv("SELFCKPT_LEVEL", "3", 1), 0);
	sc_settings_reload();
	s = sc_settings();
	cr_expect_eq(s->level, 3);
	cr_assert_eq(setenv("SELFCKPT_LEVEL", "7", 1), 0);
	cr_expect_eq(sc_settings(), s, "one structure for the whole process");
	cr_expect_eq(sc_settings()->level, 3, "read again after start-up");
	sc_settings_reload();
	cr_expect_eq(sc_settings()->level, 7);
	cr_assert_eq(unsetenv("SELFCKPT_LEVEL"), 0);
}
