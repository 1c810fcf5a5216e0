/* SPDX-License-Identifier: MIT */
/*
 * fd_record.c - the fd record (spec §9.6): a 104-byte fixed part, the path as
 * the variable part, and the saved contents as the payload.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fd_state.h"
#include "format/sc_log.h"

#define FD_META_FIXED 104u
#define FD_META_FIXED_1_2 88u /* before the signal owner */
#define FD_META_FIXED_1_1 80u /* before the seals */
#define FD_META_FIXED_1_0 72u /* before the description id */

_Static_assert(sizeof(size_t) == sizeof(uint64_t), "x86-64: raw_len fits a size_t");

int sc_fd_write_record(struct sc_writer *w, const struct sc_fd *f)
{
	size_t path_len = f->path ? strlen(f->path) : 0;
	uint8_t *m;
	int err;

	if (f->fd < 0 || (unsigned)f->kind > SC_FD_KIND_LAST || path_len > SC_META_MAX - FD_META_FIXED)
		return sc_err(SELFCKPT_EUSAGE, "cannot record descriptor %d: kind %u, path of %zu "
			      "bytes", f->fd, (unsigned)f->kind, path_len);
	m = calloc(1, FD_META_FIXED + path_len);
	if (!m)
		return sc_err(ENOMEM, "out of memory recording descriptor %d", f->fd);
	sc_put_le32(m + 0, (uint32_t)f->fd);
	sc_put_le32(m + 4, (uint32_t)f->kind);
	sc_put_le32(m + 8, (uint32_t)f->open_flags);
	sc_put_le32(m + 12, (uint32_t)f->fd_flags);
	sc_put_le64(m + 16, f->pos);
	sc_put_le64(m + 24, f->dev);
	sc_put_le64(m + 32, f->inode);
	sc_put_le64(m + 40, f->size);
	sc_put_le64(m + 48, f->mtime_ns);
	sc_put_le32(m + 56, f->mode);
	sc_put_le32(m + 60, (uint32_t)path_len);
	sc_put_le64(m + 64, f->pipe_id);
	sc_put_le64(m + 72, f->share_id);
	sc_put_le32(m + 80, f->seals); /* and 4 reserved bytes */
	sc_put_le32(m + 88, f->owner_type);
	sc_put_le32(m + 92, (uint32_t)f->owner_pid);
	sc_put_le32(m + 96, f->owner_sig); /* and 4 reserved bytes */
	memcpy(m + FD_META_FIXED, f->path, path_len);
	err = sc_writer_record(w, SC_REC_FD, SC_RF_REQUIRED, m, (uint32_t)(FD_META_FIXED + path_len),
			       f->data, f->data_len);
	free(m);
	return err;
}

/* Checks of R-TYP-3 and R-TYP-5 on the meta, before any field is used. */
static int check_meta(struct sc_reader *r, const struct sc_record *rec)
{
	const uint8_t *m = rec->meta;
	uint32_t path_len, kind, fd;

	if (rec->meta_len < FD_META_FIXED_1_0)
		return sc_err(SELFCKPT_ELENGTH, "fd record %u of '%s' at offset %llu has %u bytes "
			      "of metadata: expected at least %u", rec->seq, sc_reader_name(r),
			      (unsigned long long)rec->offset, rec->meta_len, FD_META_FIXED_1_0);
	path_len = sc_get_le32(m + 60);
	if (path_len > rec->meta_len - FD_META_FIXED_1_0)
		return sc_err(SELFCKPT_ELENGTH, "fd record %u of '%s' at offset %llu has a path of "
			      "%u bytes: expected at most %u after the fixed part", rec->seq,
			      sc_reader_name(r), (unsigned long long)rec->offset, path_len,
			      rec->meta_len - FD_META_FIXED_1_0);
	kind = sc_get_le32(m + 4);
	if (kind > SC_FD_KIND_LAST)
		return sc_err(SELFCKPT_EUNKNOWN, "fd record %u of '%s' at offset %llu has kind %u: "
			      "expected 0 to %u", rec->seq, sc_reader_name(r),
			      (unsigned long long)rec->offset, kind, (unsigned)SC_FD_KIND_LAST);
	fd = sc_get_le32(m + 0);
	if (fd > INT_MAX)
		return sc_err(SELFCKPT_ELENGTH, "fd record %u of '%s' at offset %llu has descriptor "
			      "number %u: expected at most %d", rec->seq, sc_reader_name(r),
			      (unsigned long long)rec->offset, fd, INT_MAX);
	if (memchr(m + rec->meta_len - path_len, '\0', path_len))
		return sc_err(SELFCKPT_ELENGTH, "fd record %u of '%s' at offset %llu has a NUL byte "
			      "in its path (R-TYP-4)", rec->seq, sc_reader_name(r),
			      (unsigned long long)rec->offset);
	return 0;
}

