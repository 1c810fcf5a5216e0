/* SPDX-License-Identifier: MIT */
/*
 * softcuda_vmm.c - the virtual memory management API, as the real driver
 * behaves:
 *
 *   cuMemAddressReserve  PROT_NONE address space (MAP_NORESERVE); a non-zero
 *                        address is a hint, tried with MAP_FIXED_NOREPLACE
 *   cuMemCreate          physical memory: a memfd of that size, counted as used
 *   cuMemMap             the memfd mapped MAP_SHARED|MAP_FIXED over part of a
 *                        reservation, still inaccessible
 *   cuMemSetAccess       makes mapped ranges readable (and writable)
 *   cuMemUnmap           back to PROT_NONE reservation
 *   cuMemRelease         the handle goes; the memory goes when it is also unmapped
 *
 * Sizes and addresses are multiples of the 2 MiB granularity. Generic
 * allocation handles are plain numbers, so a bad one is CUDA_ERROR_INVALID_VALUE,
 * as the real driver says, not CUDA_ERROR_INVALID_HANDLE.
 */
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "softcuda_internal.h"

struct sd_phys {
	struct sd_obj obj;
	int fd;
	size_t size;
	int device;
	int released;
	unsigned maps;
	unsigned long long id;
	CUmemAllocationProp prop;
};

struct sd_reserve {
	struct sd_obj obj;
	uintptr_t base;
	size_t size;
};

struct sd_mapping {
	struct sd_obj obj;
	uintptr_t base;
	size_t size;
	int prot;
	struct sd_phys *phys;
	struct sd_reserve *reserve;
};

static int aligned(uintptr_t value)
{
	return value % SD_GRANULARITY == 0;
}

static CUresult check_prop(const CUmemAllocationProp *prop)
{
	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	return sd_device_check(prop->location.id);
}

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity,
					       const CUmemAllocationProp *prop,
					       CUmemAllocationGranularity_flags option)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
			     option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = check_prop(prop);
	if (rc == CUDA_SUCCESS)
		*granularity = SD_GRANULARITY;
	return sd_leave(rc);
}

static struct sd_reserve *reserve_holding(uintptr_t addr, size_t size)
{
	struct sd_obj *obj;

	for (obj = sd.objs[SD_RESERVE]; obj; obj = obj->next) {
		struct sd_reserve *r = sd_container(obj, struct sd_reserve, obj);
		size_t offset = addr - r->base;

		if (addr >= r->base && offset < r->size && size <= r->size - offset)
			return r;
	}
	return NULL;
}

static struct sd_mapping *mapping_holding(uintptr_t addr)
{
	struct sd_obj *obj;

	for (obj = sd.objs[SD_MAPPING]; obj; obj = obj->next) {
		struct sd_mapping *m = sd_container(obj, struct sd_mapping, obj);

		if (addr >= m->base && addr - m->base < m->size)
			return m;
	}
	return NULL;
}

static int mapping_overlaps(uintptr_t addr, size_t size)
{
	struct sd_obj *obj;

	for (obj = sd.objs[SD_MAPPING]; obj; obj = obj->next) {
		struct sd_mapping *m = sd_container(obj, struct sd_mapping, obj);

		if (addr < m->base + m->size && m->base < addr + size)
			return 1;
	}
	return 0;
}

#define SD_RESERVE_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)

