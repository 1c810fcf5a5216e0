/* SPDX-License-Identifier: MIT */
/*
 * api_launch.c - kernel launches: cuLaunchKernel, cuLaunchKernelEx with its
 * attributes (cluster dimensions, cooperative, priority, programmatic
 * serialisation, completion events...) and cuLaunchCooperativeKernel.
 *
 * The parameters travel by value in the request, marshalled with the layout
 * the proxy reported for the function; a launch is posted, not waited for,
 * as the driver's is. A launch leaves nothing a restart must make again.
 */
#include <string.h>

#include "cuda/lib/cuda_internal.h"
#include "cuda/lib/managed.h"

/* kernelParams: one pointer per parameter; copy each into the buffer at its offset. */
static CUresult pack_params(const struct sc_cu_func *f, void **params, uint8_t *buf)
{
	if (f->params_n && !params)
		return CUDA_ERROR_INVALID_VALUE;
	for (uint32_t i = 0; i < f->params_n; i++) {
		if (!params[i])
			return CUDA_ERROR_INVALID_VALUE;
		memcpy(buf + f->layout[2 * i], params[i], f->layout[2 * i + 1]);
	}
	return CUDA_SUCCESS;
}

/* extra: CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE pairs, CU_LAUNCH_PARAM_END. */
static CUresult pack_extra(const struct sc_cu_func *f, void **extra, uint8_t *buf,
			   size_t cap)
{
	const void *ptr = NULL;
	size_t size = 0;

	for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
			ptr = extra[i + 1];
		else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
			size = *(const size_t *)extra[i + 1];
		else
			return CUDA_ERROR_INVALID_VALUE;
	}
	if (!ptr || size > cap || size < f->params_bytes)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(buf, ptr, size);
	return CUDA_SUCCESS;
}

CUresult sc_cu_pack_args(const struct sc_cu_func *f, void **params, void **extra, uint8_t *buf,
			 size_t cap)
{
	if (params && extra)
		return CUDA_ERROR_INVALID_VALUE;
	if (f->params_bytes > cap)
		return sc_cu_unsupported("a launch with parameters this large");
	memset(buf, 0, f->params_bytes);
	return extra ? pack_extra(f, extra, buf, cap) : pack_params(f, params, buf);
}

/*
 * The proxy's copy of @attr: the events it names are the proxy's. A node of a
 * graph that kernels update is refused: the handle they hold would change at
 * a restart.
 */
CUresult sc_cu_launch_attribute(const CUlaunchAttribute *attr, CUlaunchAttribute *out)
{
	struct sc_cu_event *e = NULL;
	CUevent *slot = NULL;

	*out = *attr;
	if (attr->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT)
		slot = &out->value.programmaticEvent.event;
	else if (attr->id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT)
		slot = &out->value.launchCompletionEvent.event;
	else if (attr->id == CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE)
		return sc_cu_unsupported("cuLaunchKernelEx with a device-updatable graph node");
	if (!slot)
		return CUDA_SUCCESS;
	if (!(e = sc_obj_get(*slot, SC_K_EVENT)))
		return CUDA_ERROR_INVALID_HANDLE;
	*slot = (CUevent)(uintptr_t)e->o.real;
	return CUDA_SUCCESS;
}

struct launch {
	unsigned grid[3], block[3], shared;
	CUstream stream;
	bool ex;                        /* cuLaunchKernelEx's, attributes or not */
	const CUlaunchAttribute *attrs;
	unsigned attrs_n;
};

/*
 * Post launch @l of @f. The request's data, one slot's at most: the
 * attributes (for an Ex launch), the parameters' layout, the parameter buffer.
 */
const struct sc_cu_func *sc_last_launched;

static CUresult post_launch(struct sc_cu_func *f, const struct launch *l, void **params,
			    void **extra)
{
	_Alignas(CUlaunchAttribute) uint8_t data[SC_CH_INLINE];
	size_t attrs_len = (size_t)l->attrs_n * sizeof(CUlaunchAttribute);
	size_t head = attrs_len + f->params_n * 8ull;
	struct sc_req r = { .op = l->ex ? SC_OP_LAUNCH_EX : SC_OP_LAUNCH,
			    .a = { 0, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
				   l->block[2], l->shared, 0, f->params_n, l->attrs_n } };
	CUresult res;

	if (head >= SC_CH_INLINE)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_pack_args(f, params, extra, data + head, SC_CH_INLINE - head)) !=
	    CUDA_SUCCESS)
		return res;
	memcpy(data + attrs_len, f->layout, f->params_n * 8);
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	for (unsigned i = 0; res == CUDA_SUCCESS && i < l->attrs_n; i++)
		res = sc_cu_launch_attribute(&l->attrs[i], (CUlaunchAttribute *)data + i);
	r.ctx = sc_ctx_real();
	if (res == CUDA_SUCCESS)
		r.a[8] = sc_stream_real(l->stream, &res);
	r.in = data;
	r.in_len = (uint32_t)(head + f->params_bytes);
	if (res == CUDA_SUCCESS && !r.ctx)
		res = CUDA_ERROR_INVALID_CONTEXT;
	if (res == CUDA_SUCCESS)
		res = sc_cu_function_real(f, &r.a[0]);
	if (res == CUDA_SUCCESS && sc_managed_live()) /* a kernel may write any of it */
		res = sc_managed_before_work(r.ctx, r.a[8], SC_MANAGED_ANY, SIZE_MAX);
	if (res == CUDA_SUCCESS)
		res = sc_cu_post(&r);
	if (res == CUDA_SUCCESS) /* what a checkpoint names if it waits (gpu_checkpoint.c) */
		__atomic_store_n(&sc_last_launched, f, __ATOMIC_RELAXED);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuLaunchKernel(CUfunction func, unsigned int gx, unsigned int gy,
					  unsigned int gz, unsigned int bx, unsigned int by,
					  unsigned int bz, unsigned int shared, CUstream stream,
					  void **params, void **extra)
{
	struct sc_cu_func *f = sc_cu_function_of(func);
	struct launch l = { { gx, gy, gz }, { bx, by, bz }, shared, stream, false, NULL, 0 };

	return f ? post_launch(f, &l, params, extra) : CUDA_ERROR_INVALID_HANDLE;
}

SC_CU_API CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction func,
					    void **params, void **extra)
{
	struct sc_cu_func *f = sc_cu_function_of(func);
	struct launch l;

	if (!config || (config->numAttrs && !config->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if (config->numAttrs > SC_LAUNCH_ATTRS_MAX)
		return sc_cu_unsupported("cuLaunchKernelEx with more than 32 attributes");
	l = (struct launch){ { config->gridDimX, config->gridDimY, config->gridDimZ },
			     { config->blockDimX, config->blockDimY, config->blockDimZ },
			     config->sharedMemBytes, config->hStream, true, config->attrs,
			     config->numAttrs };
	return post_launch(f, &l, params, extra);
}

SC_CU_API CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction func, unsigned int gx,
						     unsigned int gy, unsigned int gz,
						     unsigned int bx, unsigned int by,
						     unsigned int bz, unsigned int shared,
						     CUstream stream, void **params)
{
	CUlaunchAttribute cooperative = { .id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
					  .value.cooperative = 1 };
	CUlaunchConfig c = { gx, gy, gz, bx, by, bz, shared, stream, &cooperative, 1 };

	return cuLaunchKernelEx(&c, func, params, NULL);
}
