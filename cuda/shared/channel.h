/* SPDX-License-Identifier: MIT */
/*
 * channel.h - the shared-memory channel between an application and its GPU
 * proxy.
 *
 * One memfd, mapped at the same address in both processes, so a host pointer
 * into it means the same thing on either side (and, once the proxy has
 * registered it with the driver, the same thing to the GPU):
 *
 *   | header (4 KiB) | ring: SC_CH_SLOTS slots | staging | pinned host heap ... |
 *
 * The ring carries requests. A thread of the application takes a ticket
 * (fetch-and-add on head); ticket t owns slot t % SC_CH_SLOTS once the slot's
 * turn equals t, fills it and marks it READY. The proxy serves tickets in
 * order, one thread, so the order of calls is the order of tickets, as CUDA
 * needs for the default stream. An asynchronous request is released by the
 * proxy when done; a synchronous one is marked DONE and released by its
 * caller after reading the reply. Waiting is a short spin, then a futex on
 * the shared word (FUTEX_WAIT without PRIVATE: the waiters are in two
 * processes).
 *
 * Staging: buffers the library copies pageable memory through, and where
 * device memory passes at checkpoint and restart. The heap behind it serves
 * cuMemAllocHost; the proxy registers it with the driver as it grows.
 */
#ifndef SC_CUDA_CHANNEL_H
#define SC_CUDA_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SC_CH_MAGIC 0x3148435543534353ull /* "SCSCUCH1" */
#define SC_CH_VERSION 2

#define SC_CH_HEADER_SIZE 4096u
#define SC_CH_SLOTS 256u
#define SC_CH_SLOT_SIZE 16384u
#define SC_CH_ARGS 16
#define SC_CH_SLOT_HEADER 192u /* offset of data[] in a slot */
#define SC_CH_INLINE (SC_CH_SLOT_SIZE - SC_CH_SLOT_HEADER)

#define SC_CH_STAGING_BUFS 8u
#define SC_CH_STAGING_BUF (8u << 20)
#define SC_CH_RING_OFF SC_CH_HEADER_SIZE
#define SC_CH_STAGING_OFF (SC_CH_RING_OFF + SC_CH_SLOTS * SC_CH_SLOT_SIZE)
#define SC_CH_HEAP_OFF (SC_CH_STAGING_OFF + SC_CH_STAGING_BUFS * SC_CH_STAGING_BUF)
/* The heap is registered with the driver in pieces of this size as it grows. */
#define SC_CH_HEAP_PIECE (64ull << 20)

enum sc_ch_state {
	SC_SLOT_FREE = 0,
	SC_SLOT_READY = 1, /* request written, the proxy may take it */
	SC_SLOT_DONE = 2,  /* reply written, the caller may read it */
};

#define SC_MSG_ASYNC 0x1u /* no reply wanted: errors become the channel's sticky error */
#define SC_MSG_SYNC_STREAM 0x2u /* copies and sets: wait for the stream before replying */
/* With SC_MSG_ASYNC: a request of a checkpoint's background write, whose
 * failure goes to drain_error, never to the program's sticky error. */
#define SC_MSG_DRAIN 0x4u

/* One request and, in place, its reply. */
struct sc_ch_slot {
	uint32_t turn;    /* ticket allowed to fill the slot next (futex word) */
	uint32_t state;   /* enum sc_ch_state (futex word) */
	uint32_t ticket;  /* ticket of the request in the slot */
	uint32_t op;      /* enum sc_op */
	uint32_t flags;   /* SC_MSG_* */
	int32_t result;   /* CUresult of the call */
	uint32_t len;     /* bytes in data[]: request in, reply out */
	uint32_t waiting; /* the caller sleeps on state */
	uint64_t ctx;     /* the proxy's context to make current first, or 0 */
	uint64_t a[SC_CH_ARGS]; /* arguments in, results out */
	uint8_t pad[SC_CH_SLOT_HEADER - 40 - 8 * SC_CH_ARGS];
	uint8_t data[SC_CH_INLINE];
};

/*
 * The words one side writes on every request each have a line of their own
 * (128 bytes: the adjacent-line prefetcher pairs lines), so that the other
 * side reading or writing its own words does not pull them back and forth.
 */
#define SC_CH_LINE 128

struct sc_ch_header {
	uint64_t magic;
	uint32_t version, slots;
	uint64_t size;        /* bytes of the memfd */
	uint64_t base;        /* address both sides map it at */
	uint32_t proxy_ready; /* the proxy has loaded the driver (futex word) */
	int32_t proxy_status; /* 0, or the CUresult that stopped the proxy starting */
	uint64_t heap_registered; /* bytes of the heap registered with the driver */
	_Alignas(SC_CH_LINE) uint32_t head; /* next ticket: the application's threads */
	_Alignas(SC_CH_LINE) uint32_t tail; /* next ticket the proxy serves: the proxy */
	/* Set by the proxy only as it goes to sleep; read by every request. */
	_Alignas(SC_CH_LINE) uint32_t proxy_sleeps;
	uint32_t doorbell;    /* bumped when a request is READY while the proxy sleeps
			       * (futex word of the proxy) */
	_Alignas(SC_CH_LINE) uint32_t turn_waiters; /* callers waiting for a slot of a full ring */
	_Alignas(SC_CH_LINE) int32_t sticky_error; /* first failure of an asynchronous
						      * request, or 0 */
	uint32_t sticky_op;
	char proxy_error[256];    /* why the proxy could not start */
	int32_t drain_error;      /* first failure of an SC_MSG_DRAIN request, or 0 */
	uint32_t drain_op;
};

_Static_assert(sizeof(struct sc_ch_header) <= SC_CH_HEADER_SIZE, "the channel header grew");

static inline struct sc_ch_slot *sc_ch_slot(void *base, uint32_t ticket)
{
	return (struct sc_ch_slot *)((char *)base + SC_CH_RING_OFF +
				     (size_t)(ticket % SC_CH_SLOTS) * SC_CH_SLOT_SIZE);
}

static inline struct sc_ch_header *sc_ch_header(void *base)
{
	return base;
}

static inline void *sc_ch_staging(void *base, unsigned i)
{
	return (char *)base + SC_CH_STAGING_OFF + (size_t)i * SC_CH_STAGING_BUF;
}

/* channel.c: the futex and the waits both sides use */
void sc_ch_wake(uint32_t *word);
/** sc_ch_wait() - sleep while *word == val, at most @timeout_ms; spurious returns happen. */
void sc_ch_wait(uint32_t *word, uint32_t val, int timeout_ms);
/** sc_ch_init() - lay out a new channel of @size bytes mapped at @base. */
void sc_ch_init(void *base, uint64_t size);

#endif /* SC_CUDA_CHANNEL_H */