/* The hint, exactly, or nothing: an older kernel may place a NOREPLACE map elsewhere. */
static void *reserve_at(uintptr_t addr, size_t size)
{
	void *p = mmap((void *)addr, size, PROT_NONE, SD_RESERVE_FLAGS | MAP_FIXED_NOREPLACE,
		       -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if ((uintptr_t)p != addr) {
		munmap(p, size);
		return NULL;
	}
	return p;
}

/* Anywhere, aligned: over-reserve, then trim both ends. */
static void *reserve_anywhere(size_t size, size_t align)
{
	uintptr_t p, start;
	void *raw;

	if (size > SIZE_MAX - align)
		return NULL;
	raw = mmap(NULL, size + align, PROT_NONE, SD_RESERVE_FLAGS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	p = (uintptr_t)raw;
	start = SD_ROUND_UP(p, align);
	if (start > p)
		munmap(raw, start - p);
	if (p + align > start)
		munmap((void *)(start + size), p + align - start);
	return (void *)start;
}

static CUresult address_reserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
				unsigned long long flags)
{
	struct sd_reserve *r;
	void *p = NULL;

	if (!ptr || !size || !aligned(size) || flags || (align & (align - 1)))
		return CUDA_ERROR_INVALID_VALUE;
	if (align < SD_GRANULARITY)
		align = SD_GRANULARITY;
	if (addr && addr % align == 0)
		p = reserve_at(addr, size);
	if (!p)
		p = reserve_anywhere(size, align);
	r = calloc(1, sizeof(*r));
	if (!p || !r) {
		if (p)
			munmap(p, size);
		free(r);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r->base = (uintptr_t)p;
	r->size = size;
	sd_obj_add(&r->obj, SD_RESERVE, NULL);
	*ptr = r->base;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
				     CUdeviceptr addr, unsigned long long flags)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(address_reserve(ptr, size, alignment, addr, flags));
}

/* The whole reservation, with nothing mapped in it any more. */
static CUresult address_free(CUdeviceptr ptr, size_t size)
{
	struct sd_reserve *r = reserve_holding(ptr, size);

	if (!r || r->base != ptr || r->size != size)
		return CUDA_ERROR_INVALID_VALUE;
	if (mapping_overlaps(ptr, size)) {
		sd_log("cuMemAddressFree(0x%llx): the range is still mapped", ptr);
		return CUDA_ERROR_INVALID_VALUE;
	}
	munmap((void *)r->base, r->size);
	sd_obj_del(&r->obj);
	free(r);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(address_free(ptr, size));
}

static CUresult mem_create(CUmemGenericAllocationHandle *handle, size_t size,
			   const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct sd_phys *phys;
	CUresult rc;

	if (!handle || !size || !aligned(size) || flags)
		return CUDA_ERROR_INVALID_VALUE;
	rc = check_prop(prop);
	if (rc == CUDA_SUCCESS)
		rc = sd_mem_charge(prop->location.id, size);
	if (rc)
		return rc;
	phys = calloc(1, sizeof(*phys));
	if (phys)
		phys->fd = memfd_create("softcuda-vmm", MFD_CLOEXEC);
	if (!phys || phys->fd < 0 || ftruncate(phys->fd, (off_t)size)) {
		if (phys && phys->fd >= 0)
			close(phys->fd);
		free(phys);
		sd_mem_uncharge(prop->location.id, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	phys->size = size;
	phys->device = prop->location.id;
	phys->prop = *prop;
	phys->id = sd.next_buffer_id++;
	sd_obj_add(&phys->obj, SD_PHYS, NULL);
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)phys;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			     const CUmemAllocationProp *prop, unsigned long long flags)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(mem_create(handle, size, prop, flags));
}

/* A handle the caller still holds: created and not released. */
static struct sd_phys *phys_find(CUmemGenericAllocationHandle handle)
{
	struct sd_obj *obj = sd_obj_find(SD_PHYS, (void *)(uintptr_t)handle);
	struct sd_phys *phys = obj ? sd_container(obj, struct sd_phys, obj) : NULL;

	return phys && !phys->released ? phys : NULL;
}

static void phys_put(struct sd_phys *phys)
{
	if (!phys->released || phys->maps)
		return;
	close(phys->fd);
	sd_mem_uncharge(phys->device, phys->size);
	sd_obj_del(&phys->obj);
	free(phys);
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct sd_phys *phys;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	phys = phys_find(handle);
	if (!phys)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	phys->released = 1;
	phys_put(phys);
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
							CUmemGenericAllocationHandle handle)
{
	struct sd_phys *phys;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	phys = phys_find(handle);
	if (!prop || !phys)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*prop = phys->prop;
	return sd_leave(CUDA_SUCCESS);
}

/* The offset into the allocation must be zero, as the real driver requires. */
static CUresult mem_map(CUdeviceptr ptr, size_t size, size_t offset,
			CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	struct sd_phys *phys = phys_find(handle);
	struct sd_reserve *r = reserve_holding(ptr, size);
	struct sd_mapping *m;
	void *p;

	if (!phys || !size || !aligned(ptr) || !aligned(size) || offset || flags ||
	    size > phys->size)
		return CUDA_ERROR_INVALID_VALUE;
	if (!r) {
		sd_log("cuMemMap(0x%llx, %zu): not inside a reservation", ptr, size);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (mapping_overlaps(ptr, size)) {
		sd_log("cuMemMap(0x%llx, %zu): overlaps a mapping", ptr, size);
		return CUDA_ERROR_INVALID_VALUE;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p = mmap((void *)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, phys->fd, 0);
	if (p == MAP_FAILED) {
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->base = ptr;
	m->size = size;
	m->phys = phys;
	m->reserve = r;
	phys->maps++;
	sd_obj_add(&m->obj, SD_MAPPING, NULL);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			  CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(mem_map(ptr, size, offset, handle, flags));
}

/* [ptr, ptr + size) must be whole mappings laid end to end, no part of one. */
static int whole_mappings(uintptr_t ptr, size_t size)
{
	uintptr_t end = ptr + size;
	struct sd_mapping *m;

	if (!size || end < ptr)
		return 0;
	while (ptr < end) {
		m = mapping_holding(ptr);
		if (!m || m->base != ptr || m->size > end - ptr)
			return 0;
		ptr += m->size;
	}
	return 1;
}

static void mapping_free(struct sd_mapping *m)
{
	mmap((void *)m->base, m->size, PROT_NONE, SD_RESERVE_FLAGS | MAP_FIXED, -1, 0);
	m->phys->maps--;
	phys_put(m->phys);
	sd_obj_del(&m->obj);
	free(m);
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	uintptr_t end = ptr + size;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!whole_mappings(ptr, size)) {
		sd_log("cuMemUnmap(0x%llx, %zu): not whole mappings", ptr, size);
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	}
	while (ptr < end) {
		struct sd_mapping *m = mapping_holding(ptr);

		ptr += m->size;
		mapping_free(m);
	}
	return sd_leave(CUDA_SUCCESS);
}

/* The widest access any descriptor grants: all devices share the host's memory. */
static int access_prot(const CUmemAccessDesc *desc, size_t count, int *prot)
{
	size_t i;

	*prot = PROT_NONE;
	for (i = 0; i < count; i++) {
		if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    sd_device_check(desc[i].location.id))
			return -1;
		if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			*prot |= PROT_READ | PROT_WRITE;
		else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ)
			*prot |= PROT_READ;
		else if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE)
			return -1;
	}
	return 0;
}

