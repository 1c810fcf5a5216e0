/* SPDX-License-Identifier: MIT */
/*
 * par_copy.c - copying pageable memory in and out of the staging buffers on
 * several threads. One thread copies about 10 GB/s; a staged copy is bounded
 * by that, not by the GPU (55 GB/s from pinned memory). The workers start at
 * the first large staged copy and stay, blocked, for the process's life.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "compress/sc_compress.h"
#include "core/sc_trigger.h"
#include "cuda/lib/cuda_internal.h"

#define WORKERS_MAX 4
#define PART_MIN (1u << 20) /* below this a part is not worth a thread */

struct part {
	struct sc_task task;
	char *dst;
	const char *src;
	size_t n;
};

static struct sc_pool *pool;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void start_pool(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = cpus > WORKERS_MAX ? WORKERS_MAX : cpus > 1 ? (unsigned)cpus : 1;

	/* the workers stay: a checkpoint must be able to stop them */
	if (n > 1 && sc_pool_new_taking(&pool, n, sc_stop_signal()) < 0)
		pool = NULL;
}

static void copy_part(struct sc_task *t)
{
	struct part *p = (struct part *)t;

	memcpy(p->dst, p->src, p->n);
}

void sc_cu_memcpy(void *dst, const void *src, size_t n)
{
	struct part parts[WORKERS_MAX];
	unsigned k, count;
	size_t each;

	if (n >= 2 * PART_MIN)
		pthread_once(&pool_once, start_pool);
	if (!pool || n < 2 * PART_MIN) {
		memcpy(dst, src, n);
		return;
	}
	count = sc_pool_threads(pool);
	if (n / count < PART_MIN)
		count = (unsigned)(n / PART_MIN);
	each = (n / count + 4095) & ~(size_t)4095;
	for (k = 0; k < count && (size_t)k * each < n; k++) {
		size_t off = (size_t)k * each;

		parts[k] = (struct part){ .task.fn = copy_part, .dst = (char *)dst + off,
					  .src = (const char *)src + off,
					  .n = n - off < each ? n - off : each };
		sc_pool_submit(pool, &parts[k].task);
	}
	for (unsigned i = 0; i < k; i++)
		sc_pool_wait(pool, &parts[i].task);
}
