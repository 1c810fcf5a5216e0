/* SPDX-License-Identifier: MIT */
/*
 * gpu_checkpoint.c - the GPU's part of a checkpoint (core/sc_hooks.h).
 *
 * prepare: take the API lock for writing, so no call is in flight and every
 *          later one waits until the GPU state is saved; synchronise every
 *          context; set aside room for the pinned host memory.
 * frozen:  copy the pinned host memory while no thread can write it (it is
 *          shared with the proxy, so the snapshot's copy-on-write cannot keep
 *          it).
 *          Managed memory's host copy takes what the GPU wrote (managed.c).
 * write:   the resource summary (CUDA_LOG), then device memory in pieces of
 *          one staging buffer (DEVMEM), each copied by the proxy into the
 *          channel while earlier pieces are being compressed and written;
 *          all-zero pieces are left out (found by the GPU itself where the
 *          proxy can, else on the host). Then the pinned host memory.
 * done:    let the application's CUDA calls go on.
 *
 * The rest of what a restart needs - contexts, modules, functions, streams,
 * the arena's layout - is the library's own memory, in the image already.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/sc_core.h"
#include "core/sc_hooks.h"
#include "cuda/shared/gpu_records.h"
#include "cuda/lib/graph.h"
#include "cuda/lib/driver_mode.h"
#include "cuda/lib/managed.h"
#include "format/sc_array.h"
#include "format/sc_format.h"
#include "format/sc_log.h"

static uint64_t sc_page_round(uint64_t n)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	return (n + page - 1) / page * page;
}

static struct {
	bool locked;      /* prepare() took the API lock */
	void *host_copy;  /* the pinned host memory as it was at the freeze */
	uint64_t host_len;
} ck;

/* Every context that exists in the proxy: created ones, retained primary ones. */
static bool ctx_live(const struct sc_cu_obj *o)
{
	const struct sc_cu_ctx *c = (const struct sc_cu_ctx *)o;

	return o->kind == SC_K_CTX && (!c->primary || c->retains > 0);
}

static int synchronise_all(void)
{
	for (struct sc_cu_obj *o = sc_obj_first(); o; o = o->next) {
		struct sc_req r = { .op = SC_OP_CTX_SYNC, .ctx = o->real };
		CUresult res;

		if (!ctx_live(o))
			continue;
		if ((res = sc_cu_call(&r)) != CUDA_SUCCESS)
			return sc_err(SELFCKPT_ECUDA, "cannot synchronise the GPU for the "
				      "checkpoint: %s", sc_cu_result_name(res));
	}
	if (sc_cu_take_sticky() != CUDA_SUCCESS)
		sc_log(SC_LOG_WARN, "an asynchronous CUDA call had failed before the checkpoint");
	sc_mempool_synchronised(NULL, NULL, true); /* no kept free goes into the image */
	return 0;
}

static int proxy_prepare(void)
{
	int err;

	/*
	 * Taken even before the proxy runs: cuInit() starts it as a call in
	 * flight, so the instant is never inside that start (the channel's
	 * descriptor still open, the proxy not yet answering); it waits for it.
	 */
	sc_cu_lock_write();
	ck.locked = true;
	if (!sc_cu.started)
		return 0;
	if (sc_cu.dead) {
		err = sc_err(SELFCKPT_ECUDA, "the GPU proxy is gone: the GPU state is lost, no "
			     "checkpoint can hold it");
		goto fail;
	}
	/* before the GPU is synchronised, which would spoil a capture under way */
	if ((err = sc_graphs_refuse_capture()) < 0 || (err = synchronise_all()) < 0 ||
	    (err = sc_managed_checkpoint()) < 0 || (err = sc_graphs_checkpoint()) < 0)
		goto fail;
	ck.host_len = sc_host_extent();
	if (ck.host_len) {
		ck.host_copy = mmap(NULL, ck.host_len, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ck.host_copy == MAP_FAILED) {
			ck.host_copy = NULL;
			err = sc_err(ENOMEM, "no memory to copy %llu bytes of pinned host memory",
				     (unsigned long long)ck.host_len);
			goto fail;
		}
		/* written once, as pinned host memory, not again as process memory */
		sc_skip_add((uint64_t)(uintptr_t)ck.host_copy,
			    (uint64_t)(uintptr_t)ck.host_copy + sc_page_round(ck.host_len));
	}
	return 0;
fail:
	ck.locked = false;
	sc_cu_unlock_write();
	return err;
}

