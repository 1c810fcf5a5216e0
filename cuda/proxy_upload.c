/* SPDX-License-Identifier: MIT */
/*
 * proxy_upload.c - device memory back from an image, read by the proxy.
 *
 * At a restart the proxy, not the application, reads the DEVMEM records: the
 * reader's threads and buffers then live here, and the restored process is
 * left exactly as it was saved. Each piece is read and checked into a
 * staging buffer of the channel (pinned) and copied to the GPU on a stream of
 * the proxy's own, with an event per buffer, so reading the next pieces
 * overlaps the copies. Pinned host memory is read straight into the channel.
 *
 * Request: a0 device ordinal whose records to take, a1 1 to take the pinned
 * host memory too, a2 number of array pairs; data: a2 x (u64 the library's
 * array handle, u64 the driver's), then the image path, NUL-terminated.
 * Reply on failure: data holds the reason.
 */
#include <stdio.h>
#include <string.h>

#include "cuda/cuda_image.h"
#include "cuda/cuda_internal.h"
#include "cuda/proxy_internal.h"
#include "format/sc_format.h"
#include "format/sc_log.h"

struct upload {
	struct sc_ch_slot *s;
	struct sc_reader *r;
	void *base;                      /* the channel */
	const uint64_t *arrays;          /* pairs */
	uint64_t arrays_n;
	CUstream stream;
	CUevent done[SC_CH_STAGING_BUFS];
	bool busy[SC_CH_STAGING_BUFS];
	unsigned next;
};

static CUresult fail(struct upload *u, CUresult r, const char *fmt, const char *what)
{
	char msg[512];

	snprintf(msg, sizeof(msg), fmt, what);
	sc_proxy_reply_str(u->s, msg);
	return r;
}

static CUarray array_real(const struct upload *u, uint64_t handle)
{
	for (uint64_t i = 0; i < u->arrays_n; i++)
		if (u->arrays[2 * i] == handle)
			return (CUarray)(uintptr_t)u->arrays[2 * i + 1];
	return NULL;
}

/* The copy of a staged piece to its place: device memory, or rows of an array. */
static CUresult issue(struct upload *u, const struct sc_devmem *d, void *buf)
{
	CUDA_ARRAY3D_DESCRIPTOR ad;
	CUDA_MEMCPY3D c;
	CUarray a;
	size_t row;

	if (d->kind != SC_DEVMEM_ARRAY)
		return sc_drv.cuMemcpyHtoDAsync(d->addr, buf, d->len, u->stream);
	if (!(a = array_real(u, d->addr)) || sc_drv.cuArray3DGetDescriptor(&ad, a))
		return CUDA_ERROR_INVALID_HANDLE;
	row = sc_array_element_bytes(&ad) * ad.Width;
	if (!row || d->len % row || d->offset % row)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = buf;
	c.srcPitch = row;
	c.srcHeight = d->len / row;
	c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	c.dstArray = a;
	c.dstY = d->offset / row % (ad.Height ? ad.Height : 1);
	c.dstZ = d->offset / row / (ad.Height ? ad.Height : 1);
	c.WidthInBytes = row;
	c.Height = d->len / row;
	c.Depth = 1;
	return sc_drv.cuMemcpy3DAsync(&c, u->stream);
}

static CUresult to_device(struct upload *u, const struct sc_record *rec,
			  const struct sc_devmem *d)
{
	unsigned k = u->next;
	void *buf = sc_ch_staging(u->base, k);
	CUresult r;
	int err;

	if (d->len > SC_CH_STAGING_BUF || rec->raw_len != d->len)
		return fail(u, CUDA_ERROR_INVALID_VALUE, "%s: a device memory record of the wrong "
			    "size", sc_reader_name(u->r));
	if (u->busy[k] && (r = sc_drv.cuEventSynchronize(u->done[k])) != CUDA_SUCCESS)
		return r;
	if ((err = sc_reader_read(u->r, buf, d->len)) < 0)
		return fail(u, CUDA_ERROR_FILE_NOT_FOUND, "%s", selfckpt_last_error());
	if ((r = issue(u, d, buf)) != CUDA_SUCCESS ||
	    (r = sc_drv.cuEventRecord(u->done[k], u->stream)) != CUDA_SUCCESS)
		return r;
	u->busy[k] = true;
	u->next = (k + 1) % SC_CH_STAGING_BUFS;
	return CUDA_SUCCESS;
}