/* The item list of an object's record (R-TYP-14), the error naming the record. */
static int check_state(struct sc_reader *r, const struct sc_record *rec, const struct sc_fd *f)
{
	char why[256];
	int err = sc_fd_state_check(f);

	if (!err)
		return 0;
	snprintf(why, sizeof(why), "%s", selfckpt_last_error());
	return sc_err(-err, "fd record %u of '%s' at offset %llu: %s", rec->seq,
		      sc_reader_name(r), (unsigned long long)rec->offset, why);
}

int sc_fd_read_record(struct sc_reader *r, const struct sc_record *rec, struct sc_fd *out)
{
	const uint8_t *m = rec->meta;
	uint32_t path_len;
	int err;

	memset(out, 0, sizeof(*out));
	if (rec->type != SC_REC_FD)
		return sc_err(SELFCKPT_EUSAGE, "record %u of '%s' has type %u, not fd (%u)",
			      rec->seq, sc_reader_name(r), rec->type, SC_REC_FD);
	err = check_meta(r, rec);
	if (err)
		return err;
	path_len = sc_get_le32(m + 60);
	out->fd = (int)sc_get_le32(m + 0);
	out->kind = (enum sc_fd_kind)sc_get_le32(m + 4);
	out->open_flags = (int)sc_get_le32(m + 8);
	out->fd_flags = (int)sc_get_le32(m + 12);
	out->pos = sc_get_le64(m + 16);
	out->dev = sc_get_le64(m + 24);
	out->inode = sc_get_le64(m + 32);
	out->size = sc_get_le64(m + 40);
	out->mtime_ns = sc_get_le64(m + 48);
	out->mode = sc_get_le32(m + 56);
	out->pipe_id = sc_get_le64(m + 64);
	/* a fixed part of format 1.0 ends before the description id (R-TYP-10) */
	if (rec->meta_len - path_len >= FD_META_FIXED_1_1)
		out->share_id = sc_get_le64(m + 72);
	if (rec->meta_len - path_len >= FD_META_FIXED_1_2) /* 1.2 */
		out->seals = sc_get_le32(m + 80);
	if (rec->meta_len - path_len >= FD_META_FIXED) { /* 1.6 */
		out->owner_type = sc_get_le32(m + 88);
		out->owner_pid = (int32_t)sc_get_le32(m + 92);
		out->owner_sig = sc_get_le32(m + 96);
	}
	/* the path is the last path_len bytes: a newer minor may grow the fixed part (R-VER-9) */
	out->path = strndup((const char *)m + rec->meta_len - path_len, path_len);
	if (!out->path)
		return sc_err(ENOMEM, "out of memory reading fd record %u of '%s'", rec->seq,
			      sc_reader_name(r));
	err = sc_reader_read_all(r, rec, &out->data, &out->data_len);
	if (!err)
		err = check_state(r, rec, out);
	if (err) {
		free(out->path);
		free(out->data);
		memset(out, 0, sizeof(*out));
	}
	return err;
}

/*
 * The list is in the order of the numbers, but for the descriptors in flight
 * at its end: a binary search finds nearly every one (an epoll instance's
 * 100 watches, each looked up among 10,000 records), and a scan the rest.
 */
const struct sc_fd *sc_fds_find(const struct sc_fd *fds, size_t n, int fd)
{
	for (size_t lo = 0, hi = n; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (fds[mid].fd == fd)
			return &fds[mid];
		if (fds[mid].fd < fd)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = 0; i < n; i++)
		if (fds[i].fd == fd)
			return &fds[i];
	return NULL;
}
