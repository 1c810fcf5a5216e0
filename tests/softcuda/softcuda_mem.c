/* SPDX-License-Identifier: MIT */
/*
 * softcuda_mem.c - legacy device allocations, page-locked host memory, and
 * what the device knows about an address (for copies and pointer queries).
 *
 * Device pointers are addresses of this process: kernels dereference them.
 * Device allocations are anonymous mappings of their own, so they are page
 * aligned (more than the 256 bytes CUDA promises) and a kernel running off
 * the end of one faults more often than it corrupts its neighbour.
 */
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "softcuda_internal.h"

#define SD_HOSTALLOC_FLAGS \
	(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)
#define SD_HOSTREGISTER_FLAGS (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | \
			       CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY)

/* cuMemAlloc and friends (device), cuMemAllocHost and cuMemHostAlloc (host). */
struct sd_alloc {
	struct sd_obj obj;
	uintptr_t base;
	size_t size;
	size_t length;		/* of the mapping: size rounded up to pages */
	int host;
	int device;
	unsigned flags;
	unsigned long long id;
	int managed;                      /* cuMemAllocManaged's */
	uintptr_t read_mostly_lo, read_mostly_hi; /* the last range advised read-mostly */
	uintptr_t prefetch_lo, prefetch_hi; /* the last range prefetched, and where to */
	CUmemLocation prefetch_to;
};

/* cuMemHostRegister: memory the caller owns. */
struct sd_hostreg {
	struct sd_obj obj;
	uintptr_t base;
	size_t size;
	int device;
	unsigned flags;
	unsigned long long id;
};

static size_t page_round(size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return SD_ROUND_UP(bytes, page);
}

static CUresult alloc_new(struct sd_ctx *ctx, size_t size, int host, unsigned flags,
			  struct sd_alloc **out)
{
	struct sd_alloc *a;
	void *p;

	if (!size || size > SIZE_MAX / 2)
		return CUDA_ERROR_INVALID_VALUE;
	if (!host && sd_mem_charge(ctx->device, size))
		return CUDA_ERROR_OUT_OF_MEMORY;
	a = calloc(1, sizeof(*a));
	p = mmap(NULL, page_round(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (!a || p == MAP_FAILED) {
		if (p != MAP_FAILED)
			munmap(p, page_round(size));
		free(a);
		if (!host)
			sd_mem_uncharge(ctx->device, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->base = (uintptr_t)p;
	a->size = size;
	a->length = page_round(size);
	a->host = host;
	a->device = ctx->device;
	a->flags = flags;
	a->id = sd.next_buffer_id++;
	sd_obj_add(&a->obj, SD_ALLOC, ctx);
	*out = a;
	return CUDA_SUCCESS;
}

void sd_alloc_free(struct sd_obj *obj)
{
	struct sd_alloc *a = sd_container(obj, struct sd_alloc, obj);

	sd_obj_del(obj);
	munmap((void *)a->base, a->length);
	if (!a->host)
		sd_mem_uncharge(a->device, a->size);
	free(a);
}

static struct sd_alloc *alloc_at(uintptr_t base, int host)
{
	struct sd_obj *obj;

	for (obj = sd.objs[SD_ALLOC]; obj; obj = obj->next) {
		struct sd_alloc *a = sd_container(obj, struct sd_alloc, obj);

		if (a->base == base && a->host == host)
			return a;
	}
	return NULL;
}

/* A device allocation; a managed one (@managed) is told apart by IS_MANAGED. */
static CUresult device_alloc(CUdeviceptr *dptr, size_t size, int managed)
{
	struct sd_alloc *a;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	rc = alloc_new(ctx, size, 0, 0, &a);
	if (rc == CUDA_SUCCESS) {
		a->managed = managed;
		*dptr = a->base;
	}
	return rc;
}

static CUresult mem_alloc(CUdeviceptr *dptr, size_t size)
{
	return device_alloc(dptr, size, 0);
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t size)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(mem_alloc(dptr, size));
}

/*
 * Managed memory: the software device's memory is the calling process's own,
 * which its CPU reaches already (the benchmarks' native runs use it). Advice
 * and prefetches are kept as far as the tests read them back: the last range
 * advised read-mostly and the last range prefetched.
 */
CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	return sd_leave(device_alloc(dptr, size, 1));
}

/* The managed allocation that holds [@p, @p + @n), or NULL. */
static struct sd_alloc *managed_holding(uintptr_t p, size_t n)
{
	for (struct sd_obj *obj = sd.objs[SD_ALLOC]; obj; obj = obj->next) {
		struct sd_alloc *a = sd_container(obj, struct sd_alloc, obj);

		if (a->managed && p >= a->base && p - a->base < a->size && n <= a->size - (p - a->base))
			return a;
	}
	return NULL;
}

CUresult CUDAAPI cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation loc)
{
	CUresult rc = sd_enter(__func__);
	struct sd_alloc *a;

	(void)loc;
	if (rc)
		return rc;
	if (!n || !(a = managed_holding(p, n)))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if (advice == CU_MEM_ADVISE_SET_READ_MOSTLY) {
		a->read_mostly_lo = p;
		a->read_mostly_hi = p + n;
	} else if (advice == CU_MEM_ADVISE_UNSET_READ_MOSTLY) {
		a->read_mostly_lo = a->read_mostly_hi = 0;
	}
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned int flags,
				    CUstream stream)
{
	CUresult rc = sd_enter(__func__);
	struct sd_alloc *a;

	(void)stream;
	if (rc)
		return rc;
	if (!n || flags || !(a = managed_holding(p, n)))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	a->prefetch_lo = p;
	a->prefetch_hi = p + n;
	a->prefetch_to = loc;
	return sd_leave(CUDA_SUCCESS);
}

/* One location for every range of the batch, the only form the tests use. */
CUresult CUDAAPI cuMemPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
					 CUmemLocation *locs, size_t *idxs, size_t n_locs,
					 unsigned long long flags, CUstream stream)
{
	CUresult rc = CUDA_SUCCESS;

	if (!dptrs || !sizes || !count || !locs || !idxs || n_locs != 1 || idxs[0] || flags)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < count && !rc; i++)
		rc = cuMemPrefetchAsync(dptrs[i], sizes[i], locs[0], 0, stream);
	return rc;
}

