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
 *          The resource summary is made, and the pieces of device memory to
 *          write are listed; all-zero pieces are left out (found by the GPU
 *          itself where the proxy can, else on the host as they are
 *          written). Where images may be incremental, the GPU hashes them
 *          (devmem_lineage.c). Where the device has room, they are copied
 *          aside (gpu_capture.c).
 * thawed:  with the pieces copied aside, let the application's CUDA calls go
 *          on: the write reads nothing the application can change.
 * write:   the resource summary (CUDA_LOG), then device memory in pieces of
 *          one staging buffer (DEVMEM), each copied by the proxy into the
 *          channel while earlier pieces are being compressed and written;
 *          an incremental image names the pieces its parent holds as they
 *          are, without their bytes. Then the pinned host memory.
 * done:    let the application's CUDA calls go on, where thawed() did not.
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
#include "cuda/lib/devmem_lineage.h"
#include "cuda/lib/driver_mode.h"
#include "cuda/lib/gpu_capture.h"
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
	uint8_t log_meta[SC_CUDA_LOG_META]; /* the resource summary, made at the instant */
	uint8_t *log;
	size_t log_len;
	struct sc_gpu_piece *pieces; /* the device memory to write */
	size_t n_pieces;
	int captured;     /* enum sc_capture_where: where the pieces are read */
} ck;

static int list_pieces(struct sc_gpu_piece **v, size_t *n);
static int make_log(void);

/* Every context that exists in the proxy: created ones, retained primary ones. */
static bool ctx_live(const struct sc_cu_obj *o)
{
	const struct sc_cu_ctx *c = (const struct sc_cu_ctx *)o;

	return o->kind == SC_K_CTX && (!c->primary || c->retains > 0);
}

/* The name of the program's last kernel, if its module is still loaded. */
static const char *last_kernel(void)
{
	const struct sc_cu_func *f = __atomic_load_n(&sc_last_launched, __ATOMIC_RELAXED);

	for (struct sc_cu_obj *o = sc_obj_first(); o && f; o = o->next)
		if (o == &f->o && f->name)
			return f->name;
	return "(unloaded)";
}

#define WAIT_SAID_MS 1000

/*
 * Request @op of the proxy and wait for it, saying once in the log, after
 * WAIT_SAID_MS, which kernel the checkpoint is likely waiting for: one
 * written as resumable (selfckpt_kernel.h) would have stopped at its next
 * item. The proxy may be waiting for the GPU on the program's behalf (a
 * cuStreamSynchronize) before it gets to the request.
 */
static CUresult wait_for_gpu(unsigned op, uint64_t ctx)
{
	struct sc_ch_header *h = sc_ch_header(sc_cu.base);
	struct sc_req r = { .op = op, .ctx = ctx, .flags = SC_MSG_DRAIN };
	double t0 = sc_log_seconds();
	CUresult res;

	__atomic_store_n(&h->drain_error, 0, __ATOMIC_RELEASE);
	if ((res = sc_cu_post(&r)) != CUDA_SUCCESS)
		return res;
	res = sc_cu_wait_ticket_for(r.ticket, WAIT_SAID_MS * 1000000ull);
	if (res == CUDA_ERROR_NOT_READY) {
		sc_objs_lock(); /* the name stays while the log line is written */
		sc_log(SC_LOG_WARN, "checkpoint: waiting for the GPU to finish its work, the last "
		       "kernel launched being '%s' (a kernel launched with "
		       "selfckpt_launch_resumable() would stop at its next item)", last_kernel());
		sc_objs_unlock();
		res = sc_cu_wait_ticket(r.ticket);
		sc_log(SC_LOG_INFO, "checkpoint: the GPU finished after %.1f s",
		       sc_log_seconds() - t0);
	}
	return res == CUDA_SUCCESS ? (CUresult)__atomic_load_n(&h->drain_error, __ATOMIC_ACQUIRE)
				   : res;
}

