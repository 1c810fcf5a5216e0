/* SPDX-License-Identifier: MIT */
/*
 * graph.c - CUDA graphs as programs use them to launch many small kernels
 * cheaply: one graph built node by node, one captured from two streams.
 *
 *   built:     step(a -> b, salt) -> step(b -> a, 0) -> copy a to pinned memory
 *   captured:  s1: step(a -> b) | fork | s2: step(b -> c) | s1: step(a -> d)
 *              | join | s1: mix(c, d -> a) -> copy a to pinned memory
 *
 * Each iteration launches both executable graphs and hashes what the last
 * copy brought back. Every fifth iteration changes the salt of the built
 * graph's first kernel in its executable graph only
 * (cuGraphExecKernelNodeSetParams, by the node handle kept since it was
 * added); the captured graph is destroyed once instantiated. A restored run
 * must get the same hashes: both executable graphs come back as they were
 * last changed, and the node handle still names its node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define N (1 << 20) /* 32-bit words in each buffer */
#define BLOCK 256

struct bufs {
	CUdeviceptr a, b, c, d;
	unsigned *host; /* pinned: graphs copy into it */
	int n;
};

static CUDA_KERNEL_NODE_PARAMS launch_of(CUfunction fn, void **params)
{
	CUDA_KERNEL_NODE_PARAMS p = { .func = fn, .gridDimX = (N + BLOCK - 1) / BLOCK,
				      .gridDimY = 1, .gridDimZ = 1, .blockDimX = BLOCK,
				      .blockDimY = 1, .blockDimZ = 1, .kernelParams = params };

	return p;
}

static CUDA_MEMCPY3D copy_back(const struct bufs *m)
{
	CUDA_MEMCPY3D c = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = m->a,
			    .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = m->host,
			    .WidthInBytes = N * sizeof(unsigned), .Height = 1, .Depth = 1 };

	return c;
}

/* The graph built node by node; *@first is its first kernel node. */
static CUgraph build(CUfunction step, struct bufs *m, CUgraphNode *first)
{
	unsigned salt = 1, zero = 0;
	void *ab[] = { &m->a, &m->b, &m->n, &salt }, *ba[] = { &m->b, &m->a, &m->n, &zero };
	CUDA_KERNEL_NODE_PARAMS k1 = launch_of(step, ab), k2 = launch_of(step, ba);
	CUDA_MEMCPY3D back = copy_back(m);
	CUgraphNode second, copy;
	CUgraph g;

	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddKernelNode(first, g, NULL, 0, &k1));
	CHECK(cuGraphAddKernelNode(&second, g, first, 1, &k2));
	CHECK(cuGraphAddMemcpyNode(&copy, g, &second, 1, &back, NULL));
	return g;
}

/* The built graph as the driver tells it: the first kernel has no dependency and one dependent. */
static void check_shape(CUgraphNode first)
{
	CUgraphNode next[2];
	size_t deps = 9, dependents = 2;

	CHECK(cuGraphNodeGetDependencies(first, NULL, NULL, &deps));
	CHECK(cuGraphNodeGetDependentNodes(first, next, NULL, &dependents));
	if (deps != 0 || dependents != 1) {
		fprintf(stderr, "graph: the first node has %zu dependencies (0) and %zu "
			"dependents (1)\n", deps, dependents);
		exit(1);
	}
}

static void launch(CUfunction fn, void **params, CUstream s)
{
	CHECK(cuLaunchKernel(fn, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0, s, params, NULL));
}

/*
 * A node of the program's own in the graph a capture makes, as libraries add
 * them: an empty node after the stream's dependencies, made its only one.
 */
static void add_to_capture(CUstream s)
{
	CUstreamCaptureStatus status;
	const CUgraphNode *deps;
	CUgraphNode mine;
	size_t n;
	CUgraph g;

	CHECK(cuStreamGetCaptureInfo(s, &status, NULL, &g, &deps, NULL, &n));
	if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE || !g || n != 1) {
		fprintf(stderr, "graph: capture status %d, %zu dependencies (1)\n", (int)status, n);
		exit(1);
	}
	CHECK(cuGraphAddEmptyNode(&mine, g, deps, n));
	CHECK(cuStreamUpdateCaptureDependencies(s, &mine, NULL, 1,
						CU_STREAM_SET_CAPTURE_DEPENDENCIES));
}

