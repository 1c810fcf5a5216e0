/* SPDX-License-Identifier: MIT */
/*
 * replay.c - the GPU state of a restored process.
 *
 * The library's objects came back with the process memory, each holding a
 * handle of a proxy that no longer exists. A new channel is mapped where the
 * old one was, a new proxy started, and the objects re-created in this order:
 * contexts; the arena's reservations and blocks, at the same addresses (before
 * anything else takes device addresses); the pinned heap; then every other
 * object in creation order. Values the driver chooses and kernels see - module
 * global addresses, texture and surface object values - are checked against
 * the saved ones: a difference fails the restart with its name. Last, device
 * memory and pinned host memory are read back from the image.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/sc_core.h"
#include "cuda/shared/gpu_records.h"
#include "cuda/lib/graph.h"
#include "cuda/lib/managed.h"
#include "format/sc_format.h"
#include "format/sc_log.h"

static int cuda_failed(const char *what, CUresult res)
{
	return sc_err(SELFCKPT_ECUDA, "restart: %s failed: %s", what, sc_cu_result_name(res));
}

static CUresult call(unsigned op, uint64_t ctx, uint64_t a0, uint64_t a1, uint64_t a2,
		     uint64_t *out0)
{
	struct sc_req r = { .op = op, .ctx = ctx, .a = { a0, a1, a2 } };
	CUresult res = sc_cu_call(&r);

	if (out0)
		*out0 = r.a[0];
	return res;
}

static struct sc_cu_ctx *first_context;

static int replay_context(struct sc_cu_ctx *c)
{
	CUresult res;

	if (c->primary && !c->retains)
		return 0;
	if (c->primary) {
		if (c->flags && (res = call(SC_OP_PCTX_SET_FLAGS, 0, (uint64_t)c->dev, c->flags, 0,
					    NULL)) != CUDA_SUCCESS)
			return cuda_failed("setting the primary context's flags", res);
		res = call(SC_OP_PCTX_RETAIN, 0, (uint64_t)c->dev, 0, 0, &c->o.real);
	} else {
		res = call(SC_OP_CTX_CREATE, 0, c->flags, (uint64_t)c->dev, 0, &c->o.real);
	}
	if (res != CUDA_SUCCESS)
		return cuda_failed("re-creating a context", res);
	for (unsigned l = 0; l < SC_CU_LIMITS; l++)
		if (c->limit_set[l] && (res = call(SC_OP_CTX_SET_LIMIT, c->o.real, l, c->limit[l],
						   0, NULL)) != CUDA_SUCCESS)
			return cuda_failed("setting a context limit", res);
	if (c->cache_set && (res = call(SC_OP_CTX_SET_CACHE, c->o.real, (uint64_t)c->cache_config,
					0, 0, NULL)) != CUDA_SUCCESS)
		return cuda_failed("cuCtxSetCacheConfig", res);
	if (c->shmem_set && (res = call(SC_OP_CTX_SET_SHMEM, c->o.real, (uint64_t)c->shmem_config,
					0, 0, NULL)) != CUDA_SUCCESS)
		return cuda_failed("cuCtxSetSharedMemConfig", res);
	if (!first_context) {
		first_context = c;
		res = call(SC_OP_HEAP_REGISTER, c->o.real,
			   (uint64_t)(uintptr_t)sc_ch_staging(sc_cu.base, 0),
			   (uint64_t)SC_CH_STAGING_BUFS * SC_CH_STAGING_BUF, 0, NULL);
		if (res != CUDA_SUCCESS)
			return cuda_failed("pinning the channel", res);
		sc_cu.staging_pinned = true;
	}
	return 0;
}

static uint64_t ctx_of(const struct sc_cu_obj *o)
{
	return o->ctx ? o->ctx->o.real : first_context ? first_context->o.real : 0;
}

static struct sc_cu_ctx *context_on(CUdevice dev)
{
	for (struct sc_cu_obj *o = sc_obj_first(); o; o = o->next) {
		struct sc_cu_ctx *c = (struct sc_cu_ctx *)o;

		if (o->kind == SC_K_CTX && c->dev == dev && (!c->primary || c->retains))
			return c;
	}
	return NULL;
}

/*
 * The devices whose last context the program destroyed after using their
 * memory: their arena, unused, is forgotten (the next context reserves it
 * again); one with memory still allocated cannot come back.
 */
