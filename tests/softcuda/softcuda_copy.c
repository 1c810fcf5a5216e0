/* SPDX-License-Identifier: MIT */
/*
 * softcuda_copy.c - memory copies and sets.
 *
 * Every stream runs synchronously, so the asynchronous forms do their work
 * at once, in stream order, after checking the stream. A device side must
 * lie in memory the device knows (with read or write access enabled, for VMM
 * mappings); a host or unified side may be any memory of the process, and
 * is checked only when it falls in memory the device knows.
 *
 * An asynchronous copy or set into a capturing stream becomes a graph node
 * (softcuda_graph.c) and does not run; the synchronous forms are refused while
 * a capture forbids potentially unsafe calls.
 */
#include <sys/mman.h>
#include <string.h>

#include "softcuda_internal.h"

enum sd_side {
	SD_SIDE_HOST,		/* any address; checked where the device knows it */
	SD_SIDE_DEVICE,		/* must be memory the device knows */
};

static CUresult side_check(uintptr_t p, size_t bytes, enum sd_side side, int prot)
{
	struct sd_region r;

	if (!bytes)
		return CUDA_SUCCESS;
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if (side == SD_SIDE_HOST && !sd_region_find(p, &r))
		return CUDA_SUCCESS;
	return sd_range_check(p, bytes, prot);
}

/* A current context and a valid stream, as every copy needs. */
static CUresult copy_begin(CUstream stream)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	return rc ? rc : sd_stream_check(stream);
}

/* The synchronous copies and sets: the legacy stream's, potentially unsafe during a capture. */
static CUresult sync_enter(const char *func)
{
	CUresult rc = sd_enter(func);

	if (rc == CUDA_SUCCESS && (rc = sd_capture_unsafe()) != CUDA_SUCCESS)
		sd_leave(rc);
	return rc;
}

/* A host side is unified memory when both sides may be host memory (cuMemcpyAsync). */
static CUmemorytype side_type(enum sd_side side, enum sd_side other)
{
	if (side == SD_SIDE_DEVICE)
		return CU_MEMORYTYPE_DEVICE;
	return other == SD_SIDE_HOST ? CU_MEMORYTYPE_UNIFIED : CU_MEMORYTYPE_HOST;
}

static CUresult capture_linear(uintptr_t dst, enum sd_side dst_side, uintptr_t src,
			       enum sd_side src_side, size_t bytes, CUstream stream)
{
	CUDA_MEMCPY3D c = {
		.srcMemoryType = side_type(src_side, dst_side),
		.srcHost = (const void *)src,
		.srcDevice = src,
		.dstMemoryType = side_type(dst_side, src_side),
		.dstHost = (void *)dst,
		.dstDevice = dst,
		.WidthInBytes = bytes,
		.Height = 1,
		.Depth = 1,
	};

	if (c.srcMemoryType == CU_MEMORYTYPE_HOST)
		c.srcDevice = 0;
	else
		c.srcHost = NULL;
	if (c.dstMemoryType == CU_MEMORYTYPE_HOST)
		c.dstDevice = 0;
	else
		c.dstHost = NULL;
	return sd_capture_memcpy(stream, &c);
}

static CUresult copy_linear(uintptr_t dst, enum sd_side dst_side, uintptr_t src,
			    enum sd_side src_side, size_t bytes, CUstream stream)
{
	CUresult rc;

	if (sd_capturing(stream))
		return capture_linear(dst, dst_side, src, src_side, bytes, stream);
	rc = copy_begin(stream);

	if (rc == CUDA_SUCCESS)
		rc = side_check(dst, bytes, dst_side, PROT_WRITE);
	if (rc == CUDA_SUCCESS)
		rc = side_check(src, bytes, src_side, PROT_READ);
	if (rc == CUDA_SUCCESS && bytes)
		memmove((void *)dst, (const void *)src, bytes);
	return rc;
}

