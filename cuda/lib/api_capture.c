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
#include <stdlib.h>
#include <string.h>

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
		struct sc_req info = { .op = SC_OP_CAPTURE_INFO, .ctx = r.ctx, .a = { r.a[0] } };

		s->capturing = true;
		/* known while it is active: the end may find it invalidated */
		s->capture_id = sc_cu_call(&info) == CUDA_SUCCESS ? info.a[1] : 0;
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

/*
 * A capture's graph given out by cuStreamGetCaptureInfo: a plain graph once
 * the capture ends well; where it fails the driver frees the graph, and the
 * handle goes with it.
 */
static void capture_graphs_settle(uint64_t id, bool ended_well)
{
	struct sc_cu_obj *o, *next;

	sc_objs_lock();
	for (o = sc_obj_first(); id && o; o = next) {
		struct sc_cu_graph *g = (struct sc_cu_graph *)o;

		next = o->next;
		if (o->kind != SC_K_GRAPH || g->capture_id != id)
			continue;
		g->capture_id = 0;
		if (!ended_well)
			sc_graph_forget(o);
	}
	sc_objs_unlock();
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
		if (s && s->capturing)
			capture_graphs_settle(s->capture_id, res == CUDA_SUCCESS);
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
 * The graph a capture is making, as the program's: the one it got before,
 * else a new handle, which cuStreamEndCapture then returns (sc_graph_adopt
 * gives one handle to one graph of the proxy's).
 */
static CUresult capture_graph(CUstream h, uint64_t real, uint64_t id, struct sc_cu_graph **out)
{
	struct sc_cu_stream *s = sc_obj_get(h, SC_K_STREAM);
	struct sc_cu_ctx *c = s && s->o.ctx ? s->o.ctx : sc_ctx_current();
	CUgraph g;
	CUresult res = sc_graph_adopt(real, 0, c, &g);

	if (res == CUDA_SUCCESS) {
		*out = (struct sc_cu_graph *)g;
		(*out)->capture_id = id;
	}
	return res;
}

/* The dependencies the proxy sent back, as the program's nodes, in this thread's array. */
static CUresult capture_deps(struct sc_cu_graph *g, const uint64_t *real, size_t n,
			     const CUgraphNode **deps, const CUgraphEdgeData **edges)
{
	static __thread CUgraphNode *nodes;
	static __thread CUgraphEdgeData *data;
	static __thread size_t cap;

	if (n > cap) {
		CUgraphNode *v = realloc(nodes, n * sizeof(*v));
		CUgraphEdgeData *e = v ? realloc(data, n * sizeof(*e)) : NULL;

		if (v)
			nodes = v;
		if (!e)
			return CUDA_ERROR_OUT_OF_MEMORY;
		data = e;
		cap = n;
	}
	for (size_t i = 0; i < n; i++) {
		struct sc_cu_gnode *node = sc_graph_node_wrap(g, real[i]);

		if (!node)
			return CUDA_ERROR_OUT_OF_MEMORY;
		nodes[i] = (CUgraphNode)node;
		data[i] = (CUgraphEdgeData){ 0 }; /* the library's captures make none other */
	}
	if (deps)
		*deps = n ? nodes : NULL;
	if (edges)
		*edges = n ? data : NULL;
	return CUDA_SUCCESS;
}

/*
 * The status, the capture's id, and while it is active the graph being made
 * and the stream's current dependencies: the program may add nodes to that
 * graph itself and make them the stream's dependencies
 * (cuStreamUpdateCaptureDependencies).
 */
static CUresult get_capture_info(CUstream h, CUstreamCaptureStatus *status, cuuint64_t *id,
				 CUgraph *graph, const CUgraphNode **deps,
				 const CUgraphEdgeData **edges, size_t *deps_n)
{
	uint64_t real[SC_CH_INLINE / 8];
	struct sc_req r = { .op = SC_OP_CAPTURE_INFO, .out = real, .out_cap = sizeof(real) };
	struct sc_cu_graph *g = NULL;
	bool active;
	CUresult res;

	if (!status || (edges && !deps))
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if ((res = sc_stream_target(h, &r.a[0], &r.ctx)) == CUDA_SUCCESS)
		res = sc_cu_call(&r);
	active = res == CUDA_SUCCESS && r.a[0] == CU_STREAM_CAPTURE_STATUS_ACTIVE;
	if (active && r.a[3] > r.out_len / 8)
		res = sc_cu_unsupported("cuStreamGetCaptureInfo of more dependencies than a "
					"request carries");
	else if (active && (graph || deps))
		res = capture_graph(h, r.a[2], r.a[1], &g);
	if (res == CUDA_SUCCESS && active && deps)
		res = capture_deps(g, real, r.a[3], deps, edges);
	sc_cu_leave();
	if (res != CUDA_SUCCESS)
		return res;
	*status = (CUstreamCaptureStatus)r.a[0];
	if (id)
		*id = r.a[1];
	if (graph)
		*graph = (CUgraph)g;
	if (deps && !active)
		*deps = NULL;
	if (edges && !active)
		*edges = NULL;
	if (deps_n)
		*deps_n = active ? r.a[3] : 0;
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

/* Nodes of the capture's graph made the stream's dependencies, added to them or instead. */
static CUresult update_deps(CUstream h, CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n,
			    unsigned flags)
{
	uint64_t real[SC_CH_INLINE / 8];
	struct sc_req r = { .op = SC_OP_CAPTURE_DEPS, .a = { 0, flags }, .in = real,
			    .in_len = (uint32_t)(n * 8) };
	CUresult res;

	if ((n && !deps) || n > SC_CH_INLINE / 8 ||
	    (flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES &&
	     flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < n; i++) {
		struct sc_cu_gnode *node = sc_obj_get(deps[i], SC_K_GNODE);
		static const CUgraphEdgeData plain;

		if (!node)
			return CUDA_ERROR_INVALID_VALUE;
		if (edges && memcmp(&edges[i], &plain, sizeof(plain)))
			return sc_cu_unsupported("cuStreamUpdateCaptureDependencies with edge data");
		real[i] = node->o.real;
	}
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if ((res = sc_stream_target(h, &r.a[0], &r.ctx)) == CUDA_SUCCESS)
		res = sc_cu_call(&r);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuStreamUpdateCaptureDependencies(CUstream hStream,
							     CUgraphNode *dependencies,
							     const CUgraphEdgeData *dependencyData,
							     size_t numDependencies,
							     unsigned int flags)
{
	return update_deps(hStream, dependencies, dependencyData, numDependencies, flags);
}

SC_CU_API CUresult CUDAAPI cuStreamUpdateCaptureDependencies_v2_ptsz(
	CUstream hStream, CUgraphNode *dependencies, const CUgraphEdgeData *dependencyData,
	size_t numDependencies, unsigned int flags)
{
	return update_deps(hStream ? hStream : CU_STREAM_PER_THREAD, dependencies,
			   dependencyData, numDependencies, flags);
}