static int forget_devices_without_context(void)
{
	size_t n, i = 0;
	struct sc_cu_reservation *rv = sc_arena_reservations(&n);

	while (i < n) {
		if (context_on(rv[i].dev)) {
			i++;
			continue;
		}
		if (!sc_arena_forget_device(rv[i].dev))
			return sc_err(SELFCKPT_ECUDA, "restart: no context on device %d for the "
				      "memory still allocated on it", (int)rv[i].dev);
		rv = sc_arena_reservations(&n); /* the entry at i is another one now */
	}
	return 0;
}

/*
 * The same device addresses, then the same physical blocks in them, cleared
 * (spec R-DEV-3: memory no record holds was zero). Each clear is waited for: the
 * upload fills the blocks on streams that do not wait for the NULL stream, and
 * a clear that fails must fail the restart, not the program's next call.
 */
static int replay_arena(void)
{
	size_t nr, nb;
	struct sc_cu_reservation *rv;
	struct sc_cu_block *b;
	CUresult res;

	int err = forget_devices_without_context();

	if (err < 0)
		return err;
	rv = sc_arena_reservations(&nr);
	for (size_t i = 0; i < nr; i++) {
		struct sc_cu_ctx *c = context_on(rv[i].dev);
		uint64_t got = 0;

		res = call(SC_OP_VMM_RESERVE, c->o.real, rv[i].size, rv[i].base, 0, &got);
		if (res != CUDA_SUCCESS)
			return cuda_failed("reserving device addresses", res);
		if (got != rv[i].base)
			return sc_err(SELFCKPT_ECUDA, "restart: device addresses 0x%llx are taken "
				      "on this GPU (the driver offered 0x%llx)",
				      (unsigned long long)rv[i].base, (unsigned long long)got);
	}
	b = sc_arena_blocks(&nb);
	for (size_t i = 0; i < nb; i++) {
		struct sc_req z = { .op = SC_OP_MEMSET, .ctx = b[i].ctx->o.real,
				    .flags = SC_MSG_SYNC_STREAM,
				    .a = { b[i].addr, 0, 1, b[i].size, 0, 0, 0 } };

		/* the program's cuMemCreate comes back with its properties */
		struct sc_req m = { .op = SC_OP_VMM_MAP, .ctx = b[i].ctx->o.real,
				    .a = { b[i].addr, b[i].size, (uint64_t)b[i].dev,
					   sc_peer_mask(b[i].dev) },
				    .in = b[i].vmm ? &b[i].vmm->prop : NULL,
				    .in_len = b[i].vmm ? (uint32_t)sizeof(b[i].vmm->prop) : 0 };

		if ((res = sc_cu_call(&m)) != CUDA_SUCCESS)
			return cuda_failed("mapping device memory", res);
		b[i].handle = m.a[0];
		if ((res = sc_cu_call(&z)) != CUDA_SUCCESS)
			return cuda_failed("clearing device memory", res);
	}
	/* then where the program mapped its allocations, with the access it gave */
	if ((res = sc_vmm_replay()) != CUDA_SUCCESS)
		return cuda_failed("mapping the program's allocations (cuMemMap, cuMemSetAccess)",
				   res);
	return 0;
}

static int replay_module(struct sc_cu_module *m)
{
	CUresult res;

	if (m->library) { /* a module a library gave out */
		res = call(SC_OP_LIBRARY_MODULE, ctx_of(&m->o), m->library->o.real, 0, 0,
			   &m->o.real);
		return res == CUDA_SUCCESS ? 0 : cuda_failed("cuLibraryGetModule", res);
	}
	res = sc_module_send(m->image, m->image_len,
			     m->o.kind == SC_K_LIBRARY ? SC_IMG_LIBRARY : SC_IMG_MODULE,
			     ctx_of(&m->o), &m->o.real);
	return res == CUDA_SUCCESS ? 0 : cuda_failed("loading a module", res);
}

