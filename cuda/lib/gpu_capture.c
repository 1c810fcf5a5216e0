/* SPDX-License-Identifier: MIT */
/*
 * gpu_capture.c - the device memory of a checkpoint copied aside at its
 * instant, so that the program's CUDA calls go on while the image is written.
 *
 * With the API lock held and the GPU idle, every piece a checkpoint writes is
 * copied, device to device, into an area of spare memory of its context's
 * device (measured on the H200: 8 GiB in 4 ms, the allocation 1 ms). The lock
 * is then let go (sc_hooks' thawed()), and the write reads the copies on a
 * stream of its own into buffers of the channel's heap, on which no call of
 * the program waits, and whose failures never become the program's errors.
 *
 * An area is taken only where the device keeps a spare besides it, and a
 * program that still finds the device full while the write runs waits for
 * the write and tries again (sc_capture_wait_room()): no allocation fails
 * that would not have failed without the checkpoint. Where there is no room,
 * the pieces are read in place as before, and the log says so.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/sc_core.h"
#include "core/sc_settings.h"
#include "cuda/lib/cuda_internal.h"
#include "cuda/lib/gpu_capture.h"
#include "format/sc_array.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"

#define AREAS 16       /* contexts one capture serves; more: read in place */
#define ALIGN 256u     /* CUDA's allocation alignment, for every copy */
#define SPARE_MIN (256ull << 20)

struct area {
	uint64_t ctx;    /* the proxy's context */
	uint64_t bytes;  /* asked for */
	uint64_t used;   /* handed out to pieces */
	uint64_t addr;   /* device address, 0: not allocated */
	uint64_t stream; /* the proxy's stream for the copies */
};

static struct {
	struct area areas[AREAS];
	size_t n_areas;
	uint64_t **slots;       /* the slabs' bitmaps as they were at the instant */
	size_t n_slots, slots_cap;
	void *buffers;          /* the reads' buffers in the heap, or NULL */
	bool holds_device;      /* an area is allocated (futex-free: under room_lock) */
} cap;

static pthread_mutex_t room_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t room_freed = PTHREAD_COND_INITIALIZER;

static uint64_t align_up(uint64_t n)
{
	return (n + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
}

static struct area *area_of(uint64_t ctx)
{
	for (size_t i = 0; i < cap.n_areas; i++)
		if (cap.areas[i].ctx == ctx)
			return &cap.areas[i];
	if (cap.n_areas == AREAS)
		return NULL;
	cap.areas[cap.n_areas] = (struct area){ .ctx = ctx };
	return &cap.areas[cap.n_areas++];
}

static void set_holds_device(bool holds)
{
	pthread_mutex_lock(&room_lock);
	cap.holds_device = holds;
	if (!holds)
		pthread_cond_broadcast(&room_freed);
	pthread_mutex_unlock(&room_lock);
}

/* The areas and their streams, as far as they were made. */
static void free_areas(void)
{
	for (size_t i = 0; i < cap.n_areas; i++) {
		struct area *a = &cap.areas[i];
		struct sc_req f = { .op = SC_OP_CAPTURE_FREE, .ctx = a->ctx, .a = { a->addr } };
		struct sc_req d = { .op = SC_OP_STREAM_DESTROY, .ctx = a->ctx, .a = { a->stream } };

		if (a->addr)
			sc_cu_call(&f);
		if (a->stream)
			sc_cu_call(&d);
	}
	cap.n_areas = 0;
	set_holds_device(false);
}

static void free_slots(void)
{
	for (size_t i = 0; i < cap.n_slots; i++)
		free(cap.slots[i]);
	free(cap.slots);
	cap.slots = NULL;
	cap.n_slots = cap.slots_cap = 0;
}

/* The bytes each context's pieces take; false where there are more contexts than areas. */
static bool size_areas(const struct sc_gpu_piece *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct area *a = area_of(p[i].ctx);

		if (!a)
			return false;
		a->bytes += align_up(p[i].d.len);
	}
	return true;
}

