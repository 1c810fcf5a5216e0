/* SPDX-License-Identifier: MIT */
/*
 * context.c - each thread's current context and context stack, as CUDA keeps
 * them. Thread-local, so they come back with each thread at a restart.
 */
#include "cuda/lib/cuda_internal.h"

#define STACK_MAX 32

static __thread struct sc_cu_ctx *stack[STACK_MAX];
static __thread int depth; /* stack[depth - 1] is current */

struct sc_cu_ctx *sc_ctx_current(void)
{
	return depth ? stack[depth - 1] : NULL;
}

void sc_ctx_set_current(struct sc_cu_ctx *c)
{
	if (!depth && !c)
		return;
	if (!depth)
		depth = 1;
	stack[depth - 1] = c;
	if (!c && depth == 1)
		depth = 0;
}

uint64_t sc_ctx_real(void)
{
	struct sc_cu_ctx *c = sc_ctx_current();

	return c ? c->o.real : 0;
}

/*
 * The proxy's handles are read under the lock: a thread stopped for a
 * checkpoint while it waits for the lock must not carry one a restart changed.
 */
static CUresult ask(struct sc_req *r, bool needs_context, const struct sc_cu_obj *about,
		    int slot)
{
	CUresult res = sc_cu_enter();

	if (res != CUDA_SUCCESS)
		return res;
	if (needs_context && !sc_ctx_current()) {
		res = sc_ctx_missing();
	} else {
		r->ctx = sc_ctx_real();
		if (about)
			r->a[slot] = about->real;
		res = sc_cu_call(r);
	}
	sc_cu_leave();
	return res;
}

CUresult sc_cu_ask(struct sc_req *r, bool needs_context)
{
	return ask(r, needs_context, NULL, 0);
}

CUresult sc_cu_ask_about(const struct sc_cu_obj *o, struct sc_req *r, int slot)
{
	return ask(r, false, o, slot);
}

bool sc_ctx_push(struct sc_cu_ctx *c)
{
	if (depth == STACK_MAX)
		return false;
	stack[depth++] = c;
	return true;
}

struct sc_cu_ctx *sc_ctx_pop(void)
{
	return depth ? stack[--depth] : NULL;
}

void sc_ctx_forget(struct sc_cu_ctx *c)
{
	int k = 0;

	for (int i = 0; i < depth; i++)
		if (stack[i] != c)
			stack[k++] = stack[i];
	depth = k;
}