CUresult CUDAAPI cuMemRangeGetAttribute(void *data, size_t len, CUmem_range_attribute attr,
					CUdeviceptr p, size_t n)
{
	CUresult rc = sd_enter(__func__);
	struct sd_alloc *a;
	int v;

	if (rc)
		return rc;
	if (!data || len != 4 || !n || !(a = managed_holding(p, n)))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if (attr == CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY) {
		v = p >= a->read_mostly_lo && p + n <= a->read_mostly_hi;
	} else if (attr == CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION) {
		v = p >= a->prefetch_lo && p + n <= a->prefetch_hi ? (a->prefetch_to.type ==
		    CU_MEM_LOCATION_TYPE_DEVICE ? a->prefetch_to.id : CU_DEVICE_CPU) : CU_DEVICE_INVALID;
	} else {
		sd_log("cuMemRangeGetAttribute: attribute %d is not kept", (int)attr);
		return sd_leave(CUDA_ERROR_NOT_SUPPORTED);
	}
	memcpy(data, &v, 4);
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamAttachMemAsync(CUstream stream, CUdeviceptr p, size_t n,
					unsigned int flags)
{
	CUresult rc = sd_enter(__func__);

	(void)stream, (void)flags;
	if (rc)
		return rc;
	return sd_leave(managed_holding(p, n ? n : 1) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

/* Rows padded to 512 bytes, what real devices return for small widths too. */
CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
				 unsigned int elem_bytes)
{
	CUresult rc = sd_enter(__func__);
	size_t row;

	if (rc)
		return rc;
	if (!dptr || !pitch || !width || !height ||
	    (elem_bytes != 4 && elem_bytes != 8 && elem_bytes != 16) ||
	    width > SIZE_MAX / 4 || height > SIZE_MAX / SD_ROUND_UP(width, SD_PITCH_ALIGN))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	row = SD_ROUND_UP(width, SD_PITCH_ALIGN);
	rc = mem_alloc(dptr, row * height);
	if (rc == CUDA_SUCCESS)
		*pitch = row;
	return sd_leave(rc);
}

static CUresult mem_free(CUdeviceptr dptr)
{
	struct sd_alloc *a;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	a = alloc_at(dptr, 0);
	if (!a) {
		sd_log("cuMemFree(0x%llx): not an allocation", (unsigned long long)dptr);
		return CUDA_ERROR_INVALID_VALUE;
	}
	sd_alloc_free(&a->obj);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr dptr)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(mem_free(dptr));
}

/* Streams run synchronously here: stream order is program order, and a free is at once. */
CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream stream)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_stream_check(stream);
	return sd_leave(rc ? rc : mem_alloc(dptr, size));
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream stream)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_stream_check(stream);
	return sd_leave(rc ? rc : mem_free(dptr));
}

CUresult CUDAAPI cuMemGetInfo(size_t *free_bytes, size_t *total)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!free_bytes || !total)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_ctx_current(&ctx);
	if (rc == CUDA_SUCCESS) {
		*total = sd.total_mem;
		*free_bytes = sd.total_mem - sd.devices[ctx->device].used;
	}
	return sd_leave(rc);
}

