/* SPDX-License-Identifier: MIT */
/*
 * softcuda_stream.c - streams and events.
 *
 * Work runs at once in the calling thread, so a stream is always idle and a
 * recorded event always complete: synchronising never waits, and queries
 * never answer CUDA_ERROR_NOT_READY. Events still keep the time they were
 * recorded (CLOCK_MONOTONIC) for cuEventElapsedTime().
 *
 * Streams that take part in a stream capture, and events recorded in one, are
 * softcuda_graph.c's: the calls here ask it before they run anything.
 */
#include <stdlib.h>

#include "softcuda_internal.h"

#define SD_EVENT_FLAGS (CU_EVENT_DEFAULT | CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | \
			CU_EVENT_INTERPROCESS)

struct sd_stream {
	struct sd_obj obj;
	unsigned flags;
	int priority;
};

struct sd_event {
	struct sd_obj obj;
	unsigned flags;
	int recorded;
	struct timespec when;
};

static int default_stream(CUstream stream)
{
	return !stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

static struct sd_stream *stream_find(CUstream handle)
{
	struct sd_obj *obj = sd_obj_find(SD_STREAM, handle);

	return obj ? sd_container(obj, struct sd_stream, obj) : NULL;
}

static struct sd_event *event_find(CUevent handle)
{
	struct sd_obj *obj = sd_obj_find(SD_EVENT, handle);

	return obj ? sd_container(obj, struct sd_event, obj) : NULL;
}

/* Callers hold a current context: the default streams are its own. */
CUresult sd_stream_check(CUstream stream)
{
	if (!default_stream(stream) && !stream_find(stream))
		return CUDA_ERROR_INVALID_HANDLE;
	return sd_capture_runs(stream);
}

void sd_stream_info(CUstream stream, unsigned *flags, int *priority)
{
	struct sd_stream *s = stream_find(stream);

	*flags = s ? s->flags : CU_STREAM_DEFAULT;
	*priority = s ? s->priority : 0;
}

/* For calls that take only a stream: the default streams need a current context. */
static CUresult stream_enter(const char *func, CUstream stream, struct sd_stream **out)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(func);

	*out = NULL;
	if (rc)
		return rc;
	if (default_stream(stream))
		rc = sd_ctx_current(&ctx);
	else if (!(*out = stream_find(stream)))
		rc = CUDA_ERROR_INVALID_HANDLE;
	if (rc)
		sd_leave(rc);
	return rc;
}

static CUresult stream_create(CUstream *pstream, unsigned flags, int priority)
{
	struct sd_stream *s;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!pstream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	s = calloc(1, sizeof(*s));
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* Out-of-range priorities are clamped, as the real driver does. */
	if (priority > SD_PRIORITY_LEAST)
		priority = SD_PRIORITY_LEAST;
	if (priority < SD_PRIORITY_GREATEST)
		priority = SD_PRIORITY_GREATEST;
	s->flags = flags;
	s->priority = priority;
	sd_obj_add(&s->obj, SD_STREAM, ctx);
	*pstream = (CUstream)s;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream *pstream, unsigned int flags)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(stream_create(pstream, flags, 0));
}

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *pstream, unsigned int flags, int priority)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(stream_create(pstream, flags, priority));
}

void sd_stream_free(struct sd_obj *obj)
{
	sd_capture_stream_gone((CUstream)sd_container(obj, struct sd_stream, obj));
	sd_obj_del(obj);
	free(sd_container(obj, struct sd_stream, obj));
}

CUresult CUDAAPI cuStreamDestroy(CUstream stream)
{
	struct sd_stream *s;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	s = stream_find(stream);
	if (!s)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	if ((rc = sd_capture_stream_destroy(stream)) != CUDA_SUCCESS)
		return sd_leave(rc);
	sd_stream_free(&s->obj);
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamSynchronize(CUstream stream)
{
	struct sd_stream *s;
	CUresult rc = stream_enter(__func__, stream, &s);

	return rc ? rc : sd_leave(sd_capture_sync_stream(stream));
}

CUresult CUDAAPI cuStreamQuery(CUstream stream)
{
	struct sd_stream *s;
	CUresult rc = stream_enter(__func__, stream, &s);

	return rc ? rc : sd_leave(sd_capture_sync_stream(stream));
}

CUresult CUDAAPI cuStreamGetPriority(CUstream stream, int *priority)
{
	struct sd_stream *s;
	CUresult rc = stream_enter(__func__, stream, &s);

	if (rc)
		return rc;
	if (!priority)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*priority = s ? s->priority : 0;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamGetFlags(CUstream stream, unsigned int *flags)
{
	struct sd_stream *s;
	CUresult rc = stream_enter(__func__, stream, &s);

	if (rc)
		return rc;
	if (!flags)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*flags = s ? s->flags : CU_STREAM_DEFAULT;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags)
{
	struct sd_stream *s;
	struct sd_event *e;
	CUresult rc = stream_enter(__func__, stream, &s);

	if (rc)
		return rc;
	if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if (!(e = event_find(event)))
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	return sd_leave(sd_capture_event_wait(stream, event, flags, e->recorded));
}

static CUresult event_create(CUevent *pevent, unsigned flags)
{
	struct sd_event *e;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!pevent || (flags & ~(unsigned)SD_EVENT_FLAGS))
		return CUDA_ERROR_INVALID_VALUE;
	/* Interprocess events cannot carry timing, in CUDA as here. */
	if ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING))
		return CUDA_ERROR_INVALID_VALUE;
	e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->flags = flags;
	sd_obj_add(&e->obj, SD_EVENT, ctx);
	*pevent = (CUevent)e;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent *pevent, unsigned int flags)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(event_create(pevent, flags));
}

