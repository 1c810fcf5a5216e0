/* SPDX-License-Identifier: MIT */
/*
 * CUDA graphs and stream capture as libselfckpt serves them, on the
 * software device (tests/softcuda; a test double: it proves nothing about
 * GPUs): graphs built node by node and captured, read back, changed,
 * instantiated and launched, and all of them after a restart.
 */
#include <criterion/criterion.h>
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "selfckpt.h"
#include "tests/cuda/cuda_api_harness.h"

TestSuite(cuda_graph, .init = sc_test_use_software_device, .timeout = 60);

#define WORDS 64

/* What kernel step makes of a word: one step of a linear congruential generator. */
static uint32_t stepped(uint32_t x)
{
	return x * 1664525u + 1013904223u;
}

/* The graph's buffers, and its kernel's parameters (pointers to these). */
struct work {
	CUfunction step;
	CUdeviceptr a, counter;
	uint64_t n;
	uint32_t *out;            /* pinned */
	void *params[3];
};

static int setup(struct work *w)
{
	size_t size;
	CUmodule m = sc_test_load(&w->step);

	w->n = WORDS;
	w->params[0] = &w->a;
	w->params[1] = &w->n;
	w->params[2] = &w->counter;
	if (cuModuleGetGlobal(&w->counter, &size, m, "counter") ||
	    cuMemAlloc(&w->a, WORDS * 4) || cuMemAllocHost((void **)&w->out, WORDS * 4))
		return -1;
	memset(w->out, 0, WORDS * 4);
	return 0;
}

static CUDA_MEMSET_NODE_PARAMS fill(CUdeviceptr a, uint32_t value)
{
	CUDA_MEMSET_NODE_PARAMS p = { .dst = a, .value = value, .elementSize = 4,
				      .width = WORDS, .height = 1 };

	return p;
}

static CUDA_MEMCPY3D to_host(CUdeviceptr a, void *host)
{
	CUDA_MEMCPY3D c = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = a,
			    .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = host,
			    .WidthInBytes = WORDS * 4, .Height = 1, .Depth = 1 };

	return c;
}

static CUDA_KERNEL_NODE_PARAMS kernel(struct work *w)
{
	CUDA_KERNEL_NODE_PARAMS p = { .func = w->step, .gridDimX = 1, .gridDimY = 1,
				      .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1,
				      .blockDimZ = 1, .kernelParams = w->params };

	return p;
}

/* memset(a, value) -> step(a) -> copy a to w->out: three nodes, two edges. */
static int build(struct work *w, uint32_t value, CUgraph *g, CUgraphNode nodes[3])
{
	CUDA_MEMSET_NODE_PARAMS set = fill(w->a, value);
	CUDA_MEMCPY3D copy = to_host(w->a, w->out);
	CUDA_KERNEL_NODE_PARAMS k = kernel(w);

	if (cuGraphCreate(g, 0) || cuGraphAddMemsetNode(&nodes[0], *g, NULL, 0, &set, NULL) ||
	    cuGraphAddKernelNode(&nodes[1], *g, &nodes[0], 1, &k) ||
	    cuGraphAddMemcpyNode(&nodes[2], *g, &nodes[1], 1, &copy, NULL))
		return -1;
	return 0;
}

static uint32_t counter_of(const struct work *w)
{
	uint32_t c = 0;

	return cuMemcpyDtoH(&c, w->counter, 4) == CUDA_SUCCESS ? c : 0xdeadbeef;
}

/* Every word of the pinned output is @want. */
static bool out_is(const struct work *w, uint32_t want)
{
	for (int i = 0; i < WORDS; i++)
		if (w->out[i] != want)
			return false;
	return true;
}

static int launch_and_wait(CUgraphExec e, CUstream s)
{
	return cuGraphLaunch(e, s) || cuStreamSynchronize(s) ? -1 : 0;
}

