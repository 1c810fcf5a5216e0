/* SPDX-License-Identifier: MIT */
/*
 * host_heap.c - cuMemAllocHost memory: pages of the channel, which the proxy
 * registers with the driver as pinned, so copies from them are DMA and the
 * application's buffer is the one the GPU reads (zero copy). First fit over
 * a sorted table of allocations, page-aligned; the proxy registers the heap
 * in pieces of SC_CH_HEAP_PIECE as its high-water mark grows.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda/lib/cuda_internal.h"
#include "format/sc_array.h"
#include "format/sc_log.h"

#define ALIGN 4096u
#define POPULATE_MIN (256ull << 20) /* less is pinned as it is */
#define POPULATE_THREADS 8

struct host_alloc {
	uint64_t off, len; /* from the heap start */
};

static struct host_alloc *allocs; /* sorted by offset */
static size_t allocs_n, allocs_cap;
static uint64_t registered;       /* bytes of heap pinned in the proxy */
static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t heap_size(void)
{
	return sc_cu.size - SC_CH_HEAP_OFF;
}

static char *heap_base(void)
{
	return (char *)sc_cu.base + SC_CH_HEAP_OFF;
}

/* First gap of @len bytes; its index in allocs[] goes to *at. */
static bool find_gap(uint64_t len, uint64_t *off, size_t *at)
{
	uint64_t prev_end = 0;

	for (size_t i = 0; i <= allocs_n; i++) {
		uint64_t next = i < allocs_n ? allocs[i].off : heap_size();

		if (next - prev_end >= len) {
			*off = prev_end;
			*at = i;
			return true;
		}
		if (i < allocs_n)
			prev_end = allocs[i].off + allocs[i].len;
	}
	return false;
}

struct populate_slice {
	char *at;
	uint64_t len;
};

static void *populate_slice(void *arg)
{
	struct populate_slice *p = arg;

	madvise(p->at, p->len, MADV_POPULATE_WRITE);
	return NULL;
}

/*
 * The driver pins pages far faster when they exist already (H200: 8 GiB of
 * fresh pages in 6.1 s, of existing ones in 0.44 s), and the kernel makes
 * them on several threads at once: each populates a slice of the memory
 * about to be pinned. Where it cannot (Linux before 5.14), pinning makes them.
 */
static void populate(char *at, uint64_t len)
{
	pthread_t th[POPULATE_THREADS];
	struct populate_slice sl[POPULATE_THREADS];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = cpus < 1 ? 1 : cpus > POPULATE_THREADS ? POPULATE_THREADS : (unsigned)cpus;
	uint64_t slice = (len / n + ALIGN - 1) / ALIGN * ALIGN;
	unsigned started = 0;

	for (unsigned i = 0; i < n && (uint64_t)i * slice < len; i++) {
		sl[i] = (struct populate_slice){ at + (uint64_t)i * slice,
						 len - (uint64_t)i * slice < slice ?
							 len - (uint64_t)i * slice : slice };
		if (i == 0 || pthread_create(&th[i], NULL, populate_slice, &sl[i]))
			continue;
		started |= 1u << i;
	}
	populate_slice(&sl[0]);
	for (unsigned i = 1; i < n && (uint64_t)i * slice < len; i++) {
		if (started & (1u << i))
			pthread_join(th[i], NULL);
		else
			populate_slice(&sl[i]);
	}
}

static CUresult pin_up_to(uint64_t end, uint64_t ctx)
{
	if (end > registered && end - registered >= POPULATE_MIN)
		populate(heap_base() + registered, end - registered);
	while (registered < end) {
		uint64_t piece = heap_size() - registered < SC_CH_HEAP_PIECE ?
					 heap_size() - registered : SC_CH_HEAP_PIECE;
		struct sc_req r = { .op = SC_OP_HEAP_REGISTER, .ctx = ctx,
				    .a = { (uint64_t)(uintptr_t)(heap_base() + registered), piece } };
		CUresult res = sc_cu_call(&r);

		if (res != CUDA_SUCCESS)
			return res;
		registered += piece;
	}
	return CUDA_SUCCESS;
}