/* A kernel's attributes and cache preferences, per device, in the order set. */
static int replay_kernel_settings(const struct sc_cu_func *k, uint64_t ctx)
{
	for (size_t i = 0; i < k->kernel_settings_n; i++) {
		const struct sc_cu_kernel_setting *s = &k->kernel_settings[i];
		struct sc_req r = { .op = SC_OP_KERNEL_SET_ATTR, .ctx = ctx,
				    .a = { (uint64_t)s->attribute, k->o.real, (uint64_t)s->dev,
					   (uint64_t)(int64_t)s->value } };
		CUresult res;

		if (s->attribute == SC_KERNEL_CACHE)
			r = (struct sc_req){ .op = SC_OP_KERNEL_SET_CACHE, .ctx = ctx,
					     .a = { k->o.real, (uint64_t)s->value,
						    (uint64_t)s->dev } };
		if ((res = sc_cu_call(&r)) != CUDA_SUCCESS)
			return cuda_failed(s->attribute == SC_KERNEL_CACHE ? "cuKernelSetCacheConfig"
									   : "cuKernelSetAttribute",
					   res);
	}
	return 0;
}

static int replay_function(struct sc_cu_func *f)
{
	size_t len = strlen(f->name) + 1;
	struct sc_req r = { .op = f->o.kind == SC_K_KERNEL ? SC_OP_LIBRARY_KERNEL :
							      SC_OP_MODULE_FUNCTION,
			    .ctx = ctx_of(&f->o), .a = { f->module->o.real }, .in = f->name,
			    .in_len = (uint32_t)len };
	CUresult res = sc_cu_call(&r);

	if (res != CUDA_SUCCESS)
		return sc_err(SELFCKPT_ECUDA, "restart: kernel '%s' not found again: %s", f->name,
			      sc_cu_result_name(res));
	f->o.real = r.a[0];
	f->launch_real = 0;
	for (unsigned a = 0; f->o.kind == SC_K_FUNC && a < CU_FUNC_ATTRIBUTE_MAX; a++)
		if (f->attr_is_set[a] &&
		    (res = call(SC_OP_FUNC_SET_ATTR, r.ctx, a, f->o.real,
				(uint64_t)(int64_t)f->attr_set[a], NULL)) != CUDA_SUCCESS)
			return cuda_failed("cuFuncSetAttribute", res);
	if (f->o.kind == SC_K_FUNC && f->cache_config >= 0 &&
	    (res = call(SC_OP_FUNC_SET_CACHE, r.ctx, f->o.real, (uint64_t)f->cache_config, 0,
			NULL)) != CUDA_SUCCESS)
		return cuda_failed("cuFuncSetCacheConfig", res);
	if (f->o.kind == SC_K_FUNC && f->shmem_config >= 0 &&
	    (res = call(SC_OP_FUNC_SET_SHMEM, r.ctx, f->o.real, (uint64_t)f->shmem_config, 0,
			NULL)) != CUDA_SUCCESS)
		return cuda_failed("cuFuncSetSharedMemConfig", res);
	return replay_kernel_settings(f, r.ctx);
}

/* Texture and surface objects: kernels hold their values, so they must match. */
static int replay_texobj(struct sc_cu_texobj *t)
{
	struct sc_cu_array *a = NULL;
	CUDA_RESOURCE_DESC res = t->res;
	uint8_t data[sizeof(res) + sizeof(t->tex) + sizeof(t->view)];
	bool tex = t->o.kind == SC_K_TEXOBJ;
	struct sc_req r = { .op = tex ? SC_OP_TEX_CREATE : SC_OP_SURF_CREATE, .ctx = ctx_of(&t->o),
			    .a = { t->has_view }, .in = data,
			    .in_len = tex ? (uint32_t)sizeof(data) : (uint32_t)sizeof(res) };
	CUresult rc;

	if (res.resType == CU_RESOURCE_TYPE_ARRAY &&
	    (a = sc_obj_get(res.res.array.hArray, SC_K_ARRAY)))
		res.res.array.hArray = (CUarray)(uintptr_t)a->o.real;
	memcpy(data, &res, sizeof(res));
	memcpy(data + sizeof(res), &t->tex, sizeof(t->tex));
	memcpy(data + sizeof(res) + sizeof(t->tex), &t->view, sizeof(t->view));
	if ((rc = sc_cu_call(&r)) != CUDA_SUCCESS)
		return cuda_failed(tex ? "cuTexObjectCreate" : "cuSurfObjectCreate", rc);
	if (r.a[0] != t->o.real)
		return sc_err(SELFCKPT_ECUDA, "restart: %s object %llu came back as %llu; kernels "
			      "hold the old value", tex ? "texture" : "surface",
			      (unsigned long long)t->o.real, (unsigned long long)r.a[0]);
	return 0;
}

