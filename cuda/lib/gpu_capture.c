/* SPDX-License-Identifier: MIT */
/*
 * gpu_capture.c - the device memory of a checkpoint copied aside at its
 * instant, so that the program's CUDA calls go on while the image is written.
 *
 * With the API lock held and the GPU idle, every piece a checkpoint writes is
 * copied into an area of spare memory of its context's device (measured on
 * the H200: 8 GiB in 4 ms, the allocation 1 ms), or, where a device lacks
 * room, into pinned host memory of the channel (8 GiB in 0.16 s). The lock is
 * then let go (sc_hooks' thawed()), and the write reads the copies: on the
 * device, on a stream of its own into buffers of the channel's heap; in host
 * memory, in place. No call of the program waits for those reads, and their
 * failures never become the program's errors.
 *
 * Host memory must be pinned before it takes a copy, which costs far more
 * than the copy (8 GiB: 6 s for fresh pages). So it is set aside before the
 * API lock is taken (sc_capture_prepare()), from an estimate, while the
 * program runs; the heap keeps it pinned once freed, as it keeps all pinned
 * memory the program freed, and the next checkpoint takes it again at no
 * cost. It is bounded: the heap's size (SELFCKPT_CUDA_PINNED_MB), and half
 * of the memory the machine has available for newly pinned pages.
 *
 * A device area is taken only where the device keeps a spare besides it, and
 * a program that still finds the device full while the write runs waits for
 * the write and tries again (sc_capture_wait_room()): no allocation fails
 * that would not have failed without the checkpoint. Where neither has room,
 * the pieces are read in place as before, and the log says so.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
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
#define HOST_SLACK (64ull << 20) /* module globals and arrays, besides the arena's blocks */

struct area {
	uint64_t ctx;    /* the proxy's context */
	uint64_t bytes;  /* its pieces' bytes */
	uint64_t addr;   /* device area, 0: none */
	uint64_t stream; /* the proxy's stream for the copies */
	uint64_t used;   /* of the device area, handed out to pieces */
};

static struct {
	struct area areas[AREAS];
	size_t n_areas;
	char *host;             /* pinned host memory set aside before the lock, or NULL */
	uint64_t host_len;
	uint64_t host_used;
	uint64_t **slots;       /* the slabs' bitmaps as they were at the instant */
	size_t n_slots, slots_cap;
	void *buffers;          /* the reads' buffers in the heap, or NULL */
	bool holds_device;      /* a device area is allocated (under room_lock) */
} cap;

static pthread_mutex_t room_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t room_freed = PTHREAD_COND_INITIALIZER;

static uint64_t align_up(uint64_t n)
{
	return (n + ALIGN - 1) & ~(uint64_t)(ALIGN - 1);
}

static bool device_allowed(void)
{
	enum sc_cuda_capture c = sc_settings()->cuda_capture;

	return c == SC_CUDA_CAPTURE_AUTO || c == SC_CUDA_CAPTURE_DEVICE;
}

static bool host_allowed(void)
{
	enum sc_cuda_capture c = sc_settings()->cuda_capture;

	return c == SC_CUDA_CAPTURE_AUTO || c == SC_CUDA_CAPTURE_HOST;
}

/* ---- before the lock: pinned host memory, where a device may lack room ---- */

/* Whether @ctx's device has room for @bytes besides the spare (an estimate). */
static bool device_has_room(uint64_t ctx, uint64_t bytes)
{
	struct sc_req r = { .op = SC_OP_MEM_GET_INFO, .ctx = ctx };

	if (sc_cu_call(&r) != CUDA_SUCCESS)
		return false;
	return r.a[0] >= bytes && r.a[0] - bytes >= SPARE_MIN &&
	       r.a[0] - bytes >= r.a[1] / SC_CAPTURE_SPARE_PART;
}

