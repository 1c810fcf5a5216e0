/* SPDX-License-Identifier: MIT */
/*
 * api_copy.c - one-dimensional copies and memory sets.
 *
 * Host memory in the channel (cuMemAllocHost) is read and written by the GPU
 * directly. Any other host memory is staged through the channel's staging
 * buffers in pieces: each piece is a request the proxy finishes (its stream
 * synchronised) before it takes the next, so a buffer is free again once its
 * request is done, while the application thread fills or drains the others.
 */
#include <stdint.h>
#include <string.h>

#include "cuda/lib/cuda_internal.h"
#include "cuda/lib/managed.h"

/* The proxy's stream for an application stream; default streams pass as they are. */
uint64_t sc_stream_real(CUstream s, CUresult *res)
{
	uint64_t real = 0, ctx;

	*res = sc_stream_target(s, &real, &ctx);
	return real;
}

static CUresult copy_request(uint64_t dst, uint64_t src, size_t n, unsigned kind, uint64_t st,
			     bool sync)
{
	struct sc_req r = { .op = SC_OP_COPY, .ctx = sc_ctx_real(),
			    .flags = sync ? SC_MSG_SYNC_STREAM : 0,
			    .a = { dst, src, n, kind, st } };

	return sync ? sc_cu_call(&r) : sc_cu_post(&r);
}

/* Bytes from @host to the end of the pinned piece it lies in. */
static size_t piece_left(uint64_t host)
{
	uint64_t heap = (uint64_t)(uintptr_t)sc_cu.base + SC_CH_HEAP_OFF;

	if (host < heap)
		return SIZE_MAX; /* staging: one registration */
	return SC_CH_HEAP_PIECE - (host - heap) % SC_CH_HEAP_PIECE;
}

/*
 * A copy to or from channel memory. The heap is registered with the driver
 * in pieces as it grows, and a copy may not cross from one registration to
 * the next: such a copy goes as one request per piece, on the same stream,
 * the last one synchronous when the call is.
 */
static CUresult channel_copy(uint64_t dst, uint64_t src, size_t n, unsigned kind, uint64_t st,
			     bool sync)
{
	uint64_t host = kind == SC_COPY_HTOD ? src : dst;
	CUresult res = CUDA_SUCCESS;

	while (n && res == CUDA_SUCCESS) {
		size_t len = n < piece_left(host) ? n : piece_left(host);

		res = copy_request(dst, src, len, kind, st, sync && len == n);
		dst += len;
		src += len;
		host += len;
		n -= len;
	}
	return res;
}

static CUresult stage_to_device(uint64_t ctx, CUdeviceptr dst, const char *src, size_t n,
				uint64_t st)
{
	uint32_t ticket[SC_CH_STAGING_BUFS];
	bool busy[SC_CH_STAGING_BUFS] = { false };
	CUresult res = CUDA_SUCCESS;
	unsigned k = 0;

	for (size_t off = 0; off < n && res == CUDA_SUCCESS; off += SC_CH_STAGING_BUF) {
		size_t len = n - off < SC_CH_STAGING_BUF ? n - off : SC_CH_STAGING_BUF;
		char *buf = sc_ch_staging(sc_cu.base, k);
		struct sc_req r = { .op = SC_OP_COPY, .ctx = ctx, .flags = SC_MSG_SYNC_STREAM,
				    .a = { dst + off, (uint64_t)(uintptr_t)buf, len, SC_COPY_HTOD,
					   st } };

		if (busy[k] && (res = sc_cu_wait_ticket(ticket[k])) != CUDA_SUCCESS)
			break;
		sc_cu_memcpy(buf, src + off, len);
		res = sc_cu_post(&r);
		ticket[k] = r.ticket;
		busy[k] = true;
		k = (k + 1) % SC_CH_STAGING_BUFS;
	}
	for (unsigned i = 0; i < SC_CH_STAGING_BUFS; i++)
		if (busy[i] && res == CUDA_SUCCESS)
			res = sc_cu_wait_ticket(ticket[i]);
	return res != CUDA_SUCCESS ? res : sc_cu_take_sticky();
}