static CUresult host_alloc(void **pp, size_t size, unsigned flags)
{
	struct sd_alloc *a;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!pp || (flags & ~(unsigned)SD_HOSTALLOC_FLAGS))
		return CUDA_ERROR_INVALID_VALUE;
	rc = alloc_new(ctx, size, 1, flags, &a);
	if (rc == CUDA_SUCCESS)
		*pp = (void *)a->base;
	return rc;
}

CUresult CUDAAPI cuMemAllocHost(void **pp, size_t size)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(host_alloc(pp, size, 0));
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(host_alloc(pp, size, flags));
}

CUresult CUDAAPI cuMemFreeHost(void *p)
{
	struct sd_alloc *a;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	a = alloc_at((uintptr_t)p, 1);
	if (!a)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	sd_alloc_free(&a->obj);
	return sd_leave(CUDA_SUCCESS);
}

/* Unified addressing: the device sees page-locked host memory at its host address. */
CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr *dptr, void *p, unsigned int flags)
{
	struct sd_region r;
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_ctx_current(&ctx);
	if (rc)
		return sd_leave(rc);
	if (!dptr || flags || !sd_region_find((uintptr_t)p, &r) || r.type != CU_MEMORYTYPE_HOST)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*dptr = (CUdeviceptr)(uintptr_t)p;
	return sd_leave(CUDA_SUCCESS);
}

static int host_flags(uintptr_t p, unsigned *flags)
{
	struct sd_obj *obj;

	for (obj = sd.objs[SD_ALLOC]; obj; obj = obj->next) {
		struct sd_alloc *a = sd_container(obj, struct sd_alloc, obj);

		if (a->host && p >= a->base && p - a->base < a->size) {
			*flags = a->flags;
			return 1;
		}
	}
	for (obj = sd.objs[SD_HOSTREG]; obj; obj = obj->next) {
		struct sd_hostreg *h = sd_container(obj, struct sd_hostreg, obj);

		if (p >= h->base && p - h->base < h->size) {
			*flags = h->flags;
			return 1;
		}
	}
	return 0;
}

CUresult CUDAAPI cuMemHostGetFlags(unsigned int *flags, void *p)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!flags || !host_flags((uintptr_t)p, flags))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	return sd_leave(CUDA_SUCCESS);
}

/* Any page-locked memory in [p, p + size): a second registration of it is refused. */
static int host_overlaps(uintptr_t p, size_t size)
{
	struct sd_obj *obj;

	for (obj = sd.objs[SD_ALLOC]; obj; obj = obj->next) {
		struct sd_alloc *a = sd_container(obj, struct sd_alloc, obj);

		if (a->host && p < a->base + a->size && a->base < p + size)
			return 1;
	}
	for (obj = sd.objs[SD_HOSTREG]; obj; obj = obj->next) {
		struct sd_hostreg *h = sd_container(obj, struct sd_hostreg, obj);

		if (p < h->base + h->size && h->base < p + size)
			return 1;
	}
	return 0;
}

/* The range must be mapped, as pinning it would require: madvise() says so. */
static int host_mapped(uintptr_t p, size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = p / page * page;

	return !madvise((void *)start, page_round(p + size - start), MADV_NORMAL);
}

static CUresult host_register(void *p, size_t size, unsigned flags)
{
	struct sd_hostreg *h;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!p || !size || (flags & ~(unsigned)SD_HOSTREGISTER_FLAGS) ||
	    (uintptr_t)p + size < (uintptr_t)p || !host_mapped((uintptr_t)p, size))
		return CUDA_ERROR_INVALID_VALUE;
	if (host_overlaps((uintptr_t)p, size))
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	h = calloc(1, sizeof(*h));
	if (!h)
		return CUDA_ERROR_OUT_OF_MEMORY;
	h->base = (uintptr_t)p;
	h->size = size;
	h->device = ctx->device;
	h->flags = flags;
	h->id = sd.next_buffer_id++;
	sd_obj_add(&h->obj, SD_HOSTREG, ctx);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostRegister(void *p, size_t size, unsigned int flags)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(host_register(p, size, flags));
}

void sd_hostreg_free(struct sd_obj *obj)
{
	sd_obj_del(obj);
	free(sd_container(obj, struct sd_hostreg, obj));
}