Test(cuda_graph, graphs_built_node_by_node_run_and_read_back)
{
	struct work w;
	CUgraph g;
	CUgraphNode nodes[3], got[4], from[4], to[4];
	CUgraphNodeType type;
	CUgraphExec e;
	CUDA_KERNEL_NODE_PARAMS kp;
	CUDA_MEMSET_NODE_PARAMS sp;
	CUDA_MEMCPY3D cp;
	CUstream s;
	size_t n = 0;

	sc_test_start();
	cr_assert_eq(setup(&w), 0);
	OK(cuStreamCreate(&s, 0));
	cr_assert_eq(build(&w, 5, &g, nodes), 0);

	OK(cuGraphGetNodes(g, NULL, &n));
	cr_assert_eq(n, 3);
	n = 4;
	OK(cuGraphGetNodes(g, got, &n));
	cr_assert(n == 3 && !memcmp(got, nodes, sizeof(nodes)), "the handles added, in order");
	n = 4;
	OK(cuGraphGetRootNodes(g, got, &n));
	cr_assert(n == 1 && got[0] == nodes[0]);
	n = 4;
	OK(cuGraphGetEdges(g, from, to, NULL, &n));
	cr_assert_eq(n, 2);
	cr_assert(from[0] == nodes[0] && to[0] == nodes[1] && from[1] == nodes[1] &&
		  to[1] == nodes[2], "edges memset -> kernel -> copy");
	OK(cuGraphNodeGetType(nodes[1], &type));
	cr_assert_eq(type, CU_GRAPH_NODE_TYPE_KERNEL);

	OK(cuGraphKernelNodeGetParams(nodes[1], &kp));
	cr_assert_eq(kp.func, w.step);
	cr_assert_eq(*(CUdeviceptr *)kp.kernelParams[0], w.a);
	cr_assert_eq(*(uint64_t *)kp.kernelParams[1], (uint64_t)WORDS);
	OK(cuGraphMemsetNodeGetParams(nodes[0], &sp));
	cr_assert(sp.dst == w.a && sp.value == 5 && sp.width == WORDS);
	OK(cuGraphMemcpyNodeGetParams(nodes[2], &cp));
	cr_assert(cp.dstHost == w.out && cp.srcDevice == w.a);
	cr_assert_eq(cuGraphMemsetNodeGetParams(nodes[1], &sp), CUDA_ERROR_INVALID_VALUE,
		     "a kernel node is not a memset node");

	OK(cuGraphInstantiate(&e, g, 0));
	cr_assert_eq(launch_and_wait(e, s), 0);
	cr_assert(out_is(&w, stepped(5)), "first launch: %#x", w.out[0]);
	memset(w.out, 0, WORDS * 4);
	cr_assert_eq(launch_and_wait(e, s), 0);
	cr_assert(out_is(&w, stepped(5)), "second launch: %#x", w.out[0]);
	cr_assert_eq(counter_of(&w), 2);

	/* the executable graph changes, the graph does not */
	w.n = 0;
	kp = kernel(&w);
	OK(cuGraphExecKernelNodeSetParams(e, nodes[1], &kp));
	w.n = WORDS;
	cr_assert_eq(launch_and_wait(e, s), 0);
	cr_assert(out_is(&w, 5), "the kernel stepped no word: %#x", w.out[0]);
	OK(cuGraphKernelNodeGetParams(nodes[1], &kp));
	cr_assert_eq(*(uint64_t *)kp.kernelParams[1], (uint64_t)WORDS);

	OK(cuGraphExecDestroy(e));
	OK(cuGraphDestroy(g));
	OK(cuStreamDestroy(s));
}