/* MemAvailable of /proc/meminfo, in bytes; 0 where it cannot be read. */
static uint64_t memory_available(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[128];
	unsigned long long kib = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return (uint64_t)kib << 10;
}

/*
 * Host memory for the pieces a device may have no room for, as the arena's
 * blocks are now; the program may allocate more before the instant, and the
 * capture then reads in place. A heap piece boundary may cost a piece its
 * room: one copy may not cross one (see host_place()).
 */
static uint64_t host_wanted(void)
{
	struct sc_arena_usage u[AREAS];
	size_t n = sc_arena_usage(u, AREAS);
	bool host_only = !device_allowed();
	uint64_t want = 0;

	for (size_t i = 0; i < n; i++)
		if (host_only || !device_has_room(u[i].ctx, u[i].bytes))
			want += u[i].bytes;
	if (!want)
		return 0;
	want += HOST_SLACK;
	return want + (want / SC_CH_HEAP_PIECE + 1) * SC_CH_STAGING_BUF;
}

void sc_capture_prepare(void)
{
	uint64_t want, pin, avail, pinned = 0;
	double t0 = sc_log_seconds();
	void *p;

	if (!host_allowed() || cap.host || !(want = host_wanted()))
		return;
	pin = sc_host_pin_needed(want);
	avail = memory_available();
	if (pin && pin > avail / 2) {
		sc_log(SC_LOG_INFO, "checkpoint: no room on the device for a copy of its memory, "
		       "and pinning %llu MiB of host memory for one would take more than half "
		       "the %llu MiB available: the program's CUDA calls wait until the image "
		       "is written", (unsigned long long)(pin >> 20),
		       (unsigned long long)(avail >> 20));
		return;
	}
	if (sc_host_alloc_last(want, &p, &pinned) != CUDA_SUCCESS) {
		sc_log(SC_LOG_INFO, "checkpoint: no room on the device for a copy of its memory, "
		       "and none in the pinned host memory (%llu MiB more wanted; "
		       "SELFCKPT_CUDA_PINNED_MB): the program's CUDA calls wait until the image "
		       "is written", (unsigned long long)(want >> 20));
		return;
	}
	cap.host = p;
	cap.host_len = want;
	if (pinned)
		sc_log(SC_LOG_DEBUG, "checkpoint: %.1f MiB of host memory pinned for the copy of "
		       "device memory in %.3f s", (double)pinned / (1 << 20),
		       sc_log_seconds() - t0);
}

const void *sc_capture_host_area(void)
{
	return cap.host;
}

/* ---- at the instant ---- */

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

static void free_device_areas(void)
{
	for (size_t i = 0; i < cap.n_areas; i++) {
		struct area *a = &cap.areas[i];
		struct sc_req f = { .op = SC_OP_CAPTURE_FREE, .ctx = a->ctx,
				    .a = { a->addr, a->stream } };

		if (a->addr)
			sc_cu_call(&f);
		a->addr = 0;
		a->used = 0;
	}
	set_holds_device(false);
}