CUresult CUDAAPI cuMemHostUnregister(void *p)
{
	struct sd_obj *obj;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	for (obj = sd.objs[SD_HOSTREG]; obj; obj = obj->next) {
		if (sd_container(obj, struct sd_hostreg, obj)->base == (uintptr_t)p) {
			sd_hostreg_free(obj);
			return sd_leave(CUDA_SUCCESS);
		}
	}
	return sd_leave(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

static void region_set(struct sd_region *r, uintptr_t base, size_t size, CUmemorytype type,
		       int device, struct sd_ctx *ctx, unsigned long long id)
{
	r->base = r->range_base = base;
	r->size = r->range_size = size;
	r->type = type;
	r->prot = PROT_READ | PROT_WRITE;
	r->device = device;
	r->ctx = ctx;
	r->id = id;
	r->vmm = 0;
}

static int alloc_region(uintptr_t addr, struct sd_region *r)
{
	struct sd_obj *obj;

	for (obj = sd.objs[SD_ALLOC]; obj; obj = obj->next) {
		struct sd_alloc *a = sd_container(obj, struct sd_alloc, obj);

		if (addr >= a->base && addr - a->base < a->size) {
			region_set(r, a->base, a->size,
				   a->host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE, a->device,
				   obj->ctx, a->id);
			return 1;
		}
	}
	for (obj = sd.objs[SD_HOSTREG]; obj; obj = obj->next) {
		struct sd_hostreg *h = sd_container(obj, struct sd_hostreg, obj);

		if (addr >= h->base && addr - h->base < h->size) {
			region_set(r, h->base, h->size, CU_MEMORYTYPE_HOST, h->device, obj->ctx,
				   h->id);
			return 1;
		}
	}
	return 0;
}

/* The allocation, registration, VMM mapping or module global holding addr. */
int sd_region_find(uintptr_t addr, struct sd_region *region)
{
	return alloc_region(addr, region) || sd_mapping_region(addr, region) ||
	       sd_global_region(addr, region);
}

/*
 * [addr, addr + bytes) must lie in one piece of memory the device knows, with
 * the access asked for; only VMM mappings side by side in one reservation may
 * share a range, as they do for the real driver.
 */
CUresult sd_range_check(uintptr_t addr, size_t bytes, int prot)
{
	uintptr_t end = addr + bytes, reservation = 0;
	struct sd_region r;

	if (end < addr)
		return CUDA_ERROR_INVALID_VALUE;
	while (addr < end) {
		if (!sd_region_find(addr, &r) || (reservation && r.range_base != reservation)) {
			sd_log("address 0x%lx is not device memory", (unsigned long)addr);
			return CUDA_ERROR_INVALID_VALUE;
		}
		if ((r.prot & prot) != prot) {
			sd_log("address 0x%lx: device access to it is not enabled",
			       (unsigned long)addr);
			return CUDA_ERROR_INVALID_VALUE;
		}
		if (end - r.base > r.size && !r.vmm) {
			sd_log("range 0x%lx+%zu runs past its allocation", (unsigned long)addr,
			       bytes);
			return CUDA_ERROR_INVALID_VALUE;
		}
		reservation = r.range_base;
		addr = r.base + r.size;
	}
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr *base, size_t *size, CUdeviceptr dptr)
{
	struct sd_region r;
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_ctx_current(&ctx);
	if (rc)
		return sd_leave(rc);
	if (!sd_region_find(dptr, &r) || r.type != CU_MEMORYTYPE_DEVICE)
		return sd_leave(CUDA_ERROR_NOT_FOUND);
	if (base)
		*base = r.base;
	if (size)
		*size = r.size;
	return sd_leave(CUDA_SUCCESS);
}

static unsigned access_flags(int prot)
{
	if (prot & PROT_WRITE)
		return CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
	return prot & PROT_READ ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ :
				  CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE;
}

/* Attributes of an address that is mapped to memory. Booleans are unsigned int. */
static CUresult pointer_attr(void *data, CUpointer_attribute attr, uintptr_t ptr,
			     const struct sd_region *r)
{
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = (CUcontext)r->ctx;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned *)data = r->type;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = ptr;
		break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (r->type != CU_MEMORYTYPE_HOST)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = (void *)ptr;
		break;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
	case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
		*(unsigned long long *)data = r->id;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = r->device;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
		*(void **)data = (void *)r->base;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		*(size_t *)data = r->size;
		break;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		*(unsigned *)data = access_flags(r->prot);
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(unsigned *)data = managed_holding(ptr, 1) != NULL || sd_global_managed(ptr);
		break;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
		*(unsigned *)data = 0;
		break;
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
		*(unsigned long long *)data = 0;
		break;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		*(CUmemoryPool *)data = NULL;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/* Range and mapping questions also have answers inside a bare reservation. */
static CUresult pointer_range_attr(void *data, CUpointer_attribute attr, uintptr_t ptr,
				   int mapped)
{
	struct sd_region r;

	if (!(mapped ? sd_region_find(ptr, &r) : sd_reserve_region(ptr, &r)))
		return CUDA_ERROR_INVALID_VALUE;
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = r.range_base;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = r.range_size;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(unsigned *)data = mapped;
		return CUDA_SUCCESS;
	default:
		return mapped ? pointer_attr(data, attr, ptr, &r) : CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr)
{
	struct sd_region r;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!data)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	return sd_leave(pointer_range_attr(data, attr, ptr, sd_region_find(ptr, &r)));
}