Test(cuda_graph, updates_clones_attributes_and_what_is_refused)
{
	struct work w;
	CUgraph g, g2, clone;
	CUgraphNode nodes[3], nodes2[3], extra;
	CUgraphExec e;
	CUgraphExecUpdateResultInfo info;
	CUkernelNodeAttrValue v = { .priority = -1 }, back;
	CUDA_MEMCPY3D pageable;
	CUstream s;
	size_t n = 0;
	uint32_t *heap = malloc(WORDS * 4);

	sc_test_start();
	cr_assert_eq(setup(&w), 0);
	OK(cuStreamCreate(&s, 0));
	cr_assert_eq(build(&w, 5, &g, nodes), 0);
	OK(cuGraphInstantiate(&e, g, 0));

	/* the same shape with another value: the update takes it */
	cr_assert_eq(build(&w, 9, &g2, nodes2), 0);
	OK(cuGraphExecUpdate(e, g2, &info));
	cr_assert_eq(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
	cr_assert_eq(launch_and_wait(e, s), 0);
	cr_assert(out_is(&w, stepped(9)), "after the update: %#x", w.out[0]);
	/* another shape: refused, and the executable graph is as it was */
	OK(cuGraphAddEmptyNode(&extra, g2, &nodes2[2], 1));
	cr_assert_eq(cuGraphExecUpdate(e, g2, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
	cr_assert_neq(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);

	OK(cuGraphClone(&clone, g2));
	OK(cuGraphGetNodes(clone, NULL, &n));
	cr_assert_eq(n, 4);
	OK(cuGraphDestroyNode(extra));
	OK(cuGraphGetNodes(g2, NULL, &n));
	cr_assert_eq(n, 3);

	OK(cuGraphKernelNodeSetAttribute(nodes[1], CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &v));
	OK(cuGraphKernelNodeGetAttribute(nodes[1], CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &back));
	cr_assert_eq(back.priority, -1);

	/* a copy of memory the proxy cannot see, and a host function: refused */
	pageable = to_host(w.a, heap);
	cr_assert_eq(cuGraphAddMemcpyNode(&extra, g, NULL, 0, &pageable, NULL),
		     CUDA_ERROR_NOT_SUPPORTED);
	cr_assert_eq(cuGraphAddDependencies(g, &nodes[2], &nodes2[0], NULL, 1),
		     CUDA_ERROR_INVALID_VALUE, "a node of another graph");
	free(heap);
}

/*
 * A fork and join across two streams: memset on s1, then the kernel on s2
 * (which joins the capture through an event), then the copy back on s1.
 */
static int capture(struct work *w, CUstream s1, CUstream s2, uint32_t value, CUgraph *g)
{
	CUevent forked, joined;

	if (cuEventCreate(&forked, CU_EVENT_DISABLE_TIMING) ||
	    cuEventCreate(&joined, CU_EVENT_DISABLE_TIMING) ||
	    cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL) ||
	    cuMemsetD32Async(w->a, value, WORDS, s1) || cuEventRecord(forked, s1) ||
	    cuStreamWaitEvent(s2, forked, 0) ||
	    cuLaunchKernel(w->step, 1, 1, 1, 1, 1, 1, 0, s2, w->params, NULL) ||
	    cuEventRecord(joined, s2) || cuStreamWaitEvent(s1, joined, 0) ||
	    cuMemcpyDtoHAsync(w->out, w->a, WORDS * 4, s1) || cuStreamEndCapture(s1, g))
		return -1;
	return 0;
}

Test(cuda_graph, a_stream_capture_becomes_a_graph)
{
	struct work w;
	CUgraph g;
	CUgraphExec e;
	CUstream s1, s2;
	CUstreamCaptureStatus status;
	CUdeviceptr p;
	size_t n = 0, edges = 0;

	sc_test_start();
	cr_assert_eq(setup(&w), 0);
	OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	cr_assert_eq(capture(&w, s1, s2, 3, &g), 0);
	cr_assert(out_is(&w, 0), "captured work does not run");
	cr_assert_eq(counter_of(&w), 0);
	OK(cuGraphGetNodes(g, NULL, &n));
	OK(cuGraphGetEdges(g, NULL, NULL, NULL, &edges));
	/* the copy follows the kernel; whether it also keeps an edge from the memset is the driver's */
	cr_assert(n == 3 && edges >= 2, "%zu nodes, %zu edges", n, edges);
	OK(cuGraphInstantiate(&e, g, 0));
	cr_assert_eq(launch_and_wait(e, s1), 0);
	cr_assert(out_is(&w, stepped(3)), "the captured graph ran: %#x", w.out[0]);

	/* in a capture: what cannot be captured is refused, and says so */
	OK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_RELAXED));
	OK(cuStreamIsCapturing(s1, &status));
	cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
	cr_assert_eq(cuMemAllocAsync(&p, 4096, s1), CUDA_ERROR_NOT_SUPPORTED);
	cr_assert_eq(cuLaunchHostFunc(s1, (CUhostFn)free, NULL), CUDA_ERROR_NOT_SUPPORTED);
	cr_assert_eq(cuStreamSynchronize(s1), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	cr_assert_eq(cuStreamEndCapture(s1, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	OK(cuStreamIsCapturing(s1, &status));
	cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_NONE);
	OK(cuMemAllocAsync(&p, 4096, s1)); /* the capture is over */
	OK(cuMemFreeAsync(p, s1));
	OK(cuStreamSynchronize(s1));
}

/*
 * In a child of the test: a graph built node by node and kept, its
 * executable graph changed after instantiation, a captured graph
 * instantiated then destroyed; a checkpoint refused during a capture, then
 * taken. Exit 0 after the save; restored, 42 when the executable graphs run
 * as they did, the graph still answers by the handles the program holds and
 * instantiates again, and the changed executable graph can be changed again;
 * 3 and up otherwise.
 */
static int save_with_graphs(const char *image)
{
	struct work w;
	CUgraph g, captured, dropped;
	CUgraphNode nodes[3], got[3];
	CUgraphExec kept, changed, from_capture, again;
	CUDA_KERNEL_NODE_PARAMS kp;
	CUstream s1, s2;
	size_t n = 3;
	int r;

	sc_test_start();
	if (setup(&w) || cuStreamCreate(&s1, 0) || cuStreamCreate(&s2, 0) ||
	    build(&w, 5, &g, nodes) || cuGraphInstantiate(&kept, g, 0) ||
	    cuGraphInstantiate(&changed, g, 0))
		return 1;
	w.n = 0; /* read by the call: the kernel of this executable graph steps no word */
	kp = kernel(&w);
	if (cuGraphExecKernelNodeSetParams(changed, nodes[1], &kp))
		return 1;
	w.n = WORDS;
	if (capture(&w, s1, s2, 7, &captured) || cuGraphInstantiate(&from_capture, captured, 0) ||
	    cuGraphDestroy(captured))
		return 1;
	if (cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_RELAXED))
		return 1;
	if (selfckpt_save(image) >= 0) /* refused: a capture is under way */
		return 2;
	if (cuStreamEndCapture(s1, &dropped) || cuGraphDestroy(dropped))
		return 1;
	r = selfckpt_save(image);
	if (r == SELFCKPT_SAVED)
		return 0;
	if (r != SELFCKPT_RESTORED)
		return 2;
	if (launch_and_wait(kept, s1) || !out_is(&w, stepped(5)))
		return 3;
	if (launch_and_wait(changed, s1) || !out_is(&w, 5))
		return 4;
	if (launch_and_wait(from_capture, s1) || !out_is(&w, stepped(7)))
		return 5;
	if (cuGraphGetNodes(g, got, &n) || n != 3 || memcmp(got, nodes, sizeof(nodes)) ||
	    cuGraphKernelNodeGetParams(nodes[1], &kp) || kp.func != w.step ||
	    *(uint64_t *)kp.kernelParams[1] != WORDS)
		return 6;
	if (cuGraphInstantiate(&again, g, 0) || launch_and_wait(again, s1) ||
	    !out_is(&w, stepped(5)))
		return 7;
	kp = kernel(&w);
	if (cuGraphExecKernelNodeSetParams(changed, nodes[1], &kp) ||
	    launch_and_wait(changed, s1) || !out_is(&w, stepped(5)))
		return 8;
	return 42;
}

Test(cuda_graph, graphs_and_executable_graphs_come_back_after_a_restart)
{
	char dir[] = "/tmp/sc-graph-XXXXXX";
	int status = sc_test_exit_after_restore(save_with_graphs, dir);

	cr_assert_eq(status, 42,
		     "restored: exit %d (3: kept, 4: changed, 5: captured, 6: the graph's "
		     "handles, 7: instantiated again, 8: changed again; see %s/out)", status, dir);
	sc_test_remove_dir(dir);
}

Test(cuda_graph, instantiation_with_parameters_and_a_nodes_neighbours)
{
	CUDA_GRAPH_INSTANTIATE_PARAMS ip = { .flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
					     .result_out = CUDA_GRAPH_INSTANTIATE_ERROR };
	CUgraphNode nodes[3], got[3];
	CUgraphEdgeData data[3];
	struct work w;
	CUgraphExec e;
	CUstream s;
	CUgraph g;
	size_t n;

	sc_test_start();
	cr_assert_eq(setup(&w), 0);
	cr_assert_eq(build(&w, 5, &g, nodes), 0);
	OK(cuStreamCreate(&s, 0));
	ip.hUploadStream = s;
	OK(cuGraphInstantiateWithParams(&e, g, &ip));
	cr_assert_eq(ip.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
	cr_assert_null(ip.hErrNode_out);
	cr_assert_eq(launch_and_wait(e, s), 0);
	cr_assert(out_is(&w, stepped(5)));
	ip.flags = 1ull << 40;
	cr_assert_eq(cuGraphInstantiateWithParams(&e, g, &ip), CUDA_ERROR_INVALID_VALUE);

	/* memset -> kernel -> copy: the kernel has one node on each side */
	OK(cuGraphNodeGetDependencies(nodes[1], NULL, NULL, &n));
	cr_assert_eq(n, 1);
	n = 3;
	memset(data, 0xff, sizeof(data));
	OK(cuGraphNodeGetDependencies(nodes[1], got, data, &n));
	cr_assert(n == 1 && got[0] == nodes[0] && data[0].type == 0 && data[0].from_port == 0);
	n = 3;
	OK(cuGraphNodeGetDependentNodes(nodes[1], got, NULL, &n));
	cr_assert(n == 1 && got[0] == nodes[2]);
	n = 3;
	OK(cuGraphNodeGetDependencies(nodes[0], got, NULL, &n));
	cr_assert_eq(n, 0, "a root node");
	OK(cuGraphNodeGetDependentNodes(nodes[2], NULL, NULL, &n));
	cr_assert_eq(n, 0, "the last node");
	cr_assert_eq(cuGraphNodeGetDependencies(NULL, got, NULL, &n), CUDA_ERROR_INVALID_VALUE);
	OK(cuGraphExecDestroy(e));
	OK(cuGraphDestroy(g));
}

Test(cuda_graph, a_threads_capture_mode_is_exchanged)
{
	CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;

	sc_test_start();
	OK(cuThreadExchangeStreamCaptureMode(&m));
	cr_assert_eq(m, CU_STREAM_CAPTURE_MODE_GLOBAL, "every thread starts in the global mode");
	m = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
	OK(cuThreadExchangeStreamCaptureMode(&m));
	cr_assert_eq(m, CU_STREAM_CAPTURE_MODE_RELAXED);
	m = (CUstreamCaptureMode)7;
	cr_assert_eq(cuThreadExchangeStreamCaptureMode(&m), CUDA_ERROR_INVALID_VALUE);
	cr_assert_eq(cuThreadExchangeStreamCaptureMode(NULL), CUDA_ERROR_INVALID_VALUE);
}

/*
 * The program adds a node to the graph a capture is making, and makes it the
 * stream's dependency, as libraries do: memset, then its own kernel node,
 * then a captured copy after that node.
 */
Test(cuda_graph, a_capture_takes_the_nodes_the_program_adds_to_its_graph)
{
	const CUgraphNode *deps = NULL;
	const CUgraphEdgeData *edges = NULL;
	CUstreamCaptureStatus status;
	CUDA_KERNEL_NODE_PARAMS k;
	CUgraph g = NULL, ended;
	CUgraphNode mine;
	cuuint64_t id = 0;
	struct work w;
	CUgraphExec e;
	CUstream s;
	size_t n = 9;

	sc_test_start();
	cr_assert_eq(setup(&w), 0);
	k = kernel(&w);
	OK(cuStreamCreate(&s, 0));
	OK(cuStreamGetCaptureInfo(s, &status, &id, &g, &deps, &edges, &n));
	cr_assert(status == CU_STREAM_CAPTURE_STATUS_NONE && !g && !deps && n == 0);

	OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	OK(cuMemsetD32Async(w.a, 7, WORDS, s));
	OK(cuStreamGetCaptureInfo(s, &status, &id, &g, &deps, &edges, &n));
	cr_assert(status == CU_STREAM_CAPTURE_STATUS_ACTIVE && g && n == 1 && deps && edges);
	cr_assert_eq(edges[0].type, 0);
	OK(cuGraphAddKernelNode(&mine, g, deps, n, &k));
	OK(cuStreamUpdateCaptureDependencies(s, &mine, NULL, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
	OK(cuStreamGetCaptureInfo(s, &status, NULL, NULL, &deps, NULL, &n));
	cr_assert(n == 1 && deps[0] == mine, "the program's node is the stream's dependency");
	cr_assert_eq(cuStreamUpdateCaptureDependencies(s, &mine, NULL, 1, 7),
		     CUDA_ERROR_INVALID_VALUE);
	OK(cuMemcpyDtoHAsync(w.out, w.a, WORDS * 4, s));
	OK(cuStreamEndCapture(s, &ended));
	cr_assert_eq(ended, g, "one handle for the capture's graph");

	n = 9;
	OK(cuGraphGetNodes(ended, NULL, &n));
	cr_assert_eq(n, 3);
	OK(cuGraphInstantiate(&e, ended, 0));
	cr_assert_eq(launch_and_wait(e, s), 0);
	cr_assert(out_is(&w, stepped(7)), "memset, the program's kernel, then the copy");
	OK(cuGraphExecDestroy(e));
	OK(cuGraphDestroy(ended));
}

/*
 * In a child of the test: the graph of a capture that then fails, got from
 * cuStreamGetCaptureInfo. Exit 0 when a checkpoint is taken (the handle went
 * with the graph: reading the driver's freed graph back would fail it); 1 and
 * up otherwise.
 */
static int failed_capture_then_save(const char *image)
{
	CUstreamCaptureStatus status;
	struct work w;
	CUgraph g = NULL, ended = NULL;
	CUstream s;

	sc_test_start();
	if (setup(&w) || cuStreamCreate(&s, 0) ||
	    cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) ||
	    cuMemsetD32Async(w.a, 7, WORDS, s) ||
	    cuStreamGetCaptureInfo(s, &status, NULL, &g, NULL, NULL, NULL) || !g)
		return 1;
	if (cuStreamSynchronize(s) == CUDA_SUCCESS) /* not in a capture: it fails the capture */
		return 2;
	if (cuStreamEndCapture(s, &ended) == CUDA_SUCCESS || ended)
		return 3;
	/* g is gone, as a destroyed handle is: the checkpoint must not trip on it */
	return selfckpt_save(image) == SELFCKPT_SAVED ? 0 : 5;
}

Test(cuda_graph, the_graph_of_a_failed_capture_goes_with_it)
{
	char image[] = "/tmp/sc-capture-fail-XXXXXX";
	int fd = mkstemp(image);
	int status;

	cr_assert_geq(fd, 0);
	close(fd);
	status = sc_test_exit_of_child(failed_capture_then_save, image);
	unlink(image);
	cr_assert_eq(status, 0, "exit %d (2: sync, 3: end, 5: checkpoint)", status);
}
