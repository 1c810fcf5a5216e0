/* SPDX-License-Identifier: MIT */
/*
 * softcuda_launch.c - functions and kernels: attributes, parameters, launch.
 *
 * A launch calls the kernel's host function once, in the calling thread,
 * with the device lock held; it loops over the grid itself. Parameters reach
 * it as kernelParams does, one pointer per parameter; a launch through
 * `extra` gets pointers into the caller's buffer at the offsets the module
 * text implies. A launch into a capturing stream becomes a graph node instead
 * (softcuda_graph.c).
 */
#include <string.h>

#include "softcuda_internal.h"

#define SD_GRID_X_MAX 2147483647U
#define SD_GRID_YZ_MAX 65535U
#define SD_BLOCK_XY_MAX 1024U
#define SD_BLOCK_Z_MAX 64U
#define SD_BLOCK_THREADS_MAX 1024U
#define SD_EXTRA_MAX 64		/* entries of an extra array we look at before giving up */

/* A CUfunction, or a CUkernel passed where a CUfunction goes, as CUDA allows. */
struct sd_func *sd_func_or_kernel(CUfunction handle)
{
	struct sd_func *f = sd_func_find(handle);

	return f ? f : sd_kernel_find((CUkernel)handle);
}

static CUresult func_enter(const char *func, CUfunction handle, struct sd_func **f)
{
	CUresult rc = sd_enter(func);

	if (rc)
		return rc;
	*f = sd_func_find(handle);
	if (!*f)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetAttribute(int *value, CUfunction_attribute attr, CUfunction handle)
{
	struct sd_func *f;
	CUresult rc = func_enter(__func__, handle, &f);

	if (rc)
		return rc;
	if (!value || (unsigned)attr >= CU_FUNC_ATTRIBUTE_MAX)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*value = f->attrs[attr];
	return sd_leave(CUDA_SUCCESS);
}

/* Only what CUDA lets a caller set, within the ranges it allows. */
static int attr_settable(CUfunction_attribute attr, int value)
{
	switch (attr) {
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		return value >= 0 && value <= SD_SHARED_PER_BLOCK_OPTIN;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		return value >= -1 && value <= 100;
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
		return value >= 0 && value <= 8;
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
		return value == 0 || value == 1;
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		return value >= CU_CLUSTER_SCHEDULING_POLICY_DEFAULT &&
		       value <= CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING;
	default:
		return 0;
	}
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction handle, CUfunction_attribute attr, int value)
{
	struct sd_func *f;
	CUresult rc = func_enter(__func__, handle, &f);

	if (rc)
		return rc;
	if (!attr_settable(attr, value))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	f->attrs[attr] = value;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction handle, CUfunc_cache config)
{
	struct sd_func *f;
	CUresult rc = func_enter(__func__, handle, &f);

	if (rc)
		return rc;
	if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	f->cache = config;
	return sd_leave(CUDA_SUCCESS);
}

/* The bank size is no longer configurable on the GPUs modelled: kept, and answered. */
CUresult CUDAAPI cuFuncSetSharedMemConfig(CUfunction handle, CUsharedconfig config)
{
	struct sd_func *f;
	CUresult rc = func_enter(__func__, handle, &f);

	if (rc)
		return rc;
	if ((unsigned)config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	f->shmem = config;
	return sd_leave(CUDA_SUCCESS);
}

/* Modules load every function eagerly: each is loaded from the start. */
CUresult CUDAAPI cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction handle)
{
	struct sd_func *f;
	CUresult rc = func_enter(__func__, handle, &f);

	if (rc)
		return rc;
	if (!state)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*state = CU_FUNCTION_LOADING_STATE_LOADED;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuFuncLoad(CUfunction handle)
{
	struct sd_func *f;
	CUresult rc = func_enter(__func__, handle, &f);

	return rc ? rc : sd_leave(CUDA_SUCCESS);
}

/* A kernel's attributes are its function's, on the one kind of device modelled. */
static CUresult kernel_enter(const char *func, CUkernel handle, CUdevice dev, struct sd_func **f)
{
	CUresult rc = sd_enter(func);

	if (rc)
		return rc;
	*f = sd_kernel_find(handle);
	if (!*f)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	if ((rc = sd_device_check(dev)) != CUDA_SUCCESS)
		return sd_leave(rc);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetAttribute(int *value, CUfunction_attribute attr, CUkernel handle,
				      CUdevice dev)
{
	struct sd_func *f;
	CUresult rc = kernel_enter(__func__, handle, dev, &f);

	if (rc)
		return rc;
	if (!value || (unsigned)attr >= CU_FUNC_ATTRIBUTE_MAX)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*value = f->attrs[attr];
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attr, int value, CUkernel handle,
				      CUdevice dev)
{
	struct sd_func *f;
	CUresult rc = kernel_enter(__func__, handle, dev, &f);

	if (rc)
		return rc;
	if (!attr_settable(attr, value))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	f->attrs[attr] = value;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuKernelSetCacheConfig(CUkernel handle, CUfunc_cache config, CUdevice dev)
{
	struct sd_func *f;
	CUresult rc = kernel_enter(__func__, handle, dev, &f);

	if (rc)
		return rc;
	if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	f->cache = config;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel handle)
{
	struct sd_func *f;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(f = sd_kernel_find(handle)))
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	if (!name)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*name = f->name;
	return sd_leave(CUDA_SUCCESS);
}

/* A kernel's too, as the driver answers for one passed where a function goes. */
CUresult CUDAAPI cuFuncGetParamInfo(CUfunction handle, size_t index, size_t *offset,
				    size_t *size)
{
	struct sd_func *f;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(f = sd_func_or_kernel(handle)))
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	if (index >= f->n_params)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if (offset)
		*offset = f->param_offset[index];
	if (size)
		*size = f->param_size[index];
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction handle)
{
	struct sd_func *f;
	CUresult rc = func_enter(__func__, handle, &f);

	if (rc)
		return rc;
	if (!name)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*name = f->name;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuFuncGetModule(CUmodule *module, CUfunction handle)
{
	struct sd_func *f;
	CUresult rc = func_enter(__func__, handle, &f);

	if (rc)
		return rc;
	if (!module)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*module = (CUmodule)f->mod;
	return sd_leave(CUDA_SUCCESS);
}

/* The function of a library kernel in the current context: one for all contexts here. */
CUresult CUDAAPI cuKernelGetFunction(CUfunction *func, CUkernel kernel)
{
	struct sd_func *f;
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_ctx_current(&ctx);
	if (rc)
		return sd_leave(rc);
	f = sd_kernel_find(kernel);
	if (!f)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	if (!func)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*func = (CUfunction)f;
	return sd_leave(CUDA_SUCCESS);
}

static CUresult check_dims(const struct sd_func *f, const struct softcuda_launch *l)
{
	const unsigned *g = l->grid, *b = l->block;

	if (!g[0] || !g[1] || !g[2] || !b[0] || !b[1] || !b[2])
		return CUDA_ERROR_INVALID_VALUE;
	if (g[0] > SD_GRID_X_MAX || g[1] > SD_GRID_YZ_MAX || g[2] > SD_GRID_YZ_MAX ||
	    b[0] > SD_BLOCK_XY_MAX || b[1] > SD_BLOCK_XY_MAX || b[2] > SD_BLOCK_Z_MAX ||
	    (unsigned long long)b[0] * b[1] * b[2] > SD_BLOCK_THREADS_MAX) {
		sd_log("launch of %s: grid %ux%ux%u, block %ux%ux%u out of range", f->name, g[0],
		       g[1], g[2], b[0], b[1], b[2]);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (l->shared_bytes > (unsigned)f->attrs[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES]) {
		sd_log("launch of %s: %u bytes of shared memory, more than allowed", f->name,
		       l->shared_bytes);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/* CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE: one buffer holding every parameter. */
static CUresult extra_params(const struct sd_func *f, void **extra, void **args)
{
	size_t *size = NULL;
	char *buf = NULL;
	unsigned i;

	for (i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
		if (i >= SD_EXTRA_MAX)
			return CUDA_ERROR_INVALID_VALUE;
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
			buf = extra[i + 1];
		else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
			size = extra[i + 1];
		else
			return CUDA_ERROR_INVALID_VALUE;
	}
	if (!f->n_params)
		return CUDA_SUCCESS;
	if (!buf || !size || *size < f->param_bytes) {
		sd_log("launch of %s: parameter buffer missing or smaller than %zu bytes",
		       f->name, f->param_bytes);
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (i = 0; i < f->n_params; i++)
		args[i] = buf + f->param_offset[i];
	return CUDA_SUCCESS;
}

/* A module's functions run in its own context; a library's in any. */
static CUresult launch_func(CUfunction handle, struct sd_func **out)
{
	struct sd_func *f = sd_func_or_kernel(handle);
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if (f->mod->obj.ctx && f->mod->obj.ctx != ctx) {
		sd_log("launch of %s: its module belongs to another context", f->name);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	*out = f;
	return CUDA_SUCCESS;
}

CUresult sd_launch_args(CUfunction handle, const struct softcuda_launch *l, void **params,
			void **extra, struct sd_func **out, void **args)
{
	struct sd_func *f;
	CUresult rc = launch_func(handle, &f);

	if (rc == CUDA_SUCCESS)
		rc = check_dims(f, l);
	if (rc)
		return rc;
	if ((params && extra) || (f->n_params && !params && !extra))
		return CUDA_ERROR_INVALID_VALUE;
	if (extra)
		rc = extra_params(f, extra, args);
	for (unsigned i = 0; !extra && i < f->n_params; i++)
		args[i] = params[i];
	*out = f;
	return rc;
}

static CUresult launch(CUfunction handle, const struct softcuda_launch *l, void **params,
		       void **extra)
{
	void *args[SD_MAX_PARAMS];
	struct sd_func *f;
	CUresult rc = sd_launch_args(handle, l, params, extra, &f, args);

	if (rc == CUDA_SUCCESS)
		rc = sd_stream_check((CUstream)l->stream);
	if (rc == CUDA_SUCCESS)
		f->fn(l, args);
	return rc;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int grid_x, unsigned int grid_y,
				unsigned int grid_z, unsigned int block_x, unsigned int block_y,
				unsigned int block_z, unsigned int shared_bytes, CUstream stream,
				void **params, void **extra)
{
	struct softcuda_launch l = {
		.grid = { grid_x, grid_y, grid_z },
		.block = { block_x, block_y, block_z },
		.shared_bytes = shared_bytes,
		.stream = stream,
	};
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (sd_capturing(stream))
		return sd_leave(sd_capture_kernel(f, &l, params, extra, NULL, 0));
	return sd_leave(launch(f, &l, params, extra));
}

/* A cluster divides the grid in every dimension and has at most 8 blocks. */
static CUresult check_cluster(const struct softcuda_launch *l, const CUlaunchAttribute *a)
{
	unsigned x = a->value.clusterDim.x, y = a->value.clusterDim.y, z = a->value.clusterDim.z;

	if (!x || !y || !z || x * y * z > 8 || l->grid[0] % x || l->grid[1] % y || l->grid[2] % z)
		return CUDA_ERROR_INVALID_CLUSTER_SIZE;
	return CUDA_SUCCESS;
}

/* A cooperative grid must be resident all at once. */
static CUresult check_cooperative(CUfunction handle, const struct softcuda_launch *l)
{
	struct sd_func *f = sd_func_or_kernel(handle);
	struct sd_ctx *ctx;
	unsigned long blocks = (unsigned long)l->grid[0] * l->grid[1] * l->grid[2];
	CUresult rc = sd_ctx_current(&ctx);

	if (rc || !f)
		return rc ? rc : CUDA_ERROR_INVALID_HANDLE;
	if (blocks > (unsigned long)sd_co_resident_blocks(f, ctx->device,
							  (int)(l->block[0] * l->block[1] *
								l->block[2]),
							  l->shared_bytes))
		return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
	return CUDA_SUCCESS;
}

static CUresult check_event(CUevent event)
{
	return sd_obj_find(SD_EVENT, event) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* The attributes the software device knows, checked as CUDA checks them. */
CUresult sd_launch_attr_check(CUfunction handle, const struct softcuda_launch *l,
			      const CUlaunchAttribute *a)
{
	switch (a->id) {
	case CU_LAUNCH_ATTRIBUTE_IGNORE:
	case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
	case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
	case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
	case CU_LAUNCH_ATTRIBUTE_PRIORITY:
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
	case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
		return CUDA_SUCCESS;
	case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
		return a->value.cooperative ? check_cooperative(handle, l) : CUDA_SUCCESS;
	case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
		return check_cluster(l, a);
	case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		return a->value.sharedMemCarveout <= 100 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
		return check_event(a->value.programmaticEvent.event);
	case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
		return check_event(a->value.launchCompletionEvent.event);
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

/*
 * The events are recorded before the kernel runs: every launch is synchronous
 * here, so they complete with it all the same.
 */
static CUresult apply_attributes(CUfunction handle, const CUlaunchConfig *c,
				 const struct softcuda_launch *l)
{
	CUresult rc = CUDA_SUCCESS;

	for (unsigned i = 0; rc == CUDA_SUCCESS && i < c->numAttrs; i++) {
		const CUlaunchAttribute *a = &c->attrs[i];

		rc = sd_launch_attr_check(handle, l, a);
		if (rc == CUDA_SUCCESS && a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT)
			rc = sd_event_record(a->value.programmaticEvent.event, c->hStream, 0);
		if (rc == CUDA_SUCCESS && a->id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT)
			rc = sd_event_record(a->value.launchCompletionEvent.event, c->hStream, 0);
	}
	return rc;
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params,
				  void **extra)
{
	struct softcuda_launch l;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!c || (c->numAttrs && !c->attrs))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	l = (struct softcuda_launch){
		.grid = { c->gridDimX, c->gridDimY, c->gridDimZ },
		.block = { c->blockDimX, c->blockDimY, c->blockDimZ },
		.shared_bytes = c->sharedMemBytes,
		.stream = c->hStream,
	};
	if (sd_capturing(c->hStream))
		return sd_leave(sd_capture_kernel(f, &l, params, extra, c->attrs, c->numAttrs));
	rc = apply_attributes(f, c, &l);
	return sd_leave(rc ? rc : launch(f, &l, params, extra));
}

CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int grid_x,
					   unsigned int grid_y, unsigned int grid_z,
					   unsigned int block_x, unsigned int block_y,
					   unsigned int block_z, unsigned int shared_bytes,
					   CUstream stream, void **params)
{
	CUlaunchAttribute cooperative = { .id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
					  .value.cooperative = 1 };
	CUlaunchConfig c = { grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes,
			     stream, &cooperative, 1 };

	return cuLaunchKernelEx(&c, f, params, NULL);
}