#define SD_COPY(enter, dst, dside, src, sside, bytes, stream)                            \
	do {                                                                               \
		CUresult rc_ = enter(__func__);                                            \
		return rc_ ? rc_ :                                                         \
			     sd_leave(copy_linear((uintptr_t)(dst), dside, (uintptr_t)(src), \
						  sside, bytes, stream));                  \
	} while (0)

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
	SD_COPY(sync_enter, dst, SD_SIDE_HOST, src, SD_SIDE_HOST, bytes, NULL);
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
	SD_COPY(sd_enter, dst, SD_SIDE_HOST, src, SD_SIDE_HOST, bytes, stream);
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes)
{
	SD_COPY(sync_enter, dst, SD_SIDE_DEVICE, src, SD_SIDE_HOST, bytes, NULL);
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes,
				   CUstream stream)
{
	SD_COPY(sd_enter, dst, SD_SIDE_DEVICE, src, SD_SIDE_HOST, bytes, stream);
}

CUresult CUDAAPI cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes)
{
	SD_COPY(sync_enter, dst, SD_SIDE_HOST, src, SD_SIDE_DEVICE, bytes, NULL);
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
	SD_COPY(sd_enter, dst, SD_SIDE_HOST, src, SD_SIDE_DEVICE, bytes, stream);
}

CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
	SD_COPY(sync_enter, dst, SD_SIDE_DEVICE, src, SD_SIDE_DEVICE, bytes, NULL);
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
				   CUstream stream)
{
	SD_COPY(sd_enter, dst, SD_SIDE_DEVICE, src, SD_SIDE_DEVICE, bytes, stream);
}

/*
 * A side of a peer copy: device memory of the device of @handle, a context
 * the caller names (NULL is none).
 */
static CUresult peer_side_check(uintptr_t p, size_t bytes, CUcontext handle, int prot)
{
	uintptr_t end = p + bytes;
	struct sd_region r;
	struct sd_ctx *ctx;
	CUresult rc;

	if (!handle)
		return CUDA_ERROR_INVALID_CONTEXT;
	if ((rc = sd_ctx_or_current(handle, &ctx)) ||
	    (rc = side_check(p, bytes, SD_SIDE_DEVICE, prot)))
		return rc;
	/* side_check() found one region after another up to the end. */
	for (; p < end; p = r.base + r.size) {
		sd_region_find(p, &r);
		if (r.type != CU_MEMORYTYPE_DEVICE || r.device != ctx->device) {
			sd_log("address 0x%lx is not device memory of device %d",
			       (unsigned long)p, ctx->device);
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	return CUDA_SUCCESS;
}

/*
 * Neither side needs the current context: each names its own. A copy into
 * a capturing stream becomes a node as cuMemcpyDtoDAsync's does.
 */
static CUresult copy_peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
			  CUcontext src_ctx, size_t bytes, CUstream stream)
{
	CUresult rc;

	if ((rc = peer_side_check(dst, bytes, dst_ctx, PROT_WRITE)) ||
	    (rc = peer_side_check(src, bytes, src_ctx, PROT_READ)))
		return rc;
	if (sd_capturing(stream))
		return capture_linear(dst, SD_SIDE_DEVICE, src, SD_SIDE_DEVICE, bytes, stream);
	rc = sd_stream_check(stream);
	if (rc == CUDA_SUCCESS && bytes)
		memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
	return rc;
}

CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
			      CUcontext srcContext, size_t ByteCount)
{
	CUresult rc = sync_enter(__func__);

	return rc ? rc :
		    sd_leave(copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount,
				       NULL));
}

CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
				   CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount,
				   CUstream hStream)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc :
		    sd_leave(copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount,
				       hStream));
}

/* An array seen as its bytes, row after row, for the copies to and from arrays. */
static CUresult array_bytes(CUarray handle, size_t offset, size_t bytes, uintptr_t *p)
{
	struct sd_array *a = sd_array_find(handle);

	if (!a)
		return CUDA_ERROR_INVALID_HANDLE;
	if (offset > a->bytes || bytes > a->bytes - offset)
		return CUDA_ERROR_INVALID_VALUE;
	*p = (uintptr_t)a->data + offset;
	return CUDA_SUCCESS;
}

