/* SPDX-License-Identifier: MIT */
/*
 * api_query.c - the small device and context calls programs make at start-up:
 * PCI bus ids, texture and affinity limits, a context's device and id, and
 * its cache, shared memory and scheduling settings. Settings are kept on the
 * context, for a restart to make again (replay.c); queries are the proxy's
 * answers, so that they tell the GPU the program runs on now.
 */
#include <stdio.h>
#include <string.h>

#include "cuda/lib/cuda_internal.h"

SC_CU_API CUresult CUDAAPI cuDeviceGetPCIBusId(char *id, int len, CUdevice dev)
{
	char buf[64];
	struct sc_req r = { .op = SC_OP_DEVICE_PCI_BUS_ID, .a = { (uint64_t)dev },
			    .out = buf, .out_cap = sizeof(buf) };
	CUresult res;

	if (!id || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_ask(&r, false)) == CUDA_SUCCESS) {
		buf[sizeof(buf) - 1] = 0;
		snprintf(id, (size_t)len, "%s", buf);
	}
	return res;
}

SC_CU_API CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice *dev, const char *id)
{
	struct sc_req r = { .op = SC_OP_DEVICE_BY_PCI_BUS_ID };
	CUresult res;

	if (!dev || !id || strlen(id) + 1 > SC_CH_INLINE)
		return CUDA_ERROR_INVALID_VALUE;
	r.in = id;
	r.in_len = (uint32_t)strlen(id) + 1;
	if ((res = sc_cu_ask(&r, false)) == CUDA_SUCCESS)
		*dev = (CUdevice)r.a[0];
	return res;
}

SC_CU_API CUresult CUDAAPI cuDeviceGetTexture1DLinearMaxWidth(size_t *width,
							     CUarray_format format,
							     unsigned channels, CUdevice dev)
{
	struct sc_req r = { .op = SC_OP_DEVICE_TEX1D_WIDTH,
			    .a = { (uint64_t)format, channels, (uint64_t)dev } };
	CUresult res;

	if (!width)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_ask(&r, false)) == CUDA_SUCCESS)
		*width = (size_t)r.a[0];
	return res;
}

SC_CU_API CUresult CUDAAPI cuDeviceGetExecAffinitySupport(int *pi, CUexecAffinityType type,
							 CUdevice dev)
{
	struct sc_req r = { .op = SC_OP_DEVICE_AFFINITY, .a = { (uint64_t)type, (uint64_t)dev } };
	CUresult res;

	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_ask(&r, false)) == CUDA_SUCCESS)
		*pi = (int)r.a[0];
	return res;
}

/* Asked, not used: memory of several GPUs in one process is not served yet. */
SC_CU_API CUresult CUDAAPI cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
	struct sc_req r = { .op = SC_OP_DEVICE_CAN_PEER, .a = { (uint64_t)dev, (uint64_t)peer } };
	CUresult res;

	if (!can)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_ask(&r, false)) == CUDA_SUCCESS)
		*can = (int)r.a[0];
	return res;
}

SC_CU_API CUresult CUDAAPI cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target,
						     CUflushGPUDirectRDMAWritesScope scope)
{
	struct sc_req r = { .op = SC_OP_FLUSH_RDMA, .a = { (uint64_t)target, (uint64_t)scope } };

	return sc_cu_ask(&r, true);
}

/* @ctx, or the current context when NULL; NULL when neither is one. */
static struct sc_cu_ctx *ctx_or_current(CUcontext ctx)
{
	return ctx ? sc_obj_get(ctx, SC_K_CTX) : sc_ctx_current();
}

SC_CU_API CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx)
{
	struct sc_cu_ctx *c = ctx_or_current(ctx);

	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	if (!c)
		return sc_ctx_missing();
	*dev = c->dev;
	return CUDA_SUCCESS;
}

/*
 * The library's own number for the context: unique in the process, and the
 * same after a restart, where the driver's would be a new one.
 */
SC_CU_API CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *id)
{
	struct sc_cu_ctx *c = ctx_or_current(ctx);

	if (!id)
		return CUDA_ERROR_INVALID_VALUE;
	if (!c)
		return sc_ctx_missing();
	*id = (unsigned long long)c->o.seq;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuCtxResetPersistingL2Cache(void)
{
	struct sc_req r = { .op = SC_OP_CTX_RESET_L2 };

	return sc_cu_ask(&r, true);
}

/*
 * Make setting @r in the current context and, once made, @keep it for a
 * restart, under the same hold of the lock: a checkpoint never finds it made
 * and not kept.
 */
static CUresult set_in_context(struct sc_req *r, void (*keep)(struct sc_cu_ctx *c, int value),
			       int value)
{
	struct sc_cu_ctx *c;
	CUresult res;

	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if (!(c = sc_ctx_current())) {
		res = sc_ctx_missing();
	} else {
		r->ctx = c->o.real;
		if ((res = sc_cu_call(r)) == CUDA_SUCCESS)
			keep(c, value);
	}
	sc_cu_leave();
	return res;
}

static void keep_flags(struct sc_cu_ctx *c, int flags)
{
	c->flags = (unsigned)flags; /* a restart makes the context with them */
}

static void keep_cache(struct sc_cu_ctx *c, int config)
{
	c->cache_set = true;
	c->cache_config = config;
}

static void keep_shmem(struct sc_cu_ctx *c, int config)
{
	c->shmem_set = true;
	c->shmem_config = config;
}

SC_CU_API CUresult CUDAAPI cuCtxSetFlags(unsigned int flags)
{
	struct sc_req r = { .op = SC_OP_CTX_SET_FLAGS, .a = { flags } };

	return set_in_context(&r, keep_flags, (int)flags);
}

SC_CU_API CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config)
{
	struct sc_req r = { .op = SC_OP_CTX_SET_CACHE, .a = { (uint64_t)config } };

	return set_in_context(&r, keep_cache, (int)config);
}

SC_CU_API CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache *config)
{
	struct sc_req r = { .op = SC_OP_CTX_GET_CACHE };
	CUresult res;

	if (!config)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_ask(&r, true)) == CUDA_SUCCESS)
		*config = (CUfunc_cache)r.a[0];
	return res;
}

SC_CU_API CUresult CUDAAPI cuCtxSetSharedMemConfig(CUsharedconfig config)
{
	struct sc_req r = { .op = SC_OP_CTX_SET_SHMEM, .a = { (uint64_t)config } };

	return set_in_context(&r, keep_shmem, (int)config);
}

SC_CU_API CUresult CUDAAPI cuCtxGetSharedMemConfig(CUsharedconfig *config)
{
	struct sc_req r = { .op = SC_OP_CTX_GET_SHMEM };
	CUresult res;

	if (!config)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_ask(&r, true)) == CUDA_SUCCESS)
		*config = (CUsharedconfig)r.a[0];
	return res;
}
