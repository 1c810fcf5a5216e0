/* SPDX-License-Identifier: MIT */
/*
 * proxy_dispatch.c - route a request to its handler, with its context current.
 */
#include <pthread.h>
#include <string.h>

#include "cuda/proxy/proxy_internal.h"

static sc_proxy_op_fn handlers[SC_OP_COUNT];
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;
static uint64_t current_ctx;

static CUresult op_nop(struct sc_ch_slot *s)
{
	(void)s;
	return CUDA_SUCCESS;
}

static void fill_handlers(void)
{
	handlers[SC_OP_NOP] = op_nop;
	sc_proxy_ops_device(handlers);
	sc_proxy_ops_code(handlers);
	sc_proxy_ops_function(handlers);
	sc_proxy_ops_memory(handlers);
	sc_proxy_ops_stream(handlers);
	sc_proxy_ops_upload(handlers);
	sc_proxy_ops_zero(handlers);
	sc_proxy_ops_capture(handlers);
	sc_proxy_ops_graph(handlers);
}

void sc_proxy_note_current(uint64_t ctx)
{
	current_ctx = ctx;
}

void sc_proxy_reply_str(struct sc_ch_slot *s, const char *str)
{
	size_t n = strnlen(str, SC_CH_INLINE - 1);

	memcpy(s->data, str, n);
	s->data[n] = 0;
	s->len = (uint32_t)n + 1;
}

void sc_proxy_handle(struct sc_ch_slot *s)
{
	pthread_once(&handlers_once, fill_handlers);
	if (s->op >= SC_OP_COUNT || !handlers[s->op]) {
		s->result = CUDA_ERROR_NOT_SUPPORTED;
		s->len = 0;
		return;
	}
	/* Contexts destroyed meanwhile are the caller's business: it sends live ones. */
	if (s->ctx && s->ctx != current_ctx) {
		CUresult r = sc_drv.cuCtxSetCurrent((CUcontext)(uintptr_t)s->ctx);

		if (r != CUDA_SUCCESS) {
			s->result = r;
			s->len = 0;
			return;
		}
		current_ctx = s->ctx;
	}
	s->result = handlers[s->op](s);
	if (s->op == SC_OP_CTX_DESTROY && s->a[0] == current_ctx)
		current_ctx = 0;
	if (s->op == SC_OP_PCTX_RESET || s->op == SC_OP_PCTX_RELEASE)
		current_ctx = 0; /* the primary context may be gone: set it again next time */
}
