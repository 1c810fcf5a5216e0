/* SPDX-License-Identifier: MIT */
/*
 * api_vmm.c - the program's own virtual memory management: address ranges
 * it reserves, physical allocations it creates, its mappings of one into the
 * other and the access it gives them.
 *
 * Its addresses come from the arena (arena.c), whose reservation a restart
 * makes again at the same place: a program's reservation is a range of the
 * arena's. Each physical allocation is also mapped by the library at a home
 * of its own in the arena, a block like any cuMemAlloc's: its bytes are saved
 * and restored with the device memory, whether the program maps it or not.
 * A restart makes every allocation again, with the program's properties, at
 * its home, then maps it where the program had, then gives the access the
 * program gave, in the order it gave it. The handles, ranges and mappings are
 * the program's memory: they come back with the process image.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/lib/cuda_internal.h"
#include "format/sc_array.h"

#define ACCESS_MAX 16 /* descriptors of one cuMemSetAccess kept for a restart */

/* A range of addresses the program reserved. */
struct range {
	CUdeviceptr va;
	size_t size;
	CUdevice dev;
};

/* The program's mapping of part of an allocation. */
struct mapping {
	CUdeviceptr va;
	size_t size, offset;
	struct sc_cu_memhandle *h;
};

/* One cuMemSetAccess, trimmed to what is still mapped. */
struct access {
	CUdeviceptr va;
	size_t size;
	unsigned n;
	CUmemAccessDesc desc[ACCESS_MAX];
};

static struct range *ranges;
static size_t ranges_n, ranges_cap;
static struct mapping *maps;
static size_t maps_n, maps_cap;
static struct access *granted;
static size_t granted_n, granted_cap;
static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;

static struct sc_cu_memhandle *handle_of(CUmemGenericAllocationHandle handle)
{
	return sc_obj_get((const void *)(uintptr_t)handle, SC_K_MEMHANDLE);
}

/* The proxy's handle of @h: its home block's. */
static struct sc_cu_block *home_of(const struct sc_cu_memhandle *h)
{
	struct sc_cu_block *b = sc_arena_find(h->home, NULL, NULL);

	return b && b->vmm == h ? b : NULL;
}

