/* SPDX-License-Identifier: MIT */
/*
 * softcuda_ctx.c - contexts: the primary context of each device, created
 * contexts, and each thread's stack of current contexts.
 *
 * A context owns its modules, streams, events, arrays, legacy allocations,
 * host registrations, textures, surfaces, graphs and executable graphs:
 * destroying it (or releasing a primary context for the last time, or
 * resetting it) frees them, and their handles become invalid. VMM allocations
 * and libraries belong to no context.
 *
 * Peer access is a set of (context, peer context) pairs: enabled from the
 * current context, it goes when either context of a pair does (destroyed, its
 * last retain released, or reset).
 */
#include <stdlib.h>
#include <string.h>

#include "softcuda_internal.h"

#define SD_CTX_STACK_MAX 64
#define SD_CTX_API_VERSION 3020	/* what contexts created through the _v2 API report */

static __thread struct sd_ctx *ctx_stack[SD_CTX_STACK_MAX];
static __thread int ctx_depth;

/* cuCtxEnablePeerAccess: @ctx reaches the memory of @peer. */
struct sd_peer {
	struct sd_peer *next;
	const struct sd_ctx *ctx, *peer;
};

static struct sd_peer *peers;

static const size_t limit_defaults[CU_LIMIT_MAX] = {
	[CU_LIMIT_STACK_SIZE] = 1024,
	[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20,
	[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20,
	[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2,
	[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048,
	[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64,
	[CU_LIMIT_SHMEM_SIZE] = SD_SHARED_PER_BLOCK,
};

static void ctx_init(struct sd_ctx *ctx, int device, unsigned flags, int primary)
{
	static unsigned long long last_id;

	ctx->id = ++last_id;
	ctx->device = device;
	ctx->flags = flags;
	ctx->primary = primary;
	memcpy(ctx->limits, limit_defaults, sizeof(ctx->limits));
	ctx->cache = CU_FUNC_CACHE_PREFER_NONE;
	ctx->shmem = CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE;
}

/* A handle the caller passed: a live created context or an active primary one. */
static int ctx_valid(const struct sd_ctx *ctx)
{
	if (!ctx)
		return 0;
	if (sd_obj_find(SD_CTX, ctx))
		return 1;
	for (int i = 0; i < sd.n_devices; i++)
		if (ctx == &sd.devices[i].primary)
			return ctx->refcount > 0;
	return 0;
}

CUresult sd_ctx_current(struct sd_ctx **ctx)
{
	struct sd_ctx *top = ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;

	*ctx = NULL;
	if (!top)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (sd_obj_find(SD_DEAD_CTX, top))
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	if (!ctx_valid(top))
		return CUDA_ERROR_INVALID_CONTEXT;
	*ctx = top;
	return CUDA_SUCCESS;
}

/*
 * Order matters: textures and surfaces name arrays, functions live in modules,
 * a stream that goes ends the captures it began and their graphs with them.
 */
void sd_ctx_free_objects(struct sd_ctx *ctx)
{
	static const struct {
		enum sd_kind kind;
		void (*free)(struct sd_obj *obj);
	} order[] = {
		{ SD_TEX, sd_tex_free },	 { SD_SURF, sd_surf_free },
		{ SD_MODULE, sd_module_free },	 { SD_STREAM, sd_stream_free },
		{ SD_EVENT, sd_event_free },	 { SD_ARRAY, sd_array_free },
		{ SD_ALLOC, sd_alloc_free },	 { SD_HOSTREG, sd_hostreg_free },
		{ SD_GRAPH_EXEC, sd_exec_free }, { SD_GRAPH, sd_graph_free },
	};
	struct sd_obj *obj, *next;
	size_t i;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		for (obj = sd.objs[order[i].kind]; obj; obj = next) {
			next = obj->next;
			if (obj->ctx == ctx)
				order[i].free(obj);
		}
	}
}

/* The peer access of @ctx, and to it, goes with it. */
static void ctx_peers_drop(const struct sd_ctx *ctx)
{
	struct sd_peer **pp = &peers, *p;

	while ((p = *pp)) {
		if (p->ctx == ctx || p->peer == ctx) {
			*pp = p->next;
			free(p);
		} else {
			pp = &p->next;
		}
	}
}

static CUresult ctx_push(struct sd_ctx *ctx)
{
	if (ctx_depth == SD_CTX_STACK_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ctx_stack[ctx_depth++] = ctx;
	return CUDA_SUCCESS;
}

static CUresult check_ctx_flags(unsigned flags)
{
	unsigned sched = flags & CU_CTX_SCHED_MASK;

	if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
		return CUDA_ERROR_INVALID_VALUE;
	if (sched && sched != CU_CTX_SCHED_SPIN && sched != CU_CTX_SCHED_YIELD &&
	    sched != CU_CTX_SCHED_BLOCKING_SYNC)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, CUctxCreateParams *params, unsigned flags,
			   CUdevice dev)
{
	struct sd_ctx *ctx;
	CUresult rc;

	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	rc = sd_device_check(dev);
	if (rc == CUDA_SUCCESS)
		rc = check_ctx_flags(flags);
	if (rc)
		return rc;
	if (params && (params->numExecAffinityParams > 0 || params->cigParams))
		return CUDA_ERROR_NOT_SUPPORTED;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = ctx_push(ctx);
	if (rc) {
		free(ctx);
		return rc;
	}
	ctx_init(ctx, dev, flags, 0);
	sd_obj_add(&ctx->obj, SD_CTX, NULL);
	*pctx = (CUcontext)ctx;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
			     CUdevice dev)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(ctx_create(pctx, params, flags, dev));
}

/*
 * The handle stays allocated on the dead list: a thread that still has it
 * current learns it was destroyed, and no new context ever gets its address.
 */
static CUresult ctx_destroy(struct sd_ctx *ctx)
{
	if (!sd_obj_find(SD_CTX, ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	sd_ctx_free_objects(ctx);
	ctx_peers_drop(ctx);
	sd_obj_del(&ctx->obj);
	sd_obj_add(&ctx->obj, SD_DEAD_CTX, NULL);
	if (ctx_depth && ctx_stack[ctx_depth - 1] == ctx)
		ctx_depth--;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(ctx_destroy((struct sd_ctx *)ctx));
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!ctx_valid((struct sd_ctx *)ctx))
		return sd_leave(CUDA_ERROR_INVALID_CONTEXT);
	return sd_leave(ctx_push((struct sd_ctx *)ctx));
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!ctx_depth)
		return sd_leave(CUDA_ERROR_INVALID_CONTEXT);
	ctx_depth--;
	if (pctx)
		*pctx = (CUcontext)ctx_stack[ctx_depth];
	return sd_leave(CUDA_SUCCESS);
}

/* Replaces the top of the stack; NULL unbinds the current context. */
CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!ctx) {
		if (ctx_depth)
			ctx_depth--;
		return sd_leave(CUDA_SUCCESS);
	}
	if (!ctx_valid((struct sd_ctx *)ctx))
		return sd_leave(CUDA_ERROR_INVALID_CONTEXT);
	if (!ctx_depth)
		return sd_leave(ctx_push((struct sd_ctx *)ctx));
	ctx_stack[ctx_depth - 1] = (struct sd_ctx *)ctx;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!pctx)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*pctx = ctx_depth ? (CUcontext)ctx_stack[ctx_depth - 1] : NULL;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!device)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_ctx_current(&ctx);
	if (rc == CUDA_SUCCESS)
		*device = ctx->device;
	return sd_leave(rc);
}

CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!flags)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_ctx_current(&ctx);
	if (rc == CUDA_SUCCESS)
		*flags = ctx->flags;
	return sd_leave(rc);
}

CUresult sd_ctx_or_current(CUcontext handle, struct sd_ctx **ctx)
{
	if (!handle)
		return sd_ctx_current(ctx);
	*ctx = (struct sd_ctx *)handle;
	return ctx_valid(*ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult CUDAAPI cuCtxGetId(CUcontext handle, unsigned long long *id)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!id)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_ctx_or_current(handle, &ctx);
	if (rc == CUDA_SUCCESS)
		*id = ctx->id;
	return sd_leave(rc);
}

CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device, CUcontext handle)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!device)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_ctx_or_current(handle, &ctx);
	if (rc == CUDA_SUCCESS)
		*device = ctx->device;
	return sd_leave(rc);
}

/* Only what cuCtxSetFlags may change: the scheduling policy and keeping local memory. */
CUresult CUDAAPI cuCtxSetFlags(unsigned int flags)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_ctx_current(&ctx);
	if (rc == CUDA_SUCCESS && (flags & ~(unsigned)(CU_CTX_SCHED_MASK | CU_CTX_LMEM_RESIZE_TO_MAX)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = check_ctx_flags(flags);
	if (rc == CUDA_SUCCESS)
		ctx->flags = (ctx->flags & ~(unsigned)(CU_CTX_SCHED_MASK | CU_CTX_LMEM_RESIZE_TO_MAX)) |
			     flags;
	return sd_leave(rc);
}

CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_ctx_current(&ctx);
	if (rc == CUDA_SUCCESS && (unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		ctx->cache = config;
	return sd_leave(rc);
}

CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache *config)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!config)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_ctx_current(&ctx);
	if (rc == CUDA_SUCCESS)
		*config = ctx->cache;
	return sd_leave(rc);
}

