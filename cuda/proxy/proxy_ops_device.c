/* SPDX-License-Identifier: MIT */
/*
 * proxy_ops_device.c - driver, device and context requests.
 */
#include <string.h>

#include "cuda/proxy/proxy_internal.h"

#define CTX(v) ((CUcontext)(uintptr_t)(v))

/* A new context: made current for the zero scan's set-up, which needs one. */
static void prepare(CUcontext c)
{
	if (sc_drv.cuCtxSetCurrent(c) != CUDA_SUCCESS)
		return;
	sc_proxy_note_current((uint64_t)(uintptr_t)c);
	sc_proxy_zero_prepare(c);
}

static CUresult op_driver_version(struct sc_ch_slot *s)
{
	int v = 0;
	CUresult r = sc_drv.cuDriverGetVersion(&v);

	s->a[0] = (uint64_t)v;
	return r;
}

static CUresult op_device_count(struct sc_ch_slot *s)
{
	int n = 0;
	CUresult r = sc_drv.cuDeviceGetCount(&n);

	s->a[0] = (uint64_t)n;
	return r;
}

static CUresult op_device_get(struct sc_ch_slot *s)
{
	CUdevice d = 0;
	CUresult r = sc_drv.cuDeviceGet(&d, (int)s->a[0]);

	s->a[0] = (uint64_t)d;
	return r;
}

static CUresult op_device_name(struct sc_ch_slot *s)
{
	char name[256] = "";
	CUresult r = sc_drv.cuDeviceGetName(name, sizeof(name), (CUdevice)s->a[0]);

	sc_proxy_reply_str(s, name);
	return r;
}

static CUresult op_device_attr(struct sc_ch_slot *s)
{
	int v = 0;
	CUresult r = sc_drv.cuDeviceGetAttribute(&v, (CUdevice_attribute)s->a[0],
						 (CUdevice)s->a[1]);

	s->a[0] = (uint64_t)(int64_t)v;
	return r;
}

static CUresult op_device_total_mem(struct sc_ch_slot *s)
{
	size_t n = 0;
	CUresult r = sc_drv.cuDeviceTotalMem(&n, (CUdevice)s->a[0]);

	s->a[0] = n;
	return r;
}

static CUresult op_device_uuid(struct sc_ch_slot *s)
{
	CUuuid u;
	CUresult r = sc_drv.cuDeviceGetUuid(&u, (CUdevice)s->a[0]);

	memcpy(s->data, u.bytes, sizeof(u.bytes));
	s->len = sizeof(u.bytes);
	return r;
}

static CUresult op_pctx_retain(struct sc_ch_slot *s)
{
	CUcontext c = NULL;
	CUresult r = sc_drv.cuDevicePrimaryCtxRetain(&c, (CUdevice)s->a[0]);

	s->a[0] = (uint64_t)(uintptr_t)c;
	if (r == CUDA_SUCCESS)
		prepare(c);
	return r;
}

static void forget_primary(CUdevice dev)
{
	CUcontext c = NULL;

	/* the primary context's handle stays; what was in it is gone */
	if (sc_drv.cuDevicePrimaryCtxRetain(&c, dev) == CUDA_SUCCESS) {
		sc_proxy_zero_forget(c);
		sc_drv.cuDevicePrimaryCtxRelease(dev);
	}
}

static CUresult op_pctx_release(struct sc_ch_slot *s)
{
	forget_primary((CUdevice)s->a[0]);
	return sc_drv.cuDevicePrimaryCtxRelease((CUdevice)s->a[0]);
}

static CUresult op_pctx_reset(struct sc_ch_slot *s)
{
	forget_primary((CUdevice)s->a[0]);
	return sc_drv.cuDevicePrimaryCtxReset((CUdevice)s->a[0]);
}

static CUresult op_pctx_set_flags(struct sc_ch_slot *s)
{
	return sc_drv.cuDevicePrimaryCtxSetFlags((CUdevice)s->a[0], (unsigned)s->a[1]);
}

static CUresult op_pctx_get_state(struct sc_ch_slot *s)
{
	unsigned flags = 0;
	int active = 0;
	CUresult r = sc_drv.cuDevicePrimaryCtxGetState((CUdevice)s->a[0], &flags, &active);

	s->a[0] = flags;
	s->a[1] = (uint64_t)active;
	return r;
}

/*
 * The driver pushes a new context on the calling thread's stack. The proxy's
 * thread serves every application thread and sets the context of each request
 * in place, so the new one takes the place of the one current instead: pushed,
 * and destroyed while another is current, contexts would pile up below.
 */
