/* SPDX-License-Identifier: MIT */
/*
 * proxy_internal.h - the GPU proxy's request handlers.
 */
#ifndef SC_PROXY_INTERNAL_H
#define SC_PROXY_INTERNAL_H

#include "cuda/shared/channel.h"
#include "cuda/shared/proxy_requests.h"
#include "cuda/proxy/proxy_driver.h"

/** sc_proxy_handle() - carry out the request in @s and put its reply there. */
void sc_proxy_handle(struct sc_ch_slot *s);

typedef CUresult (*sc_proxy_op_fn)(struct sc_ch_slot *s);

/* The handlers of each family, indexed by enum sc_op; NULL where not theirs. */
void sc_proxy_ops_device(sc_proxy_op_fn *t);
void sc_proxy_ops_code(sc_proxy_op_fn *t);
void sc_proxy_ops_function(sc_proxy_op_fn *t);
void sc_proxy_ops_memory(sc_proxy_op_fn *t);
void sc_proxy_ops_stream(sc_proxy_op_fn *t);
void sc_proxy_ops_upload(sc_proxy_op_fn *t);
void sc_proxy_ops_zero(sc_proxy_op_fn *t);
void sc_proxy_ops_capture(sc_proxy_op_fn *t);
void sc_proxy_ops_graph(sc_proxy_op_fn *t);

/* Parameters of one kernel a request can carry. */
#define SC_PROXY_MAX_PARAMS ((SC_CH_INLINE) / 8)

/* A stream a request names by the proxy's own handle (0: the default stream). */
#define STREAM(v) ((CUstream)(uintptr_t)(v))

/**
 * sc_proxy_unpack_params() - the pointers to each of @n kernel parameters,
 * from @len bytes at @data: their (offset, size) pairs, then the parameter
 * buffer (SC_OP_LAUNCH's data).
 */
CUresult sc_proxy_unpack_params(uint8_t *data, uint64_t len, uint64_t n, void **params);

/** sc_proxy_zero_prepare() - the zero scan of a new context (@ctx current). */
void sc_proxy_zero_prepare(CUcontext ctx);
/** sc_proxy_zero_forget() - @ctx was destroyed or reset. */
void sc_proxy_zero_forget(CUcontext ctx);

/* The channel, mapped at the same address as in the application. */
extern void *sc_proxy_channel;

/** sc_proxy_note_current() - a handler made @ctx current itself. */
void sc_proxy_note_current(uint64_t ctx);

/** sc_proxy_reply_str() - put a NUL-terminated string in the reply's data. */
void sc_proxy_reply_str(struct sc_ch_slot *s, const char *str);

#endif /* SC_PROXY_INTERNAL_H */
