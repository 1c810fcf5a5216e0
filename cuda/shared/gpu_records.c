/* SPDX-License-Identifier: MIT */
/*
 * gpu_records.c - encoding the CUDA records' metadata, little-endian.
 *
 * CUDA_LOG meta (64 bytes): version u32 @0, modules u32 @4, device_bytes u64
 * @8, host_bytes u64 @16, blocks u32 @24, reserved u32 @28, channel u64 @32,
 * reserved @40..63. Payload: per module, a 16-byte header (kind u32: 0 module,
 * 1 library; reserved u32; length u64) and the image, padded to 8 bytes.
 * DEVMEM meta (32 bytes): address u64 @0, length u64 @8, kind u32 @16, device
 * u32 @20, offset u64 @24 (arrays; zero otherwise); in an incremental image
 * (1.7) 40 bytes, with flags u32 @32 (bit 0: a parent piece) and a reserved
 * u32 @36. Payload: the bytes, none for a parent piece.
 */
#include <string.h>

#include "cuda/shared/gpu_records.h"
#include "format/sc_format.h"

void sc_cuda_summary_encode(const struct sc_cuda_summary *s, uint8_t *m)
{
	memset(m, 0, SC_CUDA_LOG_META);
	sc_put_le32(m, SC_CUDA_LOG_VERSION);
	sc_put_le32(m + 4, s->modules);
	sc_put_le64(m + 8, s->device_bytes);
	sc_put_le64(m + 16, s->host_bytes);
	sc_put_le32(m + 24, s->blocks);
	sc_put_le64(m + 32, s->channel);
}

int sc_cuda_summary_decode(const uint8_t *m, uint32_t len, struct sc_cuda_summary *s)
{
	if (len != SC_CUDA_LOG_META)
		return -SELFCKPT_ELENGTH;
	s->version = sc_get_le32(m);
	s->modules = sc_get_le32(m + 4);
	s->device_bytes = sc_get_le64(m + 8);
	s->host_bytes = sc_get_le64(m + 16);
	s->blocks = sc_get_le32(m + 24);
	s->channel = sc_get_le64(m + 32);
	if (s->version != SC_CUDA_LOG_VERSION)
		return -SELFCKPT_EVERSION;
	if (sc_get_le32(m + 28))
		return -SELFCKPT_ERESERVED;
	for (int i = 40; i < SC_CUDA_LOG_META; i++)
		if (m[i])
			return -SELFCKPT_ERESERVED;
	return 0;
}

void sc_cuda_image_header(uint8_t *h, int library, uint64_t len)
{
	memset(h, 0, SC_CUDA_IMAGE_HEADER);
	sc_put_le32(h, library ? 1 : 0);
	sc_put_le64(h + 8, len);
}

void sc_cuda_image_header_decode(const uint8_t *h, int *library, uint64_t *len)
{
	*library = sc_get_le32(h) == 1;
	*len = sc_get_le64(h + 8);
}

uint32_t sc_devmem_encode(uint8_t *m, const struct sc_devmem *d, bool wide)
{
	memset(m, 0, wide ? SC_DEVMEM_META_WIDE : SC_DEVMEM_META);
	sc_put_le64(m, d->addr);
	sc_put_le64(m + 8, d->len);
	sc_put_le32(m + 16, d->kind);
	sc_put_le32(m + 20, d->dev);
	sc_put_le64(m + 24, d->kind == SC_DEVMEM_ARRAY ? d->offset : 0);
	if (!wide)
		return SC_DEVMEM_META;
	sc_put_le32(m + 32, d->flags);
	return SC_DEVMEM_META_WIDE;
}

int sc_devmem_decode(const uint8_t *m, uint32_t meta_len, struct sc_devmem *d)
{
	if (meta_len != SC_DEVMEM_META && meta_len != SC_DEVMEM_META_WIDE)
		return -SELFCKPT_ELENGTH;
	d->addr = sc_get_le64(m);
	d->len = sc_get_le64(m + 8);
	d->kind = sc_get_le32(m + 16);
	d->dev = sc_get_le32(m + 20);
	d->offset = sc_get_le64(m + 24);
	d->flags = meta_len == SC_DEVMEM_META_WIDE ? sc_get_le32(m + 32) : 0;
	if (d->kind > SC_DEVMEM_ARRAY)
		return -SELFCKPT_EUNKNOWN;
	if (d->offset && d->kind != SC_DEVMEM_ARRAY)
		return -SELFCKPT_ERESERVED;
	if (meta_len == SC_DEVMEM_META_WIDE &&
	    ((d->flags & ~SC_DEVMEM_PARENT) || sc_get_le32(m + 36)))
		return -SELFCKPT_ERESERVED;
	return 0;
}

int sc_devmem_read(const struct sc_record *rec, bool incremental, struct sc_devmem *d)
{
	int err = sc_devmem_decode(rec->meta, rec->meta_len, d);

	if (err || !(d->flags & SC_DEVMEM_PARENT))
		return !err && rec->raw_len != d->len ? -SELFCKPT_ELENGTH : err;
	/* [R-INC-6] no bytes, in an incremental image, of device memory */
	return rec->raw_len || !incremental || d->kind != SC_DEVMEM_DEVICE ? -SELFCKPT_ELENGTH : 0;
}
