/* SPDX-License-Identifier: MIT */
/*
 * resumable.c - launches a checkpoint can interrupt (selfckpt_kernel.h).
 *
 * The flag the kernels read is a word of pinned host memory of the channel,
 * which the GPU reads through its mapping while the kernels run and the CPU
 * writes directly: raising it needs no CUDA call, so it is raised before the
 * checkpoint takes the API lock, whose taking waits for the synchronisation
 * the launcher is in, which waits for the kernel, which sees the flag. It is
 * lowered before the lock is let go, in the saving process and in the
 * restored one (whose pinned memory comes back as the instant left it:
 * raised).
 *
 * The launcher is an ordinary user of the Driver API: it launches, waits,
 * reads the counter back, and launches again, once the flag is down, while
 * items are left. Its state
 * is its stack and the counter in device memory, so a thread restored inside
 * it goes on as it would have.
 */
#include <stddef.h>
#include <time.h>

#include "cuda/lib/cuda_internal.h"
#include "format/sc_log.h"
#include "selfckpt_kernel.h"

static volatile unsigned int *flag; /* in the channel's pinned heap; NULL: no launch yet */
static pthread_mutex_t flag_lock = PTHREAD_MUTEX_INITIALIZER;

static CUresult make_flag(void)
{
	CUresult res = CUDA_SUCCESS;
	void *p;

	pthread_mutex_lock(&flag_lock);
	if (!flag && (res = cuMemAllocHost(&p, sizeof(*flag))) == CUDA_SUCCESS) {
		*(volatile unsigned int *)p = 0;
		__atomic_store_n(&flag, (volatile unsigned int *)p, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&flag_lock);
	return res;
}

void sc_resumable_raise(void)
{
	volatile unsigned int *f = __atomic_load_n(&flag, __ATOMIC_ACQUIRE);

	if (f)
		__atomic_store_n(f, 1u, __ATOMIC_SEQ_CST);
}

void sc_resumable_lower(void)
{
	volatile unsigned int *f = __atomic_load_n(&flag, __ATOMIC_ACQUIRE);

	if (f)
		__atomic_store_n(f, 0u, __ATOMIC_SEQ_CST);
}

/*
 * The launch ends. Asked, not waited for: the proxy serves one request at a
 * time, and a checkpoint's write must not queue behind a synchronisation
 * that lasts as long as the kernel. Polled from every 20 us up to 1 ms: the
 * kernels this serves are long.
 */
static CUresult wait_for_stream(CUstream stream)
{
	long ns = 20000;
	CUresult res;

	while ((res = cuStreamQuery(stream)) == CUDA_ERROR_NOT_READY) {
		nanosleep(&(struct timespec){ 0, ns }, NULL);
		ns = ns < 1000000 ? ns * 2 : 1000000;
	}
	return res;
}

/* Until the checkpoint that stopped the kernel is over: launched now, it would stop at once. */
static void wait_for_flag_down(void)
{
	while (__atomic_load_n(flag, __ATOMIC_ACQUIRE))
		nanosleep(&(struct timespec){ 0, 100000 }, NULL);
}

/* The work's counter and flag for the next launch: the flag's device address may change. */
static CUresult set_flag(CUdeviceptr work, struct selfckpt_work *w)
{
	CUdeviceptr dev;
	CUresult res = cuMemHostGetDevicePointer(&dev, (void *)flag, 0);

	if (res != CUDA_SUCCESS)
		return res;
	w->flag = (const volatile unsigned int *)(uintptr_t)dev;
	return cuMemcpyHtoD(work + offsetof(struct selfckpt_work, flag), &w->flag,
			    sizeof(w->flag) + sizeof(w->launches));
}

SELFCKPT_API CUresult selfckpt_launch_resumable(CUfunction f, unsigned int gx, unsigned int gy,
						unsigned int gz, unsigned int bx, unsigned int by,
						unsigned int bz, unsigned int shared,
						CUstream stream, void **params, CUdeviceptr work,
						unsigned long long items)
{
	struct selfckpt_work w = { 0, items, NULL, 0 };
	CUresult res;

	if (!work || !items)
		return items ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	if ((res = make_flag()) != CUDA_SUCCESS ||
	    (res = cuMemcpyHtoD(work, &w, sizeof(w))) != CUDA_SUCCESS)
		return res;
	for (;;) {
		w.launches++;
		if ((res = set_flag(work, &w)) != CUDA_SUCCESS ||
		    (res = cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, params,
					  NULL)) != CUDA_SUCCESS ||
		    (res = wait_for_stream(stream)) != CUDA_SUCCESS ||
		    (res = cuMemcpyDtoH(&w, work, sizeof(w))) != CUDA_SUCCESS)
			return res;
		if (w.next >= w.total)
			return CUDA_SUCCESS;
		/* a checkpoint stopped it: launched again once the checkpoint is over */
		wait_for_flag_down();
		sc_log(SC_LOG_DEBUG, "resumable launch: %llu of %llu items done, launched again",
		       w.next, w.total);
	}
}
