/* SPDX-License-Identifier: MIT */
/*
 * api_memory.c - allocating device and pinned host memory, and asking about it.
 */
#include <string.h>

#include "cuda/lib/cuda_internal.h"
#include "cuda/lib/managed.h"

#define PITCH_ALIGN 512 /* what current GPUs report as texture pitch alignment */

/* A registration of application memory: copies from it are staged. */
struct registered {
	uintptr_t start;
	size_t len;
	struct registered *next;
};

static struct registered *registrations;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

SC_CU_API CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytes)
{
	struct sc_cu_ctx *c = sc_ctx_current();
	CUresult res;

	if (!dptr || !bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (!c)
		return sc_ctx_missing();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = sc_arena_alloc(c, bytes, dptr);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr *dptr, size_t *pitch, size_t width,
					   size_t height, unsigned int element_bytes)
{
	size_t p;

	if (!dptr || !pitch || !width || !height ||
	    (element_bytes != 4 && element_bytes != 8 && element_bytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	p = (width + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
	*pitch = p;
	return cuMemAlloc(dptr, p * height);
}

SC_CU_API CUresult CUDAAPI cuMemFree(CUdeviceptr dptr)
{
	CUresult res;

	if (!dptr)
		return CUDA_SUCCESS;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if (!sc_managed_free(dptr, &res))
		res = sc_arena_free(dptr);
	if (res == CUDA_SUCCESS)
		sc_mempool_freed(dptr); /* memory from a pool may be freed this way too */
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr *base, size_t *size,
						CUdeviceptr dptr)
{
	CUdeviceptr b = 0;
	size_t s = 0;

	if (!sc_devptr_find(dptr, &b, &s))
		return CUDA_ERROR_NOT_FOUND;
	if (base)
		*base = b;
	if (size)
		*size = s;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuMemAllocHost(void **pp, size_t bytes)
{
	CUresult res;

	if (!pp)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sc_ctx_current())
		return sc_ctx_missing();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = sc_host_alloc(bytes, pp);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags)
{
	if (flags & ~(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
		      CU_MEMHOSTALLOC_WRITECOMBINED))
		return CUDA_ERROR_INVALID_VALUE;
	/* Every channel page is portable and mapped; write-combining is only a hint. */
	return cuMemAllocHost(pp, bytes);
}

SC_CU_API CUresult CUDAAPI cuMemFreeHost(void *p)
{
	CUresult res;

	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = sc_host_free(p);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr *dptr, void *p,
						     unsigned int flags)
{
	struct sc_req r = { .op = SC_OP_HOST_DEVPTR, .a = { (uint64_t)(uintptr_t)p } };
	CUresult res;

	if (!dptr || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sc_cu_in_channel(p, 1))
		return sc_cu_unsupported("cuMemHostGetDevicePointer on memory not from "
					 "cuMemAllocHost/cuMemHostAlloc");
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	r.ctx = sc_ctx_real();
	res = sc_cu_call(&r);
	sc_cu_leave();
	if (res == CUDA_SUCCESS)
		*dptr = r.a[0];
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemHostGetFlags(unsigned int *flags, void *p)
{
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sc_cu_in_channel(p, 1))
		return CUDA_ERROR_INVALID_VALUE;
	*flags = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP;
	return CUDA_SUCCESS;
}

/*
 * The proxy cannot pin memory of another process, so a registration is
 * remembered and copies from it are staged: correct, at pageable speed. A
 * kernel cannot reach such memory, so DEVICEMAP is refused.
 */
SC_CU_API CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytes, unsigned int flags)
{
	struct registered *r;
	CUresult res = CUDA_SUCCESS;

	if (!p || !bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & CU_MEMHOSTREGISTER_DEVICEMAP)
		return sc_cu_unsupported("cuMemHostRegister with CU_MEMHOSTREGISTER_DEVICEMAP");
	pthread_mutex_lock(&reg_lock);
	for (r = registrations; r; r = r->next)
		if ((uintptr_t)p < r->start + r->len && r->start < (uintptr_t)p + bytes)
			res = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	if (res == CUDA_SUCCESS && !(r = malloc(sizeof(*r))))
		res = CUDA_ERROR_OUT_OF_MEMORY;
	if (res == CUDA_SUCCESS) {
		*r = (struct registered){ (uintptr_t)p, bytes, registrations };
		registrations = r;
	}
	pthread_mutex_unlock(&reg_lock);
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemHostUnregister(void *p)
{
	struct registered **pp, *r;
	CUresult res = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;

	pthread_mutex_lock(&reg_lock);
	for (pp = &registrations; (r = *pp); pp = &r->next)
		if (r->start == (uintptr_t)p) {
			*pp = r->next;
			free(r);
			res = CUDA_SUCCESS;
			break;
		}
	pthread_mutex_unlock(&reg_lock);
	return res;
}

/* Managed memory is device memory the host reaches at the same address. */
static CUresult device_attribute(void *data, CUpointer_attribute a, struct sc_cu_block *b,
				 CUdeviceptr base, size_t size, CUdeviceptr p)
{
	bool managed = sc_managed_live() && sc_managed_holds(b->addr);

	switch (a) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = (CUcontext)b->ctx;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned *)data = CU_MEMORYTYPE_DEVICE;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = p;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (!managed)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = (void *)(uintptr_t)p;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = base;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = size;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = (int)b->dev;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(unsigned *)data = managed;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(unsigned *)data = 1;
		return CUDA_SUCCESS;
	default:
		return sc_cu_unsupported("cuPointerGetAttribute for this attribute");
	}
}

static CUresult host_attribute(void *data, CUpointer_attribute a, CUdeviceptr p)
{
	switch (a) {
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned *)data = CU_MEMORYTYPE_HOST;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		/* unified addressing: the proxy maps the channel at the same address */
		*(CUdeviceptr *)data = p;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = (CUcontext)sc_ctx_current();
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(unsigned *)data = 0;
		return CUDA_SUCCESS;
	default:
		return sc_cu_unsupported("cuPointerGetAttribute for this attribute");
	}
}

/* A __managed__ variable's memory: the driver's in the proxy, and its host copy here. */
static CUresult variable_attribute(void *data, CUpointer_attribute a, CUdeviceptr p)
{
	struct sc_managed *m;
	struct sc_managed v;
	CUresult res = CUDA_SUCCESS;

	sc_managed_lock();
	m = sc_managed_find(p, 1);
	if (m)
		v = *m;
	sc_managed_unlock();
	if (!m)
		return CUDA_ERROR_INVALID_VALUE;
	switch (a) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = (CUcontext)v.ctx;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned *)data = CU_MEMORYTYPE_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		*(CUdeviceptr *)data = p;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = v.addr;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = v.bytes;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = (int)v.ctx->dev;
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(unsigned *)data = 1;
		break;
	default:
		res = sc_cu_unsupported("cuPointerGetAttribute for this attribute");
	}
	return res;
}

