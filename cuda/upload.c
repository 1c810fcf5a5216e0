/* SPDX-License-Identifier: MIT */
/*
 * upload.c - device memory and pinned host memory back from the image, at a
 * restart. Each DEVMEM record is read (and checked) into a staging buffer
 * while the proxy copies earlier ones to the GPU; pinned host memory is read
 * straight into the channel, where it lives.
 */
#include "cuda/cuda_image.h"
#include "cuda/cuda_internal.h"
#include "format/sc_format.h"
#include "format/sc_log.h"

struct upload {
	struct sc_reader *r;
	const char *image;
	uint32_t ticket[SC_CH_STAGING_BUFS];
	bool busy[SC_CH_STAGING_BUFS];
	unsigned next;
	struct sc_cu_ctx *(*ctx_for)(CUdevice);
};

static int to_device(struct upload *u, const struct sc_record *rec, uint64_t addr,
		     uint64_t len, uint32_t dev)
{
	unsigned k = u->next;
	void *buf = sc_ch_staging(sc_cu.base, k);
	struct sc_cu_ctx *c = u->ctx_for((CUdevice)dev);
	struct sc_req r = { .op = SC_OP_COPY, .flags = SC_MSG_SYNC_STREAM,
			    .a = { addr, (uint64_t)(uintptr_t)buf, len, SC_COPY_HTOD, 0 } };
	CUresult res;
	int err;

	if (len > SC_CH_STAGING_BUF || rec->raw_len != len || !c)
		return sc_err(SELFCKPT_ELENGTH, "'%s' record %u: device memory piece of %llu "
			      "bytes at 0x%llx does not fit a restart", u->image, rec->seq,
			      (unsigned long long)len, (unsigned long long)addr);
	if (u->busy[k] && (res = sc_cu_wait_ticket(u->ticket[k])) != CUDA_SUCCESS)
		return sc_err(SELFCKPT_ECUDA, "restart: the GPU proxy failed");
	if ((err = sc_reader_read(u->r, buf, len)) < 0)
		return err;
	r.ctx = c->o.real;
	if ((res = sc_cu_post(&r)) != CUDA_SUCCESS)
		return sc_err(SELFCKPT_ECUDA, "restart: cannot send device memory: %s",
			      sc_cu_result_name(res));
	u->ticket[k] = r.ticket;
	u->busy[k] = true;
	u->next = (k + 1) % SC_CH_STAGING_BUFS;
	return 0;
}

static int to_host(struct upload *u, const struct sc_record *rec, uint64_t addr, uint64_t len)
{
	uint64_t heap = (uint64_t)(uintptr_t)sc_cu.base + SC_CH_HEAP_OFF;

	if (addr != heap || len > sc_cu.size - SC_CH_HEAP_OFF || rec->raw_len != len)
		return sc_err(SELFCKPT_ELENGTH, "'%s' record %u: pinned host memory at 0x%llx "
			      "(%llu bytes) is not where the channel is", u->image, rec->seq,
			      (unsigned long long)addr, (unsigned long long)len);
	return sc_reader_read(u->r, (void *)(uintptr_t)addr, len);
}

static int upload_records(struct upload *u)
{
	struct sc_record rec;
	int got, err = 0;

	while (!err && (got = sc_reader_next(u->r, &rec)) == 1) {
		uint64_t addr, len;
		uint32_t kind, dev;

		if (rec.type != SC_REC_DEVMEM)
			continue;
		err = sc_devmem_decode(rec.meta, rec.meta_len, &addr, &len, &kind, &dev);
		if (err < 0)
			return sc_err(-err, "'%s' record %u: damaged device memory record",
				      u->image, rec.seq);
		err = kind == SC_DEVMEM_HOST ? to_host(u, &rec, addr, len) :
					       to_device(u, &rec, addr, len, dev);
	}
	return err ? err : got;
}

int sc_cuda_upload(const char *image, struct sc_cu_ctx *(*ctx_for)(CUdevice))
{
	struct upload u = { .image = image, .ctx_for = ctx_for };
	int err = sc_reader_open(&u.r, image, NULL);
	CUresult res = CUDA_SUCCESS;

	if (err < 0)
		return err;
	err = upload_records(&u);
	for (unsigned k = 0; k < SC_CH_STAGING_BUFS; k++)
		if (u.busy[k] && res == CUDA_SUCCESS)
			res = sc_cu_wait_ticket(u.ticket[k]);
	if (res == CUDA_SUCCESS)
		res = sc_cu_take_sticky();
	sc_reader_free(u.r);
	if (!err && res != CUDA_SUCCESS)
		err = sc_err(SELFCKPT_ECUDA, "restart: copying device memory back failed: %s",
			     sc_cu_result_name(res));
	return err;
}