static int synchronise_all(void)
{
	for (struct sc_cu_obj *o = sc_obj_first(); o; o = o->next) {
		CUresult res;

		if (!ctx_live(o))
			continue;
		if ((res = wait_for_gpu(SC_OP_CTX_SYNC, o->real)) != CUDA_SUCCESS)
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
	double t0 = sc_log_seconds();
	int err;

	/*
	 * Taken even before the proxy runs: cuInit() starts it as a call in
	 * flight, so the instant is never inside that start (the channel's
	 * descriptor still open, the proxy not yet answering); it waits for it.
	 * Pinned host memory for a copy of device memory is set aside first,
	 * while the application's calls go on: pinning takes seconds.
	 */
	sc_resumable_raise(); /* first: the proxy may be waiting for a resumable kernel */
	if (sc_cu.started && !sc_cu.dead && wait_for_gpu(SC_OP_NOP, 0) == CUDA_SUCCESS)
		sc_capture_prepare();
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
	if ((err = sc_graphs_refuse_capture()) < 0 || (err = synchronise_all()) < 0)
		goto fail;
	sc_log(SC_LOG_DEBUG, "checkpoint: the GPU idle %.3f s after the checkpoint began "
	       "(resumable kernels stopped, others ended)", sc_log_seconds() - t0);
	if ((err = sc_managed_checkpoint()) < 0 || (err = sc_graphs_checkpoint()) < 0)
		goto fail;
	/* the host memory set aside for a copy of device memory is no part of the image */
	ck.host_len = sc_capture_host_area() ? sc_host_extent_without(sc_capture_host_area()) :
		      sc_host_extent();
	if ((err = make_log()) < 0 || (err = list_pieces(&ck.pieces, &ck.n_pieces)) < 0)
		goto fail;
	sc_devmem_lineage_hash(ck.pieces, ck.n_pieces); /* before the capture moves them */
	if ((err = ck.captured = sc_capture_take(ck.pieces, ck.n_pieces)) < 0)
		goto fail;
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
	sc_devmem_lineage_done(err);
	sc_cuda_checkpoint_done(err);
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

/* The copy of the device memory is the image's: the application's calls may go on. */
static void thawed(void)
{
	if (ck.captured != SC_CAPTURED_NONE && ck.locked) {
		ck.locked = false;
		sc_resumable_lower();
		sc_cu_unlock_write();
	}
}

void sc_cuda_checkpoint_done(int err)
{
	(void)err;
	sc_capture_release();
	free(ck.pieces);
	free(ck.log);
	ck.pieces = NULL;
	ck.log = NULL;
	ck.n_pieces = ck.log_len = 0;
	ck.captured = SC_CAPTURED_NONE;
	if (ck.host_copy) {
		sc_skip_remove((uint64_t)(uintptr_t)ck.host_copy);
		munmap(ck.host_copy, ck.host_len); /* after a restart: no longer mapped */
	}
	ck.host_copy = NULL;
	ck.host_len = 0;
	sc_resumable_lower(); /* restored: the instant left it raised */
	if (ck.locked) {
		ck.locked = false;
		sc_cu_unlock_write();
	}
}

/* The resource summary (CUDA_LOG) as it is at the instant, with the modules' images. */
static int make_log(void)
{
	struct sc_cuda_summary s = { .channel = (uint64_t)(uintptr_t)sc_cu.base,
				     .host_bytes = ck.host_len };
	size_t n_blocks, len = 0;
	struct sc_cu_block *b = sc_arena_blocks(&n_blocks);

	for (size_t i = 0; i < n_blocks; i++)
		s.device_bytes += b[i].size;
	s.blocks = (uint32_t)n_blocks;
	for (struct sc_cu_obj *o = sc_obj_first(); o; o = o->next) {
		const struct sc_cu_module *m = (const struct sc_cu_module *)o;

		if ((o->kind == SC_K_MODULE || o->kind == SC_K_LIBRARY) && m->image) {
			s.modules++;
			len += SC_CUDA_IMAGE_HEADER + sc_cuda_pad8(m->image_len);
		}
	}
	sc_cuda_summary_encode(&s, ck.log_meta);
	if (len && !(ck.log = calloc(1, len)))
		return sc_err(ENOMEM, "no memory to keep the CUDA modules' images (%zu bytes) "
			      "for the checkpoint", len);
	ck.log_len = len;
	len = 0;
	for (struct sc_cu_obj *o = sc_obj_first(); o; o = o->next) {
		const struct sc_cu_module *m = (const struct sc_cu_module *)o;

		if ((o->kind != SC_K_MODULE && o->kind != SC_K_LIBRARY) || !m->image)
			continue;
		sc_cuda_image_header(ck.log + len, o->kind == SC_K_LIBRARY, m->image_len);
		memcpy(ck.log + len + SC_CUDA_IMAGE_HEADER, m->image, m->image_len);
		len += SC_CUDA_IMAGE_HEADER + sc_cuda_pad8(m->image_len); /* padding: zeros */
	}
	return 0;
}

/* One devmem record of @d; an incremental image's have the wide meta, with flags. */
static int write_devmem(struct sc_writer *w, const struct sc_devmem *d, const void *buf)
{
	uint8_t meta[SC_DEVMEM_META_WIDE];
	uint32_t len = sc_devmem_encode(meta, d, sc_writer_incremental(w));

	return sc_writer_record(w, SC_REC_DEVMEM, SC_RF_REQUIRED, meta, len, buf,
				d->flags & SC_DEVMEM_PARENT ? 0 : d->len);
}

/* One devmem record, unless the bytes are all zero where that is allowed. */
static int write_bytes(struct sc_writer *w, const struct sc_gpu_piece *p, const uint8_t *buf)
{
	/* Fresh blocks are cleared at a restart: all-zero pieces need no bytes. */
	if (p->d.kind == SC_DEVMEM_DEVICE && !p->has_data && sc_page_is_zero(buf, p->d.len))
		return 0;
	return write_devmem(w, &p->d, buf);
}

/*
 * A slab is copied from the GPU whole (one copy beats one per allocation),
 * but only its allocated slots go into the image: a record per run of them.
 * Free slots come back cleared, like every byte no record holds.
 */
static bool slot_used(const struct sc_gpu_piece *p, uint64_t i)
{
	return p->slots[i / 64] & 1ull << (i % 64);
}

static int write_slab(struct sc_writer *w, const struct sc_gpu_piece *p, const uint8_t *buf)
{
	uint64_t slots = p->d.len / p->slot_size, cls = p->slot_size;
	int err = 0;

	for (uint64_t i = 0, j; i < slots && !err; i = j) {
		struct sc_gpu_piece run = *p;

		while (i < slots && !slot_used(p, i))
			i++;
		for (j = i; j < slots && slot_used(p, j); j++)
			;
		if (i == j)
			break;
		run.has_data = false; /* the GPU's scan covered the slab, not this run */
		run.d.addr = p->d.addr + i * cls;
		run.d.len = (j - i) * cls;
		err = write_bytes(w, &run, buf + i * cls);
	}
	return err;
}

static int write_piece(struct sc_writer *w, const struct sc_gpu_piece *p, const uint8_t *buf)
{
	return p->slots ? write_slab(w, p, buf) : write_bytes(w, p, buf);
}

/* Where the pieces are read into, and how: up to @bufs in flight. */
struct reads {
	unsigned bufs;
	uint8_t *first; /* @bufs buffers of SC_CH_STAGING_BUF, one after the other */
	int (*post)(const struct sc_gpu_piece *p, void *buf, uint32_t *ticket);
	int (*failed)(void); /* a posted read's failure, once it landed */
};

static int copy_failed(const struct sc_gpu_piece *p, CUresult res)
{
	return sc_err(SELFCKPT_ECUDA, "cannot copy device memory at 0x%llx for the checkpoint: "
		      "%s", (unsigned long long)p->d.addr, sc_cu_result_name(res));
}

/* In place, into a staging buffer: the application's calls are held meanwhile. */
static int post_in_place(const struct sc_gpu_piece *p, void *buf, uint32_t *ticket)
{
	struct sc_req r = { .op = SC_OP_COPY, .ctx = p->ctx, .flags = SC_MSG_SYNC_STREAM,
			    .a = { (uint64_t)(uintptr_t)buf, p->src, p->d.len, SC_COPY_DTOH,
				   p->stream } };
	CUDA_MEMCPY3D c;
	CUresult res;

	if (p->array) {
		if (!sc_array_piece_copy(&p->array->desc, (CUarray)(uintptr_t)p->array->o.real,
					 p->d.offset, p->d.len, buf, false, &c))
			return copy_failed(p, CUDA_ERROR_INVALID_VALUE);
		r = (struct sc_req){ .op = SC_OP_COPY_3D, .ctx = p->ctx,
				     .flags = SC_MSG_SYNC_STREAM, .in = &c, .in_len = sizeof(c) };
	}
	res = sc_cu_post(&r);
	*ticket = r.ticket;
	return res == CUDA_SUCCESS ? 0 : copy_failed(p, res);
}

static int in_place_failed(void)
{
	CUresult res = sc_cu_take_sticky();

	return res == CUDA_SUCCESS ? 0 : sc_err(SELFCKPT_ECUDA, "cannot copy device memory "
						"for the checkpoint: %s", sc_cu_result_name(res));
}

/* Each piece read into a buffer while earlier ones are compressed and written. */
static int write_pieces(struct sc_writer *w, const struct sc_gpu_piece *p, size_t n,
			const struct reads *rd)
{
	uint32_t ticket[SC_CH_STAGING_BUFS];
	size_t issued = 0;
	int err = 0;

	for (size_t i = 0; i < n && !err; i++) {
		uint8_t *buf = rd->first + (size_t)(i % rd->bufs) * SC_CH_STAGING_BUF;

		for (; issued < n && issued < i + rd->bufs && !err; issued++)
			err = rd->post(&p[issued], rd->first + (issued % rd->bufs) *
				       (size_t)SC_CH_STAGING_BUF, &ticket[issued % rd->bufs]);
		if (!err && sc_cu_wait_ticket(ticket[i % rd->bufs]) != CUDA_SUCCESS)
			err = copy_failed(&p[i], CUDA_ERROR_DEVICE_UNAVAILABLE);
		if (!err)
			err = rd->failed();
		if (!err)
			err = write_piece(w, &p[i], buf);
	}
	/* an early failure leaves requests in flight: let them land first */
	for (size_t j = issued > rd->bufs ? issued - rd->bufs : 0; err && j < issued; j++)
		sc_cu_wait_ticket(ticket[j % rd->bufs]);
	return err;
}

static int write_copies(struct sc_writer *w, const struct sc_gpu_piece *p, size_t n)
{
	int err = 0;

	for (size_t i = 0; i < n && !err; i++)
		err = write_piece(w, &p[i], (const uint8_t *)(uintptr_t)p[i].src);
	return err;
}

/*
 * An incremental image: the pieces its parent holds as they are now become
 * parent pieces, records without bytes (R-INC-6); the others go to @stored,
 * in their order, to be read and written. Return: 0, or a negative error.
 */
static int write_left(struct sc_writer *w, struct sc_gpu_piece *stored, size_t *n_stored)
{
	uint64_t left = 0, bytes = 0;
	int err = 0;

	*n_stored = 0;
	for (size_t i = 0; i < ck.n_pieces && !err; i++) {
		struct sc_devmem d = ck.pieces[i].d;

		if (!sc_writer_incremental(w) || !sc_devmem_lineage_left(&ck.pieces[i])) {
			stored[(*n_stored)++] = ck.pieces[i];
			continue;
		}
		d.flags = SC_DEVMEM_PARENT;
		err = write_devmem(w, &d, NULL);
		left++;
		bytes += d.len;
	}
	if (left)
		sc_log(SC_LOG_DEBUG, "checkpoint: %llu pieces of device memory (%.1f MiB) left to "
		       "the parent image", (unsigned long long)left, (double)bytes / (1 << 20));
	return err;
}

/* The pieces as the instant left them: read in place, or from their copies. */
static int write_device_memory(struct sc_writer *w)
{
	struct reads rd = { SC_CH_STAGING_BUFS, sc_ch_staging(sc_cu.base, 0), post_in_place,
			    in_place_failed };
	struct sc_gpu_piece *p = calloc(ck.n_pieces ? ck.n_pieces : 1, sizeof(*p));
	size_t n;
	int err;

	if (!p)
		return sc_err(ENOMEM, "no memory to plan the device memory of the checkpoint");
	if ((err = write_left(w, p, &n)) < 0)
		goto out;
	if (ck.captured == SC_CAPTURED_HOST) { /* the copies are in memory of the channel */
		err = write_copies(w, p, n);
		goto out;
	}
	if (ck.captured == SC_CAPTURED_DEVICE) {
		rd = (struct reads){ SC_CH_STAGING_BUFS / 2, NULL, sc_capture_read,
				     sc_capture_failed };
		if (!(rd.first = sc_capture_buffers(rd.bufs, SC_CH_STAGING_BUF))) {
			err = -ENOMEM;
			goto out;
		}
	}
	err = write_pieces(w, p, n, &rd);
out:
	free(p);
	return err;
}

static int add_piece(struct sc_gpu_piece **v, size_t *n, size_t *cap, struct sc_gpu_piece p)
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

static int add_blocks(struct sc_gpu_piece **v, size_t *n, size_t *cap)
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
			err = add_piece(v, n, cap, (struct sc_gpu_piece){
				{ b[i].addr + off, len, SC_DEVMEM_DEVICE, (uint32_t)b[i].dev, 0 },
				.ctx = b[i].ctx->o.real, .src = b[i].addr + off,
				.slots = slab ? b[i].used : NULL,
				.slot_size = slab ? b[i].slab_class : 0, .has_data = nz != NULL });
		}
	}
	return err;
}