CUresult CUDAAPI cuCtxSetSharedMemConfig(CUsharedconfig config)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_ctx_current(&ctx);
	if (rc == CUDA_SUCCESS && (unsigned)config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		ctx->shmem = config;
	return sd_leave(rc);
}

CUresult CUDAAPI cuCtxGetSharedMemConfig(CUsharedconfig *config)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!config)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_ctx_current(&ctx);
	if (rc == CUDA_SUCCESS)
		*config = ctx->shmem;
	return sd_leave(rc);
}

/* No L2 cache is modelled: there is nothing to reset, in a current context. */
CUresult CUDAAPI cuCtxResetPersistingL2Cache(void)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(sd_ctx_current(&ctx));
}

/* Every stream runs synchronously: nothing to wait for, but captured work would never end. */
CUresult CUDAAPI cuCtxSynchronize(void)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_ctx_current(&ctx);
	return sd_leave(rc ? rc : sd_capture_sync_ctx(ctx));
}

CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_ctx_current(&ctx);
	if (rc)
		return sd_leave(rc);
	/* The shared memory size and CIG state of a context can only be queried. */
	if ((unsigned)limit >= CU_LIMIT_MAX || limit == CU_LIMIT_SHMEM_SIZE ||
	    limit == CU_LIMIT_CIG_ENABLED)
		return sd_leave(CUDA_ERROR_UNSUPPORTED_LIMIT);
	if (limit == CU_LIMIT_MAX_L2_FETCH_GRANULARITY && value > 128)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	ctx->limits[limit] = value;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxGetLimit(size_t *value, CUlimit limit)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!value)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_ctx_current(&ctx);
	if (rc)
		return sd_leave(rc);
	if ((unsigned)limit >= CU_LIMIT_MAX)
		return sd_leave(CUDA_ERROR_UNSUPPORTED_LIMIT);
	*value = ctx->limits[limit];
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuCtxGetApiVersion(CUcontext handle, unsigned int *version)
{
	struct sd_ctx *ctx = (struct sd_ctx *)handle;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!version)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if (!ctx)
		rc = sd_ctx_current(&ctx);
	else if (!ctx_valid(ctx))
		rc = CUDA_ERROR_INVALID_CONTEXT;
	if (rc == CUDA_SUCCESS)
		*version = SD_CTX_API_VERSION;
	return sd_leave(rc);
}

CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_ctx_current(&ctx);
	if (rc == CUDA_SUCCESS && least)
		*least = SD_PRIORITY_LEAST;
	if (rc == CUDA_SUCCESS && greatest)
		*greatest = SD_PRIORITY_GREATEST;
	return sd_leave(rc);
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!pctx)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_device_check(dev);
	if (rc)
		return sd_leave(rc);
	ctx = &sd.devices[dev].primary;
	if (!ctx->refcount)
		ctx_init(ctx, dev, ctx->flags, 1);
	ctx->refcount++;
	*pctx = (CUcontext)ctx;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_device_check(dev);
	if (rc)
		return sd_leave(rc);
	ctx = &sd.devices[dev].primary;
	if (!ctx->refcount)
		return sd_leave(CUDA_ERROR_INVALID_CONTEXT);
	if (!--ctx->refcount) {
		sd_ctx_free_objects(ctx);
		ctx_peers_drop(ctx);
	}
	return sd_leave(CUDA_SUCCESS);
}

/*
 * Frees everything the primary context owns and resets its flags and limits.
 * It does not release it: those who retained it go on using it, fresh, and
 * release it as before.
 */
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_device_check(dev);
	if (rc)
		return sd_leave(rc);
	ctx = &sd.devices[dev].primary;
	sd_ctx_free_objects(ctx);
	ctx_peers_drop(ctx);
	ctx_init(ctx, dev, 0, 1);
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_device_check(dev);
	if (rc == CUDA_SUCCESS)
		rc = check_ctx_flags(flags);
	if (rc == CUDA_SUCCESS)
		sd.devices[dev].primary.flags = flags;
	return sd_leave(rc);
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!flags || !active)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_device_check(dev);
	if (rc == CUDA_SUCCESS) {
		*flags = sd.devices[dev].primary.flags;
		*active = sd.devices[dev].primary.refcount > 0;
	}
	return sd_leave(rc);
}

static struct sd_peer **peer_find(const struct sd_ctx *ctx, const struct sd_ctx *peer)
{
	struct sd_peer **pp;

	for (pp = &peers; *pp; pp = &(*pp)->next)
		if ((*pp)->ctx == ctx && (*pp)->peer == peer)
			return pp;
	return NULL;
}

/* The current context and @handle, a valid context, as both peer calls need. */
static CUresult peer_pair(CUcontext handle, struct sd_ctx **ctx, struct sd_ctx **peer)
{
	CUresult rc = sd_ctx_current(ctx);

	*peer = (struct sd_ctx *)handle;
	if (rc)
		return rc;
	if (!ctx_valid(*peer)) {
		sd_log("peer context %p is not a valid context", (void *)handle);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	return CUDA_SUCCESS;
}

static CUresult peer_enable(CUcontext handle, unsigned flags)
{
	struct sd_ctx *ctx, *peer;
	struct sd_peer *p;
	CUresult rc = peer_pair(handle, &ctx, &peer);

	if (rc)
		return rc;
	if (peer == ctx)	/* as cuda.h documents it */
		return CUDA_ERROR_INVALID_CONTEXT;
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (ctx->device == peer->device) {
		sd_log("peer context %p is on the current context's device %d", (void *)handle,
		       ctx->device);
		return CUDA_ERROR_INVALID_DEVICE;
	}
	if (!sd_device_can_access_peer(ctx->device, peer->device))
		return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
	if (peer_find(ctx, peer))
		return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
	if (!(p = malloc(sizeof(*p))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	p->ctx = ctx;
	p->peer = peer;
	p->next = peers;
	peers = p;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(peer_enable(peerContext, Flags));
}

CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peerContext)
{
	struct sd_ctx *ctx, *peer;
	struct sd_peer **pp, *p;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = peer_pair(peerContext, &ctx, &peer);
	if (rc)
		return sd_leave(rc);
	if (!(pp = peer_find(ctx, peer)))
		return sd_leave(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
	p = *pp;
	*pp = p->next;
	free(p);
	return sd_leave(CUDA_SUCCESS);
}
