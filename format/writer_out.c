/* SPDX-License-Identifier: MIT */
/*
 * writer_out.c - the writer's output: payload chunks through the worker pool,
 * every byte to the descriptor at its place in the image, and the whole-file
 * checksum.
 *
 * Chunks are compressed on the pool, several at once, in a ring of slots (a
 * small one on the calling thread: see sc_wout_submit()). The calling thread
 * retires them in the order they came: a chunk's stored size,
 * known once it is compressed, fixes where the next chunk starts, so retiring
 * gives each chunk its offset and feeds its bytes to the whole-file XXH3, whose
 * streaming state must see every byte in image order. That hash is the only
 * work on the bytes that is done strictly in order.
 *
 * What happens to a retired chunk depends on the descriptor:
 *  - a regular file (not O_APPEND) gets each large chunk from pwrite() at its
 *    offset, by a writer task on the pool, while the calling thread goes on
 *    retiring and hashing: copying into the page cache and hashing no longer
 *    take turns on one thread;
 *  - anything else (a pipe, a socket, a character device) gets the bytes from
 *    write() on the calling thread, in order, and is never seeked.
 * Small pieces (headers, meta, small chunks) are gathered in one buffer and
 * written by the calling thread in both cases. The bytes and their offsets are
 * the same either way; only the order in which a file receives them differs.
 *
 * How many writers. A writer task takes the oldest chunk waiting, writes it and
 * goes on until none is left; at most n_writers run at once. It is one unless
 * SELFCKPT_WRITERS asks for more: ext4, XFS, btrfs and tmpfs hold the inode's
 * lock for the whole of a buffered write, so writers of one file take turns,
 * and a second one only spins on the lock (on ext4, 16 threads with pwrite()
 * wrote one file no faster than one thread). File systems that take writes to
 * one file in parallel (Lustre, GPFS) are where more writers pay.
 *
 * Between records. A caller may reuse its buffer once a record ends, and a raw
 * chunk is written from the caller's own bytes. Rather than let the writers run
 * dry while the caller fetches the next record (device memory arrives 8 MiB
 * at a time), sc_wout_release() copies the last chunks still waiting, up to
 * AHEAD_SIZE per writer, and waits only for the others. A caller with a
 * second buffer to go on with needs neither: sc_wout_retire() ends its use of
 * the chunks but not their writes, and sc_wout_returned() tells, or waits
 * until, the bytes given before a mark are out, so that its buffer may be
 * filled again while the next one is written.
 *
 * Writeback. A regular file's bytes would sit in the page cache until the
 * final fsync(), which would then write the whole image to the device while
 * nothing else happens. Instead the device writes of every WRITEBACK_STEP
 * bytes a writer has written are started (sync_file_range(), which starts
 * them and does not wait), so the device works while the rest of the image is
 * being made and the fsync() finds little left. They are started by a flush
 * task of their own, which the writers hand the ranges to: starting them
 * costs the caller the file system's block allocation and the requests, and a
 * writer that did it itself copied at 2.3 GB/s where it copies at 3.4 without
 * (ext4, 16 cores; a 208 MiB image was written and synced in 0.13-0.16 s
 * that way, 0.11-0.14 s with the flush task). SELFCKPT_WRITEBACK=0 leaves it
 * all to the fsync().
 *
 * Errors. A failed write stops every write that has not started beyond the
 * offset that failed; the calling thread then waits for the writes running and
 * fails the image with the lowest offset that failed, the first byte the file
 * is missing. Nothing is written after that, so the trailer never is
 * (R-WR-9). Before any error is returned every task has ended, so no worker
 * still reads a caller's buffer. A write still in flight when a record ended
 * fails a later call, sc_wout_finish() at the latest.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <xxhash.h>

#include "compress/sc_compress.h"
#include "format/format_internal.h"
#include "format/sc_log.h"

#define BUF_SIZE (64u << 10) /* small pieces are gathered up to this; larger ones go alone */
#define NO_STOP UINT64_MAX
#define AHEAD_SIZE (4u << 20) /* per writer: bytes copied to keep writers busy between records */
#define WRITEBACK_STEP (16u << 20) /* per writer: bytes written between two writeback starts */
#define FLUSH_QUEUE 16 /* ranges waiting for the flush task */
#define INLINE_MAX (16u << 10) /* a smaller chunk is compressed on the calling thread */

