/* SPDX-License-Identifier: MIT */
/*
 * api_mempool.c - stream-ordered allocation: cuMemAllocAsync, cuMemFreeAsync,
 * memory pools and their attributes.
 *
 * The memory comes from the arena (arena.c), as cuMemAlloc's does, so its
 * addresses survive a restart like every other device pointer. An allocation
 * is ready at once, which is ready in stream order too. A free must wait for
 * the work the stream had before it: it is kept until the program
 * synchronises that stream or its context, or a checkpoint synchronises them
 * all, or until too much is kept on one stream, which is then synchronised.
 * So freed memory is reused after a synchronisation rather than in stream
 * order: a loop that frees and allocates on a stream it never synchronises
 * holds up to FREES_KEPT_BYTES more than it would under the driver.
 *
 * Pools are the library's objects: the device's default pool, pools the
 * program makes, the device's current pool; their attributes are kept, and
 * their use is counted from the allocations made from them.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/lib/graph.h"
#include "format/sc_array.h"
#include "format/sc_log.h"

#define MAX_DEVICES 64
#define FREES_KEPT_BYTES (256ull << 20) /* kept on one stream before it is synchronised */

struct sc_cu_mempool {
	struct sc_cu_obj o;
	CUmemPoolProps props;
	bool is_default;
	uint64_t release_threshold;
	int reuse[3];                /* the CU_MEMPOOL_ATTR_REUSE_* flags, in their order */
	uint64_t used, used_high, reserved, reserved_high;
};

/* An allocation made from a pool, live or freed but kept. */
struct pool_alloc {
	CUdeviceptr p;
	size_t size;
	struct sc_cu_mempool *pool;
	bool freeing;                /* freed on @stream, kept until it is synchronised */
	CUstream stream;
	struct sc_cu_ctx *ctx;
};

static struct sc_cu_mempool *default_pool[MAX_DEVICES], *current_pool[MAX_DEVICES];
static struct pool_alloc *allocs;
static size_t allocs_n, allocs_cap;
static uint64_t kept_total; /* bytes freed and kept, on every stream */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

static struct sc_cu_mempool *pool_of(CUmemoryPool h)
{
	return sc_obj_get(h, SC_K_MEMPOOL);
}

static struct sc_cu_mempool *new_pool(const CUmemPoolProps *props, bool is_default)
{
	struct sc_cu_mempool *p = sc_obj_new(SC_K_MEMPOOL, sizeof(*p), NULL);

	if (!p)
		return NULL;
	p->props = *props;
	p->is_default = is_default;
	p->reuse[0] = p->reuse[1] = p->reuse[2] = 1; /* the driver's defaults */
	return p;
}

/* The default pool of @dev, made at the first call that needs it. */
static struct sc_cu_mempool *default_of(CUdevice dev)
{
	CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
				 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev } };

	if (!default_pool[dev])
		default_pool[dev] = new_pool(&props, true);
	return default_pool[dev];
}

static CUresult check_device(CUdevice dev)
{
	int n = 0;
	CUresult res = cuDeviceGetCount(&n);

	if (res != CUDA_SUCCESS)
		return res;
	return dev >= 0 && dev < n && dev < MAX_DEVICES ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

SC_CU_API CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
	CUresult res = check_device(dev);

	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	if (res != CUDA_SUCCESS)
		return res;
	pthread_mutex_lock(&pool_lock);
	*pool = (CUmemoryPool)default_of(dev);
	pthread_mutex_unlock(&pool_lock);
	return *pool ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SC_CU_API CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	CUresult res = check_device(dev);

	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	if (res != CUDA_SUCCESS)
		return res;
	pthread_mutex_lock(&pool_lock);
	*pool = (CUmemoryPool)(current_pool[dev] ? current_pool[dev] : default_of(dev));
	pthread_mutex_unlock(&pool_lock);
	return *pool ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SC_CU_API CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	struct sc_cu_mempool *p = pool_of(pool);
	CUresult res = check_device(dev);

	if (res != CUDA_SUCCESS)
		return res;
	if (!p || p->props.location.id != dev)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&pool_lock);
	current_pool[dev] = p;
	pthread_mutex_unlock(&pool_lock);
	return CUDA_SUCCESS;
}

