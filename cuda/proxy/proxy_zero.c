/* SPDX-License-Identifier: MIT */
/*
 * proxy_zero.c - SC_OP_NONZERO: which pieces of a range of device memory hold
 * data, and SC_OP_PIECE_HASH: the hash of each piece, found by kernels
 * (cuda/proxy/zero_scan.cu, built into the proxy as PTX when nvcc was there at
 * build time). The driver compiles the PTX for the GPU at the first use in each
 * context. Where there is no kernel, or it cannot be loaded (the software test
 * device runs no PTX), SC_OP_NONZERO answers CUDA_ERROR_NOT_SUPPORTED and the
 * library checks the bytes itself, and SC_OP_PIECE_HASH reads the pieces to
 * the host and hashes them here, the same hash (cuda/shared/piece_hash.h).
 *
 * The kernel and its flags are set up in every context as it is created,
 * before the program loads anything in it: the same in a proxy started at a
 * restart, so that the addresses the driver picks for the program's module
 * globals come out the same in both.
 *
 * Requests: a0 device address, a1 length (a multiple of 8), a2 piece size (a
 * power of two, 8 bytes or more); the slot's context is current. Reply data:
 * SC_OP_NONZERO a bitmap, bit i set when piece i holds a non-zero byte;
 * SC_OP_PIECE_HASH two u64 per piece, its hash.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda/proxy/proxy_internal.h"
#include "cuda/shared/piece_hash.h"

#define CONTEXTS 64
#define THREADS 256
#define BLOCKS 4096
#define FLAGS_N (256u << 10) /* pieces one scan covers: 2 TiB of 8 MiB pieces */
#define HASH_CHUNK_SHIFT 17   /* words one block of the hash kernel reads: 1 MiB */
#define HOST_HASH_BUF (8u << 20)

#ifdef SC_ZERO_SCAN
extern const char sc_zero_scan_ptx[];
#endif

struct scanner {
	CUcontext ctx;
	CUmodule module;
	CUfunction fn;
	CUfunction hash_fn;     /* NULL: pieces are hashed on the host */
	CUdeviceptr flags;      /* the scan's flags, or the hash kernel's sums */
	size_t flags_n;
	bool broken;
};

static struct scanner scanners[CONTEXTS];

static struct scanner *scanner_of(CUcontext ctx)
{
	for (int i = 0; i < CONTEXTS; i++)
		if (scanners[i].ctx == ctx)
			return &scanners[i];
	return NULL;
}

void sc_proxy_zero_prepare(CUcontext ctx)
{
	struct scanner *s = scanner_of(ctx);

	if (s)
		return; /* a primary context retained again */
	if (!(s = scanner_of(NULL)))
		return;
	memset(s, 0, sizeof(*s));
	s->ctx = ctx;
	s->broken = true;
#ifdef SC_ZERO_SCAN
	if (sc_drv.cuModuleLoadData(&s->module, sc_zero_scan_ptx) == CUDA_SUCCESS &&
	    sc_drv.cuModuleGetFunction(&s->fn, s->module, "sc_nonzero") == CUDA_SUCCESS &&
	    sc_drv.cuMemAlloc(&s->flags, FLAGS_N * 4) == CUDA_SUCCESS) {
		s->flags_n = FLAGS_N;
		s->broken = false;
		if (sc_drv.cuModuleGetFunction(&s->hash_fn, s->module, "sc_piece_hash") !=
		    CUDA_SUCCESS)
			s->hash_fn = NULL;
	}
#endif
}

void sc_proxy_zero_forget(CUcontext ctx)
{
	struct scanner *s = scanner_of(ctx);

	if (s)
		memset(s, 0, sizeof(*s)); /* its module and memory went with the context */
}

static CUresult scan(struct scanner *s, struct sc_ch_slot *req, size_t pieces)
{
	unsigned long long words = req->a[1] / 8;
	CUdeviceptr data = req->a[0];
	unsigned shift = (unsigned)__builtin_ctzll(req->a[2] / 8);
	void *params[] = { &data, &words, &shift, &s->flags };
	unsigned flags[4096];
	CUresult r;

	if ((r = sc_drv.cuMemsetD32Async(s->flags, 0, pieces, NULL)) != CUDA_SUCCESS ||
	    (r = sc_drv.cuLaunchKernel(s->fn, BLOCKS, 1, 1, THREADS, 1, 1, 0, NULL, params,
				       NULL)) != CUDA_SUCCESS ||
	    (r = sc_drv.cuCtxSynchronize()) != CUDA_SUCCESS)
		return r;
	memset(req->data, 0, (pieces + 7) / 8);
	for (size_t done = 0; done < pieces; done += 4096) {
		size_t n = pieces - done < 4096 ? pieces - done : 4096;

		if ((r = sc_drv.cuMemcpyDtoH(flags, s->flags + done * 4, n * 4)) != CUDA_SUCCESS)
			return r;
		for (size_t i = 0; i < n; i++)
			if (flags[i])
				req->data[(done + i) / 8] |= (uint8_t)(1u << ((done + i) % 8));
	}
	req->len = (uint32_t)((pieces + 7) / 8);
	return CUDA_SUCCESS;
}