struct sc_wout_slot {
	struct sc_task compress;
	struct sc_wout *o;
	struct sc_chunk chunk;
	uint8_t *stage;         /* copy of raw bytes when a chunk spans appends */
	uint8_t head[SC_CHUNK_HEADER_SIZE];
	uint64_t at;            /* file offset of the chunk header, once retired */
	struct sc_wout_slot *wnext; /* the next chunk waiting for a writer */
	bool queued;            /* compress task submitted, not yet waited for */
	bool writing;           /* handed to the writers, not yet seen written */
	atomic_bool compressed; /* set by the compress task as it ends */
	atomic_bool written;    /* set by a writer once the chunk is out */
};

/* A pool task that writes waiting chunks, in order, until none is left. */
struct wout_writer {
	struct sc_task task;
	struct sc_wout *o;
	bool running; /* under lock: submitted and not yet out of work */
	bool used;    /* submitted at least once: wait for it before the next time */
	uint64_t wb_from, wb_to; /* file range written since its last writeback start */
};

/* The pool task that starts the device writes of ranges the writers wrote (Writeback). */
struct wout_flush {
	struct sc_task task;
	bool running; /* under lock: submitted and not yet out of ranges */
	bool used;    /* submitted at least once: wait for it before the next time */
	uint64_t from[FLUSH_QUEUE], to[FLUSH_QUEUE]; /* under lock: the ranges waiting */
	unsigned n;
};

struct sc_wout {
	int fd;
	const char *name;
	bool positional; /* a regular file: large chunks are written by position */
	bool writeback;  /* and its device writes start as it is written */
	uint64_t base;   /* file offset of the image's first byte */
	int err;         /* sticky */
	int level;
	size_t chunk_size;
	struct sc_pool *pool;
	XXH3_state_t *hash;
	uint64_t off;    /* image bytes so far: written, in flight or in the buffer */
	uint8_t *buf;    /* the image's bytes [off - buf_len, off) */
	size_t buf_len;

	struct sc_wout_slot *slots;
	unsigned n_slots;
	unsigned head;    /* the oldest slot in use */
	uint64_t head_seq; /* how many slots were released before it: a slot's place in the image */
	unsigned count;   /* slots in use, from head on */
	unsigned retired; /* of those, the oldest ones, retired */

	struct wout_writer *writers; /* chunk writes that may run at once */
	unsigned n_writers;
	struct wout_flush flush;

	pthread_mutex_t lock;    /* with progress: the caller sleeps until a task ends */
	pthread_cond_t progress;
	bool sync_ready;
	struct sc_wout_slot *wq_head, *wq_tail; /* under lock: chunks no writer has taken */
	_Atomic uint64_t stop_at; /* no write starts at or past it; NO_STOP while all is well */
	int werr;                /* under lock: errno of the failed write at the lowest offset */
	uint64_t werr_at;        /* and that file offset */
};

static struct sc_wout_slot *slot_at(const struct sc_wout *o, unsigned i)
{
	return &o->slots[(o->head + i) % o->n_slots];
}

/* A write failed, or the output failed or is torn down: no chunk is retired any more. */
static bool stopped(const struct sc_wout *o)
{
	return atomic_load_explicit(&o->stop_at, memory_order_acquire) != NO_STOP;
}

/* ---- tasks, on the pool's workers ---- */

/* Publish a task's end to the calling thread. */
static void task_done(struct sc_wout *o, atomic_bool *flag)
{
	pthread_mutex_lock(&o->lock);
	atomic_store_explicit(flag, true, memory_order_release);
	pthread_cond_signal(&o->progress);
	pthread_mutex_unlock(&o->lock);
}

static void compress_task(struct sc_task *t)
{
	struct sc_wout_slot *s = (struct sc_wout_slot *)((char *)t -
							 offsetof(struct sc_wout_slot, compress));

	/* Once the image has failed its chunks are never written: skip the work. */
	if (!stopped(s->o))
		sc_chunk_compress(&s->chunk);
	task_done(s->o, &s->compressed);
}

