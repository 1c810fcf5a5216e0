/* SPDX-License-Identifier: MIT */
/*
 * api_graph_more.c - graph calls made of the ones api_graph.c serves:
 * instantiation with parameters, and a node's dependencies and dependents,
 * read from the graph's edges.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda/lib/graph.h"

#define INSTANTIATE_FLAGS (CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |                 \
			   CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |                               \
			   CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |                        \
			   CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)

/*
 * cuGraphInstantiate's flags, with the upload it asks for made on the stream
 * the parameters name, and the result reported where they say.
 */
SC_CU_API CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
							 CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	CUresult res;

	if (!p || (p->flags & ~(cuuint64_t)INSTANTIATE_FLAGS))
		return CUDA_ERROR_INVALID_VALUE;
	p->hErrNode_out = NULL;
	res = cuGraphInstantiate(phGraphExec, hGraph,
				 p->flags & ~(cuuint64_t)CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
	if (res == CUDA_SUCCESS && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD))
		res = cuGraphUpload(*phGraphExec, p->hUploadStream);
	p->result_out = res == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS
					    : CUDA_GRAPH_INSTANTIATE_ERROR;
	return res;
}

/* Every edge of @n's graph, in two arrays the caller frees. */
static CUresult edges_of(struct sc_cu_gnode *n, CUgraphNode **from, CUgraphNode **to, size_t *k)
{
	CUresult res = cuGraphGetEdges((CUgraph)n->graph, NULL, NULL, NULL, k);

	*from = *to = NULL;
	if (res != CUDA_SUCCESS || !*k)
		return res;
	*from = calloc(*k, sizeof(**from));
	*to = calloc(*k, sizeof(**to));
	if (!*from || !*to)
		return CUDA_ERROR_OUT_OF_MEMORY;
	return cuGraphGetEdges((CUgraph)n->graph, *from, *to, NULL, k);
}

/*
 * The nodes at the other end of @node's edges: its dependencies (@incoming)
 * or its dependents. With @out NULL, their number; else up to *@n of them,
 * and *@n the number given. Edges carry no data here (the library builds
 * none), so @edge_data, where given, is zeroed.
 */
static CUresult neighbours(CUgraphNode node, bool incoming, CUgraphNode *out,
			   CUgraphEdgeData *edge_data, size_t *n)
{
	struct sc_cu_gnode *g = (struct sc_cu_gnode *)sc_obj_get(node, SC_K_GNODE);
	CUgraphNode *from, *to;
	size_t k, found = 0;
	CUresult res;

	if (!g || !n || (edge_data && !out))
		return CUDA_ERROR_INVALID_VALUE;
	res = edges_of(g, &from, &to, &k);
	for (size_t i = 0; res == CUDA_SUCCESS && i < k; i++) {
		CUgraphNode mine = incoming ? to[i] : from[i], other = incoming ? from[i] : to[i];

		if (mine != node)
			continue;
		if (out && found < *n) {
			out[found] = other;
			if (edge_data)
				memset(&edge_data[found], 0, sizeof(*edge_data));
		}
		found++;
	}
	free(from);
	free(to);
	if (res == CUDA_SUCCESS)
		*n = out && found > *n ? *n : found;
	return res;
}

SC_CU_API CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies,
						       CUgraphEdgeData *edgeData,
						       size_t *numDependencies)
{
	return neighbours(hNode, true, dependencies, edgeData, numDependencies);
}

SC_CU_API CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode hNode,
							 CUgraphNode *dependentNodes,
							 CUgraphEdgeData *edgeData,
							 size_t *numDependentNodes)
{
	return neighbours(hNode, false, dependentNodes, edgeData, numDependentNodes);
}
