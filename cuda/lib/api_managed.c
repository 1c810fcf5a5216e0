/* SPDX-License-Identifier: MIT */
/*
 * api_managed.c - the managed memory entry points: allocation, advice,
 * prefetching, range attributes, stream attachment (managed.h says how the
 * memory itself works).
 *
 * The device copy is ordinary device memory, which the driver would refuse
 * to advise or prefetch; so advice and prefetch locations are the library's
 * own record, one entry per host page, answered back by
 * cuMemRangeGetAttribute(s) as the driver would. Advice changes where the
 * driver keeps pages, never what a program reads: recording it is all it
 * needs. A prefetch to a device sends the CPU's writes now; one to the host
 * makes the next synchronisation of its stream bring the memory back.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/lib/cuda_internal.h"
#include "cuda/lib/managed.h"

#define CPU_BIT 63 /* accessed_by's bit for the host */

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

SC_CU_API CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned int flags)
{
	struct sc_cu_ctx *c;
	CUresult res;

	if (!dptr || !bytes || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if (!(c = sc_ctx_current()))
		res = sc_ctx_missing();
	else
		res = sc_managed_alloc(c, bytes, dptr);
	sc_cu_leave();
	return res;
}

/* ---- the record of advice and prefetches ---- */

/* The pages of @m that [@p, @p + @n) touches: [*first, *end). */
static void page_span(const struct sc_managed *m, CUdeviceptr p, size_t n, size_t *first,
		      size_t *end)
{
	size_t page = page_size();

	*first = (p - m->addr) / page;
	*end = (p - m->addr + n + page - 1) / page;
}

static CUresult pages_of(struct sc_managed *m)
{
	size_t n = m->host_len / page_size();

	if (!m->pages && !(m->pages = calloc(n, sizeof(*m->pages))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

/* A location the advice or the prefetch may name: a device of the process, or the host. */
static bool location_valid(CUmemLocation loc)
{
	int count = 0;

	switch (loc.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE:
		return cuDeviceGetCount(&count) == CUDA_SUCCESS && loc.id >= 0 && loc.id < count &&
		       loc.id < CPU_BIT;
	case CU_MEM_LOCATION_TYPE_HOST:
	case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
		return true;
	case CU_MEM_LOCATION_TYPE_HOST_NUMA:
		return loc.id >= 0;
	default:
		return false;
	}
}

/* The host, whichever way it was named, as the driver reports it back. */
static CUmemLocation location_kept(CUmemLocation loc)
{
	if (loc.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
		loc.type = CU_MEM_LOCATION_TYPE_HOST;
	if (loc.type == CU_MEM_LOCATION_TYPE_HOST)
		loc.id = 0;
	return loc;
}

static void advise_page(struct sc_managed_page *pg, CUmem_advise advice, CUmemLocation loc)
{
	int bit = loc.type == CU_MEM_LOCATION_TYPE_DEVICE ? loc.id : CPU_BIT;

	switch (advice) {
	case CU_MEM_ADVISE_SET_READ_MOSTLY:
	case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
		pg->read_mostly = advice == CU_MEM_ADVISE_SET_READ_MOSTLY;
		break;
	case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
		pg->preferred_type = (uint8_t)loc.type;
		pg->preferred_id = loc.id;
		break;
	case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
		pg->preferred_type = 0;
		pg->preferred_id = 0;
		break;
	case CU_MEM_ADVISE_SET_ACCESSED_BY:
		pg->accessed_by |= 1ull << bit;
		break;
	case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
		pg->accessed_by &= ~(1ull << bit);
		break;
	}
}

static bool advice_needs_location(CUmem_advise advice)
{
	return advice != CU_MEM_ADVISE_SET_READ_MOSTLY &&
	       advice != CU_MEM_ADVISE_UNSET_READ_MOSTLY &&
	       advice != CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION;
}

SC_CU_API CUresult CUDAAPI cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice,
				       CUmemLocation loc)
{
	struct sc_managed *m;
	size_t first, end;
	CUresult res;

	if (!n || advice < CU_MEM_ADVISE_SET_READ_MOSTLY ||
	    advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY ||
	    (advice_needs_location(advice) && !location_valid(loc)))
		return CUDA_ERROR_INVALID_VALUE;
	loc = location_kept(loc);
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	sc_managed_lock();
	if (!(m = sc_managed_find(p, n)))
		res = CUDA_ERROR_INVALID_VALUE;
	else if ((res = pages_of(m)) == CUDA_SUCCESS) {
		page_span(m, p, n, &first, &end);
		for (size_t i = first; i < end; i++)
			advise_page(&m->pages[i], advice, loc);
	}
	sc_managed_unlock();
	sc_cu_leave();
	return res;
}

static CUresult prefetch(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags, CUstream s)
{
	struct sc_managed *m;
	size_t first, end;
	uint64_t st, ctx;
	CUresult res;

	if (!n || flags || !location_valid(loc))
		return CUDA_ERROR_INVALID_VALUE;
	loc = location_kept(loc);
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if ((res = sc_stream_target(s, &st, &ctx)) != CUDA_SUCCESS)
		goto out;
	sc_managed_lock();
	if (!(m = sc_managed_find(p, n)))
		res = CUDA_ERROR_INVALID_VALUE;
	else if ((res = pages_of(m)) == CUDA_SUCCESS) {
		page_span(m, p, n, &first, &end);
		for (size_t i = first; i < end; i++) {
			m->pages[i].prefetch_type = (uint8_t)loc.type;
			m->pages[i].prefetch_id = loc.id;
		}
	}
	sc_managed_unlock();
	/* to a device: the CPU's writes now; to the host: brought back at the stream's sync */
	if (res == CUDA_SUCCESS)
		res = sc_managed_before_work(ctx, st, p,
					     loc.type == CU_MEM_LOCATION_TYPE_DEVICE ? 0 : n);
out:
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUmemLocation loc,
					      unsigned int flags, CUstream s)
{
	return prefetch(p, n, loc, flags, s);
}

SC_CU_API CUresult CUDAAPI cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t n,
						      CUmemLocation loc, unsigned int flags,
						      CUstream s)
{
	return prefetch(p, n, loc, flags, s ? s : CU_STREAM_PER_THREAD);
}

/* ---- range attributes ---- */

/* The legacy form of a location: a device, CU_DEVICE_CPU, or CU_DEVICE_INVALID. */
static int32_t legacy_location(uint8_t type, int32_t id)
{
	if (type == CU_MEM_LOCATION_TYPE_DEVICE)
		return id;
	if (type == CU_MEM_LOCATION_TYPE_HOST)
		return (int32_t)CU_DEVICE_CPU;
	return (int32_t)CU_DEVICE_INVALID;
}

struct range_view {
	bool read_mostly;       /* on every page */
	uint8_t pref_type, fetch_type; /* 0 where the pages differ or have none */
	int32_t pref_id, fetch_id;
	uint64_t accessed_by;   /* set on every page */
};

static struct range_view view_of(const struct sc_managed *m, size_t first, size_t end)
{
	static const struct sc_managed_page none;
	const struct sc_managed_page *pg = m->pages ? &m->pages[first] : &none;
	struct range_view v = { pg->read_mostly, pg->preferred_type, pg->prefetch_type,
				pg->preferred_id, pg->prefetch_id, pg->accessed_by };

	for (size_t i = first + 1; m->pages && i < end; i++) {
		pg = &m->pages[i];
		v.read_mostly = v.read_mostly && pg->read_mostly;
		v.accessed_by &= pg->accessed_by;
		if (pg->preferred_type != v.pref_type || pg->preferred_id != v.pref_id)
			v.pref_type = 0;
		if (pg->prefetch_type != v.fetch_type || pg->prefetch_id != v.fetch_id)
			v.fetch_type = 0;
	}
	return v;
}

static CUresult accessed_by(const struct range_view *v, int32_t *out, size_t len)
{
	size_t k = 0;

	if (!len || len % 4)
		return CUDA_ERROR_INVALID_VALUE;
	for (int bit = 0; bit < 64 && k < len / 4; bit++)
		if (v->accessed_by & 1ull << bit)
			out[k++] = bit == CPU_BIT ? (int32_t)CU_DEVICE_CPU : bit;
	while (k < len / 4)
		out[k++] = (int32_t)CU_DEVICE_INVALID;
	return CUDA_SUCCESS;
}

static CUresult one_attribute(const struct range_view *v, void *data, size_t len,
			      CUmem_range_attribute a)
{
	int32_t out;

	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	switch (a) {
	case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY:
		return accessed_by(v, data, len);
	case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
		out = v->read_mostly;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
		out = legacy_location(v->pref_type, v->pref_id);
		break;
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
		out = legacy_location(v->fetch_type, v->fetch_id);
		break;
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
		out = v->pref_type;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
		out = v->pref_type ? v->pref_id : 0;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE:
		out = v->fetch_type;
		break;
	case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID:
		out = v->fetch_type ? v->fetch_id : 0;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (len != sizeof(out))
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(data, &out, sizeof(out));
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuMemRangeGetAttributes(void **data, size_t *sizes,
						   CUmem_range_attribute *attrs, size_t n_attrs,
						   CUdeviceptr p, size_t n)
{
	struct range_view v;
	struct sc_managed *m;
	size_t first, end;
	CUresult res = CUDA_SUCCESS;

	if (!data || !sizes || !attrs || !n_attrs || !n)
		return CUDA_ERROR_INVALID_VALUE;
	sc_managed_lock();
	if (!(m = sc_managed_find(p, n))) {
		sc_managed_unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	page_span(m, p, n, &first, &end);
	v = view_of(m, first, end);
	sc_managed_unlock();
	for (size_t i = 0; i < n_attrs && res == CUDA_SUCCESS; i++)
		res = one_attribute(&v, data[i], sizes[i], attrs[i]);
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemRangeGetAttribute(void *data, size_t len,
						  CUmem_range_attribute a, CUdeviceptr p,
						  size_t n)
{
	return cuMemRangeGetAttributes(&data, &len, &a, 1, p, n);
}

/* ---- stream attachment ---- */

/*
 * Attaching an allocation to a stream or to the host narrows which
 * synchronisations make it visible to the CPU; the library brings every
 * allocation back at every synchronisation after GPU work, which covers each
 * attachment. The arguments are checked as the driver does.
 */
static CUresult attach(CUstream s, CUdeviceptr p, size_t n, unsigned flags)
{
	struct sc_managed *m;
	uint64_t st, ctx;
	CUresult res;

	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
	    flags != CU_MEM_ATTACH_SINGLE)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = sc_stream_target(s, &st, &ctx);
	if (res == CUDA_SUCCESS && flags == CU_MEM_ATTACH_SINGLE && sc_stream_is_default(s))
		res = CUDA_ERROR_INVALID_VALUE;
	sc_managed_lock();
	m = sc_managed_find(p, 1);
	if (res == CUDA_SUCCESS && (!m || m->addr != p || (n && n != m->bytes)))
		res = CUDA_ERROR_INVALID_VALUE;
	sc_managed_unlock();
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuStreamAttachMemAsync(CUstream s, CUdeviceptr p, size_t n,
						  unsigned int flags)
{
	return attach(s, p, n, flags);
}

SC_CU_API CUresult CUDAAPI cuStreamAttachMemAsync_ptsz(CUstream s, CUdeviceptr p, size_t n,
						       unsigned int flags)
{
	return attach(s ? s : CU_STREAM_PER_THREAD, p, n, flags);
}

/* ---- batches ---- */

/*
 * The location of operation @i of a batch: prefetchLocs[k] applies from
 * operation prefetchLocIdxs[k] on. NULL where the indexes are not as the
 * driver wants them (the first 0, each greater than the one before, each
 * less than @count).
 */
static const CUmemLocation *batch_location(const CUmemLocation *locs, const size_t *idxs,
					   size_t n_locs, size_t count, size_t i)
{
	const CUmemLocation *at = NULL;

	for (size_t k = 0; k < n_locs; k++) {
		if (idxs[k] >= count || (k == 0 && idxs[k] != 0) || (k > 0 && idxs[k] <= idxs[k - 1]))
			return NULL;
		if (idxs[k] <= i)
			at = &locs[k];
	}
	return at;
}

static CUresult batch_check(CUdeviceptr *dptrs, size_t *sizes, size_t count,
			    unsigned long long flags, CUstream s)
{
	/* the legacy default stream is refused; the per-thread one is not */
	if (!dptrs || !sizes || !count || flags || !s || s == CU_STREAM_LEGACY)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static CUresult prefetch_batch(CUdeviceptr *dptrs, size_t *sizes, size_t count,
			       CUmemLocation *locs, size_t *idxs, size_t n_locs,
			       unsigned long long flags, CUstream s)
{
	CUresult res = batch_check(dptrs, sizes, count, flags, s);

	if (res == CUDA_SUCCESS && (!locs || !idxs || !n_locs || n_locs > count))
		res = CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < count && res == CUDA_SUCCESS; i++) {
		const CUmemLocation *loc = batch_location(locs, idxs, n_locs, count, i);

		res = loc ? prefetch(dptrs[i], sizes[i], *loc, 0, s) : CUDA_ERROR_INVALID_VALUE;
	}
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
						   CUmemLocation *prefetchLocs,
						   size_t *prefetchLocIdxs, size_t numPrefetchLocs,
						   unsigned long long flags, CUstream hStream)
{
	return prefetch_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs,
			      flags, hStream);
}

SC_CU_API CUresult CUDAAPI cuMemPrefetchBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes,
							size_t count, CUmemLocation *prefetchLocs,
							size_t *prefetchLocIdxs,
							size_t numPrefetchLocs,
							unsigned long long flags, CUstream hStream)
{
	return prefetch_batch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs, numPrefetchLocs,
			      flags, hStream ? hStream : CU_STREAM_PER_THREAD);
}

/*
 * A discard lets the driver drop the contents of managed memory; keeping
 * them is one of the outcomes it allows (a read after a discard is
 * undefined), so a discard here checks its ranges and keeps the data.
 */
static CUresult discard_batch(CUdeviceptr *dptrs, size_t *sizes, size_t count,
			      unsigned long long flags, CUstream s)
{
	CUresult res = batch_check(dptrs, sizes, count, flags, s);

	sc_managed_lock();
	for (size_t i = 0; i < count && res == CUDA_SUCCESS; i++)
		if (!sizes[i] || !sc_managed_find(dptrs[i], sizes[i]))
			res = CUDA_ERROR_INVALID_VALUE;
	sc_managed_unlock();
	return res;
}

SC_CU_API CUresult CUDAAPI cuMemDiscardBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
						  unsigned long long flags, CUstream hStream)
{
	return discard_batch(dptrs, sizes, count, flags, hStream);
}

SC_CU_API CUresult CUDAAPI cuMemDiscardBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes,
						       size_t count, unsigned long long flags,
						       CUstream hStream)
{
	return discard_batch(dptrs, sizes, count, flags,
			     hStream ? hStream : CU_STREAM_PER_THREAD);
}

SC_CU_API CUresult CUDAAPI cuMemDiscardAndPrefetchBatchAsync(
	CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,
	size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
	CUstream hStream)
{
	CUresult res = discard_batch(dptrs, sizes, count, flags, hStream);

	return res != CUDA_SUCCESS ? res : prefetch_batch(dptrs, sizes, count, prefetchLocs,
							   prefetchLocIdxs, numPrefetchLocs,
							   flags, hStream);
}

SC_CU_API CUresult CUDAAPI cuMemDiscardAndPrefetchBatchAsync_ptsz(
	CUdeviceptr *dptrs, size_t *sizes, size_t count, CUmemLocation *prefetchLocs,
	size_t *prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
	CUstream hStream)
{
	return cuMemDiscardAndPrefetchBatchAsync(dptrs, sizes, count, prefetchLocs,
						 prefetchLocIdxs, numPrefetchLocs, flags,
						 hStream ? hStream : CU_STREAM_PER_THREAD);
}
