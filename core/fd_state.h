/* SPDX-License-Identifier: MIT */
/*
 * fd_state.h - the state of a kernel object held by a descriptor (fd kinds 9
 * and up, format 1.2): the fd record's payload is a list of items, each a u32
 * tag, a u32 length and that many bytes (spec §9.6.1). What the tags mean is
 * the kind's own (fd_objects.c, fd_socket.c). A tag with bit 31 set is one a
 * reader must understand; others it may skip.
 */
#ifndef SC_FD_STATE_H
#define SC_FD_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sc_fds.h"

#define SC_STATE_REQUIRED 0x80000000u

/* A list being built; the first failure sticks in err (-ENOMEM). */
struct sc_state_out {
	uint8_t *buf;
	size_t len, cap;
	int err;
};

/* Append one item; nothing happens once out->err is set. */
void sc_state_put(struct sc_state_out *out, uint32_t tag, const void *value, uint32_t len);
void sc_state_put_u64(struct sc_state_out *out, uint32_t tag, uint64_t v);

/**
 * sc_state_finish() - hand the list to @f as its payload (replacing what
 * @f->data held) or report the failure. Return: 0 or a negative error.
 */
int sc_state_finish(struct sc_state_out *out, struct sc_fd *f);

struct sc_state_item {
	uint32_t tag, len;
	const uint8_t *value;
};

/**
 * sc_state_next() - the item at *@pos of @f's payload, moving *@pos past it.
 * Return: 1 and the item, 0 at the end, or a negative error (reported,
 * naming the descriptor) when the list is cut short.
 */
int sc_state_next(const struct sc_fd *f, size_t *pos, struct sc_state_item *it);

/** sc_state_u64() - an item's value as a u64; false when it is not 8 bytes long. */
bool sc_state_u64(const struct sc_state_item *it, uint64_t *v);

/** sc_state_bad_length() - refuse @it, whose length is not the one its tag gives (reported). */
int sc_state_bad_length(const struct sc_fd *f, const struct sc_state_item *it);

/**
 * sc_state_unknown() - what to do with an item of a tag the kind does not
 * know: skip it (0) or, for a required tag, refuse (reported).
 */
int sc_state_unknown(const struct sc_fd *f, const struct sc_state_item *it);

/**
 * sc_fd_state_check() - check @f's item list as a whole (fd_state_check.c):
 * what a record of its kind must hold, before a restore changes anything.
 * Kinds that hold saved contents pass. Return: 0 or a negative error
 * (reported, naming the descriptor).
 */
int sc_fd_state_check(const struct sc_fd *f);

#endif /* SC_FD_STATE_H */
