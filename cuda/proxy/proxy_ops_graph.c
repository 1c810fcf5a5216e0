/* SPDX-License-Identifier: MIT */
/*
 * proxy_ops_graph.c - CUDA graphs and stream capture.
 *
 * A node travels in one form whichever way it goes (proxy_requests.h, "the
 * node"): the library adds nodes in it, changes kernel nodes in it, and at a
 * checkpoint reads every node of every live graph back in it, so that a
 * restart can build the same graph again, captured or not.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda/proxy/proxy_internal.h"

#define GRAPH(v) ((CUgraph)(uintptr_t)(v))
#define NODE(v) ((CUgraphNode)(uintptr_t)(v))
#define EXEC(v) ((CUgraphExec)(uintptr_t)(v))
#define HANDLE(p) ((uint64_t)(uintptr_t)(p))

/* The kernel node attributes a graph keeps, which a rebuilt node must have again. */
static const CUkernelNodeAttrID kernel_attrs[] = {
	CU_KERNEL_NODE_ATTRIBUTE_ACCESS_POLICY_WINDOW,
	CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE,
	CU_KERNEL_NODE_ATTRIBUTE_CLUSTER_DIMENSION,
	CU_KERNEL_NODE_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE,
	CU_KERNEL_NODE_ATTRIBUTE_PRIORITY,
	CU_KERNEL_NODE_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP,
	CU_KERNEL_NODE_ATTRIBUTE_MEM_SYNC_DOMAIN,
	CU_KERNEL_NODE_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION,
	CU_KERNEL_NODE_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
};

#define KERNEL_ATTRS_N (sizeof(kernel_attrs) / sizeof(kernel_attrs[0]))

/* A kernel node's parameters from the request (a3.., @data of @len bytes). */
struct kernel_in {
	CUDA_KERNEL_NODE_PARAMS p;
	void *params[SC_PROXY_MAX_PARAMS];
	CUlaunchAttribute attrs[SC_LAUNCH_ATTRS_MAX];
	uint64_t attrs_n;
};

static CUresult kernel_from(const struct sc_ch_slot *s, uint8_t *data, uint64_t len,
			    struct kernel_in *k)
{
	uint64_t n = s->a[11], attrs_len;

	k->attrs_n = s->a[12];
	attrs_len = k->attrs_n * sizeof(CUlaunchAttribute);
	if (k->attrs_n > SC_LAUNCH_ATTRS_MAX || attrs_len > len)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(k->attrs, data, attrs_len); /* aligned for the driver */
	k->p = (CUDA_KERNEL_NODE_PARAMS){
		.func = (CUfunction)(uintptr_t)s->a[3],
		.gridDimX = (unsigned)s->a[4], .gridDimY = (unsigned)s->a[5],
		.gridDimZ = (unsigned)s->a[6], .blockDimX = (unsigned)s->a[7],
		.blockDimY = (unsigned)s->a[8], .blockDimZ = (unsigned)s->a[9],
		.sharedMemBytes = (unsigned)s->a[10], .kernelParams = n ? k->params : NULL,
	};
	return sc_proxy_unpack_params(data + attrs_len, len - attrs_len, n, k->params);
}

static CUresult set_kernel_attrs(CUgraphNode node, const struct kernel_in *k)
{
	CUresult r = CUDA_SUCCESS;

	for (uint64_t i = 0; r == CUDA_SUCCESS && i < k->attrs_n; i++)
		r = sc_drv.cuGraphKernelNodeSetAttribute(node, k->attrs[i].id, &k->attrs[i].value);
	return r;
}

static CUresult add_kernel(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n,
			   const struct sc_ch_slot *s, uint8_t *data, uint64_t len)
{
	static struct kernel_in k; /* one request at a time: too large for the stack */
	CUresult r = kernel_from(s, data, len, &k);

	if (r == CUDA_SUCCESS)
		r = sc_drv.cuGraphAddKernelNode(node, g, deps, n, &k.p);
	if (r == CUDA_SUCCESS && (r = set_kernel_attrs(*node, &k)) != CUDA_SUCCESS)
		sc_drv.cuGraphDestroyNode(*node);
	return r;
}

