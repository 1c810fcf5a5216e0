/* SPDX-License-Identifier: MIT */
/*
 * api_graph.c - CUDA graphs: building them node by node, reading them,
 * instantiating, launching and updating them.
 *
 * A CUgraph, CUgraphNode or CUgraphExec the program holds is the library's
 * object (graph.h); the proxy's handle inside it is replaced at a restart.
 * A node is described as the requests carry it (struct sc_graph_step), so
 * that adding a node, changing one, reading one back and building a graph
 * again at a restart share one form.
 *
 * Host memory a graph copies must be pinned (cuMemAllocHost): any other is
 * staged through the channel by a plain copy, and a graph would hold the
 * staging buffer's address. Host function nodes are not served: the function
 * is the program's, and the driver would call it in the proxy.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda/lib/graph.h"
#include "cuda/lib/managed.h"

static struct sc_cu_graph *graph_of(CUgraph h)
{
	return sc_obj_get(h, SC_K_GRAPH);
}

static struct sc_cu_gnode *node_of(CUgraphNode h)
{
	return sc_obj_get(h, SC_K_GNODE);
}

static struct sc_cu_gexec *exec_of(CUgraphExec h)
{
	return sc_obj_get(h, SC_K_GEXEC);
}

struct sc_cu_gnode *sc_graph_node_wrap(struct sc_cu_graph *g, uint64_t real)
{
	struct sc_cu_gnode *n;

	for (size_t i = 0; i < g->nodes_n; i++)
		if (g->nodes[i]->o.real == real)
			return g->nodes[i];
	if (g->nodes_n == g->nodes_cap) {
		size_t cap = g->nodes_cap ? 2 * g->nodes_cap : 16;
		struct sc_cu_gnode **v = realloc(g->nodes, cap * sizeof(*v));

		if (!v)
			return NULL;
		g->nodes = v;
		g->nodes_cap = cap;
	}
	if (!(n = sc_obj_new(SC_K_GNODE, sizeof(*n), NULL)))
		return NULL;
	n->o.real = real;
	n->graph = g;
	g->nodes[g->nodes_n++] = n;
	return n;
}

static void node_free(struct sc_cu_gnode *n)
{
	free(n->params_view);
	free(n->params_buf);
	sc_obj_free(n);
}

/* Executable graphs made from @g no longer name its node @n (NULL: any of its nodes). */
static void execs_forget(const struct sc_cu_graph *g, const struct sc_cu_gnode *n)
{
	sc_objs_lock();
	for (struct sc_cu_obj *o = sc_obj_first(); o; o = o->next) {
		struct sc_cu_gexec *e = (struct sc_cu_gexec *)o;

		if (o->kind != SC_K_GEXEC || e->from != g)
			continue;
		for (size_t i = 0; i < e->desc.n; i++)
			if (!n || e->desc.steps[i].node == n)
				e->desc.steps[i].node = NULL;
		if (!n)
			e->from = NULL;
	}
	sc_objs_unlock();
}

void sc_graph_forget(struct sc_cu_obj *o)
{
	if (o->kind == SC_K_GRAPH) {
		struct sc_cu_graph *g = (struct sc_cu_graph *)o;

		execs_forget(g, NULL);
		for (size_t i = 0; i < g->nodes_n; i++)
			node_free(g->nodes[i]);
		free(g->nodes);
		sc_graph_desc_free(&g->desc);
	} else if (o->kind == SC_K_GEXEC) {
		sc_graph_desc_free(&((struct sc_cu_gexec *)o)->desc);
	}
	sc_obj_free(o);
}

static CUresult simple(unsigned op, uint64_t ctx, uint64_t a0, uint64_t a1, uint64_t *out)
{
	struct sc_req r = { .op = op, .ctx = ctx, .a = { a0, a1 } };
	CUresult res = sc_cu_call(&r);

	if (out)
		*out = r.a[0];
	return res;
}

/* ---- graphs ---- */

static struct sc_cu_graph *graph_new(uint64_t real, unsigned flags, struct sc_cu_ctx *ctx)
{
	struct sc_cu_graph *g = sc_obj_new(SC_K_GRAPH, sizeof(*g), ctx);

