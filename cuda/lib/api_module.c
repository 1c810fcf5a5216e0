/* SPDX-License-Identifier: MIT */
/*
 * api_module.c - modules and libraries, their functions and globals, and
 * kernel launches.
 *
 * Every image is kept as bytes in the library's memory, so a restart can load
 * it again after the file is gone. A function remembers its parameter layout
 * (from cuFuncGetParamInfo in the proxy), so a launch copies each parameter
 * into one buffer that travels in the request.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda/lib/cuda_internal.h"
#include "cuda/lib/managed.h"
#include "format/sc_log.h"

#define STAGING_ALL ((size_t)SC_CH_STAGING_BUFS * SC_CH_STAGING_BUF)

/* Load @image in the proxy through the staging buffers; the proxy's handle. */
CUresult sc_module_send(const void *image, size_t len, unsigned kind, uint64_t ctx,
			uint64_t *real)
{
	struct sc_req r = { .op = SC_OP_MODULE_LOAD, .ctx = ctx };
	char *buf = sc_ch_staging(sc_cu.base, 0);
	CUresult res;

	if (len > STAGING_ALL) {
		sc_log(SC_LOG_ERROR, "a module image of %zu bytes is larger than the %zu bytes "
		       "the channel can pass", len, STAGING_ALL);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	pthread_mutex_lock(&sc_cu.staging_lock);
	memcpy(buf, image, len);
	r.a[0] = (uint64_t)(uintptr_t)buf;
	r.a[1] = len;
	r.a[2] = kind;
	res = sc_cu_call(&r);
	pthread_mutex_unlock(&sc_cu.staging_lock);
	*real = r.a[0];
	return res;
}

static CUresult load_image(const void *image, size_t len, unsigned kind, void **out)
{
	struct sc_cu_ctx *c = sc_ctx_current();
	struct sc_cu_module *m;
	CUresult res;
	uint64_t real = 0;

	if (kind == SC_IMG_MODULE && !c)
		return sc_ctx_missing();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = sc_module_send(image, len, kind, c ? c->o.real : 0, &real);
	m = res == CUDA_SUCCESS ? sc_obj_new(kind == SC_IMG_LIBRARY ? SC_K_LIBRARY : SC_K_MODULE,
					     sizeof(*m), kind == SC_IMG_LIBRARY ? NULL : c) :
				  NULL;
	if (res == CUDA_SUCCESS && (!m || !(m->image = malloc(len)))) {
		sc_obj_free(m);
		res = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (res == CUDA_SUCCESS) {
		memcpy(m->image, image, len);
		m->image_len = len;
		m->o.real = real;
		*out = m;
	}
	sc_cu_leave();
	return res;
}

static CUresult read_file(const char *path, void **data, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf;
	size_t got = 0;

	if (fd < 0)
		return CUDA_ERROR_FILE_NOT_FOUND;
	if (fstat(fd, &st) < 0 || !(buf = malloc((size_t)st.st_size + 1))) {
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = 0; /* a PTX or text image ends at a NUL */
	*data = buf;
	*len = got + 1;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
	if (!module || !image)
		return CUDA_ERROR_INVALID_VALUE;
	return load_image(image, sc_image_length(image), SC_IMG_MODULE, (void **)module);
}

SC_CU_API CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image,
					      unsigned int n, CUjit_option *options,
					      void **values)
{
	(void)n, (void)options, (void)values; /* JIT options only tune compilation */
	return cuModuleLoadData(module, image);
}

SC_CU_API CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatbin)
{
	return cuModuleLoadData(module, fatbin);
}

SC_CU_API CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *path)
{
	void *data;
	size_t len;
	CUresult res;

	if (!module || !path)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = read_file(path, &data, &len)) != CUDA_SUCCESS)
		return res;
	res = load_image(data, len, SC_IMG_MODULE, (void **)module);
	free(data);
	return res;
}

SC_CU_API CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code,
					     CUjit_option *jit_options, void **jit_values,
					     unsigned int jit_n, CUlibraryOption *options,
					     void **values, unsigned int n)
{
	(void)jit_options, (void)jit_values, (void)jit_n, (void)options, (void)values, (void)n;
	if (!library || !code)
		return CUDA_ERROR_INVALID_VALUE;
	return load_image(code, sc_image_length(code), SC_IMG_LIBRARY, (void **)library);
}

