/* SPDX-License-Identifier: MIT */
/*
 * module_arch.c - which code runs on which device, and the names that say so:
 * sc_module_runs_on(), sc_module_arch_name() and the rest (module_info.h).
 *
 * The rules are CUDA's (the compatibility table in module_info.h): SASS runs
 * on the later minors of its major version, PTX is compiled for its target
 * and every later device, and the 'a' and 'f' variants narrow either.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cuda/tools/module_info.h"

const char *sc_module_format_name(enum sc_module_format f)
{
	static const char *const names[] = { "unknown", "cubin", "fatbin", "ptx" };

	return (unsigned)f < sizeof(names) / sizeof(names[0]) ? names[f] : "unknown";
}

const char *sc_code_kind_name(enum sc_code_kind c)
{
	return c == SC_CODE_SASS ? "SASS" : "PTX";
}

const char *sc_module_arch_name(const struct sc_module_arch *a, char *buf, size_t n)
{
	snprintf(buf, n, "%s_%u%u%.1s", a->code == SC_CODE_PTX ? "compute" : "sm", a->major,
		 a->minor, a->variant ? &a->variant : "");
	return buf;
}

/* printf at *@used into @buf, which ends in "..." once it is full. */
static void append(char *buf, size_t n, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (!n || *used >= n)
		return;
	va_start(ap, fmt);
	k = vsnprintf(buf + *used, n - *used, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= n - *used) {
		*used = n;
		if (n > 3)
			memcpy(buf + n - 4, "...", 4);
		return;
	}
	*used += (size_t)k;
}

const char *sc_module_archs_text(const struct sc_module_info *m, char *buf, size_t n)
{
	char name[SC_MODULE_ARCH_NAME];
	size_t used = 0;

	if (n)
		*buf = '\0';
	if (!m->archs_n)
		append(buf, n, &used, "none");
	for (size_t i = 0; i < m->archs_n; i++)
		append(buf, n, &used, "%s%s (%s)", i ? ", " : "",
		       sc_module_arch_name(&m->archs[i], name, sizeof(name)),
		       sc_code_kind_name(m->archs[i].code));
	return buf;
}

static bool arch_runs(const struct sc_module_arch *a, unsigned major, unsigned minor)
{
	bool same_major = major == a->major;
	bool same_or_newer = major > a->major || (same_major && minor >= a->minor);

	if (a->variant == 'a')
		return same_major && minor == a->minor;
	if (a->code == SC_CODE_SASS || a->variant == 'f')
		return same_major && minor >= a->minor;
	return same_or_newer;
}

/* "sm_80 (SASS) runs on 8.0 and later 8.x", for a refusal to explain itself. */
static void append_rule(char *buf, size_t n, size_t *used, const struct sc_module_arch *a)
{
	char name[SC_MODULE_ARCH_NAME];

	append(buf, n, used, "%s (%s) runs on %u.%u", sc_module_arch_name(a, name, sizeof(name)),
	       sc_code_kind_name(a->code), a->major, a->minor);
	if (a->variant == 'a')
		append(buf, n, used, " only");
	else if (a->code == SC_CODE_SASS || (a->code == SC_CODE_PTX && a->variant == 'f'))
		append(buf, n, used, " and later %u.x", a->major);
	else
		append(buf, n, used, " and later");
}

bool sc_module_runs_on(const struct sc_module_info *m, int major, int minor, char *why,
		       size_t why_len)
{
	size_t used = 0;

	if (why && why_len)
		*why = '\0';
	else
		why_len = 0;
	if (m->format == SC_MODULE_UNKNOWN) {
		append(why, why_len, &used, "the module's format is not known here");
		return true;
	}
	if (!m->archs_n) {
		append(why, why_len, &used, "no architecture found in the module");
		return true;
	}
	for (size_t i = 0; i < m->archs_n; i++)
		if (major >= 0 && minor >= 0 &&
		    arch_runs(&m->archs[i], (unsigned)major, (unsigned)minor))
			return true;
	append(why, why_len, &used, "no code for compute capability %d.%d: ", major, minor);
	for (size_t i = 0; i < m->archs_n; i++) {
		if (i)
			append(why, why_len, &used, "; ");
		append_rule(why, why_len, &used, &m->archs[i]);
	}
	return false;
}
