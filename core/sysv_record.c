/* SPDX-License-Identifier: MIT */
/*
 * sysv_record.c - the sysv-ipc record (type 11, spec §9.13): a 48-byte fixed
 * part; for a semaphore set one 8-byte entry per semaphore, for a queue one
 * 16-byte entry per message as the variable part; the payload holds the
 * queue's texts, or the bytes of a segment that was not attached.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/sc_sysv.h"
#include "format/sc_log.h"

#define SYSV_FIXED 48u
#define SEM_ENTRY 8u
#define MSG_ENTRY 16u
#define SC_SEMVMX 32767u /* SEMVMX */

const char *sc_sysv_kind_name(uint32_t kind)
{
	switch (kind) {
	case SC_SYSV_SHM: return "shared memory segment";
	case SC_SYSV_SEM: return "semaphore set";
	case SC_SYSV_MSG: return "message queue";
	default: return "System V object";
	}
}

void sc_sysv_obj_release(struct sc_sysv_obj *o)
{
	if (!o)
		return;
	free(o->semval);
	free(o->sempid);
	free(o->msgs);
	free(o->data);
	memset(o, 0, sizeof(*o));
}

void sc_sysv_objs_free(struct sc_sysv_obj *o, size_t n)
{
	for (size_t i = 0; o && i < n; i++)
		sc_sysv_obj_release(&o[i]);
	free(o);
}

static size_t entry_size(uint32_t kind)
{
	return kind == SC_SYSV_SEM ? SEM_ENTRY : kind == SC_SYSV_MSG ? MSG_ENTRY : 0;
}

static void put_entries(uint8_t *v, const struct sc_sysv_obj *o)
{
	for (uint32_t i = 0; i < o->count; i++) {
		if (o->kind == SC_SYSV_SEM) {
			sc_put_le16(v + SEM_ENTRY * i, o->semval[i]);
			sc_put_le32(v + SEM_ENTRY * i + 4, (uint32_t)o->sempid[i]);
		} else {
			sc_put_le64(v + MSG_ENTRY * i, (uint64_t)o->msgs[i].type);
			sc_put_le64(v + MSG_ENTRY * i + 8, o->msgs[i].len);
		}
	}
}

int sc_sysv_write(struct sc_writer *w, const struct sc_sysv_obj *o)
{
	size_t size = SYSV_FIXED + entry_size(o->kind) * o->count;
	uint8_t *m = calloc(1, size);
	int err;

	if (!m)
		return sc_err(ENOMEM, "out of memory writing the sysv-ipc record");
	sc_put_le32(m, o->kind);
	sc_put_le32(m + 4, (uint32_t)o->key);
	sc_put_le32(m + 8, (uint32_t)o->id);
	sc_put_le32(m + 12, o->mode);
	sc_put_le32(m + 16, o->uid);
	sc_put_le32(m + 20, o->gid);
	sc_put_le32(m + 24, o->flags);
	sc_put_le32(m + 28, o->count);
	sc_put_le64(m + 32, o->size);
	put_entries(m + SYSV_FIXED, o);
	err = sc_writer_record(w, SC_REC_SYSV, SC_RF_REQUIRED, m, (uint32_t)size, o->data,
			       o->data_len);
	free(m);
	return err;
}

static int bad(struct sc_reader *r, const struct sc_record *rec, int code, const char *why,
	       uint64_t v)
{
	return sc_err(code, "bad sysv-ipc record %u in '%s' at offset %llu: %s (%llu)", rec->seq,
		      sc_reader_name(r), (unsigned long long)rec->offset, why,
		      (unsigned long long)v);
}

/* R-TYP-22: the fixed part's checks, with the length of the entries and payload. */
static int check_fixed(struct sc_reader *r, const struct sc_record *rec, const uint8_t *m)
{
	uint32_t kind = sc_get_le32(m), flags = sc_get_le32(m + 24), count = sc_get_le32(m + 28);
	uint64_t size = sc_get_le64(m + 32);

	if (kind < SC_SYSV_SHM || kind > SC_SYSV_MSG)
		return bad(r, rec, SELFCKPT_EUNKNOWN, "unknown kind", kind);
	if (sc_get_le32(m + 8) > INT_MAX)
		return bad(r, rec, SELFCKPT_ELENGTH, "id out of range", sc_get_le32(m + 8));
	if ((flags & ~SC_SYSV_FLAGS) || (kind != SC_SYSV_SHM && flags))
		return bad(r, rec, SELFCKPT_ERESERVED, "reserved flags set", flags);
	if (sc_get_le64(m + 40))
		return bad(r, rec, SELFCKPT_ERESERVED, "reserved field set", sc_get_le64(m + 40));
	if (kind == SC_SYSV_SHM && (count || !size || size > SC_SYSV_SHM_MAX))
		return bad(r, rec, SELFCKPT_ELENGTH, "segment size out of range", size);
	if (kind == SC_SYSV_SHM && rec->raw_len != (flags & SC_SYSV_STORED ? size : 0))
		return bad(r, rec, SELFCKPT_ELENGTH, "payload is not the segment's size",
			   rec->raw_len);
	if (kind == SC_SYSV_SEM && (!count || count > SC_SYSV_SEMS_MAX || size || rec->raw_len))
		return bad(r, rec, SELFCKPT_ELENGTH, "semaphore count out of range", count);
	if (kind == SC_SYSV_MSG && (count > SC_SYSV_MSGS_MAX || size > INT_MAX))
		return bad(r, rec, SELFCKPT_ELENGTH, "message count or queue size out of range",
			   count);
	if ((uint64_t)count * entry_size(kind) > rec->meta_len - SYSV_FIXED)
		return bad(r, rec, SELFCKPT_ELENGTH, "entries do not fit the metadata",
			   rec->meta_len);
	return 0;
}

