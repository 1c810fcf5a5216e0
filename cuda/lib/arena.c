/* SPDX-License-Identifier: MIT */
/*
 * arena.c - device memory at addresses the library chooses.
 *
 * Each device gets one large reservation of device address space at a fixed
 * address (the driver honours large reservations at free addresses; small
 * ones it moves). Inside it, the arena places physical allocations itself:
 * an allocation above SMALL_MAX gets memory of its own, rounded up to the
 * allocation granularity; smaller ones are carved out of slabs of one
 * granularity unit, one size class per slab, which stay mapped once made. At a restart the same
 * reservation is made first and every block is mapped at the same address,
 * so every CUdeviceptr the application holds - in host memory, in device
 * memory, in kernel arguments - stays valid without any translation.
 *
 * The bookkeeping is ordinary memory of the application: it comes back with
 * the process image.
 */
#include <stdlib.h>
#include <string.h>

#include "core/sc_settings.h"
#include "cuda/lib/cuda_internal.h"
#include "cuda/lib/gpu_capture.h"
#include "format/sc_array.h"
#include "format/sc_log.h"

#define ARENA_SIZE (1ull << 40)     /* per device */
#define MAX_DEVICES 64
#define SMALL_MIN 256u              /* CUDA's alignment for cuMemAlloc */
#define SMALL_MAX (1u << 20)

struct va_range {
	CUdeviceptr start;
	size_t size;
};

struct device_arena {
	bool reserved;
	size_t granularity;
	CUdeviceptr next;          /* bump pointer */
	struct va_range *free_va;  /* returned ranges, first fit */
	size_t free_n;
};

static struct device_arena devs[MAX_DEVICES];
static struct sc_cu_reservation reservations[MAX_DEVICES];
static size_t reservations_n;
static struct sc_cu_block *blocks; /* sorted by address */
static size_t blocks_n, blocks_cap;
static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t arena_base(CUdevice dev)
{
	/* SELFCKPT_CUDA_ARENA, default 4 TiB */
	return sc_settings()->cuda_arena + (uint64_t)dev * ARENA_SIZE;
}

