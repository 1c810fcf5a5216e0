/* SPDX-License-Identifier: MIT */
/*
 * api_ctx.c - primary and created contexts, the current context, limits.
 */
#include "cuda/lib/graph.h"
#include "cuda/lib/managed.h"
#include "format/sc_log.h"

#define MAX_DEVICES 64

static struct sc_cu_ctx *primary[MAX_DEVICES];

/* The first context makes the channel's staging pinned memory in the proxy. */
static CUresult first_context(struct sc_cu_ctx *c)
{
	struct sc_req r = { .op = SC_OP_HEAP_REGISTER, .ctx = c->o.real,
			    .a = { (uint64_t)(uintptr_t)sc_ch_staging(sc_cu.base, 0),
				   (uint64_t)SC_CH_STAGING_BUFS * SC_CH_STAGING_BUF } };
	CUresult res;

	if (sc_cu.staging_pinned)
		return CUDA_SUCCESS;
	res = sc_cu_call(&r);
	if (res == CUDA_SUCCESS)
		sc_cu.staging_pinned = true;
	else
		sc_log(SC_LOG_ERROR, "cannot pin the CUDA channel's staging memory: %s",
		       sc_cu_result_name(res));
	return res;
}

static CUresult simple(unsigned op, uint64_t ctx, uint64_t a0, uint64_t a1, uint64_t *out0,
		       uint64_t *out1)
{
	struct sc_req r = { .op = op, .ctx = ctx, .a = { a0, a1 } };
	CUresult res = sc_cu_call(&r);

	if (out0)
		*out0 = r.a[0];
	if (out1)
		*out1 = r.a[1];
	return res;
}

SC_CU_API CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	struct sc_cu_ctx *c;
	CUresult res;

	if (!pctx || dev < 0 || dev >= MAX_DEVICES)
		return pctx ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	c = primary[dev];
	if (!c || !c->retains) {
		uint64_t real = 0;

		res = simple(SC_OP_PCTX_RETAIN, 0, (uint64_t)dev, 0, &real, NULL);
		if (res == CUDA_SUCCESS && !c && !(c = sc_obj_new(SC_K_CTX, sizeof(*c), NULL)))
			res = CUDA_ERROR_OUT_OF_MEMORY;
		if (res == CUDA_SUCCESS) {
			c->o.real = real;
			c->dev = dev;
			c->primary = true;
			primary[dev] = c;
			res = first_context(c);
		}
	}
	if (res == CUDA_SUCCESS) {
		c->retains++;
		*pctx = (CUcontext)c;
	}
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
	struct sc_cu_ctx *c;
	CUresult res;

	if (dev < 0 || dev >= MAX_DEVICES)
		return CUDA_ERROR_INVALID_DEVICE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	c = primary[dev];
	if (!c || !c->retains)
		res = CUDA_ERROR_INVALID_CONTEXT;
	else if (--c->retains == 0)
		res = simple(SC_OP_PCTX_RELEASE, 0, (uint64_t)dev, 0, NULL, NULL);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
	CUresult res;

	if (dev < 0 || dev >= MAX_DEVICES)
		return CUDA_ERROR_INVALID_DEVICE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = simple(SC_OP_PCTX_RESET, 0, (uint64_t)dev, 0, NULL, NULL);
	if (res == CUDA_SUCCESS && primary[dev])
		primary[dev]->retains = 0;
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	CUresult res;

	if (dev < 0 || dev >= MAX_DEVICES)
		return CUDA_ERROR_INVALID_DEVICE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = simple(SC_OP_PCTX_SET_FLAGS, 0, (uint64_t)dev, flags, NULL, NULL);
	if (res == CUDA_SUCCESS && primary[dev])
		primary[dev]->flags = flags;
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags,
						     int *active)
{
	uint64_t f = 0, a = 0;
	CUresult res;

	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = simple(SC_OP_PCTX_GET_STATE, 0, (uint64_t)dev, 0, &f, &a);
	sc_cu_leave();
	*flags = (unsigned)f;
	*active = (int)a;
	return res;
}

SC_CU_API CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params,
				       unsigned int flags, CUdevice dev)
{
	struct sc_cu_ctx *c;
	uint64_t real = 0;
	CUresult res;

	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (params && (params->execAffinityParams || params->cigParams))
		return sc_cu_unsupported("cuCtxCreate with execution affinity or CIG parameters");
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = simple(SC_OP_CTX_CREATE, 0, flags, (uint64_t)dev, &real, NULL);
	if (res == CUDA_SUCCESS && !(c = sc_obj_new(SC_K_CTX, sizeof(*c), NULL)))
		res = CUDA_ERROR_OUT_OF_MEMORY;
	if (res == CUDA_SUCCESS) {
		c->o.real = real;
		c->dev = dev;
		c->flags = flags;
		res = first_context(c);
		/* A new context is pushed on the calling thread's stack. */
		if (res == CUDA_SUCCESS && !sc_ctx_push(c))
			res = CUDA_ERROR_INVALID_VALUE;
		*pctx = (CUcontext)c;
	}
	sc_cu_leave();
	return res;
}

/*
 * What the driver destroys with a context the library forgets: a handle left
 * would lead a restart to load modules and make streams in a context that is
 * gone. Kernels (of libraries, which outlive contexts) forget the function
 * they launched in it.
 */
