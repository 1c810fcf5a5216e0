/* SPDX-License-Identifier: MIT */
/*
 * objects.c - the handles the application holds.
 *
 * A CUcontext, CUmodule, CUstream, ... given to the application is a pointer
 * to one of these objects: it stays the same across a restart, while the
 * proxy's handle inside it is replaced. A magic number per kind catches a
 * handle of the wrong kind or one already destroyed.
 */
#include <stdlib.h>

#include "cuda/lib/cuda_internal.h"

#define MAGIC 0x5c0b1ec0u

static struct sc_cu_obj *first, *last;
static uint64_t next_seq = 1;
/*
 * Recursive: a walk that frees holds the lock, and what it calls to free an
 * object (a module's functions, a graph's nodes) frees under it again.
 */
static pthread_mutex_t list_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

void *sc_obj_new(enum sc_cu_kind kind, size_t size, struct sc_cu_ctx *ctx)
{
	struct sc_cu_obj *o = calloc(1, size);

	if (!o)
		return NULL;
	o->magic = MAGIC ^ kind;
	o->kind = kind;
	o->ctx = ctx;
	pthread_mutex_lock(&list_lock);
	o->seq = next_seq++;
	o->prev = last;
	if (last)
		last->next = o;
	else
		first = o;
	last = o;
	pthread_mutex_unlock(&list_lock);
	return o;
}

void sc_obj_free(void *obj)
{
	struct sc_cu_obj *o = obj;

	if (!o)
		return;
	pthread_mutex_lock(&list_lock);
	if (o->prev)
		o->prev->next = o->next;
	else
		first = o->next;
	if (o->next)
		o->next->prev = o->prev;
	else
		last = o->prev;
	pthread_mutex_unlock(&list_lock);
	o->magic = 0;
	free(o);
}

void *sc_obj_get(const void *h, enum sc_cu_kind kind)
{
	const struct sc_cu_obj *o = h;

	if (!o || ((uintptr_t)o & 7))
		return NULL;
	return o->magic == (MAGIC ^ kind) ? (void *)o : NULL;
}

struct sc_cu_obj *sc_obj_first(void)
{
	return first;
}

void sc_objs_lock(void)
{
	pthread_mutex_lock(&list_lock);
}

void sc_objs_unlock(void)
{
	pthread_mutex_unlock(&list_lock);
}

struct sc_cu_texobj *sc_obj_find_value(enum sc_cu_kind kind, uint64_t v)
{
	struct sc_cu_obj *o;

	pthread_mutex_lock(&list_lock);
	for (o = first; o; o = o->next)
		if (o->kind == kind && o->real == v)
			break;
	pthread_mutex_unlock(&list_lock);
	return (struct sc_cu_texobj *)o;
}

uint64_t sc_obj_ctx_real(const struct sc_cu_obj *o)
{
	return o->ctx ? o->ctx->o.real : sc_ctx_real();
}

bool sc_stream_is_default(CUstream h)
{
	return !h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD;
}

CUresult sc_stream_target(CUstream h, uint64_t *real, uint64_t *ctx)
{
	struct sc_cu_stream *s;

	if (sc_stream_is_default(h)) {
		if (!sc_ctx_current())
			return sc_ctx_missing();
		*real = (uint64_t)(uintptr_t)h;
		*ctx = sc_ctx_real();
		return CUDA_SUCCESS;
	}
	if (!(s = sc_obj_get(h, SC_K_STREAM)))
		return CUDA_ERROR_INVALID_HANDLE;
	*real = s->o.real;
	*ctx = sc_obj_ctx_real(&s->o);
	return CUDA_SUCCESS;
}
