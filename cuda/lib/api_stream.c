/* SPDX-License-Identifier: MIT */
/*
 * api_stream.c - streams and events.
 *
 * A CUstream or CUevent the application holds is the library's object; the
 * proxy's handle inside it is replaced at a restart, so it is read only with
 * the API lock held. The default streams (NULL, CU_STREAM_LEGACY,
 * CU_STREAM_PER_THREAD) are the same constants on both sides and pass
 * unchanged. Records and waits are posted without waiting for the reply:
 * their errors surface at the next synchronising call, as in CUDA.
 *
 * The proxy serves every application thread from one thread of its own, so
 * CU_STREAM_PER_THREAD names one stream there, shared by all of them: work of
 * different threads on their per-thread streams is ordered, never concurrent.
 *
 * The _ptsz entry points are what code built with per-thread default streams
 * calls: the same calls, where a NULL stream means CU_STREAM_PER_THREAD.
 */
#include <string.h>
#include <unistd.h>

#include "cuda/lib/graph.h"
#include "cuda/lib/managed.h"

static CUstream per_thread(CUstream h)
{
	return h ? h : CU_STREAM_PER_THREAD;
}

static CUresult call(unsigned op, uint64_t ctx, uint64_t a0, uint64_t a1, uint64_t *out)
{
	struct sc_req r = { .op = op, .ctx = ctx, .a = { a0, a1 } };
	CUresult res = sc_cu_call(&r);

	if (out)
		*out = r.a[0];
	return res;
}

static CUresult post(unsigned op, uint64_t ctx, uint64_t a0, uint64_t a1, uint64_t a2)
{
	struct sc_req r = { .op = op, .ctx = ctx, .a = { a0, a1, a2 } };

	return sc_cu_post(&r);
}

/*
 * A request that waits for the device. The proxy serves requests in order,
 * so once it answers, every request posted before has been carried out and
 * its failure, if any, is the sticky error: that one is reported first.
 */
static CUresult synchronising(unsigned op, uint64_t ctx, uint64_t a0)
{
	CUresult res = call(op, ctx, a0, 0, NULL);
	CUresult sticky = sc_cu_take_sticky();
	bool stream = op == SC_OP_STREAM_SYNC || op == SC_OP_STREAM_QUERY;

	if (res == CUDA_SUCCESS && sticky == CUDA_SUCCESS && sc_managed_live()) /* work done */
		res = sc_managed_synced(ctx, a0, stream ? SC_SYNC_STREAM : SC_SYNC_EVENT);
	return sticky != CUDA_SUCCESS ? sticky : res;
}

/* ---- streams ---- */

/* CUDA clamps a priority into the device's range; the stream remembers the clamped one. */
static CUresult clamp_priority(struct sc_cu_ctx *c, int *priority)
{
	struct sc_req r = { .op = SC_OP_CTX_PRIORITIES, .ctx = c->o.real };
	CUresult res;
	int least, greatest;

	if (*priority == 0) /* the default is in every range */
		return CUDA_SUCCESS;
	if ((res = sc_cu_call(&r)) != CUDA_SUCCESS)
		return res;
	least = (int)(int64_t)r.a[0];
	greatest = (int)(int64_t)r.a[1];
	if (*priority > least)
		*priority = least;
	if (*priority < greatest)
		*priority = greatest;
	return CUDA_SUCCESS;
}

static CUresult stream_create(CUstream *ph, unsigned flags, int priority)
{
	struct sc_cu_ctx *c = sc_ctx_current();
	struct sc_cu_stream *s = NULL;
	CUresult res;

	if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	if (!c)
		return sc_ctx_missing();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = clamp_priority(c, &priority);
	if (res == CUDA_SUCCESS && !(s = sc_obj_new(SC_K_STREAM, sizeof(*s), c)))
		res = CUDA_ERROR_OUT_OF_MEMORY;
	if (res == CUDA_SUCCESS) {
		s->flags = flags;
		s->priority = priority;
		res = call(SC_OP_STREAM_CREATE, c->o.real, flags, (uint64_t)(int64_t)priority,
			   &s->o.real);
		if (res != CUDA_SUCCESS)
			sc_obj_free(s);
		else
			*ph = (CUstream)s;
	}
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	return stream_create(phStream, Flags, 0);
}

