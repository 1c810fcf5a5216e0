/* SPDX-License-Identifier: MIT */
/*
 * proxy_ops_memory.c - device memory placed where the library says, pinned
 * channel memory, copies, sets, arrays, texture and surface objects.
 */
#include <string.h>

#include "cuda/proxy/proxy_internal.h"

#define CTX(v) ((CUcontext)(uintptr_t)(v))

static CUmemAllocationProp device_prop(CUdevice dev)
{
	CUmemAllocationProp p;

	memset(&p, 0, sizeof(p));
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = dev;
	return p;
}

static CUresult op_vmm_granularity(struct sc_ch_slot *s)
{
	CUmemAllocationProp p = device_prop((CUdevice)s->a[0]);
	size_t g = 0;
	CUresult r = sc_drv.cuMemGetAllocationGranularity(&g, &p,
							  CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);

	s->a[0] = g;
	return r;
}

static CUresult op_vmm_reserve(struct sc_ch_slot *s)
{
	CUdeviceptr p = 0;
	CUresult r = sc_drv.cuMemAddressReserve(&p, (size_t)s->a[0], 0, (CUdeviceptr)s->a[1], 0);

	s->a[0] = p;
	return r;
}

/* Physical memory, mapped at the address the library chose, readable and writable. */
/* Read and write for @owner, and for each device of @peers (bit d: device d). */
static size_t access_list(CUmemLocation owner, uint64_t peers, CUmemAccessDesc *out)
{
	size_t n = 0;

	memset(out, 0, sizeof(*out));
	out[n].location = owner;
	out[n++].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	for (int d = 0; d < 64; d++) {
		if (!(peers >> d & 1) || d == owner.id)
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		out[n].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		out[n].location.id = d;
		out[n++].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	}
	return n;
}

static CUresult op_vmm_map(struct sc_ch_slot *s)
{
	CUdeviceptr at = (CUdeviceptr)s->a[0];
	size_t size = (size_t)s->a[1];
	CUmemAllocationProp p = device_prop((CUdevice)s->a[2]);
	CUmemAccessDesc access[1 + 64];
	size_t n;

	if (s->len == sizeof(p))
		memcpy(&p, s->data, sizeof(p)); /* the program's properties */
	else if (s->len)
		return CUDA_ERROR_INVALID_VALUE;
	CUmemGenericAllocationHandle h = 0;
	CUresult r;

	r = sc_drv.cuMemCreate(&h, size, &p, 0);
	if (r != CUDA_SUCCESS)
		return r;
	if ((r = sc_drv.cuMemMap(at, size, 0, h, 0)) != CUDA_SUCCESS) {
		sc_drv.cuMemRelease(h);
		return r;
	}
	n = access_list(p.location, s->a[3], access);
	if ((r = sc_drv.cuMemSetAccess(at, size, access, n)) != CUDA_SUCCESS) {
		sc_drv.cuMemUnmap(at, size);
		sc_drv.cuMemRelease(h);
		return r;
	}
	s->a[0] = (uint64_t)h;
	return CUDA_SUCCESS;
}

static CUresult op_vmm_unmap(struct sc_ch_slot *s)
{
	CUresult r = sc_drv.cuMemUnmap((CUdeviceptr)s->a[0], (size_t)s->a[1]);
	CUresult r2 = sc_drv.cuMemRelease((CUmemGenericAllocationHandle)s->a[2]);

	return r != CUDA_SUCCESS ? r : r2;
}

static CUresult op_mem_granularity(struct sc_ch_slot *s)
{
	CUmemAllocationProp p;
	size_t g = 0;
	CUresult r;

	if (s->len != sizeof(p))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&p, s->data, sizeof(p));
	r = sc_drv.cuMemGetAllocationGranularity(&g, &p, (CUmemAllocationGranularity_flags)s->a[0]);
	s->a[0] = g;
	return r;
}

static CUresult op_mem_map(struct sc_ch_slot *s)
{
	return sc_drv.cuMemMap((CUdeviceptr)s->a[0], (size_t)s->a[1], (size_t)s->a[2],
			       (CUmemGenericAllocationHandle)s->a[3], 0);
}

static CUresult op_mem_unmap(struct sc_ch_slot *s)
{
	return sc_drv.cuMemUnmap((CUdeviceptr)s->a[0], (size_t)s->a[1]);
}