/* The driver in the process first (driver_ckpt.c), then the proxy's GPU state. */
static int prepare(void)
{
	int err;

	if ((err = sc_cu_driver_prepare()) < 0)
		return err;
	if ((err = proxy_prepare()) < 0)
		sc_cu_driver_done();
	return err;
}

/* Raw code, as frozen(). */
static int every_thread(int tid)
{
	(void)tid;
	return 1;
}

/*
 * Raw: every other thread is stopped, possibly inside malloc.
 *
 * With the proxy started, the program's threads are held at a restart until
 * the GPU state is back: the channel, and the pinned host memory in it, is
 * not part of the image, and its addresses are unmapped until the restart
 * has made it again. Measured (H200): a thread that was reading pinned
 * memory when the checkpoint stopped it went on reading, and crashed the
 * restored process, while another thread was still restarting the proxy.
 * None of them is in a CUDA call, whose lock the checkpoint holds.
 */
static void frozen(void)
{
	sc_cu_driver_frozen();
	if (ck.locked && sc_cu.started)
		sc_threads_hold_at_restart(every_thread);
	if (ck.host_copy)
		memcpy(ck.host_copy, (char *)sc_cu.base + SC_CH_HEAP_OFF, ck.host_len);
}

void sc_cuda_checkpoint_done(int err)
{
	(void)err;
	if (ck.host_copy) {
		sc_skip_remove((uint64_t)(uintptr_t)ck.host_copy);
		munmap(ck.host_copy, ck.host_len); /* after a restart: no longer mapped */
	}
	ck.host_copy = NULL;
	ck.host_len = 0;
	if (ck.locked) {
		ck.locked = false;
		sc_cu_unlock_write();
	}
}

static int write_log(struct sc_writer *w)
{
	struct sc_cuda_summary s = { .channel = (uint64_t)(uintptr_t)sc_cu.base,
				     .host_bytes = ck.host_len };
	size_t n_blocks, payload = 0;
	struct sc_cu_block *b = sc_arena_blocks(&n_blocks);
	uint8_t meta[SC_CUDA_LOG_META];
	int err;

	for (size_t i = 0; i < n_blocks; i++)
		s.device_bytes += b[i].size;
	s.blocks = (uint32_t)n_blocks;
	for (struct sc_cu_obj *o = sc_obj_first(); o; o = o->next) {
		const struct sc_cu_module *m = (const struct sc_cu_module *)o;

		if ((o->kind == SC_K_MODULE || o->kind == SC_K_LIBRARY) && m->image) {
			s.modules++;
			payload += SC_CUDA_IMAGE_HEADER + sc_cuda_pad8(m->image_len);
		}
	}
	sc_cuda_summary_encode(&s, meta);
	if ((err = sc_writer_begin(w, SC_REC_CUDA_LOG, 0, meta, sizeof(meta), payload)) < 0)
		return err;
	for (struct sc_cu_obj *o = sc_obj_first(); o && !err; o = o->next) {
		const struct sc_cu_module *m = (const struct sc_cu_module *)o;
		static const uint8_t zeros[8];
		uint8_t h[SC_CUDA_IMAGE_HEADER];

		if ((o->kind != SC_K_MODULE && o->kind != SC_K_LIBRARY) || !m->image)
			continue;
		sc_cuda_image_header(h, o->kind == SC_K_LIBRARY, m->image_len);
		err = sc_writer_append(w, h, sizeof(h));
		if (!err)
			err = sc_writer_append(w, m->image, m->image_len);
		if (!err && sc_cuda_pad8(m->image_len) > m->image_len)
			err = sc_writer_append(w, zeros, sc_cuda_pad8(m->image_len) - m->image_len);
	}
	return err ? err : sc_writer_end(w);
}

/* One piece of device memory on its way into the image. */
struct piece {
	struct sc_devmem d;
	uint64_t ctx;
	const struct sc_cu_array *array; /* SC_DEVMEM_ARRAY */
	const struct sc_cu_block *slab;  /* a whole slab, of which only live slots are saved */
	bool has_data;                   /* the GPU found a non-zero byte in it */
};

/* One devmem record, unless the bytes are all zero where that is allowed. */
static int write_bytes(struct sc_writer *w, const struct piece *p, const uint8_t *buf)
{
	uint8_t meta[SC_DEVMEM_META];

	/* Fresh blocks are cleared at a restart: all-zero pieces need no bytes. */
	if (p->d.kind == SC_DEVMEM_DEVICE && !p->has_data && sc_page_is_zero(buf, p->d.len))
		return 0;
	sc_devmem_encode(meta, &p->d);
	return sc_writer_record(w, SC_REC_DEVMEM, SC_RF_REQUIRED, meta, sizeof(meta), buf,
				p->d.len);
}