static CUresult stage_from_device(uint64_t ctx, char *dst, CUdeviceptr src, size_t n,
				  uint64_t st)
{
	size_t pieces = (n + SC_CH_STAGING_BUF - 1) / SC_CH_STAGING_BUF, issued = 0;
	uint32_t ticket[SC_CH_STAGING_BUFS];
	CUresult res = CUDA_SUCCESS;

	for (size_t i = 0; i < pieces && res == CUDA_SUCCESS; i++) {
		/* keep every buffer busy: issue ahead up to the number of buffers */
		for (; issued < pieces && issued < i + SC_CH_STAGING_BUFS && res == CUDA_SUCCESS;
		     issued++) {
			size_t off = issued * SC_CH_STAGING_BUF;
			size_t len = n - off < SC_CH_STAGING_BUF ? n - off : SC_CH_STAGING_BUF;
			char *buf = sc_ch_staging(sc_cu.base, issued % SC_CH_STAGING_BUFS);
			struct sc_req r = { .op = SC_OP_COPY, .ctx = ctx,
					    .flags = SC_MSG_SYNC_STREAM,
					    .a = { (uint64_t)(uintptr_t)buf, src + off, len,
						   SC_COPY_DTOH, st } };

			res = sc_cu_post(&r);
			ticket[issued % SC_CH_STAGING_BUFS] = r.ticket;
		}
		if (res != CUDA_SUCCESS ||
		    (res = sc_cu_wait_ticket(ticket[i % SC_CH_STAGING_BUFS])) != CUDA_SUCCESS)
			break;
		if ((res = sc_cu_take_sticky()) != CUDA_SUCCESS)
			break;
		size_t off = i * SC_CH_STAGING_BUF;

		sc_cu_memcpy(dst + off, sc_ch_staging(sc_cu.base, i % SC_CH_STAGING_BUFS),
		       n - off < SC_CH_STAGING_BUF ? n - off : SC_CH_STAGING_BUF);
	}
	return res;
}

CUresult sc_cu_stage_in(uint64_t ctx, CUdeviceptr dst, const void *src, size_t n)
{
	CUresult res;

	pthread_mutex_lock(&sc_cu.staging_lock);
	res = stage_to_device(ctx, dst, src, n, 0);
	pthread_mutex_unlock(&sc_cu.staging_lock);
	return res;
}

CUresult sc_cu_stage_out(uint64_t ctx, void *dst, CUdeviceptr src, size_t n)
{
	CUresult res;

	pthread_mutex_lock(&sc_cu.staging_lock);
	res = stage_from_device(ctx, dst, src, n, 0);
	pthread_mutex_unlock(&sc_cu.staging_lock);
	return res;
}

static CUresult htod(CUdeviceptr dst, const void *src, size_t n, CUstream s, bool sync)
{
	CUresult res;
	uint64_t st = sc_stream_real(s, &res);

	if (res != CUDA_SUCCESS)
		return res;
	if (!n)
		return CUDA_SUCCESS;
	if (!src || !dst)
		return CUDA_ERROR_INVALID_VALUE;
	if (sc_cu_in_channel(src, n))
		return channel_copy(dst, (uint64_t)(uintptr_t)src, n, SC_COPY_HTOD, st, sync);
	pthread_mutex_lock(&sc_cu.staging_lock);
	res = stage_to_device(sc_ctx_real(), dst, src, n, st);
	pthread_mutex_unlock(&sc_cu.staging_lock);
	return res;
}

static CUresult dtoh(void *dst, CUdeviceptr src, size_t n, CUstream s, bool sync)
{
	CUresult res;
	uint64_t st = sc_stream_real(s, &res);

	if (res != CUDA_SUCCESS)
		return res;
	if (!n)
		return CUDA_SUCCESS;
	if (!src || !dst)
		return CUDA_ERROR_INVALID_VALUE;
	if (sc_cu_in_channel(dst, n))
		return channel_copy((uint64_t)(uintptr_t)dst, src, n, SC_COPY_DTOH, st, sync);
	pthread_mutex_lock(&sc_cu.staging_lock);
	res = stage_from_device(sc_ctx_real(), dst, src, n, st);
	pthread_mutex_unlock(&sc_cu.staging_lock);
	return res;
}