/* @size bytes of the node's data, copied out so that the driver sees them aligned. */
static CUresult body(void *out, size_t size, const uint8_t *data, uint64_t len)
{
	if (len != size)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(out, data, size);
	return CUDA_SUCCESS;
}

static CUresult add_node(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t n,
			 const struct sc_ch_slot *s, uint8_t *data, uint64_t len)
{
	CUcontext ctx = (CUcontext)(uintptr_t)s->a[3];
	CUevent ev = (CUevent)(uintptr_t)s->a[3];
	CUDA_MEMSET_NODE_PARAMS set;
	CUDA_MEMCPY3D copy;
	CUresult r;

	switch (s->a[1]) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		return add_kernel(node, g, deps, n, s, data, len);
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		r = body(&copy, sizeof(copy), data, len);
		return r ? r : sc_drv.cuGraphAddMemcpyNode(node, g, deps, n, &copy, ctx);
	case CU_GRAPH_NODE_TYPE_MEMSET:
		r = body(&set, sizeof(set), data, len);
		return r ? r : sc_drv.cuGraphAddMemsetNode(node, g, deps, n, &set, ctx);
	case CU_GRAPH_NODE_TYPE_EMPTY:
		return sc_drv.cuGraphAddEmptyNode(node, g, deps, n);
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		return sc_drv.cuGraphAddEventRecordNode(node, g, deps, n, ev);
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		return sc_drv.cuGraphAddEventWaitNode(node, g, deps, n, ev);
	}
	return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult op_graph_add_node(struct sc_ch_slot *s)
{
	uint64_t n = s->a[2];
	CUgraphNode deps[SC_CH_INLINE / 8], node = NULL;
	CUresult r;

	if (n > SC_CH_INLINE / 8 || n * 8 > s->len)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(deps, s->data, n * 8);
	r = add_node(&node, GRAPH(s->a[0]), deps, n, s, s->data + n * 8, s->len - n * 8);
	s->a[0] = HANDLE(node);
	return r;
}

static CUresult op_graph_set_node(struct sc_ch_slot *s)
{
	static struct kernel_in k;
	CUresult r;

	if (s->a[1] != CU_GRAPH_NODE_TYPE_KERNEL)
		return CUDA_ERROR_NOT_SUPPORTED;
	if ((r = kernel_from(s, s->data, s->len, &k)) != CUDA_SUCCESS)
		return r;
	if (s->a[2])
		return sc_drv.cuGraphExecKernelNodeSetParams(EXEC(s->a[2]), NODE(s->a[0]), &k.p);
	return sc_drv.cuGraphKernelNodeSetParams(NODE(s->a[0]), &k.p);
}

/* ---- reading a node back ---- */

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* The attributes a kernel node has (those not zero), at @out; their number in a12. */
static size_t describe_attrs(struct sc_ch_slot *s, CUgraphNode node, uint8_t *out)
{
	CUlaunchAttribute a;
	size_t n = 0;

	for (size_t i = 0; i < KERNEL_ATTRS_N; i++) {
		memset(&a, 0, sizeof(a));
		a.id = kernel_attrs[i];
		if (sc_drv.cuGraphKernelNodeGetAttribute(node, a.id, &a.value) != CUDA_SUCCESS ||
		    all_zero(&a.value, sizeof(a.value)))
			continue;
		memcpy(out + n * sizeof(a), &a, sizeof(a));
		n++;
	}
	s->a[12] = n;
	return n * sizeof(a);
}

/* The values of each parameter, at their offsets, after their layout. */
static CUresult describe_params(struct sc_ch_slot *s, const CUDA_KERNEL_NODE_PARAMS *p,
				uint8_t *out, size_t cap, size_t *len)
{
	uint32_t *layout = (uint32_t *)out;
	size_t n = 0, off, size, end = 0;

	while (sc_drv.cuFuncGetParamInfo(p->func, n, &off, &size) == CUDA_SUCCESS)
		if (++n > SC_PROXY_MAX_PARAMS)
			return CUDA_ERROR_NOT_SUPPORTED;
	if (n && !p->kernelParams)
		return CUDA_ERROR_NOT_SUPPORTED; /* an extra buffer: never made by the library */
	for (size_t i = 0; i < n; i++) {
		sc_drv.cuFuncGetParamInfo(p->func, i, &off, &size);
		if (n * 8 + off + size > cap)
			return CUDA_ERROR_NOT_SUPPORTED;
		layout[2 * i] = (uint32_t)off;
		layout[2 * i + 1] = (uint32_t)size;
		memcpy(out + n * 8 + off, p->kernelParams[i], size);
		if (off + size > end)
			end = off + size;
	}
	s->a[11] = n;
	*len = n * 8 + end;
	return CUDA_SUCCESS;
}

