/* SPDX-License-Identifier: MIT */
/*
 * api_array.c - CUDA arrays, texture objects and surface objects.
 *
 * A CUarray is the library's object, like a stream: the proxy's handle in it
 * changes at a restart, so it is read only with the API lock held. The array
 * keeps its descriptor (a 2D array is a 3D one of depth 0) and its size, for
 * a restart to make it again and fill it.
 *
 * Texture and surface objects are different: kernels receive them by value,
 * so the application holds the driver's own value. The object kept here is
 * found again by that value and holds the descriptors as the application gave
 * them (with the library's array handle), for a restart to create the same
 * object again and check that the driver hands back the same value.
 */
#include <string.h>

#include "cuda/lib/cuda_internal.h"

/*
 * The driver numbers texture and surface objects in the order it makes them,
 * and a restart re-creates them in the order of the live list. Making (and
 * destroying) them one at a time keeps the two orders the same.
 */
static pthread_mutex_t value_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- arrays ---- */

/*
 * What a checkpoint must save of the array. Arrays whose contents are not
 * rows of whole elements, or whose memory is mapped apart from the array,
 * could not be saved and filled again, so they are refused up front.
 */
static CUresult array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, size_t *bytes)
{
	size_t eb = sc_array_element_bytes(d), h = d->Height ? d->Height : 1, z = d->Depth ? d->Depth : 1;

	if (d->Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
		return sc_cu_unsupported("cuArray3DCreate of a sparse or deferred-mapping array");
	if (!eb)
		return sc_cu_unsupported("cuArray3DCreate with a block-compressed or video format");
	if (__builtin_mul_overflow(eb, d->Width, bytes) ||
	    __builtin_mul_overflow(*bytes, h, bytes) || __builtin_mul_overflow(*bytes, z, bytes))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static CUresult array_create(CUarray *ph, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	struct sc_cu_ctx *c = sc_ctx_current();
	struct sc_req r = { .op = SC_OP_ARRAY_CREATE };
	struct sc_cu_array *a;
	size_t bytes = 0;
	CUresult res;

	if (!ph || !d)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = array_bytes(d, &bytes)) != CUDA_SUCCESS)
		return res;
	if (!c)
		return sc_ctx_missing();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if (!(a = sc_obj_new(SC_K_ARRAY, sizeof(*a), c))) {
		sc_cu_leave();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->desc = *d;
	a->bytes = bytes;
	r.ctx = c->o.real;
	r.in = &a->desc;
	r.in_len = sizeof(a->desc);
	if ((res = sc_cu_call(&r)) == CUDA_SUCCESS) {
		a->o.real = r.a[0];
		*ph = (CUarray)a;
	} else {
		sc_obj_free(a);
	}
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuArray3DCreate(CUarray *pHandle,
					   const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
	return array_create(pHandle, pAllocateArray);
}

SC_CU_API CUresult CUDAAPI cuArrayCreate(CUarray *pHandle,
					 const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
	CUDA_ARRAY3D_DESCRIPTOR d;

	if (!pAllocateArray)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&d, 0, sizeof(d));
	d.Width = pAllocateArray->Width;
	d.Height = pAllocateArray->Height;
	d.Format = pAllocateArray->Format;
	d.NumChannels = pAllocateArray->NumChannels;
	return array_create(pHandle, &d);
}

SC_CU_API CUresult CUDAAPI cuArrayDestroy(CUarray hArray)
{
	struct sc_cu_array *a = sc_obj_get(hArray, SC_K_ARRAY);
	struct sc_req r = { .op = SC_OP_ARRAY_DESTROY };
	CUresult res;

	if (!a)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	r.ctx = sc_obj_ctx_real(&a->o);
	r.a[0] = a->o.real;
	if ((res = sc_cu_call(&r)) == CUDA_SUCCESS)
		sc_obj_free(a);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor,
						  CUarray hArray)
{
	struct sc_cu_array *a = sc_obj_get(hArray, SC_K_ARRAY);

	if (!pArrayDescriptor)
		return CUDA_ERROR_INVALID_VALUE;
	if (!a)
		return CUDA_ERROR_INVALID_HANDLE;
	*pArrayDescriptor = a->desc;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor,
						CUarray hArray)
{
	struct sc_cu_array *a = sc_obj_get(hArray, SC_K_ARRAY);

	if (!pArrayDescriptor)
		return CUDA_ERROR_INVALID_VALUE;
	if (!a)
		return CUDA_ERROR_INVALID_HANDLE;
	memset(pArrayDescriptor, 0, sizeof(*pArrayDescriptor));
	pArrayDescriptor->Width = a->desc.Width;
	pArrayDescriptor->Height = a->desc.Height;
	pArrayDescriptor->Format = a->desc.Format;
	pArrayDescriptor->NumChannels = a->desc.NumChannels;
	return CUDA_SUCCESS;
}

/* ---- texture and surface objects ---- */

/* The resource as the proxy must see it: its array handle, not ours (API lock held). */
static CUresult resource_real(const CUDA_RESOURCE_DESC *in, CUDA_RESOURCE_DESC *out,
			      const char *who)
{
	struct sc_cu_array *a;

	*out = *in;
	switch (in->resType) {
	case CU_RESOURCE_TYPE_ARRAY:
		if (!(a = sc_obj_get(in->res.array.hArray, SC_K_ARRAY)))
			return CUDA_ERROR_INVALID_HANDLE;
		out->res.array.hArray = (CUarray)(uintptr_t)a->o.real;
		return CUDA_SUCCESS;
	case CU_RESOURCE_TYPE_LINEAR:
	case CU_RESOURCE_TYPE_PITCH2D:
		return CUDA_SUCCESS; /* device pointers are the same in the proxy */
	case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
		return sc_cu_unsupported(who);
	}
	return CUDA_ERROR_INVALID_VALUE;
}

/* Ask the proxy for the object @t describes; its value becomes t->o.real. */
static CUresult value_make(struct sc_cu_texobj *t)
{
	bool surface = t->o.kind == SC_K_SURFOBJ;
	CUDA_RESOURCE_DESC res;
	uint8_t data[sizeof(res) + sizeof(t->tex) + sizeof(t->view)];
	struct sc_req r = { .op = surface ? SC_OP_SURF_CREATE : SC_OP_TEX_CREATE,
			    .ctx = sc_obj_ctx_real(&t->o), .a = { t->has_view }, .in = data,
			    .in_len = surface ? sizeof(res) : sizeof(data) };
	CUresult rc = resource_real(&t->res, &res, surface ?
				    "cuSurfObjectCreate with a mipmapped array" :
				    "cuTexObjectCreate with a mipmapped array");

	if (rc != CUDA_SUCCESS)
		return rc;
	memcpy(data, &res, sizeof(res));
	memcpy(data + sizeof(res), &t->tex, sizeof(t->tex));
	memcpy(data + sizeof(res) + sizeof(t->tex), &t->view, sizeof(t->view));
	if ((rc = sc_cu_call(&r)) == CUDA_SUCCESS)
		t->o.real = r.a[0];
	return rc;
}

static CUresult value_create(enum sc_cu_kind kind, uint64_t *out, const CUDA_RESOURCE_DESC *res,
			     const CUDA_TEXTURE_DESC *tex, const CUDA_RESOURCE_VIEW_DESC *view)
{
	struct sc_cu_ctx *c = sc_ctx_current();
	struct sc_cu_texobj *t;
	CUresult rc;

	if (!c)
		return sc_ctx_missing();
	if ((rc = sc_cu_enter()) != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&value_lock);
	if (!(t = sc_obj_new(kind, sizeof(*t), c))) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	t->res = *res;
	if (tex)
		t->tex = *tex;
	if (view) {
		t->view = *view;
		t->has_view = true;
	}
	if ((rc = value_make(t)) == CUDA_SUCCESS)
		*out = t->o.real;
	else
		sc_obj_free(t);
out:
	pthread_mutex_unlock(&value_lock);
	sc_cu_leave();
	return rc;
}

static CUresult value_destroy(enum sc_cu_kind kind, uint64_t v)
{
	struct sc_cu_texobj *t;
	struct sc_req r = { .op = kind == SC_K_SURFOBJ ? SC_OP_SURF_DESTROY : SC_OP_TEX_DESTROY,
			    .a = { v } };
	CUresult rc;

	if ((rc = sc_cu_enter()) != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&value_lock);
	if (!(t = sc_obj_find_value(kind, v))) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else {
		r.ctx = sc_obj_ctx_real(&t->o);
		if ((rc = sc_cu_call(&r)) == CUDA_SUCCESS)
			sc_obj_free(t);
	}
	pthread_mutex_unlock(&value_lock);
	sc_cu_leave();
	return rc;
}

SC_CU_API CUresult CUDAAPI cuTexObjectCreate(CUtexObject *pTexObject,
					     const CUDA_RESOURCE_DESC *pResDesc,
					     const CUDA_TEXTURE_DESC *pTexDesc,
					     const CUDA_RESOURCE_VIEW_DESC *pResViewDesc)
{
	uint64_t v = 0;
	CUresult rc;

	if (!pTexObject || !pResDesc || !pTexDesc)
		return CUDA_ERROR_INVALID_VALUE;
	rc = value_create(SC_K_TEXOBJ, &v, pResDesc, pTexDesc, pResViewDesc);
	if (rc == CUDA_SUCCESS)
		*pTexObject = (CUtexObject)v;
	return rc;
}

SC_CU_API CUresult CUDAAPI cuTexObjectDestroy(CUtexObject texObject)
{
	return value_destroy(SC_K_TEXOBJ, texObject);
}

SC_CU_API CUresult CUDAAPI cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc,
						      CUtexObject texObject)
{
	struct sc_cu_texobj *t = sc_obj_find_value(SC_K_TEXOBJ, texObject);

	if (!pResDesc)
		return CUDA_ERROR_INVALID_VALUE;
	if (!t)
		return CUDA_ERROR_INVALID_HANDLE;
	*pResDesc = t->res;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *pTexDesc,
						     CUtexObject texObject)
{
	struct sc_cu_texobj *t = sc_obj_find_value(SC_K_TEXOBJ, texObject);

	if (!pTexDesc)
		return CUDA_ERROR_INVALID_VALUE;
	if (!t)
		return CUDA_ERROR_INVALID_HANDLE;
	*pTexDesc = t->tex;
	return CUDA_SUCCESS;
}