/* A stream and an area for each context: false where a device has no room. */
static bool make_areas(void)
{
	for (size_t i = 0; i < cap.n_areas; i++) {
		struct area *a = &cap.areas[i];
		struct sc_req st = { .op = SC_OP_STREAM_CREATE, .ctx = a->ctx,
				     .a = { CU_STREAM_NON_BLOCKING, 0 } };
		struct sc_req m = { .op = SC_OP_CAPTURE_AREA, .ctx = a->ctx,
				    .a = { a->bytes, SPARE_MIN } };
		CUresult res;

		if ((res = sc_cu_call(&st)) != CUDA_SUCCESS) {
			sc_log(SC_LOG_INFO, "checkpoint: no stream for the device memory's copy: "
			       "%s", sc_cu_result_name(res));
			return false;
		}
		a->stream = st.a[0];
		if ((res = sc_cu_call(&m)) != CUDA_SUCCESS) {
			sc_log(SC_LOG_INFO, "checkpoint: no room on the device for a copy of its "
			       "%llu MiB of device memory (%s): the program's CUDA calls wait until "
			       "the image is written (SELFCKPT_CUDA_CAPTURE)",
			       (unsigned long long)(a->bytes >> 20), sc_cu_result_name(res));
			return false;
		}
		set_holds_device(true);
		a->addr = m.a[0];
	}
	return true;
}

/* A slab's bitmap as it is now: the program may allocate in the slab while the write runs. */
static int keep_slots(struct sc_gpu_piece *p)
{
	size_t words = (p->d.len / p->slot_size + 63) / 64;
	uint64_t *copy;

	if (sc_grow((void **)&cap.slots, &cap.slots_cap, cap.n_slots + 1, sizeof(*cap.slots)) ||
	    !(copy = malloc(words * 8)))
		return -ENOMEM;
	memcpy(copy, p->slots, words * 8);
	cap.slots[cap.n_slots++] = copy;
	p->slots = copy;
	return 0;
}

/* Post the copy of @p into its area; it reads from there from now on. */
static CUresult copy_aside(struct sc_gpu_piece *p)
{
	struct area *a = area_of(p->ctx);
	uint64_t dst = a->addr + a->used;
	struct sc_req r = { .op = SC_OP_COPY, .ctx = p->ctx,
			    .a = { dst, p->src, p->d.len, SC_COPY_DTOD, a->stream } };
	CUDA_MEMCPY3D c;

	if (p->array) {
		if (!sc_array_piece_copy(&p->array->desc, (CUarray)(uintptr_t)p->array->o.real,
					 p->d.offset, p->d.len, NULL, false, &c))
			return CUDA_ERROR_INVALID_VALUE;
		c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		c.dstHost = NULL;
		c.dstDevice = dst;
		r = (struct sc_req){ .op = SC_OP_COPY_3D, .ctx = p->ctx, .a = { a->stream },
				     .in = &c, .in_len = sizeof(c) };
	}
	a->used += align_up(p->d.len);
	p->src = dst;
	p->stream = a->stream;
	p->array = NULL;
	return sc_cu_post(&r);
}

static CUresult copy_all_aside(struct sc_gpu_piece *p, size_t n)
{
	CUresult res = CUDA_SUCCESS;

	for (size_t i = 0; i < n && res == CUDA_SUCCESS; i++) {
		if (p[i].slots && keep_slots(&p[i]) < 0)
			return CUDA_ERROR_OUT_OF_MEMORY;
		res = copy_aside(&p[i]);
	}
	for (size_t i = 0; i < cap.n_areas && res == CUDA_SUCCESS; i++) {
		struct sc_req s = { .op = SC_OP_STREAM_SYNC, .ctx = cap.areas[i].ctx,
				    .a = { cap.areas[i].stream } };

		res = sc_cu_call(&s);
	}
	/* the program's calls are held and its earlier errors taken: any is a copy's */
	return res == CUDA_SUCCESS ? sc_cu_take_sticky() : res;
}