static CUresult copy_to_array(CUarray dst, size_t offset, uintptr_t src, enum sd_side src_side,
			      size_t bytes, CUstream stream)
{
	uintptr_t p;
	CUresult rc = copy_begin(stream);

	if (rc == CUDA_SUCCESS)
		rc = array_bytes(dst, offset, bytes, &p);
	return rc ? rc : copy_linear(p, SD_SIDE_HOST, src, src_side, bytes, stream);
}

static CUresult copy_from_array(uintptr_t dst, enum sd_side dst_side, CUarray src,
				size_t offset, size_t bytes, CUstream stream)
{
	uintptr_t p;
	CUresult rc = copy_begin(stream);

	if (rc == CUDA_SUCCESS)
		rc = array_bytes(src, offset, bytes, &p);
	return rc ? rc : copy_linear(dst, dst_side, p, SD_SIDE_HOST, bytes, stream);
}

CUresult CUDAAPI cuMemcpyHtoA(CUarray dst, size_t offset, const void *src, size_t bytes)
{
	CUresult rc = sync_enter(__func__);

	return rc ? rc :
		    sd_leave(copy_to_array(dst, offset, (uintptr_t)src, SD_SIDE_HOST, bytes, NULL));
}

CUresult CUDAAPI cuMemcpyHtoAAsync(CUarray dst, size_t offset, const void *src, size_t bytes,
				   CUstream stream)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc :
		    sd_leave(copy_to_array(dst, offset, (uintptr_t)src, SD_SIDE_HOST, bytes,
					   stream));
}

CUresult CUDAAPI cuMemcpyDtoA(CUarray dst, size_t offset, CUdeviceptr src, size_t bytes)
{
	CUresult rc = sync_enter(__func__);

	return rc ? rc : sd_leave(copy_to_array(dst, offset, src, SD_SIDE_DEVICE, bytes, NULL));
}

CUresult CUDAAPI cuMemcpyAtoH(void *dst, CUarray src, size_t offset, size_t bytes)
{
	CUresult rc = sync_enter(__func__);

	return rc ? rc :
		    sd_leave(copy_from_array((uintptr_t)dst, SD_SIDE_HOST, src, offset, bytes,
					     NULL));
}

CUresult CUDAAPI cuMemcpyAtoHAsync(void *dst, CUarray src, size_t offset, size_t bytes,
				   CUstream stream)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc :
		    sd_leave(copy_from_array((uintptr_t)dst, SD_SIDE_HOST, src, offset, bytes,
					     stream));
}

CUresult CUDAAPI cuMemcpyAtoD(CUdeviceptr dst, CUarray src, size_t offset, size_t bytes)
{
	CUresult rc = sync_enter(__func__);

	return rc ? rc :
		    sd_leave(copy_from_array(dst, SD_SIDE_DEVICE, src, offset, bytes, NULL));
}

CUresult CUDAAPI cuMemcpyAtoA(CUarray dst, size_t dst_offset, CUarray src, size_t src_offset,
			      size_t bytes)
{
	uintptr_t p;
	CUresult rc = sync_enter(__func__);

	if (rc)
		return rc;
	rc = array_bytes(src, src_offset, bytes, &p);
	if (rc == CUDA_SUCCESS)
		rc = copy_to_array(dst, dst_offset, p, SD_SIDE_HOST, bytes, NULL);
	return sd_leave(rc);
}

/* One end of a 2D or 3D copy, as CUDA_MEMCPY3D describes it. */
struct sd_end {
	CUmemorytype type;
	uintptr_t host, device;
	CUarray array;
	size_t pitch, height;	/* bytes per row and rows per slice (linear memory) */
	size_t x, y, z;		/* x in bytes */
	/* resolved: */
	unsigned char *base;	/* element (0, 0, 0) */
};