static void free_areas(void)
{
	free_device_areas();
	for (size_t i = 0; i < cap.n_areas; i++) {
		struct sc_req d = { .op = SC_OP_STREAM_DESTROY, .ctx = cap.areas[i].ctx,
				    .a = { cap.areas[i].stream } };

		if (cap.areas[i].stream)
			sc_cu_call(&d);
	}
	cap.n_areas = 0;
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

static bool make_streams(void)
{
	for (size_t i = 0; i < cap.n_areas; i++) {
		struct sc_req st = { .op = SC_OP_STREAM_CREATE, .ctx = cap.areas[i].ctx,
				     .a = { CU_STREAM_NON_BLOCKING, 0 } };
		CUresult res = sc_cu_call(&st);

		if (res != CUDA_SUCCESS) {
			sc_log(SC_LOG_INFO, "checkpoint: no stream for the copy of device memory "
			       "(%s): the program's CUDA calls wait until the image is written",
			       sc_cu_result_name(res));
			return false;
		}
		cap.areas[i].stream = st.a[0];
	}
	return true;
}

/* An area of each context's device: false where one has no room. */
static bool make_device_areas(void)
{
	for (size_t i = 0; i < cap.n_areas; i++) {
		struct area *a = &cap.areas[i];
		struct sc_req m = { .op = SC_OP_CAPTURE_AREA, .ctx = a->ctx,
				    .a = { a->bytes, SPARE_MIN, SC_CAPTURE_SPARE_PART } };

		if (sc_cu_call(&m) != CUDA_SUCCESS)
			return false;
		set_holds_device(true);
		a->addr = m.a[0];
	}
	return true;
}

/*
 * Where piece @len goes in the host area, from cap.host_used on: a copy may
 * not cross from one of the heap's registrations to the next. Return false
 * where the area ends first.
 */
static bool host_place(uint64_t len, char **at)
{
	uint64_t heap = (uint64_t)(uintptr_t)sc_cu.base + SC_CH_HEAP_OFF;
	uint64_t off = align_up(cap.host_used);
	uint64_t first = ((uint64_t)(uintptr_t)cap.host + off - heap) / SC_CH_HEAP_PIECE;
	uint64_t last = ((uint64_t)(uintptr_t)cap.host + off + len - 1 - heap) / SC_CH_HEAP_PIECE;

	if (first != last)
		off = heap + last * SC_CH_HEAP_PIECE - (uint64_t)(uintptr_t)cap.host;
	if (off + len > cap.host_len)
		return false;
	*at = cap.host + off;
	cap.host_used = off + len;
	return true;
}

/* Whether every piece fits the host area, laid out as the copies will be. */
static bool host_has_room(const struct sc_gpu_piece *p, size_t n)
{
	bool fits = cap.host != NULL;
	char *at;

	cap.host_used = 0;
	for (size_t i = 0; i < n && fits; i++)
		fits = host_place(p[i].d.len, &at);
	cap.host_used = 0;
	return fits;
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

/* Post the copy of @p aside; it is read from there from now on. */
static CUresult copy_aside(struct sc_gpu_piece *p, int where)
{
	struct area *a = area_of(p->ctx);
	char *host = NULL;
	uint64_t dst;
	struct sc_req r;
	CUDA_MEMCPY3D c;

	if (where == SC_CAPTURED_HOST) {
		if (!host_place(p->d.len, &host))
			return CUDA_ERROR_OUT_OF_MEMORY; /* host_has_room() said it fits */
		dst = (uint64_t)(uintptr_t)host;
	} else {
		dst = a->addr + a->used;
		a->used += align_up(p->d.len);
	}
	r = (struct sc_req){ .op = SC_OP_COPY, .ctx = p->ctx,
			     .a = { dst, p->src, p->d.len,
				    host ? SC_COPY_DTOH : SC_COPY_DTOD, a->stream } };
	if (p->array) {
		if (!sc_array_piece_copy(&p->array->desc, (CUarray)(uintptr_t)p->array->o.real,
					 p->d.offset, p->d.len, host, false, &c))
			return CUDA_ERROR_INVALID_VALUE;
		if (!host) {
			c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
			c.dstDevice = dst;
		}
		r = (struct sc_req){ .op = SC_OP_COPY_3D, .ctx = p->ctx, .a = { a->stream },
				     .in = &c, .in_len = sizeof(c) };
	}
	p->src = dst;
	p->stream = a->stream;
	p->array = NULL;
	return sc_cu_post(&r);
}

static CUresult copy_all_aside(struct sc_gpu_piece *p, size_t n, int where)
{
	CUresult res = CUDA_SUCCESS;

	cap.host_used = 0;
	for (size_t i = 0; i < n && res == CUDA_SUCCESS; i++) {
		if (p[i].slots && keep_slots(&p[i]) < 0)
			return CUDA_ERROR_OUT_OF_MEMORY;
		res = copy_aside(&p[i], where);
	}
	for (size_t i = 0; i < cap.n_areas && res == CUDA_SUCCESS; i++) {
		struct sc_req s = { .op = SC_OP_STREAM_SYNC, .ctx = cap.areas[i].ctx,
				    .a = { cap.areas[i].stream } };

		res = sc_cu_call(&s);
	}
	/* the program's calls are held and its earlier errors taken: any is a copy's */
	return res == CUDA_SUCCESS ? sc_cu_take_sticky() : res;
}

static uint64_t total_bytes(void)
{
	uint64_t bytes = 0;

	for (size_t i = 0; i < cap.n_areas; i++)
		bytes += cap.areas[i].bytes;
	return bytes;
}

/* Where the copies go: a device area for each context, else the host area, else none. */
static int choose(const struct sc_gpu_piece *p, size_t n)
{
	if (device_allowed() && make_device_areas())
		return SC_CAPTURED_DEVICE;
	free_device_areas();
	if (host_allowed() && host_has_room(p, n))
		return SC_CAPTURED_HOST;
	sc_log(SC_LOG_INFO, "checkpoint: no room for a copy of the %llu MiB of device memory "
	       "%s%s: the program's CUDA calls wait until the image is written "
	       "(SELFCKPT_CUDA_CAPTURE)", (unsigned long long)(total_bytes() >> 20),
	       device_allowed() ? "on the device" : "",
	       !host_allowed() ? "" : device_allowed() ? " or in pinned host memory" :
	       "in pinned host memory");
	return SC_CAPTURED_NONE;
}

int sc_capture_take(struct sc_gpu_piece *p, size_t n)
{
	double t0 = sc_log_seconds();
	int where;
	CUresult res;

	if (sc_settings()->cuda_capture == SC_CUDA_CAPTURE_OFF || !n) {
		sc_capture_release();
		return SC_CAPTURED_NONE;
	}
	__atomic_store_n(&sc_ch_header(sc_cu.base)->drain_error, 0, __ATOMIC_RELEASE);
	if (!size_areas(p, n)) {
		sc_log(SC_LOG_INFO, "checkpoint: device memory of more than %d contexts is read "
		       "in place: the program's CUDA calls wait until the image is written", AREAS);
		sc_capture_release();
		return SC_CAPTURED_NONE;
	}
	if (!make_streams() || (where = choose(p, n)) == SC_CAPTURED_NONE) {
		sc_capture_release();
		return SC_CAPTURED_NONE;
	}
	if ((res = copy_all_aside(p, n, where)) != CUDA_SUCCESS) {
		sc_capture_release();
		return sc_err(SELFCKPT_ECUDA, "cannot copy device memory aside for the "
			      "checkpoint: %s", sc_cu_result_name(res));
	}
	sc_log(SC_LOG_DEBUG, "checkpoint: %.1f MiB of device memory copied aside, %s, in %.1f ms",
	       (double)total_bytes() / (1 << 20),
	       where == SC_CAPTURED_HOST ? "to host memory" : "on the device",
	       (sc_log_seconds() - t0) * 1e3);
	return where;
}

/* ---- the write ---- */

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

/* ---- the end ---- */

void sc_capture_release(void)
{
	if (cap.buffers)
		sc_host_free(cap.buffers);
	if (cap.host)
		sc_host_free(cap.host); /* still pinned: the next checkpoint takes it again */
	cap.buffers = NULL;
	cap.host = NULL;
	cap.host_len = cap.host_used = 0;
	free_areas();
	free_slots();
}

void sc_capture_forget(void)
{
	/* the host area was the heap's at the instant: the restored heap has it, unpinned */
	if (cap.host)
		sc_host_free(cap.host);
	cap.host = NULL;
	cap.host_len = cap.host_used = 0;
	cap.buffers = NULL; /* allocated after the instant: the restored heap never had them */
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
