/* SPDX-License-Identifier: MIT */
/*
 * softcuda_internal.h - state shared by the files of the software CUDA device.
 *
 * Every object the device hands out (context, module, stream, event, array,
 * allocation, ...) starts with a struct sd_obj and sits on the list of its
 * kind, so a handle is valid exactly when it is found there. One recursive
 * mutex guards all of it: sd_enter() takes it and sd_leave() drops it. It is
 * recursive because kernels run under it and call back into
 * softcuda_tex2d_read() and softcuda_surf2d_write().
 */
#ifndef SOFTCUDA_INTERNAL_H
#define SOFTCUDA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/*
 * The library is built with -fvisibility=hidden: what cuda.h and softcuda.h
 * declare is exported, nothing else, so cuGetProcAddress() cannot find an
 * internal function by accident.
 */
#pragma GCC visibility push(default)
#include <cuda.h>
#include "softcuda.h"
/* cuda.h maps these two to their _v2 forms; the real driver exports both. */
#undef cuDeviceGetUuid
#undef cuEventElapsedTime
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent start, CUevent end);
#pragma GCC visibility pop

#define SD_MAX_DEVICES 8
#define SD_DRIVER_VERSION 13000
#define SD_GRANULARITY (2UL << 20)	/* VMM granularity, minimum and recommended */
#define SD_ALLOC_ALIGN 256UL		/* cuMemAlloc and module globals */
#define SD_PITCH_ALIGN 512UL		/* cuMemAllocPitch */
#define SD_TEXTURE_ALIGN 512UL		/* CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT */
#define SD_TEXTURE_PITCH_ALIGN 32UL	/* CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT */
#define SD_SHARED_PER_BLOCK 49152	/* default dynamic shared memory limit */
#define SD_SHARED_PER_BLOCK_OPTIN 232448
#define SD_GLOBAL_BASE 0x6e0000000000UL
#define SD_GLOBAL_REGION (1UL << 30)	/* address space for module globals */
#define SD_NAME_MAX 128			/* kernel and global names, with the NUL */
#define SD_MAX_PARAMS 256
#define SD_PARAM_BYTES_MAX 32764	/* the kernel parameter limit since CUDA 12.1 */
#define SD_PRIORITY_LEAST 0
#define SD_PRIORITY_GREATEST (-5)

#define SD_ROUND_UP(x, a) (((x) + (a) - 1) / (a) * (a))

enum sd_kind {
	SD_CTX,
	SD_DEAD_CTX,	/* destroyed contexts, kept so that stale handles never alias */
	SD_MODULE,
	SD_LIBRARY,
	SD_STREAM,
	SD_EVENT,
	SD_ARRAY,
	SD_ALLOC,	/* cuMemAlloc, cuMemAllocPitch, cuMemAllocHost, cuMemHostAlloc */
	SD_HOSTREG,	/* cuMemHostRegister */
	SD_PHYS,	/* cuMemCreate */
	SD_RESERVE,	/* cuMemAddressReserve */
	SD_MAPPING,	/* cuMemMap */
	SD_TEX,
	SD_SURF,
	SD_GRAPH,
	SD_GRAPH_EXEC,
	SD_KIND_N
};

struct sd_ctx;

struct sd_obj {
	struct sd_obj *next;
	enum sd_kind kind;
	struct sd_ctx *ctx;	/* owner: freed with it; NULL for device-wide objects */
};

#define sd_container(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

struct sd_ctx {
	struct sd_obj obj;
	int device;
	unsigned flags;
	int primary;
	int refcount;		/* primary contexts: retains; active while > 0 */
	size_t limits[CU_LIMIT_MAX];
	unsigned long long id;	/* cuCtxGetId: from 1, never reused in the process */
	CUfunc_cache cache;	/* cuCtxSetCacheConfig */
	CUsharedconfig shmem;	/* cuCtxSetSharedMemConfig */
};

struct sd_device {
	size_t used;		/* bytes of device memory in use */
	struct sd_ctx primary;
};

