/* SPDX-License-Identifier: MIT */
/*
 * softcuda_graph.c - CUDA graphs and executable graphs: building, reading,
 * instantiating, launching, updating.
 *
 * A graph keeps its nodes in the order they were added and its edges in the
 * order they were made, and reports them so, as the driver does. A node is a
 * heap struct owned by its graph; its handle is its address, valid while a
 * graph lists it. Kernel nodes keep copies of their parameter values, laid out
 * as the buffer of a launch through extra. Instantiation copies the graph into
 * the executable graph, each copy remembering the node it came from, so the
 * graph may change or go; a launch runs the copies at once, in the calling
 * thread, each after its dependencies (of the nodes ready, the first added).
 *
 * Stream capture (softcuda_capture.c) builds its graph with the sd_graph_*()
 * and sd_node_*() calls of softcuda_internal.h; a graph a capture builds
 * knows it, and may not go, lose nodes or be instantiated until it ends.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "softcuda_internal.h"

/* Kernel node attributes: the launch attributes valid for graph nodes that launches know. */
#define SD_NODE_ATTRS (CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT + 1)
#define SD_INSTANTIATE_FLAGS                                                          \
	(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |                            \
	 CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)

struct sd_knode {
	CUDA_KERNEL_NODE_PARAMS p;	/* kernelParams or extra point into values */
	unsigned char *values;		/* the parameters, where a launch buffer has them */
	size_t values_size;
	void **argv;			/* each parameter in values */
	unsigned n_params;
	void *extra[5];
	CUlaunchAttributeValue attrs[SD_NODE_ATTRS];	/* by id; never set: zero */
};

struct sd_node {
	CUgraphNodeType type;
	struct sd_node *orig;	/* in an executable graph: the node it was instantiated from */
	unsigned mark;		/* scratch of the walks over a graph */
	union {
		struct sd_knode kernel;
		struct {
			CUDA_MEMCPY3D p;
			CUcontext ctx;
		} copy;
		struct {
			CUDA_MEMSET_NODE_PARAMS p;
			CUcontext ctx;
		} set;
		CUevent event;
	} u;
};

struct sd_edge {
	struct sd_node *from, *to;
};

struct sd_graph {
	struct sd_obj obj;
	struct sd_node **nodes;
	size_t n_nodes, nodes_size;
	struct sd_edge *edges;
	size_t n_edges, edges_size;
	struct sd_capture *capture;	/* the capture building it, until that ends */
};

struct sd_exec {
	struct sd_obj obj;
	struct sd_graph g;		/* the copy: listed nowhere, its nodes are no handles */
	struct sd_node **order;		/* g's nodes in the order a launch runs them */
	unsigned long long flags;
};

/* @v with room for @want elements, or NULL (and @v untouched) if memory ran out. */
void *sd_grow(void *v, size_t *size, size_t want, size_t elem)
{
	size_t n = *size ? *size : 4;

	if (v && want <= *size)
		return v;
	while (n < want)
		n *= 2;
	v = realloc(v, n * elem);
	if (v)
		*size = n;
	return v;
}

/* Kernel nodes */

static void knode_release(struct sd_knode *k)
{
	free(k->values);
	free(k->argv);
	k->values = NULL;
	k->argv = NULL;
}

/* As cuda.h says, the parameters come back the way they were last set. */
static void knode_point(struct sd_knode *k, CUfunction handle,
			const CUDA_KERNEL_NODE_PARAMS *dims, int by_extra)
{
	k->p = (CUDA_KERNEL_NODE_PARAMS){
		.func = handle,
		.gridDimX = dims->gridDimX,
		.gridDimY = dims->gridDimY,
		.gridDimZ = dims->gridDimZ,
		.blockDimX = dims->blockDimX,
		.blockDimY = dims->blockDimY,
		.blockDimZ = dims->blockDimZ,
		.sharedMemBytes = dims->sharedMemBytes,
	};
	if (!by_extra) {
		k->p.kernelParams = k->argv;
		return;
	}
	k->extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
	k->extra[1] = k->values;
	k->extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
	k->extra[3] = &k->values_size;
	k->extra[4] = CU_LAUNCH_PARAM_END;
	k->p.extra = k->extra;
}

/* Storage replaced only once the new is filled: @args may point into the old. */
static void knode_take(struct sd_knode *k, unsigned char *values, size_t bytes, void **argv,
		       unsigned n)
{
	knode_release(k);
	k->values = values;
	k->values_size = bytes;
	k->argv = argv;
	k->n_params = n;
}