	if (g) {
		g->o.real = real;
		g->flags = flags;
	}
	return g;
}

CUresult sc_graph_adopt(uint64_t real, unsigned flags, struct sc_cu_ctx *ctx, CUgraph *out)
{
	/* a capture's graph may have had a handle since cuStreamGetCaptureInfo */
	struct sc_cu_graph *g = (struct sc_cu_graph *)sc_obj_find_value(SC_K_GRAPH, real);

	if (g) {
		*out = (CUgraph)g;
		return CUDA_SUCCESS;
	}
	g = graph_new(real, flags, ctx);

	if (!g) {
		simple(SC_OP_GRAPH_DESTROY, sc_ctx_real(), real, 0, NULL);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = (CUgraph)g;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	uint64_t real = 0;
	CUresult res;

	if (!phGraph || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if (!sc_ctx_current())
		res = sc_ctx_missing();
	else if ((res = simple(SC_OP_GRAPH_CREATE, sc_ctx_real(), flags, 0, &real)) ==
		 CUDA_SUCCESS)
		res = sc_graph_adopt(real, flags, sc_ctx_current(), phGraph);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
	struct sc_cu_graph *g = graph_of(originalGraph);
	uint64_t real = 0;
	CUresult res;

	if (!phGraphClone || !g)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if ((res = simple(SC_OP_GRAPH_CLONE, sc_obj_ctx_real(&g->o), g->o.real, 0, &real)) ==
	    CUDA_SUCCESS)
		res = sc_graph_adopt(real, g->flags, g->o.ctx, phGraphClone);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
	struct sc_cu_graph *g = graph_of(hGraph);
	CUresult res;

	if (!g)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if ((res = simple(SC_OP_GRAPH_DESTROY, sc_obj_ctx_real(&g->o), g->o.real, 0, NULL)) ==
	    CUDA_SUCCESS)
		sc_graph_forget(&g->o);
	sc_cu_leave();
	return res;
}

/* ---- adding nodes ---- */

/* The proxy's nodes of @deps, each of graph @g, into @out. */
static CUresult deps_real(const struct sc_cu_graph *g, const CUgraphNode *deps, size_t n,
			  uint64_t *out)
{
	if (n && !deps)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < n; i++) {
		struct sc_cu_gnode *d = node_of(deps[i]);

		if (!d || d->graph != g)
			return CUDA_ERROR_INVALID_VALUE;
		out[i] = d->o.real;
	}
	return CUDA_SUCCESS;
}

static CUresult add_step(CUgraphNode *out, CUgraph hGraph, const CUgraphNode *deps, size_t n,
			 const struct sc_graph_step *st)
{
	_Alignas(8) uint8_t buf[SC_CH_INLINE];
	struct sc_cu_graph *g = graph_of(hGraph);
	struct sc_req r = { .op = SC_OP_GRAPH_ADD_NODE, .a = { 0, st->type, n } };
	CUresult res;

	if (!out || !g)
		return CUDA_ERROR_INVALID_VALUE;
	if (n > (SC_CH_INLINE - st->len) / 8)
		return sc_cu_unsupported("a graph node with this many dependencies");
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	r.ctx = sc_obj_ctx_real(&g->o);
	r.a[0] = g->o.real;
	if ((res = deps_real(g, deps, n, (uint64_t *)(void *)buf)) == CUDA_SUCCESS)
		res = sc_graph_step_send(st, NULL, &r, buf, (uint32_t)(n * 8));
	if (res == CUDA_SUCCESS && (res = sc_cu_call(&r)) == CUDA_SUCCESS) {
		struct sc_cu_gnode *node = sc_graph_node_wrap(g, r.a[0]);

		if (node)
			*out = (CUgraphNode)node;
		else
			res = simple(SC_OP_GRAPH_DESTROY_NODE, r.ctx, r.a[0], 0, NULL) ?:
				CUDA_ERROR_OUT_OF_MEMORY;
	}
	sc_cu_leave();
	return res;
}

/*
 * A kernel node's step: @attrs (attrs_n kernel node attributes) kept, the
 * parameters from @p packed with the function's layout.
 */
static CUresult kernel_step(const CUDA_KERNEL_NODE_PARAMS *p, const uint8_t *attrs,
			    uint64_t attrs_n, struct sc_graph_step *st)
{
	struct sc_cu_func *f;
	size_t attrs_len = attrs_n * sizeof(CUlaunchAttribute), head;
	CUresult res;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	f = sc_cu_function_of(p->func ? (const void *)p->func : (const void *)p->kern);
	if (!f)
		return CUDA_ERROR_INVALID_VALUE;
	head = attrs_len + f->params_n * 8ull;
	if (head + f->params_bytes > SC_CH_INLINE)
		return sc_cu_unsupported("a kernel node with parameters this large");
	*st = (struct sc_graph_step){ .type = CU_GRAPH_NODE_TYPE_KERNEL,
				      .a = { (uint64_t)(uintptr_t)f, p->gridDimX, p->gridDimY,
					     p->gridDimZ, p->blockDimX, p->blockDimY,
					     p->blockDimZ, p->sharedMemBytes, f->params_n,
					     attrs_n },
				      .len = (uint32_t)(head + f->params_bytes) };
	if (!(st->data = malloc(st->len ? st->len : 1)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (attrs_len) /* none for a new node */
		memcpy(st->data, attrs, attrs_len);
	if (f->params_n)
		memcpy(st->data + attrs_len, f->layout, f->params_n * 8ull);
	res = sc_cu_pack_args(f, p->kernelParams, p->extra, st->data + head, f->params_bytes);
	if (res != CUDA_SUCCESS) {
		free(st->data);
		st->data = NULL;
	}
	return res;
}

SC_CU_API CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
						const CUgraphNode *dependencies,
						size_t numDependencies,
						const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct sc_graph_step st = { 0 };
	CUresult res = kernel_step(nodeParams, NULL, 0, &st);

	if (res == CUDA_SUCCESS)
		res = add_step(phGraphNode, hGraph, dependencies, numDependencies, &st);
	free(st.data);
	return res;
}

/* The context a copy or memset node runs in: @ctx, or the current one. */
static CUresult node_context(CUcontext ctx, uint64_t *out)
{
	struct sc_cu_ctx *c = ctx ? sc_obj_get(ctx, SC_K_CTX) : sc_ctx_current();

	if (!c)
		return ctx ? CUDA_ERROR_INVALID_CONTEXT : sc_ctx_missing();
	*out = (uint64_t)(uintptr_t)c;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
						const CUgraphNode *dependencies,
						size_t numDependencies,
						const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
	CUDA_MEMCPY3D c;
	struct sc_graph_step st = { .type = CU_GRAPH_NODE_TYPE_MEMCPY, .data = (uint8_t *)&c,
				    .len = sizeof(c) };
	CUresult res;

	if (!copyParams)
		return CUDA_ERROR_INVALID_VALUE;
	c = *copyParams;
	if (!sc_graph_copy_ok(&c))
		return sc_cu_unsupported("a graph copy of host memory not from cuMemAllocHost");
	if ((res = node_context(ctx, &st.a[0])) != CUDA_SUCCESS)
		return res;
	return add_step(phGraphNode, hGraph, dependencies, numDependencies, &st);
}

SC_CU_API CUresult CUDAAPI cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
						const CUgraphNode *dependencies,
						size_t numDependencies,
						const CUDA_MEMSET_NODE_PARAMS *memsetParams,
						CUcontext ctx)
{
	CUDA_MEMSET_NODE_PARAMS p;
	struct sc_graph_step st = { .type = CU_GRAPH_NODE_TYPE_MEMSET, .data = (uint8_t *)&p,
				    .len = sizeof(p) };
	CUresult res;

	if (!memsetParams)
		return CUDA_ERROR_INVALID_VALUE;
	p = *memsetParams;
	if ((res = node_context(ctx, &st.a[0])) != CUDA_SUCCESS)
		return res;
	return add_step(phGraphNode, hGraph, dependencies, numDependencies, &st);
}

SC_CU_API CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					       const CUgraphNode *dependencies,
					       size_t numDependencies)
{
	struct sc_graph_step st = { .type = CU_GRAPH_NODE_TYPE_EMPTY };

	return add_step(phGraphNode, hGraph, dependencies, numDependencies, &st);
}

