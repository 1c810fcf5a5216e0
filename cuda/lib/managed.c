/* SPDX-License-Identifier: MIT */
/*
 * managed.c - managed memory's two copies, kept coherent (managed.h says
 * how), checkpointed and restored.
 *
 * Pages the CPU wrote go to the device before any GPU work: GPU work
 * submitted after a CPU write sees it. Every allocation comes back to the
 * host after a synchronisation that covers GPU work: the CPU sees what the
 * GPU wrote once the program has synchronised, as it must with the driver's
 * managed memory on a device without concurrent access. A page the CPU wrote
 * while GPU work was pending is the CPU's: it is sent before the copy back.
 *
 * Which streams have GPU work not yet followed by a copy back is kept by
 * stream (the proxy's handles): a synchronisation of one stream leaves the
 * others' work to their own synchronisation.
 *
 * A checkpoint keeps managed memory once, in the host copy, which is the
 * program's own memory and so in the image at the instant of the freeze; the
 * device copy is left out of the image (gpu_checkpoint.c). A restart sends
 * the host copy to the device again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/sc_core.h"
#include "core/sc_write_watch.h"
#include "cuda/lib/managed.h"
#include "format/sc_array.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"

#define PENDING_MAX 32 /* streams tracked one by one; past that, all of them */

struct pending {
	uint64_t ctx, stream;
};

int sc_managed_n;

static struct {
	pthread_mutex_t lock;
	struct sc_managed *v; /* sorted by address */
	size_t n, cap;
	struct pending pending[PENDING_MAX];
	size_t pending_n;
	bool pending_all;     /* more streams than PENDING_MAX had work */
} mm = { .lock = PTHREAD_MUTEX_INITIALIZER };

void sc_managed_lock(void)
{
	pthread_mutex_lock(&mm.lock);
}

void sc_managed_unlock(void)
{
	pthread_mutex_unlock(&mm.lock);
}

static size_t page_round(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (n + page - 1) / page * page;
}

struct sc_managed *sc_managed_find(CUdeviceptr p, size_t n)
{
	for (size_t i = 0; i < mm.n; i++)
		if (p >= mm.v[i].addr && p - mm.v[i].addr < mm.v[i].bytes &&
		    n <= mm.v[i].bytes - (p - mm.v[i].addr))
			return &mm.v[i];
	return NULL;
}

bool sc_managed_holds(CUdeviceptr addr)
{
	bool found;

	pthread_mutex_lock(&mm.lock);
	found = sc_managed_find(addr, 1) != NULL;
	pthread_mutex_unlock(&mm.lock);
	return found;
}

static bool overlaps_any(CUdeviceptr p, size_t n)
{
	for (size_t i = 0; i < mm.n; i++)
		if (p < mm.v[i].addr + mm.v[i].bytes && mm.v[i].addr < p + n)
			return true;
	return false;
}

/* ---- CPU to GPU ---- */

/*
 * A run of pages the CPU wrote goes to every allocation or variable it holds
 * part of: __managed__ variables of a module may share pages.
 */
static int push_run(void *arg, uint64_t start, uint64_t end)
{
	CUresult *res = arg;

	for (size_t j = 0; j < mm.n && *res == CUDA_SUCCESS; j++) {
		const struct sc_managed *m = &mm.v[j];
		uint64_t lo = start > m->addr ? start : m->addr;
		uint64_t hi = end < m->addr + m->bytes ? end : m->addr + m->bytes;

		if (lo < hi)
			*res = sc_cu_stage_in(m->ctx->o.real, lo, (const void *)(uintptr_t)lo,
					      hi - lo);
	}
	return *res == CUDA_SUCCESS ? 0 : -EIO;
}

/* Every page the CPU wrote since the last push, to the device. mm.lock held. */
static CUresult push_locked(void)
{
	for (size_t i = 0; i < mm.n; i++) {
		CUresult res = CUDA_SUCCESS;
		int err = sc_ww_take((void *)(uintptr_t)mm.v[i].host, mm.v[i].host_len, push_run,
				     &res);

		if (res != CUDA_SUCCESS)
			return res;
		if (err) {
			sc_log(SC_LOG_ERROR, "cannot find the pages written in managed memory at "
			       "0x%llx: %s", (unsigned long long)mm.v[i].addr, strerror(-err));
			return CUDA_ERROR_UNKNOWN;
		}
	}
	return CUDA_SUCCESS;
}

/* ---- GPU to CPU ---- */

/*
 * The protection is lifted while the copy writes the host pages, so that the
 * copy back neither counts as the CPU's writing nor faults on every page.
 */
