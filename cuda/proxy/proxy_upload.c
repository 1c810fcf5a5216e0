/* SPDX-License-Identifier: MIT */
/*
 * proxy_upload.c - device memory back from an image, read by the proxy.
 *
 * At a restart the proxy, not the application, reads the DEVMEM records: the
 * reader's threads and buffers then live here, and the restored process is
 * left exactly as it was saved. Several workers share the records (the image
 * is read from the page cache at many GB/s only by several threads at once):
 * each has a reader of its own, a staging buffer of the channel (pinned) and a
 * stream; it reads and checks a piece into its buffer, copies it to the GPU,
 * and waits for that copy only when it needs the buffer again. Pinned host
 * memory is read straight into the channel.
 *
 * An incremental image's parent pieces (spec R-INC-6) are read from the image
 * of its chain that stores them (cuda/shared/devmem_chain.c): each worker opens
 * a reader on each image as it first needs one.
 *
 * Request: a0 device ordinal whose records to take, a1 1 to take the pinned
 * host memory too, a2 number of array pairs; data: a2 x (u64 the library's
 * array handle, u64 the driver's), then the image path, NUL-terminated.
 * Reply on failure: data holds the reason.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/shared/gpu_records.h"
#include "cuda/shared/cuda_array.h"
#include "cuda/shared/devmem_chain.h"
#include "cuda/proxy/proxy_internal.h"
#include "format/sc_format.h"
#include "format/sc_log.h"

#define WORKERS_MAX SC_CH_STAGING_BUFS
#define LEVELS (SC_CHAIN_MAX + 1)

/* A DEVMEM record to upload: its image in the chain (0: the one named), its position there. */
struct task {
	size_t level;
	size_t index;
};

struct upload {
	struct sc_ch_slot *s;
	const char *path;
	CUcontext ctx;
	const uint64_t *arrays;  /* pairs */
	uint64_t arrays_n;
	struct sc_devmem_chain chain; /* an incremental image's, else n 0 */
	struct task *records;
	size_t records_n;
	size_t next;             /* next entry of records[] to take (atomic) */
	pthread_mutex_t lock;    /* the first failure */
	CUresult result;
	char why[512];
};

struct worker {
	struct upload *u;
	unsigned id;
	struct sc_reader *r[LEVELS]; /* one per image of the chain, opened when first read */
	CUstream stream;
	CUevent done;
	bool busy;
};

static CUresult failed(struct upload *u, CUresult r, const char *why)
{
	pthread_mutex_lock(&u->lock);
	if (u->result == CUDA_SUCCESS) {
		u->result = r;
		snprintf(u->why, sizeof(u->why), "%s", why);
	}
	pthread_mutex_unlock(&u->lock);
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
static CUresult issue(struct worker *w, const struct sc_devmem *d, void *buf)
{
	CUDA_ARRAY3D_DESCRIPTOR ad;
	CUDA_MEMCPY3D c;
	CUarray a;

	if (d->kind != SC_DEVMEM_ARRAY)
		return sc_drv.cuMemcpyHtoDAsync(d->addr, buf, d->len, w->stream);
	if (!(a = array_real(w->u, d->addr)) || sc_drv.cuArray3DGetDescriptor(&ad, a))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!sc_array_piece_copy(&ad, a, d->offset, d->len, buf, true, &c))
		return CUDA_ERROR_INVALID_VALUE;
	return sc_drv.cuMemcpy3DAsync(&c, w->stream);
}

static CUresult to_device(struct worker *w, struct sc_reader *r, const struct sc_record *rec,
			  const struct sc_devmem *d)
{
	void *buf = sc_ch_staging(sc_proxy_channel, w->id);
	CUresult res;

	if (d->len > SC_CH_STAGING_BUF || rec->raw_len != d->len)
		return failed(w->u, CUDA_ERROR_INVALID_VALUE, "a device memory record of the "
			      "wrong size");
	if (w->busy && (res = sc_drv.cuEventSynchronize(w->done)) != CUDA_SUCCESS)
		return failed(w->u, res, "copying to the GPU");
	if (sc_reader_read(r, buf, d->len) < 0)
		return failed(w->u, CUDA_ERROR_FILE_NOT_FOUND, selfckpt_last_error());
	if ((res = issue(w, d, buf)) != CUDA_SUCCESS ||
	    (res = sc_drv.cuEventRecord(w->done, w->stream)) != CUDA_SUCCESS)
		return failed(w->u, res, "copying to the GPU");
	w->busy = true;
	return CUDA_SUCCESS;
}

static CUresult to_host(struct worker *w, struct sc_reader *r, const struct sc_record *rec,
			const struct sc_devmem *d)
{
	struct sc_ch_header *h = sc_ch_header(sc_proxy_channel);
	uint64_t heap = (uint64_t)(uintptr_t)sc_proxy_channel + SC_CH_HEAP_OFF;

	if (!w->u->s->a[1])
		return CUDA_SUCCESS; /* another device's request takes it */
	if (d->addr != heap || d->len > h->size - SC_CH_HEAP_OFF || rec->raw_len != d->len)
		return failed(w->u, CUDA_ERROR_INVALID_VALUE, "pinned host memory that is not "
			      "where the channel is");
	if (sc_reader_read(r, (void *)(uintptr_t)d->addr, d->len) < 0)
		return failed(w->u, CUDA_ERROR_FILE_NOT_FOUND, selfckpt_last_error());
	return CUDA_SUCCESS;
}

/* The reader of the image at @level of the chain, opened on first use. */
static struct sc_reader *reader_of(struct worker *w, size_t level)
{
	struct sc_read_opts o = { .threads = 1 };
	const char *path = level ? w->u->chain.path[level] : w->u->path;