static CUresult insert(size_t at, uint64_t off, uint64_t len)
{
	if (sc_grow((void **)&allocs, &allocs_cap, allocs_n + 1, sizeof(*allocs)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	memmove(&allocs[at + 1], &allocs[at], (allocs_n - at) * sizeof(*allocs));
	allocs[at] = (struct host_alloc){ off, len };
	allocs_n++;
	return CUDA_SUCCESS;
}

CUresult sc_host_alloc(size_t bytes, void **out)
{
	uint64_t len = (bytes + ALIGN - 1) / ALIGN * ALIGN, off;
	CUresult res = CUDA_ERROR_OUT_OF_MEMORY;
	size_t at;

	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&heap_lock);
	if (find_gap(len, &off, &at) && (res = pin_up_to(off + len, sc_ctx_real())) == CUDA_SUCCESS &&
	    (res = insert(at, off, len)) == CUDA_SUCCESS)
		*out = heap_base() + off;
	pthread_mutex_unlock(&heap_lock);
	if (res == CUDA_ERROR_OUT_OF_MEMORY)
		sc_log(SC_LOG_INFO, "pinned host memory exhausted (%llu MiB; see "
		       "SELFCKPT_CUDA_PINNED_MB)", (unsigned long long)(heap_size() >> 20));
	return res;
}

/* Where an allocation of @len after the last live one starts; false: the heap ends first. */
static bool after_last(uint64_t len, uint64_t *off)
{
	uint64_t end = allocs_n ? allocs[allocs_n - 1].off + allocs[allocs_n - 1].len : 0;

	*off = end;
	return heap_size() >= end && heap_size() - end >= len;
}

uint64_t sc_host_pin_needed(size_t bytes)
{
	uint64_t len = (bytes + ALIGN - 1) / ALIGN * ALIGN, off, need = 0;

	pthread_mutex_lock(&heap_lock);
	if (after_last(len, &off) && off + len > registered)
		need = off + len - registered;
	pthread_mutex_unlock(&heap_lock);
	return need;
}

CUresult sc_host_alloc_last(size_t bytes, void **out, uint64_t *newly_pinned)
{
	uint64_t len = (bytes + ALIGN - 1) / ALIGN * ALIGN, off, was;
	CUresult res = CUDA_ERROR_OUT_OF_MEMORY;

	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&heap_lock);
	was = registered;
	if (after_last(len, &off) && (res = pin_up_to(off + len, sc_ctx_real())) == CUDA_SUCCESS &&
	    (res = insert(allocs_n, off, len)) == CUDA_SUCCESS)
		*out = heap_base() + off;
	*newly_pinned = registered - was;
	pthread_mutex_unlock(&heap_lock);
	return res;
}

static ssize_t find_alloc(const void *p)
{
	uint64_t off = (uint64_t)((const char *)p - heap_base());

	for (size_t i = 0; i < allocs_n; i++)
		if (allocs[i].off == off)
			return (ssize_t)i;
	return -1;
}

CUresult sc_host_free(void *p)
{
	ssize_t i;

	pthread_mutex_lock(&heap_lock);
	i = sc_cu.base ? find_alloc(p) : -1;
	if (i >= 0) {
		memmove(&allocs[i], &allocs[i + 1], (allocs_n - (size_t)i - 1) * sizeof(*allocs));
		allocs_n--;
	}
	pthread_mutex_unlock(&heap_lock);
	return i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

size_t sc_host_size(const void *p)
{
	ssize_t i;
	size_t n = 0;

	pthread_mutex_lock(&heap_lock);
	if (sc_cu.base && (i = find_alloc(p)) >= 0)
		n = allocs[i].len;
	pthread_mutex_unlock(&heap_lock);
	return n;
}

uint64_t sc_host_extent_without(const void *p)
{
	uint64_t off = (uint64_t)((const char *)p - heap_base()), end = 0;

	for (size_t i = 0; i < allocs_n; i++)
		if (allocs[i].off != off && allocs[i].off + allocs[i].len > end)
			end = allocs[i].off + allocs[i].len;
	return end;
}

uint64_t sc_host_extent(void)
{
	return allocs_n ? allocs[allocs_n - 1].off + allocs[allocs_n - 1].len : 0;
}

/*
 * Only the pieces that live allocations reach: pinning costs the new proxy
 * time and the machine locked memory in proportion to the bytes, and memory
 * freed before the checkpoint is pinned again only when an allocation reaches it.
 */
CUresult sc_host_repin(uint64_t ctx)
{
	registered = 0;
	return pin_up_to(sc_host_extent(), ctx);
}