static CUresult op_nonzero(struct sc_ch_slot *req)
{
	uint64_t len = req->a[1], piece = req->a[2];
	size_t pieces;
	struct scanner *s;

	if (!piece || (piece & (piece - 1)) || piece < 8 || len % 8)
		return CUDA_ERROR_INVALID_VALUE;
	pieces = (len + piece - 1) / piece;
	if ((pieces + 7) / 8 > SC_CH_INLINE)
		return CUDA_ERROR_INVALID_VALUE;
	s = scanner_of((CUcontext)(uintptr_t)req->ctx);
	if (!s || s->broken || pieces > s->flags_n)
		return CUDA_ERROR_NOT_SUPPORTED;
	return scan(s, req, pieces);
}

/* The hashes of @pieces pieces of 2^shift words, by the kernel into the scanner's sums. */
static CUresult hash_on_gpu(struct scanner *s, struct sc_ch_slot *req, size_t pieces,
			    unsigned shift)
{
	unsigned long long words = req->a[1] / 8;
	CUdeviceptr data = req->a[0];
	unsigned chunk_shift = shift < HASH_CHUNK_SHIFT ? shift : HASH_CHUNK_SHIFT;
	unsigned long long blocks = (words + (1ull << chunk_shift) - 1) >> chunk_shift;
	void *params[] = { &data, &words, &shift, &chunk_shift, &s->flags };
	CUresult r;

	if (blocks > 0x7fffffffull)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = sc_drv.cuMemsetD32Async(s->flags, 0, pieces * 4, NULL)) != CUDA_SUCCESS ||
	    (r = sc_drv.cuLaunchKernel(s->hash_fn, (unsigned)blocks, 1, 1, THREADS, 1, 1, 0, NULL,
				       params, NULL)) != CUDA_SUCCESS ||
	    (r = sc_drv.cuCtxSynchronize()) != CUDA_SUCCESS)
		return r;
	return sc_drv.cuMemcpyDtoH(req->data, s->flags, pieces * 16);
}

/* The same on the host, read through a buffer: for a device that runs no kernel of ours. */
static CUresult hash_on_host(struct sc_ch_slot *req, size_t pieces, unsigned shift)
{
	uint64_t *buf = malloc(HOST_HASH_BUF), *sums = (uint64_t *)(void *)req->data;
	uint64_t words = req->a[1] / 8, piece_words = 1ull << shift;
	CUresult r = buf ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;

	memset(sums, 0, pieces * 16);
	for (uint64_t at = 0; at < words && r == CUDA_SUCCESS;) {
		uint64_t n = words - at < HOST_HASH_BUF / 8 ? words - at : HOST_HASH_BUF / 8;

		if ((r = sc_drv.cuMemcpyDtoH(buf, req->a[0] + at * 8, n * 8)) != CUDA_SUCCESS)
			break;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t w = at + i, p = w >> shift;

			sc_piece_hash_word(buf[i], w & (piece_words - 1), &sums[2 * p],
					   &sums[2 * p + 1]);
		}
		at += n;
	}
	free(buf);
	return r;
}

static CUresult op_piece_hash(struct sc_ch_slot *req)
{
	uint64_t len = req->a[1], piece = req->a[2];
	struct scanner *s = scanner_of((CUcontext)(uintptr_t)req->ctx);
	size_t pieces;
	unsigned shift;
	CUresult r;

	if (!piece || (piece & (piece - 1)) || piece < 8 || len % 8 || !len)
		return CUDA_ERROR_INVALID_VALUE;
	pieces = (len + piece - 1) / piece;
	if (pieces * 16 > SC_CH_INLINE)
		return CUDA_ERROR_INVALID_VALUE;
	shift = (unsigned)__builtin_ctzll(piece / 8);
	if (s && !s->broken && s->hash_fn && pieces * 4 <= s->flags_n)
		r = hash_on_gpu(s, req, pieces, shift);
	else
		r = hash_on_host(req, pieces, shift);
	if (r == CUDA_SUCCESS)
		req->len = (uint32_t)(pieces * 16);
	return r;
}

void sc_proxy_ops_zero(sc_proxy_op_fn *t)
{
	t[SC_OP_NONZERO] = op_nonzero;
	t[SC_OP_PIECE_HASH] = op_piece_hash;
}