SC_CU_API CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
						      int priority)
{
	return stream_create(phStream, flags, priority);
}

static CUresult stream_destroy(CUstream h)
{
	struct sc_cu_stream *s = sc_obj_get(h, SC_K_STREAM);
	CUresult res;

	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = sc_mempool_stream_ending(h, sc_obj_ctx_real(&s->o), s->o.real);
	if (res == CUDA_SUCCESS)
		res = call(SC_OP_STREAM_DESTROY, sc_obj_ctx_real(&s->o), s->o.real, 0, NULL);
	if (res == CUDA_SUCCESS) {
		sc_capture_stream_gone(s);
		sc_obj_free(s);
	}
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
	return stream_destroy(hStream);
}

/* Synchronising: a pending checkpoint request is served first, with no lock held. */
static CUresult stream_sync(CUstream h)
{
	uint64_t real = 0, ctx = 0;
	CUresult res;

	sc_cu_sync_point();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if ((res = sc_stream_target(h, &real, &ctx)) == CUDA_SUCCESS)
		res = synchronising(SC_OP_STREAM_SYNC, ctx, real);
	if (res == CUDA_SUCCESS) /* what cuMemFreeAsync freed on it can go */
		sc_mempool_synchronised(h, sc_ctx_current(), false);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
	return stream_sync(hStream);
}

SC_CU_API CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream)
{
	return stream_sync(per_thread(hStream));
}

/*
 * A query never blocks, but a program that polls one instead of
 * synchronising must still reach the checkpoint it was asked for.
 */
static CUresult stream_query(CUstream h)
{
	uint64_t real = 0, ctx = 0;
	CUresult res;

	sc_cu_sync_point();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if ((res = sc_stream_target(h, &real, &ctx)) == CUDA_SUCCESS)
		res = synchronising(SC_OP_STREAM_QUERY, ctx, real);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
	return stream_query(hStream);
}

SC_CU_API CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream)
{
	return stream_query(per_thread(hStream));
}

static CUresult stream_wait_event(CUstream h, CUevent e, unsigned flags)
{
	struct sc_cu_event *ev = sc_obj_get(e, SC_K_EVENT);
	uint64_t real = 0, ctx = 0;
	CUresult res;

	if (!ev)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if ((res = sc_stream_target(h, &real, &ctx)) == CUDA_SUCCESS)
		res = post(SC_OP_STREAM_WAIT, ctx, real, ev->o.real, flags);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	return stream_wait_event(hStream, hEvent, Flags);
}

SC_CU_API CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent,
						  unsigned int Flags)
{
	return stream_wait_event(per_thread(hStream), hEvent, Flags);
}

/* The default streams have the default priority and flags; ours remember theirs. */
static CUresult stream_priority(CUstream h, int *priority)
{
	struct sc_cu_stream *s = sc_obj_get(h, SC_K_STREAM);

	if (!priority)
		return CUDA_ERROR_INVALID_VALUE;
	if (!s && !sc_stream_is_default(h))
		return CUDA_ERROR_INVALID_HANDLE;
	*priority = s ? s->priority : 0;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int *priority)
{
	return stream_priority(hStream, priority);
}

SC_CU_API CUresult CUDAAPI cuStreamGetPriority_ptsz(CUstream hStream, int *priority)
{
	return stream_priority(per_thread(hStream), priority);
}

static CUresult stream_flags(CUstream h, unsigned *flags)
{
	struct sc_cu_stream *s = sc_obj_get(h, SC_K_STREAM);

	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!s && !sc_stream_is_default(h))
		return CUDA_ERROR_INVALID_HANDLE;
	*flags = s ? s->flags : CU_STREAM_DEFAULT;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
	return stream_flags(hStream, flags);
}

