/* SPDX-License-Identifier: MIT */
/*
 * api_copy2d.c - 2D and 3D copies, and copies to and from CUDA arrays.
 *
 * Every copy is handled as a CUDA_MEMCPY3D (a 2D copy is a 3D one of depth 1,
 * and goes back to a CUDA_MEMCPY2D when sent) whose array handles are the
 * proxy's. Device pointers are the same in the proxy and pass unchanged.
 *
 * Host memory inside the channel (from cuMemAllocHost) is at the same address
 * in the proxy and pinned there: it goes as is, and an asynchronous copy of it
 * stays asynchronous. Any other host memory is out of the proxy's reach and is
 * staged: the copy is cut into pieces of whole slices, else whole rows, that
 * each fit one staging buffer; up to SC_CH_STAGING_BUFS pieces are in flight
 * before the stream is synchronised and the buffers are read or used again.
 * Such a copy returns when it is done, as CUDA's copies of pageable memory do.
 *
 * The 1D array copies (cuMemcpyHtoA, ...) see a CUDA array as its rows laid
 * end to end, and become 2D copies of those rows.
 *
 * Entry points whose names end in _ptds and _ptsz are what code built with
 * per-thread default streams calls: synchronous ones run on
 * CU_STREAM_PER_THREAD, asynchronous ones take NULL to mean it.
 */
#include <string.h>

#include "cuda/lib/cuda_internal.h"
#include "cuda/lib/managed.h"

#define COPY_ASYNC 0x1u     /* the caller does not wait: it names a stream */
#define COPY_UNALIGNED 0x2u /* cuMemcpy2DUnaligned: sent as a 3D copy, which has no
			     * pitch restrictions for copies within the device */

struct copy {
	CUDA_MEMCPY3D c;
	uint64_t stream, ctx; /* the proxy's */
	bool as_2d;           /* send it as a CUDA_MEMCPY2D */
	bool async;
};

/* One end of a copy, source or destination, taken out of a CUDA_MEMCPY3D. */
struct end {
	CUmemorytype type;
	char *host;
	CUdeviceptr dev;
	CUarray array;
	size_t x, y, z, pitch, height;
};

static void get_ends(const CUDA_MEMCPY3D *c, struct end *s, struct end *d)
{
	*s = (struct end){ c->srcMemoryType, (char *)c->srcHost, c->srcDevice, c->srcArray,
			   c->srcXInBytes, c->srcY, c->srcZ, c->srcPitch, c->srcHeight };
	*d = (struct end){ c->dstMemoryType, (char *)c->dstHost, c->dstDevice, c->dstArray,
			   c->dstXInBytes, c->dstY, c->dstZ, c->dstPitch, c->dstHeight };
}

static void set_ends(CUDA_MEMCPY3D *c, const struct end *s, const struct end *d)
{
	c->srcMemoryType = s->type;
	c->srcHost = s->host;
	c->srcDevice = s->dev;
	c->srcArray = s->array;
	c->srcXInBytes = s->x;
	c->srcY = s->y;
	c->srcZ = s->z;
	c->srcPitch = s->pitch;
	c->srcHeight = s->height;
	c->dstMemoryType = d->type;
	c->dstHost = d->host;
	c->dstDevice = d->dev;
	c->dstArray = d->array;
	c->dstXInBytes = d->x;
	c->dstY = d->y;
	c->dstZ = d->z;
	c->dstPitch = d->pitch;
	c->dstHeight = d->height;
}

static void from_2d(const CUDA_MEMCPY2D *p, CUDA_MEMCPY3D *c)
{
	struct end s = { p->srcMemoryType, (char *)p->srcHost, p->srcDevice, p->srcArray,
			 p->srcXInBytes, p->srcY, 0, p->srcPitch, 0 };
	struct end d = { p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray,
			 p->dstXInBytes, p->dstY, 0, p->dstPitch, 0 };

	memset(c, 0, sizeof(*c));
	set_ends(c, &s, &d);
	c->WidthInBytes = p->WidthInBytes;
	c->Height = p->Height;
	c->Depth = 1;
}

