/* SPDX-License-Identifier: MIT */
/*
 * graph_desc.c - a graph read back from the proxy, and built again from
 * what was read: at a checkpoint every live graph is described, at a restart
 * every graph and executable graph is built from its description (graph.h).
 *
 * Only nodes the library can build again are described: kernels, copies,
 * memsets, event records and waits, empty nodes. Anything else (which only
 * calls the library does not serve could have made) is refused by name, so a
 * checkpoint fails rather than write an image whose graphs would come back
 * different. Edges carrying data (programmatic dependencies) are refused
 * the same way.
 */
#include <stdlib.h>
#include <string.h>

#include "core/sc_core.h"
#include "cuda/lib/graph.h"
#include "format/sc_format.h"
#include "format/sc_log.h"

void sc_graph_desc_free(struct sc_graph_desc *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->steps[i].data);
	free(d->steps);
	free(d->edges);
	memset(d, 0, sizeof(*d));
}

static const char *node_type_name(uint32_t type)
{
	static const char *const names[] = {
		"kernel", "copy", "memset", "host function", "child graph", "empty",
		"event wait", "event record", "external semaphore signal",
		"external semaphore wait", "memory allocation", "memory free",
		"batch memory operation", "conditional",
	};

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "unknown";
}

static CUresult cannot_rebuild(uint32_t type, const char *why)
{
	sc_log(SC_LOG_WARN, "a CUDA graph holds a %s node (CUgraphNodeType %u)%s: selfckpt "
	       "cannot build that graph again at a restart", node_type_name(type), type, why);
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- the library's handles and the proxy's ---- */

/* The function or kernel launches know as the proxy's @real. */
static struct sc_cu_func *function_of_real(uint64_t real)
{
	struct sc_cu_func *found = NULL, *kernel = NULL;

	sc_objs_lock();
	for (struct sc_cu_obj *o = sc_obj_first(); o && !found; o = o->next) {
		struct sc_cu_func *f = (struct sc_cu_func *)o;

		if (o->kind == SC_K_FUNC && o->real == real)
			found = f;
		else if (o->kind == SC_K_KERNEL && f->launch_real == real && !kernel)
			kernel = f;
	}
	sc_objs_unlock();
	return found ? found : kernel;
}

static CUresult array_to_proxy(CUmemorytype type, CUarray *a)
{
	struct sc_cu_array *x;

	if (type != CU_MEMORYTYPE_ARRAY)
		return CUDA_SUCCESS;
	if (!(x = sc_obj_get(*a, SC_K_ARRAY)))
		return CUDA_ERROR_INVALID_HANDLE;
	*a = (CUarray)(uintptr_t)x->o.real;
	return CUDA_SUCCESS;
}

static CUresult array_from_proxy(CUmemorytype type, CUarray *a)
{
	struct sc_cu_obj *x;

	if (type != CU_MEMORYTYPE_ARRAY)
		return CUDA_SUCCESS;
	if (!(x = (struct sc_cu_obj *)sc_obj_find_value(SC_K_ARRAY, (uint64_t)(uintptr_t)*a)))
		return cannot_rebuild(CU_GRAPH_NODE_TYPE_MEMCPY, " with an array the program "
				      "does not hold");
	*a = (CUarray)x;
	return CUDA_SUCCESS;
}

/* The last byte a side of a 3D copy touches is at most this far from its base. */
static size_t copy_extent(size_t x, size_t y, size_t z, size_t pitch, size_t height,
			  const CUDA_MEMCPY3D *c)
{
	size_t rows = c->Depth ? (z + c->Depth - 1) * (height ? height : 1) + y + c->Height : 0;

	return rows ? (rows - 1) * pitch + x + c->WidthInBytes : 0;
}

/*
 * Host memory a graph copies to or from must be the program's pinned
 * memory, which lies at the same address in the proxy and survives a
 * restart; anything else would be read where the proxy has nothing.
 */
static bool host_side_ok(CUmemorytype type, const void *host, CUdeviceptr dev, size_t extent)
{
	if (type == CU_MEMORYTYPE_HOST)
		return sc_cu_in_channel(host, extent);
	if (type == CU_MEMORYTYPE_UNIFIED && !sc_devptr_find(dev, NULL, NULL))
		return sc_cu_in_channel((const void *)(uintptr_t)dev, extent);
	return true;
}

bool sc_graph_copy_ok(const CUDA_MEMCPY3D *c)
{
	return host_side_ok(c->srcMemoryType, c->srcHost, c->srcDevice,
			    copy_extent(c->srcXInBytes, c->srcY, c->srcZ, c->srcPitch,
					c->srcHeight, c)) &&
	       host_side_ok(c->dstMemoryType, c->dstHost, c->dstDevice,
			    copy_extent(c->dstXInBytes, c->dstY, c->dstZ, c->dstPitch,
					c->dstHeight, c));
}

/* ---- one node ---- */

static uint64_t context_real(const struct sc_graph_step *st, struct sc_cu_ctx *ctx)
{
	struct sc_cu_ctx *own = (struct sc_cu_ctx *)(uintptr_t)st->a[0];

	if (own)
		return own->o.real;
	return ctx ? ctx->o.real : sc_ctx_real();
}

CUresult sc_graph_step_send(const struct sc_graph_step *st, struct sc_cu_ctx *ctx,
			    struct sc_req *r, uint8_t *buf, uint32_t head)
{
	struct sc_cu_event *e;
	CUresult res;

	if (st->len > SC_CH_INLINE - head)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(&r->a[3], st->a, sizeof(st->a));
	if (st->len) /* empty and event nodes have no data */
		memcpy(buf + head, st->data, st->len);
	r->in = buf;
	r->in_len = head + st->len;
	switch (st->type) {
	case CU_GRAPH_NODE_TYPE_KERNEL: {
		struct sc_cu_func *f = sc_cu_function_of((const void *)(uintptr_t)st->a[0]);

		return f ? sc_cu_function_real(f, &r->a[3]) : CUDA_ERROR_INVALID_HANDLE;
	}
	case CU_GRAPH_NODE_TYPE_MEMCPY: {
		CUDA_MEMCPY3D *c = (CUDA_MEMCPY3D *)(void *)(buf + head);

		if ((res = array_to_proxy(c->srcMemoryType, &c->srcArray)) == CUDA_SUCCESS)
			res = array_to_proxy(c->dstMemoryType, &c->dstArray);
		r->a[3] = context_real(st, ctx);
		return res;
	}
	case CU_GRAPH_NODE_TYPE_MEMSET:
		r->a[3] = context_real(st, ctx);
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		if (!(e = sc_obj_get((void *)(uintptr_t)st->a[0], SC_K_EVENT)))
			return CUDA_ERROR_INVALID_HANDLE;
		r->a[3] = e->o.real;
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_EMPTY:
		return CUDA_SUCCESS;
	}
	return cannot_rebuild(st->type, "");
}

/* A described node's proxy handles, as the library's. */
static CUresult step_handles(struct sc_graph_step *st)
{
	struct sc_cu_obj *e;
	CUDA_MEMCPY3D *c = (CUDA_MEMCPY3D *)(void *)st->data;
	CUresult res;

	switch (st->type) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		if (!(st->a[0] = (uint64_t)(uintptr_t)function_of_real(st->a[0])))
			return cannot_rebuild(st->type, " whose function the library did not "
					      "look up");
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		if (st->len != sizeof(*c))
			return CUDA_ERROR_INVALID_VALUE;
		if ((res = array_from_proxy(c->srcMemoryType, &c->srcArray)) != CUDA_SUCCESS ||
		    (res = array_from_proxy(c->dstMemoryType, &c->dstArray)) != CUDA_SUCCESS)
			return res;
		if (!sc_graph_copy_ok(c))
			return cannot_rebuild(st->type, " of host memory that is not pinned");
		st->a[0] = 0; /* the graph's context */
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_MEMSET:
		st->a[0] = 0;
		return st->len == sizeof(CUDA_MEMSET_NODE_PARAMS) ? CUDA_SUCCESS
								 : CUDA_ERROR_INVALID_VALUE;
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		if (!(e = (struct sc_cu_obj *)sc_obj_find_value(SC_K_EVENT, st->a[0])))
			return cannot_rebuild(st->type, " of an event the program does not hold");
		st->a[0] = (uint64_t)(uintptr_t)e;
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_EMPTY:
		return CUDA_SUCCESS;
	}
	return cannot_rebuild(st->type, "");
}