static CUresult knode_fill(struct sd_knode *k, CUfunction handle,
			   const CUDA_KERNEL_NODE_PARAMS *p, const struct sd_func *f, void **args)
{
	unsigned char *values = malloc(f->param_bytes ? f->param_bytes : 1);
	void **argv = malloc((f->n_params ? f->n_params : 1) * sizeof(*argv));

	if (!values || !argv) {
		free(values);
		free(argv);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (unsigned i = 0; i < f->n_params; i++) {
		argv[i] = values + f->param_offset[i];
		memcpy(argv[i], args[i], f->param_size[i]);
	}
	knode_take(k, values, f->param_bytes, argv, f->n_params);
	knode_point(k, handle, p, p->extra != NULL);
	return CUDA_SUCCESS;
}

/*
 * Parameters @p checked as a launch of them would be, their values copied.
 * A CUkernel goes in func, or in kern (then with ctx, NULL: the current).
 */
static CUresult knode_set(struct sd_knode *k, const CUDA_KERNEL_NODE_PARAMS *p)
{
	void *args[SD_MAX_PARAMS];
	struct softcuda_launch l;
	CUfunction handle;
	struct sd_func *f;
	struct sd_ctx *ctx;
	CUresult rc;

	if (!p || !(handle = p->func ? p->func : (CUfunction)p->kern))
		return CUDA_ERROR_INVALID_VALUE;
	if (!p->func && (rc = sd_ctx_or_current(p->ctx, &ctx)) != CUDA_SUCCESS)
		return rc;
	l = (struct softcuda_launch){
		.grid = { p->gridDimX, p->gridDimY, p->gridDimZ },
		.block = { p->blockDimX, p->blockDimY, p->blockDimZ },
		.shared_bytes = p->sharedMemBytes,
	};
	rc = sd_launch_args(handle, &l, p->kernelParams, p->extra, &f, args);
	return rc ? rc : knode_fill(k, handle, p, f, args);
}

static CUresult knode_copy(struct sd_knode *dst, const struct sd_knode *src)
{
	unsigned char *values = malloc(src->values_size ? src->values_size : 1);
	void **argv = malloc((src->n_params ? src->n_params : 1) * sizeof(*argv));

	if (!values || !argv) {
		free(values);
		free(argv);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memcpy(values, src->values, src->values_size);
	for (unsigned i = 0; i < src->n_params; i++)
		argv[i] = values + ((unsigned char *)src->argv[i] - src->values);
	knode_take(dst, values, src->values_size, argv, src->n_params);
	knode_point(dst, src->p.func, &src->p, src->p.extra != NULL);
	memcpy(dst->attrs, src->attrs, sizeof(dst->attrs));
	return CUDA_SUCCESS;
}

/* The launch attributes CUDA keeps on a kernel node, of those launches know. */
static int node_attr_id(CUkernelNodeAttrID id)
{
	switch (id) {
	case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
	case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
	case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
	case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
	case CU_LAUNCH_ATTRIBUTE_PRIORITY:
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
	case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
	case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		return 1;
	default:
		return 0;
	}
}

/* The attributes left at their default (zero) ask nothing of a launch. */
static CUresult knode_run(struct sd_knode *k, CUstream stream, int run)
{
	static const CUlaunchAttributeValue unset;
	struct softcuda_launch l = {
		.grid = { k->p.gridDimX, k->p.gridDimY, k->p.gridDimZ },
		.block = { k->p.blockDimX, k->p.blockDimY, k->p.blockDimZ },
		.shared_bytes = k->p.sharedMemBytes,
		.stream = stream,
	};
	void *args[SD_MAX_PARAMS];
	struct sd_func *f;
	CUresult rc = sd_launch_args(k->p.func, &l, k->argv, NULL, &f, args);

	for (unsigned id = 0; rc == CUDA_SUCCESS && id < SD_NODE_ATTRS; id++) {
		CUlaunchAttribute a = { .id = (CUlaunchAttributeID)id, .value = k->attrs[id] };

		if (memcmp(&k->attrs[id], &unset, sizeof(unset)))
			rc = sd_launch_attr_check(k->p.func, &l, &a);
	}
	if (rc == CUDA_SUCCESS && run)
		f->fn(&l, args);
	return rc;
}

/* Nodes */

static struct sd_node *node_new(CUgraphNodeType type)
{
	struct sd_node *node = calloc(1, sizeof(*node));

	if (node)
		node->type = type;
	return node;
}

void sd_node_free(struct sd_node *node)
{
	if (node->type == CU_GRAPH_NODE_TYPE_KERNEL)
		knode_release(&node->u.kernel);
	free(node);
}

static CUresult node_kernel(struct sd_node **out, const CUDA_KERNEL_NODE_PARAMS *p)
{
	struct sd_node *node = node_new(CU_GRAPH_NODE_TYPE_KERNEL);
	CUresult rc = node ? knode_set(&node->u.kernel, p) : CUDA_ERROR_OUT_OF_MEMORY;

	if (rc && node)
		sd_node_free(node);
	*out = rc ? NULL : node;
	return rc;
}

/* A captured launch's node: the stream's priority (cuda.h), the launch's attributes for nodes. */
CUresult sd_node_launch(struct sd_node **out, const CUDA_KERNEL_NODE_PARAMS *p, int priority,
			const CUlaunchAttribute *attrs, unsigned n_attrs)
{
	CUresult rc = node_kernel(out, p);

	if (rc)
		return rc;
	(*out)->u.kernel.attrs[CU_LAUNCH_ATTRIBUTE_PRIORITY].priority = priority;
	for (unsigned i = 0; i < n_attrs; i++)
		if (node_attr_id(attrs[i].id))
			(*out)->u.kernel.attrs[attrs[i].id] = attrs[i].value;
	return CUDA_SUCCESS;
}

CUresult sd_node_memcpy(struct sd_node **out, const CUDA_MEMCPY3D *c, CUcontext handle)
{
	struct sd_node *node;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_or_current(handle, &ctx);

	if (rc == CUDA_SUCCESS)
		rc = sd_memcpy3d(c, 0);
	if (rc)
		return rc;
	if (!(node = node_new(CU_GRAPH_NODE_TYPE_MEMCPY)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	node->u.copy.p = *c;
	node->u.copy.ctx = (CUcontext)ctx;
	*out = node;
	return CUDA_SUCCESS;
}

CUresult sd_node_memset(struct sd_node **out, const CUDA_MEMSET_NODE_PARAMS *p,
			CUcontext handle)
{
	struct sd_node *node;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_or_current(handle, &ctx);

	if (rc == CUDA_SUCCESS)
		rc = p ? sd_memset2d(p, 0) : CUDA_ERROR_INVALID_VALUE;
	if (rc)
		return rc;
	if (!(node = node_new(CU_GRAPH_NODE_TYPE_MEMSET)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	node->u.set.p = *p;
	node->u.set.ctx = (CUcontext)ctx;
	*out = node;
	return CUDA_SUCCESS;
}

CUresult sd_node_event(struct sd_node **out, CUgraphNodeType type, CUevent event)
{
	if (!sd_obj_find(SD_EVENT, event))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!(*out = node_new(type)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	(*out)->u.event = event;
	return CUDA_SUCCESS;
}

static CUresult node_copy(struct sd_node **out, const struct sd_node *src)
{
	struct sd_node *node = node_new(src->type);
	CUresult rc = CUDA_SUCCESS;

	if (!node)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (src->type == CU_GRAPH_NODE_TYPE_KERNEL)
		rc = knode_copy(&node->u.kernel, &src->u.kernel);
	else
		node->u = src->u;
	if (rc) {
		sd_node_free(node);
		return rc;
	}
	*out = node;
	return CUDA_SUCCESS;
}

/* Runs @node in @stream, or only checks it as its launch will; an event's work is done. */
static CUresult node_run(struct sd_node *node, CUstream stream, int run)
{
	switch (node->type) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		return knode_run(&node->u.kernel, stream, run);
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		return sd_memcpy3d(&node->u.copy.p, run);
	case CU_GRAPH_NODE_TYPE_MEMSET:
		return sd_memset2d(&node->u.set.p, run);
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		if (run)
			return sd_event_record(node->u.event, stream, 0);
		/* fall through */
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		return sd_obj_find(SD_EVENT, node->u.event) ? CUDA_SUCCESS :
							       CUDA_ERROR_INVALID_HANDLE;
	default:
		return CUDA_SUCCESS;
	}
}

/* Graphs */

static struct sd_graph *graph_find(CUgraph handle)
{
	struct sd_obj *obj = sd_obj_find(SD_GRAPH, handle);

	return obj ? sd_container(obj, struct sd_graph, obj) : NULL;
}

static int graph_has(const struct sd_graph *g, CUgraphNode handle)
{
	for (size_t i = 0; i < g->n_nodes; i++)
		if (g->nodes[i] == (struct sd_node *)handle)
			return 1;
	return 0;
}

/* A node of some graph, and which; stale and unknown handles are none. */
static struct sd_node *node_find(CUgraphNode handle, struct sd_graph **graph)
{
	for (struct sd_obj *obj = sd.objs[SD_GRAPH]; handle && obj; obj = obj->next) {
		struct sd_graph *g = sd_container(obj, struct sd_graph, obj);

		if (graph_has(g, handle)) {
			if (graph)
				*graph = g;
			return (struct sd_node *)handle;
		}
	}
	return NULL;
}

static struct sd_node *node_of_type(CUgraphNode handle, CUgraphNodeType type)
{
	struct sd_node *node = node_find(handle, NULL);

	return node && node->type == type ? node : NULL;
}

static int graph_has_edge(const struct sd_graph *g, const struct sd_node *from,
			  const struct sd_node *to)
{
	for (size_t i = 0; i < g->n_edges; i++)
		if (g->edges[i].from == from && g->edges[i].to == to)
			return 1;
	return 0;
}

struct sd_graph *sd_graph_new(struct sd_ctx *ctx)
{
	struct sd_graph *g = calloc(1, sizeof(*g));

	if (g)
		sd_obj_add(&g->obj, SD_GRAPH, ctx);
	return g;
}

static void graph_release(struct sd_graph *g)
{
	for (size_t i = 0; i < g->n_nodes; i++)
		sd_node_free(g->nodes[i]);
	free(g->nodes);
	free(g->edges);
}

/* A graph freed while a capture builds it leaves the capture invalidated. */
void sd_graph_free(struct sd_obj *obj)
{
	struct sd_graph *g = sd_container(obj, struct sd_graph, obj);

	if (g->capture)
		sd_capture_graph_gone(g->capture);
	sd_obj_del(obj);
	graph_release(g);
	free(g);
}

void sd_graph_destroy(struct sd_graph *g)
{
	sd_graph_free(&g->obj);
}

void sd_graph_set_capture(struct sd_graph *g, struct sd_capture *cap)
{
	g->capture = cap;
}

/* @deps (@n of them, no repeats) must be nodes of @g. */
static CUresult deps_check(const struct sd_graph *g, const CUgraphNode *deps, size_t n)
{
	if (n && !deps)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < n; i++) {
		if (!graph_has(g, deps[i]))
			return CUDA_ERROR_INVALID_VALUE;
		for (size_t j = 0; j < i; j++)
			if (deps[j] == deps[i])
				return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/* @node joins @g after @deps, an edge from each, in their order. */
CUresult sd_graph_append(struct sd_graph *g, struct sd_node *node, const CUgraphNode *deps,
			 size_t n)
{
	void *p;

	if (!(p = sd_grow(g->nodes, &g->nodes_size, g->n_nodes + 1, sizeof(*g->nodes))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	g->nodes = p;
	if (!(p = sd_grow(g->edges, &g->edges_size, g->n_edges + n, sizeof(*g->edges))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	g->edges = p;
	g->nodes[g->n_nodes++] = node;
	for (size_t i = 0; i < n; i++)
		g->edges[g->n_edges++] = (struct sd_edge){ (struct sd_node *)deps[i], node };
	return CUDA_SUCCESS;
}

/* cuGraphAdd*Node: @node (made, checked) joins the graph, or is freed. */
static CUresult node_add(CUgraphNode *out, CUgraph handle, const CUgraphNode *deps, size_t n,
			 struct sd_node *node)
{
	struct sd_graph *g = graph_find(handle);
	CUresult rc = out && g ? deps_check(g, deps, n) : CUDA_ERROR_INVALID_VALUE;

	if (rc == CUDA_SUCCESS)
		rc = sd_graph_append(g, node, deps, n);
	if (rc) {
		sd_node_free(node);
		return rc;
	}
	*out = (CUgraphNode)node;
	return CUDA_SUCCESS;
}

/* Takes @node and its edges out of @g, keeping the order of the others. */
static void graph_remove(struct sd_graph *g, struct sd_node *node)
{
	size_t i, kept = 0;

	for (i = 0; i < g->n_edges; i++)
		if (g->edges[i].from != node && g->edges[i].to != node)
			g->edges[kept++] = g->edges[i];
	g->n_edges = kept;
	for (i = kept = 0; i < g->n_nodes; i++)
		if (g->nodes[i] != node)
			g->nodes[kept++] = g->nodes[i];
	g->n_nodes = kept;
	sd_node_free(node);
}

/* @dst (empty) becomes a deep copy of @src; its nodes remember theirs if @link. */
static CUresult graph_copy(struct sd_graph *dst, struct sd_graph *src, int link)
{
	CUresult rc = CUDA_SUCCESS;
	size_t i;

	dst->nodes = sd_grow(NULL, &dst->nodes_size, src->n_nodes, sizeof(*dst->nodes));
	dst->edges = sd_grow(NULL, &dst->edges_size, src->n_edges, sizeof(*dst->edges));
	if (!dst->nodes || !dst->edges)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (i = 0; rc == CUDA_SUCCESS && i < src->n_nodes; i++) {
		src->nodes[i]->mark = (unsigned)i;
		rc = node_copy(&dst->nodes[i], src->nodes[i]);
		if (rc == CUDA_SUCCESS)
			dst->nodes[dst->n_nodes++]->orig = link ? src->nodes[i] : NULL;
	}
	for (i = 0; rc == CUDA_SUCCESS && i < src->n_edges; i++)
		dst->edges[dst->n_edges++] = (struct sd_edge){
			dst->nodes[src->edges[i].from->mark], dst->nodes[src->edges[i].to->mark]
		};
	return rc;
}

/*
 * @g's nodes in an order that runs each after its dependencies: of the nodes
 * ready, the first added. -1 if the edges make a cycle.
 */
static int graph_order(struct sd_graph *g, struct sd_node **order)
{
	size_t i, k, e;

	for (i = 0; i < g->n_nodes; i++)
		g->nodes[i]->mark = 0;
	for (e = 0; e < g->n_edges; e++)
		g->edges[e].to->mark++;
	for (k = 0; k < g->n_nodes; k++) {
		for (i = 0; i < g->n_nodes && g->nodes[i]->mark; i++)
			;
		if (i == g->n_nodes)
			return -1;
		order[k] = g->nodes[i];
		order[k]->mark = UINT_MAX;	/* done: no edge leads to it any more */
		for (e = 0; e < g->n_edges; e++)
			if (g->edges[e].from == order[k])
				g->edges[e].to->mark--;
	}
	return 0;
}

/* Marks every node a marked node depends on, until nothing changes. */
static void mark_ancestors(struct sd_graph *g)
{
	int changed = 1;

	while (changed) {
		changed = 0;
		for (size_t i = g->n_edges; i-- > 0;) {
			if (g->edges[i].to->mark && !g->edges[i].from->mark) {
				g->edges[i].from->mark = 1;
				changed = 1;
			}
		}
	}
}

/* Each of @from is one of @to or a node one of them depends on, however far back. */
int sd_graph_holds(const struct sd_graph *g, CUgraphNode node)
{
	for (size_t i = 0; i < g->n_nodes; i++)
		if ((CUgraphNode)g->nodes[i] == node)
			return 1;
	return 0;
}

int sd_graph_leads_into(struct sd_graph *g, const CUgraphNode *from, size_t n_from,
			const CUgraphNode *to, size_t n_to)
{
	size_t i;

	for (i = 0; i < g->n_nodes; i++)
		g->nodes[i]->mark = 0;
	for (i = 0; i < n_to; i++)
		((struct sd_node *)to[i])->mark = 1;
	mark_ancestors(g);
	for (i = 0; i < n_from; i++)
		if (!((struct sd_node *)from[i])->mark)
			return 0;
	return 1;
}

static CUresult graph_create(CUgraph *out, unsigned flags)
{
	struct sd_graph *g;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!out || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!(g = sd_graph_new(ctx)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = (CUgraph)g;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphCreate(CUgraph *graph, unsigned int flags)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(graph_create(graph, flags));
}

/* While a capture builds a graph, it may not go, nor lose nodes (cuStreamGetCaptureInfo). */
CUresult CUDAAPI cuGraphDestroy(CUgraph handle)
{
	struct sd_graph *g;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(g = graph_find(handle)) || g->capture)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	sd_graph_free(&g->obj);
	return sd_leave(CUDA_SUCCESS);
}

static CUresult graph_clone(CUgraph *out, CUgraph handle)
{
	struct sd_graph *g = graph_find(handle), *clone;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!out || !g)
		return CUDA_ERROR_INVALID_VALUE;
	if (!(clone = sd_graph_new(ctx)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = graph_copy(clone, g, 0);
	if (rc) {
		sd_graph_free(&clone->obj);
		return rc;
	}
	*out = (CUgraph)clone;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphClone(CUgraph *clone, CUgraph graph)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(graph_clone(clone, graph));
}

CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
				      size_t n_deps, const CUDA_KERNEL_NODE_PARAMS *params)
{
	struct sd_node *made;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = node_kernel(&made, params);
	return sd_leave(rc ? rc : node_add(node, graph, deps, n_deps, made));
}

CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
				      size_t n_deps, const CUDA_MEMCPY3D *copy, CUcontext ctx)
{
	struct sd_node *made;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_node_memcpy(&made, copy, ctx);
	return sd_leave(rc ? rc : node_add(node, graph, deps, n_deps, made));
}

CUresult CUDAAPI cuGraphAddMemsetNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
				      size_t n_deps, const CUDA_MEMSET_NODE_PARAMS *set,
				      CUcontext ctx)
{
	struct sd_node *made;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_node_memset(&made, set, ctx);
	return sd_leave(rc ? rc : node_add(node, graph, deps, n_deps, made));
}

CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
				     size_t n_deps)
{
	struct sd_node *made;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(made = node_new(CU_GRAPH_NODE_TYPE_EMPTY)))
		return sd_leave(CUDA_ERROR_OUT_OF_MEMORY);
	return sd_leave(node_add(node, graph, deps, n_deps, made));
}

CUresult CUDAAPI cuGraphAddEventRecordNode(CUgraphNode *node, CUgraph graph,
					   const CUgraphNode *deps, size_t n_deps, CUevent event)
{
	struct sd_node *made;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_node_event(&made, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event);
	return sd_leave(rc ? rc : node_add(node, graph, deps, n_deps, made));
}

CUresult CUDAAPI cuGraphAddEventWaitNode(CUgraphNode *node, CUgraph graph,
					 const CUgraphNode *deps, size_t n_deps, CUevent event)
{
	struct sd_node *made;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = sd_node_event(&made, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event);
	return sd_leave(rc ? rc : node_add(node, graph, deps, n_deps, made));
}

/* Default edges only: programmatic ones need ports the device does not model. */
static CUresult edge_data_check(const CUgraphEdgeData *data, size_t n)
{
	static const unsigned char zero[5];

	for (size_t i = 0; data && i < n; i++) {
		if (memcmp(data[i].reserved, zero, sizeof(zero)))
			return CUDA_ERROR_INVALID_VALUE;
		if (data[i].from_port || data[i].to_port || data[i].type)
			return CUDA_ERROR_NOT_SUPPORTED;
	}
	return CUDA_SUCCESS;
}

/* All or nothing: each pair of two nodes of @g, neither an edge already nor a repeat. */
static CUresult edges_check(const struct sd_graph *g, const CUgraphNode *from,
			    const CUgraphNode *to, size_t n)
{
	if (n && (!from || !to))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < n; i++) {
		if (!graph_has(g, from[i]) || !graph_has(g, to[i]) || from[i] == to[i] ||
		    graph_has_edge(g, (struct sd_node *)from[i], (struct sd_node *)to[i]))
			return CUDA_ERROR_INVALID_VALUE;
		for (size_t j = 0; j < i; j++)
			if (from[j] == from[i] && to[j] == to[i])
				return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static CUresult add_dependencies(CUgraph handle, const CUgraphNode *from, const CUgraphNode *to,
				 const CUgraphEdgeData *data, size_t n)
{
	struct sd_graph *g = graph_find(handle);
	CUresult rc = g ? edges_check(g, from, to, n) : CUDA_ERROR_INVALID_VALUE;
	void *p;

	if (rc == CUDA_SUCCESS)
		rc = edge_data_check(data, n);
	if (rc)
		return rc;
	if (!(p = sd_grow(g->edges, &g->edges_size, g->n_edges + n, sizeof(*g->edges))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	g->edges = p;
	for (size_t i = 0; i < n; i++)
		g->edges[g->n_edges++] = (struct sd_edge){ (struct sd_node *)from[i],
							   (struct sd_node *)to[i] };
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphAddDependencies(CUgraph graph, const CUgraphNode *from,
					const CUgraphNode *to, const CUgraphEdgeData *data,
					size_t n)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(add_dependencies(graph, from, to, data, n));
}

/* The driver's two-call protocol: the count, or up to *num nodes and NULL after them. */
static void fill_nodes(CUgraphNode *out, size_t *num, struct sd_node *const *nodes, size_t n)
{
	if (!out) {
		*num = n;
		return;
	}
	for (size_t i = 0; i < *num; i++)
		out[i] = i < n ? (CUgraphNode)nodes[i] : NULL;
	if (*num > n)
		*num = n;
}

CUresult CUDAAPI cuGraphGetNodes(CUgraph graph, CUgraphNode *nodes, size_t *num)
{
	struct sd_graph *g;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(g = graph_find(graph)) || !num)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	fill_nodes(nodes, num, g->nodes, g->n_nodes);
	return sd_leave(CUDA_SUCCESS);
}

static CUresult root_nodes(CUgraph graph, CUgraphNode *roots, size_t *num)
{
	struct sd_graph *g = graph_find(graph);
	struct sd_node **found;
	size_t i, n = 0;

	if (!g || !num)
		return CUDA_ERROR_INVALID_VALUE;
	if (!(found = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof(*found))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (i = 0; i < g->n_nodes; i++)
		g->nodes[i]->mark = 0;
	for (i = 0; i < g->n_edges; i++)
		g->edges[i].to->mark = 1;
	for (i = 0; i < g->n_nodes; i++)
		if (!g->nodes[i]->mark)
			found[n++] = g->nodes[i];
	fill_nodes(roots, num, found, n);
	free(found);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphGetRootNodes(CUgraph graph, CUgraphNode *roots, size_t *num)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(root_nodes(graph, roots, num));
}

/* Every edge has default data here: a NULL @data is never a lossy query. */
static CUresult get_edges(CUgraph graph, CUgraphNode *from, CUgraphNode *to,
			  CUgraphEdgeData *data, size_t *num)
{
	struct sd_graph *g = graph_find(graph);

	if (!g || !num || !from != !to || (data && !from))
		return CUDA_ERROR_INVALID_VALUE;
	if (!from) {
		*num = g->n_edges;
		return CUDA_SUCCESS;
	}
	for (size_t i = 0; i < *num; i++) {
		from[i] = i < g->n_edges ? (CUgraphNode)g->edges[i].from : NULL;
		to[i] = i < g->n_edges ? (CUgraphNode)g->edges[i].to : NULL;
		if (data)
			data[i] = (CUgraphEdgeData){ 0 };
	}
	if (*num > g->n_edges)
		*num = g->n_edges;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphGetEdges(CUgraph graph, CUgraphNode *from, CUgraphNode *to,
				 CUgraphEdgeData *data, size_t *num)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(get_edges(graph, from, to, data, num));
}

/* The nodes at the other end of @handle's edges: its dependencies (@in), or its dependents. */
static CUresult neighbours(CUgraphNode handle, int in, CUgraphNode *out, CUgraphEdgeData *data,
			   size_t *num)
{
	struct sd_graph *g;
	struct sd_node *node = node_find(handle, &g);
	size_t found = 0;

	if (!node || !num || (data && !out))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < g->n_edges; i++) {
		struct sd_node *mine = in ? g->edges[i].to : g->edges[i].from;

		if (mine != node)
			continue;
		if (out && found < *num) {
			out[found] = (CUgraphNode)(in ? g->edges[i].from : g->edges[i].to);
			if (data)
				data[found] = (CUgraphEdgeData){ 0 };
		}
		found++;
	}
	*num = out && found > *num ? *num : found;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode handle, CUgraphNode *deps,
					    CUgraphEdgeData *data, size_t *num)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(neighbours(handle, 1, deps, data, num));
}

CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode handle, CUgraphNode *deps,
					      CUgraphEdgeData *data, size_t *num)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(neighbours(handle, 0, deps, data, num));
}

CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode handle, CUgraphNodeType *type)
{
	struct sd_node *node;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(node = node_find(handle, NULL)) || !type)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*type = node->type;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphDestroyNode(CUgraphNode handle)
{
	struct sd_graph *g;
	struct sd_node *node;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(node = node_find(handle, &g)) || g->capture)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	graph_remove(g, node);
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode handle, CUDA_KERNEL_NODE_PARAMS *params)
{
	struct sd_node *node;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(node = node_of_type(handle, CU_GRAPH_NODE_TYPE_KERNEL)) || !params)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*params = node->u.kernel.p;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode handle,
					    const CUDA_KERNEL_NODE_PARAMS *params)
{
	struct sd_node *node;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(node = node_of_type(handle, CU_GRAPH_NODE_TYPE_KERNEL)))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	return sd_leave(knode_set(&node->u.kernel, params));
}

CUresult CUDAAPI cuGraphKernelNodeGetAttribute(CUgraphNode handle, CUkernelNodeAttrID attr,
					       CUkernelNodeAttrValue *value)
{
	struct sd_node *node;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(node = node_of_type(handle, CU_GRAPH_NODE_TYPE_KERNEL)) || !node_attr_id(attr) ||
	    !value)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*value = node->u.kernel.attrs[attr];
	return sd_leave(CUDA_SUCCESS);
}

/* Checked when the graph is instantiated and launched, against the node's dimensions then. */
CUresult CUDAAPI cuGraphKernelNodeSetAttribute(CUgraphNode handle, CUkernelNodeAttrID attr,
					       const CUkernelNodeAttrValue *value)
{
	struct sd_node *node;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(node = node_of_type(handle, CU_GRAPH_NODE_TYPE_KERNEL)) || !node_attr_id(attr) ||
	    !value)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	node->u.kernel.attrs[attr] = *value;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphMemcpyNodeGetParams(CUgraphNode handle, CUDA_MEMCPY3D *params)
{
	struct sd_node *node;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(node = node_of_type(handle, CU_GRAPH_NODE_TYPE_MEMCPY)) || !params)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*params = node->u.copy.p;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphMemsetNodeGetParams(CUgraphNode handle, CUDA_MEMSET_NODE_PARAMS *params)
{
	struct sd_node *node;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(node = node_of_type(handle, CU_GRAPH_NODE_TYPE_MEMSET)) || !params)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*params = node->u.set.p;
	return sd_leave(CUDA_SUCCESS);
}