static CUresult end_array(struct sd_end *e, const CUDA_MEMCPY3D *c)
{
	struct sd_array *a = sd_array_find(e->array);

	if (!a)
		return CUDA_ERROR_INVALID_HANDLE;
	e->pitch = a->width * a->elem;
	e->height = a->height;
	if (e->x > e->pitch || c->WidthInBytes > e->pitch - e->x || e->y > a->height ||
	    c->Height > a->height - e->y || e->z > a->depth || c->Depth > a->depth - e->z)
		return CUDA_ERROR_INVALID_VALUE;
	e->base = a->data;
	return CUDA_SUCCESS;
}

#define SD_COORD_MAX (1ULL << 48)	/* sums of coordinates below it cannot overflow */

/* The byte offset of (x, y, z) from the element (0, 0, 0) of linear memory. */
static int end_offset(const struct sd_end *e, size_t x, size_t y, size_t z, size_t *off)
{
	size_t slice, row;

	if (__builtin_mul_overflow(e->pitch, e->height, &slice) ||
	    __builtin_mul_overflow(slice, z, &slice) ||
	    __builtin_mul_overflow(e->pitch, y, &row) ||
	    __builtin_add_overflow(slice, row, off) || __builtin_add_overflow(*off, x, off))
		return -1;
	return 0;
}