/*
 * Between two devices' memory, a peer copy, which the driver makes with or
 * without peer access: the arena's memory is reached from another device
 * only where access was given, so a plain copy from the current device could
 * not read or write the other one's.
 */
static CUresult dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, bool sync)
{
	CUresult res;
	uint64_t st = sc_stream_real(s, &res);
	struct sc_cu_block *d = sc_devptr_find(dst, NULL, NULL), *f = sc_devptr_find(src, NULL, NULL);

	if (res != CUDA_SUCCESS || !n)
		return res;
	if (!d || !f || d->dev == f->dev)
		return copy_request(dst, src, n, SC_COPY_DTOD, st, sync);
	return sc_cu_copy_peer(dst, d->ctx->o.real, src, f->ctx->o.real, n, st, sync);
}

/*
 * Managed memory around a copy or memory set on @s that writes @n bytes at
 * device address @dst (0: none): the CPU's writes go first; a synchronous
 * call is a synchronisation of the legacy stream, as the driver's is.
 */
static CUresult managed_before(CUstream s, CUdeviceptr dst, size_t n)
{
	CUresult res;
	uint64_t st;

	if (!sc_managed_live()) /* every copy passes here: one load when there is none */
		return CUDA_SUCCESS;
	st = sc_stream_real(s, &res);
	return res != CUDA_SUCCESS ? res : sc_managed_before_work(sc_ctx_real(), st, dst,
								 dst ? n : 0);
}

static CUresult managed_after(bool sync)
{
	if (!sync || !sc_managed_live())
		return CUDA_SUCCESS;
	return sc_managed_synced(sc_ctx_real(), 0, SC_SYNC_STREAM);
}

/*
 * The shape of every copy entry point: sync point, lock, managed memory,
 * copy, sticky error.
 */
#define COPY_ENTRY(sync, s, dst, n, call)                                      \
	do {                                                                   \
		CUresult res_, sticky_;                                         \
		if (sync)                                                      \
			sc_cu_sync_point();                                    \
		if ((res_ = sc_cu_enter()) != CUDA_SUCCESS)                    \
			return res_;                                           \
		res_ = sc_ctx_current() ? managed_before(s, dst, n)           \
					: CUDA_ERROR_INVALID_CONTEXT;          \
		if (res_ == CUDA_SUCCESS)                                      \
			res_ = (call);                                         \
		if (res_ == CUDA_SUCCESS)                                      \
			res_ = managed_after(sync);                            \
		sticky_ = (sync) ? sc_cu_take_sticky() : CUDA_SUCCESS;         \
		sc_cu_leave();                                                 \
		return res_ != CUDA_SUCCESS ? res_ : sticky_;                  \
	} while (0)

SC_CU_API CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n)
{
	COPY_ENTRY(true, NULL, dst, n, htod(dst, src, n, NULL, true));
}

SC_CU_API CUresult CUDAAPI cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n)
{
	COPY_ENTRY(true, NULL, 0, 0, dtoh(dst, src, n, NULL, true));
}

SC_CU_API CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	COPY_ENTRY(true, NULL, dst, n, dtod(dst, src, n, NULL, true));
}

SC_CU_API CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n,
					     CUstream s)
{
	COPY_ENTRY(false, s, dst, n, htod(dst, src, n, s, false));
}

SC_CU_API CUresult CUDAAPI cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	COPY_ENTRY(false, s, 0, 0, dtoh(dst, src, n, s, false));
}

SC_CU_API CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n,
					     CUstream s)
{
	COPY_ENTRY(false, s, dst, n, dtod(dst, src, n, s, false));
}