static CUresult node_get_event(CUgraphNode handle, CUgraphNodeType type, CUevent *event)
{
	struct sd_node *node = node_of_type(handle, type);

	if (!node || !event)
		return CUDA_ERROR_INVALID_VALUE;
	*event = node->u.event;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphEventRecordNodeGetEvent(CUgraphNode handle, CUevent *event)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc :
		    sd_leave(node_get_event(handle, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event));
}

CUresult CUDAAPI cuGraphEventWaitNodeGetEvent(CUgraphNode handle, CUevent *event)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(node_get_event(handle, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event));
}

/* Executable graphs */

static struct sd_exec *exec_find(CUgraphExec handle)
{
	struct sd_obj *obj = sd_obj_find(SD_GRAPH_EXEC, handle);

	return obj ? sd_container(obj, struct sd_exec, obj) : NULL;
}

static void exec_release(struct sd_exec *e)
{
	graph_release(&e->g);
	free(e->order);
	free(e);
}

void sd_exec_free(struct sd_obj *obj)
{
	sd_obj_del(obj);
	exec_release(sd_container(obj, struct sd_exec, obj));
}

/* cuda.h's rules for a graph launched from the device, those that apply here. */
static int device_launchable(const struct sd_graph *g)
{
	CUcontext ctx = NULL;

	for (size_t i = 0; i < g->n_nodes; i++) {
		const struct sd_node *node = g->nodes[i];
		CUcontext c = node->type == CU_GRAPH_NODE_TYPE_MEMCPY ? node->u.copy.ctx :
			      node->type == CU_GRAPH_NODE_TYPE_MEMSET ? node->u.set.ctx : NULL;

		if (node->type != CU_GRAPH_NODE_TYPE_KERNEL && !c)
			return 0;
		if (node->type == CU_GRAPH_NODE_TYPE_MEMCPY &&
		    (node->u.copy.p.srcMemoryType == CU_MEMORYTYPE_ARRAY ||
		     node->u.copy.p.dstMemoryType == CU_MEMORYTYPE_ARRAY))
			return 0;
		if (c && ctx && c != ctx)
			return 0;
		ctx = c ? c : ctx;
	}
	return g->n_nodes > 0;
}

