/* SPDX-License-Identifier: MIT */
/*
 * api_kernel.c - what a program asks about its functions and kernels, and the
 * settings it gives them: names, modules, libraries and parameters (answered
 * here: the library keeps them), loading state, per-device kernel attributes
 * and shared memory configuration (forwarded; what is set is kept for a
 * restart), and the enumeration of a module's or library's functions.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda/lib/cuda_internal.h"

SC_CU_API CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction func)
{
	struct sc_cu_func *f = sc_cu_function_of(func);

	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	*name = f->name;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuFuncGetModule(CUmodule *module, CUfunction func)
{
	struct sc_cu_func *f = sc_cu_function_of(func);

	if (!module)
		return CUDA_ERROR_INVALID_VALUE;
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	/* a kernel launched as a function: its module is its library's, in this context */
	if (f->o.kind == SC_K_KERNEL)
		return cuLibraryGetModule(module, (CUlibrary)f->module);
	*module = (CUmodule)f->module;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel kernel)
{
	struct sc_cu_func *k = sc_obj_get(kernel, SC_K_KERNEL);

	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!k)
		return CUDA_ERROR_INVALID_HANDLE;
	*name = k->name;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuKernelGetLibrary(CUlibrary *library, CUkernel kernel)
{
	struct sc_cu_func *k = sc_obj_get(kernel, SC_K_KERNEL);

	if (!library)
		return CUDA_ERROR_INVALID_VALUE;
	if (!k)
		return CUDA_ERROR_INVALID_HANDLE;
	*library = (CUlibrary)k->module;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t index, size_t *offset,
					       size_t *size)
{
	if (!sc_obj_get(kernel, SC_K_KERNEL))
		return CUDA_ERROR_INVALID_HANDLE;
	return cuFuncGetParamInfo((CUfunction)kernel, index, offset, size);
}

SC_CU_API CUresult CUDAAPI cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction func)
{
	struct sc_cu_func *f = sc_cu_function_of(func);
	struct sc_req r = { .op = SC_OP_FUNC_IS_LOADED };
	CUresult res;

	if (!state)
		return CUDA_ERROR_INVALID_VALUE;
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((res = sc_cu_function_ask(f, &r, 0)) == CUDA_SUCCESS)
		*state = (CUfunctionLoadingState)r.a[0];
	return res;
}

SC_CU_API CUresult CUDAAPI cuFuncLoad(CUfunction func)
{
	struct sc_cu_func *f = sc_cu_function_of(func);
	struct sc_req r = { .op = SC_OP_FUNC_LOAD };

	return f ? sc_cu_function_ask(f, &r, 0) : CUDA_ERROR_INVALID_HANDLE;
}

SC_CU_API CUresult CUDAAPI cuFuncSetSharedMemConfig(CUfunction func, CUsharedconfig config)
{
	struct sc_cu_func *f = sc_cu_function_of(func);
	struct sc_req r = { .op = SC_OP_FUNC_SET_SHMEM, .a = { 0, (uint64_t)config } };
	CUresult res;

	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	r.ctx = sc_ctx_real();
	res = sc_cu_function_real(f, &r.a[0]);
	if (res == CUDA_SUCCESS)
		res = sc_cu_call(&r);
	if (res == CUDA_SUCCESS && f->o.kind == SC_K_FUNC) /* kept under the lock that made it */
		f->shmem_config = (int)config;
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
	struct sc_req r = { .op = SC_OP_LOADING_MODE };
	CUresult res;

	if (!mode)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_ask(&r, false)) == CUDA_SUCCESS)
		*mode = (CUmoduleLoadingMode)r.a[0];
	return res;
}

/* Keep what was set, once per device and setting, for a restart to set again. */
static CUresult remember_setting(struct sc_cu_func *k, CUdevice dev, int attribute, int value)
{
	struct sc_cu_kernel_setting *n;

	for (size_t i = 0; i < k->kernel_settings_n; i++)
		if (k->kernel_settings[i].dev == dev && k->kernel_settings[i].attribute == attribute) {
			k->kernel_settings[i].value = value;
			return CUDA_SUCCESS;
		}
	n = realloc(k->kernel_settings, (k->kernel_settings_n + 1) * sizeof(*n));
	if (!n)
		return CUDA_ERROR_OUT_OF_MEMORY;
	k->kernel_settings = n;
	n[k->kernel_settings_n++] = (struct sc_cu_kernel_setting){ dev, attribute, value };
	return CUDA_SUCCESS;
}

/*
 * Make setting @r of kernel @k (its handle in a[@slot]) and keep it for a
 * restart under the same hold of the lock: a checkpoint never finds it made
 * and not kept.
 */