static CUresult op_ctx_create(struct sc_ch_slot *s)
{
	CUcontext c = NULL;
	CUresult r = sc_drv.cuCtxCreate(&c, NULL, (unsigned)s->a[0], (CUdevice)s->a[1]);

	s->a[0] = (uint64_t)(uintptr_t)c;
	if (r == CUDA_SUCCESS) {
		sc_drv.cuCtxPopCurrent(NULL);
		prepare(c);
	}
	return r;
}

static CUresult op_ctx_destroy(struct sc_ch_slot *s)
{
	CUresult r = sc_drv.cuCtxDestroy(CTX(s->a[0]));

	if (r == CUDA_SUCCESS)
		sc_proxy_zero_forget(CTX(s->a[0]));
	return r;
}

static CUresult op_ctx_sync(struct sc_ch_slot *s)
{
	(void)s;
	return sc_drv.cuCtxSynchronize();
}

static CUresult op_ctx_set_limit(struct sc_ch_slot *s)
{
	return sc_drv.cuCtxSetLimit((CUlimit)s->a[0], (size_t)s->a[1]);
}

static CUresult op_ctx_get_limit(struct sc_ch_slot *s)
{
	size_t v = 0;
	CUresult r = sc_drv.cuCtxGetLimit(&v, (CUlimit)s->a[0]);

	s->a[0] = v;
	return r;
}

static CUresult op_ctx_priorities(struct sc_ch_slot *s)
{
	int least = 0, greatest = 0;
	CUresult r = sc_drv.cuCtxGetStreamPriorityRange(&least, &greatest);

	s->a[0] = (uint64_t)(int64_t)least;
	s->a[1] = (uint64_t)(int64_t)greatest;
	return r;
}

static CUresult op_device_pci_bus_id(struct sc_ch_slot *s)
{
	char id[64] = "";
	CUresult r = sc_drv.cuDeviceGetPCIBusId(id, sizeof(id), (CUdevice)s->a[0]);

	sc_proxy_reply_str(s, id);
	return r;
}

static CUresult op_device_by_pci_bus_id(struct sc_ch_slot *s)
{
	CUdevice d = 0;
	CUresult r;

	if (!s->len || s->len > SC_CH_INLINE || s->data[s->len - 1] != 0)
		return CUDA_ERROR_INVALID_VALUE;
	r = sc_drv.cuDeviceGetByPCIBusId(&d, (const char *)s->data);
	s->a[0] = (uint64_t)d;
	return r;
}

static CUresult op_device_tex1d_width(struct sc_ch_slot *s)
{
	size_t w = 0;
	CUresult r = sc_drv.cuDeviceGetTexture1DLinearMaxWidth(&w, (CUarray_format)s->a[0],
							       (unsigned)s->a[1],
							       (CUdevice)s->a[2]);

	s->a[0] = w;
	return r;
}

static CUresult op_device_affinity(struct sc_ch_slot *s)
{
	int v = 0;
	CUresult r = sc_drv.cuDeviceGetExecAffinitySupport(&v, (CUexecAffinityType)s->a[0],
							   (CUdevice)s->a[1]);

	s->a[0] = (uint64_t)v;
	return r;
}

static CUresult op_device_can_peer(struct sc_ch_slot *s)
{
	int v = 0;
	CUresult r = sc_drv.cuDeviceCanAccessPeer(&v, (CUdevice)s->a[0], (CUdevice)s->a[1]);

	s->a[0] = (uint64_t)v;
	return r;
}

static CUresult op_flush_rdma(struct sc_ch_slot *s)
{
	return sc_drv.cuFlushGPUDirectRDMAWrites((CUflushGPUDirectRDMAWritesTarget)s->a[0],
						 (CUflushGPUDirectRDMAWritesScope)s->a[1]);
}

static CUresult op_device_p2p_attr(struct sc_ch_slot *s)
{
	int v = 0;
	CUresult r = sc_drv.cuDeviceGetP2PAttribute(&v, (CUdevice_P2PAttribute)s->a[0],
						   (CUdevice)s->a[1], (CUdevice)s->a[2]);

	s->a[0] = (uint64_t)(int64_t)v;
	return r;
}

static CUresult op_ctx_peer_enable(struct sc_ch_slot *s)
{
	return sc_drv.cuCtxEnablePeerAccess(CTX(s->a[0]), (unsigned)s->a[1]);
}

static CUresult op_ctx_peer_disable(struct sc_ch_slot *s)
{
	return sc_drv.cuCtxDisablePeerAccess(CTX(s->a[0]));
}