/* Flags that change nothing on a synchronous device are kept, and answered. */
static CUresult instantiate_flags(const struct sd_graph *g, unsigned long long flags)
{
	if (flags & ~(unsigned long long)SD_INSTANTIATE_FLAGS)
		return CUDA_ERROR_INVALID_VALUE;
	if (!(flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH))
		return CUDA_SUCCESS;
	if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) || !device_launchable(g))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* The copy, its order, and every node checked as its launch will check it. */
static CUresult exec_build(struct sd_exec *e, struct sd_graph *g)
{
	CUresult rc = graph_copy(&e->g, g, 1);

	if (rc)
		return rc;
	if (!(e->order = calloc(g->n_nodes ? g->n_nodes : 1, sizeof(*e->order))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (graph_order(&e->g, e->order))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; rc == CUDA_SUCCESS && i < e->g.n_nodes; i++)
		rc = node_run(e->g.nodes[i], NULL, 0);
	return rc;
}

/* A graph a capture still builds cannot be instantiated yet. */
static CUresult instantiate(CUgraphExec *out, CUgraph handle, unsigned long long flags)
{
	struct sd_graph *g = graph_find(handle);
	struct sd_exec *e;
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!out || !g || g->capture)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = instantiate_flags(g, flags)) != CUDA_SUCCESS)
		return rc;
	if (!(e = calloc(1, sizeof(*e))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((rc = exec_build(e, g)) != CUDA_SUCCESS) {
		exec_release(e);
		return rc;
	}
	e->flags = flags;
	sd_obj_add(&e->obj, SD_GRAPH_EXEC, ctx);
	*out = (CUgraphExec)e;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph,
					     unsigned long long flags)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(instantiate(exec, graph, flags));
}