/*
 * A slab is copied from the GPU whole (one copy beats one per allocation),
 * but only its allocated slots go into the image: a record per run of them.
 * Free slots come back cleared, like every byte no record holds.
 */
static int write_slab(struct sc_writer *w, const struct piece *p, const uint8_t *buf)
{
	const struct sc_cu_block *b = p->slab;
	uint64_t slots = b->size / b->slab_class, cls = b->slab_class;
	int err = 0;

	for (uint64_t i = 0, j; i < slots && !err; i = j) {
		struct piece run = *p;

		while (i < slots && !sc_slab_slot_used(b, i))
			i++;
		for (j = i; j < slots && sc_slab_slot_used(b, j); j++)
			;
		if (i == j)
			break;
		run.has_data = false; /* the GPU's scan covered the slab, not this run */
		run.d.addr = b->addr + i * cls;
		run.d.len = (j - i) * cls;
		err = write_bytes(w, &run, buf + i * cls);
	}
	return err;
}

static int write_piece(struct sc_writer *w, const struct piece *p, const uint8_t *buf)
{
	return p->slab ? write_slab(w, p, buf) : write_bytes(w, p, buf);
}

static CUresult fetch(const struct piece *p, unsigned k, uint32_t *ticket)
{
	void *buf = sc_ch_staging(sc_cu.base, k);
	struct sc_req r = { .op = SC_OP_COPY, .ctx = p->ctx, .flags = SC_MSG_SYNC_STREAM,
			    .a = { (uint64_t)(uintptr_t)buf, p->d.addr, p->d.len, SC_COPY_DTOH,
				   0 } };
	CUDA_MEMCPY3D c;
	CUresult res;

	if (p->array) {
		if (!sc_array_piece_copy(&p->array->desc, (CUarray)(uintptr_t)p->array->o.real,
					 p->d.offset, p->d.len, buf, false, &c))
			return CUDA_ERROR_INVALID_VALUE;
		r.op = SC_OP_COPY_3D;
		r.a[0] = 0;
		r.in = &c;
		r.in_len = sizeof(c);
	}
	res = sc_cu_post(&r);
	*ticket = r.ticket;
	return res;
}

/* Pieces through the staging buffers: up to SC_CH_STAGING_BUFS in flight. */
static int write_pieces(struct sc_writer *w, const struct piece *p, size_t n)
{
	uint32_t ticket[SC_CH_STAGING_BUFS];
	size_t issued = 0;
	CUresult res = CUDA_SUCCESS;
	int err = 0;

	for (size_t i = 0; i < n && !err; i++) {
		unsigned k = (unsigned)(i % SC_CH_STAGING_BUFS);

		for (; issued < n && issued < i + SC_CH_STAGING_BUFS && res == CUDA_SUCCESS;
		     issued++)
			res = fetch(&p[issued], (unsigned)(issued % SC_CH_STAGING_BUFS),
				    &ticket[issued % SC_CH_STAGING_BUFS]);
		if (res == CUDA_SUCCESS)
			res = sc_cu_wait_ticket(ticket[k]);
		if (res == CUDA_SUCCESS)
			res = sc_cu_take_sticky();
		if (res != CUDA_SUCCESS)
			return sc_err(SELFCKPT_ECUDA, "cannot copy device memory at 0x%llx for "
				      "the checkpoint: %s", (unsigned long long)p[i].d.addr,
				      sc_cu_result_name(res));
		err = write_piece(w, &p[i], sc_ch_staging(sc_cu.base, k));
	}
	/* an early failure leaves requests in flight: let them land first */
	for (size_t j = issued > SC_CH_STAGING_BUFS ? issued - SC_CH_STAGING_BUFS : 0;
	     err && j < issued; j++)
		sc_cu_wait_ticket(ticket[j % SC_CH_STAGING_BUFS]);
	return err;
}

static int add_piece(struct piece **v, size_t *n, size_t *cap, struct piece p)
{
	if (sc_grow((void **)v, cap, *n + 1, sizeof(**v)))
		return -ENOMEM;
	(*v)[(*n)++] = p;
	return 0;
}

/*
 * Which pieces of a block hold data, asked of the GPU (proxy_zero.c): pieces
 * it finds all zero are neither copied nor written. NULL where the proxy has
 * no scan (every piece is copied, and checked on the host).
 */
