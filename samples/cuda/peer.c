/* SPDX-License-Identifier: MIT */
/*
 * peer.c - two GPUs in one process, as a job split over the GPUs of one node
 * uses them: a context on each device, peer access both ways, kernels that
 * read the other device's memory directly, and copies between the devices.
 *
 * Each iteration, on device 0: x0 = x0 * 1664525 + x1 (read from device 1),
 * then on device 1: x1 = x1 * 1664525 + x0 (read from device 0); then the
 * first quarter of x0 is copied into the last quarter of x1 (cuMemcpyPeerAsync
 * on a stream of device 1, cuMemcpyPeer, or cuMemcpyDtoD from device 0's
 * context, in turns), and both are hashed. With one GPU the two
 * buffers share it (no peer access to enable), so the sample runs anywhere;
 * a restart needs as many GPUs as the run had. A restored run must get the
 * same hashes: both devices' memory, and the access each has to the other's.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

#define N (1 << 20) /* 32-bit words on each device */
#define BLOCK 256

struct side {
	CUcontext ctx;
	CUfunction mix;
	CUdeviceptr x;
	CUstream stream;
};

static void mix(const struct side *on, const struct side *other)
{
	int n = N;
	CUdeviceptr x = on->x, y = other->x;
	void *params[] = { &x, &y, &n };

	CHECK(cuCtxSetCurrent(on->ctx));
	CHECK(cuLaunchKernel(on->mix, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0, on->stream,
			     params, NULL));
	CHECK(cuStreamSynchronize(on->stream));
}

/* A context on @dev (device 0's is the sample's own), its kernel, buffer and stream. */
static void side_init(struct side *p, const struct sample *s, CUdevice dev, unsigned *host)
{
	CUmodule mod;

	if (dev == s->dev)
		p->ctx = s->ctx;
	else
		CHECK(cuDevicePrimaryCtxRetain(&p->ctx, dev));
	CHECK(cuCtxSetCurrent(p->ctx));
	mod = sample_load_module(s);
	CHECK(cuModuleGetFunction(&p->mix, mod, "peer_mix"));
	CHECK(cuStreamCreate(&p->stream, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&p->x, N * sizeof(unsigned)));
	CHECK(cuMemcpyHtoD(p->x, host, N * sizeof(unsigned)));
}

int main(int argc, char **argv)
{
	struct sample s;
	struct side d[2];
	int count = 0;
	size_t bytes = N * sizeof(unsigned), quarter = bytes / 4;
	unsigned *host;

	sample_init(&s, argc, argv, "peer", 0);
	CHECK(cuDeviceGetCount(&count));
	CHECK(cuMemAllocHost((void **)&host, bytes));
	for (unsigned i = 0; i < N; i++)
		host[i] = i * 2654435761u;
	side_init(&d[0], &s, 0, host);
	for (unsigned i = 0; i < N; i++)
		host[i] = i * 40503u + 7;
	side_init(&d[1], &s, count > 1 ? 1 : 0, host);
	if (count > 1) {
		int can = 0;

		CHECK(cuDeviceCanAccessPeer(&can, 0, 1));
		if (!can) {
			fprintf(stderr, "peer: devices 0 and 1 cannot access each other\n");
			return 1;
		}
		CHECK(cuCtxSetCurrent(d[0].ctx));
		CHECK(cuCtxEnablePeerAccess(d[1].ctx, 0));
		CHECK(cuCtxSetCurrent(d[1].ctx));
		CHECK(cuCtxEnablePeerAccess(d[0].ctx, 0));
	}

	for (long it = 1; it <= s.iters; it++) {
		uint64_t h;

		mix(&d[0], &d[1]);
		mix(&d[1], &d[0]);
		if (it % 3 == 1) {
			CHECK(cuMemcpyPeerAsync(d[1].x + bytes - quarter, d[1].ctx, d[0].x,
						d[0].ctx, quarter, d[1].stream));
			CHECK(cuStreamSynchronize(d[1].stream));
		} else if (it % 3 == 2) {
			CHECK(cuMemcpyPeer(d[1].x + bytes - quarter, d[1].ctx, d[0].x, d[0].ctx,
					   quarter));
		} else { /* unified addressing: the pointers say which devices */
			CHECK(cuCtxSetCurrent(d[0].ctx));
			CHECK(cuMemcpyDtoD(d[1].x + bytes - quarter, d[0].x, quarter));
		}
		CHECK(cuCtxSetCurrent(d[0].ctx));
		CHECK(cuMemcpyDtoH(host, d[0].x, bytes));
		h = sample_hash(SAMPLE_HASH_INIT, host, bytes);
		CHECK(cuCtxSetCurrent(d[1].ctx));
		CHECK(cuMemcpyDtoH(host, d[1].x, bytes));
		sample_iteration_done(&s, it, sample_hash(h, host, bytes));
	}

	CHECK(cuMemFreeHost(host));
	return sample_finish(&s);
}