static CUresult add_event_node(CUgraphNode *out, CUgraph hGraph, const CUgraphNode *deps,
			       size_t n, CUevent event, CUgraphNodeType type)
{
	struct sc_graph_step st = { .type = type, .a = { (uint64_t)(uintptr_t)event } };

	if (!sc_obj_get(event, SC_K_EVENT))
		return CUDA_ERROR_INVALID_VALUE;
	return add_step(out, hGraph, deps, n, &st);
}

SC_CU_API CUresult CUDAAPI cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
						     const CUgraphNode *dependencies,
						     size_t numDependencies, CUevent event)
{
	return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event,
			      CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

SC_CU_API CUresult CUDAAPI cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph,
						   const CUgraphNode *dependencies,
						   size_t numDependencies, CUevent event)
{
	return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event,
			      CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

static bool edges_plain(const CUgraphEdgeData *edgeData, size_t n)
{
	static const CUgraphEdgeData plain;

	for (size_t i = 0; edgeData && i < n; i++)
		if (memcmp(&edgeData[i], &plain, sizeof(plain)))
			return false;
	return true;
}

SC_CU_API CUresult CUDAAPI cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from,
						  const CUgraphNode *to,
						  const CUgraphEdgeData *edgeData,
						  size_t numDependencies)
{
	_Alignas(8) uint8_t buf[SC_CH_INLINE];
	struct sc_cu_graph *g = graph_of(hGraph);
	size_t n = numDependencies;
	struct sc_req r = { .op = SC_OP_GRAPH_ADD_EDGES, .a = { 0, n }, .in = buf,
			    .in_len = (uint32_t)(n * 16) };
	CUresult res;

	if (!g || (n && (!from || !to)))
		return CUDA_ERROR_INVALID_VALUE;
	if (!edges_plain(edgeData, n))
		return sc_cu_unsupported("cuGraphAddDependencies with edge data");
	if (n > SC_CH_INLINE / 16)
		return sc_cu_unsupported("cuGraphAddDependencies of this many edges at once");
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	r.ctx = sc_obj_ctx_real(&g->o);
	r.a[0] = g->o.real;
	if ((res = deps_real(g, from, n, (uint64_t *)(void *)buf)) == CUDA_SUCCESS &&
	    (res = deps_real(g, to, n, (uint64_t *)(void *)buf + n)) == CUDA_SUCCESS)
		res = sc_cu_call(&r);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuGraphDestroyNode(CUgraphNode hNode)
{
	struct sc_cu_gnode *n = node_of(hNode);
	CUresult res;

	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = simple(SC_OP_GRAPH_DESTROY_NODE, sc_obj_ctx_real(&n->graph->o), n->o.real, 0, NULL);
	if (res == CUDA_SUCCESS) {
		struct sc_cu_graph *g = n->graph;

		for (size_t i = 0; i < g->nodes_n; i++)
			if (g->nodes[i] == n)
				g->nodes[i] = g->nodes[--g->nodes_n];
		execs_forget(g, n);
		node_free(n);
	}
	sc_cu_leave();
	return res;
}

/* ---- reading a graph ---- */

/*
 * The two-call protocol of cuGraphGetNodes and its like: with @out NULL,
 * the count; else up to *@num handles, and *@num the number written.
 * @per_item is 2 for edges, whose (from, to) go to @out and @out2.
 */
static CUresult list_handles(struct sc_cu_graph *g, unsigned op, uint64_t which,
			     CUgraphNode *out, CUgraphNode *out2, size_t *num)
{
	uint64_t buf[SC_CH_INLINE / 8];
	size_t got = 0, total = 0, per_item = op == SC_OP_GRAPH_EDGES ? 2 : 1;
	CUresult res = CUDA_SUCCESS;

	do {
		struct sc_req r = { .op = op, .ctx = sc_obj_ctx_real(&g->o),
				    .a = { g->o.real, which, got }, .out = buf,
				    .out_cap = sizeof(buf) };
		size_t items;

		if (op == SC_OP_GRAPH_EDGES)
			r.a[1] = got;
		if ((res = sc_cu_call(&r)) != CUDA_SUCCESS)
			break;
		total = r.a[0];
		items = r.out_len / (8 * per_item);
		if (!out || !items)
			break;
		for (size_t i = 0; i < items && got < *num; i++, got++) {
			struct sc_cu_gnode *a = sc_graph_node_wrap(g, buf[i * per_item]);
			struct sc_cu_gnode *b = per_item == 2 ? sc_graph_node_wrap(g, buf[2 * i + 1])
							      : NULL;

			if (!a || (per_item == 2 && !b))
				return CUDA_ERROR_OUT_OF_MEMORY;
			out[got] = (CUgraphNode)a;
			if (b)
				out2[got] = (CUgraphNode)b;
		}
	} while (got < total && got < *num);
	for (size_t i = got; res == CUDA_SUCCESS && out && i < *num; i++) {
		out[i] = NULL; /* as the driver: what the graph does not fill is NULL */
		if (out2)
			out2[i] = NULL;
	}
	if (res == CUDA_SUCCESS)
		*num = out ? got : total;
	return res;
}

static CUresult listing(CUgraph hGraph, unsigned op, uint64_t which, CUgraphNode *out,
			CUgraphNode *out2, size_t *num)
{
	struct sc_cu_graph *g = graph_of(hGraph);
	CUresult res;

	if (!g || !num)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = list_handles(g, op, which, out, out2, num);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
	return listing(hGraph, SC_OP_GRAPH_NODES, SC_GRAPH_ALL, nodes, NULL, numNodes);
}

SC_CU_API CUresult CUDAAPI cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes,
					       size_t *numRootNodes)
{
	return listing(hGraph, SC_OP_GRAPH_NODES, SC_GRAPH_ROOTS, rootNodes, NULL, numRootNodes);
}