static CUresult describe_kernel(struct sc_ch_slot *s, CUgraphNode node)
{
	CUDA_KERNEL_NODE_PARAMS p;
	size_t attrs_len, params_len = 0;
	CUresult r = sc_drv.cuGraphKernelNodeGetParams(node, &p);

	if (r != CUDA_SUCCESS)
		return r;
	if (!p.func)
		return CUDA_ERROR_NOT_SUPPORTED;
	memset(s->data, 0, SC_CH_INLINE);
	attrs_len = describe_attrs(s, node, s->data);
	r = describe_params(s, &p, s->data + attrs_len, SC_CH_INLINE - attrs_len, &params_len);
	s->a[3] = HANDLE(p.func);
	s->a[4] = p.gridDimX, s->a[5] = p.gridDimY, s->a[6] = p.gridDimZ;
	s->a[7] = p.blockDimX, s->a[8] = p.blockDimY, s->a[9] = p.blockDimZ;
	s->a[10] = p.sharedMemBytes;
	s->len = (uint32_t)(attrs_len + params_len);
	return r;
}

static CUresult describe_event(struct sc_ch_slot *s, CUgraphNode node, bool record)
{
	CUevent e = NULL;
	CUresult r = record ? sc_drv.cuGraphEventRecordNodeGetEvent(node, &e)
			    : sc_drv.cuGraphEventWaitNodeGetEvent(node, &e);

	s->a[3] = HANDLE(e);
	return r;
}

static CUresult op_graph_describe(struct sc_ch_slot *s)
{
	CUgraphNode node = NODE(s->a[0]);
	CUgraphNodeType type;
	CUresult r = sc_drv.cuGraphNodeGetType(node, &type);

	if (r != CUDA_SUCCESS)
		return r;
	s->a[1] = (uint64_t)type;
	s->len = 0;
	switch (type) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		return describe_kernel(s, node);
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		s->len = sizeof(CUDA_MEMCPY3D);
		return sc_drv.cuGraphMemcpyNodeGetParams(node, (CUDA_MEMCPY3D *)(void *)s->data);
	case CU_GRAPH_NODE_TYPE_MEMSET:
		s->len = sizeof(CUDA_MEMSET_NODE_PARAMS);
		return sc_drv.cuGraphMemsetNodeGetParams(node,
							 (CUDA_MEMSET_NODE_PARAMS *)(void *)s->data);
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		return describe_event(s, node, type == CU_GRAPH_NODE_TYPE_EVENT_RECORD);
	case CU_GRAPH_NODE_TYPE_EMPTY:
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_NOT_SUPPORTED; /* a1 says which */
	}
}

static CUresult op_graph_node_type(struct sc_ch_slot *s)
{
	CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
	CUresult r = sc_drv.cuGraphNodeGetType(NODE(s->a[0]), &type);

	s->a[0] = (uint64_t)type;
	return r;
}

static CUresult op_graph_node_attr(struct sc_ch_slot *s)
{
	CUkernelNodeAttrValue v;
	CUresult r;

	if (s->a[2]) {
		if ((r = body(&v, sizeof(v), s->data, s->len)) != CUDA_SUCCESS)
			return r;
		return sc_drv.cuGraphKernelNodeSetAttribute(NODE(s->a[0]),
							    (CUkernelNodeAttrID)s->a[1], &v);
	}
	memset(&v, 0, sizeof(v));
	r = sc_drv.cuGraphKernelNodeGetAttribute(NODE(s->a[0]), (CUkernelNodeAttrID)s->a[1], &v);
	memcpy(s->data, &v, sizeof(v));
	s->len = sizeof(v);
	return r;
}

/* ---- the shape of a graph ---- */

