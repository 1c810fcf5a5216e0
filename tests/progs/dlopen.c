/* SPDX-License-Identifier: MIT */
/*
 * dlopen - shared libraries across a checkpoint: one opened before it (zlib)
 * still works after, through the old pointers and a new dlsym(), and one
 * opened only after the restart (libm) loads and works; both close.
 */
#include <dlfcn.h>

#include "prog.h"

typedef unsigned long (*crc32_fn)(unsigned long, const unsigned char *, unsigned);
typedef const char *(*version_fn)(void);
typedef double (*math_fn)(double);

static void *need(void *handle, const char *sym)
{
	void *f = dlsym(handle, sym);

	if (!f)
		prog_die("dlsym(%s): %s", sym, dlerror());
	return f;
}

static void use_libm(const char *when)
{
	void *m = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
	math_fn c, s;

	if (!m)
		prog_die("dlopen(libm.so.6): %s", dlerror());
	c = (math_fn)need(m, "cos");
	s = (math_fn)need(m, "sqrt");
	printf("%s: cos(1) = %.17g, sqrt(2) = %.17g\n", when, c(1.0), s(2.0));
	prog_check("dlclose(libm)", dlclose(m) == 0, "%s", dlerror());
}

int main(int argc, char **argv)
{
	static const unsigned char text[] = "the quick brown fox";
	struct prog p;
	void *z, *missing;
	crc32_fn crc;
	version_fn ver;

	prog_init(&p, argc, argv);
	z = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!z)
		prog_die("dlopen(libz.so.1): %s", dlerror());
	crc = (crc32_fn)need(z, "crc32");
	ver = (version_fn)need(z, "zlibVersion");
	printf("before: crc32 %08lx, zlib %s\n", crc(0, text, sizeof(text) - 1),
	       ver()[0] ? "has a version" : "no version");

	prog_checkpoint(&p, 1);

	printf("after: crc32 %08lx through the old pointer\n", crc(0, text, sizeof(text) - 1));
	crc = (crc32_fn)need(z, "crc32");
	printf("after: crc32 %08lx through a new dlsym\n", crc(0, text, sizeof(text) - 1));
	use_libm("after");
	missing = dlopen("libselfckpt-no-such.so", RTLD_NOW);
	prog_check("dlopen of a missing library fails", !missing && dlerror() != NULL, "opened");

	prog_checkpoint(&p, 2);

	use_libm("later");
	prog_check("dlclose(libz)", dlclose(z) == 0, "%s", dlerror());
	return 0;
}
