/* SPDX-License-Identifier: MIT */
/*
 * managed.h - managed memory (cuMemAllocManaged) in the proxy mode.
 *
 * The driver gives managed memory only to the process that holds it, the
 * proxy; the program's CPU must read and write it at the address its kernels
 * use. So each managed allocation is two copies at one address: device
 * memory of the arena in the proxy, which the kernels use, and anonymous
 * memory of the program at the same address, which its CPU uses. They are
 * kept coherent between launches and synchronisations (managed.c):
 *
 *  - before any work is given to the GPU (a launch, a graph, a copy or a
 *    memory set), the pages the CPU wrote since the last time are copied to
 *    the device (core/write_watch.c finds them);
 *  - after a synchronisation that covers GPU work given since the last one
 *    (cuCtxSynchronize, cuStreamSynchronize, cuEventSynchronize, a query
 *    that finds the work done, a synchronous copy), every managed allocation
 *    is copied back to the host.
 *
 * This is the coherence of devices without concurrent managed access (the
 * library reports CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS as 0): the
 * CPU does not touch managed memory while GPU work that uses it may run.
 */
#ifndef SC_CUDA_MANAGED_H
#define SC_CUDA_MANAGED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda/lib/cuda_internal.h"

/* ---- managed allocations (managed.c) ---- */

/* What cuMemAdvise and cuMemPrefetchAsync said of one page (api_managed.c). */
struct sc_managed_page {
	uint64_t accessed_by;       /* bit d: device d; bit 63: the CPU */
	int32_t preferred_id, prefetch_id;
	uint8_t preferred_type, prefetch_type; /* CUmemLocationType; 0: none */
	bool read_mostly;
};

struct sc_managed {
	CUdeviceptr addr;
	size_t bytes;                 /* asked for */
	uint64_t host;                /* the pages of the host copy: [host, host + host_len) */
	size_t host_len;
	struct sc_cu_ctx *ctx;
	struct sc_managed_page *pages; /* advice, one per host page; NULL until given */
	const void *module;           /* a __managed__ variable's module, else NULL (arena) */
};

extern int sc_managed_n; /* live allocations: 0 keeps every hook to one load */

static inline bool sc_managed_live(void)
{
	return __atomic_load_n(&sc_managed_n, __ATOMIC_RELAXED) > 0;
}

/** sc_managed_alloc() - cuMemAllocManaged's allocation of @bytes in @c, zeroed. */
CUresult sc_managed_alloc(struct sc_cu_ctx *c, size_t bytes, CUdeviceptr *out);
/** sc_managed_free() - free managed allocation @p. Return: false where @p is none (nothing done). */
bool sc_managed_free(CUdeviceptr p, CUresult *res);
/**
 * sc_managed_adopt_global() - the __managed__ variable of @module at @addr
 * (@bytes): its host copy is made, at pages it may share with others, and
 * takes the variable's value. Again for the same variable: nothing.
 */
CUresult sc_managed_adopt_global(struct sc_cu_ctx *c, const void *module, CUdeviceptr addr,
				 size_t bytes);
/** sc_managed_forget_module() - @module is unloaded: its variables' host copies go. */
void sc_managed_forget_module(const void *module);
/** sc_managed_release_context() - before @c is destroyed: its managed allocations' host copies. */
void sc_managed_release_context(struct sc_cu_ctx *c);
/**
 * sc_managed_find() - the managed allocation that holds [@p, @p + @n), or
 * NULL. The caller holds the lock (sc_managed_lock) while it uses it.
 */
struct sc_managed *sc_managed_find(CUdeviceptr p, size_t n);
void sc_managed_lock(void);
void sc_managed_unlock(void);

/* The whole address space: a launch may write any managed allocation. */
#define SC_MANAGED_ANY ((CUdeviceptr)0)

/**
 * sc_managed_before_work() - before GPU work on stream @stream (the proxy's)
 * of context @ctx that writes @n bytes at @dst (SC_MANAGED_ANY: it may write
 * anywhere; @n 0: it writes no device memory): the pages the CPU wrote go to
 * the device, and a synchronisation of @stream will bring managed memory back.
 */
CUresult sc_managed_before_work(uint64_t ctx, uint64_t stream, CUdeviceptr dst, size_t n);

enum sc_managed_sync { SC_SYNC_STREAM, SC_SYNC_CONTEXT, SC_SYNC_EVENT };

/**
 * sc_managed_synced() - after a synchronisation of @stream of @ctx (or of the
 * whole context, or of an event): managed memory comes back to the host if GPU
 * work may have changed it since it last did.
 */
CUresult sc_managed_synced(uint64_t ctx, uint64_t stream, enum sc_managed_sync scope);

/** sc_managed_holds() - is the arena block at @addr a managed allocation's? */
bool sc_managed_holds(CUdeviceptr addr);
/** sc_managed_checkpoint() - with the GPU synchronised: both copies of every allocation agree. */
int sc_managed_checkpoint(void);
/** sc_managed_restored() - at a restart, the arena back: the host copies go to the GPU. */
int sc_managed_restored(void);
/** sc_managed_device_attribute() - what the library's managed memory makes of @attr (@v the driver's). */
void sc_managed_device_attribute(CUdevice_attribute attr, int *v);

/* ---- staged copies for it (api_copy.c): through the channel, on the legacy stream ---- */
CUresult sc_cu_stage_in(uint64_t ctx, CUdeviceptr dst, const void *src, size_t n);
CUresult sc_cu_stage_out(uint64_t ctx, void *dst, CUdeviceptr src, size_t n);

#endif
