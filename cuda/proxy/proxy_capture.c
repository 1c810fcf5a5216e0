/* SPDX-License-Identifier: MIT */
/*
 * proxy_capture.c - device memory a checkpoint copies the program's device
 * memory into at its instant, so that the program's CUDA calls go on while
 * the image is written from the copy (cuda/lib/gpu_capture.c).
 *
 * An area is given only where the device keeps the asked spare besides: the
 * program, going on, must not find the device full because of it (its own
 * allocations wait for the area to be freed; the driver's may not).
 */
#include "cuda/proxy/proxy_internal.h"

static CUresult op_capture_area(struct sc_ch_slot *s)
{
	size_t free_bytes = 0, total = 0;
	CUdeviceptr p = 0;
	CUresult r = sc_drv.cuMemGetInfo(&free_bytes, &total);

	if (r != CUDA_SUCCESS)
		return r;
	/* the spare: a1 bytes, or 1/a2 of the device, whichever is more */
	uint64_t spare = s->a[2] && total / s->a[2] > s->a[1] ? total / s->a[2] : s->a[1];

	if (free_bytes < s->a[0] || free_bytes - s->a[0] < spare)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = sc_drv.cuMemAlloc(&p, (size_t)s->a[0]);
	s->a[0] = p;
	return r;
}

/*
 * cuMemFree() waits for every kernel of the device to end (1.9 s measured
 * with a kernel running, on an H200), and the program goes on launching:
 * the write would end only with its kernels. Freed in the order of the
 * stream that read the copy, it waits for nothing; a device without
 * stream-ordered frees gets the plain one.
 */
static CUresult op_capture_free(struct sc_ch_slot *s)
{
	CUresult r = s->a[1] ? sc_drv.cuMemFreeAsync((CUdeviceptr)s->a[0], STREAM(s->a[1]))
			     : CUDA_ERROR_NOT_SUPPORTED;

	return r == CUDA_ERROR_NOT_SUPPORTED ? sc_drv.cuMemFree((CUdeviceptr)s->a[0]) : r;
}

void sc_proxy_ops_capture(sc_proxy_op_fn *t)
{
	t[SC_OP_CAPTURE_AREA] = op_capture_area;
	t[SC_OP_CAPTURE_FREE] = op_capture_free;
}