/* What a restart can make again: device memory of the current context's device. */
static CUresult check_prop(const CUmemAllocationProp *prop, const struct sc_cu_ctx *c)
{
	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return prop ? sc_cu_unsupported("cuMemCreate of other than pinned device memory")
			    : CUDA_ERROR_INVALID_VALUE;
	if (prop->win32HandleMetaData)
		return CUDA_ERROR_INVALID_VALUE;
	if (prop->location.id != c->dev)
		return sc_cu_unsupported("cuMemCreate on another device than the current "
					 "context's");
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity,
							 const CUmemAllocationProp *prop,
							 CUmemAllocationGranularity_flags option)
{
	struct sc_req r = { .op = SC_OP_MEM_GRANULARITY, .a = { (uint64_t)option }, .in = prop,
			    .in_len = sizeof(*prop) };
	CUresult res;

	if (!granularity || !prop)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_ask(&r, true)) == CUDA_SUCCESS)
		*granularity = (size_t)r.a[0];
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
					       CUdeviceptr addr, unsigned long long flags)
{
	struct sc_cu_ctx *c;
	CUresult res;

	(void)addr; /* a hint, as for the driver: the arena chooses */
	if (!ptr || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if (!(c = sc_ctx_current()))
		res = sc_ctx_missing();
	else
		res = sc_arena_take_va(c, size, alignment, ptr);
	if (res == CUDA_SUCCESS) {
		pthread_mutex_lock(&vmm_lock);
		if (sc_grow((void **)&ranges, &ranges_cap, ranges_n + 1, sizeof(*ranges)))
			res = CUDA_ERROR_OUT_OF_MEMORY;
		else
			ranges[ranges_n++] = (struct range){ *ptr, size, c->dev };
		pthread_mutex_unlock(&vmm_lock);
		if (res != CUDA_SUCCESS)
			sc_arena_give_va(c->dev, *ptr, size);
	}
	sc_cu_leave();
	return res;
}

static bool mapped_in(CUdeviceptr va, size_t size)
{
	for (size_t i = 0; i < maps_n; i++)
		if (maps[i].va < va + size && va < maps[i].va + maps[i].size)
			return true;
	return false;
}

SC_CU_API CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	CUresult res = CUDA_ERROR_INVALID_VALUE;
	struct range r = { 0 };

	pthread_mutex_lock(&vmm_lock);
	for (size_t i = 0; i < ranges_n; i++)
		if (ranges[i].va == ptr && ranges[i].size == size && !mapped_in(ptr, size)) {
			r = ranges[i];
			ranges[i] = ranges[--ranges_n];
			res = CUDA_SUCCESS;
			break;
		}
	pthread_mutex_unlock(&vmm_lock);
	if (res == CUDA_SUCCESS)
		sc_arena_give_va(r.dev, r.va, r.size);
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
				       const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct sc_cu_memhandle *h = NULL;
	struct sc_cu_ctx *c;
	CUresult res;

	if (!handle || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if (!(c = sc_ctx_current()))
		res = sc_ctx_missing();
	else
		res = check_prop(prop, c);
	if (res == CUDA_SUCCESS && !(h = sc_obj_new(SC_K_MEMHANDLE, sizeof(*h), c)))
		res = CUDA_ERROR_OUT_OF_MEMORY;
	if (res == CUDA_SUCCESS) {
		h->prop = *prop;
		h->size = size;
		h->refs = 1;
		res = sc_arena_take_va(c, size, 0, &h->home);
		if (res == CUDA_SUCCESS && (res = sc_arena_map_home(c, h)) != CUDA_SUCCESS)
			sc_arena_give_va(c->dev, h->home, size);
	}
	if (res == CUDA_SUCCESS)
		*handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
	else
		sc_obj_free(h);
	sc_cu_leave();
	return res;
}

/* An allocation neither held nor mapped any more is freed, as the driver frees it. */
static void free_if_unused(struct sc_cu_memhandle *h)
{
	if (h->refs || h->maps)
		return;
	sc_arena_unmap_home(h);
	sc_obj_free(h);
}

SC_CU_API CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct sc_cu_memhandle *h;
	CUresult res;

	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	pthread_mutex_lock(&vmm_lock);
	if (!(h = handle_of(handle)) || !h->refs) {
		res = CUDA_ERROR_INVALID_VALUE;
	} else {
		h->refs--;
		free_if_unused(h);
	}
	pthread_mutex_unlock(&vmm_lock);
	sc_cu_leave();
	return res;
}

static const struct range *range_holding(CUdeviceptr va, size_t size)
{
	for (size_t i = 0; i < ranges_n; i++)
		if (va >= ranges[i].va && va + size <= ranges[i].va + ranges[i].size)
			return &ranges[i];
	return NULL;
}

SC_CU_API CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
				    CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	struct sc_req r = { .op = SC_OP_MEM_MAP, .a = { ptr, size, offset } };
	struct sc_cu_memhandle *h;
	struct sc_cu_block *home;
	CUresult res;

	if (flags || !size)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	pthread_mutex_lock(&vmm_lock);
	h = handle_of(handle);
	if (!h || !h->refs || !(home = home_of(h)) || offset > h->size ||
	    size > h->size - offset || !range_holding(ptr, size) || mapped_in(ptr, size))
		res = CUDA_ERROR_INVALID_VALUE;
	if (res == CUDA_SUCCESS) {
		r.ctx = home->ctx->o.real;
		r.a[3] = home->handle;
		res = sc_cu_call(&r);
	}
	if (res == CUDA_SUCCESS &&
	    sc_grow((void **)&maps, &maps_cap, maps_n + 1, sizeof(*maps)) == 0) {
		maps[maps_n++] = (struct mapping){ ptr, size, offset, h };
		h->maps++;
	} else if (res == CUDA_SUCCESS) {
		struct sc_req u = { .op = SC_OP_MEM_UNMAP, .ctx = r.ctx, .a = { ptr, size } };

		sc_cu_call(&u);
		res = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&vmm_lock);
	sc_cu_leave();
	return res;
}