CUresult CUDAAPI cuGraphExecGetFlags(CUgraphExec handle, cuuint64_t *flags)
{
	struct sd_exec *e;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(e = exec_find(handle)) || !flags)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*flags = e->flags;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec handle)
{
	struct sd_exec *e;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!(e = exec_find(handle)))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	sd_exec_free(&e->obj);
	return sd_leave(CUDA_SUCCESS);
}

/* A current context, the graph, a stream whose work runs now (not one that captures). */
static CUresult exec_begin(CUgraphExec handle, CUstream stream, struct sd_exec **e)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!(*e = exec_find(handle)))
		return CUDA_ERROR_INVALID_VALUE;
	return sd_stream_check(stream);
}

/* The flags of cuGraphInstantiateWithFlags; an upload asked for is made on its stream. */
CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec *exec, CUgraph graph,
					      CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	struct sd_exec *e;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!p)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	p->hErrNode_out = NULL;
	rc = instantiate(exec, graph, p->flags & ~(cuuint64_t)CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
	if (!rc && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD))
		rc = exec_begin(*exec, p->hUploadStream, &e);
	p->result_out = rc ? CUDA_GRAPH_INSTANTIATE_ERROR : CUDA_GRAPH_INSTANTIATE_SUCCESS;
	return sd_leave(rc);
}