/* What a restart can make again: pinned memory of one device, nothing to export or share. */
static CUresult check_props(const CUmemPoolProps *props)
{
	if (!props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || props->win32SecurityAttributes)
		return props && props->location.type != CU_MEM_LOCATION_TYPE_DEVICE
			       ? sc_cu_unsupported("cuMemPoolCreate of other than device memory")
			       : CUDA_ERROR_INVALID_VALUE;
	if (props->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
		return sc_cu_unsupported("cuMemPoolCreate of a pool that can be exported");
	return check_device(props->location.id);
}

SC_CU_API CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
	struct sc_cu_mempool *p;
	CUresult res;

	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = check_props(props)) != CUDA_SUCCESS)
		return res;
	pthread_mutex_lock(&pool_lock);
	p = new_pool(props, false);
	pthread_mutex_unlock(&pool_lock);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*pool = (CUmemoryPool)p;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
	struct sc_cu_mempool *p = pool_of(pool);

	if (!p || p->is_default)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&pool_lock);
	/* its allocations stay the program's until freed, as the driver keeps them */
	for (size_t i = 0; i < allocs_n; i++)
		if (allocs[i].pool == p)
			allocs[i].pool = NULL;
	for (int d = 0; d < MAX_DEVICES; d++)
		if (current_pool[d] == p)
			current_pool[d] = NULL;
	sc_obj_free(p);
	pthread_mutex_unlock(&pool_lock);
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
						 void *value)
{
	struct sc_cu_mempool *p = pool_of(pool);
	CUresult res = CUDA_SUCCESS;

	if (!p || !value)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&pool_lock);
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] = *(int *)value;
		break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		p->release_threshold = *(cuuint64_t *)value;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: /* only reset, to the current value */
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		if (*(cuuint64_t *)value)
			res = CUDA_ERROR_INVALID_VALUE;
		else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
			p->reserved_high = p->reserved;
		else
			p->used_high = p->used;
		break;
	default:
		res = CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&pool_lock);
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
						 void *value)
{
	struct sc_cu_mempool *p = pool_of(pool);
	CUresult res = CUDA_SUCCESS;

	if (!p || !value)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&pool_lock);
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		*(int *)value = p->reuse[attr - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
		break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		*(cuuint64_t *)value = p->release_threshold;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
		*(cuuint64_t *)value = p->reserved;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		*(cuuint64_t *)value = p->reserved_high;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
		*(cuuint64_t *)value = p->used;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		*(cuuint64_t *)value = p->used_high;
		break;
	default:
		res = CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&pool_lock);
	return res;
}