static void to_2d(const CUDA_MEMCPY3D *c, CUDA_MEMCPY2D *p)
{
	memset(p, 0, sizeof(*p));
	p->srcXInBytes = c->srcXInBytes;
	p->srcY = c->srcY;
	p->srcMemoryType = c->srcMemoryType;
	p->srcHost = c->srcHost;
	p->srcDevice = c->srcDevice;
	p->srcArray = c->srcArray;
	p->srcPitch = c->srcPitch;
	p->dstXInBytes = c->dstXInBytes;
	p->dstY = c->dstY;
	p->dstMemoryType = c->dstMemoryType;
	p->dstHost = c->dstHost;
	p->dstDevice = c->dstDevice;
	p->dstArray = c->dstArray;
	p->dstPitch = c->dstPitch;
	p->WidthInBytes = c->WidthInBytes;
	p->Height = c->Height;
}

/* ---- translation (API lock held) ---- */

/*
 * A unified pointer inside the channel is host memory; any other is left to
 * the driver as device memory, the only other kind the proxy can reach.
 */
static CUresult end_real(struct end *e)
{
	struct sc_cu_array *a;

	switch (e->type) {
	case CU_MEMORYTYPE_UNIFIED:
		if (sc_cu_in_channel((void *)(uintptr_t)e->dev, 1)) {
			e->type = CU_MEMORYTYPE_HOST;
			e->host = (char *)(uintptr_t)e->dev;
		} else {
			e->type = CU_MEMORYTYPE_DEVICE;
		}
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_HOST:
		return e->host ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	case CU_MEMORYTYPE_DEVICE:
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_ARRAY:
		if (!(a = sc_obj_get(e->array, SC_K_ARRAY)))
			return CUDA_ERROR_INVALID_HANDLE;
		e->array = (CUarray)(uintptr_t)a->o.real;
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

/* The address of row @y of slice @z of the copy, at a host end. */
static char *row_at(const struct end *e, size_t z, size_t y)
{
	return e->host + ((e->z + z) * e->height + e->y + y) * e->pitch + e->x;
}

/* Host memory the proxy cannot see: not (all) inside the channel. */
static bool pageable(const struct end *e, const CUDA_MEMCPY3D *c)
{
	size_t span = ((c->Depth - 1) * e->height + c->Height - 1) * e->pitch + c->WidthInBytes;

	return e->type == CU_MEMORYTYPE_HOST && !sc_cu_in_channel(row_at(e, 0, 0), span);
}

/* CUDA's rules for pitch and slice height, checked here for the end the driver never sees. */
static bool layout_valid(const struct end *e, const CUDA_MEMCPY3D *c)
{
	if ((c->Height > 1 || c->Depth > 1) && e->pitch < c->WidthInBytes + e->x)
		return false;
	return c->Depth <= 1 || e->height >= c->Height + e->y;
}

/* ---- sending ---- */

static CUresult send_copy(const struct copy *cp, const CUDA_MEMCPY3D *c, bool wait)
{
	struct sc_req r = { .op = SC_OP_COPY_3D, .ctx = cp->ctx, .a = { cp->stream },
			    .in = c, .in_len = sizeof(*c) };
	CUDA_MEMCPY2D c2;

	if (cp->as_2d) {
		to_2d(c, &c2);
		r.op = SC_OP_COPY_2D;
		r.in = &c2;
		r.in_len = sizeof(c2);
	}
	return wait ? sc_cu_call(&r) : sc_cu_post(&r);
}

static CUresult stream_wait(const struct copy *cp)
{
	struct sc_req r = { .op = SC_OP_STREAM_SYNC, .ctx = cp->ctx, .a = { cp->stream } };

	return sc_cu_call(&r);
}

static CUresult copy_direct(const struct copy *cp)
{
	CUresult res;

	if (cp->async)
		return send_copy(cp, &cp->c, false);
	if ((res = send_copy(cp, &cp->c, true)) != CUDA_SUCCESS)
		return res;
	return stream_wait(cp);
}

/* Pageable to pageable: nothing the device does can touch either side. */
static CUresult copy_local(const CUDA_MEMCPY3D *c, const struct end *s, const struct end *d)
{
	for (size_t z = 0; z < c->Depth; z++)
		for (size_t y = 0; y < c->Height; y++)
			memmove(row_at(d, z, y), row_at(s, z, y), c->WidthInBytes);
	return CUDA_SUCCESS;
}

/* ---- staging ---- */

/* A part of a staged copy, at offset (x, y, z) of it, its rows packed in @buf. */
struct piece {
	size_t x, y, z, w, h, d;
	char *buf;
};

struct staged {
	const struct copy *cp;
	struct end host;     /* the pageable end */
	bool upload;         /* the pageable end is the source */
	struct piece p[SC_CH_STAGING_BUFS];
	unsigned n;          /* pieces in flight */
};

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

_Static_assert(SC_CH_STAGING_BUF == 8u << 20, "plan_pieces() names the staging buffer's size");

/* How big a piece may be: whole slices, else rows of one slice, else one row by columns. */
static CUresult plan_pieces(const CUDA_MEMCPY3D *c, size_t *w, size_t *h, size_t *d)
{
	const size_t buf = SC_CH_STAGING_BUF;

	*w = c->WidthInBytes;
	*h = c->Height;
	*d = 1;
	if (*w <= buf && *h <= buf / *w)
		*d = min_size(c->Depth, buf / (*w * *h));
	else if (*w <= buf)
		*h = buf / *w;
	else if (c->Height == 1 && c->Depth == 1)
		*w = buf;
	else
		return sc_cu_unsupported("a copy of pageable host memory with rows of more than "
					 "8 MiB (the staging buffer); use cuMemAllocHost memory");
	return CUDA_SUCCESS;
}

/* Between the application's rows and the packed rows of the staging buffer. */
static void piece_rows(const struct staged *st, const struct piece *pc)
{
	const struct end *e = &st->host;
	bool dense = e->pitch == pc->w; /* rows follow each other: a slice in one go */
	size_t run = dense ? pc->w * pc->h : pc->w, rows = dense ? 1 : pc->h;
	char *stage = pc->buf;

	for (size_t k = 0; k < pc->d; k++)
		for (size_t r = 0; r < rows; r++, stage += run) {
			char *app = row_at(e, pc->z + k, pc->y + r) + pc->x;

			if (st->upload)
				memcpy(stage, app, run);
			else
				memcpy(app, stage, run);
		}
}

/* The copy of one piece: both ends moved to it, the pageable one replaced by its buffer. */
static CUresult piece_send(const struct staged *st, const struct piece *pc)
{
	CUDA_MEMCPY3D c = st->cp->c;
	struct end s, d, *stage;

	get_ends(&c, &s, &d);
	s.x += pc->x, s.y += pc->y, s.z += pc->z;
	d.x += pc->x, d.y += pc->y, d.z += pc->z;
	stage = st->upload ? &s : &d;
	*stage = (struct end){ .type = CU_MEMORYTYPE_HOST, .host = pc->buf, .pitch = pc->w,
			       .height = pc->h };
	set_ends(&c, &s, &d);
	c.WidthInBytes = pc->w;
	c.Height = pc->h;
	c.Depth = pc->d;
	return send_copy(st->cp, &c, true);
}

/* Wait for the pieces in flight; then their buffers may be read and used again. */
static CUresult staged_flush(struct staged *st)
{
	CUresult res = st->n ? stream_wait(st->cp) : CUDA_SUCCESS;

	for (unsigned i = 0; res == CUDA_SUCCESS && !st->upload && i < st->n; i++)
		piece_rows(st, &st->p[i]);
	st->n = 0;
	return res;
}

static CUresult staged_piece(struct staged *st, size_t x, size_t y, size_t z,
			     const size_t max[3])
{
	const CUDA_MEMCPY3D *c = &st->cp->c;
	struct piece *pc;
	CUresult res;

	if (st->n == SC_CH_STAGING_BUFS && (res = staged_flush(st)) != CUDA_SUCCESS)
		return res;
	pc = &st->p[st->n];
	*pc = (struct piece){ x, y, z, min_size(max[0], c->WidthInBytes - x),
			      min_size(max[1], c->Height - y), min_size(max[2], c->Depth - z),
			      sc_ch_staging(sc_cu.base, st->n) };
	if (st->upload)
		piece_rows(st, pc);
	if ((res = piece_send(st, pc)) != CUDA_SUCCESS)
		return res;
	st->n++;
	return CUDA_SUCCESS;
}

/*
 * One staged copy at a time: the buffers are shared. Each piece is a
 * synchronous request, never posted, so a failure stops the copy at once;
 * the transfers already started are waited for before the buffers are let go.
 */
static CUresult copy_staged(const struct copy *cp, const struct end *host, bool upload)
{
	struct staged st = { .cp = cp, .host = *host, .upload = upload };
	const CUDA_MEMCPY3D *c = &cp->c;
	size_t max[3];
	CUresult res;

	if (!layout_valid(host, c))
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = plan_pieces(c, &max[0], &max[1], &max[2])) != CUDA_SUCCESS)
		return res;
	pthread_mutex_lock(&sc_cu.staging_lock);
	for (size_t z = 0; z < c->Depth; z += max[2])
		for (size_t y = 0; y < c->Height; y += max[1])
			for (size_t x = 0; x < c->WidthInBytes; x += max[0])
				if ((res = staged_piece(&st, x, y, z, max)) != CUDA_SUCCESS)
					goto out;
	res = staged_flush(&st);
out:
	if (st.n)
		stream_wait(cp);
	pthread_mutex_unlock(&sc_cu.staging_lock);
	return res;
}