	if (!w->r[level] && sc_reader_open(&w->r[level], path, &o) < 0) {
		failed(w->u, CUDA_ERROR_FILE_NOT_FOUND, selfckpt_last_error());
		return NULL;
	}
	return w->r[level];
}

static CUresult one_record(struct worker *w, const struct task *t)
{
	struct sc_reader *r = reader_of(w, t->level);
	struct sc_record rec;
	struct sc_devmem d;

	if (!r)
		return w->u->result;
	if (sc_reader_seek(r, t->index) < 0 || sc_reader_next(r, &rec) != 1)
		return failed(w->u, CUDA_ERROR_FILE_NOT_FOUND, selfckpt_last_error());
	if (sc_devmem_decode(rec.meta, rec.meta_len, &d) < 0 || (d.flags & SC_DEVMEM_PARENT))
		return failed(w->u, CUDA_ERROR_INVALID_VALUE, "a damaged device memory record");
	if (d.kind == SC_DEVMEM_HOST)
		return to_host(w, r, &rec, &d);
	return d.dev == w->u->s->a[0] ? to_device(w, r, &rec, &d) : CUDA_SUCCESS;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct upload *u = w->u;
	CUresult r = sc_drv.cuCtxSetCurrent(u->ctx);

	if (r == CUDA_SUCCESS)
		r = sc_drv.cuStreamCreateWithPriority(&w->stream, CU_STREAM_NON_BLOCKING, 0);
	if (r == CUDA_SUCCESS)
		r = sc_drv.cuEventCreate(&w->done, CU_EVENT_DISABLE_TIMING);
	if (r != CUDA_SUCCESS)
		failed(u, r, "preparing the copies");
	while (__atomic_load_n(&u->result, __ATOMIC_RELAXED) == CUDA_SUCCESS) {
		size_t i = __atomic_fetch_add(&u->next, 1, __ATOMIC_RELAXED);

		if (i >= u->records_n || one_record(w, &u->records[i]) != CUDA_SUCCESS)
			break;
	}
	if (w->stream && (r = sc_drv.cuStreamSynchronize(w->stream)) != CUDA_SUCCESS)
		failed(u, r, "copying to the GPU");
	if (w->done)
		sc_drv.cuEventDestroy(w->done);
	if (w->stream)
		sc_drv.cuStreamDestroy(w->stream);
	for (size_t l = 0; l < LEVELS; l++)
		sc_reader_free(w->r[l]);
	return NULL;
}

/* Which records hold memory: from the index, and the metas of an incremental image's. */
static CUresult list_records(struct upload *u)
{
	const struct sc_index_entry *e;
	struct sc_reader *r;
	size_t n;
	int err = sc_reader_open(&r, u->path, NULL);

	if (!err)
		err = sc_reader_index(r, &e, &n);
	if (!err && (sc_reader_header(r)->flags & SC_HF_INCREMENTAL))
		err = sc_devmem_chain_open(&u->chain, u->path);
	if (!err && !(u->records = calloc(n ? n : 1, sizeof(*u->records))))
		err = sc_err(ENOMEM, "no memory to list the device memory of '%s'", u->path);
	for (size_t i = 0; !err && i < n; i++) {
		struct sc_devmem_source src = { 0, i };

		if (e[i].type != SC_REC_DEVMEM)
			continue;
		/* a full image's bytes are its own: no meta need be read */
		if (u->chain.n && (err = sc_devmem_chain_source(&u->chain, r, i, &src)) < 0)
			break;
		err = 0;
		u->records[u->records_n++] = (struct task){ src.level, src.index };
	}
	sc_reader_free(r);
	return err < 0 ? failed(u, CUDA_ERROR_FILE_NOT_FOUND, selfckpt_last_error()) :
			 CUDA_SUCCESS;
}

static unsigned workers_for(size_t records)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = cpus > WORKERS_MAX ? WORKERS_MAX : cpus > 1 ? (unsigned)cpus : 1;

	return records < n ? (records ? (unsigned)records : 1) : n;
}

static CUresult op_upload(struct sc_ch_slot *s)
{
	struct upload u = { .s = s, .lock = PTHREAD_MUTEX_INITIALIZER };
	struct worker w[WORKERS_MAX];
	pthread_t t[WORKERS_MAX];
	uint64_t pairs = s->a[2];
	unsigned n, started = 0;

	if (pairs > SC_CH_INLINE / 16 || s->len <= pairs * 16 || s->data[s->len - 1])
		return CUDA_ERROR_INVALID_VALUE;
	u.arrays = (const uint64_t *)s->data;
	u.arrays_n = pairs;
	u.path = (const char *)s->data + pairs * 16;
	u.ctx = (CUcontext)(uintptr_t)s->ctx;
	if (list_records(&u) == CUDA_SUCCESS) {
		n = workers_for(u.records_n);
		memset(w, 0, sizeof(w));
		for (unsigned i = 0; i < n; i++) {
			w[i] = (struct worker){ .u = &u, .id = i };
			if (pthread_create(&t[i], NULL, work, &w[i]) == 0)
				started++;
			else
				break;
		}
		if (!started)
			failed(&u, CUDA_ERROR_OPERATING_SYSTEM, "cannot start the upload threads");
		for (unsigned i = 0; i < started; i++)
			pthread_join(t[i], NULL);
	}
	free(u.records);
	sc_devmem_chain_free(&u.chain);
	if (u.result != CUDA_SUCCESS)
		sc_proxy_reply_str(s, u.why);
	return u.result;
}

void sc_proxy_ops_upload(sc_proxy_op_fn *t)
{
	t[SC_OP_UPLOAD] = op_upload;
}