int sc_capture_take(struct sc_gpu_piece *p, size_t n)
{
	double t0 = sc_log_seconds();
	uint64_t bytes = 0;
	CUresult res;

	if (sc_settings()->cuda_capture == SC_CUDA_CAPTURE_OFF || !n)
		return SC_CAPTURED_NONE;
	__atomic_store_n(&sc_ch_header(sc_cu.base)->drain_error, 0, __ATOMIC_RELEASE);
	if (!size_areas(p, n)) {
		sc_log(SC_LOG_INFO, "checkpoint: device memory of more than %d contexts is read "
		       "in place: the program's CUDA calls wait until the image is written", AREAS);
		sc_capture_release();
		return SC_CAPTURED_NONE;
	}
	if (!make_areas()) {
		sc_capture_release();
		return SC_CAPTURED_NONE;
	}
	if ((res = copy_all_aside(p, n)) != CUDA_SUCCESS) {
		sc_capture_release();
		return sc_err(SELFCKPT_ECUDA, "cannot copy device memory aside for the "
			      "checkpoint: %s", sc_cu_result_name(res));
	}
	for (size_t i = 0; i < cap.n_areas; i++)
		bytes += cap.areas[i].bytes;
	sc_log(SC_LOG_DEBUG, "checkpoint: %.1f MiB of device memory copied aside in %.1f ms",
	       (double)bytes / (1 << 20), (sc_log_seconds() - t0) * 1e3);
	return SC_CAPTURED_DEVICE;
}

int sc_capture_read(const struct sc_gpu_piece *p, void *host, uint32_t *ticket)
{
	struct sc_req r = { .op = SC_OP_COPY, .ctx = p->ctx,
			    .flags = SC_MSG_SYNC_STREAM | SC_MSG_DRAIN,
			    .a = { (uint64_t)(uintptr_t)host, p->src, p->d.len, SC_COPY_DTOH,
				   p->stream } };
	CUresult res = sc_cu_post(&r);

	*ticket = r.ticket;
	if (res != CUDA_SUCCESS)
		return sc_err(SELFCKPT_ECUDA, "cannot copy device memory at 0x%llx for the "
			      "checkpoint: %s", (unsigned long long)p->d.addr,
			      sc_cu_result_name(res));
	return 0;
}

int sc_capture_failed(void)
{
	struct sc_ch_header *h = sc_ch_header(sc_cu.base);
	CUresult res = (CUresult)__atomic_load_n(&h->drain_error, __ATOMIC_ACQUIRE);

	if (res == CUDA_SUCCESS)
		return 0;
	return sc_err(SELFCKPT_ECUDA, "cannot copy device memory for the checkpoint: %s "
		      "failed: %s", sc_op_name(h->drain_op), sc_cu_result_name(res));
}

/*
 * Each buffer starts at a multiple of @len from the heap's start: with @len
 * dividing SC_CH_HEAP_PIECE, no buffer crosses from one of the heap's
 * registrations to the next, which one copy may not do.
 */
void *sc_capture_buffers(unsigned n, size_t len)
{
	uint64_t heap = (uint64_t)(uintptr_t)sc_cu.base + SC_CH_HEAP_OFF, off;

	if (!cap.buffers && sc_host_alloc((n + 1) * len, &cap.buffers) != CUDA_SUCCESS) {
		cap.buffers = NULL;
		sc_err(ENOMEM, "no pinned host memory for the checkpoint's %u buffers of %zu "
		       "MiB (SELFCKPT_CUDA_PINNED_MB)", n, len >> 20);
		return NULL;
	}
	off = (uint64_t)(uintptr_t)cap.buffers - heap;
	return (char *)(uintptr_t)(heap + (off + len - 1) / len * len);
}

void sc_capture_release(void)
{
	if (cap.buffers)
		sc_host_free(cap.buffers);
	cap.buffers = NULL;
	free_areas();
	free_slots();
}

void sc_capture_forget(void)
{
	cap.buffers = NULL; /* the restored heap never held them: allocated after the instant */
	cap.n_areas = 0;
	set_holds_device(false);
	free_slots();
}

bool sc_capture_wait_room(void)
{
	bool held;

	pthread_mutex_lock(&room_lock);
	held = cap.holds_device;
	while (cap.holds_device)
		pthread_cond_wait(&room_freed, &room_lock);
	pthread_mutex_unlock(&room_lock);
	if (held)
		sc_log(SC_LOG_DEBUG, "the device was full while a checkpoint's copy of device "
		       "memory was held: tried again once it was freed");
	return held;
}