/* ---- the entry points ---- */

/*
 * Managed memory before the copy: the CPU's writes go first, and a copy into
 * it is GPU work to synchronise. Its extent is bounded from above: the
 * destination's last slice and row may end earlier.
 */
static CUresult managed_before(const struct copy *cp)
{
	const CUDA_MEMCPY3D *c = &cp->c;
	size_t rows = c->dstHeight ? c->dstHeight : c->dstY + c->Height;
	size_t n = (c->dstZ + c->Depth) * rows * c->dstPitch + c->dstXInBytes + c->WidthInBytes;
	bool device = c->dstMemoryType == CU_MEMORYTYPE_DEVICE ||
		      c->dstMemoryType == CU_MEMORYTYPE_UNIFIED;

	if (!sc_managed_live())
		return CUDA_SUCCESS;
	return sc_managed_before_work(cp->ctx, cp->stream, device ? c->dstDevice : 0,
				      device && c->dstDevice ? n : 0);
}

/* Translate @cp (the application's handles) and carry it out; API lock held. */
static CUresult copy_one(struct copy *cp, CUstream h)
{
	struct end s, d;
	bool sp, dp;
	CUresult res;

	if ((res = sc_stream_target(h, &cp->stream, &cp->ctx)) != CUDA_SUCCESS)
		return res;
	if ((res = managed_before(cp)) != CUDA_SUCCESS)
		return res;
	get_ends(&cp->c, &s, &d);
	if ((res = end_real(&s)) != CUDA_SUCCESS || (res = end_real(&d)) != CUDA_SUCCESS)
		return res;
	set_ends(&cp->c, &s, &d);
	if (!cp->c.WidthInBytes || !cp->c.Height || !cp->c.Depth)
		return CUDA_SUCCESS;
	sp = pageable(&s, &cp->c);
	dp = pageable(&d, &cp->c);
	if (sp && dp)
		return copy_local(&cp->c, &s, &d);
	if (sp || dp)
		return copy_staged(cp, sp ? &s : &d, sp);
	return copy_direct(cp);
}