void sd_event_free(struct sd_obj *obj)
{
	sd_capture_event_drop((CUevent)sd_container(obj, struct sd_event, obj));
	sd_obj_del(obj);
	free(sd_container(obj, struct sd_event, obj));
}

CUresult CUDAAPI cuEventDestroy(CUevent event)
{
	struct sd_event *e;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	e = event_find(event);
	if (!e)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	sd_event_free(&e->obj);
	return sd_leave(CUDA_SUCCESS);
}

CUresult sd_event_record(CUevent event, CUstream stream, unsigned flags)
{
	struct sd_event *e = event_find(event);
	struct sd_ctx *ctx;
	CUresult rc;

	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	if (default_stream(stream) && (rc = sd_ctx_current(&ctx)) != CUDA_SUCCESS)
		return rc;
	if (sd_capturing(stream))
		return sd_capture_event_record(stream, event, flags);
	if ((rc = sd_stream_check(stream)) != CUDA_SUCCESS)
		return rc;
	/* an external record exists only in a capture, in CUDA as here */
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	sd_capture_event_drop(event);
	clock_gettime(CLOCK_MONOTONIC, &e->when);
	e->recorded = 1;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(sd_event_record(event, stream, 0));
}

CUresult CUDAAPI cuEventRecordWithFlags(CUevent event, CUstream stream, unsigned int flags)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(sd_event_record(event, stream, flags));
}

/*
 * An event never recorded has no work to wait for: success, as in CUDA. The
 * work of one recorded in a capture never runs.
 */
static CUresult event_wait(CUevent event)
{
	return event_find(event) ? sd_capture_event_use(event) : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuEventQuery(CUevent event)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(event_wait(event));
}

CUresult CUDAAPI cuEventSynchronize(CUevent event)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(event_wait(event));
}

static CUresult elapsed(float *ms, CUevent start, CUevent end)
{
	struct sd_event *a = event_find(start), *b = event_find(end);
	CUresult rc;

	if (!ms)
		return CUDA_ERROR_INVALID_VALUE;
	if (!a || !b)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((rc = sd_capture_event_use(start)) != CUDA_SUCCESS ||
	    (rc = sd_capture_event_use(end)) != CUDA_SUCCESS)
		return rc;
	if (!a->recorded || !b->recorded || (a->flags & CU_EVENT_DISABLE_TIMING) ||
	    (b->flags & CU_EVENT_DISABLE_TIMING))
		return CUDA_ERROR_INVALID_HANDLE;
	*ms = (float)((double)(b->when.tv_sec - a->when.tv_sec) * 1e3 +
		      (double)(b->when.tv_nsec - a->when.tv_nsec) / 1e6);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent start, CUevent end)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(elapsed(ms, start, end));
}

CUresult CUDAAPI cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(elapsed(ms, start, end));
}

/* Every stream is synchronous here: its earlier work is done, the function runs now. */
CUresult CUDAAPI cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *data)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!fn)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if ((rc = sd_stream_check(stream)) != CUDA_SUCCESS)
		return sd_leave(rc);
	sd_leave(CUDA_SUCCESS); /* the function may take as long as it likes */
	fn(data);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamAddCallback(CUstream stream, CUstreamCallback fn, void *data,
				     unsigned int flags)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!fn || flags)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if ((rc = sd_stream_check(stream)) != CUDA_SUCCESS)
		return sd_leave(rc);
	sd_leave(CUDA_SUCCESS);
	fn(stream, CUDA_SUCCESS, data);
	return CUDA_SUCCESS;
}