CUresult CUDAAPI cuGraphUpload(CUgraphExec handle, CUstream stream)
{
	struct sd_exec *e;
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(exec_begin(handle, stream, &e));
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec handle, CUstream stream)
{
	struct sd_exec *e;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	rc = exec_begin(handle, stream, &e);
	for (size_t i = 0; rc == CUDA_SUCCESS && i < e->g.n_nodes; i++)
		rc = node_run(e->order[i], stream, 1);
	return sd_leave(rc);
}

static struct sd_node *exec_node(const struct sd_exec *e, const struct sd_node *orig)
{
	for (size_t i = 0; i < e->g.n_nodes; i++)
		if (e->g.nodes[i]->orig == orig)
			return e->g.nodes[i];
	return NULL;
}

/* The context a function belongs to: its module's; none for a library's. */
static struct sd_ctx *func_ctx(CUfunction handle)
{
	struct sd_func *f = sd_func_or_kernel(handle);

	return f ? f->mod->obj.ctx : NULL;
}

static CUresult exec_kernel_set(CUgraphExec handle, CUgraphNode orig,
				const CUDA_KERNEL_NODE_PARAMS *p)
{
	struct sd_exec *e = exec_find(handle);
	struct sd_node *node = node_of_type(orig, CU_GRAPH_NODE_TYPE_KERNEL);

	if (!e || !node || !p || !(node = exec_node(e, node)))
		return CUDA_ERROR_INVALID_VALUE;
	if (func_ctx(p->func ? p->func : (CUfunction)p->kern) != func_ctx(node->u.kernel.p.func))
		return CUDA_ERROR_INVALID_VALUE;
	return knode_set(&node->u.kernel, p);
}

CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node,
						const CUDA_KERNEL_NODE_PARAMS *params)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(exec_kernel_set(exec, node, params));
}

static size_t dep_count(const struct sd_graph *g, const struct sd_node *node)
{
	size_t n = 0;

	for (size_t i = 0; i < g->n_edges; i++)
		n += g->edges[i].to == node;
	return n;
}

/*
 * cuGraphExecUpdate's topology rules, nodes paired by their order of
 * addition: the same count, types, and dependencies of each node.
 */
static int update_topology(struct sd_exec *e, struct sd_graph *g,
			   CUgraphExecUpdateResultInfo *info)
{
	size_t i;

	if (e->g.n_nodes != g->n_nodes)
		return 0;
	for (i = 0; i < g->n_nodes; i++) {
		if (g->nodes[i]->type != e->g.nodes[i]->type) {
			info->result = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
			info->errorNode = (CUgraphNode)g->nodes[i];
			return 0;
		}
		g->nodes[i]->mark = (unsigned)i;
		if (dep_count(g, g->nodes[i]) != dep_count(&e->g, e->g.nodes[i])) {
			info->errorNode = (CUgraphNode)g->nodes[i];
			return 0;
		}
	}
	for (i = 0; i < g->n_edges; i++) {
		const struct sd_edge *edge = &g->edges[i];
		const struct sd_node *from = e->g.nodes[edge->from->mark];

		if (!graph_has_edge(&e->g, from, e->g.nodes[edge->to->mark])) {
			info->errorNode = (CUgraphNode)edge->to;
			info->errorFromNode = (CUgraphNode)edge->from;
			return 0;
		}
	}
	return 1;
}