SC_CU_API CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *path,
						 CUjit_option *jit_options, void **jit_values,
						 unsigned int jit_n, CUlibraryOption *options,
						 void **values, unsigned int n)
{
	void *data;
	size_t len;
	CUresult res;

	(void)jit_options, (void)jit_values, (void)jit_n, (void)options, (void)values, (void)n;
	if (!library || !path)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = read_file(path, &data, &len)) != CUDA_SUCCESS)
		return res;
	res = load_image(data, len, SC_IMG_LIBRARY, (void **)library);
	free(data);
	return res;
}

void sc_function_forget(struct sc_cu_func *f)
{
	free(f->name);
	free(f->layout);
	free(f->kernel_settings);
	sc_obj_free(f);
}

static void drop_functions_of(struct sc_cu_module *m)
{
	struct sc_cu_obj *o;

	sc_objs_lock();
	for (o = sc_obj_first(); o;) {
		struct sc_cu_obj *next = o->next;
		struct sc_cu_func *f = (struct sc_cu_func *)o;

		if ((o->kind == SC_K_FUNC || o->kind == SC_K_KERNEL) && f->module == m)
			sc_function_forget(f);
		o = next;
	}
	sc_objs_unlock();
}

void sc_module_forget(struct sc_cu_module *m)
{
	drop_functions_of(m);
	sc_managed_forget_module(m);
	for (size_t i = 0; i < m->globals_n; i++)
		free(m->globals[i].name);
	free(m->globals);
	free(m->image);
	sc_obj_free(m);
}

static CUresult unload(struct sc_cu_module *m, unsigned kind)
{
	struct sc_req r = { .op = SC_OP_MODULE_UNLOAD, .ctx = sc_ctx_real(),
			    .a = { m->o.real, kind } };
	CUresult res = sc_cu_enter();

	if (res != CUDA_SUCCESS)
		return res;
	res = sc_cu_call(&r);
	if (res == CUDA_SUCCESS)
		sc_module_forget(m);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuModuleUnload(CUmodule module)
{
	struct sc_cu_module *m = sc_obj_get(module, SC_K_MODULE);

	if (!m)
		return CUDA_ERROR_INVALID_HANDLE;
	if (m->library) /* owned by its library */
		return CUDA_ERROR_INVALID_HANDLE;
	return unload(m, SC_IMG_MODULE);
}

SC_CU_API CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
	struct sc_cu_module *l = sc_obj_get(library, SC_K_LIBRARY);

	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	return unload(l, SC_IMG_LIBRARY);
}