/* Linear memory: the rows and slices must fit their pitches, the span the memory. */
static CUresult end_linear(struct sd_end *e, const CUDA_MEMCPY3D *c, enum sd_side side,
			   int prot)
{
	size_t first, last;

	if (e->x >= SD_COORD_MAX || e->y >= SD_COORD_MAX || e->z >= SD_COORD_MAX ||
	    c->WidthInBytes >= SD_COORD_MAX || c->Height >= SD_COORD_MAX ||
	    c->Depth >= SD_COORD_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if ((c->Height > 1 || c->Depth > 1 || e->y) && e->pitch < e->x + c->WidthInBytes)
		return CUDA_ERROR_INVALID_VALUE;
	if ((c->Depth > 1 || e->z) && e->height < e->y + c->Height)
		return CUDA_ERROR_INVALID_VALUE;
	if (end_offset(e, e->x, e->y, e->z, &first) ||
	    end_offset(e, e->x + c->WidthInBytes, e->y + c->Height - 1, e->z + c->Depth - 1,
		       &last) ||
	    (uintptr_t)e->base + last < (uintptr_t)e->base)
		return CUDA_ERROR_INVALID_VALUE;
	return side_check((uintptr_t)e->base + first, last - first, side, prot);
}

static CUresult end_resolve(struct sd_end *e, const CUDA_MEMCPY3D *c, int prot)
{
	switch (e->type) {
	case CU_MEMORYTYPE_ARRAY:
		return end_array(e, c);
	case CU_MEMORYTYPE_HOST:
		e->base = (unsigned char *)e->host;
		return e->base ? end_linear(e, c, SD_SIDE_HOST, prot) : CUDA_ERROR_INVALID_VALUE;
	case CU_MEMORYTYPE_DEVICE:
	case CU_MEMORYTYPE_UNIFIED:
		e->base = (unsigned char *)e->device;
		return e->base ? end_linear(e, c, e->type == CU_MEMORYTYPE_DEVICE ?
					    SD_SIDE_DEVICE : SD_SIDE_HOST, prot) :
				 CUDA_ERROR_INVALID_VALUE;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

static unsigned char *end_row(const struct sd_end *e, size_t row, size_t slice)
{
	return e->base + (e->z + slice) * e->pitch * e->height + (e->y + row) * e->pitch + e->x;
}

CUresult sd_memcpy3d(const CUDA_MEMCPY3D *c, int run)
{
	struct sd_end src, dst;
	size_t row, slice;
	CUresult rc;

	if (!c || c->reserved0 || c->reserved1 || c->srcLOD || c->dstLOD)
		return CUDA_ERROR_INVALID_VALUE;
	src = (struct sd_end){ c->srcMemoryType, (uintptr_t)c->srcHost, c->srcDevice, c->srcArray,
			       c->srcPitch, c->srcHeight, c->srcXInBytes, c->srcY, c->srcZ, NULL };
	dst = (struct sd_end){ c->dstMemoryType, (uintptr_t)c->dstHost, c->dstDevice, c->dstArray,
			       c->dstPitch, c->dstHeight, c->dstXInBytes, c->dstY, c->dstZ, NULL };
	if (!c->WidthInBytes || !c->Height || !c->Depth)
		return CUDA_SUCCESS;
	rc = end_resolve(&src, c, PROT_READ);
	if (rc == CUDA_SUCCESS)
		rc = end_resolve(&dst, c, PROT_WRITE);
	if (rc || !run)
		return rc;
	for (slice = 0; slice < c->Depth; slice++)
		for (row = 0; row < c->Height; row++)
			memmove(end_row(&dst, row, slice), end_row(&src, row, slice),
				c->WidthInBytes);
	return CUDA_SUCCESS;
}

static CUresult copy_3d(const CUDA_MEMCPY3D *c, CUstream stream)
{
	CUresult rc;

	if (sd_capturing(stream))
		return sd_capture_memcpy(stream, c);
	rc = copy_begin(stream);
	return rc ? rc : sd_memcpy3d(c, 1);
}

static CUresult copy_2d(const CUDA_MEMCPY2D *c, CUstream stream)
{
	CUDA_MEMCPY3D c3 = { 0 };

	if (!c)
		return copy_3d(NULL, stream);
	c3.srcXInBytes = c->srcXInBytes;
	c3.srcY = c->srcY;
	c3.srcMemoryType = c->srcMemoryType;
	c3.srcHost = c->srcHost;
	c3.srcDevice = c->srcDevice;
	c3.srcArray = c->srcArray;
	c3.srcPitch = c->srcPitch;
	c3.dstXInBytes = c->dstXInBytes;
	c3.dstY = c->dstY;
	c3.dstMemoryType = c->dstMemoryType;
	c3.dstHost = c->dstHost;
	c3.dstDevice = c->dstDevice;
	c3.dstArray = c->dstArray;
	c3.dstPitch = c->dstPitch;
	c3.WidthInBytes = c->WidthInBytes;
	c3.Height = c->Height;
	c3.Depth = 1;
	return copy_3d(&c3, stream);
}

CUresult CUDAAPI cuMemcpy2D(const CUDA_MEMCPY2D *copy)
{
	CUresult rc = sync_enter(__func__);

	return rc ? rc : sd_leave(copy_2d(copy, NULL));
}

CUresult CUDAAPI cuMemcpy2DUnaligned(const CUDA_MEMCPY2D *copy)
{
	CUresult rc = sync_enter(__func__);

	return rc ? rc : sd_leave(copy_2d(copy, NULL));
}

CUresult CUDAAPI cuMemcpy2DAsync(const CUDA_MEMCPY2D *copy, CUstream stream)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(copy_2d(copy, stream));
}

CUresult CUDAAPI cuMemcpy3D(const CUDA_MEMCPY3D *copy)
{
	CUresult rc = sync_enter(__func__);

	return rc ? rc : sd_leave(copy_3d(copy, NULL));
}

CUresult CUDAAPI cuMemcpy3DAsync(const CUDA_MEMCPY3D *copy, CUstream stream)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(copy_3d(copy, stream));
}

static void fill_row(unsigned char *row, unsigned value, unsigned elem, size_t width)
{
	size_t i;

	if (elem == 1) {
		memset(row, (int)value, width);
		return;
	}
	for (i = 0; i < width; i++) {
		if (elem == 2)
			((uint16_t *)row)[i] = (uint16_t)value;
		else
			((uint32_t *)row)[i] = value;
	}
}

CUresult sd_memset2d(const CUDA_MEMSET_NODE_PARAMS *p, int run)
{
	size_t row_bytes, span, row;
	unsigned elem = p->elementSize;
	CUresult rc;

	if ((elem != 1 && elem != 2 && elem != 4) || p->dst % elem)
		return CUDA_ERROR_INVALID_VALUE;
	if (!p->width || !p->height)
		return CUDA_SUCCESS;
	if (__builtin_mul_overflow(p->width, (size_t)elem, &row_bytes) ||
	    (p->height > 1 && p->pitch < row_bytes) ||
	    __builtin_mul_overflow(p->pitch, p->height - 1, &span) ||
	    __builtin_add_overflow(span, row_bytes, &span))
		return CUDA_ERROR_INVALID_VALUE;
	rc = sd_range_check(p->dst, span, PROT_WRITE);
	for (row = 0; run && rc == CUDA_SUCCESS && row < p->height; row++)
		fill_row((unsigned char *)(uintptr_t)(p->dst + row * p->pitch), p->value, elem,
			 p->width);
	return rc;
}

/* width elements of elem bytes in each of height rows, pitch bytes apart. */
static CUresult memset_2d(CUdeviceptr dst, size_t pitch, unsigned value, unsigned elem,
			  size_t width, size_t height, CUstream stream)
{
	CUDA_MEMSET_NODE_PARAMS p = { dst, pitch, value, elem, width, height };
	CUresult rc;

	if (sd_capturing(stream))
		return sd_capture_memset(stream, &p);
	rc = copy_begin(stream);
	return rc ? rc : sd_memset2d(&p, 1);
}

#define SD_MEMSET(enter, dst, pitch, value, elem, width, height, stream)                 \
	do {                                                                               \
		CUresult rc_ = enter(__func__);                                            \
		return rc_ ? rc_ :                                                         \
			     sd_leave(memset_2d(dst, pitch, value, elem, width, height, stream)); \
	} while (0)

CUresult CUDAAPI cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t n)
{
	SD_MEMSET(sync_enter, dst, n, value, 1, n, 1, NULL);
}