/* The pool keeps nothing the program freed: what it holds is what is allocated, or kept. */
SC_CU_API CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t min_bytes_to_keep)
{
	(void)min_bytes_to_keep;
	return pool_of(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* One device is served: its pools are its own, read and write. */
SC_CU_API CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map,
					      size_t count)
{
	struct sc_cu_mempool *p = pool_of(pool);

	if (!p || (count && !map))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < count; i++)
		if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    map[i].location.id != p->props.location.id ||
		    map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			return sc_cu_unsupported("cuMemPoolSetAccess for another device");
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool pool,
					      CUmemLocation *location)
{
	struct sc_cu_mempool *p = pool_of(pool);

	if (!p || !flags || !location || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = location->id == p->props.location.id ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
						      : CU_MEM_ACCESS_FLAGS_PROT_NONE;
	return CUDA_SUCCESS;
}

static void count_in(struct sc_cu_mempool *p, size_t used, size_t reserved, bool add)
{
	if (!p)
		return;
	p->used = add ? p->used + used : p->used - used;
	p->reserved = add ? p->reserved + reserved : p->reserved - reserved;
	p->used_high = p->used > p->used_high ? p->used : p->used_high;
	p->reserved_high = p->reserved > p->reserved_high ? p->reserved : p->reserved_high;
}

static CUresult alloc_from(CUdeviceptr *dptr, size_t bytes, struct sc_cu_mempool *p,
			   CUstream stream)
{
	struct sc_cu_ctx *c = sc_ctx_current();
	CUresult res = CUDA_SUCCESS;

	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	if (!c)
		return sc_ctx_missing();
	if (!p || !bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->props.location.id != c->dev)
		return sc_cu_unsupported("stream-ordered allocation on another device than the "
					 "current context's");
	if (p->props.maxSize && p->used + bytes > p->props.maxSize)
		return CUDA_ERROR_OUT_OF_MEMORY;
	sc_stream_real(stream, &res); /* a stream of the program's, or a default one */
	if (res == CUDA_SUCCESS && sc_capture_stream_busy(stream))
		res = sc_cu_unsupported("stream-ordered allocation in a stream capture");
	if (res == CUDA_SUCCESS)
		res = sc_arena_alloc(c, bytes, dptr);
	if (res == CUDA_SUCCESS &&
	    sc_grow((void **)&allocs, &allocs_cap, allocs_n + 1, sizeof(*allocs))) {
		sc_arena_free(*dptr);
		res = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (res == CUDA_SUCCESS) {
		allocs[allocs_n++] = (struct pool_alloc){ *dptr, bytes, p, false, NULL, c };
		count_in(p, bytes, bytes, true);
	}
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytes,
						   CUmemoryPool pool, CUstream stream)
{
	CUresult res;

	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	pthread_mutex_lock(&pool_lock);
	res = alloc_from(dptr, bytes, pool_of(pool), stream);
	pthread_mutex_unlock(&pool_lock);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream stream)
{
	struct sc_cu_ctx *c = sc_ctx_current();
	CUresult res;

	if (!c)
		return sc_ctx_missing();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	pthread_mutex_lock(&pool_lock);
	if (c->dev < 0 || c->dev >= MAX_DEVICES)
		res = CUDA_ERROR_INVALID_DEVICE;
	else
		res = alloc_from(dptr, bytes,
				 current_pool[c->dev] ? current_pool[c->dev] : default_of(c->dev),
				 stream);
	pthread_mutex_unlock(&pool_lock);
	sc_cu_leave();
	return res;
}

/*
 * The kept frees are safe now: those of @stream in @ctx (a stream was
 * synchronised), of every stream of @ctx (@ctx NULL: of every context).
 */
static void free_kept(CUstream stream, const struct sc_cu_ctx *ctx, bool whole_context)
{
	for (size_t i = 0; i < allocs_n;) {
		struct pool_alloc a = allocs[i];

		if (!a.freeing || (ctx && a.ctx != ctx) || (!whole_context && a.stream != stream)) {
			i++;
			continue;
		}
		allocs[i] = allocs[--allocs_n];
		kept_total -= a.size;
		count_in(a.pool, 0, a.size, false);
		if (sc_arena_free(a.p) != CUDA_SUCCESS)
			sc_log(SC_LOG_WARN, "device memory at 0x%llx freed by cuMemFreeAsync could "
			       "not be returned", (unsigned long long)a.p);
	}
}

/* Bytes freed on @stream and kept. */
static uint64_t kept_on(CUstream stream)
{
	uint64_t n = 0;

	for (size_t i = 0; i < allocs_n; i++)
		n += allocs[i].freeing && allocs[i].stream == stream ? allocs[i].size : 0;
	return n;
}

/* cuMemAlloc's memory, freed in stream order all the same: an entry of no pool. */
static struct pool_alloc *adopt(CUdeviceptr p)
{
	CUdeviceptr base = 0;
	size_t size = 0;
	struct sc_cu_block *b = sc_arena_find(p, &base, &size);

	if (!b || base != p || b->vmm ||
	    sc_grow((void **)&allocs, &allocs_cap, allocs_n + 1, sizeof(*allocs)))
		return NULL;
	allocs[allocs_n] = (struct pool_alloc){ p, size, NULL, false, NULL, b->ctx };
	return &allocs[allocs_n++];
}

SC_CU_API CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream stream)
{
	uint64_t real = 0, ctx = 0;
	struct pool_alloc *a = NULL;
	CUresult res;

	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if ((res = sc_stream_target(stream, &real, &ctx)) == CUDA_SUCCESS &&
	    sc_capture_stream_busy(stream))
		res = sc_cu_unsupported("cuMemFreeAsync in a stream capture");
	if (res != CUDA_SUCCESS) {
		sc_cu_leave();
		return res;
	}
	pthread_mutex_lock(&pool_lock);
	for (size_t i = allocs_n; i-- > 0 && !a;) /* from the newest: what was just taken, most often */
		if (allocs[i].p == dptr)
			a = &allocs[i];
	if (!a)
		a = adopt(dptr);
	if (!a || a->freeing) { /* not device memory, or freed already */
		res = CUDA_ERROR_INVALID_VALUE;
	} else {
		struct sc_req r = { .op = SC_OP_STREAM_SYNC, .ctx = ctx, .a = { real } };
		struct sc_cu_ctx *in = a->ctx;

		a->freeing = true;
		a->stream = stream;
		kept_total += a->size;
		count_in(a->pool, a->size, 0, false); /* no longer used; still reserved */
		/* one stream's share is added up only when all of them could pass the bound */
		if (kept_total > FREES_KEPT_BYTES && kept_on(stream) > FREES_KEPT_BYTES &&
		    (res = sc_cu_call(&r)) == CUDA_SUCCESS)
			free_kept(stream, in, false);
	}
	pthread_mutex_unlock(&pool_lock);
	sc_cu_leave();
	return res;
}

void sc_mempool_freed(CUdeviceptr p)
{
	pthread_mutex_lock(&pool_lock);
	for (size_t i = 0; i < allocs_n; i++)
		if (allocs[i].p == p && !allocs[i].freeing) {
			count_in(allocs[i].pool, allocs[i].size, allocs[i].size, false);
			allocs[i] = allocs[--allocs_n];
			break;
		}
	pthread_mutex_unlock(&pool_lock);
}

void sc_mempool_synchronised(CUstream stream, const struct sc_cu_ctx *ctx, bool whole_context)
{
	pthread_mutex_lock(&pool_lock);
	free_kept(stream, ctx, whole_context);
	pthread_mutex_unlock(&pool_lock);
}

void sc_mempool_forget_context(const struct sc_cu_ctx *c)
{
	pthread_mutex_lock(&pool_lock);
	for (size_t i = 0; i < allocs_n;) /* the arena frees their memory with the context */
		if (allocs[i].ctx == c) {
			count_in(allocs[i].pool, allocs[i].freeing ? 0 : allocs[i].size,
				 allocs[i].size, false);
			kept_total -= allocs[i].freeing ? allocs[i].size : 0;
			allocs[i] = allocs[--allocs_n];
		} else {
			i++;
		}
	pthread_mutex_unlock(&pool_lock);
}

CUresult sc_mempool_stream_ending(CUstream stream, uint64_t ctx, uint64_t real)
{
	CUresult res = CUDA_SUCCESS;

	pthread_mutex_lock(&pool_lock);
	if (kept_on(stream)) {
		struct sc_req r = { .op = SC_OP_STREAM_SYNC, .ctx = ctx, .a = { real } };

		if ((res = sc_cu_call(&r)) == CUDA_SUCCESS)
			free_kept(stream, NULL, false);
	}
	pthread_mutex_unlock(&pool_lock);
	return res;
}

/* Built with per-thread default streams: a NULL stream is this thread's. */
SC_CU_API CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUstream stream)
{
	return cuMemAllocAsync(dptr, bytes, stream ? stream : CU_STREAM_PER_THREAD);
}