/* Copy @total handles from @first on, as many as fit, into the reply. */
static void reply_handles(struct sc_ch_slot *s, const CUgraphNode *v, size_t total,
			  uint64_t first, size_t per_item)
{
	size_t fit = SC_CH_INLINE / (8 * per_item), n = 0;

	if (first < total)
		n = total - first < fit ? total - first : fit;
	if (n)
		memcpy(s->data, v + first * per_item, n * 8 * per_item);
	s->len = (uint32_t)(n * 8 * per_item);
	s->a[0] = total;
}

static CUresult op_graph_nodes(struct sc_ch_slot *s)
{
	CUgraph g = GRAPH(s->a[0]);
	bool roots = s->a[1] == SC_GRAPH_ROOTS;
	size_t n = 0;
	CUgraphNode *v;
	CUresult r = roots ? sc_drv.cuGraphGetRootNodes(g, NULL, &n)
			   : sc_drv.cuGraphGetNodes(g, NULL, &n);

	if (r != CUDA_SUCCESS)
		return r;
	if (!(v = calloc(n ? n : 1, sizeof(*v))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = roots ? sc_drv.cuGraphGetRootNodes(g, v, &n) : sc_drv.cuGraphGetNodes(g, v, &n);
	if (r == CUDA_SUCCESS)
		reply_handles(s, v, n, s->a[2], 1);
	free(v);
	return r;
}

/*
 * Edges as (from, to) pairs. No edge data is asked for: the driver refuses
 * (CUDA_ERROR_LOSSY_QUERY) a graph whose edges carry any, such as the
 * programmatic ones, which a rebuilt graph would not have.
 */
static CUresult op_graph_edges(struct sc_ch_slot *s)
{
	CUgraph g = GRAPH(s->a[0]);
	size_t n = 0;
	CUgraphNode *v;
	CUresult r = sc_drv.cuGraphGetEdges(g, NULL, NULL, NULL, &n);

	if (r != CUDA_SUCCESS)
		return r;
	if (!(v = calloc(n ? 3 * n : 1, sizeof(*v))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = sc_drv.cuGraphGetEdges(g, v + n, v + 2 * n, NULL, &n);
	for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
		v[2 * i] = v[n + i];
		v[2 * i + 1] = v[2 * n + i];
	}
	if (r == CUDA_SUCCESS)
		reply_handles(s, v, n, s->a[1], 2);
	free(v);
	return r;
}

static CUresult op_graph_add_edges(struct sc_ch_slot *s)
{
	uint64_t n = s->a[1];
	CUgraphNode from[SC_CH_INLINE / 16], to[SC_CH_INLINE / 16];

	if (n > SC_CH_INLINE / 16 || n * 16 != s->len)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(from, s->data, n * 8);
	memcpy(to, s->data + n * 8, n * 8);
	return sc_drv.cuGraphAddDependencies(GRAPH(s->a[0]), from, to, NULL, n);
}

/* ---- graphs and executable graphs ---- */

static CUresult op_graph_create(struct sc_ch_slot *s)
{
	CUgraph g = NULL;
	CUresult r = sc_drv.cuGraphCreate(&g, (unsigned)s->a[0]);

	s->a[0] = HANDLE(g);
	return r;
}

static CUresult op_graph_destroy(struct sc_ch_slot *s)
{
	return sc_drv.cuGraphDestroy(GRAPH(s->a[0]));
}

static CUresult op_graph_clone(struct sc_ch_slot *s)
{
	CUgraph g = NULL;
	CUresult r = sc_drv.cuGraphClone(&g, GRAPH(s->a[0]));

	s->a[0] = HANDLE(g);
	return r;
}

static CUresult op_graph_destroy_node(struct sc_ch_slot *s)
{
	return sc_drv.cuGraphDestroyNode(NODE(s->a[0]));
}

static CUresult op_graph_instantiate(struct sc_ch_slot *s)
{
	CUgraphExec e = NULL;
	CUresult r = sc_drv.cuGraphInstantiate(&e, GRAPH(s->a[0]), s->a[1]);

	s->a[0] = HANDLE(e);
	return r;
}

static CUresult op_graph_exec_destroy(struct sc_ch_slot *s)
{
	return sc_drv.cuGraphExecDestroy(EXEC(s->a[0]));
}

static CUresult op_graph_exec_update(struct sc_ch_slot *s)
{
	CUgraphExecUpdateResultInfo info;
	CUresult r;

	memset(&info, 0, sizeof(info));
	r = sc_drv.cuGraphExecUpdate(EXEC(s->a[0]), GRAPH(s->a[1]), &info);
	s->a[0] = (uint64_t)info.result;
	s->a[1] = HANDLE(info.errorNode);
	s->a[2] = HANDLE(info.errorFromNode);
	return r;
}

static CUresult op_graph_launch(struct sc_ch_slot *s)
{
	return sc_drv.cuGraphLaunch(EXEC(s->a[0]), STREAM(s->a[1]));
}

static CUresult op_graph_upload(struct sc_ch_slot *s)
{
	return sc_drv.cuGraphUpload(EXEC(s->a[0]), STREAM(s->a[1]));
}

/* ---- stream capture ---- */

static CUresult op_capture_begin(struct sc_ch_slot *s)
{
	return sc_drv.cuStreamBeginCapture(STREAM(s->a[0]), (CUstreamCaptureMode)s->a[1]);
}

static CUresult op_capture_end(struct sc_ch_slot *s)
{
	CUgraph g = NULL;
	CUresult r = sc_drv.cuStreamEndCapture(STREAM(s->a[0]), &g);

	s->a[0] = HANDLE(g);
	return r;
}

static CUresult op_capture_info(struct sc_ch_slot *s)
{
	CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
	cuuint64_t id = 0;
	CUgraph g = NULL;
	const CUgraphNode *deps = NULL;
	size_t n = 0;
	CUresult r = sc_drv.cuStreamGetCaptureInfo(STREAM(s->a[0]), &status, &id, &g, &deps,
						   NULL, &n);

	if (r == CUDA_SUCCESS)
		reply_handles(s, deps, n, 0, 1);
	s->a[3] = n;
	s->a[0] = (uint64_t)status;
	s->a[1] = id;
	s->a[2] = HANDLE(g);
	return r;
}

/* The program's own change to a capture's dependencies; edges carry no data. */
static CUresult op_capture_deps(struct sc_ch_slot *s)
{
	size_t n = s->len / 8;
	CUgraphNode *v = calloc(n ? n : 1, sizeof(*v));
	CUresult r;

	if (!v)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < n; i++)
		v[i] = NODE(((const uint64_t *)s->data)[i]);
	r = sc_drv.cuStreamUpdateCaptureDependencies(STREAM(s->a[0]), v, NULL, n,
						     (unsigned)s->a[1]);
	free(v);
	return r;
}

void sc_proxy_ops_graph(sc_proxy_op_fn *t)
{
	t[SC_OP_GRAPH_CREATE] = op_graph_create;
	t[SC_OP_GRAPH_DESTROY] = op_graph_destroy;
	t[SC_OP_GRAPH_CLONE] = op_graph_clone;
	t[SC_OP_GRAPH_ADD_NODE] = op_graph_add_node;
	t[SC_OP_GRAPH_SET_NODE] = op_graph_set_node;
	t[SC_OP_GRAPH_DESCRIBE] = op_graph_describe;
	t[SC_OP_GRAPH_NODE_TYPE] = op_graph_node_type;
	t[SC_OP_GRAPH_NODE_ATTR] = op_graph_node_attr;
	t[SC_OP_GRAPH_DESTROY_NODE] = op_graph_destroy_node;
	t[SC_OP_GRAPH_NODES] = op_graph_nodes;
	t[SC_OP_GRAPH_EDGES] = op_graph_edges;
	t[SC_OP_GRAPH_ADD_EDGES] = op_graph_add_edges;
	t[SC_OP_GRAPH_INSTANTIATE] = op_graph_instantiate;
	t[SC_OP_GRAPH_EXEC_DESTROY] = op_graph_exec_destroy;
	t[SC_OP_GRAPH_EXEC_UPDATE] = op_graph_exec_update;
	t[SC_OP_GRAPH_LAUNCH] = op_graph_launch;
	t[SC_OP_GRAPH_UPLOAD] = op_graph_upload;
	t[SC_OP_CAPTURE_BEGIN] = op_capture_begin;
	t[SC_OP_CAPTURE_END] = op_capture_end;
	t[SC_OP_CAPTURE_INFO] = op_capture_info;
	t[SC_OP_CAPTURE_DEPS] = op_capture_deps;
}
