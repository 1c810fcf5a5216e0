/* SPDX-License-Identifier: MIT */
/*
 * selfckpt_kernel.h - kernels a checkpoint can interrupt: resumable launches.
 *
 * A checkpoint waits for the kernels that run to end. A kernel written as a
 * loop over items of work, each taken from a counter in device memory, can
 * instead stop at its next item when a checkpoint is asked for, its progress
 * kept in that counter; the launch is then made again, from where it stopped,
 * once the checkpoint lets the program go on, and again after a restart from
 * that image. The result is the same bits as a launch never interrupted: each
 * item is done once, whole, by one block.
 *
 * In the kernel (CUDA C++, nvcc), the items a block takes, one at a time:
 *
 *	extern "C" __global__ void step(float *grid, struct selfckpt_work *work)
 *	{
 *		SELFCKPT_FOR_EACH_ITEM(work, item) {
 *			... item is 0 .. items-1: this block's part of the work ...
 *		}
 *	}
 *
 * Every thread of the block must reach SELFCKPT_FOR_EACH_ITEM (it
 * synchronises the block), and an item must not depend on another item of
 * the same launch, whose block may run before or after it, or in another
 * launch. On the host, with libselfckpt:
 *
 *	CUdeviceptr work;   // SELFCKPT_WORK_BYTES of device memory, e.g. cuMemAlloc
 *	void *params[] = { &grid, &work };
 *	selfckpt_launch_resumable(step, blocks, 1, 1, 256, 1, 1, 0, stream, params,
 *				  work, items);
 *
 * which returns once every item is done (it synchronises @stream). A kernel
 * launched otherwise is waited for by a checkpoint, as any kernel; launched
 * plainly with a work of { 0, items, NULL, 0 } (a program without selfckpt),
 * it does every item in one launch.
 */
#ifndef SELFCKPT_KERNEL_H
#define SELFCKPT_KERNEL_H

/* Shared by the host and the kernel: the work of one resumable launch, in device memory. */
struct selfckpt_work {
	unsigned long long next;             /* items taken so far (may pass total) */
	unsigned long long total;            /* items in all */
	const volatile unsigned int *flag;   /* *flag non-zero: a checkpoint waits; take no
					      * more (NULL, launched plainly: take all) */
	unsigned long long launches;         /* launches it took so far */
};

#define SELFCKPT_WORK_BYTES sizeof(struct selfckpt_work)

#ifdef __CUDACC__
/* The next item for this block into *@item; false once there is none, or a checkpoint waits. */
__device__ __forceinline__ bool selfckpt_take_item(struct selfckpt_work *w,
						   unsigned long long *item)
{
	__shared__ unsigned long long taken;

	__syncthreads(); /* every thread is done with the block's last item */
	if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)
		taken = w->flag && *w->flag ? ~0ull : atomicAdd(&w->next, 1ull);
	__syncthreads();
	*item = taken;
	return taken < w->total;
}

#define SELFCKPT_FOR_EACH_ITEM(work, item) \
	for (unsigned long long item; selfckpt_take_item((work), &item);)
#else
#include <cuda.h>

#include "selfckpt_errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * selfckpt_launch_resumable() - launch @f, a kernel written with
 * SELFCKPT_FOR_EACH_ITEM, until every one of its @items is done.
 * @f, @gx..@bz, @shared, @stream, @params: as cuLaunchKernel(); @params
 *	passes @work to the kernel where it wants it.
 * @work: SELFCKPT_WORK_BYTES of device memory this call sets up and uses
 *	(not shared with another launch running at the same time).
 *
 * A checkpoint asked for meanwhile (selfckpt_save() in another thread, a
 * signal, an interval) stops the kernel at its next item; the call launches
 * it again from there once the checkpoint is taken, and the process restored
 * from that image does the same. It synchronises @stream: the work is done
 * when it returns.
 *
 * Return: CUDA_SUCCESS, or the error of the launch, the synchronisation or a
 * copy of @work.
 */
SELFCKPT_API CUresult selfckpt_launch_resumable(CUfunction f, unsigned int gx, unsigned int gy,
						unsigned int gz, unsigned int bx, unsigned int by,
						unsigned int bz, unsigned int shared,
						CUstream stream, void **params, CUdeviceptr work,
						unsigned long long items);

#ifdef __cplusplus
}
#endif
#endif /* __CUDACC__ */

#endif /* SELFCKPT_KERNEL_H */