static struct mapping *mapping_at(CUdeviceptr p)
{
	for (size_t i = 0; i < maps_n; i++)
		if (p >= maps[i].va && p < maps[i].va + maps[i].size)
			return &maps[i];
	return NULL;
}

/* Does [va, va+size) consist of whole mappings, without a gap? */
static bool whole_mappings(CUdeviceptr va, size_t size)
{
	size_t covered = 0;

	for (size_t i = 0; i < maps_n; i++) {
		if (maps[i].va >= va + size || maps[i].va + maps[i].size <= va)
			continue;
		if (maps[i].va < va || maps[i].va + maps[i].size > va + size)
			return false;
		covered += maps[i].size;
	}
	return covered == size;
}

/* The access given to [va, va+size) goes with its mappings: the rest of each grant stays. */
static void trim_granted(CUdeviceptr va, size_t size)
{
	for (size_t i = 0; i < granted_n;) {
		struct access a = granted[i];
		CUdeviceptr end = a.va + a.size;

		if (end <= va || a.va >= va + size) {
			i++;
			continue;
		}
		granted[i] = granted[--granted_n];
		if (a.va < va && !sc_grow((void **)&granted, &granted_cap, granted_n + 1,
					  sizeof(*granted))) {
			granted[granted_n] = a;
			granted[granted_n++].size = va - a.va;
		}
		if (end > va + size && !sc_grow((void **)&granted, &granted_cap, granted_n + 1,
						sizeof(*granted))) {
			granted[granted_n] = a;
			granted[granted_n].va = va + size;
			granted[granted_n++].size = end - (va + size);
		}
	}
}

/* Forget the mappings in [va, va+size), which the proxy no longer has. */
static void drop_mappings(CUdeviceptr va, size_t size)
{
	for (size_t i = 0; i < maps_n;) {
		struct sc_cu_memhandle *h = maps[i].h;

		if (maps[i].va < va || maps[i].va + maps[i].size > va + size) {
			i++;
			continue;
		}
		maps[i] = maps[--maps_n];
		h->maps--;
		free_if_unused(h);
	}
	trim_granted(va, size);
}

SC_CU_API CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	struct sc_req r = { .op = SC_OP_MEM_UNMAP, .a = { ptr, size } };
	CUresult res;

	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	pthread_mutex_lock(&vmm_lock);
	if (!size || !whole_mappings(ptr, size)) {
		res = CUDA_ERROR_INVALID_VALUE;
	} else {
		struct sc_cu_block *home = home_of(mapping_at(ptr)->h);

		r.ctx = home ? home->ctx->o.real : sc_ctx_real();
		if ((res = sc_cu_call(&r)) == CUDA_SUCCESS)
			drop_mappings(ptr, size);
	}
	pthread_mutex_unlock(&vmm_lock);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size,
					  const CUmemAccessDesc *desc, size_t count)
{
	struct sc_req r = { .op = SC_OP_MEM_SET_ACCESS, .a = { ptr, size, count }, .in = desc,
			    .in_len = (uint32_t)(count * sizeof(*desc)) };
	CUresult res;

	if (!desc || !count)
		return CUDA_ERROR_INVALID_VALUE;
	if (count > ACCESS_MAX)
		return sc_cu_unsupported("cuMemSetAccess for more than 16 locations at once");
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	pthread_mutex_lock(&vmm_lock);
	if (!size || !whole_mappings(ptr, size)) {
		res = CUDA_ERROR_INVALID_VALUE;
	} else {
		r.ctx = home_of(mapping_at(ptr)->h)->ctx->o.real;
		res = sc_cu_call(&r);
	}
	if (res == CUDA_SUCCESS &&
	    sc_grow((void **)&granted, &granted_cap, granted_n + 1, sizeof(*granted)) == 0) {
		struct access *a = &granted[granted_n++];

		*a = (struct access){ ptr, size, (unsigned)count, { { { 0 } } } };
		memcpy(a->desc, desc, count * sizeof(*desc));
	} else if (res == CUDA_SUCCESS) {
		res = CUDA_ERROR_OUT_OF_MEMORY; /* it could not be given again at a restart */
	}
	pthread_mutex_unlock(&vmm_lock);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemGetAccess(unsigned long long *flags,
					  const CUmemLocation *location, CUdeviceptr ptr)
{
	struct sc_req r = { .op = SC_OP_MEM_GET_ACCESS, .a = { ptr }, .in = location,
			    .in_len = location ? sizeof(*location) : 0 };
	CUresult res;

	if (!flags || !location)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_ask(&r, true)) == CUDA_SUCCESS)
		*flags = r.a[0];
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle,
						       void *addr)
{
	struct mapping *m;
	CUresult res = CUDA_SUCCESS;

	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm_lock);
	if (!(m = mapping_at((CUdeviceptr)(uintptr_t)addr))) {
		res = CUDA_ERROR_INVALID_VALUE;
	} else {
		m->h->refs++;
		*handle = (CUmemGenericAllocationHandle)(uintptr_t)m->h;
	}
	pthread_mutex_unlock(&vmm_lock);
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
								  CUmemGenericAllocationHandle handle)
{
	struct sc_cu_memhandle *h;
	CUresult res = CUDA_SUCCESS;

	if (!prop)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vmm_lock);
	if (!(h = handle_of(handle)))
		res = CUDA_ERROR_INVALID_VALUE;
	else
		*prop = h->prop;
	pthread_mutex_unlock(&vmm_lock);
	return res;
}