/* A synchronous copy is a synchronising call: a pending checkpoint is taken first. */
static CUresult copy_begin(unsigned how)
{
	if (!(how & COPY_ASYNC))
		sc_cu_sync_point();
	return sc_cu_enter();
}

/*
 * ... and once it is done, an earlier asynchronous failure is reported first;
 * a synchronous copy synchronises the legacy stream, for managed memory too.
 */
static CUresult copy_end(unsigned how, CUresult res)
{
	CUresult sticky;

	if (!(how & COPY_ASYNC) && res == CUDA_SUCCESS &&
	    (sticky = sc_cu_take_sticky()) != CUDA_SUCCESS)
		res = sticky;
	if (!(how & COPY_ASYNC) && res == CUDA_SUCCESS && sc_managed_live())
		res = sc_managed_synced(sc_ctx_real(), 0, SC_SYNC_STREAM);
	sc_cu_leave();
	return res;
}

static CUresult copy_2d(const CUDA_MEMCPY2D *p, CUstream h, unsigned how)
{
	struct copy cp = { .as_2d = !(how & COPY_UNALIGNED), .async = how & COPY_ASYNC };
	CUresult res;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	from_2d(p, &cp.c);
	if ((res = copy_begin(how)) != CUDA_SUCCESS)
		return res;
	return copy_end(how, copy_one(&cp, h));
}

static CUresult copy_3d(const CUDA_MEMCPY3D *p, CUstream h, unsigned how)
{
	struct copy cp = { .async = how & COPY_ASYNC };
	CUresult res;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	cp.c = *p;
	if ((res = copy_begin(how)) != CUDA_SUCCESS)
		return res;
	return copy_end(how, copy_one(&cp, h));
}

SC_CU_API CUresult CUDAAPI cuMemcpy2D(const CUDA_MEMCPY2D *pCopy)
{
	return copy_2d(pCopy, NULL, 0);
}

SC_CU_API CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
	return copy_2d(pCopy, CU_STREAM_PER_THREAD, 0);
}