/* A function or kernel object from a reply carrying its parameter layout. */
static CUresult new_function(enum sc_cu_kind kind, struct sc_cu_module *m, const char *name,
			     const struct sc_req *r, const uint32_t *layout, void **out)
{
	struct sc_cu_func *f = sc_obj_new(kind, sizeof(*f), kind == SC_K_FUNC ? m->o.ctx : NULL);
	uint32_t n = (uint32_t)r->a[1];

	if (!f)
		return CUDA_ERROR_OUT_OF_MEMORY;
	f->name = strdup(name);
	f->layout = malloc(n * 8 + 8);
	if (!f->name || !f->layout) {
		sc_function_forget(f);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memcpy(f->layout, layout, n * 8);
	f->params_n = n;
	for (uint32_t i = 0; i < n; i++)
		if (layout[2 * i] + layout[2 * i + 1] > f->params_bytes)
			f->params_bytes = layout[2 * i] + layout[2 * i + 1];
	f->module = m;
	f->cache_config = -1;
	f->shmem_config = -1;
	f->o.real = r->a[0];
	*out = f;
	return CUDA_SUCCESS;
}

CUresult sc_cu_function_lookup(enum sc_cu_kind kind, struct sc_cu_module *m, const char *name,
			       void **out)
{
	unsigned op = kind == SC_K_KERNEL ? SC_OP_LIBRARY_KERNEL : SC_OP_MODULE_FUNCTION;
	uint32_t layout[SC_CH_INLINE / 4];
	size_t len = strlen(name) + 1;
	struct sc_req r = { .op = op, .ctx = sc_ctx_real(), .a = { m->o.real }, .in = name,
			    .in_len = (uint32_t)len, .out = layout, .out_cap = sizeof(layout) };
	CUresult res;

	if (len > SC_CH_INLINE)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = sc_cu_call(&r);
	if (res == CUDA_SUCCESS)
		res = new_function(kind, m, name, &r, layout, out);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule module, const char *name)
{
	struct sc_cu_module *m = sc_obj_get(module, SC_K_MODULE);

	if (!f || !name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!m)
		return CUDA_ERROR_INVALID_HANDLE;
	return sc_cu_function_lookup(SC_K_FUNC, m, name, (void **)f);
}

SC_CU_API CUresult CUDAAPI cuLibraryGetKernel(CUkernel *k, CUlibrary library, const char *name)
{
	struct sc_cu_module *l = sc_obj_get(library, SC_K_LIBRARY);

	if (!k || !name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	return sc_cu_function_lookup(SC_K_KERNEL, l, name, (void **)k);
}

SC_CU_API CUresult CUDAAPI cuLibraryGetModule(CUmodule *module, CUlibrary library)
{
	struct sc_cu_module *l = sc_obj_get(library, SC_K_LIBRARY), *m;
	struct sc_req r = { .op = SC_OP_LIBRARY_MODULE };
	CUresult res;

	if (!module)
		return CUDA_ERROR_INVALID_VALUE;
	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!sc_ctx_current())
		return sc_ctx_missing();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	r.ctx = sc_ctx_real();
	r.a[0] = l->o.real;
	res = sc_cu_call(&r);
	if (res == CUDA_SUCCESS && !(m = sc_obj_new(SC_K_MODULE, sizeof(*m), sc_ctx_current())))
		res = CUDA_ERROR_OUT_OF_MEMORY;
	if (res == CUDA_SUCCESS) {
		m->o.real = r.a[0];
		m->library = l;
		*module = (CUmodule)m;
	}
	sc_cu_leave();
	return res;
}

/* Remember every global looked up: a restart checks each one is where it was. */
static void remember_global(struct sc_cu_module *m, const char *name, CUdeviceptr addr,
			    size_t size)
{
	struct sc_cu_global *n;

	for (size_t i = 0; i < m->globals_n; i++)
		if (!strcmp(m->globals[i].name, name))
			return;
	n = realloc(m->globals, (m->globals_n + 1) * sizeof(*n));
	if (!n)
		return;
	m->globals = n;
	n[m->globals_n] = (struct sc_cu_global){ strdup(name), addr, size };
	if (n[m->globals_n].name)
		m->globals_n++;
}

static CUresult get_global(struct sc_cu_module *m, unsigned kind, CUdeviceptr *dptr,
			   size_t *bytes, const char *name)
{
	size_t len = strlen(name) + 1;
	struct sc_req r = { .op = SC_OP_MODULE_GLOBAL, .ctx = sc_ctx_real(),
			    .a = { m->o.real, kind }, .in = name, .in_len = (uint32_t)len };
	CUresult res;

	if (len > SC_CH_INLINE)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = sc_cu_call(&r);
	/* a __managed__ variable: the driver's in the proxy, a host copy here (managed.c) */
	if (res == CUDA_SUCCESS && r.a[2])
		res = sc_managed_adopt_global(m->o.ctx ? m->o.ctx : sc_ctx_current(), m, r.a[0],
					      r.a[1]);
	if (res == CUDA_SUCCESS) {
		remember_global(m, name, r.a[0], r.a[1]);
		if (dptr)
			*dptr = r.a[0];
		if (bytes)
			*bytes = r.a[1];
	}
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule module,
					     const char *name)
{
	struct sc_cu_module *m = sc_obj_get(module, SC_K_MODULE);

	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!m)
		return CUDA_ERROR_INVALID_HANDLE;
	/* a library's module: its globals are the library's */
	if (m->library)
		return get_global(m->library, SC_IMG_LIBRARY, dptr, bytes, name);
	return get_global(m, SC_IMG_MODULE, dptr, bytes, name);
}

/* A library's global or __managed__ variable (@kind), as the library's handle names it. */
static CUresult library_global(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
			       const char *name, unsigned kind)
{
	struct sc_cu_module *l = sc_obj_get(library, SC_K_LIBRARY);

	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	return get_global(l, kind, dptr, bytes, name);
}

SC_CU_API CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes,
					      CUlibrary library, const char *name)
{
	return library_global(dptr, bytes, library, name, SC_IMG_LIBRARY);
}

/* The proxy's function to launch a kernel with, looked up once. */
static CUresult kernel_function(struct sc_cu_func *k, uint64_t *real)
{
	struct sc_req r = { .op = SC_OP_KERNEL_FUNCTION, .ctx = sc_ctx_real(),
			    .a = { k->o.real } };
	CUresult res;

	if (k->launch_real) {
		*real = k->launch_real;
		return CUDA_SUCCESS;
	}
	res = sc_cu_call(&r);
	if (res == CUDA_SUCCESS)
		*real = k->launch_real = r.a[0];
	return res;
}