SC_CU_API CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytes,
							CUmemoryPool pool, CUstream stream)
{
	return cuMemAllocFromPoolAsync(dptr, bytes, pool, stream ? stream : CU_STREAM_PER_THREAD);
}

SC_CU_API CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream)
{
	return cuMemFreeAsync(dptr, stream ? stream : CU_STREAM_PER_THREAD);
}

/*
 * The pools of a location and an allocation type: a device's pinned memory
 * is the device's pools, as above; host and managed pools are not served.
 */
static CUresult device_of_location(const CUmemLocation *loc, CUmemAllocationType type,
				   CUdevice *dev)
{
	if (!loc || (type != CU_MEM_ALLOCATION_TYPE_PINNED && type != CU_MEM_ALLOCATION_TYPE_MANAGED))
		return CUDA_ERROR_INVALID_VALUE;
	if (type != CU_MEM_ALLOCATION_TYPE_PINNED || loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
		return sc_cu_unsupported("memory pools of host or managed memory");
	*dev = loc->id;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
						  CUmemAllocationType type)
{
	CUdevice dev = 0;
	CUresult res = device_of_location(location, type, &dev);

	return res != CUDA_SUCCESS ? res : cuDeviceGetDefaultMemPool(pool_out, dev);
}

SC_CU_API CUresult CUDAAPI cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location,
					   CUmemAllocationType type)
{
	CUdevice dev = 0;
	CUresult res = device_of_location(location, type, &dev);

	return res != CUDA_SUCCESS ? res : cuDeviceGetMemPool(pool, dev);
}

SC_CU_API CUresult CUDAAPI cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type,
					   CUmemoryPool pool)
{
	CUdevice dev = 0;
	CUresult res = device_of_location(location, type, &dev);

	return res != CUDA_SUCCESS ? res : cuDeviceSetMemPool(dev, pool);
}
