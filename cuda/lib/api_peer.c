/* SPDX-License-Identifier: MIT */
/*
 * api_peer.c - several GPUs in one process: peer access between contexts,
 * copies between devices, and what the driver says of each pair.
 *
 * Device memory is the arena's, made with cuMemCreate and mapped into one
 * reservation per device; such memory is reached from another device only
 * where cuMemSetAccess allows it, whatever cuCtxEnablePeerAccess says. So
 * the library keeps the pairs the program enabled, and the arena gives each
 * block of a device read and write access for every device that has a
 * context with peer access to a context of it: the blocks there now, those
 * made later, and those a restart maps again. A restart enables the same
 * pairs again between the same contexts.
 */
#include <stdlib.h>

#include "cuda/lib/cuda_internal.h"
#include "cuda/lib/managed.h"
#include "format/sc_array.h"

struct peer {
	struct sc_cu_ctx *from, *to;
};

static struct peer *peers;
static size_t peers_n, peers_cap;
static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;

uint64_t sc_peer_mask(CUdevice dev)
{
	uint64_t mask = 0;

	pthread_mutex_lock(&peer_lock);
	for (size_t i = 0; i < peers_n; i++)
		if (peers[i].to->dev == dev && peers[i].from->dev != dev &&
		    peers[i].from->dev >= 0 && peers[i].from->dev < 64)
			mask |= 1ull << peers[i].from->dev;
	pthread_mutex_unlock(&peer_lock);
	return mask;
}

/* The pair's index, or peers_n when the program has not enabled it. */
static size_t pair_of(const struct sc_cu_ctx *from, const struct sc_cu_ctx *to)
{
	size_t i = 0;

	while (i < peers_n && (peers[i].from != from || peers[i].to != to))
		i++;
	return i;
}

static CUresult record(struct sc_cu_ctx *from, struct sc_cu_ctx *to)
{
	CUresult res = CUDA_SUCCESS;

	pthread_mutex_lock(&peer_lock);
	if (sc_grow((void **)&peers, &peers_cap, peers_n + 1, sizeof(*peers)))
		res = CUDA_ERROR_OUT_OF_MEMORY;
	else
		peers[peers_n++] = (struct peer){ from, to };
	pthread_mutex_unlock(&peer_lock);
	return res;
}

static void unrecord(const struct sc_cu_ctx *from, const struct sc_cu_ctx *to)
{
	size_t i;

	pthread_mutex_lock(&peer_lock);
	if ((i = pair_of(from, to)) < peers_n)
		peers[i] = peers[--peers_n];
	pthread_mutex_unlock(&peer_lock);
}

static CUresult peer_call(unsigned op, struct sc_cu_ctx *from, struct sc_cu_ctx *to,
			  unsigned flags)
{
	struct sc_req r = { .op = op, .ctx = from->o.real, .a = { to->o.real, flags } };

	return sc_cu_call(&r);
}

SC_CU_API CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
	struct sc_cu_ctx *to = sc_obj_get(peerContext, SC_K_CTX), *from;
	CUresult res;

	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if (!(from = sc_ctx_current()))
		res = sc_ctx_missing();
	else if (!to)
		res = CUDA_ERROR_INVALID_CONTEXT;
	else if ((res = peer_call(SC_OP_CTX_PEER_ENABLE, from, to, Flags)) == CUDA_SUCCESS &&
		 (res = record(from, to)) == CUDA_SUCCESS &&
		 (res = sc_arena_peer_access(to->dev, -1)) != CUDA_SUCCESS) {
		unrecord(from, to); /* as if never enabled */
		peer_call(SC_OP_CTX_PEER_DISABLE, from, to, 0);
	}
	sc_cu_leave();
	return res;
}

SC_CU_API CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peerContext)
{
	struct sc_cu_ctx *to = sc_obj_get(peerContext, SC_K_CTX), *from;
	CUresult res;

	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if (!(from = sc_ctx_current()))
		res = sc_ctx_missing();
	else if (!to)
		res = CUDA_ERROR_INVALID_CONTEXT;
	else if ((res = peer_call(SC_OP_CTX_PEER_DISABLE, from, to, 0)) == CUDA_SUCCESS) {
		unrecord(from, to);
		/* another context of the same device may still have access */
		if (!(sc_peer_mask(to->dev) >> from->dev & 1))
			res = sc_arena_peer_access(to->dev, from->dev);
	}
	sc_cu_leave();
	return res;
}