static CUresult pull_one(const struct sc_managed *m)
{
	void *host = (void *)(uintptr_t)m->host;
	CUresult res;
	int err;

	if ((err = sc_ww_protect(host, m->host_len, false)) < 0)
		goto failed;
	res = sc_cu_stage_out(m->ctx->o.real, (void *)(uintptr_t)m->addr, m->addr, m->bytes);
	if ((err = sc_ww_protect(host, m->host_len, true)) < 0)
		goto failed;
	return res;
failed:
	sc_log(SC_LOG_ERROR, "cannot protect managed memory at 0x%llx: %s",
	       (unsigned long long)m->addr, strerror(-err));
	return CUDA_ERROR_UNKNOWN;
}

static CUresult pull_locked(void)
{
	CUresult res = push_locked();

	for (size_t i = 0; i < mm.n && res == CUDA_SUCCESS; i++)
		res = pull_one(&mm.v[i]);
	return res;
}

/* ---- which streams have work the host has not seen ---- */

static void pending_add(uint64_t ctx, uint64_t stream)
{
	for (size_t i = 0; i < mm.pending_n; i++)
		if (mm.pending[i].ctx == ctx && mm.pending[i].stream == stream)
			return;
	if (mm.pending_n == PENDING_MAX)
		mm.pending_all = true;
	else
		mm.pending[mm.pending_n++] = (struct pending){ ctx, stream };
}

static void pending_remove(uint64_t ctx, uint64_t stream)
{
	for (size_t i = 0; i < mm.pending_n; i++)
		if (mm.pending[i].ctx == ctx && mm.pending[i].stream == stream) {
			mm.pending[i] = mm.pending[--mm.pending_n];
			return;
		}
}

/*
 * What a synchronisation covers. An event's stream is not known here: its
 * synchronisation copies back and leaves every stream pending. Where more
 * streams had work than are tracked, only a context's synchronisation
 * covers them all.
 */
static void pending_covered(uint64_t ctx, uint64_t stream, enum sc_managed_sync scope)
{
	if (scope == SC_SYNC_CONTEXT) {
		for (size_t i = 0; i < mm.pending_n;)
			if (mm.pending[i].ctx == ctx)
				mm.pending[i] = mm.pending[--mm.pending_n];
			else
				i++;
		mm.pending_all = false;
	} else if (scope == SC_SYNC_STREAM) {
		pending_remove(ctx, stream);
	}
}

CUresult sc_managed_before_work(uint64_t ctx, uint64_t stream, CUdeviceptr dst, size_t n)
{
	CUresult res;

	pthread_mutex_lock(&mm.lock);
	res = push_locked();
	if (res == CUDA_SUCCESS && n && (dst == SC_MANAGED_ANY || overlaps_any(dst, n)))
		pending_add(ctx, stream);
	pthread_mutex_unlock(&mm.lock);
	return res;
}

CUresult sc_managed_synced(uint64_t ctx, uint64_t stream, enum sc_managed_sync scope)
{
	CUresult res = CUDA_SUCCESS;

	pthread_mutex_lock(&mm.lock);
	if (mm.pending_n || mm.pending_all) {
		res = pull_locked();
		if (res == CUDA_SUCCESS)
			pending_covered(ctx, stream, scope);
	}
	pthread_mutex_unlock(&mm.lock);
	return res;
}

/* ---- allocations ---- */

static CUresult zero_device(struct sc_cu_ctx *c, CUdeviceptr p, size_t bytes)
{
	struct sc_req r = { .op = SC_OP_MEMSET, .ctx = c->o.real, .flags = SC_MSG_SYNC_STREAM,
			    .a = { p, 0, 1, bytes, 0, 0, 0 } };

	return sc_cu_call(&r);
}