static CUresult op_mem_set_access(struct sc_ch_slot *s)
{
	CUmemAccessDesc desc[SC_CH_INLINE / sizeof(CUmemAccessDesc)];
	uint64_t n = s->a[2];

	if (!n || n > sizeof(desc) / sizeof(desc[0]) || n * sizeof(desc[0]) != s->len)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(desc, s->data, s->len);
	return sc_drv.cuMemSetAccess((CUdeviceptr)s->a[0], (size_t)s->a[1], desc, (size_t)n);
}

static CUresult op_mem_get_access(struct sc_ch_slot *s)
{
	CUmemLocation where;
	unsigned long long flags = 0;
	CUresult r;

	if (s->len != sizeof(where))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&where, s->data, sizeof(where));
	r = sc_drv.cuMemGetAccess(&flags, &where, (CUdeviceptr)s->a[0]);
	s->a[0] = flags;
	return r;
}

static CUresult op_heap_register(struct sc_ch_slot *s)
{
	return sc_drv.cuMemHostRegister((void *)(uintptr_t)s->a[0], (size_t)s->a[1],
					CU_MEMHOSTREGISTER_PORTABLE |
						CU_MEMHOSTREGISTER_DEVICEMAP);
}

static CUresult op_host_devptr(struct sc_ch_slot *s)
{
	CUdeviceptr d = 0;
	CUresult r = sc_drv.cuMemHostGetDevicePointer(&d, (void *)(uintptr_t)s->a[0], 0);

	s->a[0] = d;
	return r;
}

/* Synchronous copies and sets, and staged ones whose buffer is reused next. */
static CUresult finish(struct sc_ch_slot *s, CUresult r, CUstream st)
{
	if (r != CUDA_SUCCESS || !(s->flags & SC_MSG_SYNC_STREAM))
		return r;
	return sc_drv.cuStreamSynchronize(st);
}

static CUresult issue_copy(struct sc_ch_slot *s)
{
	uint64_t dst = s->a[0], src = s->a[1];
	size_t n = (size_t)s->a[2];
	CUstream st = STREAM(s->a[4]);

	switch (s->a[3]) {
	case SC_COPY_HTOD:
		return sc_drv.cuMemcpyHtoDAsync(dst, (const void *)(uintptr_t)src, n, st);
	case SC_COPY_DTOH:
		return sc_drv.cuMemcpyDtoHAsync((void *)(uintptr_t)dst, src, n, st);
	case SC_COPY_DTOD:
		return sc_drv.cuMemcpyDtoDAsync(dst, src, n, st);
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult op_copy(struct sc_ch_slot *s)
{
	return finish(s, issue_copy(s), STREAM(s->a[4]));
}

static CUresult op_copy_peer(struct sc_ch_slot *s)
{
	CUstream st = STREAM(s->a[5]);
	CUresult r = sc_drv.cuMemcpyPeerAsync((CUdeviceptr)s->a[0], CTX(s->a[1]),
					      (CUdeviceptr)s->a[2], CTX(s->a[3]), (size_t)s->a[4],
					      st);

	return finish(s, r, st);
}

static CUresult op_copy_2d(struct sc_ch_slot *s)
{
	CUDA_MEMCPY2D c;

	if (s->len != sizeof(c))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&c, s->data, sizeof(c));
	return finish(s, sc_drv.cuMemcpy2DAsync(&c, STREAM(s->a[0])), STREAM(s->a[0]));
}

static CUresult op_copy_3d(struct sc_ch_slot *s)
{
	CUDA_MEMCPY3D c;

	if (s->len != sizeof(c))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&c, s->data, sizeof(c));
	return finish(s, sc_drv.cuMemcpy3DAsync(&c, STREAM(s->a[0])), STREAM(s->a[0]));
}