static const uint8_t *nonzero_map(const struct sc_cu_block *b, uint8_t *map, size_t cap)
{
	struct sc_req r = { .op = SC_OP_NONZERO, .ctx = b->ctx->o.real,
			    .a = { b->addr, b->size, SC_CH_STAGING_BUF }, .out = map,
			    .out_cap = (uint32_t)cap };
	size_t pieces = (b->size + SC_CH_STAGING_BUF - 1) / SC_CH_STAGING_BUF;

	if ((pieces + 7) / 8 > cap || sc_cu_call(&r) != CUDA_SUCCESS || r.out_len * 8 < pieces)
		return NULL;
	return map;
}

/*
 * How much of a block is saved: of one allocation, the bytes asked for
 * (rounded up to CUDA's 256-byte alignment), not the granularity's padding.
 */
static uint64_t saved_end(const struct sc_cu_block *b)
{
	return b->slab_class ? b->size : (b->asked + 255) & ~(uint64_t)255;
}

static int add_blocks(struct piece **v, size_t *n, size_t *cap)
{
	static uint8_t map[SC_CH_INLINE];
	size_t nb;
	struct sc_cu_block *b = sc_arena_blocks(&nb);
	int err = 0;

	for (size_t i = 0; i < nb && !err; i++) {
		/* a slab fits one staging buffer: it is copied whole, saved in parts */
		bool slab = b[i].slab_class && b[i].size <= SC_CH_STAGING_BUF;
		const uint8_t *nz;

		if (slab && !b[i].used_n)
			continue; /* kept for later allocations, nothing live in it */
		/*
		 * Its host copy, the program's memory, is in the image. Read without
		 * the managed lock: every call that changes the list is held off,
		 * and a thread stopped while reading it may be holding the lock.
		 */
		if (sc_managed_find(b[i].addr, 1))
			continue;
		nz = nonzero_map(&b[i], map, sizeof(map));
		for (uint64_t off = 0, k = 0, end = saved_end(&b[i]); off < end && !err;
		     off += SC_CH_STAGING_BUF, k++) {
			uint64_t len = end - off < SC_CH_STAGING_BUF ? end - off : SC_CH_STAGING_BUF;

			if (nz && !(nz[k / 8] & (1u << (k % 8))))
				continue;
			err = add_piece(v, n, cap, (struct piece){
				{ b[i].addr + off, len, SC_DEVMEM_DEVICE, (uint32_t)b[i].dev, 0 },
				.ctx = b[i].ctx->o.real, .slab = slab ? &b[i] : NULL,
				.has_data = nz != NULL });
		}
	}
	return err;
}

static int add_globals(struct sc_cu_module *m, struct piece **v, size_t *n, size_t *cap)
{
	struct sc_cu_ctx *c = m->o.ctx ? m->o.ctx : sc_ctx_current();
	int err = 0;

	for (size_t g = 0; g < m->globals_n && !err && c; g++) {
		if (m->globals[g].size > SC_CH_STAGING_BUF)
			return sc_err(SELFCKPT_ECUDA, "module global '%s' (%zu bytes) is larger "
				      "than a checkpoint can copy (%u bytes)", m->globals[g].name,
				      m->globals[g].size, SC_CH_STAGING_BUF);
		err = add_piece(v, n, cap, (struct piece){
			{ m->globals[g].addr, m->globals[g].size, SC_DEVMEM_GLOBAL,
			  (uint32_t)c->dev, 0 }, .ctx = c->o.real, .has_data = true });
	}
	return err;
}

static int add_array(const struct sc_cu_array *a, struct piece **v, size_t *n, size_t *cap)
{
	uint64_t off = 0, len;
	int err = 0;

	while (!err && off < a->bytes) {
		if (!(len = sc_array_piece_len(&a->desc, off)))
			return sc_err(SELFCKPT_ECUDA, "a CUDA array of %zu bytes has rows larger "
				      "than a checkpoint can copy (%u bytes)", a->bytes,
				      SC_CH_STAGING_BUF);
		err = add_piece(v, n, cap, (struct piece){
			{ (uint64_t)(uintptr_t)a, len, SC_DEVMEM_ARRAY,
			  (uint32_t)(a->o.ctx ? a->o.ctx->dev : 0), off },
			.ctx = a->o.ctx ? a->o.ctx->o.real : sc_ctx_real(), .array = a,
			.has_data = true });
		off += len;
	}
	return err;
}