/* What cuda.h says a node's update may not change, of what the device models. */
static CUgraphExecUpdateResult update_node(const struct sd_exec *e, const struct sd_node *old,
					   const struct sd_node *new)
{
	const struct sd_knode *a = &old->u.kernel, *b = &new->u.kernel;

	switch (new->type) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		if (func_ctx(a->p.func) != func_ctx(b->p.func))
			return CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE;
		if (!a->attrs[CU_LAUNCH_ATTRIBUTE_COOPERATIVE].cooperative !=
			    !b->attrs[CU_LAUNCH_ATTRIBUTE_COOPERATIVE].cooperative ||
		    ((e->flags & CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY) &&
		     a->attrs[CU_LAUNCH_ATTRIBUTE_PRIORITY].priority !=
			     b->attrs[CU_LAUNCH_ATTRIBUTE_PRIORITY].priority))
			return CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED;
		return CU_GRAPH_EXEC_UPDATE_SUCCESS;
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		return old->u.copy.p.srcMemoryType != new->u.copy.p.srcMemoryType ||
				       old->u.copy.p.dstMemoryType != new->u.copy.p.dstMemoryType ?
			       CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED :
			       CU_GRAPH_EXEC_UPDATE_SUCCESS;
	case CU_GRAPH_NODE_TYPE_MEMSET:
		/* a 2D memset may change its address and value only */
		return old->u.set.p.elementSize != new->u.set.p.elementSize ||
				       ((old->u.set.p.height > 1 || new->u.set.p.height > 1) &&
					(old->u.set.p.width != new->u.set.p.width ||
					 old->u.set.p.height != new->u.set.p.height ||
					 old->u.set.p.pitch != new->u.set.p.pitch)) ?
			       CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED :
			       CU_GRAPH_EXEC_UPDATE_SUCCESS;
	default:
		return CU_GRAPH_EXEC_UPDATE_SUCCESS;
	}
}

/* The graph's parameters replace the copy's; each node keeps the node it came from. */
static CUresult update_take(struct sd_exec *e, struct sd_graph *g)
{
	struct sd_graph fresh = { 0 };
	struct sd_node **order = calloc(g->n_nodes ? g->n_nodes : 1, sizeof(*order));
	CUresult rc = order ? graph_copy(&fresh, g, 0) : CUDA_ERROR_OUT_OF_MEMORY;

	if (rc == CUDA_SUCCESS && graph_order(&fresh, order))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc) {
		graph_release(&fresh);
		free(order);
		return rc;
	}
	for (size_t i = 0; i < fresh.n_nodes; i++)
		fresh.nodes[i]->orig = e->g.nodes[i]->orig;
	graph_release(&e->g);
	free(e->order);
	e->g = fresh;
	e->order = order;
	return CUDA_SUCCESS;
}

static CUresult exec_update(CUgraphExec handle, CUgraph graph, CUgraphExecUpdateResultInfo *info)
{
	struct sd_exec *e = exec_find(handle);
	struct sd_graph *g = graph_find(graph);
	CUresult rc;

	if (!info)
		return CUDA_ERROR_INVALID_VALUE;
	*info = (CUgraphExecUpdateResultInfo){ CU_GRAPH_EXEC_UPDATE_ERROR, NULL, NULL };
	if (!e || !g || g->capture)
		return CUDA_ERROR_INVALID_VALUE;
	info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
	if (!update_topology(e, g, info))
		return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
	for (size_t i = 0; i < g->n_nodes; i++) {
		info->result = update_node(e, e->g.nodes[i], g->nodes[i]);
		if (info->result != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
			info->errorNode = (CUgraphNode)g->nodes[i];
			return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
		}
	}
	rc = update_take(e, g);
	info->result = rc ? CU_GRAPH_EXEC_UPDATE_ERROR : CU_GRAPH_EXEC_UPDATE_SUCCESS;
	return rc;
}

CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec exec, CUgraph graph,
				   CUgraphExecUpdateResultInfo *info)
{
	CUresult rc = sd_enter(__func__);

	return rc ? rc : sd_leave(exec_update(exec, graph, info));
}