static CUresult op_ctx_set_flags(struct sc_ch_slot *s)
{
	return sc_drv.cuCtxSetFlags((unsigned)s->a[0]);
}

static CUresult op_ctx_set_cache(struct sc_ch_slot *s)
{
	return sc_drv.cuCtxSetCacheConfig((CUfunc_cache)s->a[0]);
}

static CUresult op_ctx_get_cache(struct sc_ch_slot *s)
{
	CUfunc_cache c = CU_FUNC_CACHE_PREFER_NONE;
	CUresult r = sc_drv.cuCtxGetCacheConfig(&c);

	s->a[0] = (uint64_t)c;
	return r;
}

static CUresult op_ctx_set_shmem(struct sc_ch_slot *s)
{
	return sc_drv.cuCtxSetSharedMemConfig((CUsharedconfig)s->a[0]);
}

static CUresult op_ctx_get_shmem(struct sc_ch_slot *s)
{
	CUsharedconfig c = CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE;
	CUresult r = sc_drv.cuCtxGetSharedMemConfig(&c);

	s->a[0] = (uint64_t)c;
	return r;
}

static CUresult op_ctx_reset_l2(struct sc_ch_slot *s)
{
	(void)s;
	return sc_drv.cuCtxResetPersistingL2Cache();
}

static CUresult op_mem_get_info(struct sc_ch_slot *s)
{
	size_t free_b = 0, total = 0;
	CUresult r = sc_drv.cuMemGetInfo(&free_b, &total);

	s->a[0] = free_b;
	s->a[1] = total;
	return r;
}

void sc_proxy_ops_device(sc_proxy_op_fn *t)
{
	t[SC_OP_DRIVER_VERSION] = op_driver_version;
	t[SC_OP_DEVICE_COUNT] = op_device_count;
	t[SC_OP_DEVICE_GET] = op_device_get;
	t[SC_OP_DEVICE_NAME] = op_device_name;
	t[SC_OP_DEVICE_ATTR] = op_device_attr;
	t[SC_OP_DEVICE_TOTAL_MEM] = op_device_total_mem;
	t[SC_OP_DEVICE_UUID] = op_device_uuid;
	t[SC_OP_PCTX_RETAIN] = op_pctx_retain;
	t[SC_OP_PCTX_RELEASE] = op_pctx_release;
	t[SC_OP_PCTX_RESET] = op_pctx_reset;
	t[SC_OP_PCTX_SET_FLAGS] = op_pctx_set_flags;
	t[SC_OP_PCTX_GET_STATE] = op_pctx_get_state;
	t[SC_OP_CTX_CREATE] = op_ctx_create;
	t[SC_OP_CTX_DESTROY] = op_ctx_destroy;
	t[SC_OP_CTX_SYNC] = op_ctx_sync;
	t[SC_OP_CTX_SET_LIMIT] = op_ctx_set_limit;
	t[SC_OP_CTX_GET_LIMIT] = op_ctx_get_limit;
	t[SC_OP_CTX_PRIORITIES] = op_ctx_priorities;
	t[SC_OP_MEM_GET_INFO] = op_mem_get_info;
	t[SC_OP_DEVICE_PCI_BUS_ID] = op_device_pci_bus_id;
	t[SC_OP_DEVICE_BY_PCI_BUS_ID] = op_device_by_pci_bus_id;
	t[SC_OP_DEVICE_TEX1D_WIDTH] = op_device_tex1d_width;
	t[SC_OP_DEVICE_AFFINITY] = op_device_affinity;
	t[SC_OP_FLUSH_RDMA] = op_flush_rdma;
	t[SC_OP_DEVICE_CAN_PEER] = op_device_can_peer;
	t[SC_OP_DEVICE_P2P_ATTR] = op_device_p2p_attr;
	t[SC_OP_CTX_PEER_ENABLE] = op_ctx_peer_enable;
	t[SC_OP_CTX_PEER_DISABLE] = op_ctx_peer_disable;
	t[SC_OP_CTX_SET_FLAGS] = op_ctx_set_flags;
	t[SC_OP_CTX_SET_CACHE] = op_ctx_set_cache;
	t[SC_OP_CTX_GET_CACHE] = op_ctx_get_cache;
	t[SC_OP_CTX_SET_SHMEM] = op_ctx_set_shmem;
	t[SC_OP_CTX_GET_SHMEM] = op_ctx_get_shmem;
	t[SC_OP_CTX_RESET_L2] = op_ctx_reset_l2;
}
