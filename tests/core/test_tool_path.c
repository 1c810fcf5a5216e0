/* SPDX-License-Identifier: MIT */
/*
 * sc_find_tool(): the one search for a program of selfckpt's own, used by the
 * library (the GPU proxy, selfckpt-driver-ckpt) and by selfckpt-restore: the
 * variable first, then next to the file the code is in (its ../bin), then PATH.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sc_core.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"

static char dir[64], tool[128];

static void setup(void)
{
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/sc_tool_%d", (int)getpid());
	cr_assert_eq(mkdir(dir, 0700), 0);
	snprintf(tool, sizeof(tool), "%s/sc-test-tool", dir);
	cr_assert_not_null(f = fopen(tool, "w"));
	fputs("#!/bin/sh\n", f);
	fclose(f);
	cr_assert_eq(chmod(tool, 0700), 0);
	unsetenv("SC_TEST_TOOL");
}

static void teardown(void)
{
	unlink(tool);
	rmdir(dir);
}

TestSuite(tool_path, .init = setup, .fini = teardown);

/* As the library asks: the variable's value is the caller's to give. */
static int find(const char *name, char *out)
{
	return sc_find_tool(name, "SC_TEST_TOOL", getenv("SC_TEST_TOOL"), out, PATH_MAX);
}

Test(tool_path, the_variable_names_it_first)
{
	char out[PATH_MAX];

	setenv("SC_TEST_TOOL", tool, 1);
	setenv("PATH", "/nonexistent", 1);
	cr_assert_eq(find("sc-test-tool", out), 0);
	cr_assert_str_eq(out, tool);
}

Test(tool_path, a_variable_that_names_no_program_is_an_error_that_names_it)
{
	char out[PATH_MAX];

	setenv("SC_TEST_TOOL", "/nonexistent/sc-test-tool", 1);
	setenv("PATH", dir, 1); /* not looked at: the variable decides */
	cr_assert_eq(find("sc-test-tool", out), -ENOENT);
	cr_assert(strstr(selfckpt_last_error(),
			 "SC_TEST_TOOL='/nonexistent/sc-test-tool' is not an executable"),
		  "%s", selfckpt_last_error());
}

/* An executable script at @path; 0, or -1. */
static int make_tool(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs("#!/bin/sh\n", f);
	fclose(f);
	return chmod(path, 0700);
}

Test(tool_path, next_to_the_code_before_path)
{
	char out[PATH_MAX], self[PATH_MAX], name[64], next[PATH_MAX + 64], on_path[128];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	cr_assert_gt(n, 0);
	self[n] = '\0';
	*strrchr(self, '/') = '\0'; /* the folder of the test runner, which holds this code */
	snprintf(name, sizeof(name), "sc-test-next-%d", (int)getpid());
	snprintf(next, sizeof(next), "%s/%s", self, name);
	snprintf(on_path, sizeof(on_path), "%s/%s", dir, name);
	cr_assert_eq(make_tool(next), 0, "%s", next);
	cr_assert_eq(make_tool(on_path), 0);
	setenv("PATH", dir, 1);
	cr_expect_eq(find(name, out), 0, "%s",
		     selfckpt_last_error());
	cr_expect_str_eq(out, next);
	unlink(next);
	unlink(on_path);
}

Test(tool_path, then_path_and_a_missing_one_names_the_variable)
{
	char out[PATH_MAX];

	setenv("PATH", dir, 1);
	cr_assert_eq(find("sc-test-tool", out), 0);
	cr_assert_str_eq(out, tool);
	cr_assert_eq(find("sc-no-such-tool", out), -ENOENT);
	cr_assert(strstr(selfckpt_last_error(), "cannot find sc-no-such-tool") &&
		  strstr(selfckpt_last_error(), "set SC_TEST_TOOL"), "%s", selfckpt_last_error());
}
