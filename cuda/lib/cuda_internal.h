/* SPDX-License-Identifier: MIT */
/*
 * cuda_internal.h - the library side of selfckpt's CUDA support.
 *
 * The application calls the Driver API entry points this library exports
 * (api_*.c). Each one checks its arguments, translates the library's stable
 * handles (objects.c) into the proxy's, and sends a request over the channel
 * (client.c). Device memory comes from the library's arena (arena.c) at
 * addresses it chooses; pinned host memory from the channel's heap
 * (host_heap.c). Everything the library knows lives in the application's own
 * memory, so a checkpoint of the process carries it, and a restart replays it
 * against a fresh proxy (replay.c).
 */
#ifndef SC_CUDA_INTERNAL_H
#define SC_CUDA_INTERNAL_H

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cuda/shared/channel.h"
#include "cuda/shared/cuda_array.h"
#include "cuda/shared/proxy_requests.h"

#define SC_CU_API __attribute__((visibility("default")))

/* ---- the channel and the proxy (client.c) ---- */

struct sc_cu_client {
	void *base;          /* the channel, at the same address in the proxy */
	uint64_t size;
	int memfd;
	pid_t proxy;
	bool dead;           /* the proxy is gone: every call fails */
	bool started;
	CUresult init_error; /* why cuInit failed, for later calls */
	bool staging_pinned; /* the proxy has registered the staging buffers */
	pthread_mutex_t staging_lock; /* one staged copy at a time */
};

extern struct sc_cu_client sc_cu;

/* A request as a caller builds it; a[] carries the results back. */
struct sc_req {
	uint32_t op, flags;
	uint64_t ctx;             /* the proxy's context to make current, or 0 */
	uint64_t a[SC_CH_ARGS];
	const void *in, *in2;     /* request data, in two parts */
	uint32_t in_len, in2_len;
	void *out;                /* reply data goes here, up to out_cap bytes */
	uint32_t out_cap, out_len;
	uint32_t ticket;          /* set by sc_cu_post() */
};

/**
 * sc_cu_tool_environment() - the environment for a tool this library starts
 * (the GPU proxy, selfckpt-driver-ckpt): the program's, or at a restart the
 * restorer's, without LD_PRELOAD. Free with sc_cu_tool_environment_free().
 * Return: a NULL-ended array, or NULL when out of memory.
 */
char **sc_cu_tool_environment(void);
void sc_cu_tool_environment_free(char **env);

/** sc_cu_start() - create the channel and start the proxy (once); CUresult. */
CUresult sc_cu_start(void);

/** sc_cu_now_ns() - CLOCK_MONOTONIC in nanoseconds. */
uint64_t sc_cu_now_ns(void);

/** sc_cu_call() - send @r and wait for its reply; the CUresult of the call. */
CUresult sc_cu_call(struct sc_req *r);

/**
 * sc_cu_post() - send @r and return at once; a failure surfaces at the next
 * synchronising call, as in CUDA. r->ticket tells sc_cu_wait_ticket() what to wait for.
 */
CUresult sc_cu_post(struct sc_req *r);

/** sc_cu_wait_ticket() - wait until the proxy has carried out request @ticket. */
CUresult sc_cu_wait_ticket(uint32_t ticket);

/** sc_cu_wait_ticket_for() - as sc_cu_wait_ticket(), for @ns at most: CUDA_ERROR_NOT_READY after. */
CUresult sc_cu_wait_ticket_for(uint32_t ticket, uint64_t ns);

/** sc_cu_take_sticky() - the pending error of an asynchronous request, cleared. */
CUresult sc_cu_take_sticky(void);

/** sc_cu_in_channel() - is [p, p+n) inside the channel (pinned, seen by the proxy)? */
bool sc_cu_in_channel(const void *p, size_t n);

/** sc_cu_client_reset() - forget the proxy and the channel (after a restart). */
void sc_cu_client_reset(void);

/* ---- objects: the handles the application holds (objects.c) ---- */