/* Every arena block, every module global the application looked up, every array. */
static int list_pieces(struct piece **v, size_t *n)
{
	size_t cap = 0;
	int err;

	*v = NULL;
	*n = 0;
	err = add_blocks(v, n, &cap);
	for (struct sc_cu_obj *o = sc_obj_first(); o && !err; o = o->next) {
		if (o->kind == SC_K_MODULE || o->kind == SC_K_LIBRARY)
			err = add_globals((struct sc_cu_module *)o, v, n, &cap);
		else if (o->kind == SC_K_ARRAY)
			err = add_array((struct sc_cu_array *)o, v, n, &cap);
	}
	return err;
}

static int write_host(struct sc_writer *w)
{
	struct sc_devmem d = { (uint64_t)(uintptr_t)sc_cu.base + SC_CH_HEAP_OFF, ck.host_len,
			       SC_DEVMEM_HOST, 0, 0 };
	uint8_t meta[SC_DEVMEM_META];

	if (!ck.host_len)
		return 0;
	sc_devmem_encode(meta, &d);
	return sc_writer_record(w, SC_REC_DEVMEM, SC_RF_REQUIRED, meta, sizeof(meta),
				ck.host_copy, ck.host_len);
}

static int write_records(struct sc_writer *w)
{
	struct piece *p;
	size_t n;
	int err;

	if ((err = sc_cu_driver_write(w)) < 0 || !sc_cu.started)
		return err;
	if ((err = write_log(w)) < 0)
		return err;
	if ((err = list_pieces(&p, &n)) < 0) {
		free(p);
		return err == -ENOMEM ? sc_err(ENOMEM, "no memory to plan the device memory of "
					       "the checkpoint") : err;
	}
	err = write_pieces(w, p, n);
	free(p);
	return err ? err : write_host(w);
}

/* ---- "at the next synchronising call" ---- */

static struct {
	uint32_t wanted;  /* a checkpoint waits for a safe point (futex word) */
	uint32_t parked;  /* a thread waits at one (futex word) */
	uint32_t release; /* bumped when the checkpoint is over (futex word) */
} sp;

#define SAFE_POINT_WAIT_MS 10000

void sc_cu_sync_point(void)
{
	uint32_t gen;

	if (!__atomic_load_n(&sp.wanted, __ATOMIC_ACQUIRE))
		return;
	gen = __atomic_load_n(&sp.release, __ATOMIC_ACQUIRE);
	__atomic_add_fetch(&sp.parked, 1, __ATOMIC_SEQ_CST);
	sc_ch_wake(&sp.parked);
	while (__atomic_load_n(&sp.release, __ATOMIC_ACQUIRE) == gen)
		sc_ch_wait(&sp.release, gen, 1000);
}

/* Wait for a thread at a synchronising call, or give up and save at once. */
static void safe_point(void)
{
	uint64_t waited = 0;

	if (!sc_cu.started)
		return;
	__atomic_store_n(&sp.wanted, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&sp.parked, __ATOMIC_ACQUIRE) && waited < SAFE_POINT_WAIT_MS) {
		sc_ch_wait(&sp.parked, 0, 100);
		waited += 100;
	}
	if (!__atomic_load_n(&sp.parked, __ATOMIC_ACQUIRE))
		sc_log(SC_LOG_INFO, "no CUDA call synchronised within %d s: checkpointing at once",
		       SAFE_POINT_WAIT_MS / 1000);
}

static void safe_point_done(void)
{
	__atomic_store_n(&sp.wanted, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sp.parked, 0, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&sp.release, 1, __ATOMIC_SEQ_CST);
	sc_ch_wake(&sp.release);
}

static void done(int err)
{
	sc_cuda_checkpoint_done(err);
	sc_cu_driver_done();
}

static int restored(const char *image)
{
	int err = sc_cu_driver_restored();

	if (err >= 0)
		err = sc_cuda_restored(image);
	/* the GPU, and pinned memory, are the program's again; after a failure the
	 * process ends with the held threads still held, none of them touching either */
	if (err >= 0)
		sc_threads_release_held();
	return err;
}

void sc_cuda_hooks_install(void)
{
	static const struct sc_hooks h = {
		.prepare = prepare, .frozen = frozen, .write = write_records,
		.done = done, .restored = restored, .safe_point = safe_point,
		.safe_point_done = safe_point_done,
	};

	sc_hooks_set(&h);
}

/*
 * Installed as the library loads, not only at its cuInit(): a program that
 * never calls the library's CUDA entry points may still load the driver
 * itself (the Runtime API does), and its checkpoint must see that.
 */
__attribute__((constructor)) static void hooks_at_load(void)
{
	sc_cuda_hooks_install();
}