static CUresult set_access(uintptr_t ptr, size_t size, const CUmemAccessDesc *desc,
			   size_t count)
{
	uintptr_t end = ptr + size;
	int prot;

	if (!desc || !count || access_prot(desc, count, &prot))
		return CUDA_ERROR_INVALID_VALUE;
	if (!whole_mappings(ptr, size)) {
		sd_log("cuMemSetAccess(0x%lx, %zu): not whole mappings", (unsigned long)ptr, size);
		return CUDA_ERROR_INVALID_VALUE;
	}
	while (ptr < end) {
		struct sd_mapping *m = mapping_holding(ptr);

		if (mprotect((void *)m->base, m->size, prot))
			return CUDA_ERROR_UNKNOWN;
		m->prot = prot;
		ptr += m->size;
	}
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
				size_t count)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(set_access(ptr, size, desc, count));
}

/* One device is modelled: its access is the mapping's protection. */
CUresult CUDAAPI cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
				CUdeviceptr ptr)
{
	struct sd_mapping *m;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!flags || !location || location->type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    sd_device_check(location->id) || !(m = mapping_holding(ptr)))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*flags = m->prot & PROT_WRITE  ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
		 : m->prot & PROT_READ ? CU_MEM_ACCESS_FLAGS_PROT_READ
				       : CU_MEM_ACCESS_FLAGS_PROT_NONE;
	return sd_leave(CUDA_SUCCESS);
}

int sd_mapping_region(uintptr_t addr, struct sd_region *region)
{
	struct sd_mapping *m = mapping_holding(addr);

	if (!m)
		return 0;
	region->base = m->base;
	region->size = m->size;
	region->range_base = m->reserve->base;
	region->range_size = m->reserve->size;
	region->type = CU_MEMORYTYPE_DEVICE;
	region->prot = m->prot;
	region->device = m->phys->device;
	region->ctx = NULL;
	region->id = m->phys->id;
	region->vmm = 1;
	return 1;
}

int sd_reserve_region(uintptr_t addr, struct sd_region *region)
{
	struct sd_reserve *r = reserve_holding(addr, 1);

	if (!r)
		return 0;
	memset(region, 0, sizeof(*region));
	region->base = region->range_base = r->base;
	region->size = region->range_size = r->size;
	return 1;
}
