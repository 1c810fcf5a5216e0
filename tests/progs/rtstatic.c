/* SPDX-License-Identifier: MIT */
/*
 * rtstatic - a program linked with libselfckpt.a as `pkg-config --static
 * --libs selfckpt` links it, that calls no CUDA function of the library but
 * loads the CUDA driver itself and calls selfckpt_save(): the CUDA module's
 * hooks must be in the program all the same (tests/cli/test_driver.c).
 *
 *   rtstatic DRIVER IMAGE
 *
 * Prints "selfckpt_save: N" with what selfckpt_save() returned.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "selfckpt.h"

int main(int argc, char **argv)
{
	int (*init)(unsigned);
	void *h;

	if (argc != 3) {
		fprintf(stderr, "usage: rtstatic DRIVER IMAGE\n");
		return 64;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	*(void **)&init = h ? dlsym(h, "cuInit") : NULL;
	if (!init || init(0)) {
		fprintf(stderr, "rtstatic: cannot load and initialise '%s'\n", argv[1]);
		return 3;
	}
	printf("selfckpt_save: %d\n", selfckpt_save(argv[2]));
	return 0;
}