/* As in CUDA, an object made without a view has none to give. */
SC_CU_API CUresult CUDAAPI cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC *pResViewDesc,
							  CUtexObject texObject)
{
	struct sc_cu_texobj *t = sc_obj_find_value(SC_K_TEXOBJ, texObject);

	if (!pResViewDesc)
		return CUDA_ERROR_INVALID_VALUE;
	if (!t)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!t->has_view)
		return CUDA_ERROR_INVALID_VALUE;
	*pResViewDesc = t->view;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuSurfObjectCreate(CUsurfObject *pSurfObject,
					      const CUDA_RESOURCE_DESC *pResDesc)
{
	uint64_t v = 0;
	CUresult rc;

	if (!pSurfObject || !pResDesc)
		return CUDA_ERROR_INVALID_VALUE;
	rc = value_create(SC_K_SURFOBJ, &v, pResDesc, NULL, NULL);
	if (rc == CUDA_SUCCESS)
		*pSurfObject = (CUsurfObject)v;
	return rc;
}

SC_CU_API CUresult CUDAAPI cuSurfObjectDestroy(CUsurfObject surfObject)
{
	return value_destroy(SC_K_SURFOBJ, surfObject);
}

SC_CU_API CUresult CUDAAPI cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc,
						       CUsurfObject surfObject)
{
	struct sc_cu_texobj *t = sc_obj_find_value(SC_K_SURFOBJ, surfObject);

	if (!pResDesc)
		return CUDA_ERROR_INVALID_VALUE;
	if (!t)
		return CUDA_ERROR_INVALID_HANDLE;
	*pResDesc = t->res;
	return CUDA_SUCCESS;
}
