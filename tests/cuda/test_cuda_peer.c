/* SPDX-License-Identifier: MIT */
/*
 * Several GPUs in one process as libselfckpt serves them, on two devices of
 * the software device (tests/softcuda; a test double: it proves nothing
 * about GPUs, nor that one GPU can reach another's memory): peer access
 * between contexts, copies between devices, and both after a restart.
 */
#include <criterion/criterion.h>
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>

#include "selfckpt.h"
#include "tests/cuda/cuda_api_harness.h"

static void two_devices(void)
{
	setenv("SOFTCUDA_DEVICES", "2", 1); /* read by the proxy's device at its cuInit */
	sc_test_use_software_device();
}

TestSuite(cuda_peer, .init = two_devices, .timeout = 60);

#define WORDS 4096

/* The primary context of each device, device 0's current. */
static void contexts(CUcontext ctx[2])
{
	OK(cuInit(0));
	OK(cuDevicePrimaryCtxRetain(&ctx[1], 1));
	OK(cuDevicePrimaryCtxRetain(&ctx[0], 0));
	OK(cuCtxSetCurrent(ctx[0]));
}

/* @n words at @p (of @ctx's device), each @first + its index. */
static int fill(CUcontext ctx, CUdeviceptr p, uint32_t first)
{
	uint32_t v[WORDS];

	for (uint32_t i = 0; i < WORDS; i++)
		v[i] = first + i;
	return cuCtxSetCurrent(ctx) || cuMemcpyHtoD(p, v, sizeof(v)) ? -1 : 0;
}

/* Do the @WORDS words at @p hold @first + their index? */
static bool holds(CUcontext ctx, CUdeviceptr p, uint32_t first)
{
	uint32_t v[WORDS];

	if (cuCtxSetCurrent(ctx) || cuMemcpyDtoH(v, p, sizeof(v)))
		return false;
	for (uint32_t i = 0; i < WORDS; i++)
		if (v[i] != first + i)
			return false;
	return true;
}

Test(cuda_peer, peer_access_and_copies_between_devices)
{
	CUcontext ctx[2];
	CUdeviceptr a, b;
	CUstream s;
	int v = -1;

	contexts(ctx);
	OK(cuDeviceCanAccessPeer(&v, 0, 1));
	cr_assert_eq(v, 1);
	OK(cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1));
	cr_assert_eq(v, 1);
	cr_assert_eq(cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 0),
		     CUDA_ERROR_INVALID_DEVICE);

	OK(cuCtxEnablePeerAccess(ctx[1], 0));
	cr_assert_eq(cuCtxEnablePeerAccess(ctx[1], 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
	cr_assert_eq(cuCtxEnablePeerAccess(ctx[0], 0), CUDA_ERROR_INVALID_CONTEXT,
		     "the current context itself");
	cr_assert_eq(cuCtxEnablePeerAccess((CUcontext)&v, 0), CUDA_ERROR_INVALID_CONTEXT);

	OK(cuMemAlloc(&a, WORDS * 4));
	OK(cuCtxSetCurrent(ctx[1]));
	OK(cuMemAlloc(&b, WORDS * 4));
	OK(cuStreamCreate(&s, 0));
	cr_assert_eq(fill(ctx[0], a, 100), 0);
	OK(cuMemcpyPeer(b, ctx[1], a, ctx[0], WORDS * 4));
	cr_assert(holds(ctx[1], b, 100), "device 0 to device 1");
	cr_assert_eq(fill(ctx[1], b, 7000), 0);
	OK(cuMemcpyPeerAsync(a, ctx[0], b, ctx[1], WORDS * 4, s));
	OK(cuStreamSynchronize(s));
	cr_assert(holds(ctx[0], a, 7000), "device 1 to device 0, on a stream");
	cr_assert_eq(cuMemcpyPeer(a, (CUcontext)&v, b, ctx[1], 4), CUDA_ERROR_INVALID_CONTEXT);
	cr_assert_eq(fill(ctx[1], b, 123), 0);
	OK(cuMemcpyDtoD(a, b, WORDS * 4)); /* from device 1's context: the pointers say where */
	cr_assert(holds(ctx[0], a, 123), "unified addressing across devices");

	OK(cuCtxSetCurrent(ctx[0]));
	OK(cuCtxDisablePeerAccess(ctx[1]));
	cr_assert_eq(cuCtxDisablePeerAccess(ctx[1]), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
}

/*
 * In a child of the test: peer access from device 0's context to device 1's,
 * memory on both. Exit 0 after the save; restored, 42 when the access is
 * enabled as it was (enabling it again is refused as already done), the
 * memory of both devices is back, and copies between them work; 3 and up
 * otherwise.
 */
static int save_with_peers(const char *image)
{
	CUcontext ctx[2];
	CUdeviceptr a, b;
	int r;

	if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx[1], 1) ||
	    cuDevicePrimaryCtxRetain(&ctx[0], 0) || cuCtxSetCurrent(ctx[0]) ||
	    cuCtxEnablePeerAccess(ctx[1], 0) || cuMemAlloc(&a, WORDS * 4) ||
	    cuCtxSetCurrent(ctx[1]) || cuMemAlloc(&b, WORDS * 4) || fill(ctx[0], a, 5) ||
	    fill(ctx[1], b, 900))
		return 1;
	r = selfckpt_save(image);
	if (r == SELFCKPT_SAVED)
		return 0;
	if (r != SELFCKPT_RESTORED)
		return 2;
	if (cuCtxSetCurrent(ctx[0]) ||
	    cuCtxEnablePeerAccess(ctx[1], 0) != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
		return 3;
	if (!holds(ctx[0], a, 5) || !holds(ctx[1], b, 900))
		return 4;
	if (cuMemcpyPeer(b, ctx[1], a, ctx[0], WORDS * 4) || !holds(ctx[1], b, 5))
		return 5;
	return 42;
}

Test(cuda_peer, peer_access_and_both_devices_come_back_after_a_restart)
{
	char dir[] = "/tmp/sc-peer-XXXXXX";
	int status = sc_test_exit_after_restore(save_with_peers, dir);

	cr_assert_eq(status, 42, "restored: exit %d (3: access, 4: memory, 5: copies; see %s/out)",
		     status, dir);
	sc_test_remove_dir(dir);
}
