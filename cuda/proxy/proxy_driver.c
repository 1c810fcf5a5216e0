/* SPDX-License-Identifier: MIT */
/*
 * proxy_driver.c - load the driver library and find its entry points.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "cuda/proxy/proxy_driver.h"

struct sc_driver sc_drv;

#define SC_STR(x) #x
#define SC_XSTR(x) SC_STR(x)

int sc_driver_load(const char *path, char *why, size_t why_len)
{
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		snprintf(why, why_len, "cannot load the CUDA driver '%s': %s", path, dlerror());
		return -1;
	}
#define SC_DRIVER_LOOKUP(name)                                                              \
	if (!(sc_drv.name = (__typeof__(sc_drv.name))dlsym(lib, SC_XSTR(name)))) {          \
		snprintf(why, why_len, "the CUDA driver '%s' has no %s", path,              \
			 SC_XSTR(name));                                                     \
		return -1;                                                                  \
	}
	SC_DRIVER_CALLS(SC_DRIVER_LOOKUP)
	return 0;
}