/* The entries (@v): semaphore values and pids, or message types and lengths. */
static int read_entries(struct sc_reader *r, const struct sc_record *rec, const uint8_t *v,
			struct sc_sysv_obj *o)
{
	uint64_t total = 0;

	if (o->kind == SC_SYSV_SEM) {
		o->semval = calloc(o->count, sizeof(*o->semval));
		o->sempid = calloc(o->count, sizeof(*o->sempid));
	} else if (o->kind == SC_SYSV_MSG && o->count) {
		o->msgs = calloc(o->count, sizeof(*o->msgs));
	}
	if ((o->kind == SC_SYSV_SEM && (!o->semval || !o->sempid)) ||
	    (o->kind == SC_SYSV_MSG && o->count && !o->msgs))
		return sc_err(ENOMEM, "out of memory reading '%s'", sc_reader_name(r));
	for (uint32_t i = 0; i < o->count; i++) {
		const uint8_t *e = v + entry_size(o->kind) * i;

		if (o->kind == SC_SYSV_SEM) {
			o->semval[i] = sc_get_le16(e);
			o->sempid[i] = (int32_t)sc_get_le32(e + 4);
			if (o->semval[i] > SC_SEMVMX || sc_get_le16(e + 2) ||
			    sc_get_le32(e + 4) > INT_MAX)
				return bad(r, rec, sc_get_le16(e + 2) ? SELFCKPT_ERESERVED
						   : SELFCKPT_ELENGTH, "bad semaphore", i);
			continue;
		}
		o->msgs[i] = (struct sc_sysv_msg){ (int64_t)sc_get_le64(e), sc_get_le64(e + 8) };
		if (o->msgs[i].type <= 0 || o->msgs[i].len > INT_MAX)
			return bad(r, rec, SELFCKPT_ELENGTH, "bad message type or length", i);
		total += o->msgs[i].len;
	}
	if (o->kind == SC_SYSV_MSG && total != rec->raw_len)
		return bad(r, rec, SELFCKPT_ELENGTH, "payload is not the messages' length",
			   rec->raw_len);
	return 0;
}

int sc_sysv_read(struct sc_reader *r, const struct sc_record *rec, struct sc_sysv_obj *o)
{
	const uint8_t *m = rec->meta;
	int err;

	memset(o, 0, sizeof(*o));
	if (rec->meta_len < SYSV_FIXED)
		return sc_err(SELFCKPT_ELENGTH, "bad sysv-ipc record %u in '%s' at offset %llu: "
			      "%u bytes of metadata, at least %u expected", rec->seq,
			      sc_reader_name(r), (unsigned long long)rec->offset, rec->meta_len,
			      SYSV_FIXED);
	if ((err = check_fixed(r, rec, m)) < 0)
		return err;
	*o = (struct sc_sysv_obj){ .kind = sc_get_le32(m), .key = (int32_t)sc_get_le32(m + 4),
				   .id = (int32_t)sc_get_le32(m + 8), .mode = sc_get_le32(m + 12),
				   .uid = sc_get_le32(m + 16), .gid = sc_get_le32(m + 20),
				   .flags = sc_get_le32(m + 24), .count = sc_get_le32(m + 28),
				   .size = sc_get_le64(m + 32) };
	/* the entries end the meta: a newer minor may grow the fixed part (R-VER-9) */
	err = read_entries(r, rec, m + rec->meta_len - entry_size(o->kind) * o->count, o);
	if (!err) {
		void *data = NULL;
		size_t len = 0;

		err = sc_reader_read_all(r, rec, &data, &len);
		o->data = data;
		o->data_len = len;
	}
	if (err)
		sc_sysv_obj_release(o);
	return err;
}