/*
 * pwritev() until every byte is at its place; a short write goes on where it
 * stopped. Return: 0, -ECANCELED once *@stop_at is not past *@at, or -errno
 * with *@at where the write failed.
 */
static int pwritev_all(int fd, struct iovec *iov, int n, uint64_t *at,
		       _Atomic uint64_t *stop_at)
{
	while (n) {
		ssize_t k;

		if (stop_at && *at >= atomic_load_explicit(stop_at, memory_order_relaxed))
			return -ECANCELED;
		k = pwritev(fd, iov, n, (off_t)*at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EIO; /* no progress on a regular file: never loop on it */
		*at += (uint64_t)k;
		for (; n && (size_t)k >= iov->iov_len; iov++, n--)
			k -= (ssize_t)iov->iov_len;
		if (n) {
			iov->iov_base = (uint8_t *)iov->iov_base + k;
			iov->iov_len -= (size_t)k;
		}
	}
	return 0;
}

/* Keep the failure at the lowest offset: the first byte the image is missing. */
static void note_failure(struct sc_wout *o, int err, uint64_t at)
{
	pthread_mutex_lock(&o->lock);
	if (!o->werr || at < o->werr_at) {
		o->werr = err;
		o->werr_at = at;
	}
	if (at < atomic_load(&o->stop_at))
		atomic_store(&o->stop_at, at);
	pthread_mutex_unlock(&o->lock);
}

/*
 * Submit a task that runs again and again (*@used once it has run): the pool
 * marks it done after its function returned, so wait for that first.
 */
static void submit_again(struct sc_pool *pool, struct sc_task *task, bool *used)
{
	if (*used)
		sc_pool_wait(pool, task);
	*used = true;
	sc_pool_submit(pool, task);
}

/* Start the device writes of the ranges waiting, oldest first, until none is left. */
static void flush_task(struct sc_task *t)
{
	struct sc_wout *o = (struct sc_wout *)((char *)t - offsetof(struct sc_wout, flush.task));
	struct wout_flush *f = &o->flush;

	for (;;) {
		uint64_t from, to;

		pthread_mutex_lock(&o->lock);
		if (!f->n || stopped(o)) {
			f->n = 0; /* a failed image is never synced: its ranges need no start */
			f->running = false;
			pthread_mutex_unlock(&o->lock);
			return;
		}
		from = f->from[0];
		to = f->to[0];
		f->n--;
		memmove(f->from, f->from + 1, f->n * sizeof(f->from[0]));
		memmove(f->to, f->to + 1, f->n * sizeof(f->to[0]));
		pthread_mutex_unlock(&o->lock);
		/* A hint: a failure shows at the fsync() that follows. */
		sync_file_range(o->fd, (off_t)from, (off_t)(to - from), SYNC_FILE_RANGE_WRITE);
	}
}

/*
 * Hand [@from, @to) to the flush task, and start it where it is idle. With
 * the queue full, the newest range grows to hold it: what lies between is
 * written or about to be, and starting it early does no harm.
 */
static void flush_range(struct sc_wout *o, uint64_t from, uint64_t to)
{
	struct wout_flush *f = &o->flush;
	bool start;

	pthread_mutex_lock(&o->lock);
	if (f->n == FLUSH_QUEUE) {
		f->from[f->n - 1] = from < f->from[f->n - 1] ? from : f->from[f->n - 1];
		f->to[f->n - 1] = to > f->to[f->n - 1] ? to : f->to[f->n - 1];
	} else {
		f->from[f->n] = from;
		f->to[f->n++] = to;
	}
	start = !f->running;
	f->running = true;
	pthread_mutex_unlock(&o->lock);
	if (start)
		submit_again(o->pool, &f->task, &f->used);
}

/* No device write is being started any more: the descriptor may be synced and closed. */
static void flush_wait(struct sc_wout *o)
{
	bool running;

	do {
		if (o->flush.used)
			sc_pool_wait(o->pool, &o->flush.task);
		pthread_mutex_lock(&o->lock);
		running = o->flush.running;
		pthread_mutex_unlock(&o->lock);
	} while (running);
}

/*
 * Note [@from, @to) as written by @wr; once WRITEBACK_STEP bytes are, have
 * their device writes started.
 */
static void writeback(struct sc_wout *o, struct wout_writer *wr, uint64_t from, uint64_t to)
{
	if (!o->writeback)
		return;
	if (wr->wb_to == wr->wb_from) {
		wr->wb_from = from;
		wr->wb_to = to;
	}
	wr->wb_from = from < wr->wb_from ? from : wr->wb_from;
	wr->wb_to = to > wr->wb_to ? to : wr->wb_to;
	if (wr->wb_to - wr->wb_from < WRITEBACK_STEP)
		return;
	flush_range(o, wr->wb_from, wr->wb_to);
	wr->wb_from = wr->wb_to;
}

/* A retired chunk, its header and its stored bytes, at its offset. */
static void write_chunk(struct sc_wout *o, struct wout_writer *wr, struct sc_wout_slot *s)
{
	struct iovec iov[2] = {
		{ s->head, sizeof(s->head) },
		{ (void *)s->chunk.stored, s->chunk.stored_len },
	};
	uint64_t at = s->at;
	int err = pwritev_all(o->fd, iov, 2, &at, &o->stop_at);

	if (err && err != -ECANCELED)
		note_failure(o, -err, at);
	if (!err)
		writeback(o, wr, s->at, at);
	task_done(o, &s->written);
}

/* The oldest chunk waiting for a writer, or NULL: then @wr stops, under the lock. */
static struct sc_wout_slot *take_chunk(struct sc_wout *o, struct wout_writer *wr)
{
	struct sc_wout_slot *s;

	pthread_mutex_lock(&o->lock);
	s = o->wq_head;
	if (s) {
		o->wq_head = s->wnext;
		if (!o->wq_head)
			o->wq_tail = NULL;
	} else {
		wr->running = false;
	}
	pthread_mutex_unlock(&o->lock);
	return s;
}

static void writer_task(struct sc_task *t)
{
	struct wout_writer *wr = (struct wout_writer *)((char *)t -
							offsetof(struct wout_writer, task));
	struct sc_wout_slot *s;

	while ((s = take_chunk(wr->o, wr)))
		write_chunk(wr->o, wr, s);
}

/* ---- the calling thread: waiting, failing ---- */

/* Sleep until a writer has written @s (or skipped it, once stopped). */
static void wait_written(struct sc_wout *o, struct sc_wout_slot *s)
{
	pthread_mutex_lock(&o->lock);
	while (!atomic_load_explicit(&s->written, memory_order_acquire))
		pthread_cond_wait(&o->progress, &o->lock);
	pthread_mutex_unlock(&o->lock);
}

/*
 * Append the chain @first..@last to the chunks waiting for the writers, and
 * start one more writer when fewer than n_writers run: each takes the oldest
 * waiting chunk until none is left.
 */
static void enqueue(struct sc_wout *o, struct sc_wout_slot *first, struct sc_wout_slot *last)
{
	struct wout_writer *wr = NULL;

	pthread_mutex_lock(&o->lock);
	if (o->wq_tail)
		o->wq_tail->wnext = first;
	else
		o->wq_head = first;
	o->wq_tail = last;
	/* A writer that runs takes these chunks after its own; an idle one starts on them. */
	for (unsigned i = 0; i < o->n_writers && !wr; i++)
		if (!o->writers[i].running)
			wr = &o->writers[i];
	if (wr)
		wr->running = true;
	pthread_mutex_unlock(&o->lock);
	if (wr)
		submit_again(o->pool, &wr->task, &wr->used);
}

static void queue_write(struct sc_wout *o, struct sc_wout_slot *s)
{
	atomic_store_explicit(&s->written, false, memory_order_relaxed);
	s->writing = true;
	s->wnext = NULL;
	enqueue(o, s, s);
}

/*
 * Wait for every task in flight and empty the ring; nothing is written after
 * this. @cancel: skip the writes that have not started; else those below the
 * offset that failed still run, so that the lowest failure is the one seen.
 */
static void quiesce(struct sc_wout *o, bool cancel)
{
	if (cancel)
		atomic_store(&o->stop_at, 0);
	for (; o->count; o->count--, o->head = (o->head + 1) % o->n_slots) {
		struct sc_wout_slot *s = slot_at(o, 0);

		if (s->queued)
			sc_pool_wait(o->pool, &s->compress);
		if (s->writing)
			wait_written(o, s);
		s->queued = s->writing = false;
		o->head_seq++;
	}
	o->retired = 0;
	atomic_store(&o->stop_at, 0);
	flush_wait(o);
}

static int fail(struct sc_wout *o, int err)
{
	if (!o->err)
		o->err = err;
	quiesce(o, true);
	return o->err;
}

/* A write task failed: report the lowest offset that failed, once every write has ended. */
static int writes_failed(struct sc_wout *o)
{
	int err;
	uint64_t at;

	if (o->err)
		return o->err;
	quiesce(o, false);
	pthread_mutex_lock(&o->lock);
	err = o->werr;
	at = o->werr_at;
	pthread_mutex_unlock(&o->lock);
	if (!err)
		err = EIO; /* stopped without a failed write: never reported as success */
	return fail(o, sc_err(err, "cannot write '%s' at offset %llu: %s", o->name,
			      (unsigned long long)(at - o->base), strerror(err)));
}

static bool next_ready(const struct sc_wout *o)
{
	return o->retired < o->count &&
	       atomic_load_explicit(&slot_at(o, o->retired)->compressed, memory_order_acquire);
}

/* The oldest slot is retired and its write, if it has one, has ended. */
static bool head_done(const struct sc_wout *o)
{
	const struct sc_wout_slot *s = slot_at(o, 0);

	return o->retired &&
	       (!s->writing || atomic_load_explicit(&s->written, memory_order_acquire));
}

/* Sleep until a chunk can be retired, the oldest slot released, or a write failed. */
static void wait_progress(struct sc_wout *o)
{
	pthread_mutex_lock(&o->lock);
	while (!next_ready(o) && !head_done(o) && !stopped(o))
		pthread_cond_wait(&o->progress, &o->lock);
	pthread_mutex_unlock(&o->lock);
}

/* ---- the calling thread: bytes out, in image order ---- */

/* The bytes [at, at + n) of the image, now, on this thread. */
static int write_now(struct sc_wout *o, const void *p, size_t n, uint64_t at)
{
	struct iovec iov = { (void *)p, n };
	uint64_t pos = o->base + at;
	int err = 0;

	if (o->positional) {
		err = pwritev_all(o->fd, &iov, 1, &pos, NULL);
	} else {
		for (const uint8_t *b = p; n;) {
			ssize_t k = write(o->fd, b, n);

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				err = k < 0 ? -errno : -EIO;
				break;
			}
			b += k;
			n -= (size_t)k;
			pos += (uint64_t)k;
		}
	}
	if (!err)
		return 0;
	return fail(o, sc_err(-err, "cannot write '%s' at offset %llu: %s", o->name,
			      (unsigned long long)(pos - o->base), strerror(-err)));
}