CUresult sc_graph_step_take(struct sc_graph_step *st, const struct sc_req *r,
			    const uint8_t *data)
{
	memset(st, 0, sizeof(*st));
	st->type = (uint32_t)r->a[1];
	memcpy(st->a, &r->a[3], sizeof(st->a));
	st->len = r->out_len;
	if (!(st->data = malloc(st->len ? st->len : 1)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy(st->data, data, st->len);
	return step_handles(st);
}

/* ---- a whole graph ---- */

/* Every node of @g, in the driver's order, into *@v (allocated); their number in *@n. */
static CUresult list_nodes(uint64_t g, uint64_t **v, size_t *n)
{
	uint64_t buf[SC_CH_INLINE / 8];
	size_t got = 0, total = 0;
	CUresult res;

	*v = NULL;
	do {
		struct sc_req r = { .op = SC_OP_GRAPH_NODES, .a = { g, SC_GRAPH_ALL, got },
				    .out = buf, .out_cap = sizeof(buf) };

		if ((res = sc_cu_call(&r)) != CUDA_SUCCESS)
			break;
		total = r.a[0];
		if (!*v && !(*v = malloc((total ? total : 1) * 8))) {
			res = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		if (got + r.out_len / 8 > total || (!r.out_len && got < total)) {
			res = CUDA_ERROR_INVALID_VALUE; /* the graph changed under us */
			break;
		}
		memcpy(*v + got, buf, r.out_len);
		got += r.out_len / 8;
	} while (got < total);
	*n = got;
	return res;
}

struct real_index {
	uint64_t real;
	uint32_t index;
};

static int by_real(const void *a, const void *b)
{
	uint64_t x = ((const struct real_index *)a)->real, y = ((const struct real_index *)b)->real;

	return x < y ? -1 : x > y;
}

static bool index_of(const struct real_index *map, size_t n, uint64_t real, uint32_t *out)
{
	struct real_index key = { real, 0 };
	const struct real_index *hit = bsearch(&key, map, n, sizeof(*map), by_real);

	if (hit)
		*out = hit->index;
	return hit != NULL;
}

/* The edges of @g as pairs of indices into @reals (@n nodes). */
static CUresult list_edges(uint64_t g, const uint64_t *reals, size_t n, struct sc_graph_desc *d)
{
	uint64_t buf[SC_CH_INLINE / 8];
	struct real_index *map = malloc((n ? n : 1) * sizeof(*map));
	size_t got = 0, total = 0;
	CUresult res = map ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;

	for (size_t i = 0; map && i < n; i++)
		map[i] = (struct real_index){ reals[i], (uint32_t)i };
	if (map)
		qsort(map, n, sizeof(*map), by_real);
	while (res == CUDA_SUCCESS) {
		struct sc_req r = { .op = SC_OP_GRAPH_EDGES, .a = { g, got }, .out = buf,
				    .out_cap = sizeof(buf) };

		if ((res = sc_cu_call(&r)) == CUDA_ERROR_LOSSY_QUERY)
			res = cannot_rebuild(CU_GRAPH_NODE_TYPE_KERNEL, " with programmatic "
					     "dependencies");
		if (res != CUDA_SUCCESS)
			break;
		total = r.a[0];
		if (!d->edges && !(d->edges = malloc((total ? total : 1) * 2 * sizeof(uint32_t)))) {
			res = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		for (size_t k = 0; k < r.out_len / 8 && res == CUDA_SUCCESS; k++)
			if (got * 2 + k >= total * 2 ||
			    !index_of(map, n, buf[k], &d->edges[got * 2 + k]))
				res = CUDA_ERROR_INVALID_VALUE;
		got += r.out_len / 16;
		if (got >= total || !r.out_len)
			break;
	}
	d->edges_n = got;
	free(map);
	return res;
}

CUresult sc_graph_describe(struct sc_cu_graph *g, struct sc_graph_desc *d)
{
	uint8_t *data = malloc(SC_CH_INLINE); /* threads may instantiate at once */
	uint64_t *reals = NULL;
	size_t n = 0;
	CUresult res = data ? list_nodes(g->o.real, &reals, &n) : CUDA_ERROR_OUT_OF_MEMORY;

	sc_graph_desc_free(d);
	if (res == CUDA_SUCCESS && !(d->steps = calloc(n ? n : 1, sizeof(*d->steps))))
		res = CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; res == CUDA_SUCCESS && i < n; i++) {
		struct sc_req r = { .op = SC_OP_GRAPH_DESCRIBE, .a = { reals[i] }, .out = data,
				    .out_cap = SC_CH_INLINE };

		if ((res = sc_cu_call(&r)) == CUDA_ERROR_NOT_SUPPORTED)
			res = cannot_rebuild((uint32_t)r.a[1], "");
		if (res == CUDA_SUCCESS)
			res = sc_graph_step_take(&d->steps[i], &r, data);
		d->n = i + 1;
		d->steps[i].node = sc_graph_node_wrap(g, reals[i]);
		d->steps[i].exec_real = reals[i];
		if (res == CUDA_SUCCESS && !d->steps[i].node)
			res = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (res == CUDA_SUCCESS)
		res = list_edges(g->o.real, reals, n, d);
	free(reals);
	free(data);
	if (res != CUDA_SUCCESS)
		sc_graph_desc_free(d);
	return res;
}

static CUresult add_edges(uint64_t graph, const struct sc_graph_desc *d, const uint64_t *reals,
			  uint64_t ctx)
{
	static uint64_t buf[SC_CH_INLINE / 8];
	const size_t chunk = SC_CH_INLINE / 16;
	CUresult res = CUDA_SUCCESS;

	for (size_t at = 0; res == CUDA_SUCCESS && at < d->edges_n; at += chunk) {
		size_t k = d->edges_n - at < chunk ? d->edges_n - at : chunk;
		struct sc_req r = { .op = SC_OP_GRAPH_ADD_EDGES, .ctx = ctx, .a = { graph, k },
				    .in = buf, .in_len = (uint32_t)(k * 16) };

		for (size_t i = 0; i < k; i++) {
			buf[i] = reals[d->edges[2 * (at + i)]];
			buf[k + i] = reals[d->edges[2 * (at + i) + 1]];
		}
		res = sc_cu_call(&r);
	}
	return res;
}

CUresult sc_graph_build(const struct sc_graph_desc *d, uint32_t flags, struct sc_cu_ctx *ctx,
			uint64_t *graph, uint64_t **reals)
{
	static uint8_t buf[SC_CH_INLINE];
	uint64_t c = ctx ? ctx->o.real : sc_ctx_real();
	struct sc_req r = { .op = SC_OP_GRAPH_CREATE, .ctx = c, .a = { flags } };
	CUresult res = sc_cu_call(&r);

	*graph = r.a[0];
	if (res != CUDA_SUCCESS)
		return res;
	if (!(*reals = calloc(d->n ? d->n : 1, sizeof(**reals))))
		res = CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; res == CUDA_SUCCESS && i < d->n; i++) {
		r = (struct sc_req){ .op = SC_OP_GRAPH_ADD_NODE, .ctx = c,
				     .a = { *graph, d->steps[i].type, 0 } };
		if ((res = sc_graph_step_send(&d->steps[i], ctx, &r, buf, 0)) == CUDA_SUCCESS)
			res = sc_cu_call(&r);
		(*reals)[i] = r.a[0];
	}
	if (res == CUDA_SUCCESS)
		res = add_edges(*graph, d, *reals, c);
	if (res != CUDA_SUCCESS) {
		r = (struct sc_req){ .op = SC_OP_GRAPH_DESTROY, .ctx = c, .a = { *graph } };
		sc_cu_call(&r);
		free(*reals);
		*reals = NULL;
	}
	return res;
}

/* ---- checkpoint and restart ---- */

int sc_graphs_refuse_capture(void)
{
	if (sc_capture_active())
		return sc_err(SELFCKPT_ECUDA, "a CUDA stream capture is under way: a checkpoint "
			      "can be taken before cuStreamBeginCapture or after cuStreamEndCapture");
	return 0;
}

int sc_graphs_checkpoint(void)
{
	for (struct sc_cu_obj *o = sc_obj_first(); o; o = o->next) {
		CUresult res;

		if (o->kind != SC_K_GRAPH)
			continue;
		if ((res = sc_graph_describe((struct sc_cu_graph *)o, &((struct sc_cu_graph *)o)->desc)) !=
		    CUDA_SUCCESS)
			return sc_err(SELFCKPT_ECUDA, "cannot read a CUDA graph back for the "
				      "checkpoint: %s", sc_cu_result_name(res));
	}
	return 0;
}

static int replay_graph(struct sc_cu_graph *g)
{
	uint64_t *reals = NULL;
	CUresult res = sc_graph_build(&g->desc, g->flags, g->o.ctx, &g->o.real, &reals);

	if (res != CUDA_SUCCESS)
		return sc_err(SELFCKPT_ECUDA, "restart: a CUDA graph of %zu nodes not built "
			      "again: %s", g->desc.n, sc_cu_result_name(res));
	for (size_t i = 0; i < g->desc.n; i++)
		if (g->desc.steps[i].node)
			g->desc.steps[i].node->o.real = reals[i];
	free(reals);
	return 0;
}

static int replay_exec(struct sc_cu_gexec *e)
{
	uint64_t *reals = NULL, graph = 0, ctx = sc_obj_ctx_real(&e->o);
	CUresult res = sc_graph_build(&e->desc, 0, e->o.ctx, &graph, &reals);
	struct sc_req r = { .op = SC_OP_GRAPH_INSTANTIATE, .ctx = ctx, .a = { graph, e->flags } };

	e->built_real = graph;
	if (res == CUDA_SUCCESS) {
		for (size_t i = 0; i < e->desc.n; i++)
			e->desc.steps[i].exec_real = reals[i];
		res = sc_cu_call(&r);
		e->o.real = r.a[0];
	}
	free(reals);
	if (res != CUDA_SUCCESS)
		return sc_err(SELFCKPT_ECUDA, "restart: an executable CUDA graph of %zu nodes "
			      "not instantiated again: %s", e->desc.n, sc_cu_result_name(res));
	return 0;
}

int sc_graphs_replay(void)
{
	int err = 0;

	for (struct sc_cu_obj *o = sc_obj_first(); o && !err; o = o->next)
		if (o->kind == SC_K_GRAPH)
			err = replay_graph((struct sc_cu_graph *)o);
	for (struct sc_cu_obj *o = sc_obj_first(); o && !err; o = o->next)
		if (o->kind == SC_K_GEXEC)
			err = replay_exec((struct sc_cu_gexec *)o);
	return err;
}