SC_CU_API CUresult CUDAAPI cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
					   CUgraphEdgeData *edgeData, size_t *numEdges)
{
	CUresult res;

	if ((from == NULL) != (to == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	res = listing(hGraph, SC_OP_GRAPH_EDGES, 0, from, to, numEdges);
	if (res == CUDA_SUCCESS && edgeData && from) /* the proxy refuses any that is not plain */
		memset(edgeData, 0, *numEdges * sizeof(*edgeData));
	return res;
}

SC_CU_API CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
	struct sc_cu_gnode *n = node_of(hNode);
	uint64_t t = 0;
	CUresult res;

	if (!n || !type)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = simple(SC_OP_GRAPH_NODE_TYPE, sc_obj_ctx_real(&n->graph->o), n->o.real, 0, &t);
	sc_cu_leave();
	if (res == CUDA_SUCCESS)
		*type = (CUgraphNodeType)t;
	return res;
}

/* Node @n read back as a step of @type (a node of another type: CUDA_ERROR_INVALID_VALUE). */
static CUresult read_node(struct sc_cu_gnode *n, CUgraphNodeType type, struct sc_graph_step *st)
{
	static uint8_t data[SC_CH_INLINE]; /* the lock's writers are excluded: see below */
	static pthread_mutex_t data_lock = PTHREAD_MUTEX_INITIALIZER;
	struct sc_req r = { .op = SC_OP_GRAPH_DESCRIBE, .out = data, .out_cap = sizeof(data) };
	CUresult res;

	memset(st, 0, sizeof(*st));
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	pthread_mutex_lock(&data_lock); /* readers share the API lock, not this buffer */
	r.ctx = sc_obj_ctx_real(&n->graph->o);
	r.a[0] = n->o.real;
	if ((res = sc_cu_call(&r)) == CUDA_SUCCESS)
		res = r.a[1] == (uint64_t)type ? sc_graph_step_take(st, &r, data)
					       : CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_unlock(&data_lock);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode hNode,
						      CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct sc_cu_gnode *n = node_of(hNode);
	struct sc_graph_step st = { 0 };
	struct sc_cu_func *f;
	CUresult res;

	if (!nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = read_node(n, CU_GRAPH_NODE_TYPE_KERNEL, &st)) != CUDA_SUCCESS) {
		free(st.data);
		return res;
	}
	f = (struct sc_cu_func *)(uintptr_t)st.a[0];
	/* the values stay the node's until its parameters are read or changed again */
	free(n->params_buf);
	free(n->params_view);
	n->params_buf = st.data;
	n->params_view = calloc(f->params_n ? f->params_n : 1, sizeof(void *));
	if (!n->params_view)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (uint32_t i = 0; i < f->params_n; i++)
		n->params_view[i] = st.data + st.a[9] * sizeof(CUlaunchAttribute) + f->params_n * 8ull +
				    f->layout[2 * i];
	*nodeParams = (CUDA_KERNEL_NODE_PARAMS){
		.func = (CUfunction)f, .gridDimX = (unsigned)st.a[1], .gridDimY = (unsigned)st.a[2],
		.gridDimZ = (unsigned)st.a[3], .blockDimX = (unsigned)st.a[4],
		.blockDimY = (unsigned)st.a[5], .blockDimZ = (unsigned)st.a[6],
		.sharedMemBytes = (unsigned)st.a[7], .kernelParams = n->params_view,
	};
	return CUDA_SUCCESS;
}

