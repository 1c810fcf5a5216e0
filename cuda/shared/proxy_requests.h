/* SPDX-License-Identifier: MIT */
/*
 * proxy_requests.h - the requests the library sends its GPU proxy.
 *
 * Every handle in a request is the proxy's own (the driver's); the library
 * translates its stable handles before sending. Host pointers in a request
 * point into the channel (staging or heap), which the proxy maps at the same
 * address. aN is slot->a[N]; "data" is slot->data[0..len).
 * Requests marked async are sent with SC_MSG_ASYNC unless the caller needs
 * the reply.
 */
#ifndef SC_PROXY_REQUESTS_H
#define SC_PROXY_REQUESTS_H

enum sc_op {
	SC_OP_NOP = 0,
	/* driver and devices */
	SC_OP_DRIVER_VERSION,   /* out a0 */
	SC_OP_DEVICE_COUNT,     /* out a0 */
	SC_OP_DEVICE_GET,       /* in a0 ordinal; out a0 CUdevice */
	SC_OP_DEVICE_NAME,      /* in a0 dev; out data: NUL-terminated name */
	SC_OP_DEVICE_ATTR,      /* in a0 attribute, a1 dev; out a0 value */
	SC_OP_DEVICE_TOTAL_MEM, /* in a0 dev; out a0 bytes */
	SC_OP_DEVICE_UUID,      /* in a0 dev; out data: 16 bytes */
	SC_OP_DEVICE_PCI_BUS_ID, /* in a0 dev; out data: NUL-terminated bus id */
	SC_OP_DEVICE_BY_PCI_BUS_ID, /* data NUL-terminated bus id; out a0 dev */
	SC_OP_DEVICE_TEX1D_WIDTH, /* in a0 CUarray_format, a1 channels, a2 dev; out a0 width */
	SC_OP_DEVICE_AFFINITY,  /* in a0 CUexecAffinityType, a1 dev; out a0 supported */
	SC_OP_FLUSH_RDMA,       /* in a0 target, a1 scope */
	SC_OP_DEVICE_CAN_PEER,  /* in a0 dev, a1 peer; out a0 can access */
	SC_OP_DEVICE_P2P_ATTR,  /* in a0 CUdevice_P2PAttribute, a1 src, a2 dst; out a0 value */
	/* contexts (the slot's ctx is made current first where one is given) */
	SC_OP_PCTX_RETAIN,      /* in a0 dev; out a0 ctx */
	SC_OP_PCTX_RELEASE,     /* in a0 dev */
	SC_OP_PCTX_RESET,       /* in a0 dev */
	SC_OP_PCTX_SET_FLAGS,   /* in a0 dev, a1 flags */
	SC_OP_PCTX_GET_STATE,   /* in a0 dev; out a0 flags, a1 active */
	SC_OP_CTX_CREATE,       /* in a0 flags, a1 dev; out a0 ctx */
	SC_OP_CTX_DESTROY,      /* in a0 ctx */
	SC_OP_CTX_SYNC,
	SC_OP_CTX_SET_LIMIT,    /* in a0 limit, a1 value */
	SC_OP_CTX_GET_LIMIT,    /* in a0 limit; out a0 value */
	SC_OP_CTX_PRIORITIES,   /* out a0 least, a1 greatest (as int) */
	SC_OP_CTX_SET_FLAGS,    /* in a0 flags */
	SC_OP_CTX_SET_CACHE,    /* in a0 CUfunc_cache */
	SC_OP_CTX_GET_CACHE,    /* out a0 CUfunc_cache */
	SC_OP_CTX_SET_SHMEM,    /* in a0 CUsharedconfig */
	SC_OP_CTX_GET_SHMEM,    /* out a0 CUsharedconfig */
	SC_OP_CTX_RESET_L2,     /* the persisting lines of the L2 cache */
	SC_OP_CTX_PEER_ENABLE,  /* in a0 peer context, a1 flags: from the slot's context */
	SC_OP_CTX_PEER_DISABLE, /* in a0 peer context */
	SC_OP_MEM_GET_INFO,     /* out a0 free, a1 total */
	/* code */
	SC_OP_MODULE_LOAD,      /* in a0 image address (channel), a1 length, a2 SC_IMG_*;
				 * out a0 module or library */
	SC_OP_MODULE_UNLOAD,    /* in a0 handle, a1 SC_IMG_* */
	SC_OP_MODULE_FUNCTION,  /* in a0 module, data name; out a0 function, a1 params n,
				 * data n x (u32 offset, u32 size) */
	SC_OP_MODULE_GLOBAL,    /* in a0 module or library, a1 SC_IMG_*, data name;
				 * out a0 address, a1 size, a2 1 for a __managed__ variable */
	SC_OP_LIBRARY_KERNEL,   /* in a0 library, data name; out as MODULE_FUNCTION (a0 kernel) */
	SC_OP_LIBRARY_MODULE,   /* in a0 library; out a0 module */
	SC_OP_KERNEL_FUNCTION,  /* in a0 kernel; out a0 function (in the current context) */
	SC_OP_FUNC_GET_ATTR,    /* in a0 attribute, a1 function; out a0 value */
	SC_OP_FUNC_SET_ATTR,    /* in a0 attribute, a1 function, a2 value */
	SC_OP_FUNC_SET_CACHE,   /* in a0 function, a1 CUfunc_cache */
	SC_OP_FUNC_SET_SHMEM,   /* in a0 function, a1 CUsharedconfig */
	SC_OP_FUNC_IS_LOADED,   /* in a0 function; out a0 CUfunctionLoadingState */
	SC_OP_FUNC_LOAD,        /* in a0 function */
	SC_OP_LOADING_MODE,     /* out a0 CUmoduleLoadingMode */
	SC_OP_KERNEL_GET_ATTR,  /* in a0 attribute, a1 kernel, a2 dev; out a0 value */
	SC_OP_KERNEL_SET_ATTR,  /* in a0 attribute, a1 kernel, a2 dev, a3 value */
	SC_OP_KERNEL_SET_CACHE, /* in a0 kernel, a1 CUfunc_cache, a2 dev */
	SC_OP_FUNCTION_COUNT,   /* in a0 module or library, a1 SC_IMG_*; out a0 functions */
	SC_OP_FUNCTION_NAMES,   /* in a0 module or library, a1 SC_IMG_*, a2 first index;
				 * out a0 names, data the names from a2 on, each
				 * NUL-terminated, as many as fit */
	SC_OP_LAUNCH,           /* async; in a0 function, a1-a3 grid, a4-a6 block, a7 shared
				 * bytes, a8 stream, a9 params n; data n x (u32 offset,
				 * u32 size), then the parameter buffer */
	SC_OP_LAUNCH_EX,        /* async; in a0-a9 as LAUNCH, a10 attributes n; data n x
				 * CUlaunchAttribute (with the proxy's events), then as LAUNCH */
	SC_OP_OCC_BLOCKS,       /* in a0 function, a1 block size, a2 dynamic shared bytes,
				 * a3 flags; out a0 blocks per multiprocessor */
	SC_OP_OCC_BLOCK_SIZE,   /* in a0 function, a1 dynamic shared bytes, a2 block size
				 * limit, a3 flags, a4 n; data n x u64: the program's dynamic
				 * shared bytes for block sizes 1..n (n 0: a1 for every size);
				 * out a0 minimum grid size, a1 block size */
	SC_OP_OCC_DYN_SMEM,     /* in a0 function, a1 blocks, a2 block size; out a0 bytes */
	SC_OP_OCC_CLUSTERS,     /* in a0-a8 as LAUNCH, a9 SC_OCC_*, a10 attributes n; data n x
				 * CUlaunchAttribute; out a0 clusters or cluster size */
	/* device memory: the library's arena over VMM reservations */
	SC_OP_VMM_GRANULARITY,  /* in a0 dev; out a0 bytes */
	SC_OP_VMM_RESERVE,      /* in a0 size, a1 wanted address; out a0 address */
	SC_OP_VMM_MAP,          /* in a0 address, a1 size, a2 dev, a3 bitmask of the other
				 * devices that may read and write it too (peer access), data
				 * the CUmemAllocationProp of the program's cuMemCreate (none:
				 * plain device memory); out a0 allocation handle */
	SC_OP_VMM_UNMAP,        /* in a0 address, a1 size, a2 allocation handle */
	/* the program's own mappings of its allocations (api_vmm.c) */
	SC_OP_MEM_GRANULARITY,  /* in a0 option, data CUmemAllocationProp; out a0 bytes */
	SC_OP_MEM_MAP,          /* in a0 address, a1 size, a2 offset, a3 allocation handle */
	SC_OP_MEM_UNMAP,        /* in a0 address, a1 size */
	SC_OP_MEM_SET_ACCESS,   /* in a0 address, a1 size, a2 n; data n x CUmemAccessDesc */
	SC_OP_MEM_GET_ACCESS,   /* in a0 address, data CUmemLocation; out a0 flags */
	SC_OP_HEAP_REGISTER,    /* in a0 address, a1 length: pin a piece of the channel */
	SC_OP_HOST_DEVPTR,      /* in a0 host address (channel); out a0 device address */
	/* copies and sets (stream in a4 / a0 as noted); with SC_MSG_SYNC_STREAM the
	 * proxy waits for the stream before it replies or frees the slot */
	SC_OP_COPY,             /* in a0 dst, a1 src, a2 bytes, a3 SC_COPY_*, a4 stream */
	SC_OP_COPY_2D,          /* in a0 stream; data CUDA_MEMCPY2D */
	SC_OP_COPY_3D,          /* in a0 stream; data CUDA_MEMCPY3D */
	SC_OP_COPY_PEER,        /* in a0 dst, a1 dst context, a2 src, a3 src context, a4 bytes,
				 * a5 stream */
	SC_OP_MEMSET,           /* in a0 dst, a1 value, a2 element bytes, a3 width (elements),
				 * a4 stream, a5 pitch, a6 height (0: one dimension) */
	/* arrays, textures, surfaces */
	SC_OP_ARRAY_CREATE,     /* data CUDA_ARRAY3D_DESCRIPTOR; out a0 array */
	SC_OP_ARRAY_DESTROY,    /* in a0 array */
	SC_OP_TEX_CREATE,       /* data CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC, a0 has view,
				 * CUDA_RESOURCE_VIEW_DESC; out a0 object */
	SC_OP_TEX_DESTROY,      /* in a0 object */
	SC_OP_SURF_CREATE,      /* data CUDA_RESOURCE_DESC; out a0 object */
	SC_OP_SURF_DESTROY,     /* in a0 object */
	/* streams and events */
	SC_OP_STREAM_CREATE,    /* in a0 flags, a1 priority; out a0 stream */
	SC_OP_STREAM_DESTROY,   /* in a0 stream */
	SC_OP_STREAM_SYNC,      /* in a0 stream */
	SC_OP_STREAM_QUERY,     /* in a0 stream */
	SC_OP_STREAM_WAIT,      /* async; in a0 stream, a1 event, a2 flags */
	SC_OP_EVENT_CREATE,     /* in a0 flags; out a0 event */
	SC_OP_EVENT_RECORD,     /* async; in a0 event, a1 stream, a2 flags */
	SC_OP_EVENT_SYNC,       /* in a0 event */
	SC_OP_EVENT_QUERY,      /* in a0 event */
	SC_OP_EVENT_ELAPSED,    /* in a0 start, a1 end; out a0 milliseconds (float bits) */
	SC_OP_EVENT_DESTROY,    /* in a0 event */
	/* graphs and stream capture (proxy_ops_graph.c). "The node" is a node's
	 * parameters, per CUgraphNodeType: a kernel: a3 function, a4-a6 grid,
	 * a7-a9 block, a10 shared bytes, a11 params n, a12 attributes n; data n x
	 * CUlaunchAttribute (kernel node attributes), then as LAUNCH; a copy: a3
	 * context, data CUDA_MEMCPY3D; a memset: a3 context, data
	 * CUDA_MEMSET_NODE_PARAMS; an event record or wait: a3 event; empty: none */
	SC_OP_GRAPH_CREATE,     /* in a0 flags; out a0 graph */
	SC_OP_GRAPH_DESTROY,    /* in a0 graph */
	SC_OP_GRAPH_CLONE,      /* in a0 graph; out a0 clone */
	SC_OP_GRAPH_ADD_NODE,   /* in a0 graph, a1 type, a2 dependencies n, a3.. the node; data
				 * n x u64 dependencies, then the node's data; out a0 node */
	SC_OP_GRAPH_SET_NODE,   /* in a0 node, a1 type, a2 exec (0: the node itself), a3.. the
				 * node (a kernel's attributes are not changed); data the node's */
	SC_OP_GRAPH_DESCRIBE,   /* in a0 node; out a1 type, a3.. the node, data the node's */
	SC_OP_GRAPH_NODE_TYPE,  /* in a0 node; out a0 CUgraphNodeType */
	SC_OP_GRAPH_NODE_ATTR,  /* in a0 node, a1 CUkernelNodeAttrID, a2 set; data (set) or out
				 * data (get) CUkernelNodeAttrValue */
	SC_OP_GRAPH_DESTROY_NODE, /* in a0 node */
	SC_OP_GRAPH_NODES,      /* in a0 graph, a1 SC_GRAPH_*, a2 first; out a0 total, data the
				 * nodes from a2 on, as many as fit */
	SC_OP_GRAPH_EDGES,      /* in a0 graph, a1 first; out a0 total, data (from, to) pairs
				 * from a1 on, as many as fit */
	SC_OP_GRAPH_ADD_EDGES,  /* in a0 graph, a1 n; data n x u64 from, then n x u64 to */
	SC_OP_GRAPH_INSTANTIATE, /* in a0 graph, a1 flags; out a0 exec */
	SC_OP_GRAPH_EXEC_DESTROY, /* in a0 exec */
	SC_OP_GRAPH_EXEC_UPDATE, /* in a0 exec, a1 graph; out a0 CUgraphExecUpdateResult,
				 * a1 error node, a2 error from node */
	SC_OP_GRAPH_LAUNCH,     /* async; in a0 exec, a1 stream */
	SC_OP_GRAPH_UPLOAD,     /* async; in a0 exec, a1 stream */
	SC_OP_CAPTURE_BEGIN,    /* in a0 stream, a1 CUstreamCaptureMode */
	SC_OP_CAPTURE_END,      /* in a0 stream; out a0 graph */
	SC_OP_CAPTURE_INFO,     /* in a0 stream; out a0 status, a1 id, a2 graph, a3
				 * dependencies n, data the dependencies, as many as fit */
	SC_OP_CAPTURE_DEPS,     /* in a0 stream, a1 CUstreamUpdateCaptureDependencies_flags;
				 * data the nodes */
	/* restart */
	SC_OP_UPLOAD,           /* in a0 device, a1 with pinned host memory, a2 array pairs;
				 * data pairs then the image path (proxy_upload.c) */
	/* checkpoint */
	SC_OP_NONZERO,          /* in a0 device address, a1 length, a2 piece size; out data
				 * bitmap of the pieces holding data (proxy_zero.c) */
	SC_OP_CAPTURE_AREA,     /* in a0 bytes; the device keeps free besides a1 bytes or
				 * 1/a2 of its memory, the more; out a0 device address
				 * (proxy_capture.c) */
	SC_OP_CAPTURE_FREE,     /* in a0 device address, a1 the stream that read it (freed
				 * once that stream's work is done, not waiting for the
				 * program's kernels) */
	SC_OP_PIECE_HASH,       /* in a0 device address, a1 length, a2 piece size; out data
				 * 2 x u64 per piece, its hash (cuda/shared/piece_hash.h) */
	SC_OP_COUNT
};

enum sc_img_kind {
	SC_IMG_MODULE = 0,
	SC_IMG_LIBRARY = 1,
	SC_IMG_LIBRARY_MANAGED = 2, /* SC_OP_MODULE_GLOBAL: a library's __managed__ variable */
};

enum sc_occ_cluster { SC_OCC_ACTIVE_CLUSTERS = 0, SC_OCC_CLUSTER_SIZE = 1 };

/* Attributes of one cuLaunchKernelEx the proxy takes: one of each kind, and to spare. */
#define SC_LAUNCH_ATTRS_MAX 32

enum sc_graph_nodes { SC_GRAPH_ALL = 0, SC_GRAPH_ROOTS = 1 };

enum sc_copy_kind { SC_COPY_HTOD = 1, SC_COPY_DTOH = 2, SC_COPY_DTOD = 3 };

/** sc_op_name() - "MODULE_LOAD", ... for messages. */
const char *sc_op_name(unsigned op);

#endif /* SC_PROXY_REQUESTS_H */