enum sc_cu_kind {
	SC_K_CTX = 1,
	SC_K_MODULE,
	SC_K_LIBRARY,
	SC_K_FUNC,
	SC_K_KERNEL,
	SC_K_STREAM,
	SC_K_EVENT,
	SC_K_ARRAY,
	SC_K_TEXOBJ,
	SC_K_SURFOBJ,
	SC_K_MEMHANDLE,
	SC_K_MEMPOOL,
	SC_K_GRAPH,
	SC_K_GNODE,
	SC_K_GEXEC,
};

struct sc_cu_ctx;

/* The head of every object. Live objects form one list in creation order,
 * the order a restart re-creates them in. */
struct sc_cu_obj {
	uint32_t magic;
	uint32_t kind;            /* enum sc_cu_kind */
	uint64_t real;            /* the proxy's handle (or value) */
	uint64_t seq;
	struct sc_cu_obj *prev, *next;
	struct sc_cu_ctx *ctx;    /* owning context, NULL when context-independent */
};

#define SC_CU_LIMITS 16 /* CUlimit values remembered per context */

struct sc_cu_ctx {
	struct sc_cu_obj o;
	CUdevice dev;
	unsigned flags;
	bool primary;
	int retains;              /* primary contexts: retains not yet released */
	bool limit_set[SC_CU_LIMITS];
	size_t limit[SC_CU_LIMITS];
	bool cache_set, shmem_set;    /* cuCtxSetCacheConfig, cuCtxSetSharedMemConfig */
	int cache_config, shmem_config;
};

struct sc_cu_global {
	char *name;
	CUdeviceptr addr;
	size_t size;
};

struct sc_cu_module {
	struct sc_cu_obj o;
	void *image;              /* the bytes loaded, kept for a restart */
	size_t image_len;
	struct sc_cu_module *library; /* for a module a library gave out */
	struct sc_cu_global *globals; /* every global the application looked up */
	size_t globals_n;
};

struct sc_cu_func {
	struct sc_cu_obj o;
	struct sc_cu_module *module;  /* module or library */
	struct sc_cu_func *kernel;    /* for a function from cuKernelGetFunction */
	char *name;
	uint32_t params_n;
	uint32_t *layout;             /* params_n x (offset, size) */
	uint32_t params_bytes;        /* end of the last parameter */
	uint64_t launch_real;         /* kernels: the function launches use (0: not yet) */
	int attr_set[CU_FUNC_ATTRIBUTE_MAX];
	bool attr_is_set[CU_FUNC_ATTRIBUTE_MAX];
	int cache_config;             /* -1: never set */
	int shmem_config;             /* cuFuncSetSharedMemConfig; -1: never set */
	struct sc_cu_kernel_setting *kernel_settings; /* kernels: per device, in order */
	size_t kernel_settings_n;
};

/* A kernel's attribute (or cache preference) set for one device. */
struct sc_cu_kernel_setting {
	CUdevice dev;
	int attribute;                /* a CUfunction_attribute, or SC_KERNEL_CACHE */
	int value;
};

#define SC_KERNEL_CACHE -1

/* api_module.c */
/**
 * sc_function_forget() - free the function or kernel @f (its module
 * unloaded, its context destroyed).
 */
void sc_function_forget(struct sc_cu_func *f);

/**
 * sc_module_forget() - free @m, its functions and globals (unloaded, or its
 * context destroyed).
 */
void sc_module_forget(struct sc_cu_module *m);

/**
 * sc_cu_function_lookup() - a new function (@kind SC_K_FUNC) or kernel
 * (SC_K_KERNEL) of module or library @m by @name, found in the proxy.
 */
CUresult sc_cu_function_lookup(enum sc_cu_kind kind, struct sc_cu_module *m, const char *name,
			       void **out);

/**
 * sc_cu_pack_args() - @f's parameters, from a launch's @params (pointers to
 * each) or @extra (a buffer), as one buffer of f->params_bytes at @buf (@cap
 * bytes there).
 */
CUresult sc_cu_pack_args(const struct sc_cu_func *f, void **params, void **extra, uint8_t *buf,
			 size_t cap);

/**
 * sc_cu_launch_attribute() - the proxy's copy of launch attribute @attr (the
 * events it names are the proxy's); a graph's device node is refused. Lock held.
 */
