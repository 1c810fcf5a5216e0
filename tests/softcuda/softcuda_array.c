/* SPDX-License-Identifier: MIT */
/*
 * softcuda_array.c - CUDA arrays, texture objects and surface objects.
 *
 * An array is a host buffer of width x height x depth elements, rows packed.
 * Texture and surface objects are the small integers 1, 2, 3, ... in the
 * order of creation, as the real driver hands them out, each kind counting
 * on its own; a destroyed object's number is not given again. Kernels read
 * and write through softcuda_tex2d_read() and softcuda_surf2d_write().
 */
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

#include "softcuda_internal.h"

#define SD_ARRAY_FLAGS (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | \
			CUDA_ARRAY3D_TEXTURE_GATHER)

struct sd_tex {
	struct sd_obj obj;
	unsigned long long id;
	CUDA_RESOURCE_DESC res;
	CUDA_TEXTURE_DESC desc;
	CUDA_RESOURCE_VIEW_DESC view;
};

struct sd_surf {
	struct sd_obj obj;
	unsigned long long id;
	CUDA_RESOURCE_DESC res;
};

/* The formats with plain elements; the others (normalised, compressed, video) are not here. */
size_t sd_format_bytes(CUarray_format format)
{
	switch (format) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return 1;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4;
	default:
		return 0;
	}
}

static size_t elem_bytes(CUarray_format format, unsigned channels)
{
	if (channels != 1 && channels != 2 && channels != 4)
		return 0;
	return sd_format_bytes(format) * channels;
}

struct sd_array *sd_array_find(CUarray handle)
{
	struct sd_obj *obj = sd_obj_find(SD_ARRAY, handle);

	return obj ? sd_container(obj, struct sd_array, obj) : NULL;
}