static int replay_object(struct sc_cu_obj *o)
{
	uint64_t ctx = ctx_of(o);
	CUresult res = CUDA_SUCCESS;

	switch (o->kind) {
	case SC_K_MODULE:
	case SC_K_LIBRARY:
		return replay_module((struct sc_cu_module *)o);
	case SC_K_FUNC:
	case SC_K_KERNEL:
		return replay_function((struct sc_cu_func *)o);
	case SC_K_STREAM:
		res = call(SC_OP_STREAM_CREATE, ctx, ((struct sc_cu_stream *)o)->flags,
			   (uint64_t)(int64_t)((struct sc_cu_stream *)o)->priority, 0, &o->real);
		break;
	case SC_K_EVENT:
		res = call(SC_OP_EVENT_CREATE, ctx, ((struct sc_cu_event *)o)->flags, 0, 0,
			   &o->real);
		/* Every stream was idle at the checkpoint: its events had completed. */
		if (res == CUDA_SUCCESS && ((struct sc_cu_event *)o)->recorded)
			res = call(SC_OP_EVENT_RECORD, ctx, o->real, 0, 0, NULL);
		break;
	case SC_K_ARRAY: {
		struct sc_cu_array *a = (struct sc_cu_array *)o;
		struct sc_req r = { .op = SC_OP_ARRAY_CREATE, .ctx = ctx, .in = &a->desc,
				    .in_len = sizeof(a->desc) };

		res = sc_cu_call(&r);
		o->real = r.a[0];
		break;
	}
	case SC_K_TEXOBJ:
	case SC_K_SURFOBJ:
		return replay_texobj((struct sc_cu_texobj *)o);
	default:
		return 0; /* contexts: done first */
	}
	return res == CUDA_SUCCESS ? 0 : cuda_failed("re-creating a stream, event or array", res);
}

static int check_globals(void)
{
	for (struct sc_cu_obj *o = sc_obj_first(); o; o = o->next) {
		struct sc_cu_module *m = (struct sc_cu_module *)o;
		unsigned kind = o->kind == SC_K_LIBRARY ? SC_IMG_LIBRARY : SC_IMG_MODULE;

		if ((o->kind != SC_K_MODULE && o->kind != SC_K_LIBRARY) || m->library)
			continue;
		for (size_t g = 0; g < m->globals_n; g++) {
			const char *name = m->globals[g].name;
			struct sc_req r = { .op = SC_OP_MODULE_GLOBAL, .ctx = ctx_of(o),
					    .a = { o->real, kind }, .in = name,
					    .in_len = (uint32_t)strlen(name) + 1 };
			CUresult res = sc_cu_call(&r);

			if (res != CUDA_SUCCESS)
				return sc_err(SELFCKPT_ECUDA, "restart: module global '%s' not "
					      "found again: %s", name, sc_cu_result_name(res));
			if (r.a[0] != m->globals[g].addr || r.a[1] != m->globals[g].size)
				return sc_err(SELFCKPT_ECUDA, "restart: module global '%s' moved "
					      "from 0x%llx (%zu bytes) to 0x%llx (%llu bytes); "
					      "pointers to it would be wrong", name,
					      (unsigned long long)m->globals[g].addr,
					      m->globals[g].size, (unsigned long long)r.a[0],
					      (unsigned long long)r.a[1]);
		}
	}
	return 0;
}

static int replay_contexts(void)
{
	int err = 0;

	first_context = NULL;
	CUresult res;

	for (struct sc_cu_obj *o = sc_obj_first(); o && !err; o = o->next)
		if (o->kind == SC_K_CTX)
			err = replay_context((struct sc_cu_ctx *)o);
	if (!err && (res = sc_peer_replay()) != CUDA_SUCCESS)
		err = cuda_failed("enabling peer access between contexts", res);
	return err;
}

/* Device memory at its addresses, and the pinned heap. */
static int replay_memory(void)
{
	int err = replay_arena();
	CUresult res;

	if (!err && first_context && (res = sc_host_repin(first_context->o.real)) != CUDA_SUCCESS)
		err = cuda_failed("pinning the host heap", res);
	return err;
}

/* Everything else, in creation order, then the values kernels see. */
static int replay_others(void)
{
	int err = 0;

	for (struct sc_cu_obj *o = sc_obj_first(); o && !err; o = o->next)
		err = replay_object(o);
	err = err ? err : check_globals();
	return err ? err : sc_graphs_replay(); /* what graphs name is back */
}

