/* SPDX-License-Identifier: MIT */
/*
 * locks_record.c - the locks record (type 9, spec §9.11): an 8-byte fixed
 * part (count, reserved) and one 32-byte entry per lock as the variable part.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/sc_locks.h"
#include "format/sc_log.h"

#define LOCKS_FIXED 8u
#define LOCK_ENTRY 32u
#define LOCKS_MAX 65536u

int sc_locks_write(struct sc_writer *w, const struct sc_lock *locks, size_t n)
{
	size_t size = LOCKS_FIXED + LOCK_ENTRY * n;
	uint8_t *m;
	int err;

	if (!n)
		return 0;
	if (n > LOCKS_MAX)
		return sc_err(SELFCKPT_EUSAGE, "cannot record %zu file locks: at most %u", n,
			      LOCKS_MAX);
	m = calloc(1, size);
	if (!m)
		return sc_err(ENOMEM, "out of memory writing the locks record");
	sc_put_le32(m, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		uint8_t *e = m + LOCKS_FIXED + LOCK_ENTRY * i;

		sc_put_le32(e, (uint32_t)locks[i].fd);
		sc_put_le32(e + 4, locks[i].kind);
		sc_put_le32(e + 8, locks[i].type);
		sc_put_le64(e + 16, locks[i].start);
		sc_put_le64(e + 24, locks[i].end);
	}
	err = sc_writer_record(w, SC_REC_LOCKS, SC_RF_REQUIRED, m, (uint32_t)size, NULL, 0);
	free(m);
	return err;
}

static int bad(struct sc_reader *r, const struct sc_record *rec, int code, const char *why,
	       uint32_t i)
{
	return sc_err(code, "bad locks record %u in '%s' at offset %llu: entry %u %s", rec->seq,
		      sc_reader_name(r), (unsigned long long)rec->offset, i, why);
}

/* R-TYP-20: the checks of one entry. */
static int check_entry(struct sc_reader *r, const struct sc_record *rec, const uint8_t *e,
		       uint32_t i)
{
	uint32_t kind = sc_get_le32(e + 4), type = sc_get_le32(e + 8);

	if (sc_get_le32(e) > INT_MAX)
		return bad(r, rec, SELFCKPT_ELENGTH, "has a descriptor number out of range", i);
	if (kind < SC_LOCK_POSIX || kind > SC_LOCK_LEASE)
		return bad(r, rec, SELFCKPT_EUNKNOWN, "has an unknown kind", i);
	if (type > SC_LOCK_WRITE)
		return bad(r, rec, SELFCKPT_EUNKNOWN, "has an unknown type", i);
	if (sc_get_le32(e + 12))
		return bad(r, rec, SELFCKPT_ERESERVED, "has its reserved field set", i);
	if (sc_get_le64(e + 16) > sc_get_le64(e + 24))
		return bad(r, rec, SELFCKPT_ELENGTH, "ends before it starts", i);
	return 0;
}

int sc_locks_read(struct sc_reader *r, const struct sc_record *rec, struct sc_lock **out,
		  size_t *n)
{
	const uint8_t *m = rec->meta, *v;
	uint32_t count;
	int err = 0;

	*out = NULL;
	*n = 0;
	if (rec->meta_len < LOCKS_FIXED)
		return sc_err(SELFCKPT_ELENGTH, "bad locks record %u in '%s' at offset %llu: %u "
			      "bytes of metadata, at least %u expected", rec->seq,
			      sc_reader_name(r), (unsigned long long)rec->offset, rec->meta_len,
			      LOCKS_FIXED);
	count = sc_get_le32(m);
	if (sc_get_le32(m + 4))
		return bad(r, rec, SELFCKPT_ERESERVED, "(the fixed part) has its reserved field "
			   "set", 0);
	if (count > LOCKS_MAX || (uint64_t)count * LOCK_ENTRY > rec->meta_len - LOCKS_FIXED)
		return sc_err(SELFCKPT_ELENGTH, "bad locks record %u in '%s' at offset %llu: %u "
			      "locks do not fit its %u bytes of metadata", rec->seq,
			      sc_reader_name(r), (unsigned long long)rec->offset, count,
			      rec->meta_len);
	/* the entries end the meta: a newer minor may grow the fixed part (R-VER-9) */
	v = m + rec->meta_len - (size_t)count * LOCK_ENTRY;
	for (uint32_t i = 0; i < count && !err; i++)
		err = check_entry(r, rec, v + LOCK_ENTRY * i, i);
	if (err || !count)
		return err;
	*out = calloc(count, sizeof(**out));
	if (!*out)
		return sc_err(ENOMEM, "out of memory reading '%s'", sc_reader_name(r));
	for (uint32_t i = 0; i < count; i++) {
		const uint8_t *e = v + LOCK_ENTRY * i;

		(*out)[i] = (struct sc_lock){ .fd = (int32_t)sc_get_le32(e),
					      .kind = sc_get_le32(e + 4),
					      .type = sc_get_le32(e + 8),
					      .start = sc_get_le64(e + 16),
					      .end = sc_get_le64(e + 24) };
	}
	*n = count;
	return 0;
}