/* SOFTCUDA_FAIL and SOFTCUDA_CRASH: the nth call of a function fails or aborts. */
struct sd_rule {
	char name[64];
	unsigned long nth;
	unsigned long calls;
	int crash;
};

#define SD_MAX_RULES 16

struct sd_state {
	int initialised;
	int verbose;
	int n_devices;
	int visible[SD_MAX_DEVICES]; /* device i is device visible[i] of SOFTCUDA_DEVICES */
	int cc_major, cc_minor;
	size_t total_mem;
	uintptr_t global_base;
	size_t global_shift;
	size_t global_used;	/* bump offset into the global region */
	int global_mapped;
	unsigned n_rules;
	struct sd_rule rules[SD_MAX_RULES];
	unsigned long long next_tex, next_surf, next_buffer_id;
	struct sd_device devices[SD_MAX_DEVICES];
	struct sd_obj *objs[SD_KIND_N];
};

extern struct sd_state sd;

/* softcuda.c: entry, exit, objects, configuration. */
CUresult sd_enter(const char *func);
CUresult sd_leave(CUresult rc);

/*
 * softcuda_procckpt.c, in the stand-in for a driver the program loads itself
 * only (weak: absent elsewhere): sd_enter() asks it first; it aborts a call
 * made while the driver's process checkpoint holds the GPU state.
 */
__attribute__((weak)) void sd_procckpt_enter(const char *func);
void sd_lock(void);
void sd_unlock(void);
void sd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sd_obj_add(struct sd_obj *obj, enum sd_kind kind, struct sd_ctx *ctx);
void sd_obj_del(struct sd_obj *obj);
struct sd_obj *sd_obj_find(enum sd_kind kind, const void *handle);
CUresult sd_device_check(CUdevice dev);
CUresult sd_mem_charge(int device, size_t bytes);
void sd_mem_uncharge(int device, size_t bytes);

/* softcuda_device.c: attribute @attr of device @dev (checked), without the lock */
int sd_device_attr(CUdevice_attribute attr, CUdevice dev);
/* softcuda_device.c: @dev may reach @peer's memory (both checked), as cuDeviceCanAccessPeer says */
int sd_device_can_access_peer(CUdevice dev, CUdevice peer);

/* softcuda_ctx.c */
CUresult sd_ctx_current(struct sd_ctx **ctx);
/* @handle if it is a usable context, or the current context when NULL */
CUresult sd_ctx_or_current(CUcontext handle, struct sd_ctx **ctx);
void sd_ctx_free_objects(struct sd_ctx *ctx);

/* softcuda_mem.c: what the device knows about an address. */
struct sd_region {
	uintptr_t base;
	size_t size;
	CUmemorytype type;	/* CU_MEMORYTYPE_DEVICE or CU_MEMORYTYPE_HOST */
	int prot;		/* PROT_READ, PROT_WRITE */
	int device;
	struct sd_ctx *ctx;
	unsigned long long id;
	uintptr_t range_base;	/* the reservation of a VMM mapping, else base */
	size_t range_size;
	int vmm;		/* a VMM mapping: its neighbours in the reservation continue it */
};

int sd_region_find(uintptr_t addr, struct sd_region *region);
CUresult sd_range_check(uintptr_t addr, size_t bytes, int prot);
void sd_alloc_free(struct sd_obj *obj);
void sd_hostreg_free(struct sd_obj *obj);

/* softcuda_vmm.c */
int sd_mapping_region(uintptr_t addr, struct sd_region *region);
int sd_reserve_region(uintptr_t addr, struct sd_region *region);

/* softcuda_module.c: modules and libraries; softcuda_launch.c: their functions. */
struct sd_module;

struct sd_func {
	struct sd_module *mod;
	char name[SD_NAME_MAX];
	softcuda_kernel_fn fn;
	unsigned n_params;
	unsigned param_size[SD_MAX_PARAMS];
	unsigned param_offset[SD_MAX_PARAMS];
	size_t param_bytes;	/* end of the last parameter */
	int attrs[CU_FUNC_ATTRIBUTE_MAX];
	CUfunc_cache cache;
	CUsharedconfig shmem;
};