SC_CU_API CUresult CUDAAPI cuStreamGetFlags_ptsz(CUstream hStream, unsigned int *flags)
{
	return stream_flags(per_thread(hStream), flags);
}

/* A default stream belongs to the calling thread's current context. */
static CUresult stream_ctx(CUstream h, CUcontext *pctx)
{
	struct sc_cu_stream *s = sc_obj_get(h, SC_K_STREAM);
	struct sc_cu_ctx *c;

	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!s && !sc_stream_is_default(h))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!(c = s ? s->o.ctx : sc_ctx_current()))
		return sc_ctx_missing();
	*pctx = (CUcontext)c;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
	return stream_ctx(hStream, pctx);
}

SC_CU_API CUresult CUDAAPI cuStreamGetCtx_ptsz(CUstream hStream, CUcontext *pctx)
{
	return stream_ctx(per_thread(hStream), pctx);
}

/* No green contexts here: every stream belongs to a plain one. */
static CUresult stream_ctx_v2(CUstream h, CUcontext *pctx, CUgreenCtx *pgreen)
{
	CUresult res;

	if (!pctx || !pgreen)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = stream_ctx(h, pctx)) == CUDA_SUCCESS)
		*pgreen = NULL;
	return res;
}

SC_CU_API CUresult CUDAAPI cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx,
					     CUgreenCtx *pGreenCtx)
{
	return stream_ctx_v2(hStream, pCtx, pGreenCtx);
}

SC_CU_API CUresult CUDAAPI cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext *pCtx,
						  CUgreenCtx *pGreenCtx)
{
	return stream_ctx_v2(per_thread(hStream), pCtx, pGreenCtx);
}

/*
 * A stream's id: the library's own number for its streams (the same after a
 * restart); the default streams get one per context, and the per-thread one
 * per context and thread, as the driver's are.
 */
static CUresult stream_id(CUstream h, unsigned long long *id)
{
	struct sc_cu_stream *s = sc_obj_get(h, SC_K_STREAM);
	struct sc_cu_ctx *c;

	if (!id)
		return CUDA_ERROR_INVALID_VALUE;
	if (s) {
		*id = s->o.seq;
		return CUDA_SUCCESS;
	}
	if (!sc_stream_is_default(h))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!(c = sc_ctx_current()))
		return sc_ctx_missing();
	*id = h == CU_STREAM_PER_THREAD ? 1ull << 62 | c->o.seq << 24 | (uint64_t)gettid() % (1u << 24)
					: 1ull << 63 | c->o.seq;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
	return stream_id(hStream, streamId);
}

SC_CU_API CUresult CUDAAPI cuStreamGetId_ptsz(CUstream hStream, unsigned long long *streamId)
{
	return stream_id(per_thread(hStream), streamId);
}

static CUresult stream_device(CUstream h, CUdevice *dev)
{
	CUcontext c = NULL;
	CUresult res;

	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = stream_ctx(h, &c)) == CUDA_SUCCESS)
		*dev = ((struct sc_cu_ctx *)c)->dev;
	return res;
}

SC_CU_API CUresult CUDAAPI cuStreamGetDevice(CUstream hStream, CUdevice *device)
{
	return stream_device(hStream, device);
}

SC_CU_API CUresult CUDAAPI cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device)
{
	return stream_device(per_thread(hStream), device);
}

/* ---- events ---- */

#define EVENT_FLAGS (CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)

SC_CU_API CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	struct sc_cu_ctx *c = sc_ctx_current();
	struct sc_cu_event *e;
	CUresult res;

	if (!phEvent || (Flags & ~(unsigned)EVENT_FLAGS))
		return CUDA_ERROR_INVALID_VALUE;
	if (!c)
		return sc_ctx_missing();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if (!(e = sc_obj_new(SC_K_EVENT, sizeof(*e), c))) {
		sc_cu_leave();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	e->flags = Flags;
	res = call(SC_OP_EVENT_CREATE, c->o.real, Flags, 0, &e->o.real);
	if (res != CUDA_SUCCESS)
		sc_obj_free(e);
	else
		*phEvent = (CUevent)e;
	sc_cu_leave();
	return res;
}