/* Unified addressing: the arena and the program's mappings are device memory; anything else is host. */
static CUresult any_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, bool sync)
{
	bool d_dev = sc_devptr_find(dst, NULL, NULL) != NULL;
	bool s_dev = sc_devptr_find(src, NULL, NULL) != NULL;

	if (d_dev && s_dev)
		return dtod(dst, src, n, s, sync);
	if (d_dev)
		return htod(dst, (const void *)(uintptr_t)src, n, s, sync);
	if (s_dev)
		return dtoh((void *)(uintptr_t)dst, src, n, s, sync);
	memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	COPY_ENTRY(true, NULL, dst, n, any_copy(dst, src, n, NULL, true));
}

SC_CU_API CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	COPY_ENTRY(false, s, dst, n, any_copy(dst, src, n, s, false));
}

static CUresult memset_request(CUdeviceptr d, uint32_t value, unsigned elem, size_t w,
			       size_t pitch, size_t h, CUstream s, bool sync)
{
	CUresult res;
	uint64_t st = sc_stream_real(s, &res);
	struct sc_req r = { .op = SC_OP_MEMSET, .ctx = sc_ctx_real(),
			    .flags = sync ? SC_MSG_SYNC_STREAM : 0,
			    .a = { d, value, elem, w, st, pitch, h } };

	if (res != CUDA_SUCCESS)
		return res;
	return sync ? sc_cu_call(&r) : sc_cu_post(&r);
}

SC_CU_API CUresult CUDAAPI cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n)
{
	COPY_ENTRY(true, NULL, d, n * 1, memset_request(d, v, 1, n, 0, 0, NULL, true));
}

SC_CU_API CUresult CUDAAPI cuMemsetD16(CUdeviceptr d, unsigned short v, size_t n)
{
	COPY_ENTRY(true, NULL, d, n * 2, memset_request(d, v, 2, n, 0, 0, NULL, true));
}

SC_CU_API CUresult CUDAAPI cuMemsetD32(CUdeviceptr d, unsigned int v, size_t n)
{
	COPY_ENTRY(true, NULL, d, n * 4, memset_request(d, v, 4, n, 0, 0, NULL, true));
}

SC_CU_API CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
	COPY_ENTRY(false, s, d, n * 1, memset_request(d, v, 1, n, 0, 0, s, false));
}

SC_CU_API CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n,
					    CUstream s)
{
	COPY_ENTRY(false, s, d, n * 2, memset_request(d, v, 2, n, 0, 0, s, false));
}

SC_CU_API CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s)
{
	COPY_ENTRY(false, s, d, n * 4, memset_request(d, v, 4, n, 0, 0, s, false));
}

SC_CU_API CUresult CUDAAPI cuMemsetD2D8(CUdeviceptr d, size_t pitch, unsigned char v, size_t w,
					size_t h)
{
	COPY_ENTRY(true, NULL, d, pitch * h,
		   memset_request(d, v, 1, w, pitch, h, NULL, true));
}

SC_CU_API CUresult CUDAAPI cuMemsetD2D16(CUdeviceptr d, size_t pitch, unsigned short v,
					 size_t w, size_t h)
{
	COPY_ENTRY(true, NULL, d, pitch * h,
		   memset_request(d, v, 2, w, pitch, h, NULL, true));
}

SC_CU_API CUresult CUDAAPI cuMemsetD2D32(CUdeviceptr d, size_t pitch, unsigned int v, size_t w,
					 size_t h)
{
	COPY_ENTRY(true, NULL, d, pitch * h,
		   memset_request(d, v, 4, w, pitch, h, NULL, true));
}

SC_CU_API CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v,
					     size_t w, size_t h, CUstream s)
{
	COPY_ENTRY(false, s, d, pitch * h,
		   memset_request(d, v, 1, w, pitch, h, s, false));
}

SC_CU_API CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v,
					      size_t w, size_t h, CUstream s)
{
	COPY_ENTRY(false, s, d, pitch * h,
		   memset_request(d, v, 2, w, pitch, h, s, false));
}

SC_CU_API CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned int v,
					      size_t w, size_t h, CUstream s)
{
	COPY_ENTRY(false, s, d, pitch * h,
		   memset_request(d, v, 4, w, pitch, h, s, false));
}