static int buf_flush(struct sc_wout *o)
{
	size_t n = o->buf_len;

	o->buf_len = 0;
	return n ? write_now(o, o->buf, n, o->off - n) : 0;
}

int sc_wout_put(struct sc_wout *o, const void *p, size_t n)
{
	if (o->err || !n)
		return o->err;
	XXH3_64bits_update(o->hash, p, n);
	if (o->buf_len + n > BUF_SIZE && buf_flush(o) < 0)
		return o->err;
	o->off += n;
	if (n < BUF_SIZE) {
		memcpy(o->buf + o->buf_len, p, n);
		o->buf_len += n;
		return 0;
	}
	return write_now(o, p, n, o->off - n);
}

static void chunk_head(struct sc_wout_slot *s)
{
	memset(s->head, 0, sizeof(s->head));
	sc_put_le32(s->head, s->chunk.stored_len);
	s->head[4] = s->chunk.codec;
	sc_put_le64(s->head + 8, s->chunk.hash);
}

/*
 * Retire the oldest chunk not yet retired, which is compressed: its offset is
 * where the image has got to. A large chunk of a regular file is written by a
 * writer task while this thread hashes it; anything else goes through
 * sc_wout_put().
 */
static int retire(struct sc_wout *o)
{
	struct sc_wout_slot *s = slot_at(o, o->retired++);
	const struct sc_chunk *c = &s->chunk;

	/* A chunk compressed after a write failed was skipped: it holds nothing. */
	if (stopped(o))
		return writes_failed(o);
	chunk_head(s);
	if (!o->positional || c->stored_len < BUF_SIZE) {
		if (sc_wout_put(o, s->head, sizeof(s->head)) < 0)
			return o->err;
		return sc_wout_put(o, c->stored, c->stored_len);
	}
	s->at = o->base + o->off;
	queue_write(o, s);
	if (buf_flush(o) < 0) /* the bytes before the chunk: [off - buf_len, off) */
		return o->err;
	XXH3_64bits_update(o->hash, s->head, sizeof(s->head));
	XXH3_64bits_update(o->hash, c->stored, c->stored_len);
	o->off += sizeof(s->head) + c->stored_len;
	return 0;
}