static CUresult to_host(struct upload *u, const struct sc_record *rec,
			const struct sc_devmem *d)
{
	struct sc_ch_header *h = sc_ch_header(u->base);
	uint64_t heap = (uint64_t)(uintptr_t)u->base + SC_CH_HEAP_OFF;

	if (d->addr != heap || d->len > h->size - SC_CH_HEAP_OFF || rec->raw_len != d->len)
		return fail(u, CUDA_ERROR_INVALID_VALUE, "%s: pinned host memory that is not where "
			    "the channel is", sc_reader_name(u->r));
	if (sc_reader_read(u->r, (void *)(uintptr_t)d->addr, d->len) < 0)
		return fail(u, CUDA_ERROR_FILE_NOT_FOUND, "%s", selfckpt_last_error());
	return CUDA_SUCCESS;
}

static CUresult upload_records(struct upload *u)
{
	struct sc_record rec;
	CUresult r = CUDA_SUCCESS;
	int got;

	while (r == CUDA_SUCCESS && (got = sc_reader_next(u->r, &rec)) == 1) {
		struct sc_devmem d;

		if (rec.type != SC_REC_DEVMEM)
			continue;
		if (sc_devmem_decode(rec.meta, rec.meta_len, &d) < 0)
			return fail(u, CUDA_ERROR_INVALID_VALUE, "%s: a damaged device memory "
				    "record", sc_reader_name(u->r));
		if (d.kind == SC_DEVMEM_HOST)
			r = u->s->a[1] ? to_host(u, &rec, &d) : CUDA_SUCCESS;
		else if (d.dev == u->s->a[0])
			r = to_device(u, &rec, &d);
	}
	if (r == CUDA_SUCCESS && got < 0)
		return fail(u, CUDA_ERROR_FILE_NOT_FOUND, "%s", selfckpt_last_error());
	return r;
}

static CUresult op_upload(struct sc_ch_slot *s)
{
	struct upload u = { .s = s, .base = sc_proxy_channel };
	uint64_t pairs = s->a[2];
	const char *path = (const char *)s->data + pairs * 16;
	CUresult r, r2;

	if (pairs > SC_CH_INLINE / 16 || s->len <= pairs * 16 || s->data[s->len - 1])
		return CUDA_ERROR_INVALID_VALUE;
	u.arrays = (const uint64_t *)s->data;
	u.arrays_n = pairs;
	if (sc_reader_open(&u.r, path, NULL) < 0)
		return fail(&u, CUDA_ERROR_FILE_NOT_FOUND, "%s", selfckpt_last_error());
	r = sc_drv.cuStreamCreateWithPriority(&u.stream, CU_STREAM_NON_BLOCKING, 0);
	for (unsigned k = 0; r == CUDA_SUCCESS && k < SC_CH_STAGING_BUFS; k++)
		r = sc_drv.cuEventCreate(&u.done[k], CU_EVENT_DISABLE_TIMING);
	if (r == CUDA_SUCCESS)
		r = upload_records(&u);
	r2 = u.stream ? sc_drv.cuStreamSynchronize(u.stream) : CUDA_SUCCESS;
	for (unsigned k = 0; k < SC_CH_STAGING_BUFS; k++)
		if (u.done[k])
			sc_drv.cuEventDestroy(u.done[k]);
	if (u.stream)
		sc_drv.cuStreamDestroy(u.stream);
	sc_reader_free(u.r);
	return r != CUDA_SUCCESS ? r : r2;
}

void sc_proxy_ops_upload(sc_proxy_op_fn *t)
{
	t[SC_OP_UPLOAD] = op_upload;
}
