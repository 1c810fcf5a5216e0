/* SPDX-License-Identifier: MIT */
/*
 * fd_state.c - build and walk the item list of an fd record's payload
 * (spec §9.6.1). Every length is checked against what is left of the
 * payload before a byte of it is used.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/fd_state.h"
#include "format/sc_array.h"
#include "format/sc_log.h"

#define ITEM_HEAD 8u

static bool room_for(struct sc_state_out *out, size_t more)
{
	if (sc_grow((void **)&out->buf, &out->cap, out->len + more, 1) == 0)
		return true;
	out->err = -ENOMEM;
	return false;
}

void sc_state_put(struct sc_state_out *out, uint32_t tag, const void *value, uint32_t len)
{
	if (out->err || !room_for(out, ITEM_HEAD + (size_t)len))
		return;
	sc_put_le32(out->buf + out->len, tag);
	sc_put_le32(out->buf + out->len + 4, len);
	if (len)
		memcpy(out->buf + out->len + ITEM_HEAD, value, len);
	out->len += ITEM_HEAD + len;
}

void sc_state_put_u64(struct sc_state_out *out, uint32_t tag, uint64_t v)
{
	uint8_t le[8];

	sc_put_le64(le, v);
	sc_state_put(out, tag, le, sizeof(le));
}

int sc_state_finish(struct sc_state_out *out, struct sc_fd *f)
{
	if (out->err) {
		free(out->buf);
		memset(out, 0, sizeof(*out));
		return sc_err(ENOMEM, "out of memory recording the state of descriptor %d (%s)",
			      f->fd, f->path ? f->path : "?");
	}
	free(f->data);
	f->data = out->buf;
	f->data_len = out->len;
	memset(out, 0, sizeof(*out));
	return 0;
}

int sc_state_next(const struct sc_fd *f, size_t *pos, struct sc_state_item *it)
{
	const uint8_t *p;
	size_t left = f->data_len - *pos;

	if (!left)
		return 0; /* also where there is no payload at all (f->data NULL) */
	p = (const uint8_t *)f->data + *pos;
	if (left < ITEM_HEAD || sc_get_le32(p + 4) > left - ITEM_HEAD)
		return sc_err(SELFCKPT_ELENGTH, "descriptor %d (%s): the state item at byte %zu "
			      "runs past the end of the %zu saved bytes", f->fd, f->path, *pos,
			      f->data_len);
	it->tag = sc_get_le32(p);
	it->len = sc_get_le32(p + 4);
	it->value = p + ITEM_HEAD;
	*pos += ITEM_HEAD + it->len;
	return 1;
}

bool sc_state_u64(const struct sc_state_item *it, uint64_t *v)
{
	if (it->len != 8)
		return false;
	*v = sc_get_le64(it->value);
	return true;
}

int sc_state_bad_length(const struct sc_fd *f, const struct sc_state_item *it)
{
	return sc_err(SELFCKPT_ELENGTH, "descriptor %d (%s): state item 0x%x has %u bytes, not "
		      "the length its kind gives it", f->fd, f->path, it->tag, it->len);
}

int sc_state_unknown(const struct sc_fd *f, const struct sc_state_item *it)
{
	if (!(it->tag & SC_STATE_REQUIRED))
		return 0;
	return sc_err(SELFCKPT_EUNKNOWN, "descriptor %d (%s): state item 0x%x is not known to "
		      "this version", f->fd, f->path, it->tag);
}