static int add_globals(struct sc_cu_module *m, struct sc_gpu_piece **v, size_t *n, size_t *cap)
{
	struct sc_cu_ctx *c = m->o.ctx ? m->o.ctx : sc_ctx_current();
	int err = 0;

	for (size_t g = 0; g < m->globals_n && !err && c; g++) {
		if (m->globals[g].size > SC_CH_STAGING_BUF)
			return sc_err(SELFCKPT_ECUDA, "module global '%s' (%zu bytes) is larger "
				      "than a checkpoint can copy (%u bytes)", m->globals[g].name,
				      m->globals[g].size, SC_CH_STAGING_BUF);
		err = add_piece(v, n, cap, (struct sc_gpu_piece){
			{ m->globals[g].addr, m->globals[g].size, SC_DEVMEM_GLOBAL,
			  (uint32_t)c->dev, 0 }, .ctx = c->o.real, .src = m->globals[g].addr,
			.has_data = true });
	}
	return err;
}

static int add_array(const struct sc_cu_array *a, struct sc_gpu_piece **v, size_t *n, size_t *cap)
{
	uint64_t off = 0, len;
	int err = 0;

	while (!err && off < a->bytes) {
		if (!(len = sc_array_piece_len(&a->desc, off)))
			return sc_err(SELFCKPT_ECUDA, "a CUDA array of %zu bytes has rows larger "
				      "than a checkpoint can copy (%u bytes)", a->bytes,
				      SC_CH_STAGING_BUF);
		err = add_piece(v, n, cap, (struct sc_gpu_piece){
			{ (uint64_t)(uintptr_t)a, len, SC_DEVMEM_ARRAY,
			  (uint32_t)(a->o.ctx ? a->o.ctx->dev : 0), off },
			.ctx = a->o.ctx ? a->o.ctx->o.real : sc_ctx_real(), .array = a,
			.has_data = true });
		off += len;
	}
	return err;
}