/* The data of node @h of @type (a copy's CUDA_MEMCPY3D, a memset's parameters) at @out. */
static CUresult node_data(CUgraphNode h, CUgraphNodeType type, void *out, size_t size)
{
	struct sc_graph_step st = { 0 };
	CUresult res = out ? read_node(node_of(h), type, &st) : CUDA_ERROR_INVALID_VALUE;

	if (res == CUDA_SUCCESS)
		memcpy(out, st.data, size);
	free(st.data);
	return res;
}

SC_CU_API CUresult CUDAAPI cuGraphMemcpyNodeGetParams(CUgraphNode hNode,
						      CUDA_MEMCPY3D *nodeParams)
{
	return node_data(hNode, CU_GRAPH_NODE_TYPE_MEMCPY, nodeParams, sizeof(*nodeParams));
}

SC_CU_API CUresult CUDAAPI cuGraphMemsetNodeGetParams(CUgraphNode hNode,
						      CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
	return node_data(hNode, CU_GRAPH_NODE_TYPE_MEMSET, nodeParams, sizeof(*nodeParams));
}

static CUresult node_event(CUgraphNode hNode, CUgraphNodeType type, CUevent *out)
{
	struct sc_graph_step st = { 0 };
	CUresult res = out ? read_node(node_of(hNode), type, &st) : CUDA_ERROR_INVALID_VALUE;

	if (res == CUDA_SUCCESS)
		*out = (CUevent)(uintptr_t)st.a[0];
	free(st.data);
	return res;
}