static CUresult set_kernel(struct sc_cu_func *k, struct sc_req *r, int slot, CUdevice dev,
			   int attribute, int value)
{
	CUresult res;

	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	r->ctx = sc_ctx_real();
	r->a[slot] = k->o.real;
	if ((res = sc_cu_call(r)) == CUDA_SUCCESS)
		res = remember_setting(k, dev, attribute, value);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuKernelGetAttribute(int *pi, CUfunction_attribute attrib,
					       CUkernel kernel, CUdevice dev)
{
	struct sc_cu_func *k = sc_obj_get(kernel, SC_K_KERNEL);
	struct sc_req r = { .op = SC_OP_KERNEL_GET_ATTR };
	CUresult res;

	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if (!k)
		return CUDA_ERROR_INVALID_HANDLE;
	r.a[0] = (uint64_t)attrib;
	r.a[2] = (uint64_t)dev;
	if ((res = sc_cu_ask_about(&k->o, &r, 1)) == CUDA_SUCCESS)
		*pi = (int)(int64_t)r.a[0];
	return res;
}

SC_CU_API CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int value,
					       CUkernel kernel, CUdevice dev)
{
	struct sc_cu_func *k = sc_obj_get(kernel, SC_K_KERNEL);
	struct sc_req r = { .op = SC_OP_KERNEL_SET_ATTR };

	if (!k)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((unsigned)attrib >= CU_FUNC_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	r.a[0] = (uint64_t)attrib;
	r.a[2] = (uint64_t)dev;
	r.a[3] = (uint64_t)(int64_t)value;
	return set_kernel(k, &r, 1, dev, (int)attrib, value);
}

SC_CU_API CUresult CUDAAPI cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config,
						 CUdevice dev)
{
	struct sc_cu_func *k = sc_obj_get(kernel, SC_K_KERNEL);
	struct sc_req r = { .op = SC_OP_KERNEL_SET_CACHE };

	if (!k)
		return CUDA_ERROR_INVALID_HANDLE;
	r.a[1] = (uint64_t)config;
	r.a[2] = (uint64_t)dev;
	return set_kernel(k, &r, 0, dev, SC_KERNEL_CACHE, (int)config);
}

/* How many functions module or library @m holds, as the driver counts them. */
static CUresult count_functions(struct sc_cu_module *m, unsigned *count)
{
	struct sc_req r = { .op = SC_OP_FUNCTION_COUNT,
			    .a = { 0, m->o.kind == SC_K_LIBRARY ? SC_IMG_LIBRARY : SC_IMG_MODULE } };
	CUresult res;

	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_ask_about(&m->o, &r, 0)) == CUDA_SUCCESS)
		*count = (unsigned)r.a[0];
	return res;
}

/* The names from @first on, as many as one reply holds, into @buf. */
static CUresult names_from(struct sc_cu_module *m, unsigned first, char *buf, size_t cap,
			   unsigned *got, uint32_t *len)
{
	struct sc_req r = { .op = SC_OP_FUNCTION_NAMES,
			    .a = { 0, m->o.kind == SC_K_LIBRARY ? SC_IMG_LIBRARY : SC_IMG_MODULE,
				   first },
			    .out = buf, .out_cap = (uint32_t)cap };
	CUresult res = sc_cu_ask_about(&m->o, &r, 0);

	*got = (unsigned)r.a[0];
	*len = r.out_len;
	return res;
}

/*
 * Every function of @m, as handles of this library: the proxy names them,
 * and each name is looked up as cuModuleGetFunction or cuLibraryGetKernel
 * would, so that a restart finds them again by name.
 */
static CUresult enumerate(void **out, unsigned n, struct sc_cu_module *m, enum sc_cu_kind kind)
{
	char *buf = malloc(SC_CH_INLINE);
	unsigned count = 0, done = 0;
	CUresult res;

	if (!buf)
		return CUDA_ERROR_OUT_OF_MEMORY;
	res = count_functions(m, &count);
	if (res == CUDA_SUCCESS && n != count)
		res = CUDA_ERROR_INVALID_VALUE; /* the driver asks for the count exactly */
	while (res == CUDA_SUCCESS && done < count) {
		unsigned got = 0;
		uint32_t len = 0;
		size_t at = 0;

		res = names_from(m, done, buf, SC_CH_INLINE, &got, &len);
		for (unsigned i = 0; res == CUDA_SUCCESS && i < got; i++) {
			const char *name = buf + at;
			size_t name_len = strnlen(name, len - at);

			if (at + name_len >= len || done >= n) {
				res = CUDA_ERROR_UNKNOWN; /* the reply does not hold what it says */
				break;
			}
			res = sc_cu_function_lookup(kind, m, name, &out[done++]);
			at += name_len + 1;
		}
		if (res == CUDA_SUCCESS && !got)
			res = CUDA_ERROR_UNKNOWN;
	}
	free(buf);
	return res;
}

SC_CU_API CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int *count, CUmodule module)
{
	struct sc_cu_module *m = sc_obj_get(module, SC_K_MODULE);

	return m ? count_functions(m, count) : CUDA_ERROR_INVALID_HANDLE;
}

SC_CU_API CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int *count, CUlibrary library)
{
	struct sc_cu_module *l = sc_obj_get(library, SC_K_LIBRARY);

	return l ? count_functions(l, count) : CUDA_ERROR_INVALID_HANDLE;
}

SC_CU_API CUresult CUDAAPI cuModuleEnumerateFunctions(CUfunction *functions, unsigned int n,
						     CUmodule module)
{
	struct sc_cu_module *m = sc_obj_get(module, SC_K_MODULE);

	if (!functions)
		return CUDA_ERROR_INVALID_VALUE;
	return m ? enumerate((void **)functions, n, m, SC_K_FUNC) : CUDA_ERROR_INVALID_HANDLE;
}

SC_CU_API CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int n,
						    CUlibrary library)
{
	struct sc_cu_module *l = sc_obj_get(library, SC_K_LIBRARY);

	if (!kernels)
		return CUDA_ERROR_INVALID_VALUE;
	return l ? enumerate((void **)kernels, n, l, SC_K_KERNEL) : CUDA_ERROR_INVALID_HANDLE;
}