/* Height 0 is a 1D array, depth 0 a 2D one; a 3D array needs a height. */
static CUresult check_desc(const CUDA_ARRAY3D_DESCRIPTOR *d, size_t *elem, size_t *bytes)
{
	size_t h = d->Height ? d->Height : 1, dp = d->Depth ? d->Depth : 1;

	*elem = elem_bytes(d->Format, d->NumChannels);
	if (!*elem || !d->Width || (d->Depth && !d->Height && !(d->Flags & CUDA_ARRAY3D_LAYERED)))
		return CUDA_ERROR_INVALID_VALUE;
	if (d->Flags & ~(unsigned)SD_ARRAY_FLAGS)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (d->Width > 131072 || h > 65536 || dp > 16384 ||
	    __builtin_mul_overflow(d->Width * h, dp * *elem, bytes))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static CUresult array_create(CUarray *handle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
	struct sd_array *a;
	struct sd_ctx *ctx;
	size_t elem, bytes;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!handle || !desc)
		return CUDA_ERROR_INVALID_VALUE;
	rc = check_desc(desc, &elem, &bytes);
	if (rc == CUDA_SUCCESS)
		rc = sd_mem_charge(ctx->device, bytes);
	if (rc)
		return rc;
	a = calloc(1, sizeof(*a));
	if (a)
		a->data = calloc(1, bytes);
	if (!a || !a->data) {
		free(a);
		sd_mem_uncharge(ctx->device, bytes);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->desc = *desc;
	a->elem = elem;
	a->width = desc->Width;
	a->height = desc->Height ? desc->Height : 1;
	a->depth = desc->Depth ? desc->Depth : 1;
	a->bytes = bytes;
	a->device = ctx->device;
	sd_obj_add(&a->obj, SD_ARRAY, ctx);
	*handle = (CUarray)a;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuArrayCreate(CUarray *handle, const CUDA_ARRAY_DESCRIPTOR *desc)
{
	CUDA_ARRAY3D_DESCRIPTOR d3 = { 0 };
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (desc) {
		d3.Width = desc->Width;
		d3.Height = desc->Height;
		d3.Format = desc->Format;
		d3.NumChannels = desc->NumChannels;
	}
	return sd_leave(array_create(handle, desc ? &d3 : NULL));
}

CUresult CUDAAPI cuArray3DCreate(CUarray *handle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(array_create(handle, desc));
}

void sd_array_free(struct sd_obj *obj)
{
	struct sd_array *a = sd_container(obj, struct sd_array, obj);

	sd_obj_del(obj);
	sd_mem_uncharge(a->device, a->bytes);
	free(a->data);
	free(a);
}

CUresult CUDAAPI cuArrayDestroy(CUarray handle)
{
	struct sd_array *a;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	a = sd_array_find(handle);
	if (!a)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	sd_array_free(&a->obj);
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR *desc, CUarray handle)
{
	struct sd_array *a;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	a = sd_array_find(handle);
	if (!desc)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if (!a)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	desc->Width = a->desc.Width;
	desc->Height = a->desc.Height;
	desc->Format = a->desc.Format;
	desc->NumChannels = a->desc.NumChannels;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR *desc, CUarray handle)
{
	struct sd_array *a;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	a = sd_array_find(handle);
	if (!desc)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if (!a)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	*desc = a->desc;
	return sd_leave(CUDA_SUCCESS);
}

/* Linear memory behind a texture: device memory at the texture alignment. */
static CUresult check_linear_res(CUdeviceptr p, size_t bytes)
{
	if (p % SD_TEXTURE_ALIGN) {
		sd_log("texture memory 0x%llx is not %lu-byte aligned", p, SD_TEXTURE_ALIGN);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return sd_range_check(p, bytes, PROT_READ);
}

static CUresult check_res(const CUDA_RESOURCE_DESC *r)
{
	size_t elem, row;

	if (!r || r->flags)
		return CUDA_ERROR_INVALID_VALUE;
	switch (r->resType) {
	case CU_RESOURCE_TYPE_ARRAY:
		return sd_array_find(r->res.array.hArray) ? CUDA_SUCCESS :
							     CUDA_ERROR_INVALID_HANDLE;
	case CU_RESOURCE_TYPE_LINEAR:
		elem = elem_bytes(r->res.linear.format, r->res.linear.numChannels);
		if (!elem || !r->res.linear.sizeInBytes || r->res.linear.sizeInBytes % elem)
			return CUDA_ERROR_INVALID_VALUE;
		return check_linear_res(r->res.linear.devPtr, r->res.linear.sizeInBytes);
	case CU_RESOURCE_TYPE_PITCH2D:
		elem = elem_bytes(r->res.pitch2D.format, r->res.pitch2D.numChannels);
		if (!elem || !r->res.pitch2D.width || !r->res.pitch2D.height ||
		    r->res.pitch2D.width > 131072 || r->res.pitch2D.height > 65536 ||
		    r->res.pitch2D.pitchInBytes % SD_TEXTURE_PITCH_ALIGN ||
		    r->res.pitch2D.pitchInBytes < r->res.pitch2D.width * elem)
			return CUDA_ERROR_INVALID_VALUE;
		row = r->res.pitch2D.width * elem;
		return check_linear_res(r->res.pitch2D.devPtr,
					(r->res.pitch2D.height - 1) * r->res.pitch2D.pitchInBytes +
						row);
	default:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
}

static CUresult tex_create(CUtexObject *ptex, const CUDA_RESOURCE_DESC *res,
			   const CUDA_TEXTURE_DESC *desc, const CUDA_RESOURCE_VIEW_DESC *view)
{
	struct sd_tex *t;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!ptex || !desc)
		return CUDA_ERROR_INVALID_VALUE;
	rc = check_res(res);
	if (rc)
		return rc;
	t = calloc(1, sizeof(*t));
	if (!t)
		return CUDA_ERROR_OUT_OF_MEMORY;
	t->id = sd.next_tex++;
	t->res = *res;
	t->desc = *desc;
	if (view)
		t->view = *view;
	sd_obj_add(&t->obj, SD_TEX, ctx);
	*ptex = t->id;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuTexObjectCreate(CUtexObject *ptex, const CUDA_RESOURCE_DESC *res,
				   const CUDA_TEXTURE_DESC *desc,
				   const CUDA_RESOURCE_VIEW_DESC *view)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(tex_create(ptex, res, desc, view));
}

static struct sd_tex *tex_find(CUtexObject id)
{
	struct sd_obj *obj;

	for (obj = sd.objs[SD_TEX]; obj; obj = obj->next)
		if (sd_container(obj, struct sd_tex, obj)->id == id)
			return sd_container(obj, struct sd_tex, obj);
	return NULL;
}

static struct sd_surf *surf_find(CUsurfObject id)
{
	struct sd_obj *obj;

	for (obj = sd.objs[SD_SURF]; obj; obj = obj->next)
		if (sd_container(obj, struct sd_surf, obj)->id == id)
			return sd_container(obj, struct sd_surf, obj);
	return NULL;
}

void sd_tex_free(struct sd_obj *obj)
{
	sd_obj_del(obj);
	free(sd_container(obj, struct sd_tex, obj));
}

void sd_surf_free(struct sd_obj *obj)
{
	sd_obj_del(obj);
	free(sd_container(obj, struct sd_surf, obj));
}

CUresult CUDAAPI cuTexObjectDestroy(CUtexObject tex)
{
	struct sd_tex *t;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	t = tex_find(tex);
	if (!t)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	sd_tex_free(&t->obj);
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *res, CUtexObject tex)
{
	struct sd_tex *t;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	t = tex_find(tex);
	if (!res)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if (!t)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	*res = t->res;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *desc, CUtexObject tex)
{
	struct sd_tex *t;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	t = tex_find(tex);
	if (!desc)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if (!t)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	*desc = t->desc;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC *view, CUtexObject tex)
{
	struct sd_tex *t;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	t = tex_find(tex);
	if (!view)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if (!t)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	*view = t->view;
	return sd_leave(CUDA_SUCCESS);
}

/* Surfaces are arrays created with CUDA_ARRAY3D_SURFACE_LDST, as in CUDA. */
static CUresult surf_create(CUsurfObject *psurf, const CUDA_RESOURCE_DESC *res)
{
	struct sd_surf *s;
	struct sd_array *a;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!psurf || !res || res->flags || res->resType != CU_RESOURCE_TYPE_ARRAY)
		return CUDA_ERROR_INVALID_VALUE;
	a = sd_array_find(res->res.array.hArray);
	if (!a)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!(a->desc.Flags & CUDA_ARRAY3D_SURFACE_LDST))
		return CUDA_ERROR_INVALID_VALUE;
	s = calloc(1, sizeof(*s));
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->id = sd.next_surf++;
	s->res = *res;
	sd_obj_add(&s->obj, SD_SURF, ctx);
	*psurf = s->id;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuSurfObjectCreate(CUsurfObject *psurf, const CUDA_RESOURCE_DESC *res)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(surf_create(psurf, res));
}

CUresult CUDAAPI cuSurfObjectDestroy(CUsurfObject surf)
{
	struct sd_surf *s;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	s = surf_find(surf);
	if (!s)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	sd_surf_free(&s->obj);
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *res, CUsurfObject surf)
{
	struct sd_surf *s;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	s = surf_find(surf);
	if (!res)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if (!s)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	*res = s->res;
	return sd_leave(CUDA_SUCCESS);
}

/* What a kernel sees of a resource: rows of elements. */
struct sd_image2d {
	unsigned char *base;
	size_t elem, pitch, width, height;
};

static int image_of(const CUDA_RESOURCE_DESC *r, struct sd_image2d *img)
{
	struct sd_array *a;

	switch (r->resType) {
	case CU_RESOURCE_TYPE_ARRAY:
		a = sd_array_find(r->res.array.hArray);
		if (!a)
			return -1;
		*img = (struct sd_image2d){ a->data, a->elem, a->width * a->elem, a->width,
					    a->height };
		return 0;
	case CU_RESOURCE_TYPE_LINEAR:
		img->elem = elem_bytes(r->res.linear.format, r->res.linear.numChannels);
		img->base = (unsigned char *)(uintptr_t)r->res.linear.devPtr;
		img->width = r->res.linear.sizeInBytes / img->elem;
		img->pitch = r->res.linear.sizeInBytes;
		img->height = 1;
		return 0;
	case CU_RESOURCE_TYPE_PITCH2D:
		img->elem = elem_bytes(r->res.pitch2D.format, r->res.pitch2D.numChannels);
		img->base = (unsigned char *)(uintptr_t)r->res.pitch2D.devPtr;
		img->pitch = r->res.pitch2D.pitchInBytes;
		img->width = r->res.pitch2D.width;
		img->height = r->res.pitch2D.height;
		return 0;
	default:
		return -1;
	}
}

static size_t clamp(int v, size_t n)
{
	return v < 0 ? 0 : (size_t)v >= n ? n - 1 : (size_t)v;
}

int softcuda_tex2d_read(unsigned long long tex, int x, int y, void *element,
			unsigned element_bytes)
{
	struct sd_image2d img;
	struct sd_tex *t;
	int rc = -1;

	sd_lock();
	t = tex_find(tex);
	if (t && !image_of(&t->res, &img) && img.elem == element_bytes) {
		memcpy(element, img.base + clamp(y, img.height) * img.pitch +
					clamp(x, img.width) * img.elem, img.elem);
		rc = 0;
	}
	sd_unlock();
	return rc;
}

int softcuda_surf2d_write(unsigned long long surf, int x, int y, const void *element,
			  unsigned element_bytes)
{
	struct sd_image2d img;
	struct sd_surf *s;
	int rc = -1;

	sd_lock();
	s = surf_find(surf);
	if (s && !image_of(&s->res, &img) && img.elem == element_bytes && x >= 0 && y >= 0 &&
	    (size_t)x < img.width && (size_t)y < img.height) {
		memcpy(img.base + (size_t)y * img.pitch + (size_t)x * img.elem, element, img.elem);
		rc = 0;
	}
	sd_unlock();
	return rc;
}