static CUresult reserve(struct sc_cu_ctx *c, struct device_arena *d)
{
	uint64_t want = arena_base(c->dev);
	struct sc_req g = { .op = SC_OP_VMM_GRANULARITY, .ctx = c->o.real,
			    .a = { (uint64_t)c->dev } };
	struct sc_req r = { .op = SC_OP_VMM_RESERVE, .ctx = c->o.real,
			    .a = { ARENA_SIZE, want } };
	CUresult res = sc_cu_call(&g);

	if (res == CUDA_SUCCESS)
		res = sc_cu_call(&r);
	if (res != CUDA_SUCCESS) {
		sc_log(SC_LOG_ERROR, "cannot reserve device addresses for device %d: %s",
		       (int)c->dev, sc_cu_result_name(res));
		return res;
	}
	if (r.a[0] != want) {
		sc_log(SC_LOG_ERROR, "device addresses for device %d: wanted 0x%llx, the driver "
		       "gave 0x%llx; set SELFCKPT_CUDA_ARENA to a free address",
		       (int)c->dev, (unsigned long long)want, (unsigned long long)r.a[0]);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	d->reserved = true;
	d->granularity = g.a[0] ? g.a[0] : (2u << 20);
	d->next = want;
	reservations[reservations_n++] = (struct sc_cu_reservation){ c->dev, want, ARENA_SIZE };
	return CUDA_SUCCESS;
}

static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

static void va_free(struct device_arena *d, CUdeviceptr start, size_t size);

/* @size bytes at a multiple of @align (a multiple of the granularity): the gaps go back. */
static bool va_alloc_aligned(struct device_arena *d, CUdevice dev, size_t size, size_t align,
			     CUdeviceptr *out)
{
	for (size_t i = 0; i < d->free_n; i++) {
		struct va_range f = d->free_va[i];
		CUdeviceptr at = round_up(f.start, align);

		if (at + size > f.start + f.size)
			continue;
		d->free_va[i] = d->free_va[--d->free_n];
		if (at > f.start)
			va_free(d, f.start, at - f.start);
		if (at + size < f.start + f.size)
			va_free(d, at + size, f.start + f.size - at - size);
		*out = at;
		return true;
	}
	if (round_up(d->next, align) + size > arena_base(dev) + ARENA_SIZE)
		return false;
	*out = round_up(d->next, align);
	if (*out > d->next)
		va_free(d, d->next, *out - d->next);
	d->next = *out + size;
	return true;
}

static bool va_alloc(struct device_arena *d, CUdevice dev, size_t size, CUdeviceptr *out)
{
	return va_alloc_aligned(d, dev, size, 1, out);
}

static void va_free(struct device_arena *d, CUdeviceptr start, size_t size)
{
	struct va_range *n;

	if (start + size == d->next) {
		d->next = start;
		return;
	}
	n = realloc(d->free_va, (d->free_n + 1) * sizeof(*n));
	if (!n)
		return; /* the range is lost to this run, nothing worse */
	d->free_va = n;
	d->free_va[d->free_n++] = (struct va_range){ start, size };
}

/* Index of the first block whose end is above @p. */
static size_t block_search(CUdeviceptr p)
{
	size_t lo = 0, hi = blocks_n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (blocks[mid].addr + blocks[mid].size <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct sc_cu_block *block_insert(const struct sc_cu_block *b)
{
	size_t i = block_search(b->addr);

	if (sc_grow((void **)&blocks, &blocks_cap, blocks_n + 1, sizeof(*blocks)))
		return NULL;
	memmove(&blocks[i + 1], &blocks[i], (blocks_n - i) * sizeof(*blocks));
	blocks[i] = *b;
	blocks_n++;
	return &blocks[i];
}

static void block_remove(struct sc_cu_block *b)
{
	size_t i = (size_t)(b - blocks);

	free(b->used);
	memmove(&blocks[i], &blocks[i + 1], (blocks_n - i - 1) * sizeof(*blocks));
	blocks_n--;
}

/* Physical memory for [va, va+size) in the proxy: the program's allocation @vmm, or the arena's. */
static CUresult map_block(struct sc_cu_ctx *c, CUdeviceptr va, size_t size, uint32_t cls,
			  struct sc_cu_memhandle *vmm, struct sc_cu_block **out)
{
	struct sc_req r = { .op = SC_OP_VMM_MAP, .ctx = c->o.real,
			    .a = { va, size, (uint64_t)c->dev, sc_peer_mask(c->dev) },
			    .in = vmm ? &vmm->prop : NULL,
			    .in_len = vmm ? (uint32_t)sizeof(vmm->prop) : 0 };
	struct sc_cu_block b = { .addr = va, .size = size, .dev = c->dev, .ctx = c,
				 .slab_class = cls, .asked = vmm ? size : 0, .vmm = vmm };
	struct sc_req again = r; /* a reply overwrites the arguments */
	CUresult res = sc_cu_call(&r);

	/* a checkpoint's copy of device memory is freed once its image is written */
	if (res == CUDA_ERROR_OUT_OF_MEMORY && sc_capture_wait_room()) {
		r = again;
		res = sc_cu_call(&r);
	}
	if (res != CUDA_SUCCESS)
		return res;
	b.handle = r.a[0];
	if (cls && !(b.used = calloc((size / cls + 63) / 64, 8)))
		res = CUDA_ERROR_OUT_OF_MEMORY;
	if (res == CUDA_SUCCESS && !(*out = block_insert(&b)))
		res = CUDA_ERROR_OUT_OF_MEMORY;
	if (res != CUDA_SUCCESS) {
		struct sc_req u = { .op = SC_OP_VMM_UNMAP, .ctx = c->o.real,
				    .a = { va, size, b.handle } };

		free(b.used);
		sc_cu_call(&u);
	}
	return res;
}

static CUresult unmap_block(struct sc_cu_block *b)
{
	struct sc_req u = { .op = SC_OP_VMM_UNMAP, .ctx = b->ctx->o.real,
			    .a = { b->addr, b->size, b->handle } };
	CUresult res = sc_cu_call(&u);

	va_free(&devs[b->dev], b->addr, b->size);
	block_remove(b);
	return res;
}

static uint32_t size_class(size_t bytes)
{
	uint32_t c = SMALL_MIN;

	while (c < bytes)
		c <<= 1;
	return c;
}

static int slab_take(struct sc_cu_block *b)
{
	uint32_t slots = (uint32_t)(b->size / b->slab_class);

	for (uint32_t w = 0; w < (slots + 63) / 64; w++) {
		if (b->used[w] == ~0ull)
			continue;
		int bit = __builtin_ctzll(~b->used[w]);
		uint32_t i = w * 64 + (uint32_t)bit;

		if (i >= slots)
			break;
		b->used[w] |= 1ull << bit;
		b->used_n++;
		return (int)i;
	}
	return -1;
}

static CUresult alloc_small(struct sc_cu_ctx *c, struct device_arena *d, size_t bytes,
			    CUdeviceptr *out)
{
	uint32_t cls = size_class(bytes);
	struct sc_cu_block *b = NULL;
	CUdeviceptr va;
	CUresult res;
	int i;

	for (size_t k = 0; k < blocks_n; k++)
		if (blocks[k].slab_class == cls && blocks[k].dev == c->dev &&
		    blocks[k].ctx == c && blocks[k].used_n < blocks[k].size / cls) {
			b = &blocks[k];
			break;
		}
	if (!b) {
		if (!va_alloc(d, c->dev, d->granularity, &va))
			return CUDA_ERROR_OUT_OF_MEMORY;
		if ((res = map_block(c, va, d->granularity, cls, NULL, &b)) != CUDA_SUCCESS) {
			va_free(d, va, d->granularity);
			return res;
		}
	}
	i = slab_take(b);
	*out = b->addr + (CUdeviceptr)i * cls;
	return CUDA_SUCCESS;
}

/* An allocation in memory of its own, rounded up to the granularity. arena_lock held. */
static CUresult alloc_own(struct sc_cu_ctx *c, struct device_arena *d, size_t bytes,
			  CUdeviceptr *out)
{
	size_t size = round_up(bytes, d->granularity);
	struct sc_cu_block *b;
	CUdeviceptr va;
	CUresult res;

	if (!va_alloc(d, c->dev, size, &va))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((res = map_block(c, va, size, 0, NULL, &b)) != CUDA_SUCCESS) {
		va_free(d, va, size);
		return res;
	}
	*out = va;
	b->asked = bytes;
	return CUDA_SUCCESS;
}

static CUresult alloc(struct sc_cu_ctx *c, size_t bytes, bool own, CUdeviceptr *out)
{
	struct device_arena *d;
	CUresult res = CUDA_SUCCESS;

	if (c->dev < 0 || c->dev >= MAX_DEVICES)
		return CUDA_ERROR_INVALID_DEVICE;
	d = &devs[c->dev];
	pthread_mutex_lock(&arena_lock);
	if (!d->reserved)
		res = reserve(c, d);
	if (res == CUDA_SUCCESS)
		res = bytes <= SMALL_MAX && !own ? alloc_small(c, d, bytes, out)
						 : alloc_own(c, d, bytes, out);
	pthread_mutex_unlock(&arena_lock);
	return res;
}

CUresult sc_arena_alloc(struct sc_cu_ctx *c, size_t bytes, CUdeviceptr *out)
{
	return alloc(c, bytes, false, out);
}

CUresult sc_arena_alloc_own(struct sc_cu_ctx *c, size_t bytes, CUdeviceptr *out)
{
	return alloc(c, bytes, true, out);
}

static struct sc_cu_block *find_locked(CUdeviceptr p)
{
	size_t i = block_search(p);

	return i < blocks_n && blocks[i].addr <= p ? &blocks[i] : NULL;
}

CUresult sc_arena_free(CUdeviceptr p)
{
	struct sc_cu_block *b;
	CUresult res = CUDA_SUCCESS;

	pthread_mutex_lock(&arena_lock);
	b = find_locked(p);
	if (!b) {
		res = CUDA_ERROR_INVALID_VALUE;
	} else if (!b->slab_class) {
		res = p == b->addr ? unmap_block(b) : CUDA_ERROR_INVALID_VALUE;
	} else {
		uint64_t i = (p - b->addr) / b->slab_class;

		if ((p - b->addr) % b->slab_class || !(b->used[i / 64] & 1ull << (i % 64))) {
			res = CUDA_ERROR_INVALID_VALUE;
		} else {
			/* An empty slab stays: small allocations come and go in loops,
			 * and mapping memory in the driver costs far more than keeping it. */
			b->used[i / 64] &= ~(1ull << (i % 64));
			b->used_n--;
		}
	}
	pthread_mutex_unlock(&arena_lock);
	return res;
}

struct sc_cu_block *sc_arena_find(CUdeviceptr p, CUdeviceptr *base, size_t *size)
{
	struct sc_cu_block *b;

	pthread_mutex_lock(&arena_lock);
	b = find_locked(p);
	if (b && b->slab_class) {
		uint64_t i = (p - b->addr) / b->slab_class;

		if (!(b->used[i / 64] & 1ull << (i % 64)))
			b = NULL;
		else if (base)
			*base = b->addr + i * b->slab_class;
		if (b && size)
			*size = b->slab_class;
	} else if (b) {
		if (base)
			*base = b->addr;
		if (size)
			*size = b->size;
	}
	pthread_mutex_unlock(&arena_lock);
	return b;
}

void sc_arena_release_context(struct sc_cu_ctx *c)
{
	pthread_mutex_lock(&arena_lock);
	for (size_t i = blocks_n; i-- > 0;)
		if (blocks[i].ctx == c && unmap_block(&blocks[i]) != CUDA_SUCCESS)
			sc_log(SC_LOG_WARN, "cannot free device memory at 0x%llx of a context being "
			       "destroyed", (unsigned long long)blocks[i].addr);
	pthread_mutex_unlock(&arena_lock);
}

bool sc_arena_forget_device(CUdevice dev)
{
	if (dev < 0 || dev >= MAX_DEVICES)
		return false;
	for (size_t i = 0; i < blocks_n; i++)
		if (blocks[i].dev == dev && (!blocks[i].slab_class || blocks[i].used_n))
			return false;
	for (size_t i = blocks_n; i-- > 0;)
		if (blocks[i].dev == dev)
			block_remove(&blocks[i]);
	free(devs[dev].free_va);
	devs[dev] = (struct device_arena){ 0 };
	for (size_t i = 0; i < reservations_n; i++)
		if (reservations[i].dev == dev) {
			reservations[i] = reservations[--reservations_n];
			break;
		}
	return true;
}

size_t sc_arena_usage(struct sc_arena_usage *u, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&arena_lock);
	for (size_t i = 0; i < blocks_n; i++) {
		size_t k = 0;

		while (k < n && u[k].dev != blocks[i].dev)
			k++;
		if (k == n && n == max)
			continue;
		if (k == n)
			u[n++] = (struct sc_arena_usage){ blocks[i].dev, blocks[i].ctx->o.real, 0 };
		u[k].bytes += blocks[i].size;
	}
	pthread_mutex_unlock(&arena_lock);
	return n;
}

struct sc_cu_block *sc_arena_blocks(size_t *n)
{
	*n = blocks_n;
	return blocks;
}

struct sc_cu_reservation *sc_arena_reservations(size_t *n)
{
	*n = reservations_n;
	return reservations;
}

/* The arena of @c's device, its addresses reserved in the proxy; NULL when it cannot be. */
static struct device_arena *arena_of(struct sc_cu_ctx *c, CUresult *res)
{
	struct device_arena *d;

	*res = CUDA_SUCCESS;
	if (c->dev < 0 || c->dev >= MAX_DEVICES) {
		*res = CUDA_ERROR_INVALID_DEVICE;
		return NULL;
	}
	d = &devs[c->dev];
	if (!d->reserved)
		*res = reserve(c, d);
	return *res == CUDA_SUCCESS ? d : NULL;
}

CUresult sc_arena_take_va(struct sc_cu_ctx *c, size_t size, size_t align, CUdeviceptr *out)
{
	struct device_arena *d;
	CUresult res;

	pthread_mutex_lock(&arena_lock);
	if ((d = arena_of(c, &res))) {
		align = align ? round_up(align, d->granularity) : d->granularity;
		if (!size || size % d->granularity)
			res = CUDA_ERROR_INVALID_VALUE;
		else if (!va_alloc_aligned(d, c->dev, size, align, out))
			res = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&arena_lock);
	return res;
}

void sc_arena_give_va(CUdevice dev, CUdeviceptr va, size_t size)
{
	if (dev < 0 || dev >= MAX_DEVICES)
		return;
	pthread_mutex_lock(&arena_lock);
	va_free(&devs[dev], va, size);
	pthread_mutex_unlock(&arena_lock);
}

size_t sc_arena_granularity(const struct sc_cu_ctx *c)
{
	return c->dev >= 0 && c->dev < MAX_DEVICES ? devs[c->dev].granularity : 0;
}

CUresult sc_arena_map_home(struct sc_cu_ctx *c, struct sc_cu_memhandle *h)
{
	struct sc_cu_block *b;
	CUresult res;

	pthread_mutex_lock(&arena_lock);
	res = map_block(c, h->home, h->size, 0, h, &b);
	pthread_mutex_unlock(&arena_lock);
	return res;
}

CUresult sc_arena_unmap_home(struct sc_cu_memhandle *h)
{
	struct sc_cu_block *b;
	CUresult res = CUDA_ERROR_INVALID_VALUE;

	pthread_mutex_lock(&arena_lock);
	if ((b = find_locked(h->home)) && b->vmm == h)
		res = unmap_block(b); /* its addresses go back to the arena too */
	pthread_mutex_unlock(&arena_lock);
	return res;
}

/* Read and write for the owner and the devices of @mask; none for @revoked (-1: no one). */
static size_t access_descs(CUdevice owner, uint64_t mask, int revoked, CUmemAccessDesc *out)
{
	size_t n = 0;

	for (int d = 0; d < 64; d++) {
		unsigned long long flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

		if (d == revoked && !(mask >> d & 1))
			flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
		else if (d != owner && !(mask >> d & 1))
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		out[n].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		out[n].location.id = d;
		out[n++].flags = flags;
	}
	return n;
}

CUresult sc_arena_peer_access(CUdevice dev, int revoked)
{
	CUmemAccessDesc descs[64];
	CUresult res = CUDA_SUCCESS;

	pthread_mutex_lock(&arena_lock);
	size_t n = access_descs(dev, sc_peer_mask(dev), revoked, descs);

	for (size_t i = 0; i < blocks_n && res == CUDA_SUCCESS; i++) {
		struct sc_req r = { .op = SC_OP_MEM_SET_ACCESS, .ctx = blocks[i].ctx->o.real,
				    .a = { blocks[i].addr, blocks[i].size, n }, .in = descs,
				    .in_len = (uint32_t)(n * sizeof(descs[0])) };

		if (blocks[i].dev == dev)
			res = sc_cu_call(&r);
	}
	pthread_mutex_unlock(&arena_lock);
	return res;
}