static CUresult memset_1d(struct sc_ch_slot *s)
{
	CUdeviceptr d = (CUdeviceptr)s->a[0];
	size_t n = (size_t)s->a[3];
	CUstream st = STREAM(s->a[4]);

	switch (s->a[2]) {
	case 1:
		return sc_drv.cuMemsetD8Async(d, (unsigned char)s->a[1], n, st);
	case 2:
		return sc_drv.cuMemsetD16Async(d, (unsigned short)s->a[1], n, st);
	case 4:
		return sc_drv.cuMemsetD32Async(d, (unsigned)s->a[1], n, st);
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult issue_memset(struct sc_ch_slot *s)
{
	CUdeviceptr d = (CUdeviceptr)s->a[0];
	size_t w = (size_t)s->a[3], pitch = (size_t)s->a[5], h = (size_t)s->a[6];
	CUstream st = STREAM(s->a[4]);

	if (!h)
		return memset_1d(s);
	switch (s->a[2]) {
	case 1:
		return sc_drv.cuMemsetD2D8Async(d, pitch, (unsigned char)s->a[1], w, h, st);
	case 2:
		return sc_drv.cuMemsetD2D16Async(d, pitch, (unsigned short)s->a[1], w, h, st);
	case 4:
		return sc_drv.cuMemsetD2D32Async(d, pitch, (unsigned)s->a[1], w, h, st);
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult op_memset(struct sc_ch_slot *s)
{
	return finish(s, issue_memset(s), STREAM(s->a[4]));
}

static CUresult op_array_create(struct sc_ch_slot *s)
{
	CUDA_ARRAY3D_DESCRIPTOR d;
	CUarray a = NULL;
	CUresult r;

	if (s->len != sizeof(d))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&d, s->data, sizeof(d));
	r = sc_drv.cuArray3DCreate(&a, &d);
	s->a[0] = (uint64_t)(uintptr_t)a;
	return r;
}

static CUresult op_array_destroy(struct sc_ch_slot *s)
{
	return sc_drv.cuArrayDestroy((CUarray)(uintptr_t)s->a[0]);
}

static CUresult op_tex_create(struct sc_ch_slot *s)
{
	CUDA_RESOURCE_DESC res;
	CUDA_TEXTURE_DESC tex;
	CUDA_RESOURCE_VIEW_DESC view;
	CUtexObject o = 0;
	CUresult r;

	if (s->len != sizeof(res) + sizeof(tex) + sizeof(view))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&res, s->data, sizeof(res));
	memcpy(&tex, s->data + sizeof(res), sizeof(tex));
	memcpy(&view, s->data + sizeof(res) + sizeof(tex), sizeof(view));
	r = sc_drv.cuTexObjectCreate(&o, &res, &tex, s->a[0] ? &view : NULL);
	s->a[0] = o;
	return r;
}

static CUresult op_tex_destroy(struct sc_ch_slot *s)
{
	return sc_drv.cuTexObjectDestroy((CUtexObject)s->a[0]);
}

static CUresult op_surf_create(struct sc_ch_slot *s)
{
	CUDA_RESOURCE_DESC res;
	CUsurfObject o = 0;
	CUresult r;

	if (s->len != sizeof(res))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&res, s->data, sizeof(res));
	r = sc_drv.cuSurfObjectCreate(&o, &res);
	s->a[0] = o;
	return r;
}

static CUresult op_surf_destroy(struct sc_ch_slot *s)
{
	return sc_drv.cuSurfObjectDestroy((CUsurfObject)s->a[0]);
}

void sc_proxy_ops_memory(sc_proxy_op_fn *t)
{
	t[SC_OP_VMM_GRANULARITY] = op_vmm_granularity;
	t[SC_OP_VMM_RESERVE] = op_vmm_reserve;
	t[SC_OP_VMM_MAP] = op_vmm_map;
	t[SC_OP_VMM_UNMAP] = op_vmm_unmap;
	t[SC_OP_MEM_GRANULARITY] = op_mem_granularity;
	t[SC_OP_MEM_MAP] = op_mem_map;
	t[SC_OP_MEM_UNMAP] = op_mem_unmap;
	t[SC_OP_MEM_SET_ACCESS] = op_mem_set_access;
	t[SC_OP_MEM_GET_ACCESS] = op_mem_get_access;
	t[SC_OP_HEAP_REGISTER] = op_heap_register;
	t[SC_OP_HOST_DEVPTR] = op_host_devptr;
	t[SC_OP_COPY] = op_copy;
	t[SC_OP_COPY_2D] = op_copy_2d;
	t[SC_OP_COPY_PEER] = op_copy_peer;
	t[SC_OP_COPY_3D] = op_copy_3d;
	t[SC_OP_MEMSET] = op_memset;
	t[SC_OP_ARRAY_CREATE] = op_array_create;
	t[SC_OP_ARRAY_DESTROY] = op_array_destroy;
	t[SC_OP_TEX_CREATE] = op_tex_create;
	t[SC_OP_TEX_DESTROY] = op_tex_destroy;
	t[SC_OP_SURF_CREATE] = op_surf_create;
	t[SC_OP_SURF_DESTROY] = op_surf_destroy;
}