CUresult sc_cu_launch_attribute(const CUlaunchAttribute *attr, CUlaunchAttribute *out);

/** sc_cu_function_of() - the function or kernel (launched as a function) of handle @h, or NULL. */
struct sc_cu_func *sc_cu_function_of(const void *h);

/**
 * sc_cu_function_real() - the proxy's function to call @f by (for a kernel,
 * its function in the current context, looked up once); under the lock.
 */
CUresult sc_cu_function_real(struct sc_cu_func *f, uint64_t *real);

/** sc_cu_function_ask() - send @r in the current context, @f's proxy function in a[@slot]. */
CUresult sc_cu_function_ask(struct sc_cu_func *f, struct sc_req *r, int slot);

struct sc_cu_stream {
	struct sc_cu_obj o;
	unsigned flags;
	int priority;
	bool capturing;           /* the program began a stream capture on it (api_capture.c) */
	uint64_t capture_id;      /* that capture's id, as the driver numbers them */
};

struct sc_cu_event {
	struct sc_cu_obj o;
	unsigned flags;
	bool recorded;  /* a restart records it again, so it is complete, as it was */
};

struct sc_cu_array {
	struct sc_cu_obj o;
	CUDA_ARRAY3D_DESCRIPTOR desc;
	size_t bytes;             /* element bytes x width x max(height,1) x max(depth,1) */
};

struct sc_cu_texobj {
	struct sc_cu_obj o;       /* o.real is the value the application holds */
	CUDA_RESOURCE_DESC res;   /* with the library's array handle */
	CUDA_TEXTURE_DESC tex;
	CUDA_RESOURCE_VIEW_DESC view;
	bool has_view;
};

/** sc_obj_new() - a zeroed object of @size bytes, appended to the live list. */
void *sc_obj_new(enum sc_cu_kind kind, size_t size, struct sc_cu_ctx *ctx);

/** sc_obj_free() - unlink and free; NULL is a no-op. */
void sc_obj_free(void *obj);

/** sc_obj_get() - @h as an object of @kind, or NULL when it is not one. */
void *sc_obj_get(const void *h, enum sc_cu_kind kind);

/**
 * sc_obj_first() - the oldest live object (then ->next), for replay and save.
 *
 * A walk where other threads may call into the library at the same time
 * (any walk outside a checkpoint or a restart) holds sc_objs_lock(): another
 * thread's cuCtxDestroy() or cuModuleUnload() frees objects.
 */
struct sc_cu_obj *sc_obj_first(void);

/** sc_objs_lock() - hold the list of objects; it may be taken again by its holder. */
void sc_objs_lock(void);

/** sc_objs_unlock() - the list of objects released once for each sc_objs_lock(). */
void sc_objs_unlock(void);

/** sc_obj_find_value() - the texture or surface object the application knows as @v. */
struct sc_cu_texobj *sc_obj_find_value(enum sc_cu_kind kind, uint64_t v);

/* ---- the current context of each thread (context.c) ---- */

struct sc_cu_ctx *sc_ctx_current(void);
void sc_ctx_set_current(struct sc_cu_ctx *c);
/** sc_ctx_real() - the proxy handle of the current context, 0 when none. */
uint64_t sc_ctx_real(void);
/**
 * sc_cu_ask() - send @r in the current context (none: no context), under the
 * API lock; with @needs_context, refuse as sc_ctx_missing() when there is none.
 */
CUresult sc_cu_ask(struct sc_req *r, bool needs_context);
/** sc_cu_ask_about() - sc_cu_ask() of a request whose a[@slot] is @o's proxy handle. */
CUresult sc_cu_ask_about(const struct sc_cu_obj *o, struct sc_req *r, int slot);
bool sc_ctx_push(struct sc_cu_ctx *c);
struct sc_cu_ctx *sc_ctx_primary(CUdevice dev);
struct sc_cu_ctx *sc_ctx_pop(void);
/** sc_ctx_forget() - drop @c from every stack of this thread (c destroyed). */
void sc_ctx_forget(struct sc_cu_ctx *c);

/* ---- device memory (arena.c) ---- */

