/* SPDX-License-Identifier: MIT */
/*
 * proxy_ops_stream.c - streams and events.
 */
#include <string.h>

#include "cuda/proxy/proxy_internal.h"

#define EVENT(v) ((CUevent)(uintptr_t)(v))

static CUresult op_stream_create(struct sc_ch_slot *s)
{
	CUstream st = NULL;
	CUresult r = sc_drv.cuStreamCreateWithPriority(&st, (unsigned)s->a[0], (int)s->a[1]);

	s->a[0] = (uint64_t)(uintptr_t)st;
	return r;
}

static CUresult op_stream_destroy(struct sc_ch_slot *s)
{
	return sc_drv.cuStreamDestroy(STREAM(s->a[0]));
}

static CUresult op_stream_sync(struct sc_ch_slot *s)
{
	return sc_drv.cuStreamSynchronize(STREAM(s->a[0]));
}

static CUresult op_stream_query(struct sc_ch_slot *s)
{
	return sc_drv.cuStreamQuery(STREAM(s->a[0]));
}

static CUresult op_stream_wait(struct sc_ch_slot *s)
{
	return sc_drv.cuStreamWaitEvent(STREAM(s->a[0]), EVENT(s->a[1]), (unsigned)s->a[2]);
}

static CUresult op_event_create(struct sc_ch_slot *s)
{
	CUevent e = NULL;
	CUresult r = sc_drv.cuEventCreate(&e, (unsigned)s->a[0]);

	s->a[0] = (uint64_t)(uintptr_t)e;
	return r;
}

static CUresult op_event_record(struct sc_ch_slot *s)
{
	return sc_drv.cuEventRecordWithFlags(EVENT(s->a[0]), STREAM(s->a[1]), (unsigned)s->a[2]);
}

static CUresult op_event_sync(struct sc_ch_slot *s)
{
	return sc_drv.cuEventSynchronize(EVENT(s->a[0]));
}

static CUresult op_event_query(struct sc_ch_slot *s)
{
	return sc_drv.cuEventQuery(EVENT(s->a[0]));
}

static CUresult op_event_elapsed(struct sc_ch_slot *s)
{
	float ms = 0;
	CUresult r = sc_drv.cuEventElapsedTime(&ms, EVENT(s->a[0]), EVENT(s->a[1]));
	uint32_t bits;

	memcpy(&bits, &ms, sizeof(bits));
	s->a[0] = bits;
	return r;
}

static CUresult op_event_destroy(struct sc_ch_slot *s)
{
	return sc_drv.cuEventDestroy(EVENT(s->a[0]));
}

void sc_proxy_ops_stream(sc_proxy_op_fn *t)
{
	t[SC_OP_STREAM_CREATE] = op_stream_create;
	t[SC_OP_STREAM_DESTROY] = op_stream_destroy;
	t[SC_OP_STREAM_SYNC] = op_stream_sync;
	t[SC_OP_STREAM_QUERY] = op_stream_query;
	t[SC_OP_STREAM_WAIT] = op_stream_wait;
	t[SC_OP_EVENT_CREATE] = op_event_create;
	t[SC_OP_EVENT_RECORD] = op_event_record;
	t[SC_OP_EVENT_SYNC] = op_event_sync;
	t[SC_OP_EVENT_QUERY] = op_event_query;
	t[SC_OP_EVENT_ELAPSED] = op_event_elapsed;
	t[SC_OP_EVENT_DESTROY] = op_event_destroy;
}