void sc_peer_forget_context(const struct sc_cu_ctx *c)
{
	pthread_mutex_lock(&peer_lock);
	for (size_t i = 0; i < peers_n;)
		if (peers[i].from == c || peers[i].to == c)
			peers[i] = peers[--peers_n];
		else
			i++;
	pthread_mutex_unlock(&peer_lock);
}

CUresult sc_peer_replay(void)
{
	CUresult res = CUDA_SUCCESS;

	for (size_t i = 0; i < peers_n && res == CUDA_SUCCESS; i++)
		res = peer_call(SC_OP_CTX_PEER_ENABLE, peers[i].from, peers[i].to, 0);
	return res;
}

SC_CU_API CUresult CUDAAPI cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib,
						   CUdevice srcDevice, CUdevice dstDevice)
{
	struct sc_req r = { .op = SC_OP_DEVICE_P2P_ATTR,
			    .a = { (uint64_t)attrib, (uint64_t)srcDevice, (uint64_t)dstDevice } };
	CUresult res;

	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_ask(&r, false)) == CUDA_SUCCESS)
		*value = (int)(int64_t)r.a[0];
	return res;
}

/* ---- copies between devices ---- */

CUresult sc_cu_copy_peer(CUdeviceptr dst, uint64_t dst_ctx, CUdeviceptr src, uint64_t src_ctx,
			 size_t n, uint64_t stream, bool sync)
{
	struct sc_req r = { .op = SC_OP_COPY_PEER, .ctx = sc_ctx_real(),
			    .flags = sync ? SC_MSG_SYNC_STREAM : 0,
			    .a = { dst, dst_ctx, src, src_ctx, n, stream } };

	return sync ? sc_cu_call(&r) : sc_cu_post(&r);
}

static CUresult copy_peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
			  CUcontext src_ctx, size_t n, CUstream stream, bool sync)
{
	struct sc_cu_ctx *dc = sc_obj_get(dst_ctx, SC_K_CTX), *scx = sc_obj_get(src_ctx, SC_K_CTX);
	CUresult res, sticky = CUDA_SUCCESS;
	uint64_t st = 0;

	if (sync)
		sc_cu_sync_point();
	if (!dc || !scx)
		return CUDA_ERROR_INVALID_CONTEXT;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	if (!sc_ctx_real())
		res = sc_ctx_missing();
	else if (n)
		st = sc_stream_real(stream, &res);
	if (res == CUDA_SUCCESS && n && sc_managed_live())
		res = sc_managed_before_work(dc->o.real, st, dst, n);
	if (res == CUDA_SUCCESS && n)
		res = sc_cu_copy_peer(dst, dc->o.real, src, scx->o.real, n, st, sync);
	if (sync)
		sticky = sc_cu_take_sticky();
	if (sync && res == CUDA_SUCCESS && sticky == CUDA_SUCCESS && sc_managed_live())
		res = sc_managed_synced(sc_ctx_real(), 0, SC_SYNC_STREAM);
	sc_cu_leave();
	return res != CUDA_SUCCESS ? res : sticky;
}

SC_CU_API CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext,
					CUdeviceptr srcDevice, CUcontext srcContext,
					size_t ByteCount)
{
	return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL, true);
}

SC_CU_API CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
					     CUdeviceptr srcDevice, CUcontext srcContext,
					     size_t ByteCount, CUstream hStream)
{
	return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream, false);
}

SC_CU_API CUresult CUDAAPI cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
						  CUdeviceptr srcDevice, CUcontext srcContext,
						  size_t ByteCount, CUstream hStream)
{
	return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount,
			 hStream ? hStream : CU_STREAM_PER_THREAD, false);
}

SC_CU_API CUresult CUDAAPI cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
					     CUdeviceptr srcDevice, CUcontext srcContext,
					     size_t ByteCount)
{
	return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount,
			 CU_STREAM_PER_THREAD, true);
}