/* Array handles for the proxy: the library's (in the image) and the driver's now. */
static uint64_t *array_pairs(uint64_t *n)
{
	static uint64_t v[SC_CH_INLINE / 16 - 256]; /* leave room for the path */
	uint64_t cap = sizeof(v) / 16, k = 0;

	for (struct sc_cu_obj *o = sc_obj_first(); o; o = o->next)
		if (o->kind == SC_K_ARRAY) {
			if (k == cap) {
				sc_err(SELFCKPT_ECUDA, "restart: more than %llu CUDA arrays",
				       (unsigned long long)cap);
				return NULL;
			}
			v[2 * k] = (uint64_t)(uintptr_t)o;
			v[2 * k + 1] = o->real;
			k++;
		}
	*n = k;
	return v;
}

/* The proxy reads the device memory of each device in use, then pinned memory. */
static int upload(const char *image)
{
	char reason[SC_CH_INLINE];
	uint64_t n = 0, *pairs = array_pairs(&n);
	bool host_done = false;
	int err = 0;

	if (!pairs)
		return -SELFCKPT_ECUDA;
	for (struct sc_cu_obj *o = sc_obj_first(); o && !err; o = o->next) {
		struct sc_cu_ctx *c = (struct sc_cu_ctx *)o;
		struct sc_req r = { .op = SC_OP_UPLOAD, .ctx = o->real,
				    .a = { (uint64_t)c->dev, !host_done, n }, .in = pairs,
				    .in_len = (uint32_t)(n * 16), .in2 = image,
				    .in2_len = (uint32_t)strlen(image) + 1, .out = reason,
				    .out_cap = sizeof(reason) - 1 };
		CUresult res;

		if (o->kind != SC_K_CTX || context_on(c->dev) != c)
			continue; /* one upload per device */
		if (r.in2_len > SC_CH_INLINE - r.in_len) {
			err = sc_err(ENAMETOOLONG, "restart: the image path is too long");
			break;
		}
		res = sc_cu_call(&r);
		reason[r.out_len] = 0;
		if (res != CUDA_SUCCESS)
			err = sc_err(SELFCKPT_ECUDA, "restart: device memory of device %d from '%s': "
				     "%s%s%s", (int)c->dev, image, sc_cu_result_name(res),
				     r.out_len ? ": " : "", r.out_len ? reason : "");
		host_done = true;
	}
	return err;
}

/* Milliseconds since *@last, which becomes now: the steps of a restart, for the debug log. */
static double lap_ms(uint64_t *last)
{
	uint64_t t = sc_cu_now_ns();
	double ms = (double)(t - *last) * 1e-6;

	*last = t;
	return ms;
}

int sc_cuda_restored(const char *image)
{
	enum { PROXY, CONTEXTS, MEMORY, OTHERS, UPLOAD, STEPS };
	double ms[STEPS] = { 0 };
	uint64_t last;
	CUresult res;
	int err;

	if (!sc_cu.started) {
		sc_cuda_checkpoint_done(0); /* the API lock the checkpoint took */
		return 0;
	}
	if (!image || !*image)
		return sc_err(SELFCKPT_EUSAGE, "a CUDA process can only be restored from an image "
			      "file, not from a stream");
	last = sc_cu_now_ns();
	if ((res = sc_cu_restart_channel()) != CUDA_SUCCESS)
		return cuda_failed("starting the GPU proxy", res);
	ms[PROXY] = lap_ms(&last);
	err = replay_contexts();
	ms[CONTEXTS] = lap_ms(&last);
	err = err ? err : replay_memory();
	ms[MEMORY] = lap_ms(&last);
	err = err ? err : replay_others();
	ms[OTHERS] = lap_ms(&last);
	err = err ? err : upload(image);
	err = err ? err : sc_managed_restored();
	ms[UPLOAD] = lap_ms(&last);
	if (!err)
		sc_log(SC_LOG_DEBUG, "restart: GPU proxy started in %.1f ms, contexts %.1f ms, "
		       "device memory mapped and pinned heap %.1f ms, modules and other objects "
		       "%.1f ms, memory uploaded %.1f ms", ms[PROXY], ms[CONTEXTS], ms[MEMORY],
		       ms[OTHERS], ms[UPLOAD]);
	sc_cuda_checkpoint_done(err);
	return err;
}
