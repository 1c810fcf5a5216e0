/* SPDX-License-Identifier: MIT */
/*
 * devmem_lineage.c - which pieces of device memory an incremental image
 * leaves to its parent (devmem_lineage.h, spec R-INC-6).
 *
 * Nothing tells a process which device memory its kernels wrote: the GPU
 * hashes each piece instead (SC_OP_PIECE_HASH: 8 GiB in milliseconds, read at
 * the GPU's own bandwidth), at every checkpoint while images may be
 * incremental, and the hashes of the pieces the image records are kept. The
 * next image leaves to it each piece of the same address, length and device
 * whose hash is the same: 128 bits, so a changed piece passes for unchanged
 * with a chance of about 2^-128. The hashes kept are those of the last image
 * completed, the one the next incremental image names as its parent
 * (core/lineage.h): a failed checkpoint keeps them, a restart forgets them.
 *
 * Only whole pieces of the arena's blocks are hashed: a slab's live slots are
 * recorded in runs that change as the program allocates, and module globals
 * and arrays are small; they are always stored.
 */
#include <stdlib.h>
#include <string.h>

#include "core/sc_settings.h"
#include "cuda/lib/cuda_internal.h"
#include "cuda/lib/devmem_lineage.h"
#include "cuda/lib/gpu_capture.h"
#include "format/sc_log.h"

#define PIECES_PER_ASK (SC_CH_INLINE / 16)

/* A piece an image recorded, and its hash. */
struct summed {
	uint64_t addr, len;
	uint32_t dev;
	uint64_t sum[2];
};

static struct {
	struct summed *last; /* of the last image completed, sorted */
	size_t n_last;
	struct summed *now;  /* of the image being written */
	size_t n_now;
} ln;

static int summed_cmp(const void *a, const void *b)
{
	const struct summed *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return x->dev < y->dev ? -1 : x->dev > y->dev;
}

static bool hashable(const struct sc_gpu_piece *p)
{
	return p->d.kind == SC_DEVMEM_DEVICE && !p->slots && p->d.len % 8 == 0 && p->d.len;
}

/* How many pieces from @p on one request hashes: whole staging-buffer pieces, one after the other. */
static size_t run_of(const struct sc_gpu_piece *p, size_t n)
{
	size_t k = 1;

	while (k < n && k < PIECES_PER_ASK && p[k - 1].d.len == SC_CH_STAGING_BUF &&
	       hashable(&p[k]) && p[k].ctx == p[0].ctx && p[k].d.dev == p[0].d.dev &&
	       p[k].d.addr == p[k - 1].d.addr + SC_CH_STAGING_BUF)
		k++;
	return k;
}

/* The hashes of @k pieces from @p, asked of the proxy: false where it cannot. */
static bool ask_hashes(struct sc_gpu_piece *p, size_t k)
{
	static uint64_t sums[PIECES_PER_ASK * 2];
	uint64_t len = p[k - 1].d.addr + p[k - 1].d.len - p[0].d.addr;
	struct sc_req r = { .op = SC_OP_PIECE_HASH, .ctx = p[0].ctx,
			    .a = { p[0].d.addr, len, SC_CH_STAGING_BUF }, .out = sums,
			    .out_cap = sizeof(sums) };
	CUresult res = sc_cu_call(&r);

	if (res != CUDA_SUCCESS || r.out_len != k * 16) {
		sc_log(SC_LOG_INFO, "checkpoint: the GPU proxy cannot hash device memory at 0x%llx "
		       "(%s): the next image stores it whole", (unsigned long long)p[0].d.addr,
		       sc_cu_result_name(res));
		return false;
	}
	for (size_t i = 0; i < k; i++) {
		p[i].sum[0] = sums[2 * i];
		p[i].sum[1] = sums[2 * i + 1];
		p[i].summed = true;
	}
	return true;
}

static void keep_now(const struct sc_gpu_piece *p, size_t n)
{
	size_t k = 0;

	free(ln.now);
	ln.n_now = 0;
	for (size_t i = 0; i < n; i++)
		k += p[i].summed;
	if (!k || !(ln.now = malloc(k * sizeof(*ln.now)))) {
		ln.now = NULL;
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (p[i].summed)
			ln.now[ln.n_now++] = (struct summed){ p[i].d.addr, p[i].d.len, p[i].d.dev,
							      { p[i].sum[0], p[i].sum[1] } };
	qsort(ln.now, ln.n_now, sizeof(*ln.now), summed_cmp);
}

void sc_devmem_lineage_hash(struct sc_gpu_piece *p, size_t n)
{
	double t0 = sc_log_seconds();
	size_t hashed = 0;

	if (!sc_settings()->incremental) {
		keep_now(p, 0);
		return;
	}
	for (size_t i = 0, k; i < n; i += k) {
		k = 1;
		if (!hashable(&p[i]))
			continue;
		k = run_of(&p[i], n - i);
		if (!ask_hashes(&p[i], k))
			break;
		hashed += k;
	}
	keep_now(p, n);
	sc_log(SC_LOG_DEBUG, "checkpoint: %zu pieces of device memory hashed in %.3f s", hashed,
	       sc_log_seconds() - t0);
}

bool sc_devmem_lineage_left(const struct sc_gpu_piece *p)
{
	struct summed key = { p->d.addr, p->d.len, p->d.dev, { 0, 0 } };
	const struct summed *was;

	if (!p->summed || !ln.n_last)
		return false;
	was = bsearch(&key, ln.last, ln.n_last, sizeof(key), summed_cmp);
	return was && was->sum[0] == p->sum[0] && was->sum[1] == p->sum[1];
}

void sc_devmem_lineage_done(int err)
{
	if (err) {
		free(ln.now);
	} else {
		free(ln.last);
		ln.last = ln.now;
		ln.n_last = ln.n_now;
	}
	ln.now = NULL;
	ln.n_now = 0;
}

void sc_devmem_lineage_forget(void)
{
	free(ln.last);
	free(ln.now);
	memset(&ln, 0, sizeof(ln));
}
