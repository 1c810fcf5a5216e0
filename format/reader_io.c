/* SPDX-License-Identifier: MIT */
/*
 * reader_io.c - bytes from the image, in order.
 *
 * A seekable image is read with pread() at r->pos; a stream with read(), and
 * every byte before the trailer goes through the whole-file hash. Running out
 * of bytes is always reported as truncation, naming what was being read.
 *
 * Small reads of a seekable image (record headers, metadata, chunk headers
 * and small chunks) come from a window read ahead: a record of a descriptor
 * is a few hundred bytes in four pieces, and 10,000 of them took 40,000
 * pread() calls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/reader_internal.h"
#include "format/sc_log.h"

#define WINDOW_SIZE (64u << 10)
#define WINDOW_READ_MAX (WINDOW_SIZE / 4) /* larger reads go straight to the file */

/* Read the window from @at on; false when it cannot be (then the file is read directly). */
static bool window_fill(struct sc_reader *r, uint64_t at)
{
	ssize_t k;

	if (!r->win && !(r->win = malloc(WINDOW_SIZE)))
		return false;
	do
		k = pread(r->fd, r->win, WINDOW_SIZE, (off_t)at);
	while (k < 0 && errno == EINTR);
	r->win_at = at;
	r->win_len = k > 0 ? (size_t)k : 0;
	return k > 0;
}

/*
 * The @n bytes at @at of a seekable image, from the window (read again from
 * @at when they are not in it), into @dst; false when they are not there:
 * a large read, or the end of the file (read directly, to report it).
 */
bool sc_rd_window_copy(struct sc_reader *r, uint64_t at, void *dst, size_t n)
{
	if (!r->seekable || n > WINDOW_READ_MAX)
		return false;
	if ((at < r->win_at || at + n > r->win_at + r->win_len) && !window_fill(r, at))
		return false;
	if (at + n > r->win_at + r->win_len)
		return false;
	memcpy(dst, r->win + (at - r->win_at), n);
	return true;
}

static int read_raw(struct sc_reader *r, void *buf, size_t n, const char *what)
{
	uint8_t *b = buf;
	size_t got = 0;

	if (sc_rd_window_copy(r, r->pos, buf, n)) {
		r->pos += n;
		return 0;
	}
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