static void forget_objects_of(struct sc_cu_ctx *c)
{
	struct sc_cu_obj *o;

	sc_objs_lock();
	for (o = sc_obj_first(); o;) {
		struct sc_cu_obj *next = o->next;

		if (o->kind == SC_K_MODULE && o->ctx == c) {
			sc_module_forget((struct sc_cu_module *)o);
			next = sc_obj_first(); /* its functions went with it */
		} else if (o->kind == SC_K_KERNEL) {
			((struct sc_cu_func *)o)->launch_real = 0;
		} else if (o->ctx == c && o->kind == SC_K_FUNC) {
			sc_function_forget((struct sc_cu_func *)o);
		} else if (o->ctx == c && (o->kind == SC_K_GRAPH || o->kind == SC_K_GEXEC)) {
			sc_graph_forget(o);
			next = sc_obj_first(); /* a graph's nodes went with it */
		} else if (o->ctx == c) {
			sc_obj_free(o);
		}
		o = next;
	}
	sc_objs_unlock();
}

SC_CU_API CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
	struct sc_cu_ctx *c = sc_obj_get(ctx, SC_K_CTX);
	CUresult res;

	if (!c || c->primary)
		return sc_ctx_missing();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	sc_vmm_forget_context(c); /* the program's mappings of the context's allocations */
	sc_mempool_forget_context(c);
	sc_peer_forget_context(c);
	sc_managed_release_context(c);
	sc_arena_release_context(c); /* while the context can still be made current */
	res = simple(SC_OP_CTX_DESTROY, 0, c->o.real, 0, NULL, NULL);
	if (res == CUDA_SUCCESS) {
		forget_objects_of(c);
		sc_ctx_forget(c);
		sc_obj_free(c);
	}
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
	struct sc_cu_ctx *c = sc_obj_get(ctx, SC_K_CTX);

	if (ctx && !c)
		return sc_ctx_missing();
	sc_ctx_set_current(c);
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = (CUcontext)sc_ctx_current();
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
	struct sc_cu_ctx *c = sc_obj_get(ctx, SC_K_CTX);

	if (!c)
		return sc_ctx_missing();
	return sc_ctx_push(c) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SC_CU_API CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
	struct sc_cu_ctx *c = sc_ctx_current();

	if (!c)
		return sc_ctx_missing();
	sc_ctx_pop();
	if (pctx)
		*pctx = (CUcontext)c;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuCtxGetDevice(CUdevice *dev)
{
	struct sc_cu_ctx *c = sc_ctx_current();

	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	if (!c)
		return sc_ctx_missing();
	*dev = c->dev;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags)
{
	struct sc_cu_ctx *c = sc_ctx_current();

	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!c)
		return sc_ctx_missing();
	*flags = c->flags;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	if (ctx && !sc_obj_get(ctx, SC_K_CTX))
		return sc_ctx_missing();
	*version = 3020; /* what CUDA reports for every context made with the current API */
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuCtxSynchronize(void)
{
	CUresult res, sticky;

	sc_cu_sync_point();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if (!sc_ctx_current()) {
		sc_cu_leave();
		return sc_ctx_missing();
	}
	res = simple(SC_OP_CTX_SYNC, sc_ctx_real(), 0, 0, NULL, NULL);
	if (res == CUDA_SUCCESS) /* what cuMemFreeAsync freed in it can go */
		sc_mempool_synchronised(NULL, sc_ctx_current(), true);
	sticky = sc_cu_take_sticky();
	if (res == CUDA_SUCCESS && sticky == CUDA_SUCCESS && sc_managed_live())
		res = sc_managed_synced(sc_ctx_real(), 0, SC_SYNC_CONTEXT);
	sc_cu_leave();
	return sticky != CUDA_SUCCESS ? sticky : res;
}

SC_CU_API CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value)
{
	struct sc_cu_ctx *c = sc_ctx_current();
	CUresult res;

	if (!c)
		return sc_ctx_missing();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = simple(SC_OP_CTX_SET_LIMIT, c->o.real, (uint64_t)limit, value, NULL, NULL);
	if (res == CUDA_SUCCESS && (unsigned)limit < SC_CU_LIMITS) {
		c->limit_set[limit] = true;
		c->limit[limit] = value;
	}
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuCtxGetLimit(size_t *value, CUlimit limit)
{
	uint64_t v = 0;
	CUresult res;

	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sc_ctx_current())
		return sc_ctx_missing();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = simple(SC_OP_CTX_GET_LIMIT, sc_ctx_real(), (uint64_t)limit, 0, &v, NULL);
	sc_cu_leave();
	*value = (size_t)v;
	return res;
}

SC_CU_API CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
	uint64_t l = 0, g = 0;
	CUresult res;

	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = simple(SC_OP_CTX_PRIORITIES, sc_ctx_real(), 0, 0, &l, &g);
	sc_cu_leave();
	if (least)
		*least = (int)(int64_t)l;
	if (greatest)
		*greatest = (int)(int64_t)g;
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemGetInfo(size_t *free_bytes, size_t *total)
{
	uint64_t f = 0, t = 0;
	CUresult res;

	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sc_ctx_current())
		return sc_ctx_missing();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = simple(SC_OP_MEM_GET_INFO, sc_ctx_real(), 0, 0, &f, &t);
	sc_cu_leave();
	*free_bytes = (size_t)f;
	*total = (size_t)t;
	return res;
}

/** sc_ctx_primary() - the primary context object of @dev, for replay; NULL if none. */
struct sc_cu_ctx *sc_ctx_primary(CUdevice dev)
{
	return dev >= 0 && dev < MAX_DEVICES ? primary[dev] : NULL;
}
