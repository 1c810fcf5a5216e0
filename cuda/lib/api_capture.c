/* SPDX-License-Identifier: MIT */
/*
 * api_capture.c - stream capture: the work the program posts to a stream
 * between cuStreamBeginCapture and cuStreamEndCapture becomes a graph.
 *
 * The proxy's driver captures the requests as they come; the graph it
 * returns becomes the program's like any other (api_graph.c), and is read
 * back at the next checkpoint. A capture itself cannot be carried across a
 * restart (the driver's half-made graph has no description), so a
 * checkpoint waits for none: it is refused while one is under way.
 *
 * The proxy runs every thread's requests on one thread of its own, on one
 * per-thread default stream shared by all: a capture of the per-thread
 * default stream would take other threads' work, and is refused.
 */
#include "cuda/lib/graph.h"

/* Captures begun and not yet ended; read without the lock by sc_capture_active(). */
static unsigned captures;

bool sc_capture_active(void)
{
	return __atomic_load_n(&captures, __ATOMIC_ACQUIRE) != 0;
}

static void capture_over(struct sc_cu_stream *s)
{
	if (s && s->capturing) {
		s->capturing = false;
		__atomic_fetch_sub(&captures, 1, __ATOMIC_RELEASE);
	}
}

void sc_capture_stream_gone(struct sc_cu_stream *s)
{
	capture_over(s);
}

static CUresult begin(CUstream h, CUstreamCaptureMode mode)
{
	struct sc_cu_stream *s = sc_obj_get(h, SC_K_STREAM);
	struct sc_req r = { .op = SC_OP_CAPTURE_BEGIN, .a = { 0, (uint64_t)mode } };
	CUresult res;

	if (h == CU_STREAM_PER_THREAD)
		return sc_cu_unsupported("a stream capture of the per-thread default stream");
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if ((res = sc_stream_target(h, &r.a[0], &r.ctx)) == CUDA_SUCCESS)
		res = sc_cu_call(&r);
	if (res == CUDA_SUCCESS && s && !s->capturing) {
		s->capturing = true;
		__atomic_fetch_add(&captures, 1, __ATOMIC_RELEASE);
	}
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode)
{
	return begin(hStream, mode);
}

SC_CU_API CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream,
							CUstreamCaptureMode mode)
{
	return begin(hStream ? hStream : CU_STREAM_PER_THREAD, mode);
}

/* Whatever the driver answers, the capture the stream began is over. */
static CUresult end(CUstream h, CUgraph *phGraph)
{
	struct sc_cu_stream *s = sc_obj_get(h, SC_K_STREAM);
	struct sc_req r = { .op = SC_OP_CAPTURE_END };
	struct sc_cu_ctx *c;
	CUresult res;

	if (!phGraph)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if ((res = sc_stream_target(h, &r.a[0], &r.ctx)) == CUDA_SUCCESS) {
		res = sc_cu_call(&r);
		capture_over(s);
	}
	c = s && s->o.ctx ? s->o.ctx : sc_ctx_current();
	if (res == CUDA_SUCCESS)
		res = sc_graph_adopt(r.a[0], 0, c, phGraph);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	return end(hStream, phGraph);
}

SC_CU_API CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
	return end(hStream ? hStream : CU_STREAM_PER_THREAD, phGraph);
}

static CUresult capture_info(CUstream h, struct sc_req *r)
{
	CUresult res;

	*r = (struct sc_req){ .op = SC_OP_CAPTURE_INFO };
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if ((res = sc_stream_target(h, &r->a[0], &r->ctx)) == CUDA_SUCCESS)
		res = sc_cu_call(r);
	sc_cu_leave();
	return res;
}

static CUresult is_capturing(CUstream h, CUstreamCaptureStatus *status)
{
	struct sc_req r;
	CUresult res;

	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = capture_info(h, &r)) == CUDA_SUCCESS)
		*status = (CUstreamCaptureStatus)r.a[0];
	return res;
}

SC_CU_API CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *status)
{
	return is_capturing(hStream, status);
}

SC_CU_API CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream hStream,
						    CUstreamCaptureStatus *status)
{
	return is_capturing(hStream ? hStream : CU_STREAM_PER_THREAD, status);
}

/*
 * The status and the capture's id. The graph being made and its current
 * dependencies are the driver's own, which the program could only use to
 * change the capture by hand (cuStreamUpdateCaptureDependencies, not served).
 */
static CUresult get_capture_info(CUstream h, CUstreamCaptureStatus *status, cuuint64_t *id,
				 CUgraph *graph, const CUgraphNode **deps,
				 const CUgraphEdgeData **edges, size_t *deps_n)
{
	struct sc_req r;
	CUresult res;

	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = capture_info(h, &r)) != CUDA_SUCCESS)
		return res;
	*status = (CUstreamCaptureStatus)r.a[0];
	if (id)
		*id = r.a[1];
	if (*status == CU_STREAM_CAPTURE_STATUS_ACTIVE && (graph || deps || edges))
		return sc_cu_unsupported("cuStreamGetCaptureInfo of the graph being captured");
	if (graph)
		*graph = NULL;
	if (deps)
		*deps = NULL;
	if (edges)
		*edges = NULL;
	if (deps_n)
		*deps_n = 0;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream,
						  CUstreamCaptureStatus *captureStatus_out,
						  cuuint64_t *id_out, CUgraph *graph_out,
						  const CUgraphNode **dependencies_out,
						  const CUgraphEdgeData **edgeData_out,
						  size_t *numDependencies_out)
{
	return get_capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
				edgeData_out, numDependencies_out);
}

SC_CU_API CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(
	CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out,
	CUgraph *graph_out, const CUgraphNode **dependencies_out,
	const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
	return get_capture_info(hStream ? hStream : CU_STREAM_PER_THREAD, captureStatus_out,
				id_out, graph_out, dependencies_out, edgeData_out,
				numDependencies_out);
}

bool sc_capture_stream_busy(CUstream h)
{
	struct sc_req r = { .op = SC_OP_CAPTURE_INFO };

	if (!sc_capture_active() || sc_stream_target(h, &r.a[0], &r.ctx) != CUDA_SUCCESS)
		return false;
	return sc_cu_call(&r) == CUDA_SUCCESS && r.a[0] != CU_STREAM_CAPTURE_STATUS_NONE;
}

CUresult sc_capture_refuse(CUstream h, const char *what)
{
	bool busy;
	CUresult res;

	if (!sc_capture_active())
		return CUDA_SUCCESS;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	busy = sc_capture_stream_busy(h);
	sc_cu_leave();
	return busy ? sc_cu_unsupported(what) : CUDA_SUCCESS;
}

/*
 * The calling thread's capture mode. It says which calls a capture under way
 * forbids in this thread; the library forbids none of them (its memory comes
 * from its own arena, not from the driver's allocator), so the mode is kept
 * for the program to read back, as the driver keeps it.
 */
static __thread CUstreamCaptureMode thread_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

SC_CU_API CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	CUstreamCaptureMode was;

	if (!mode || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
		      *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
		      *mode != CU_STREAM_CAPTURE_MODE_RELAXED))
		return CUDA_ERROR_INVALID_VALUE;
	was = thread_capture_mode;
	thread_capture_mode = *mode;
	*mode = was;
	return CUDA_SUCCESS;
}