/* Every arena block, every module global the application looked up, every array. */
static int list_pieces(struct sc_gpu_piece **v, size_t *n)
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
	return err == -ENOMEM ? sc_err(ENOMEM, "no memory to plan the device memory of the "
				       "checkpoint") : err;
}

static int write_host(struct sc_writer *w)
{
	struct sc_devmem d = { (uint64_t)(uintptr_t)sc_cu.base + SC_CH_HEAP_OFF, ck.host_len,
			       SC_DEVMEM_HOST, 0, 0, 0 };

	if (!ck.host_len)
		return 0;
	return write_devmem(w, &d, ck.host_copy);
}

static int write_records(struct sc_writer *w)
{
	int err;

	if ((err = sc_cu_driver_write(w)) < 0 || !sc_cu.started)
		return err;
	if ((err = sc_writer_record(w, SC_REC_CUDA_LOG, 0, ck.log_meta, sizeof(ck.log_meta),
				    ck.log, ck.log_len)) < 0 ||
	    (err = write_device_memory(w)) < 0)
		return err;
	return write_host(w);
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
	sc_devmem_lineage_done(err);
	sc_cuda_checkpoint_done(err);
	sc_cu_driver_done();
}

static int restored(const char *image)
{
	int err;

	sc_capture_forget();
	sc_devmem_lineage_forget();
	err = sc_cu_driver_restored();

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
		.prepare = prepare, .frozen = frozen, .thawed = thawed, .write = write_records,
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