/* The fork and join of two streams, captured into a graph, with a node of the program's. */
static CUgraph capture(CUfunction step, CUfunction mix, struct bufs *m, CUstream s1,
		       CUstream s2)
{
	unsigned s_ab = 3, s_bc = 5, s_ad = 7;
	void *ab[] = { &m->a, &m->b, &m->n, &s_ab }, *bc[] = { &m->b, &m->c, &m->n, &s_bc };
	void *ad[] = { &m->a, &m->d, &m->n, &s_ad }, *cda[] = { &m->c, &m->d, &m->a, &m->n };
	CUevent fork, join;
	CUgraph g;

	CHECK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
	CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	launch(step, ab, s1);
	CHECK(cuEventRecord(fork, s1));
	CHECK(cuStreamWaitEvent(s2, fork, 0));
	launch(step, bc, s2);
	launch(step, ad, s1);
	CHECK(cuEventRecord(join, s2));
	CHECK(cuStreamWaitEvent(s1, join, 0));
	launch(mix, cda, s1);
	add_to_capture(s1);
	CHECK(cuMemcpyDtoHAsync(m->host, m->a, N * sizeof(unsigned), s1));
	CHECK(cuStreamEndCapture(s1, &g));
	CHECK(cuEventDestroy(fork));
	CHECK(cuEventDestroy(join));
	return g;
}

/* The built graph's first kernel, with @salt, in @exec only. */
static void set_salt(CUgraphExec exec, CUgraphNode first, CUfunction step, struct bufs *m,
		     unsigned salt)
{
	void *ab[] = { &m->a, &m->b, &m->n, &salt };
	CUDA_KERNEL_NODE_PARAMS k = launch_of(step, ab);

	CHECK(cuGraphExecKernelNodeSetParams(exec, first, &k));
}

int main(int argc, char **argv)
{
	struct sample s;
	struct bufs m = { .n = N };
	CUmodule mod;
	CUfunction step, mix;
	CUgraph built, captured;
	CUgraphNode first;
	CUgraphExec built_exec, captured_exec;
	CUstream s1, s2;
	CUDA_GRAPH_INSTANTIATE_PARAMS params = { .flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD };
	size_t bytes = N * sizeof(unsigned);

	sample_init(&s, argc, argv, "graph", 0);
	mod = sample_load_module(&s);
	CHECK(cuModuleGetFunction(&step, mod, "graph_step"));
	CHECK(cuModuleGetFunction(&mix, mod, "graph_mix"));
	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&m.a, bytes));
	CHECK(cuMemAlloc(&m.b, bytes));
	CHECK(cuMemAlloc(&m.c, bytes));
	CHECK(cuMemAlloc(&m.d, bytes));
	CHECK(cuMemAllocHost((void **)&m.host, bytes));
	for (unsigned i = 0; i < N; i++)
		m.host[i] = i * 2654435761u;
	CHECK(cuMemcpyHtoD(m.a, m.host, bytes));

	built = build(step, &m, &first);
	check_shape(first);
	params.hUploadStream = s1;
	CHECK(cuGraphInstantiateWithParams(&built_exec, built, &params));
	captured = capture(step, mix, &m, s1, s2);
	CHECK(cuGraphInstantiate(&captured_exec, captured, 0));
	CHECK(cuGraphDestroy(captured)); /* the executable graph lives on */

	for (long it = 1; it <= s.iters; it++) {
		uint64_t h;

		if (it % 5 == 0)
			set_salt(built_exec, first, step, &m, (unsigned)it);
		CHECK(cuGraphLaunch(built_exec, s1));
		CHECK(cuStreamSynchronize(s1));
		h = sample_hash(SAMPLE_HASH_INIT, m.host, bytes);
		CHECK(cuGraphLaunch(captured_exec, s1));
		CHECK(cuStreamSynchronize(s1));
		sample_iteration_done(&s, it, sample_hash(h, m.host, bytes));
	}

	CHECK(cuGraphExecDestroy(built_exec));
	CHECK(cuGraphExecDestroy(captured_exec));
	CHECK(cuGraphDestroy(built));
	CHECK(cuMemFreeHost(m.host));
	CHECK(cuModuleUnload(mod));
	return sample_finish(&s);
}