/* The host copy at the device copy's address, watched; zero like the device's. */
static CUresult map_host(CUdeviceptr p, size_t len)
{
	void *want = (void *)(uintptr_t)p;
	void *got = mmap(want, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	int err;

	if (got != want) {
		err = got == MAP_FAILED ? errno : EEXIST;
		if (got != MAP_FAILED)
			munmap(got, len); /* a kernel that ignored MAP_FIXED_NOREPLACE */
		sc_log(SC_LOG_ERROR, "cannot map managed memory's host copy at 0x%llx (%zu bytes): "
		       "%s; the program has memory there: set SELFCKPT_CUDA_ARENA to a free "
		       "address", (unsigned long long)p, len, strerror(err));
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if ((err = sc_ww_watch(want, len)) < 0) {
		sc_log(SC_LOG_ERROR, "cannot watch managed memory at 0x%llx for writes: %s",
		       (unsigned long long)p, strerror(-err));
		munmap(want, len);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

static CUresult record(struct sc_cu_ctx *c, CUdeviceptr p, size_t bytes, uint64_t host,
		       size_t len, const void *module)
{
	size_t i = 0;

	if (sc_grow((void **)&mm.v, &mm.cap, mm.n + 1, sizeof(*mm.v)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	while (i < mm.n && mm.v[i].addr < p)
		i++;
	memmove(&mm.v[i + 1], &mm.v[i], (mm.n - i) * sizeof(*mm.v));
	mm.v[i] = (struct sc_managed){ .addr = p, .bytes = bytes, .host = host, .host_len = len,
				       .ctx = c, .module = module };
	mm.n++;
	__atomic_add_fetch(&sc_managed_n, 1, __ATOMIC_RELAXED);
	return CUDA_SUCCESS;
}

CUresult sc_managed_alloc(struct sc_cu_ctx *c, size_t bytes, CUdeviceptr *out)
{
	size_t len = page_round(bytes);
	CUdeviceptr p;
	CUresult res;

	if (sc_ww_init() < 0)
		return CUDA_ERROR_NOT_SUPPORTED;
	if ((res = sc_arena_alloc_own(c, bytes, &p)) != CUDA_SUCCESS)
		return res;
	if ((res = zero_device(c, p, bytes)) == CUDA_SUCCESS)
		res = map_host(p, len);
	if (res != CUDA_SUCCESS) {
		sc_arena_free(p);
		return res;
	}
	pthread_mutex_lock(&mm.lock);
	res = record(c, p, bytes, p, len, NULL);
	pthread_mutex_unlock(&mm.lock);
	if (res != CUDA_SUCCESS) {
		sc_ww_unwatch((void *)(uintptr_t)p, len);
		munmap((void *)(uintptr_t)p, len);
		sc_arena_free(p);
		return res;
	}
	*out = p;
	return CUDA_SUCCESS;
}

/* Does a record other than @skip have the host page at @page? mm.lock held. */
static bool page_kept(uint64_t page, size_t skip)
{
	for (size_t j = 0; j < mm.n; j++)
		if (j != skip && page >= mm.v[j].host && page - mm.v[j].host < mm.v[j].host_len)
			return true;
	return false;
}

/* mm.lock held; @i's host copy goes, but for pages other variables share, and its record. */
static void forget(size_t i)
{
	struct sc_managed *m = &mm.v[i];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (!m->module) { /* an allocation's pages are its own */
		sc_ww_unwatch((void *)(uintptr_t)m->host, m->host_len);
		munmap((void *)(uintptr_t)m->host, m->host_len);
	}
	for (uint64_t at = m->host; m->module && at < m->host + m->host_len; at += page)
		if (!page_kept(at, i)) {
			sc_ww_unwatch((void *)(uintptr_t)at, page);
			munmap((void *)(uintptr_t)at, page);
		}
	free(m->pages);
	memmove(m, m + 1, (mm.n - i - 1) * sizeof(*m));
	mm.n--;
	__atomic_sub_fetch(&sc_managed_n, 1, __ATOMIC_RELAXED);
}

bool sc_managed_free(CUdeviceptr p, CUresult *res)
{
	bool found = false;

	pthread_mutex_lock(&mm.lock);
	for (size_t i = 0; i < mm.n && !found; i++)
		if (mm.v[i].addr == p && !mm.v[i].module) {
			forget(i);
			found = true;
		}
	pthread_mutex_unlock(&mm.lock);
	if (found)
		*res = sc_arena_free(p);
	return found;
}

void sc_managed_release_context(struct sc_cu_ctx *c)
{
	pthread_mutex_lock(&mm.lock);
	for (size_t i = mm.n; i-- > 0;)
		if (mm.v[i].ctx == c)
			forget(i); /* the arena unmaps the device copy with the context's blocks */
	pthread_mutex_unlock(&mm.lock);
}

/* ---- __managed__ variables ---- */

/*
 * The pages of [@lo, @hi) that no host copy has yet, mapped, zero. mm.lock
 * held. The driver puts a module's variables next to each other: they share
 * pages, which stay mapped while any of them lives.
 */
static CUresult map_new_pages(uint64_t lo, uint64_t hi)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	for (uint64_t at = lo; at < hi; at += page) {
		void *want = (void *)(uintptr_t)at;

		if (page_kept(at, SIZE_MAX))
			continue;
		if (mmap(want, page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != want) {
			sc_log(SC_LOG_ERROR, "cannot map the host copy of a __managed__ variable at "
			       "0x%llx: the program has memory there", (unsigned long long)at);
			return CUDA_ERROR_NOT_SUPPORTED;
		}
	}
	return CUDA_SUCCESS;
}

CUresult sc_managed_adopt_global(struct sc_cu_ctx *c, const void *module, CUdeviceptr addr,
				 size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t lo = addr / page * page, hi = (addr + bytes + page - 1) / page * page;
	struct sc_managed *m;
	CUresult res;
	int err;

	if (sc_ww_init() < 0)
		return CUDA_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&mm.lock);
	if ((m = sc_managed_find(addr, bytes)) && m->addr == addr) {
		pthread_mutex_unlock(&mm.lock);
		return CUDA_SUCCESS;
	}
	/* the shared pages' unsent writes go first: watching them again forgets them */
	res = push_locked();
	if (res == CUDA_SUCCESS)
		res = map_new_pages(lo, hi);
	if (res == CUDA_SUCCESS && (err = sc_ww_watch((void *)(uintptr_t)lo, hi - lo)) < 0) {
		sc_log(SC_LOG_ERROR, "cannot watch the __managed__ variable at 0x%llx for writes: %s",
		       (unsigned long long)addr, strerror(-err));
		res = CUDA_ERROR_NOT_SUPPORTED;
	}
	if (res == CUDA_SUCCESS)
		res = record(c, addr, bytes, lo, hi - lo, module);
	if (res == CUDA_SUCCESS)
		res = pull_one(sc_managed_find(addr, bytes)); /* its value, as the module set it */
	pthread_mutex_unlock(&mm.lock);
	return res;
}

void sc_managed_forget_module(const void *module)
{
	pthread_mutex_lock(&mm.lock);
	for (size_t i = mm.n; i-- > 0;)
		if (mm.v[i].module == module)
			forget(i);
	pthread_mutex_unlock(&mm.lock);
}

/* ---- checkpoint and restart ---- */

/*
 * Called with every other CUDA call held off and the GPU synchronised: the
 * host copy takes what the GPU wrote since it last did, so that it alone can
 * go into the image. Where no GPU work is pending the host copy is left as
 * it is: the program's threads still run until the freeze, and one may be
 * writing managed memory, as it may after a synchronisation (a copy back now
 * would undo such a write; measured, a checkpoint at once changed the sample's
 * results). A CPU write before the freeze is in the image either way.
 */
int sc_managed_checkpoint(void)
{
	CUresult res = CUDA_SUCCESS;

	pthread_mutex_lock(&mm.lock);
	if (mm.n && (mm.pending_n || mm.pending_all))
		res = pull_locked();
	if (res == CUDA_SUCCESS) {
		mm.pending_n = 0;
		mm.pending_all = false;
	}
	pthread_mutex_unlock(&mm.lock);
	if (res != CUDA_SUCCESS)
		return sc_err(SELFCKPT_ECUDA, "cannot bring managed memory back to the host for "
			      "the checkpoint: %s", sc_cu_result_name(res));
	return 0;
}

int sc_managed_restored(void)
{
	int err;

	if (!mm.n)
		return 0;
	if ((err = sc_ww_reopen()) < 0)
		return sc_err(SELFCKPT_EHOST, "cannot restart managed memory on this machine: "
			      "%s", strerror(-err));
	for (size_t i = 0; i < mm.n; i++) {
		struct sc_managed *m = &mm.v[i];
		CUresult res;

		if ((err = sc_ww_watch((void *)(uintptr_t)m->host, m->host_len)) < 0)
			return sc_err(SELFCKPT_EHOST, "cannot watch managed memory at 0x%llx: %s",
				      (unsigned long long)m->addr, strerror(-err));
		res = sc_cu_stage_in(m->ctx->o.real, m->addr, (const void *)(uintptr_t)m->addr,
				     m->bytes);
		if (res != CUDA_SUCCESS)
			return sc_err(SELFCKPT_ECUDA, "cannot copy managed memory at 0x%llx (%zu "
				      "bytes) to the GPU: %s", (unsigned long long)m->addr,
				      m->bytes, sc_cu_result_name(res));
	}
	return 0;
}

/*
 * The device attributes a program reads to choose how to use managed memory,
 * as this library gives it: managed memory where the write watch can be had;
 * no concurrent access (the coherence is at launches and synchronisations);
 * no access to the program's other memory from the GPU, which is in another
 * process.
 */
void sc_managed_device_attribute(CUdevice_attribute attr, int *v)
{
	switch (attr) {
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
		*v = sc_ww_init() == 0; /* the device copy is ordinary device memory */
		break;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
	case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
	case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:
	case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST:
	case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED:
		*v = 0;
		break;
	default:
		break;
	}
}