SC_CU_API CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
						 CUdeviceptr p)
{
	CUdeviceptr base = 0;
	size_t size = 0;
	struct sc_cu_block *b;

	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	if ((b = sc_devptr_find(p, &base, &size)))
		return device_attribute(data, attribute, b, base, size, p);
	if (sc_cu_in_channel((void *)(uintptr_t)p, 1))
		return host_attribute(data, attribute, p);
	return sc_managed_live() ? variable_attribute(data, attribute, p) : CUDA_ERROR_INVALID_VALUE;
}

/* The size of what cuPointerGetAttribute writes for @a; 0 for what it does not answer. */
static size_t attribute_size(CUpointer_attribute a)
{
	switch (a) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		return sizeof(void *);
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		return sizeof(CUdeviceptr);
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		return sizeof(size_t);
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
	case CU_POINTER_ATTRIBUTE_MAPPED:
		return sizeof(unsigned);
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		return sizeof(int);
	default:
		return 0;
	}
}

/*
 * One attribute for cuPointerGetAttributes: zero where cuPointerGetAttribute
 * has no value (a pointer that is none of CUDA's, the host address of device
 * memory), which is no error there.
 */
static CUresult attribute_or_zero(void *data, CUpointer_attribute a, CUdeviceptr ptr, bool known)
{
	size_t len = attribute_size(a);
	CUresult res;

	if (!len)
		return sc_cu_unsupported("cuPointerGetAttributes for this attribute");
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	res = known ? cuPointerGetAttribute(data, a, ptr) : CUDA_ERROR_INVALID_VALUE;
	if (res == CUDA_ERROR_INVALID_VALUE) {
		memset(data, 0, len);
		res = CUDA_SUCCESS;
	}
	return res;
}

SC_CU_API CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
						  CUpointer_attribute *attributes, void **data,
						  CUdeviceptr ptr)
{
	bool known = sc_devptr_find(ptr, NULL, NULL) || sc_cu_in_channel((void *)(uintptr_t)ptr, 1) ||
		     (sc_managed_live() && sc_managed_holds(ptr));
	CUresult res = CUDA_SUCCESS;

	if (!attributes || !data)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned i = 0; i < numAttributes && res == CUDA_SUCCESS; i++)
		res = attribute_or_zero(data[i], attributes[i], ptr, known);
	return res;
}
