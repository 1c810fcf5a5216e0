/* SPDX-License-Identifier: MIT */
/*
 * graph.h - CUDA graphs in the library: the handles the program holds, and
 * the description a restart builds them again from.
 *
 * The driver in the proxy owns the graphs; the library does not keep their
 * nodes as they are added. It reads a graph back from the proxy, node by
 * node, when it must know it: every live graph at a checkpoint (however it
 * was made, node by node or by stream capture), and the graph an executable
 * graph is instantiated from, at that moment (the graph may change or go
 * afterwards; the executable graph does not). A restart builds each graph
 * again from its description, and each executable graph from its own.
 */
#ifndef SC_CUDA_GRAPH_H
#define SC_CUDA_GRAPH_H

#include "cuda/lib/cuda_internal.h"

/* a3..a12 of a request that carries a node (proxy_requests.h, "the node") */
#define SC_GNODE_ARGS 10

/*
 * One node, in the form the requests carry it, with the library's handles
 * where the proxy's would be: a kernel's function (a3) is its struct
 * sc_cu_func, a copy's or memset's context (a3) its struct sc_cu_ctx (NULL:
 * the graph's), an event node's event (a3) its struct sc_cu_event, a copy's
 * arrays in data its struct sc_cu_array.
 */
struct sc_graph_step {
	uint32_t type;                 /* CUgraphNodeType */
	uint64_t a[SC_GNODE_ARGS];
	uint8_t *data;
	uint32_t len;
	struct sc_cu_gnode *node;      /* the program's handle of it, NULL when it has none */
	uint64_t exec_real;            /* an executable graph's: the proxy's node there */
};

struct sc_graph_desc {
	struct sc_graph_step *steps;   /* in the order the driver lists the nodes */
	size_t n;
	uint32_t *edges;               /* edges_n (from, to) pairs of step indices */
	size_t edges_n;
};

struct sc_cu_graph {
	struct sc_cu_obj o;
	unsigned flags;
	struct sc_cu_gnode **nodes;    /* every node the program has a handle of */
	size_t nodes_n, nodes_cap;
	struct sc_graph_desc desc;     /* as at the last checkpoint */
	uint64_t capture_id;           /* a capture's graph cuStreamGetCaptureInfo gave out, until
					* it ends (api_capture.c); 0 otherwise */
};

struct sc_cu_gnode {
	struct sc_cu_obj o;            /* o.ctx is NULL: the node goes with its graph */
	struct sc_cu_graph *graph;
	void **params_view;            /* cuGraphKernelNodeGetParams' kernelParams */
	uint8_t *params_buf;
};

struct sc_cu_gexec {
	struct sc_cu_obj o;
	uint64_t flags;
	struct sc_cu_graph *from;      /* the graph it was made from, while it lives */
	uint64_t built_real;           /* after a restart: the proxy's graph it was made from
					* again, kept as its nodes name the executable graph's */
	struct sc_graph_desc desc;
};

/* graph_desc.c */
/**
 * sc_graph_describe() - read graph @g back from the proxy into @d (freed
 * first): its nodes, handles made for them where the program had none, and
 * its edges. Lock held. Return: CUresult; a node the library cannot build
 * again is CUDA_ERROR_NOT_SUPPORTED, logged with its kind.
 */
CUresult sc_graph_describe(struct sc_cu_graph *g, struct sc_graph_desc *d);
/** sc_graph_desc_free() - empty @d. */
void sc_graph_desc_free(struct sc_graph_desc *d);
/**
 * sc_graph_build() - a new graph in the proxy (context @ctx) from @d: each
 * step's proxy node in *@reals (allocated, @d->n of them). Lock held.
 */
CUresult sc_graph_build(const struct sc_graph_desc *d, uint32_t flags, struct sc_cu_ctx *ctx,
			uint64_t *graph, uint64_t **reals);
/**
 * sc_graph_step_send() - @r's a3.. and data from @st, in the proxy's handles,
 * into @buf (SC_CH_INLINE bytes) after @head bytes already there; @ctx is the
 * graph's context. Lock held.
 */
CUresult sc_graph_step_send(const struct sc_graph_step *st, struct sc_cu_ctx *ctx,
			    struct sc_req *r, uint8_t *buf, uint32_t head);
/**
 * sc_graph_step_take() - @st from a reply @r of SC_OP_GRAPH_DESCRIBE (type in
 * a1, data at @data), in the library's handles.
 */
CUresult sc_graph_step_take(struct sc_graph_step *st, const struct sc_req *r,
			    const uint8_t *data);
/** sc_graph_copy_ok() - can a graph hold copy @c: is the host memory it touches pinned? */
bool sc_graph_copy_ok(const CUDA_MEMCPY3D *c);
/** sc_graphs_refuse_capture() - a checkpoint refused (-error) while a stream capture is under way. */
int sc_graphs_refuse_capture(void);
/** sc_graphs_checkpoint() - describe every live graph (the write lock held); 0 or -error. */
int sc_graphs_checkpoint(void);
/** sc_graphs_replay() - at a restart: every graph and executable graph again; 0 or -error. */
int sc_graphs_replay(void);

/* api_graph.c */
/** sc_graph_node_wrap() - the program's handle of @g's node @real, made when it has none. */
struct sc_cu_gnode *sc_graph_node_wrap(struct sc_cu_graph *g, uint64_t real);
/**
 * sc_graph_adopt() - the proxy's new graph @real (made, cloned or captured)
 * as the program's, in @ctx; destroyed in the proxy when there is no memory.
 */
CUresult sc_graph_adopt(uint64_t real, unsigned flags, struct sc_cu_ctx *ctx, CUgraph *out);
/** sc_graph_forget() - free @o (a graph, with its nodes, or an executable graph). */
void sc_graph_forget(struct sc_cu_obj *o);

/* api_capture.c */
/** sc_capture_active() - is a stream capture begun by the program under way? */
bool sc_capture_active(void);
/**
 * sc_capture_stream_busy() - is stream @h capturing (lock held)? Only while
 * a capture is under way does it ask the proxy: other streams may have
 * joined the capture the program began.
 */
bool sc_capture_stream_busy(CUstream h);
/** sc_capture_refuse() - @what (logged), refused when stream @h is capturing; else CUDA_SUCCESS. */
CUresult sc_capture_refuse(CUstream h, const char *what);
/** sc_capture_stream_gone() - stream @s is destroyed: a capture it began is over. */
void sc_capture_stream_gone(struct sc_cu_stream *s);

#endif /* SC_CUDA_GRAPH_H */