struct sc_cu_block *sc_devptr_find(CUdeviceptr p, CUdeviceptr *base, size_t *size)
{
	struct sc_cu_block *b = sc_arena_find(p, base, size);
	struct mapping *m;

	if (b)
		return b;
	pthread_mutex_lock(&vmm_lock);
	if ((m = mapping_at(p)) && (b = home_of(m->h))) {
		if (base)
			*base = m->va;
		if (size)
			*size = m->size;
	}
	pthread_mutex_unlock(&vmm_lock);
	return b;
}

void sc_vmm_forget_context(struct sc_cu_ctx *c)
{
	pthread_mutex_lock(&vmm_lock);
	for (size_t i = 0; i < maps_n;) {
		struct mapping m = maps[i];
		struct sc_req u = { .op = SC_OP_MEM_UNMAP, .ctx = c->o.real, .a = { m.va, m.size } };

		if (m.h->o.ctx != c) {
			i++;
			continue;
		}
		sc_cu_call(&u); /* before the home goes, with the context */
		maps[i] = maps[--maps_n];
		m.h->maps--;
		trim_granted(m.va, m.size);
	}
	pthread_mutex_unlock(&vmm_lock);
	/* the homes are the context's blocks (arena.c), the handles its objects (api_ctx.c) */
}

CUresult sc_vmm_replay(void)
{
	CUresult res = CUDA_SUCCESS;

	for (size_t i = 0; i < maps_n && res == CUDA_SUCCESS; i++) {
		struct sc_cu_block *home = home_of(maps[i].h);
		struct sc_req r = { .op = SC_OP_MEM_MAP, .a = { maps[i].va, maps[i].size,
								 maps[i].offset } };

		if (!home)
			return CUDA_ERROR_INVALID_VALUE;
		r.ctx = home->ctx->o.real;
		r.a[3] = home->handle;
		res = sc_cu_call(&r);
	}
	for (size_t i = 0; i < granted_n && res == CUDA_SUCCESS; i++) {
		struct mapping *m = mapping_at(granted[i].va);
		struct sc_req r = { .op = SC_OP_MEM_SET_ACCESS,
				    .a = { granted[i].va, granted[i].size, granted[i].n },
				    .in = granted[i].desc,
				    .in_len = granted[i].n * (uint32_t)sizeof(CUmemAccessDesc) };

		if (!m || !home_of(m->h))
			return CUDA_ERROR_INVALID_VALUE;
		r.ctx = home_of(m->h)->ctx->o.real;
		res = sc_cu_call(&r);
	}
	return res;
}