static int retire_ready(struct sc_wout *o)
{
	while (!o->err && next_ready(o))
		retire(o);
	return o->err;
}

/* Release the oldest slot, which head_done() found done. */
static void release_head(struct sc_wout *o)
{
	struct sc_wout_slot *s = slot_at(o, 0);

	/* The pool marks a task done after its function returned: wait for that too. */
	if (s->queued)
		sc_pool_wait(o->pool, &s->compress);
	s->queued = s->writing = false;
	o->head = (o->head + 1) % o->n_slots;
	o->head_seq++;
	o->count--;
	o->retired--;
}

/* Retire what is ready and release the oldest slot if it is done; else sleep once. */
static int step(struct sc_wout *o)
{
	bool moved = next_ready(o);

	if (stopped(o))
		return writes_failed(o);
	if (retire_ready(o) < 0)
		return o->err;
	if (head_done(o))
		release_head(o);
	else if (!moved)
		wait_progress(o);
	return 0;
}

/* ---- the interface of format_internal.h ---- */

int sc_wout_slot(struct sc_wout *o, struct sc_wout_slot **out)
{
	*out = NULL;
	if (!o->err && stopped(o))
		writes_failed(o);
	/* Start the writes of chunks already compressed before queueing more work. */
	if (retire_ready(o) < 0)
		return o->err;
	while (o->count == o->n_slots)
		if (step(o) < 0)
			return o->err;
	*out = slot_at(o, o->count++);
	return 0;
}