CUresult CUDAAPI cuMemsetD16(CUdeviceptr dst, unsigned short value, size_t n)
{
	SD_MEMSET(sync_enter, dst, 2 * n, value, 2, n, 1, NULL);
}

CUresult CUDAAPI cuMemsetD32(CUdeviceptr dst, unsigned int value, size_t n)
{
	SD_MEMSET(sync_enter, dst, 4 * n, value, 4, n, 1, NULL);
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n,
				 CUstream stream)
{
	SD_MEMSET(sd_enter, dst, n, value, 1, n, 1, stream);
}

CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t n,
				  CUstream stream)
{
	SD_MEMSET(sd_enter, dst, 2 * n, value, 2, n, 1, stream);
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t n,
				  CUstream stream)
{
	SD_MEMSET(sd_enter, dst, 4 * n, value, 4, n, 1, stream);
}

CUresult CUDAAPI cuMemsetD2D8(CUdeviceptr dst, size_t pitch, unsigned char value, size_t width,
			      size_t height)
{
	SD_MEMSET(sync_enter, dst, pitch, value, 1, width, height, NULL);
}

CUresult CUDAAPI cuMemsetD2D16(CUdeviceptr dst, size_t pitch, unsigned short value,
			       size_t width, size_t height)
{
	SD_MEMSET(sync_enter, dst, pitch, value, 2, width, height, NULL);
}

CUresult CUDAAPI cuMemsetD2D32(CUdeviceptr dst, size_t pitch, unsigned int value, size_t width,
			       size_t height)
{
	SD_MEMSET(sync_enter, dst, pitch, value, 4, width, height, NULL);
}

CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr dst, size_t pitch, unsigned char value,
				   size_t width, size_t height, CUstream stream)
{
	SD_MEMSET(sd_enter, dst, pitch, value, 1, width, height, stream);
}

CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr dst, size_t pitch, unsigned short value,
				    size_t width, size_t height, CUstream stream)
{
	SD_MEMSET(sd_enter, dst, pitch, value, 2, width, height, stream);
}

CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr dst, size_t pitch, unsigned int value,
				    size_t width, size_t height, CUstream stream)
{
	SD_MEMSET(sd_enter, dst, pitch, value, 4, width, height, stream);
}