/* A library's CUkernel: a handle of its own that leads to the function. */
struct sd_kernel {
	struct sd_func *func;
};

struct sd_global {
	char name[SD_NAME_MAX];
	uintptr_t addr;
	size_t size;
	unsigned long long id;
	int managed;		/* a __managed__ variable ("// softcuda managed") */
};

struct sd_module {
	struct sd_obj obj;	/* ctx NULL: the module of a library */
	int device;
	int arch;		/* sm number of the image's .target */
	void *dl;		/* the kernel library */
	struct sd_func *funcs;
	unsigned n_funcs;
	struct sd_kernel *kernels;	/* one per function */
	struct sd_global *globals;
	unsigned n_globals;
};

int sd_global_region(uintptr_t addr, struct sd_region *region);
/* is @addr in a __managed__ module variable? */
int sd_global_managed(uintptr_t addr);
void sd_module_free(struct sd_obj *obj);
struct sd_func *sd_func_find(CUfunction handle);
struct sd_func *sd_kernel_find(CUkernel handle);
/* softcuda_launch.c: a CUfunction, or a CUkernel passed where a CUfunction goes, as CUDA allows */
struct sd_func *sd_func_or_kernel(CUfunction handle);
/*
 * softcuda_launch.c: the function a launch of @handle in the current context
 * runs, and in @args (SD_MAX_PARAMS) a pointer to each of its parameters in
 * @params or in @extra's buffer; checked as cuLaunchKernel checks them, but
 * for the stream.
 */
CUresult sd_launch_args(CUfunction handle, const struct softcuda_launch *l, void **params,
			void **extra, struct sd_func **f, void **args);
/* softcuda_launch.c: attribute @a of a launch of @handle, checked as cuLaunchKernelEx does */
CUresult sd_launch_attr_check(CUfunction handle, const struct softcuda_launch *l,
			      const CUlaunchAttribute *a);

/*
 * softcuda_copy.c: a 3D copy, a 2D memset, checked as the asynchronous calls
 * check them (the caller checks the context); done only if @run.
 */
CUresult sd_memcpy3d(const CUDA_MEMCPY3D *c, int run);
CUresult sd_memset2d(const CUDA_MEMSET_NODE_PARAMS *p, int run);

/*
 * softcuda_stream.c: a stream whose work is about to run (refused where it
 * would be captured or depend on a capture), its flags and priority (a default
 * stream's: 0 and 0).
 */
CUresult sd_stream_check(CUstream stream);
void sd_stream_info(CUstream stream, unsigned *flags, int *priority);
void sd_stream_free(struct sd_obj *obj);
void sd_event_free(struct sd_obj *obj);
/* softcuda_stream.c: cuEventRecordWithFlags, for callers holding the device lock */
CUresult sd_event_record(CUevent event, CUstream stream, unsigned flags);
/* softcuda_occupancy.c: blocks of @f the whole device @dev holds at once */
int sd_co_resident_blocks(const struct sd_func *f, CUdevice dev, int block_size, size_t dyn);

/* softcuda_array.c */
struct sd_array {
	struct sd_obj obj;
	CUDA_ARRAY3D_DESCRIPTOR desc;
	size_t elem;		/* bytes per element: format size times channels */
	size_t width, height, depth;	/* each at least 1 */
	size_t bytes;
	int device;
	unsigned char *data;
};

struct sd_array *sd_array_find(CUarray handle);
size_t sd_format_bytes(CUarray_format format);
void sd_array_free(struct sd_obj *obj);
void sd_tex_free(struct sd_obj *obj);
void sd_surf_free(struct sd_obj *obj);

/* softcuda_graph.c: graphs and executable graphs, freed with their context. */
void sd_graph_free(struct sd_obj *obj);
void sd_exec_free(struct sd_obj *obj);

/*
 * softcuda_graph.c: what a stream capture builds its graph with. A node made
 * is its maker's to append, or to free.
 */