SC_CU_API CUresult CUDAAPI cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
	return node_event(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event_out);
}

SC_CU_API CUresult CUDAAPI cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
	return node_event(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event_out);
}

/* ---- changing kernel nodes ---- */

/* Send kernel step @st for node @node (of executable graph @exec, 0: of its graph). */
static CUresult set_kernel(uint64_t ctx, uint64_t node, uint64_t exec,
			   const struct sc_graph_step *st)
{
	_Alignas(8) uint8_t buf[SC_CH_INLINE];
	struct sc_req r = { .op = SC_OP_GRAPH_SET_NODE, .ctx = ctx,
			    .a = { node, CU_GRAPH_NODE_TYPE_KERNEL, exec } };
	CUresult res = sc_graph_step_send(st, NULL, &r, buf, 0);

	return res == CUDA_SUCCESS ? sc_cu_call(&r) : res;
}

SC_CU_API CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode hNode,
						      const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct sc_cu_gnode *n = node_of(hNode);
	struct sc_graph_step st = { 0 };
	CUresult res;

	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = kernel_step(nodeParams, NULL, 0, &st)) != CUDA_SUCCESS)
		return res;
	if ((res = sc_cu_enter()) == CUDA_SUCCESS) {
		res = set_kernel(sc_obj_ctx_real(&n->graph->o), n->o.real, 0, &st);
		sc_cu_leave();
	}
	free(st.data);
	return res;
}

