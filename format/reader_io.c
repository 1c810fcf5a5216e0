/* SPDX-License-Identifier: MIT */
/*
 * reader_io.c - bytes from the image, in order.
 *
 * A seekable image is read with pread() at r->pos; a stream with read(), and
 * every byte before the trailer goes through the whole-file hash. Running out
 * of bytes is always reported as truncation, naming what was being read.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "format/reader_internal.h"
#include "format/sc_log.h"

static int read_raw(struct sc_reader *r, void *buf, size_t n, const char *what)
{
	uint8_t *b = buf;
	size_t got = 0;

	while (got < n) {
		ssize_t k = r->seekable ? pread(r->fd, b + got, n - got, (off_t)(r->pos + got))
					: read(r->fd, b + got, n - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return sc_err(errno, "cannot read '%s' at offset %llu (%s): %s", r->name,
				      (unsigned long long)(r->pos + got), what, strerror(errno));
		if (k == 0)
			return sc_err(SELFCKPT_ETRUNCATED,
				      "'%s' is truncated: it ends at offset %llu inside %s "
				      "(%zu more bytes expected)",
				      r->name, (unsigned long long)(r->pos + got), what, n - got);
		got += (size_t)k;
	}
	r->pos += n;
	return 0;
}

int sc_rd_read_nohash(struct sc_reader *r, void *buf, size_t n, const char *what)
{
	return read_raw(r, buf, n, what);
}

int sc_rd_read(struct sc_reader *r, void *buf, size_t n, const char *what)
{
	int err = read_raw(r, buf, n, what);

	if (!err && !r->seekable)
		XXH3_64bits_update(r->hash, buf, n);
	return err;
}

int sc_rd_skip_bytes(struct sc_reader *r, uint64_t n, const char *what)
{
	uint8_t buf[64 << 10];

	if (r->seekable) {
		if (n > r->file_size - r->pos)
			return sc_err(SELFCKPT_ETRUNCATED,
				      "'%s' is truncated: %s at offset %llu needs %llu bytes, "
				      "the file ends at %llu",
				      r->name, what, (unsigned long long)r->pos,
				      (unsigned long long)n, (unsigned long long)r->file_size);
		r->pos += n;
		return 0;
	}
	while (n) {
		size_t k = n < sizeof(buf) ? (size_t)n : sizeof(buf);
		int err = sc_rd_read(r, buf, k, what);

		if (err < 0)
			return err;
		n -= k;
	}
	return 0;
}

/* 1 when nothing follows r->pos, 0 when a byte does (consumed), or an error. */
int sc_rd_at_eof(struct sc_reader *r)
{
	uint8_t b;
	ssize_t k;

	if (r->seekable)
		return r->pos == r->file_size;
	do
		k = read(r->fd, &b, 1);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return sc_err(errno, "cannot read '%s' at offset %llu: %s", r->name,
			      (unsigned long long)r->pos, strerror(errno));
	return k == 0;
}

/* Read up to @n bytes, fewer only at the end of the file; for the header. */
size_t sc_rd_read_some(struct sc_reader *r, void *buf, size_t n, int *err)
{
	uint8_t *b = buf;
	size_t got = 0;

	*err = 0;
	while (got < n) {
		ssize_t k = r->seekable ? pread(r->fd, b + got, n - got, (off_t)(r->pos + got))
					: read(r->fd, b + got, n - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			*err = sc_err(errno, "cannot read '%s': %s", r->name, strerror(errno));
			return got;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	if (!r->seekable)
		XXH3_64bits_update(r->hash, b, got);
	r->pos += got;
	return got;
}