SC_CU_API CUresult CUDAAPI cuMemcpy2DUnaligned(const CUDA_MEMCPY2D *pCopy)
{
	return copy_2d(pCopy, NULL, COPY_UNALIGNED);
}

SC_CU_API CUresult CUDAAPI cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
	return copy_2d(pCopy, CU_STREAM_PER_THREAD, COPY_UNALIGNED);
}

SC_CU_API CUresult CUDAAPI cuMemcpy2DAsync(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
	return copy_2d(pCopy, hStream, COPY_ASYNC);
}

SC_CU_API CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
	return copy_2d(pCopy, hStream ? hStream : CU_STREAM_PER_THREAD, COPY_ASYNC);
}

SC_CU_API CUresult CUDAAPI cuMemcpy3D(const CUDA_MEMCPY3D *pCopy)
{
	return copy_3d(pCopy, NULL, 0);
}

SC_CU_API CUresult CUDAAPI cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy)
{
	return copy_3d(pCopy, CU_STREAM_PER_THREAD, 0);
}

SC_CU_API CUresult CUDAAPI cuMemcpy3DAsync(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
	return copy_3d(pCopy, hStream, COPY_ASYNC);
}

SC_CU_API CUresult CUDAAPI cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
	return copy_3d(pCopy, hStream ? hStream : CU_STREAM_PER_THREAD, COPY_ASYNC);
}

/* ---- 1D copies to and from arrays ---- */

/* A byte range of an array, with the linear memory on the other side of the copy. */
struct array_range {
	CUarray array;
	size_t offset, n;
	struct end linear;   /* host or device memory, at the start of the range */
	bool to_array;
};

/*
 * Bytes in one row of the array, and rows in its first slice, where a byte
 * offset can reach. The driver checks the rest of what it is given.
 */