/*
 * The program's physical allocation (cuMemCreate): the handle it holds is
 * this object's address. The library maps it for itself at @home, a block
 * of the arena, so that it is saved and restored as any device memory; the
 * program's own mappings of it are api_vmm.c's.
 */
struct sc_cu_memhandle {
	struct sc_cu_obj o;
	CUmemAllocationProp prop;
	size_t size;
	CUdeviceptr home;
	unsigned refs;            /* cuMemCreate and cuMemRetainAllocationHandle, less cuMemRelease */
	unsigned maps;            /* the program's mappings of it */
};

/* One piece of physical device memory mapped at an address the arena chose. */
struct sc_cu_block {
	CUdeviceptr addr;
	size_t size;
	uint64_t handle;          /* the proxy's allocation handle */
	CUdevice dev;
	struct sc_cu_ctx *ctx;
	uint32_t slab_class;      /* 0: one allocation; else the sub-allocation size */
	size_t asked;             /* one allocation: the bytes asked for (size is rounded up) */
	uint64_t *used;           /* slabs: bitmap of sub-allocations in use */
	uint32_t used_n;          /* slabs: sub-allocations in use */
	struct sc_cu_memhandle *vmm; /* the program's cuMemCreate whose home this is, or NULL */
};

static inline bool sc_slab_slot_used(const struct sc_cu_block *b, uint64_t i)
{
	return b->used[i / 64] & 1ull << (i % 64);
}

CUresult sc_arena_alloc(struct sc_cu_ctx *c, size_t bytes, CUdeviceptr *out);
/** sc_arena_alloc_own() - as sc_arena_alloc(), in a block of its own however small (managed memory). */
CUresult sc_arena_alloc_own(struct sc_cu_ctx *c, size_t bytes, CUdeviceptr *out);
CUresult sc_arena_free(CUdeviceptr p);
/** sc_arena_find() - the block holding @p (NULL: not arena memory); @base/@size of the allocation. */
struct sc_cu_block *sc_arena_find(CUdeviceptr p, CUdeviceptr *base, size_t *size);
/* The device memory of one device, with a context of it. */
struct sc_arena_usage {
	CUdevice dev;
	uint64_t ctx;   /* the proxy's context of one of its blocks */
	uint64_t bytes;
};

/**
 * sc_arena_usage() - the device memory of each device that has some, in @u
 * (@max devices at most); their number. Safe without the API lock held.
 */
size_t sc_arena_usage(struct sc_arena_usage *u, size_t max);
/** sc_arena_blocks() - every live block, for checkpoint and replay. */
struct sc_cu_block *sc_arena_blocks(size_t *n);

struct sc_cu_reservation {
	CUdevice dev;
	CUdeviceptr base;
	size_t size;
};
struct sc_cu_reservation *sc_arena_reservations(size_t *n);
/**
 * sc_arena_forget_device() - at a restart, for device @dev, which no context
 * of the process holds any more: when none of its memory is allocated (slabs
 * empty), forget its arena, reservation included, so that its next context
 * reserves it again. Return: false where memory of it is still allocated.
 */
bool sc_arena_forget_device(CUdevice dev);
/**
 * sc_arena_release_context() - before @c is destroyed: unmap the memory it
 * allocated, which the driver frees with it (the arena's physical blocks are
 * not the context's in the driver, so they would outlive it).
 */
void sc_arena_release_context(struct sc_cu_ctx *c);

/**
 * sc_arena_take_va() - @size bytes of the arena's addresses on @c's device,
 * aligned to @align (0: the granularity), with no memory behind them: the
 * program's cuMemAddressReserve, and the homes of its cuMemCreate. @size must
 * be a multiple of the granularity.
 */
CUresult sc_arena_take_va(struct sc_cu_ctx *c, size_t size, size_t align, CUdeviceptr *out);
/* api_mempool.c */
/**
 * sc_mempool_synchronised() - the work of @stream in @ctx is done (of every
 * stream of @ctx with @whole_context; of every context when @ctx is NULL):
 * the memory cuMemFreeAsync freed on it goes back to the arena.
 */
void sc_mempool_synchronised(CUstream stream, const struct sc_cu_ctx *ctx, bool whole_context);
/**
 * sc_mempool_stream_ending() - before @stream (the proxy's @real, in @ctx)
 * is destroyed: wait for it if it holds kept frees, and free them.
 */