struct sd_graph;
struct sd_node;
struct sd_capture;
/* @v with room for @want elements of @elem bytes (*@size updated), or NULL, @v untouched */
void *sd_grow(void *v, size_t *size, size_t want, size_t elem);
/* a new graph of @ctx, with no nodes */
struct sd_graph *sd_graph_new(struct sd_ctx *ctx);
/* sd_graph_free() of @g */
void sd_graph_destroy(struct sd_graph *g);
/* @cap builds @g (NULL: none): until then @g cannot go, lose nodes, be instantiated or update */
void sd_graph_set_capture(struct sd_graph *g, struct sd_capture *cap);
/* @node joins @g after @deps (@n nodes of @g), an edge from each; on failure it is not taken */
CUresult sd_graph_append(struct sd_graph *g, struct sd_node *node, const CUgraphNode *deps,
			 size_t n);
/* is @node one of @g's? */
int sd_graph_holds(const struct sd_graph *g, CUgraphNode node);
/* each of @from is one of @to or a node one of them depends on, however far back */
int sd_graph_leads_into(struct sd_graph *g, const CUgraphNode *from, size_t n_from,
			const CUgraphNode *to, size_t n_to);
/* a captured launch's kernel node: @p, @priority and the attributes of @attrs nodes keep */
CUresult sd_node_launch(struct sd_node **out, const CUDA_KERNEL_NODE_PARAMS *p, int priority,
			const CUlaunchAttribute *attrs, unsigned n_attrs);
/* a memcpy node of @c in context @handle (NULL: the current), checked as its launch will be */
CUresult sd_node_memcpy(struct sd_node **out, const CUDA_MEMCPY3D *c, CUcontext handle);
/* a memset node of @p in context @handle (NULL: the current), checked as its launch will be */
CUresult sd_node_memset(struct sd_node **out, const CUDA_MEMSET_NODE_PARAMS *p,
			CUcontext handle);
/* an event record or wait node (@type) of @event */
CUresult sd_node_event(struct sd_node **out, CUgraphNodeType type, CUevent event);
/* a node no graph took */
void sd_node_free(struct sd_node *node);

/*
 * softcuda_capture.c: stream capture. Work posted to a stream for which
 * sd_capturing() holds goes to the sd_capture_*() call of its kind instead
 * of running; they fail with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED once the
 * capture is. The others answer whether a call may go on: CUDA_SUCCESS, or
 * the error a driver returns, the capture invalidated where CUDA does.
 */
int sd_capturing(CUstream stream);
CUresult sd_capture_kernel(CUfunction handle, const struct softcuda_launch *l, void **params,
			   void **extra, const CUlaunchAttribute *attrs, unsigned n_attrs);
CUresult sd_capture_memcpy(CUstream stream, const CUDA_MEMCPY3D *c);
CUresult sd_capture_memset(CUstream stream, const CUDA_MEMSET_NODE_PARAMS *p);
CUresult sd_capture_event_record(CUstream stream, CUevent event, unsigned flags);
/* a wait of @stream on @event (@recorded: outside a capture); it may join a capture */
CUresult sd_capture_event_wait(CUstream stream, CUevent event, unsigned flags, int recorded);
/* work of @stream that cannot be captured runs now */
CUresult sd_capture_runs(CUstream stream);
/* a synchronous call on the legacy stream */
CUresult sd_capture_unsafe(void);
/* cuStreamSynchronize, cuStreamQuery */
CUresult sd_capture_sync_stream(CUstream stream);
/* cuCtxSynchronize */
CUresult sd_capture_sync_ctx(struct sd_ctx *ctx);
/* cuEventQuery, cuEventSynchronize, cuEventElapsedTime */
CUresult sd_capture_event_use(CUevent event);
CUresult sd_capture_stream_destroy(CUstream stream);
void sd_capture_stream_gone(CUstream stream);
/* @event recorded outside a capture, or destroyed */
void sd_capture_event_drop(CUevent event);
/* the graph @cap builds was freed with its context: the capture is invalidated */
void sd_capture_graph_gone(struct sd_capture *cap);

#endif /* SOFTCUDA_INTERNAL_H */