uint8_t *sc_wout_stage(struct sc_wout *o, struct sc_wout_slot *s)
{
	if (!s->stage && !(s->stage = malloc(o->chunk_size)))
		fail(o, sc_err(ENOMEM, "out of memory writing '%s'", o->name));
	return s->stage;
}

/*
 * A small chunk (a descriptor's record, a thread's) is compressed here: the
 * record ends right after it and waits for it anyway, and handing it to a
 * worker and waking this thread again costs more than compressing it (on a
 * 2-core machine, about 15 us a record against 2-3: 0.15 s for the records
 * of 10,000 descriptors).
 */
void sc_wout_submit(struct sc_wout *o, struct sc_wout_slot *s, const void *raw, size_t len)
{
	s->chunk.raw = raw;
	s->chunk.raw_len = len;
	s->chunk.level = o->level;
	if (len < INLINE_MAX) {
		sc_chunk_compress(&s->chunk);
		atomic_store_explicit(&s->compressed, true, memory_order_release);
		return;
	}
	atomic_store_explicit(&s->compressed, false, memory_order_relaxed);
	s->queued = true;
	sc_pool_submit(o->pool, &s->compress);
}

/* Every chunk submitted is written (or failed) and its slot free. */
static int drain(struct sc_wout *o)
{
	while (!o->err && o->count)
		step(o);
	/* The last write may have failed after the loop last looked. */
	if (!o->err && stopped(o))
		writes_failed(o);
	return o->err;
}

/* A chunk compressed in place and stored raw: its bytes are the caller's. */
static bool in_caller_memory(const struct sc_wout_slot *s)
{
	return s->chunk.stored == s->chunk.raw && s->chunk.raw != s->stage;
}

/*
 * Take off the queue the waiting chunks whose bytes are the caller's among the
 * last @budget bytes of the queue; return them chained, oldest first.
 */