static CUresult array_rows(CUarray h, size_t *row_bytes, size_t *rows)
{
	struct sc_cu_array *a = sc_obj_get(h, SC_K_ARRAY);
	size_t depth;

	if (!a)
		return CUDA_ERROR_INVALID_HANDLE;
	*rows = a->desc.Height ? a->desc.Height : 1;
	depth = a->desc.Depth ? a->desc.Depth : 1;
	*row_bytes = a->bytes / depth / *rows;
	return *row_bytes ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The range as 2D copies: the rest of a first row, whole rows, the start of a last one. */
static CUresult copy_range(struct array_range *ar, CUstream h, unsigned how)
{
	size_t rb = 0, rows = 0, done = 0;
	CUresult res;

	if ((res = array_rows(ar->array, &rb, &rows)) != CUDA_SUCCESS)
		return res;
	if (ar->offset > rb * rows || ar->n > rb * rows - ar->offset)
		return CUDA_ERROR_INVALID_VALUE;
	while (done < ar->n && res == CUDA_SUCCESS) {
		struct copy cp = { .as_2d = true, .async = how & COPY_ASYNC };
		size_t at = ar->offset + done, left = ar->n - done;
		struct end arr = { .type = CU_MEMORYTYPE_ARRAY, .array = ar->array,
				   .x = at % rb, .y = at / rb };
		struct end lin = ar->linear;
		size_t w = at % rb || left < rb ? min_size(rb - at % rb, left) : rb;
		size_t rows_n = w == rb ? left / rb : 1;

		lin.host = lin.host ? lin.host + done : NULL;
		lin.dev = lin.dev ? lin.dev + done : 0;
		lin.pitch = w;
		set_ends(&cp.c, ar->to_array ? &lin : &arr, ar->to_array ? &arr : &lin);
		cp.c.WidthInBytes = w;
		cp.c.Height = rows_n;
		cp.c.Depth = 1;
		res = copy_one(&cp, h);
		done += w * rows_n;
	}
	return res;
}

static CUresult array_copy(struct array_range *ar, CUstream h, unsigned how)
{
	CUresult res;

	if ((res = copy_begin(how)) != CUDA_SUCCESS)
		return res;
	return copy_end(how, copy_range(ar, h, how));
}

static CUresult htoa(CUarray dst, size_t off, const void *src, size_t n, CUstream h,
		     unsigned how)
{
	struct array_range ar = { dst, off, n, { .type = CU_MEMORYTYPE_HOST, .host = (char *)src },
				  true };

	return array_copy(&ar, h, how);
}

static CUresult atoh(void *dst, CUarray src, size_t off, size_t n, CUstream h, unsigned how)
{
	struct array_range ar = { src, off, n, { .type = CU_MEMORYTYPE_HOST, .host = dst },
				  false };

	return array_copy(&ar, h, how);
}

static CUresult dtoa(CUarray dst, size_t off, CUdeviceptr src, size_t n, CUstream h)
{
	struct array_range ar = { dst, off, n, { .type = CU_MEMORYTYPE_DEVICE, .dev = src },
				  true };

	return array_copy(&ar, h, 0);
}

static CUresult atod(CUdeviceptr dst, CUarray src, size_t off, size_t n, CUstream h)
{
	struct array_range ar = { src, off, n, { .type = CU_MEMORYTYPE_DEVICE, .dev = dst },
				  false };

	return array_copy(&ar, h, 0);
}

SC_CU_API CUresult CUDAAPI cuMemcpyHtoA(CUarray dstArray, size_t dstOffset, const void *srcHost,
					size_t ByteCount)
{
	return htoa(dstArray, dstOffset, srcHost, ByteCount, NULL, 0);
}

SC_CU_API CUresult CUDAAPI cuMemcpyHtoA_v2_ptds(CUarray dstArray, size_t dstOffset,
						const void *srcHost, size_t ByteCount)
{
	return htoa(dstArray, dstOffset, srcHost, ByteCount, CU_STREAM_PER_THREAD, 0);
}

SC_CU_API CUresult CUDAAPI cuMemcpyAtoH(void *dstHost, CUarray srcArray, size_t srcOffset,
					size_t ByteCount)
{
	return atoh(dstHost, srcArray, srcOffset, ByteCount, NULL, 0);
}

SC_CU_API CUresult CUDAAPI cuMemcpyAtoH_v2_ptds(void *dstHost, CUarray srcArray,
						size_t srcOffset, size_t ByteCount)
{
	return atoh(dstHost, srcArray, srcOffset, ByteCount, CU_STREAM_PER_THREAD, 0);
}

SC_CU_API CUresult CUDAAPI cuMemcpyDtoA(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice,
					size_t ByteCount)
{
	return dtoa(dstArray, dstOffset, srcDevice, ByteCount, NULL);
}

SC_CU_API CUresult CUDAAPI cuMemcpyDtoA_v2_ptds(CUarray dstArray, size_t dstOffset,
						CUdeviceptr srcDevice, size_t ByteCount)
{
	return dtoa(dstArray, dstOffset, srcDevice, ByteCount, CU_STREAM_PER_THREAD);
}

SC_CU_API CUresult CUDAAPI cuMemcpyAtoD(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset,
					size_t ByteCount)
{
	return atod(dstDevice, srcArray, srcOffset, ByteCount, NULL);
}

SC_CU_API CUresult CUDAAPI cuMemcpyAtoD_v2_ptds(CUdeviceptr dstDevice, CUarray srcArray,
						size_t srcOffset, size_t ByteCount)
{
	return atod(dstDevice, srcArray, srcOffset, ByteCount, CU_STREAM_PER_THREAD);
}

SC_CU_API CUresult CUDAAPI cuMemcpyHtoAAsync(CUarray dstArray, size_t dstOffset,
					     const void *srcHost, size_t ByteCount,
					     CUstream hStream)
{
	return htoa(dstArray, dstOffset, srcHost, ByteCount, hStream, COPY_ASYNC);
}

SC_CU_API CUresult CUDAAPI cuMemcpyHtoAAsync_v2_ptsz(CUarray dstArray, size_t dstOffset,
						     const void *srcHost, size_t ByteCount,
						     CUstream hStream)
{
	return htoa(dstArray, dstOffset, srcHost, ByteCount,
		    hStream ? hStream : CU_STREAM_PER_THREAD, COPY_ASYNC);
}

SC_CU_API CUresult CUDAAPI cuMemcpyAtoHAsync(void *dstHost, CUarray srcArray, size_t srcOffset,
					     size_t ByteCount, CUstream hStream)
{
	return atoh(dstHost, srcArray, srcOffset, ByteCount, hStream, COPY_ASYNC);
}

SC_CU_API CUresult CUDAAPI cuMemcpyAtoHAsync_v2_ptsz(void *dstHost, CUarray srcArray,
						     size_t srcOffset, size_t ByteCount,
						     CUstream hStream)
{
	return atoh(dstHost, srcArray, srcOffset, ByteCount,
		    hStream ? hStream : CU_STREAM_PER_THREAD, COPY_ASYNC);
}
