/* SPDX-License-Identifier: MIT */
/*
 * softcuda_capture.c - stream capture: cuStreamBeginCapture,
 * cuStreamEndCapture, cuStreamIsCapturing, cuStreamGetCaptureInfo,
 * cuStreamUpdateCaptureDependencies, and the
 * sd_capture_*() hooks the launch, copy, stream and context files call for
 * work posted while a stream captures.
 *
 * A stream capture has an origin stream, the graph it builds and member
 * streams, each with its dependencies: the nodes its next work depends on.
 * Work posted to a member does not run: it becomes a node with edges from
 * them, and then their only one. An event recorded in a member keeps the
 * member's dependencies; a stream that waits on it joins the capture (a fork)
 * or takes them into its own (a join). Once its capture ends, the event stays
 * "last recorded in a capture" until recorded outside one. The graph and its
 * nodes are made and joined with the calls of softcuda_graph.c.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "softcuda_internal.h"

/* A set of nodes, with default edge data beside them for cuStreamGetCaptureInfo. */
struct sd_deps {
	CUgraphNode *node;
	CUgraphEdgeData *edge;
	size_t n, size, edge_size;
};

struct sd_capture {
	struct sd_capture *next;
	cuuint64_t id;
	struct sd_graph *graph;		/* NULL once its context freed it: invalidated */
	CUstream origin;
	struct sd_ctx *ctx;
	CUstreamCaptureMode mode;
	pthread_t thread;
	int invalidated;
};

/* A stream taking part in a capture. */
struct sd_member {
	struct sd_member *next;
	CUstream stream;
	struct sd_capture *cap;
	struct sd_ctx *ctx;
	int blocking;		/* synchronises with the legacy stream */
	int priority;		/* what its kernel nodes get */
	struct sd_deps deps;
};

/* An event last recorded in a capture. */
struct sd_capevent {
	struct sd_capevent *next;
	CUevent event;
	struct sd_capture *cap;	/* NULL once the capture ended */
	struct sd_deps deps;
};

static struct sd_capture *captures;
static struct sd_member *members;
static struct sd_capevent *capevents;
static cuuint64_t last_capture_id;

static int default_stream(CUstream stream)
{
	return !stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

static int legacy_stream(CUstream stream)
{
	return !stream || stream == CU_STREAM_LEGACY;
}

/* Dependency sets */

static int deps_has(const struct sd_deps *d, CUgraphNode node)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->node[i] == node)
			return 1;
	return 0;
}