CUresult sc_mempool_stream_ending(CUstream stream, uint64_t ctx, uint64_t real);
/** sc_mempool_freed() - @p, from a pool, was freed by cuMemFree: no longer the pool's. */
void sc_mempool_freed(CUdeviceptr p);
/** sc_mempool_forget_context() - before @c is destroyed: its stream-ordered allocations. */
void sc_mempool_forget_context(const struct sc_cu_ctx *c);

/* api_vmm.c */
/**
 * sc_devptr_find() - the block behind device pointer @p (NULL: not device
 * memory): a cuMemAlloc-like allocation of the arena, or the home of the
 * program's own mapping that holds @p; @base and @size of that allocation or
 * mapping.
 */
struct sc_cu_block *sc_devptr_find(CUdeviceptr p, CUdeviceptr *base, size_t *size);
/** sc_vmm_forget_context() - before @c is destroyed: the allocations made in it, and their mappings. */
void sc_vmm_forget_context(struct sc_cu_ctx *c);
/** sc_vmm_replay() - at a restart, once the arena is back: the program's mappings and access. */
CUresult sc_vmm_replay(void);

/**
 * sc_arena_peer_access() - give every block of device @dev read and write
 * access for its own device and the devices of sc_peer_mask(@dev), and none
 * for device @revoked (-1: no device), whose peer access went.
 */
CUresult sc_arena_peer_access(CUdevice dev, int revoked);

/* api_peer.c */
/** sc_peer_mask() - bit d: a context of device d has peer access to a context of @dev. */
uint64_t sc_peer_mask(CUdevice dev);
/** sc_peer_forget_context() - @c is destroyed: the peer access from and to it goes. */
void sc_peer_forget_context(const struct sc_cu_ctx *c);
/**
 * sc_cu_copy_peer() - send a copy of @n bytes from @src (of the proxy's
 * context @src_ctx) to @dst (of @dst_ctx) on the proxy's @stream, waited for
 * with @sync. Lock held.
 */
CUresult sc_cu_copy_peer(CUdeviceptr dst, uint64_t dst_ctx, CUdeviceptr src, uint64_t src_ctx,
			 size_t n, uint64_t stream, bool sync);
/** sc_peer_replay() - at a restart, once the contexts are back: their peer access again. */
CUresult sc_peer_replay(void);

/** sc_arena_give_va() - the addresses sc_arena_take_va() gave, back to device @dev's arena. */
void sc_arena_give_va(CUdevice dev, CUdeviceptr va, size_t size);
/** sc_arena_granularity() - the allocation granularity of @c's device (0: none yet). */
size_t sc_arena_granularity(const struct sc_cu_ctx *c);
/**
 * sc_arena_map_home() - the physical memory of the program's allocation @h
 * (@h->prop, @h->size bytes), made and mapped at @h->home in the proxy: a
 * block of the arena, saved and restored as any other.
 */
CUresult sc_arena_map_home(struct sc_cu_ctx *c, struct sc_cu_memhandle *h);
/** sc_arena_unmap_home() - the block sc_arena_map_home() made, unmapped and freed. */
CUresult sc_arena_unmap_home(struct sc_cu_memhandle *h);

/* ---- pinned host memory in the channel (host_heap.c) ---- */

CUresult sc_host_alloc(size_t bytes, void **out);
CUresult sc_host_free(void *p);
/** sc_host_size() - size of the host allocation that starts at @p, 0 if none. */
size_t sc_host_size(const void *p);
/** sc_host_extent() - the end of the last live allocation (bytes from the heap start). */
uint64_t sc_host_extent(void);
/** sc_host_extent_without() - the same, leaving the allocation at @p out. */
uint64_t sc_host_extent_without(const void *p);
/**
 * sc_host_alloc_last() - as sc_host_alloc(), after the last live allocation,
 * not in a gap between them; *@newly_pinned: bytes it pinned that were not.
 */