static CUresult node_attr(CUgraphNode hNode, CUkernelNodeAttrID attr, CUkernelNodeAttrValue *v,
			  bool set)
{
	struct sc_cu_gnode *n = node_of(hNode);
	struct sc_req r = { .op = SC_OP_GRAPH_NODE_ATTR, .a = { 0, (uint64_t)attr, set },
			    .in = set ? v : NULL, .in_len = set ? sizeof(*v) : 0,
			    .out = set ? NULL : v, .out_cap = set ? 0 : sizeof(*v) };
	CUresult res;

	if (!n || !v)
		return CUDA_ERROR_INVALID_VALUE;
	if (attr == CU_KERNEL_NODE_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE && set)
		return sc_cu_unsupported("a graph node that kernels update");
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	r.ctx = sc_obj_ctx_real(&n->graph->o);
	r.a[0] = n->o.real;
	res = sc_cu_call(&r);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuGraphKernelNodeGetAttribute(CUgraphNode hNode,
							 CUkernelNodeAttrID attr,
							 CUkernelNodeAttrValue *value_out)
{
	return node_attr(hNode, attr, value_out, false);
}

SC_CU_API CUresult CUDAAPI cuGraphKernelNodeSetAttribute(CUgraphNode hNode,
							 CUkernelNodeAttrID attr,
							 const CUkernelNodeAttrValue *value)
{
	return node_attr(hNode, attr, (CUkernelNodeAttrValue *)value, true);
}

/* ---- executable graphs ---- */

SC_CU_API CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
					      unsigned long long flags)
{
	struct sc_cu_graph *g = graph_of(hGraph);
	struct sc_cu_gexec *e;
	uint64_t ctx;
	CUresult res;

	if (!phGraphExec || !g)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	ctx = sc_obj_ctx_real(&g->o);
	if (!(e = sc_obj_new(SC_K_GEXEC, sizeof(*e), g->o.ctx))) {
		sc_cu_leave();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	e->flags = flags;
	e->from = g;
	/* read first: a graph a restart could not build again is refused now */
	res = sc_graph_describe(g, &e->desc);
	if (res == CUDA_SUCCESS)
		res = simple(SC_OP_GRAPH_INSTANTIATE, ctx, g->o.real, flags, &e->o.real);
	if (res == CUDA_SUCCESS)
		*phGraphExec = (CUgraphExec)e;
	else
		sc_graph_forget(&e->o);
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t *flags)
{
	struct sc_cu_gexec *e = exec_of(hGraphExec);

	if (!e || !flags)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = e->flags;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	struct sc_cu_gexec *e = exec_of(hGraphExec);
	CUresult res;

	if (!e)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if ((res = simple(SC_OP_GRAPH_EXEC_DESTROY, sc_obj_ctx_real(&e->o), e->o.real, 0,
			  NULL)) == CUDA_SUCCESS && e->built_real)
		res = simple(SC_OP_GRAPH_DESTROY, sc_obj_ctx_real(&e->o), e->built_real, 0, NULL);
	if (res == CUDA_SUCCESS)
		sc_graph_forget(&e->o);
	sc_cu_leave();
	return res;
}

/* Launches and uploads are posted, as the driver's are: errors come at the next sync. */
static CUresult post_exec(unsigned op, CUgraphExec hGraphExec, CUstream stream)
{
	struct sc_cu_gexec *e = exec_of(hGraphExec);
	struct sc_req r = { .op = op };
	uint64_t ctx;
	CUresult res;

	if (!e)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	r.a[0] = e->o.real;
	if ((res = sc_stream_target(stream, &r.a[1], &ctx)) == CUDA_SUCCESS) {
		r.ctx = sc_stream_is_default(stream) ? sc_obj_ctx_real(&e->o) : ctx;
		if (op == SC_OP_GRAPH_LAUNCH && sc_managed_live())
			res = sc_managed_before_work(r.ctx, r.a[1], SC_MANAGED_ANY, SIZE_MAX);
		if (res == CUDA_SUCCESS)
			res = sc_cu_post(&r);
	}
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	return post_exec(SC_OP_GRAPH_LAUNCH, hGraphExec, hStream);
}

SC_CU_API CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return post_exec(SC_OP_GRAPH_LAUNCH, hGraphExec, hStream ? hStream : CU_STREAM_PER_THREAD);
}

