/* SPDX-License-Identifier: MIT */
/*
 * tool_path.c - where a program of selfckpt's own is (the GPU proxy,
 * selfckpt-driver-ckpt), for the library and for the tools alike: one search
 * order everywhere (sc_core.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sc_core.h"
#include "core/sc_settings.h"
#include "format/sc_log.h"
#include "selfckpt.h"

static bool executable(const char *path)
{
	return access(path, X_OK) == 0;
}

/*
 * In @dir, or in bin/ next to it (@dir is lib/ where this code is the shared
 * library; bin/ itself where it is linked into a tool).
 */
static bool next_to(const char *dir, const char *name, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/../bin/%s", dir, name);

	if (n > 0 && (size_t)n < len && executable(out))
		return true;
	n = snprintf(out, len, "%s/%s", dir, name);
	return n > 0 && (size_t)n < len && executable(out);
}

bool sc_find_on_path(const char *name, char *out, size_t len)
{
	for (const char *p = getenv("PATH"); p && *p;) {
		const char *end = strchrnul(p, ':');
		int n = snprintf(out, len, "%.*s/%s", (int)(end - p), p, name);

		if (end > p && n > 0 && (size_t)n < len && executable(out))
			return true;
		p = *end ? end + 1 : end;
	}
	return false;
}

int sc_find_tool(const char *name, const char *env_name, const char *env, char *out,
		 size_t len)
{
	char dir[PATH_MAX] = "";
	Dl_info info;
	char *slash;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return executable(out) ? 0 : sc_err_quiet(ENOENT, "%s='%s' is not an executable: %s",
							  env_name, env, strerror(errno));
	}
	/* the shared library's own path; linked into a program, the program's */
	if (dladdr((void *)sc_find_tool, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
		snprintf(dir, sizeof(dir), "%s", info.dli_fname);
	} else {
		ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);

		dir[n > 0 ? n : 0] = '\0';
	}
	if ((slash = strrchr(dir, '/')))
		*slash = '\0';
	if ((slash && next_to(dir, name, out, len)) || sc_find_on_path(name, out, len))
		return 0;
	return sc_err_quiet(ENOENT, "cannot find %s (in '%s' or its ../bin, or on PATH); set %s",
			    name, slash ? dir : "?", env_name);
}

int sc_need_tool(enum sc_tool tool, char *out, size_t len, int code, const char *purpose)
{
	const struct sc_settings *set = sc_settings();
	int err = tool == SC_TOOL_GPU_PROXY ?
		  sc_find_tool(SC_GPU_PROXY, "SELFCKPT_PROXY", set->proxy, out, len) :
		  sc_find_tool("selfckpt-driver-ckpt", "SELFCKPT_DRIVER_CKPT", set->driver_ckpt,
			       out, len);
	char why[1024];

	if (!err)
		return 0;
	snprintf(why, sizeof(why), "%s", selfckpt_last_error()); /* sc_err() writes over it */
	return sc_err(code ? code : -err, "%s: %s", purpose, why);
}
