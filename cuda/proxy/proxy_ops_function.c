/* SPDX-License-Identifier: MIT */
/*
 * proxy_ops_function.c - what a program asks about its functions and
 * kernels, and the settings it gives them: loading state, per-device kernel
 * attributes, shared memory configuration, and the names of every function a
 * module or library holds (the library makes its own handles from them).
 */
#include <stdlib.h>
#include <string.h>

#include "cuda/proxy/proxy_internal.h"

#define FUNC(v) ((CUfunction)(uintptr_t)(v))
#define KERNEL(v) ((CUkernel)(uintptr_t)(v))

static CUresult op_func_set_shmem(struct sc_ch_slot *s)
{
	return sc_drv.cuFuncSetSharedMemConfig(FUNC(s->a[0]), (CUsharedconfig)s->a[1]);
}

static CUresult op_func_is_loaded(struct sc_ch_slot *s)
{
	CUfunctionLoadingState state = CU_FUNCTION_LOADING_STATE_UNLOADED;
	CUresult r = sc_drv.cuFuncIsLoaded(&state, FUNC(s->a[0]));

	s->a[0] = (uint64_t)state;
	return r;
}

static CUresult op_func_load(struct sc_ch_slot *s)
{
	return sc_drv.cuFuncLoad(FUNC(s->a[0]));
}

static CUresult op_loading_mode(struct sc_ch_slot *s)
{
	CUmoduleLoadingMode mode = CU_MODULE_EAGER_LOADING;
	CUresult r = sc_drv.cuModuleGetLoadingMode(&mode);

	s->a[0] = (uint64_t)mode;
	return r;
}

static CUresult op_kernel_get_attr(struct sc_ch_slot *s)
{
	int v = 0;
	CUresult r = sc_drv.cuKernelGetAttribute(&v, (CUfunction_attribute)s->a[0],
						 KERNEL(s->a[1]), (CUdevice)s->a[2]);

	s->a[0] = (uint64_t)(int64_t)v;
	return r;
}

static CUresult op_kernel_set_attr(struct sc_ch_slot *s)
{
	return sc_drv.cuKernelSetAttribute((CUfunction_attribute)s->a[0], (int)s->a[3],
					   KERNEL(s->a[1]), (CUdevice)s->a[2]);
}

static CUresult op_kernel_set_cache(struct sc_ch_slot *s)
{
	return sc_drv.cuKernelSetCacheConfig(KERNEL(s->a[0]), (CUfunc_cache)s->a[1],
					     (CUdevice)s->a[2]);
}

static CUresult function_count(const struct sc_ch_slot *s, unsigned *n)
{
	if (s->a[1] == SC_IMG_LIBRARY)
		return sc_drv.cuLibraryGetKernelCount(n, (CUlibrary)(uintptr_t)s->a[0]);
	return sc_drv.cuModuleGetFunctionCount(n, (CUmodule)(uintptr_t)s->a[0]);
}

static CUresult op_function_count(struct sc_ch_slot *s)
{
	unsigned n = 0;
	CUresult r = function_count(s, &n);

	s->a[0] = n;
	return r;
}

/* The name of every function or kernel, in the driver's order. */
static CUresult function_names(const struct sc_ch_slot *s, unsigned n, const char **names)
{
	void **h = calloc(n ? n : 1, sizeof(*h));
	CUresult r;

	if (!h)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (s->a[1] == SC_IMG_LIBRARY)
		r = sc_drv.cuLibraryEnumerateKernels((CUkernel *)h, n,
						     (CUlibrary)(uintptr_t)s->a[0]);
	else
		r = sc_drv.cuModuleEnumerateFunctions((CUfunction *)h, n,
						      (CUmodule)(uintptr_t)s->a[0]);
	for (unsigned i = 0; r == CUDA_SUCCESS && i < n; i++)
		r = s->a[1] == SC_IMG_LIBRARY ? sc_drv.cuKernelGetName(&names[i], KERNEL(h[i]))
					      : sc_drv.cuFuncGetName(&names[i], FUNC(h[i]));
	free(h);
	return r;
}

static CUresult op_function_names(struct sc_ch_slot *s)
{
	unsigned n = 0, sent = 0;
	const char **names;
	size_t at = 0;
	CUresult r = function_count(s, &n);

	s->len = 0;
	if (r != CUDA_SUCCESS)
		return r;
	if (!(names = calloc(n ? n : 1, sizeof(*names))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = function_names(s, n, names);
	for (uint64_t i = s->a[2]; r == CUDA_SUCCESS && i < n; i++, sent++) {
		size_t len = strlen(names[i]) + 1;

		if (at + len > SC_CH_INLINE)
			break;
		memcpy(s->data + at, names[i], len);
		at += len;
	}
	free(names);
	if (r == CUDA_SUCCESS && !sent && s->a[2] < n)
		return CUDA_ERROR_INVALID_VALUE; /* a name longer than a slot's data */
	s->a[0] = sent;
	s->len = (uint32_t)at;
	return r;
}

void sc_proxy_ops_function(sc_proxy_op_fn *t)
{
	t[SC_OP_FUNC_SET_SHMEM] = op_func_set_shmem;
	t[SC_OP_FUNC_IS_LOADED] = op_func_is_loaded;
	t[SC_OP_FUNC_LOAD] = op_func_load;
	t[SC_OP_LOADING_MODE] = op_loading_mode;
	t[SC_OP_KERNEL_GET_ATTR] = op_kernel_get_attr;
	t[SC_OP_KERNEL_SET_ATTR] = op_kernel_set_attr;
	t[SC_OP_KERNEL_SET_CACHE] = op_kernel_set_cache;
	t[SC_OP_FUNCTION_COUNT] = op_function_count;
	t[SC_OP_FUNCTION_NAMES] = op_function_names;
}