/* On a default stream the event is recorded in its own context, as CUDA requires them to match. */
static CUresult event_record(CUevent h, CUstream st, unsigned flags)
{
	struct sc_cu_event *e = sc_obj_get(h, SC_K_EVENT);
	uint64_t real = (uint64_t)(uintptr_t)st, ctx = 0;
	CUresult res;

	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if (sc_stream_is_default(st))
		ctx = sc_obj_ctx_real(&e->o);
	else
		res = sc_stream_target(st, &real, &ctx);
	if (res == CUDA_SUCCESS)
		res = post(SC_OP_EVENT_RECORD, ctx, e->o.real, real, flags);
	if (res == CUDA_SUCCESS)
		e->recorded = true;
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
	return event_record(hEvent, hStream, CU_EVENT_RECORD_DEFAULT);
}

SC_CU_API CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
	return event_record(hEvent, per_thread(hStream), CU_EVENT_RECORD_DEFAULT);
}

SC_CU_API CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent, CUstream hStream,
						  unsigned int flags)
{
	return event_record(hEvent, hStream, flags);
}

SC_CU_API CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream,
						       unsigned int flags)
{
	return event_record(hEvent, per_thread(hStream), flags);
}

/* Wait for (@op EVENT_SYNC) or ask about (EVENT_QUERY) one event; stream_query says why both
 * serve a pending checkpoint. */
static CUresult event_wait(CUevent h, unsigned op)
{
	struct sc_cu_event *e = sc_obj_get(h, SC_K_EVENT);
	CUresult res;

	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	sc_cu_sync_point();
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = synchronising(op, sc_obj_ctx_real(&e->o), e->o.real);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
	return event_wait(hEvent, SC_OP_EVENT_SYNC);
}

SC_CU_API CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
	return event_wait(hEvent, SC_OP_EVENT_QUERY);
}

static CUresult event_elapsed(float *ms, CUevent start, CUevent end)
{
	struct sc_cu_event *s = sc_obj_get(start, SC_K_EVENT);
	struct sc_cu_event *e = sc_obj_get(end, SC_K_EVENT);
	uint64_t bits = 0;
	uint32_t b32;
	CUresult res;

	if (!ms)
		return CUDA_ERROR_INVALID_VALUE;
	if (!s || !e)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = call(SC_OP_EVENT_ELAPSED, sc_obj_ctx_real(&s->o), s->o.real, e->o.real, &bits);
	sc_cu_leave();
	if (res == CUDA_SUCCESS) {
		b32 = (uint32_t)bits;
		memcpy(ms, &b32, sizeof(*ms));
	}
	return res;
}

SC_CU_API CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	return event_elapsed(pMilliseconds, hStart, hEnd);
}

static CUresult event_destroy(CUevent h)
{
	struct sc_cu_event *e = sc_obj_get(h, SC_K_EVENT);
	CUresult res;

	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = call(SC_OP_EVENT_DESTROY, sc_obj_ctx_real(&e->o), e->o.real, 0, NULL);
	if (res == CUDA_SUCCESS)
		sc_obj_free(e);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
	return event_destroy(hEvent);
}

/*
 * The first versions, still exported under their own names for programs
 * built against older headers. They take the same arguments; the driver
 * behind the proxy applies the current rules to both.
 */
#undef cuStreamDestroy
#undef cuEventDestroy
#undef cuEventElapsedTime

SC_CU_API CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
	return stream_destroy(hStream);
}

SC_CU_API CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
	return event_destroy(hEvent);
}

SC_CU_API CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	return event_elapsed(pMilliseconds, hStart, hEnd);
}