SC_CU_API CUresult CUDAAPI cuKernelGetFunction(CUfunction *pfunc, CUkernel kernel)
{
	struct sc_cu_func *k = sc_obj_get(kernel, SC_K_KERNEL);

	if (!pfunc)
		return CUDA_ERROR_INVALID_VALUE;
	if (!k)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!sc_ctx_current())
		return sc_ctx_missing();
	/* The kernel launches as it is; its handle serves as the function. */
	*pfunc = (CUfunction)k;
	return CUDA_SUCCESS;
}

struct sc_cu_func *sc_cu_function_of(const void *h)
{
	struct sc_cu_func *f = sc_obj_get(h, SC_K_FUNC);

	return f ? f : sc_obj_get(h, SC_K_KERNEL);
}

SC_CU_API CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t index, size_t *offset,
					      size_t *size)
{
	struct sc_cu_func *f = sc_cu_function_of(func);

	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if (index >= f->params_n)
		return CUDA_ERROR_INVALID_VALUE;
	if (offset)
		*offset = f->layout[2 * index];
	if (size)
		*size = f->layout[2 * index + 1];
	return CUDA_SUCCESS;
}

CUresult sc_cu_function_real(struct sc_cu_func *f, uint64_t *real)
{
	if (f->o.kind == SC_K_KERNEL)
		return kernel_function(f, real);
	*real = f->o.real;
	return CUDA_SUCCESS;
}

CUresult sc_cu_function_ask(struct sc_cu_func *f, struct sc_req *r, int slot)
{
	CUresult res;

	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	r->ctx = sc_ctx_real();
	res = sc_cu_function_real(f, &r->a[slot]);
	if (res == CUDA_SUCCESS)
		res = sc_cu_call(r);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib,
					      CUfunction func)
{
	struct sc_cu_func *f = sc_cu_function_of(func);
	struct sc_req r = { .op = SC_OP_FUNC_GET_ATTR, .a = { (uint64_t)attrib } };
	CUresult res;

	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	res = sc_cu_function_ask(f, &r, 1);
	if (res == CUDA_SUCCESS)
		*pi = (int)(int64_t)r.a[0];
	return res;
}

SC_CU_API CUresult CUDAAPI cuFuncSetAttribute(CUfunction func, CUfunction_attribute attrib,
					      int value)
{
	struct sc_cu_func *f = sc_cu_function_of(func);
	struct sc_req r = { .op = SC_OP_FUNC_SET_ATTR, .a = { (uint64_t)attrib } };
	CUresult res;

	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((unsigned)attrib >= CU_FUNC_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	r.ctx = sc_ctx_real();
	r.a[2] = (uint64_t)(int64_t)value;
	res = sc_cu_function_real(f, &r.a[1]);
	if (res == CUDA_SUCCESS)
		res = sc_cu_call(&r);
	if (res == CUDA_SUCCESS) {
		f->attr_set[attrib] = value;
		f->attr_is_set[attrib] = true;
	}
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction func, CUfunc_cache config)
{
	struct sc_cu_func *f = sc_cu_function_of(func);
	struct sc_req r = { .op = SC_OP_FUNC_SET_CACHE, .a = { 0, (uint64_t)config } };
	CUresult res;

	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	r.ctx = sc_ctx_real();
	res = sc_cu_function_real(f, &r.a[0]);
	if (res == CUDA_SUCCESS)
		res = sc_cu_call(&r);
	if (res == CUDA_SUCCESS)
		f->cache_config = (int)config;
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes,
					       CUlibrary library, const char *name)
{
	return library_global(dptr, bytes, library, name, SC_IMG_LIBRARY_MANAGED);
}

/*
 * A unified function is host code of the library, called through a pointer
 * in the process that loaded it: the proxy, whose code the program cannot
 * call. Refused with that reason; the driver-assisted mode serves it.
 */
SC_CU_API CUresult CUDAAPI cuLibraryGetUnifiedFunction(void **fptr, CUlibrary library,
						       const char *symbol)
{
	(void)fptr, (void)library, (void)symbol;
	return sc_cu_unsupported("cuLibraryGetUnifiedFunction (its pointer would be the GPU "
				 "proxy's host code)");
}