static struct sc_wout_slot *unqueue_tail(struct sc_wout *o, size_t budget)
{
	struct sc_wout_slot *keep = NULL, **kt = &keep, *take = NULL, **tt = &take;
	struct sc_wout_slot *s, *next, *from;
	size_t total = 0;
	bool past = false;

	pthread_mutex_lock(&o->lock);
	for (s = o->wq_head; s; s = s->wnext)
		total += s->chunk.stored_len;
	for (from = o->wq_head; from && total > budget; from = from->wnext)
		total -= from->chunk.stored_len;
	o->wq_tail = NULL;
	for (s = o->wq_head; s; s = next) {
		next = s->wnext;
		s->wnext = NULL;
		past = past || s == from;
		if (past && in_caller_memory(s)) {
			*tt = s;
			tt = &s->wnext;
		} else {
			*kt = s;
			kt = &s->wnext;
			o->wq_tail = s;
		}
	}
	o->wq_head = keep;
	pthread_mutex_unlock(&o->lock);
	return take;
}

/* Give each chunk of @chain a copy of its bytes in its slot, then queue them again. */
static void copy_chain(struct sc_wout *o, struct sc_wout_slot *chain)
{
	struct sc_wout_slot *s, *last = NULL;

	for (s = chain; s; s = s->wnext) {
		last = s;
		if (!s->stage && !(s->stage = malloc(o->chunk_size)))
			continue; /* still the caller's bytes: waited for like the others */
		memcpy(s->stage, s->chunk.raw, s->chunk.raw_len);
		s->chunk.raw = s->chunk.stored = s->stage;
	}
	if (chain)
		enqueue(o, chain, last);
}

int sc_wout_retire(struct sc_wout *o)
{
	while (!o->err && o->retired < o->count)
		step(o);
	if (!o->err && stopped(o))
		writes_failed(o);
	return o->err;
}

uint64_t sc_wout_mark(const struct sc_wout *o)
{
	return o->head_seq + o->count;
}

int sc_wout_returned(struct sc_wout *o, uint64_t mark, bool wait)
{
	for (unsigned i = 0; !o->err && i < o->count && o->head_seq + i < mark; i++) {
		struct sc_wout_slot *s = slot_at(o, i);

		if (!s->writing || !in_caller_memory(s) ||
		    atomic_load_explicit(&s->written, memory_order_acquire))
			continue;
		if (!wait)
			return 1;
		wait_written(o, s);
	}
	if (!o->err && stopped(o))
		writes_failed(o);
	return o->err;
}

int sc_wout_release(struct sc_wout *o)
{
	if (sc_wout_retire(o) < 0 || !o->positional || o->chunk_size > AHEAD_SIZE)
		return drain(o);
	/* The writers write these while the caller prepares what comes next. */
	copy_chain(o, unqueue_tail(o, (size_t)AHEAD_SIZE * o->n_writers));
	for (unsigned i = 0; i < o->retired; i++) {
		struct sc_wout_slot *s = slot_at(o, i);

		if (s->writing && in_caller_memory(s))
			wait_written(o, s);
	}
	if (!o->err && stopped(o))
		writes_failed(o);
	return o->err;
}

int sc_wout_finish(struct sc_wout *o)
{
	off_t end;

	if (drain(o) < 0 || buf_flush(o) < 0 || !o->positional)
		return o->err;
	/*
	 * What still waits is left to the fsync() that follows (or to the
	 * kernel): only the start under way is waited for.
	 */
	pthread_mutex_lock(&o->lock);
	o->flush.n = 0;
	pthread_mutex_unlock(&o->lock);
	flush_wait(o);
	/* Leave the file position where write() would have left it. */
	end = (off_t)(o->base + o->off);
	if (lseek(o->fd, end, SEEK_SET) != end)
		return fail(o, sc_err(errno, "cannot move to the end of '%s' at offset %llu: %s",
				      o->name, (unsigned long long)o->off, strerror(errno)));
	return 0;
}

void sc_wout_cancel(struct sc_wout *o, int err)
{
	if (o)
		fail(o, err);
}

uint64_t sc_wout_offset(const struct sc_wout *o)
{
	return o->off;
}