static CUresult deps_reserve(struct sd_deps *d, size_t want)
{
	void *p;

	if (!(p = sd_grow(d->node, &d->size, want, sizeof(*d->node))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	d->node = p;
	if (!(p = sd_grow(d->edge, &d->edge_size, want, sizeof(*d->edge))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	d->edge = p;
	return CUDA_SUCCESS;
}

static CUresult deps_union(struct sd_deps *d, const struct sd_deps *s)
{
	CUresult rc = deps_reserve(d, d->n + s->n);

	for (size_t i = 0; rc == CUDA_SUCCESS && i < s->n; i++) {
		if (deps_has(d, s->node[i]))
			continue;
		d->edge[d->n] = (CUgraphEdgeData){ 0 };
		d->node[d->n++] = s->node[i];
	}
	return rc;
}

static void deps_release(struct sd_deps *d)
{
	free(d->node);
	free(d->edge);
	*d = (struct sd_deps){ 0 };
}

/* Captures, members, events */

static struct sd_member *member_find(CUstream stream)
{
	for (struct sd_member *m = members; stream && m; m = m->next)
		if (m->stream == stream)
			return m;
	return NULL;
}

static struct sd_capevent *capevent_find(CUevent event)
{
	for (struct sd_capevent *ce = capevents; ce; ce = ce->next)
		if (ce->event == event)
			return ce;
	return NULL;
}

int sd_capturing(CUstream stream)
{
	return member_find(stream) != NULL;
}

/* @stream (a stream of the device's) joins @cap with no dependencies. */
static struct sd_member *member_new(CUstream stream, struct sd_capture *cap)
{
	struct sd_member *m = calloc(1, sizeof(*m));
	unsigned flags;

	if (!m)
		return NULL;
	m->stream = stream;
	m->cap = cap;
	m->ctx = sd_obj_find(SD_STREAM, stream)->ctx;
	sd_stream_info(stream, &flags, &m->priority);
	m->blocking = !(flags & CU_STREAM_NON_BLOCKING);
	m->next = members;
	members = m;
	return m;
}

static void member_free(struct sd_member *m)
{
	for (struct sd_member **pp = &members; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	}
	deps_release(&m->deps);
	free(m);
}

static CUresult capture_refuse(struct sd_capture *cap)
{
	cap->invalidated = 1;
	return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

static CUresult capture_isolate(struct sd_capture *cap)
{
	cap->invalidated = 1;
	return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
}

/*
 * Ends @cap on every stream that joined it; its events stay last recorded in
 * a capture. Returns its graph, which the caller keeps or frees.
 */
static struct sd_graph *capture_end(struct sd_capture *cap)
{
	struct sd_graph *g = cap->graph;
	struct sd_member *m, *next;

	for (m = members; m; m = next) {
		next = m->next;
		if (m->cap == cap)
			member_free(m);
	}
	for (struct sd_capevent *ce = capevents; ce; ce = ce->next) {
		if (ce->cap == cap) {
			ce->cap = NULL;
			deps_release(&ce->deps);
		}
	}
	for (struct sd_capture **pp = &captures; *pp; pp = &(*pp)->next) {
		if (*pp == cap) {
			*pp = cap->next;
			break;
		}
	}
	if (g)
		sd_graph_set_capture(g, NULL);
	free(cap);
	return g;
}

/* The graph of @cap was freed with its context: nothing to end the capture with. */
void sd_capture_graph_gone(struct sd_capture *cap)
{
	cap->graph = NULL;
	cap->invalidated = 1;
}

/* Work posted to @stream: its capture, unless that is invalidated (or @stream joined none). */
static CUresult capture_member(CUstream stream, struct sd_member **out)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!(*out = member_find(stream)))
		return CUDA_ERROR_ILLEGAL_STATE;
	return (*out)->cap->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
}

/* @node joins the capture after @m's dependencies, which become it; or is freed. */
static CUresult capture_append(struct sd_member *m, struct sd_node *node)
{
	CUresult rc = deps_reserve(&m->deps, 1);

	if (rc == CUDA_SUCCESS)
		rc = sd_graph_append(m->cap->graph, node, m->deps.node, m->deps.n);
	if (rc) {
		sd_node_free(node);
		return rc;
	}
	m->deps.node[0] = (CUgraphNode)node;
	m->deps.edge[0] = (CUgraphEdgeData){ 0 };
	m->deps.n = 1;
	return CUDA_SUCCESS;
}

/* @event now stands for @m's dependencies in its capture. */
static CUresult capture_record(struct sd_member *m, CUevent event)
{
	struct sd_capevent *ce = capevent_find(event);

	if (!ce) {
		if (!(ce = calloc(1, sizeof(*ce))))
			return CUDA_ERROR_OUT_OF_MEMORY;
		ce->event = event;
		ce->next = capevents;
		capevents = ce;
	}
	ce->cap = m->cap;
	ce->deps.n = 0;
	return deps_union(&ce->deps, &m->deps);
}

void sd_capture_event_drop(CUevent event)
{
	for (struct sd_capevent **pp = &capevents; *pp; pp = &(*pp)->next) {
		struct sd_capevent *ce = *pp;

		if (ce->event == event) {
			*pp = ce->next;
			deps_release(&ce->deps);
			free(ce);
			return;
		}
	}
}

/*
 * A captured launch: its node, with the stream's priority (cuda.h) and the
 * launch's attributes valid for nodes; its events are recorded after it.
 */
CUresult sd_capture_kernel(CUfunction handle, const struct softcuda_launch *l, void **params,
			   void **extra, const CUlaunchAttribute *attrs, unsigned n_attrs)
{
	CUDA_KERNEL_NODE_PARAMS p = {
		.func = handle,
		.gridDimX = l->grid[0],
		.gridDimY = l->grid[1],
		.gridDimZ = l->grid[2],
		.blockDimX = l->block[0],
		.blockDimY = l->block[1],
		.blockDimZ = l->block[2],
		.sharedMemBytes = l->shared_bytes,
		.kernelParams = params,
		.extra = extra,
	};
	struct sd_member *m;
	struct sd_node *node;
	unsigned i;
	CUresult rc = capture_member((CUstream)l->stream, &m);

	for (i = 0; rc == CUDA_SUCCESS && i < n_attrs; i++)
		rc = sd_launch_attr_check(handle, l, &attrs[i]);
	if (rc == CUDA_SUCCESS)
		rc = sd_node_launch(&node, &p, m->priority, attrs, n_attrs);
	if (rc)
		return rc;
	rc = capture_append(m, node);
	for (i = 0; rc == CUDA_SUCCESS && i < n_attrs; i++) {
		if (attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT)
			rc = capture_record(m, attrs[i].value.programmaticEvent.event);
		if (attrs[i].id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT)
			rc = capture_record(m, attrs[i].value.launchCompletionEvent.event);
	}
	return rc;
}

CUresult sd_capture_memcpy(CUstream stream, const CUDA_MEMCPY3D *c)
{
	struct sd_member *m;
	struct sd_node *node;
	CUresult rc = capture_member(stream, &m);

	if (rc == CUDA_SUCCESS)
		rc = sd_node_memcpy(&node, c, NULL);
	return rc ? rc : capture_append(m, node);
}

CUresult sd_capture_memset(CUstream stream, const CUDA_MEMSET_NODE_PARAMS *p)
{
	struct sd_member *m;
	struct sd_node *node;
	CUresult rc = capture_member(stream, &m);

	if (rc == CUDA_SUCCESS)
		rc = sd_node_memset(&node, p, NULL);
	return rc ? rc : capture_append(m, node);
}

/* An external record is a node; a plain one keeps the stream's dependencies in the event. */
CUresult sd_capture_event_record(CUstream stream, CUevent event, unsigned flags)
{
	struct sd_member *m;
	struct sd_node *node;
	CUresult rc = capture_member(stream, &m);

	if (rc || !(flags & CU_EVENT_RECORD_EXTERNAL))
		return rc ? rc : capture_record(m, event);
	rc = sd_node_event(&node, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event);
	return rc ? rc : capture_append(m, node);
}

static CUresult capture_wait_node(CUstream stream, CUevent event)
{
	struct sd_member *m;
	struct sd_node *node;
	CUresult rc = capture_member(stream, &m);

	if (rc == CUDA_SUCCESS)
		rc = sd_node_event(&node, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event);
	return rc ? rc : capture_append(m, node);
}

/* A wait on an event of capture @ce: the fork (@m NULL, @stream joins) or the join. */
static CUresult capture_join(CUstream stream, struct sd_member *m, struct sd_capevent *ce)
{
	struct sd_capture *cap = ce->cap;

	if (m && m->cap != cap) {
		m->cap->invalidated = cap->invalidated = 1;
		return CUDA_ERROR_STREAM_CAPTURE_MERGE;
	}
	if (cap->invalidated)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	if (!m && default_stream(stream))
		return capture_refuse(cap);
	if (!m && !(m = member_new(stream, cap)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	return deps_union(&m->deps, &ce->deps);
}

/*
 * Blocking streams of @ctx that capture: the legacy stream would wait for
 * them. Their captures are invalidated if @invalidate.
 */
static int blocking_captures(struct sd_ctx *ctx, int invalidate)
{
	int n = 0;

	for (struct sd_member *m = members; m; m = m->next) {
		if (!m->blocking || m->ctx != ctx)
			continue;
		n++;
		if (invalidate)
			m->cap->invalidated = 1;
	}
	return n;
}

/* Work on the legacy stream: not while a blocking stream of its context captures. */
static CUresult capture_implicit(void)
{
	struct sd_ctx *ctx;

	if (sd_ctx_current(&ctx))
		return CUDA_SUCCESS;	/* the caller reports the missing context */
	return blocking_captures(ctx, 1) ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS;
}

/*
 * A wait on an event not recorded in a capture: nothing to wait for, or a
 * dependency of the capture on work outside it, which it cannot have.
 */
CUresult sd_capture_event_wait(CUstream stream, CUevent event, unsigned flags, int recorded)
{
	struct sd_member *m = member_find(stream);
	struct sd_capevent *ce = capevent_find(event);

	if (flags & CU_EVENT_WAIT_EXTERNAL)
		return m ? capture_wait_node(stream, event) : CUDA_ERROR_INVALID_VALUE;
	if (ce && ce->cap)
		return capture_join(stream, m, ce);
	if (ce)
		return m ? capture_isolate(m->cap) : CUDA_ERROR_CAPTURED_EVENT;
	if (m && recorded)
		return capture_isolate(m->cap);
	if (m)
		return m->cap->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
	return legacy_stream(stream) ? capture_implicit() : CUDA_SUCCESS;
}

CUresult sd_capture_runs(CUstream stream)
{
	struct sd_member *m = member_find(stream);

	if (m)
		return m->cap->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED :
					     capture_refuse(m->cap);
	return legacy_stream(stream) ? capture_implicit() : CUDA_SUCCESS;
}

/*
 * cuThreadExchangeStreamCaptureMode: every thread is in the global mode
 * here, so a potentially unsafe call is refused while a global capture runs
 * anywhere, or a thread-local one begun in this thread.
 */
CUresult sd_capture_unsafe(void)
{
	CUresult rc = CUDA_SUCCESS;

	for (struct sd_capture *cap = captures; cap; cap = cap->next)
		if (cap->mode == CU_STREAM_CAPTURE_MODE_GLOBAL ||
		    (cap->mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
		     pthread_equal(cap->thread, pthread_self())))
			rc = capture_refuse(cap);
	return rc;
}

CUresult sd_capture_sync_stream(CUstream stream)
{
	struct sd_member *m = member_find(stream);
	CUresult rc;

	if (m)
		return capture_refuse(m->cap);
	if (!legacy_stream(stream))
		return CUDA_SUCCESS;
	rc = sd_capture_unsafe();
	return rc ? rc : capture_implicit();
}

CUresult sd_capture_sync_ctx(struct sd_ctx *ctx)
{
	CUresult rc = CUDA_SUCCESS;

	for (struct sd_capture *cap = captures; cap; cap = cap->next)
		if (cap->ctx == ctx)
			rc = capture_refuse(cap);
	return rc ? rc : sd_capture_unsafe();
}

/* An event recorded in a capture cannot be waited for or timed (CUDA_ERROR_CAPTURED_EVENT). */
CUresult sd_capture_event_use(CUevent event)
{
	struct sd_capevent *ce = capevent_find(event);

	if (!ce)
		return CUDA_SUCCESS;
	return ce->cap ? capture_refuse(ce->cap) : CUDA_ERROR_CAPTURED_EVENT;
}

/* A stream that takes part in a capture stays until the capture ends. */
CUresult sd_capture_stream_destroy(CUstream stream)
{
	struct sd_member *m = member_find(stream);

	return m ? capture_refuse(m->cap) : CUDA_SUCCESS;
}

/* Freed with its context: the capture it began ends, its graph with it. */
void sd_capture_stream_gone(CUstream stream)
{
	struct sd_member *m = member_find(stream);
	struct sd_graph *g;

	if (m && m->cap->origin != stream) {
		member_free(m);
		return;
	}
	if (m && (g = capture_end(m->cap)))
		sd_graph_destroy(g);
}

/* The API: begin, end, status, info */

static CUresult capture_begin(CUstream stream, CUstreamCaptureMode mode)
{
	struct sd_obj *s = sd_obj_find(SD_STREAM, stream);
	struct sd_capture *cap;
	struct sd_graph *g;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (default_stream(stream))
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (!s)
		return CUDA_ERROR_INVALID_HANDLE;
	if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	if (member_find(stream))
		return CUDA_ERROR_ILLEGAL_STATE;
	if (!(g = sd_graph_new(s->ctx)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!(cap = calloc(1, sizeof(*cap)))) {
		sd_graph_destroy(g);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*cap = (struct sd_capture){ captures, ++last_capture_id, g, stream, s->ctx, mode,
				    pthread_self(), 0 };
	captures = cap;
	sd_graph_set_capture(g, cap);
	if (!member_new(stream, cap)) {
		sd_graph_destroy(capture_end(cap));
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(capture_begin(stream, mode));
}

/* Every member's dependencies lead into the origin's: each fork was joined back. */
static int capture_joined(struct sd_capture *cap)
{
	const struct sd_member *origin = member_find(cap->origin);

	for (const struct sd_member *m = members; m; m = m->next)
		if (m->cap == cap && !sd_graph_leads_into(cap->graph, m->deps.node, m->deps.n,
							  origin->deps.node, origin->deps.n))
			return 0;
	return 1;
}

/* Any end but on the wrong stream or thread ends the capture; only success keeps the graph. */
static CUresult capture_finish(CUstream stream, CUgraph *out)
{
	struct sd_capture *cap;
	struct sd_member *m;
	struct sd_graph *g;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!default_stream(stream) && !sd_obj_find(SD_STREAM, stream))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (!(m = member_find(stream)))
		return CUDA_ERROR_ILLEGAL_STATE;
	cap = m->cap;
	if (cap->origin != stream)
		return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
	if (cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
	    !pthread_equal(cap->thread, pthread_self()))
		return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
	if (cap->invalidated)
		rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	else if (!capture_joined(cap))
		rc = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
	g = capture_end(cap);
	if (rc && g)
		sd_graph_destroy(g);
	*out = rc ? NULL : (CUgraph)g;
	return rc;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream stream, CUgraph *graph)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(capture_finish(stream, graph));
}

/* cuda.h: the legacy stream answers CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, invalidating nothing. */
static CUresult capture_status(CUstream stream, CUstreamCaptureStatus *status,
			       struct sd_member **out)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!default_stream(stream) && !sd_obj_find(SD_STREAM, stream))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	if (legacy_stream(stream) && blocking_captures(ctx, 0))
		return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
	*out = member_find(stream);
	if (!*out)
		*status = CU_STREAM_CAPTURE_STATUS_NONE;
	else if ((*out)->cap->invalidated)
		*status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
	else
		*status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus *status)
{
	struct sd_member *m;
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(capture_status(stream, status, &m));
}

/* The dependency arrays stay valid until the stream's next call, as cuda.h promises. */
static CUresult capture_info(CUstream stream, CUstreamCaptureStatus *status, cuuint64_t *id,
			     CUgraph *graph, const CUgraphNode **deps,
			     const CUgraphEdgeData **edges, size_t *n)
{
	struct sd_member *m;
	CUresult rc;

	if (edges && !deps)
		return CUDA_ERROR_INVALID_VALUE;
	rc = capture_status(stream, status, &m);
	if (rc || *status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
		return rc;
	if (id)
		*id = m->cap->id;
	if (graph)
		*graph = (CUgraph)m->cap->graph;
	if (deps)
		*deps = m->deps.node;
	if (edges)
		*edges = m->deps.edge;
	if (n)
		*n = m->deps.n;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream stream, CUstreamCaptureStatus *status,
					cuuint64_t *id, CUgraph *graph,
					const CUgraphNode **deps, const CUgraphEdgeData **edges,
					size_t *n)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(capture_info(stream, status, id, graph, deps, edges, n));
}

/* Nodes of the capture's graph become the member's dependencies, added or instead. */
static CUresult update_deps(CUstream stream, CUgraphNode *deps, const CUgraphEdgeData *edges,
			    size_t n, unsigned flags)
{
	CUstreamCaptureStatus status;
	struct sd_member *m;
	struct sd_deps add = { 0 };
	CUresult rc = capture_status(stream, &status, &m);

	if (rc)
		return rc;
	if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
		return CUDA_ERROR_ILLEGAL_STATE;
	if ((n && !deps) || flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < n; i++) {
		static const CUgraphEdgeData plain;

		if (!sd_graph_holds(m->cap->graph, deps[i]) ||
		    (edges && memcmp(&edges[i], &plain, sizeof(plain))))
			return CUDA_ERROR_INVALID_VALUE;
	}
	if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES)
		m->deps.n = 0;
	add.node = deps;
	add.n = n;
	return deps_union(&m->deps, &add);
}

CUresult CUDAAPI cuStreamUpdateCaptureDependencies(CUstream stream, CUgraphNode *deps,
						   const CUgraphEdgeData *edges, size_t n,
						   unsigned int flags)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(update_deps(stream, deps, edges, n, flags));
}