SC_CU_API CUresult CUDAAPI cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
	return post_exec(SC_OP_GRAPH_UPLOAD, hGraphExec, hStream);
}

SC_CU_API CUresult CUDAAPI cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return post_exec(SC_OP_GRAPH_UPLOAD, hGraphExec, hStream ? hStream : CU_STREAM_PER_THREAD);
}

/* The step of executable graph @e made from the program's node @n. */
static struct sc_graph_step *exec_step(struct sc_cu_gexec *e, const struct sc_cu_gnode *n)
{
	for (size_t i = 0; n && i < e->desc.n; i++)
		if (e->desc.steps[i].node == n)
			return &e->desc.steps[i];
	return NULL;
}

/*
 * Only the executable graph changes; its description takes the new
 * parameters, kernel node attributes as they were, so a restart
 * instantiates it as it now is.
 */
SC_CU_API CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec,
							  CUgraphNode hNode,
							  const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct sc_cu_gexec *e = exec_of(hGraphExec);
	struct sc_graph_step *old, st;
	CUresult res;

	if (!e || !nodeParams)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	old = exec_step(e, node_of(hNode));
	if (!old || old->type != CU_GRAPH_NODE_TYPE_KERNEL)
		res = CUDA_ERROR_INVALID_VALUE;
	else if ((res = kernel_step(nodeParams, old->data, old->a[9], &st)) == CUDA_SUCCESS) {
		res = set_kernel(sc_obj_ctx_real(&e->o), old->exec_real, e->o.real, &st);
		st.node = old->node;
		st.exec_real = old->exec_real;
		if (res == CUDA_SUCCESS) {
			free(old->data);
			*old = st;
		} else {
			free(st.data);
		}
	}
	sc_cu_leave();
	return res;
}

/*
 * The driver pairs the new graph's nodes with the executable graph's (the
 * topology must be the same); the description takes @d, the new graph's
 * nodes in its order, keeping the handles the program changes the
 * executable graph's nodes by, and the proxy's nodes there.
 */
static void exec_take_desc(struct sc_cu_gexec *e, struct sc_graph_desc *d)
{
	for (size_t i = 0; i < d->n && i < e->desc.n; i++) {
		d->steps[i].node = e->desc.steps[i].node;
		d->steps[i].exec_real = e->desc.steps[i].exec_real;
	}
	sc_graph_desc_free(&e->desc);
	e->desc = *d;
	memset(d, 0, sizeof(*d));
}

SC_CU_API CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
					     CUgraphExecUpdateResultInfo *resultInfo)
{
	struct sc_cu_gexec *e = exec_of(hGraphExec);
	struct sc_cu_graph *g = graph_of(hGraph);
	struct sc_req r = { .op = SC_OP_GRAPH_EXEC_UPDATE };
	struct sc_graph_desc d = { 0 };
	CUresult res;

	if (!e || !g || !resultInfo)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	memset(resultInfo, 0, sizeof(*resultInfo));
	/* read first, as cuGraphInstantiate does: an update a restart would lose is refused */
	if ((res = sc_graph_describe(g, &d)) == CUDA_SUCCESS) {
		r.ctx = sc_obj_ctx_real(&e->o);
		r.a[0] = e->o.real;
		r.a[1] = g->o.real;
		res = sc_cu_call(&r);
		resultInfo->result = (CUgraphExecUpdateResult)r.a[0];
		if (r.a[1])
			resultInfo->errorNode = (CUgraphNode)sc_graph_node_wrap(g, r.a[1]);
		if (r.a[2] && e->from)
			resultInfo->errorFromNode = (CUgraphNode)sc_graph_node_wrap(e->from, r.a[2]);
	}
	if (res == CUDA_SUCCESS)
		exec_take_desc(e, &d);
	sc_graph_desc_free(&d);
	sc_cu_leave();
	return res;
}