uint64_t sc_wout_digest(const struct sc_wout *o)
{
	return XXH3_64bits_digest(o->hash);
}

/* ---- lifecycle ---- */

/* A regular file, not append-only, whose position is known: bytes can go by offset. */
static bool by_position(int fd, uint64_t *base)
{
	int flags = fcntl(fd, F_GETFL);
	struct stat st;
	off_t pos;

	if (flags < 0 || (flags & O_APPEND) || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	pos = lseek(fd, 0, SEEK_CUR);
	if (pos < 0)
		return false;
	*base = (uint64_t)pos;
	return true;
}

/* Chunk writes that may run at once: @writers (at most @threads), else one. */
static unsigned writers_for(unsigned writers, unsigned threads)
{
	return !writers ? 1 : writers < threads ? writers : threads;
}

static int alloc_slots(struct sc_wout *o, unsigned writers)
{
	size_t bound = sc_chunk_bound(o->chunk_size);
	unsigned t = sc_pool_threads(o->pool);

	/*
	 * A stream: one slot compressing and one waiting to be written per worker.
	 * A file: a chunk also holds its slot while it waits for a writer and is
	 * written, so that the workers still have chunks to compress meanwhile.
	 */
	o->n_slots = o->positional ? 4 * t : 2 * t + 1;
	o->slots = calloc(o->n_slots, sizeof(*o->slots));
	if (!o->slots)
		return -ENOMEM;
	o->n_writers = writers_for(writers, t);
	o->writers = calloc(o->n_writers, sizeof(*o->writers));
	if (!o->writers)
		return -ENOMEM;
	for (unsigned i = 0; i < o->n_writers; i++) {
		o->writers[i].o = o;
		o->writers[i].task.fn = writer_task;
	}
	o->flush.task.fn = flush_task;
	for (unsigned i = 0; i < o->n_slots; i++) {
		struct sc_wout_slot *s = &o->slots[i];

		s->o = o;
		s->compress.fn = compress_task;
		s->chunk.out = malloc(bound);
		if (!s->chunk.out)
			return -ENOMEM;
	}
	return 0;
}

static int init_sync(struct sc_wout *o)
{
	int err = pthread_mutex_init(&o->lock, NULL);

	if (err)
		return -err;
	err = pthread_cond_init(&o->progress, NULL);
	if (err) {
		pthread_mutex_destroy(&o->lock);
		return -err;
	}
	o->sync_ready = true;
	return 0;
}

int sc_wout_new(struct sc_wout **out, int fd, const char *name, const struct sc_write_opts *wo,
		size_t chunk_size)
{
	struct sc_wout *o = calloc(1, sizeof(*o));
	int err = -ENOMEM;

	*out = NULL;
	if (!o)
		goto fail;
	o->fd = fd;
	o->name = name;
	o->level = wo->level;
	o->chunk_size = chunk_size;
	o->positional = by_position(fd, &o->base);
	o->writeback = o->positional && !wo->no_writeback;
	atomic_init(&o->stop_at, NO_STOP);
	o->hash = XXH3_createState();
	o->buf = malloc(BUF_SIZE);
	if (!o->hash || !o->buf || (err = init_sync(o)) < 0)
		goto fail;
	XXH3_64bits_reset(o->hash);
	err = sc_pool_new(&o->pool, wo->threads);
	if (err < 0 || (err = alloc_slots(o, wo->writers)) < 0)
		goto fail;
	*out = o;
	return 0;
fail:
	sc_wout_free(o);
	return sc_err(-err, "cannot start writing '%s': %s", name, strerror(-err));
}

void sc_wout_free(struct sc_wout *o)
{
	if (!o)
		return;
	if (o->pool)
		quiesce(o, true); /* never free a slot a worker may still be using */
	sc_pool_free(o->pool);
	for (unsigned i = 0; o->slots && i < o->n_slots; i++) {
		free(o->slots[i].chunk.out);
		free(o->slots[i].stage);
	}
	free(o->slots);
	free(o->writers);
	free(o->buf);
	if (o->hash)
		XXH3_freeState(o->hash);
	if (o->sync_ready) {
		pthread_cond_destroy(&o->progress);
		pthread_mutex_destroy(&o->lock);
	}
	free(o);
}