CUresult sc_host_alloc_last(size_t bytes, void **out, uint64_t *newly_pinned);
/** sc_host_pin_needed() - bytes sc_host_alloc_last(@bytes) would pin that are not yet. */
uint64_t sc_host_pin_needed(size_t bytes);
/** sc_host_repin() - pin the heap that live allocations use in a new proxy (restart). */
CUresult sc_host_repin(uint64_t ctx);

/** sc_cu_memcpy() - memcpy on several threads when it is large (staging). */
void sc_cu_memcpy(void *dst, const void *src, size_t n);

/** sc_obj_ctx_real() - the proxy's context @o was made in, else the current one. */
uint64_t sc_obj_ctx_real(const struct sc_cu_obj *o);

/** sc_stream_is_default() - NULL, CU_STREAM_LEGACY or CU_STREAM_PER_THREAD. */
bool sc_stream_is_default(CUstream h);

/**
 * sc_stream_target() - the proxy's stream for @h (default streams as they are)
 * and the context a request on it runs in (API lock held).
 */
CUresult sc_stream_target(CUstream h, uint64_t *real, uint64_t *ctx);

/** sc_stream_real() - sc_stream_target() for callers that need the stream only. */
uint64_t sc_stream_real(CUstream s, CUresult *res);

/** sc_image_length() - bytes of a cubin, fatbin, PTX or text module image at @p. */
size_t sc_image_length(const void *p);

/* ---- checkpoint requests from signals (trigger) ---- */

/** sc_cu_sync_point() - called by every synchronising call: a pending SIGUSR1
 * checkpoint is taken here. */
void sc_cu_sync_point(void);

/* ---- checkpoint and restart (gpu_checkpoint.c, replay.c) ---- */

void sc_cuda_hooks_install(void);
/** sc_cuda_checkpoint_done() - end a checkpoint's hold on the GPU (also after a restart). */
void sc_cuda_checkpoint_done(int err);
/** sc_cuda_restored() - bring the GPU state back in a restored process; 0 or -errno/-SC_E*. */
int sc_cuda_restored(const char *image);
/** sc_cu_restart_channel() - a new channel at the old address, and a new proxy. */
CUresult sc_cu_restart_channel(void);
/** sc_module_send() - load an image in the proxy; its handle in *real. */
CUresult sc_module_send(const void *image, size_t len, unsigned kind, uint64_t ctx,
			uint64_t *real);

/* ---- entry and exit of every API call ---- */

/*
 * Every entry point holds the API lock for reading while it talks to the
 * proxy; a checkpoint holds it for writing, so none is in flight when the
 * threads stop, and calls made meanwhile wait until the GPU state is saved.
 */
void sc_cu_lock_read(void);
void sc_cu_unlock_read(void);
void sc_cu_lock_write(void);
void sc_cu_unlock_write(void);
/**
 * sc_cu_lock_forget() - in a child made by fork(), which has one thread: no
 * call is in flight, whatever the parent's threads held as it forked.
 */
void sc_cu_lock_forget(void);

/** sc_cu_initialised() - has cuInit succeeded? */
bool sc_cu_initialised(void);

/**
 * sc_ctx_missing() - what a call that needs a current context answers without
 * one: CUDA_ERROR_INVALID_CONTEXT, or before cuInit CUDA_ERROR_NOT_INITIALIZED.
 */
CUresult sc_ctx_missing(void);

/* The function of the program's last kernel launch (may be unloaded since). */
extern const struct sc_cu_func *sc_last_launched;

/**
 * sc_resumable_raise() - ask running resumable kernels (selfckpt_kernel.h)
 * to stop at their next item; sc_resumable_lower() lets them run again.
 * Neither makes a CUDA call.
 */
void sc_resumable_raise(void);
void sc_resumable_lower(void);

/** sc_cu_enter() - take the lock; CUDA_SUCCESS, or why no call can be made. */
CUresult sc_cu_enter(void);
void sc_cu_leave(void);

/** sc_cu_unsupported() - log once that @name is not supported; CUDA_ERROR_NOT_SUPPORTED. */
CUresult sc_cu_unsupported(const char *name);

/** sc_cu_result_name() - "CUDA_ERROR_INVALID_VALUE", ... */
const char *sc_cu_result_name(CUresult r);

#endif /* SC_CUDA_INTERNAL_H */
