/* SPDX-License-Identifier: MIT */
/*
 * cuda_log_read.c - the module images of a CUDA_LOG record, each described:
 * sc_cuda_log_read() and sc_cuda_log_release() (module_info.h).
 *
 * The record's layout (its summary, a header per module, each image padded to
 * 8 bytes) is the image format's, decoded with cuda_image.h; a damaged layout
 * fails the read, a module that cannot be described does not.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/tools/module_info.h"
#include "format/sc_log.h"

#define log_err(r, rec, code, fmt, ...)                                                      \
	sc_err(code, "cuda-log record %u of '%s': " fmt, (rec)->seq, sc_reader_name(r),       \
	       ##__VA_ARGS__)

void sc_cuda_log_release(struct sc_cuda_log *log)
{
	if (!log)
		return;
	for (size_t i = 0; i < log->mods_n; i++) {
		sc_module_info_release(&log->mods[i].info);
		free(log->mods[i].why);
	}
	free(log->mods);
	memset(log, 0, sizeof(*log));
}

/* The bytes that pad a module to 8 must be zero, as every reserved byte. */
static bool padding_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* A module that cannot be described is kept, with why; only running out of memory fails. */
static int describe(struct sc_cuda_module *mod, const uint8_t *img)
{
	int err = sc_module_info(img, mod->len, &mod->info);

	if (err == -ENOMEM)
		return sc_err(ENOMEM, "out of memory describing a %llu-byte CUDA module",
			      (unsigned long long)mod->len);
	if (err < 0) {
		mod->err = err;
		if (!(mod->why = strdup(selfckpt_last_error())))
			return sc_err(ENOMEM, "out of memory describing a CUDA module");
	}
	return 0;
}

/* The header of module @i, at payload offset @at; *@left: payload bytes not read yet. */
static int read_module_header(struct sc_reader *r, const struct sc_record *rec, uint32_t i,
			      uint64_t *left, struct sc_cuda_module *mod)
{
	uint64_t at = rec->raw_len - *left;
	uint8_t h[SC_CUDA_IMAGE_HEADER];
	uint32_t kind, reserved;
	int library, err;

	if (*left < sizeof(h))
		return log_err(r, rec, SELFCKPT_ELENGTH, "the header of module %u at payload "
			       "offset %llu runs past the payload's end", i,
			       (unsigned long long)at);
	if ((err = sc_reader_read(r, h, sizeof(h))) < 0)
		return err;
	*left -= sizeof(h);
	kind = sc_get_le32(h);
	reserved = sc_get_le32(h + 4);
	if (kind > 1 || reserved)
		return log_err(r, rec, kind > 1 ? SELFCKPT_EUNKNOWN : SELFCKPT_ERESERVED,
			       "module %u at payload offset %llu: kind %u (expected 0 or 1), "
			       "reserved 0x%x (expected 0)", i, (unsigned long long)at, kind,
			       reserved);
	sc_cuda_image_header_decode(h, &library, &mod->len);
	mod->library = library;
	if (mod->len > *left || sc_cuda_pad8(mod->len) > *left)
		return log_err(r, rec, SELFCKPT_ELENGTH, "module %u at payload offset %llu is "
			       "%llu bytes long, but %llu are left", i, (unsigned long long)at,
			       (unsigned long long)mod->len, (unsigned long long)*left);
	return 0;
}

static int read_module(struct sc_reader *r, const struct sc_record *rec, uint32_t i,
		       uint64_t *left, struct sc_cuda_module *mod)
{
	uint8_t pad[8] = { 0 }, *img;
	size_t n_pad;
	int err = read_module_header(r, rec, i, left, mod);

	if (err < 0)
		return err;
	n_pad = sc_cuda_pad8(mod->len) - mod->len;
	if (!(img = malloc(mod->len ? mod->len : 1)))
		return sc_err(ENOMEM, "out of memory reading module %u (%llu bytes) of '%s'", i,
			      (unsigned long long)mod->len, sc_reader_name(r));
	err = sc_reader_read(r, img, mod->len);
	if (!err)
		err = sc_reader_read(r, pad, n_pad);
	if (!err && !padding_zero(pad, n_pad))
		err = log_err(r, rec, SELFCKPT_ERESERVED, "the padding after module %u is not zero",
			      i);
	*left -= mod->len + n_pad;
	if (!err)
		err = describe(mod, img);
	free(img);
	return err;
}

int sc_cuda_log_read(struct sc_reader *r, const struct sc_record *rec, struct sc_cuda_log *log)
{
	uint64_t left = rec->raw_len;
	int err;

	memset(log, 0, sizeof(*log));
	log->seq = rec->seq;
	err = sc_cuda_summary_decode(rec->meta, rec->meta_len, &log->sum);
	if (err < 0)
		return log_err(r, rec, -err, "its %u-byte summary is damaged: %s", rec->meta_len,
			       selfckpt_strerror(err));
	if (log->sum.modules > left / SC_CUDA_IMAGE_HEADER)
		return log_err(r, rec, SELFCKPT_ELENGTH, "%u modules cannot fit in a payload of "
			       "%llu bytes", log->sum.modules, (unsigned long long)left);
	log->mods = calloc(log->sum.modules ? log->sum.modules : 1, sizeof(*log->mods));
	if (!log->mods)
		return sc_err(ENOMEM, "out of memory reading the CUDA modules of '%s'",
			      sc_reader_name(r));
	for (uint32_t i = 0; !err && i < log->sum.modules; i++) {
		err = read_module(r, rec, i, &left, &log->mods[i]);
		log->mods_n++;
	}
	if (!err && left)
		err = log_err(r, rec, SELFCKPT_ELENGTH, "%llu bytes follow the last of its %u "
			      "modules", (unsigned long long)left, log->sum.modules);
	if (err < 0)
		sc_cuda_log_release(log);
	return err;
}
