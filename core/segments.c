/* SPDX-License-Identifier: MIT */
/*
 * segments.c - the memory of the snapshot, as segment records.
 *
 * A mapping is written as one or more windows, each one record: the pages that
 * hold data are read from the snapshot into a buffer of SC_WINDOW bytes, all-zero
 * pages are found there, and when the buffer is full (or the mapping ends) the
 * record is written with its run table (stored, zero, file) ahead of its
 * payload, as the format requires. Pages never touched cost nothing, whatever
 * the size of the mapping: residency comes from the page tables.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compress/sc_compress.h"
#include "core/checkpoint_internal.h"
#include "core/job.h"
#include "core/lineage.h"
#include "core/sc_core.h"
#include "core/sc_settings.h"
#include "core/shared_freeze.h"
#include "core/written.h"
#include "format/sc_log.h"


/* One segment record being built: its runs, and its pages that hold data. */
struct window {
	const struct sc_vma *vma;
	uint64_t start;          /* address of the window's first page */
	uint64_t pages;          /* pages in the window so far */
	uint8_t *buf;            /* SC_WINDOW bytes: data pages, densely, in address order */
	uint64_t fill;           /* pages in buf */
	uint64_t scanned;        /* pages read for this window, zero ones included */
	uint8_t *zero;           /* per page of the last read: all zero */
	struct sc_run *runs;
	uint32_t n_runs, cap_runs;
};

enum { TO_READ = 0xff };

static uint64_t page_size(void)
{
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Which mappings an image holds: kernel-provided and device mappings are not. */
bool sc_vma_saved(const struct sc_vma *v)
{
	if (sc_skip_covers(v->start, v->end))
		return false;
	switch (v->kind) {
	case SC_VMA_VDSO:
	case SC_VMA_VVAR:
	case SC_VMA_VVAR_VCLOCK:
	case SC_VMA_VSYSCALL:
	case SC_VMA_DEVICE:
		return false;
	case SC_VMA_SPECIAL:
		return false;
	default:
		return true;
	}
}

/*
 * A shared file mapping whose file may be gone at restore time: one on a
 * temporary file system (POSIX shared memory in /dev/shm, the JVM's perf data
 * in a tmpfs /tmp), or a small one. Its pages are stored; the restore maps
 * the file where it still is, and makes it again from them where it is not.
 * Only a mapping the file covers whole: reading past its end would fault.
 */
static bool keeps_shared_file(const struct sc_vma *v)
{
	return v->kind == SC_VMA_FILE && (v->flags & SC_VMA_SHARED) &&
	       sc_shared_stores_file(v->path, v->offset, v->end - v->start);
}

/* What a page in a given residency state becomes in the image. */
static uint8_t classify(const struct sc_vma *v, enum sc_page_state st, bool embed,
			bool keep_shared)
{
	bool shared = v->flags & SC_VMA_SHARED;

	if (st == SC_PAGE_GUARD)
		return SC_RUN_GUARD; /* no contents: reading one would fault */
	switch (v->kind) {
	case SC_VMA_FILE:
		if (shared) /* the file holds the data; a copy where it may go away */
			return keep_shared ? TO_READ : SC_RUN_FILE;
		if (st == SC_PAGE_PRESENT || embed)
			return TO_READ;
		return SC_RUN_FILE;
	case SC_VMA_DELETED:
		if (!(v->flags & SC_VMA_HELD))
			return TO_READ; /* the file is gone: every page is data */
		/* a descriptor's record holds the file, which the restore maps again */
		if (shared)
			return SC_RUN_FILE;
		return st == SC_PAGE_PRESENT ? TO_READ : SC_RUN_FILE;
	default:
		/* a System V segment's bytes are its sysv-ipc record's, whole (R-SEG-8) */
		if (shared && (v->flags & SC_VMA_SYSV))
			return SC_RUN_FILE;
		if (shared)
			return TO_READ; /* shared memory: another process may have written it */
		return st == SC_PAGE_ABSENT ? SC_RUN_ZERO : TO_READ;
	}
}

static int add_run(struct window *w, uint8_t kind, uint64_t count)
{
	struct sc_run *last = w->n_runs ? &w->runs[w->n_runs - 1] : NULL;

	while (count) {
		uint64_t take;

		if (last && last->kind == kind && last->count < UINT32_MAX) {
			take = UINT32_MAX - last->count < count ? UINT32_MAX - last->count : count;
			last->count += (uint32_t)take;
		} else {
			if (w->n_runs == w->cap_runs) {
				uint32_t cap = w->cap_runs ? 2 * w->cap_runs : 256;
				struct sc_run *r = realloc(w->runs, cap * sizeof(*r));

				if (!r)
					return sc_err(ENOMEM, "out of memory writing a segment");
				w->runs = r;
				w->cap_runs = cap;
			}
			take = count < UINT32_MAX ? count : UINT32_MAX;
			last = &w->runs[w->n_runs++];
			*last = (struct sc_run){ .first = w->pages, .count = (uint32_t)take,
						 .kind = kind };
		}
		w->pages += take;
		count -= take;
	}
	return 0;
}

/*
 * Reading the snapshot is the slow part of a checkpoint. With a copier the
 * snapshot's own threads do it all: they find the zero pages in its memory,
 * then copy the others packed into the window, in pieces spread over them, so
 * that no page is copied twice or checked twice and the pool is left to
 * compress. Without one (or for memory the copier does not read)
 * /proc/<pid>/mem copies a page at a time, so the pieces are read on every
 * core, each checked on the core that read it, and packed here.
 */
#define READ_PIECE (4ull << 20)
#define MAX_PIECES (SC_WINDOW / READ_PIECE + 1)

static uint64_t piece_len(uint64_t len, uint64_t i)
{
	uint64_t off = i * READ_PIECE;

	return len - off < READ_PIECE ? len - off : READ_PIECE;
}

/*
 * One round of requests for the pieces of a read: piece i on the copier's
 * thread i % k, one request in flight per thread. A scan round fills @zero and
 * @data (the data pages of each piece); a pack round then puts each piece's
 * data pages at @dst, after those of the pieces before it.
 * Return: 0; 1 when a thread never started (a scan round stops submitting and
 * nothing is copied); or an error.
 */
static int copier_round(pid_t child, bool pack, uint8_t *dst, uint8_t *zero, uint64_t addr,
			uint64_t len, uint64_t *data)
{
	uint64_t ps = page_size(), n = (len + READ_PIECE - 1) / READ_PIECE, k = sc_copier_threads();
	int unserved = 0;

	for (uint64_t i = 0; i < n + k; i++) {
		if (i >= k && i - k < n) { /* thread i % k is done with piece i - k */
			int r = sc_copier_wait(child, (int)((i - k) % k));

			if (r < 0)
				return r;
			unserved |= r;
			if (!pack && !r)
				data[i - k] = sc_copier_count((int)((i - k) % k));
		}
		if (i >= n || unserved)
			continue;
		if (pack) {
			sc_copier_pack((int)(i % k), dst, addr + i * READ_PIECE, piece_len(len, i),
				       zero + i * READ_PIECE / ps);
			dst += data[i] * ps;
		} else {
			sc_copier_scan((int)(i % k), addr + i * READ_PIECE, piece_len(len, i),
				       zero + i * READ_PIECE / ps);
		}
	}
	return unserved;
}

/* Through the copier: 0 with the data pages packed at @dst; 1: read another way. */
static int copier_read(pid_t child, uint8_t *dst, uint8_t *zero, uint64_t addr, uint64_t len)
{
	uint64_t data[MAX_PIECES];
	int err = copier_round(child, false, NULL, zero, addr, len, data);

	if (err)
		return err;
	err = copier_round(child, true, dst, zero, addr, len, data);
	if (err > 0) /* each thread served its scan: it cannot have failed to start */
		return sc_err(EIO, "a snapshot thread did not copy the memory at 0x%llx",
			      (unsigned long long)addr);
	return err;
}

/*
 * An incremental image's read through the copier. Most of the @pages that
 * @zero flags are SC_COPY_LEFT; the @to_read others are split among the
 * copier's threads, one piece each with as many of them as the others, so that
 * a read takes one request per thread however much memory it spans. Each
 * thread checks and copies its pages in one pass (SC_COPY_GATHER), to where
 * they would start if none before them were zero; the gaps the zero ones leave
 * are closed here.
 * Return: 0, the data pages packed at @dst; 1: read another way; or an error.
 */
#define GATHER_MIN 256 /* pages to read in a piece: fewer cost a thread's wake-up more than they save */

static int copier_gather(pid_t child, uint8_t *dst, uint8_t *zero, uint64_t addr,
			 uint64_t pages, uint64_t to_read)
{
	struct sc_copier_piece piece[SC_COPIER_MAX];
	uint64_t ps = page_size(), at = 0;
	int n, unserved = 0;

	if (!to_read)
		return 0; /* every page is left */
	n = sc_copier_split(zero, pages, to_read, sc_copier_threads(), GATHER_MIN, piece);
	for (int j = 0; j < n; j++)
		sc_copier_gather(j, dst + piece[j].before * ps, addr + piece[j].first * ps,
				 piece[j].pages * ps, zero + piece[j].first);
	for (int j = 0; j < n; j++) {
		int r = sc_copier_wait(child, j);

		if (r < 0)
			return r;
		unserved |= r;
	}
	for (int j = 0; j < n && !unserved; j++) {
		uint64_t data = sc_copier_count(j);

		if (at != piece[j].before)
			memmove(dst + at * ps, dst + piece[j].before * ps, data * ps);
		at += data;
	}
	return unserved;
}

struct read_piece {
	struct sc_task task;
	int fd;
	uint8_t *dst, *zero; /* the pages, and one flag per page */
	uint64_t addr, len;
	int err;             /* errno */
};

static void read_piece_run(struct sc_task *t)
{
	struct read_piece *r = (struct read_piece *)((char *)t - offsetof(struct read_piece, task));
	uint64_t ps = page_size(), done = 0;

	r->err = 0;
	while (done < r->len) {
		ssize_t k = pread(r->fd, r->dst + done, r->len - done, (off_t)(r->addr + done));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r->err = k < 0 ? errno : EIO;
			return;
		}
		done += (uint64_t)k;
	}
	for (uint64_t i = 0; i < r->len / ps; i++)
		r->zero[i] = sc_page_is_zero(r->dst + i * ps, ps);
}

/* Through /proc/<pid>/mem on the pool: every page at its place in @dst, and its flag. */
static int proc_read(struct sc_pool *pool, pid_t child, uint8_t *dst, uint8_t *zero,
		     uint64_t addr, uint64_t len)
{
	struct read_piece pieces[MAX_PIECES];
	uint64_t ps = page_size(), n = 0;
	int fd = sc_snapshot_fd(child), err = 0;

	if (fd < 0)
		return fd;
	for (uint64_t off = 0; off < len; off += READ_PIECE, n++) {
		pieces[n] = (struct read_piece){ .task.fn = read_piece_run, .fd = fd,
						 .dst = dst + off, .zero = zero + off / ps,
						 .addr = addr + off, .len = piece_len(len, n) };
		sc_pool_submit(pool, &pieces[n].task);
	}
	for (uint64_t i = 0; i < n; i++) {
		sc_pool_wait(pool, &pieces[i].task);
		if (pieces[i].err && !err)
			err = sc_err(pieces[i].err, "cannot read the snapshot's memory at 0x%llx "
				     "(%llu bytes): %s", (unsigned long long)pieces[i].addr,
				     (unsigned long long)pieces[i].len, strerror(pieces[i].err));
	}
	return err;
}

/*
 * Memory the copier reads: private anonymous memory that can be read. The
 * snapshot reading a page itself must not fault (no PROT_READ, a file cut
 * short under a mapping), where /proc/<pid>/mem returns an error instead.
 */
static bool copier_reads(const struct sc_vma *v)
{
	return (v->prot & PROT_READ) && !(v->flags & SC_VMA_SHARED) &&
	       (v->kind == SC_VMA_ANON || v->kind == SC_VMA_HEAP || v->kind == SC_VMA_STACK);
}

/*
 * The snapshot's pages at [@addr, @addr + @len) into @dst with a flag each in
 * @zero: by the copier where @copier, the data pages packed (copier_read()),
 * else each page at its place through /proc/<pid>/mem.
 * Return: 0, with *@packed; or an error.
 * The time is added to *@spent, the debug log's reading figure.
 */
static int read_snapshot(struct sc_pool *pool, pid_t child, bool copier, uint8_t *dst,
			 uint8_t *zero, uint64_t addr, uint64_t len, bool *packed, double *spent)
{
	double t0 = sc_log_seconds();
	int err = copier ? copier_read(child, dst, zero, addr, len) : 1;

	*packed = err == 0;
	if (err == 1)
		err = proc_read(pool, child, dst, zero, addr, len);
	*spent += sc_log_seconds() - t0;
	return err;
}

/* Read @n data pages at @addr into the window; each becomes a stored or zero run. */
static int read_pages(struct window *w, struct sc_pool *pool, pid_t child, bool copier,
		      uint64_t addr, uint64_t n, double *spent)
{
	uint64_t ps = page_size();
	uint8_t *at = w->buf + w->fill * ps;
	bool packed;
	int err = read_snapshot(pool, child, copier, at, w->zero, addr, n * ps, &packed, spent);

	w->scanned += n;
	for (uint64_t i = 0; !err && i < n; i++) {
		bool zero = w->zero[i];

		err = add_run(w, zero ? SC_RUN_ZERO : SC_RUN_STORED, 1);
		if (!zero) {
			/* keep stored pages packed: the payload is the stored pages in order */
			if (!packed && at + i * ps != w->buf + w->fill * ps)
				memmove(w->buf + w->fill * ps, at + i * ps, ps);
			w->fill++;
		}
	}
	return err;
}

static void fill_identity(const struct sc_vma *v, struct sc_segment_info *s)
{
	struct stat st;

	s->dev = v->dev;
	s->inode = v->inode;
	if (v->kind == SC_VMA_FILE && stat(v->path, &st) == 0) {
		s->file_size = (uint64_t)st.st_size;
		s->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
			      (uint64_t)st.st_mtim.tv_nsec;
	}
}

static uint32_t segment_flags(const struct sc_vma *v, bool embed)
{
	uint32_t f = 0;

	if (v->flags & SC_VMA_SHARED)
		f |= SC_SEG_SHARED;
	if (v->kind == SC_VMA_FILE)
		f |= SC_SEG_FILE | (embed ? SC_SEG_EMBEDDED : 0);
	if (v->kind == SC_VMA_STACK)
		f |= SC_SEG_STACK | SC_SEG_GROWSDOWN;
	if (v->kind == SC_VMA_HEAP)
		f |= SC_SEG_HEAP;
	if (v->flags & SC_VMA_HELD)
		f |= SC_SEG_HELD;
	/* its inode is the segment's id, which a restore attaches again (sysv_collect.c) */
	if ((v->flags & SC_VMA_SHARED) && (v->flags & SC_VMA_SYSV))
		f |= SC_SEG_SYSV;
	return f;
}

/* The pages of private memory the record holds, which the next image may leave to it. */
static void note_held(const struct window *w)
{
	uint64_t ps = page_size();

	if (!sc_written_watches(w->vma))
		return;
	for (uint32_t i = 0; i < w->n_runs; i++) {
		const struct sc_run *r = &w->runs[i];
		uint64_t at = w->start + r->first * ps;

		if (r->kind == SC_RUN_STORED || r->kind == SC_RUN_ZERO || r->kind == SC_RUN_PARENT)
			sc_lineage_note_held(at, at + (uint64_t)r->count * ps);
	}
}

/*
 * Write the window as one record, ended without waiting for the writes of its
 * bytes (*@lent marks them: the window is filled again once they are out).
 */
static int write_record(struct sc_writer *wr, const struct window *w, bool embed,
			uint64_t *lent)
{
	uint64_t ps = page_size(), payload = 0;
	struct sc_segment_info s = {
		.start = w->start, .length = w->pages * ps, .vma_start = w->vma->start,
		.vma_end = w->vma->end, .prot = w->vma->prot, .flags = segment_flags(w->vma, embed),
		.offset = w->vma->offset + (w->start - w->vma->start), .runs = w->runs,
		.n_runs = w->n_runs, .path = w->vma->path, .vmflags = w->vma->vmflags,
	};
	int err;

	*lent = 0;
	if (!w->pages)
		return 0;
	fill_identity(w->vma, &s);
	for (uint32_t i = 0; i < w->n_runs; i++)
		if (w->runs[i].kind == SC_RUN_STORED)
			payload += w->runs[i].count;
	note_held(w);
	/*
	 * The stored pages lie packed in the buffer: one append lets the writer
	 * compress whole chunks where they are, where an append per run (a page or
	 * two in a busy heap) would copy every byte into its staging chunks first.
	 */
	err = sc_segment_begin(wr, &s, ps);
	if (!err && payload)
		err = sc_writer_append(wr, w->buf, payload * ps);
	return err ? err : sc_writer_end_lent(wr, lent);
}

/*
 * Reading the snapshot and writing the image overlap: a reader thread fills
 * one window while this thread makes the record of another, and the writers
 * write the bytes of a third. process_vm_readv() costs about as much as
 * writing the bytes, so this halves a checkpoint's time.
 *
 * The windows go round in order: the reader fills one, hands it over and
 * goes on in the next; this thread ends its record without waiting for the
 * writes (sc_writer_end_lent()), and gives it back once its bytes are out.
 * Of two windows, one would be the reader's while the other waited for its
 * writes, and the reader and the writers would take turns at each record's
 * end; a third lets the reader fill one while the bytes of the two before it
 * are written.
 */
struct pipeline {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct window win[SC_WINDOWS];
	bool full[SC_WINDOWS]; /* handed over, its record not yet begun */
	bool held[SC_WINDOWS]; /* handed over, not yet given back */
	int fill;            /* the window the reader fills */
	bool reader_waits;   /* for the window it is to fill next */
	bool done, stop;     /* reader finished; writer failed */
	int err;             /* the reader's error */
	char msg[1024];      /* and its message, for the caller's thread */
	pid_t child;
	const struct sc_shared_frozen *shared; /* copies of shared memory at the instant */
	struct sc_pool *pool;    /* reads the snapshot on every core */
	bool copier;             /* the window buffers are the copier's */
	bool embed;
	bool incremental;        /* pages the parent holds unchanged are parent runs */
	struct sc_vma *v;        /* read by the reader; their vmflags are the writer's (flags) */
	struct sc_vmf_reader *flags;
	size_t n;
	/* for the debug log: which side of the pipeline waited for the other */
	double reader_waited, writer_waited; /* seconds */
	double writer_ended;                 /* seconds waiting for a window's bytes to be written */
	double started, first_handed;        /* when the pipeline started, its first window handed over */
	double residency;                    /* seconds the reader spent finding the pages that exist */
	double reading;                      /* and reading their data */
	uint64_t pages_read;
	uint64_t window_pages;   /* a window's size, SC_WINDOW at most (window_bytes()) */
	uint64_t handed_pages;   /* data pages in the windows handed over so far */
};

/* Reader: hand the full window over and continue in the next one. */
static int flush_window(struct pipeline *pl)
{
	struct window *w = &pl->win[pl->fill], *next;
	uint64_t end = w->start + w->pages * page_size();
	double t0 = sc_log_seconds();
	bool stop;

	if (!w->pages)
		return 0;
	pl->pages_read += w->scanned;
	pl->handed_pages += w->fill;
	if (!pl->first_handed)
		pl->first_handed = t0;
	pthread_mutex_lock(&pl->lock);
	pl->full[pl->fill] = pl->held[pl->fill] = true;
	pl->fill = (pl->fill + 1) % SC_WINDOWS;
	pthread_cond_broadcast(&pl->changed);
	while (pl->held[pl->fill] && !pl->stop) {
		pl->reader_waits = true;
		pthread_cond_wait(&pl->changed, &pl->lock);
	}
	pl->reader_waits = false;
	stop = pl->stop;
	pl->reader_waited += sc_log_seconds() - t0;
	pthread_mutex_unlock(&pl->lock);
	next = &pl->win[pl->fill];
	next->vma = w->vma;
	next->start = end;
	next->pages = next->fill = next->scanned = 0;
	next->n_runs = 0;
	return stop ? -ECANCELED : 0;
}

/*
 * A mapping's residency runs, turned into image runs; data pages are read
 * into the window, which is written out each time its buffer is full. A
 * sparse reservation of any size with little data is one small record.
 *
 * Full means holding data: the zero pages of a read take no room, so the next
 * read takes the room they left, until less than 1/ROOM_PART of the
 * buffer is free. Half the pages of a busy heap are zero; its records would
 * otherwise hold half a buffer each, and every record ends with the
 * compression workers waiting for its last chunks.
 */
#define ROOM_PART 4

/*
 * Where the pages of @v are read: a shared mapping's copy made at the
 * instant (shared_freeze_rt.c), else the mapping itself in the snapshot.
 */
static uint64_t instant_source(const struct pipeline *pl, const struct sc_vma *v,
			       bool keep_shared)
{
	uint64_t copy;

	if (!(v->flags & SC_VMA_SHARED) || (v->flags & SC_VMA_HELD) ||
	    (v->kind == SC_VMA_FILE && !keep_shared) || (v->flags & SC_VMA_SYSV))
		return v->start; /* (a held file's pages are not read: its descriptor has them) */
	copy = sc_shared_copy_of(pl->shared, v->start, v->end);
	if (!copy)
		sc_log(SC_LOG_WARN, "shared mapping %s at 0x%llx was not copied at the instant of "
		       "the checkpoint (made while the threads stopped, or unreadable): it is "
		       "saved as it is now", *v->path ? v->path : "(anonymous)",
		       (unsigned long long)v->start);
	return copy ? copy : v->start;
}

/*
 * How much page data one window holds: WINDOW_PER_THREAD for each thread that
 * compresses, from WINDOW_MIN to SC_WINDOW. The buffers are fresh memory at
 * every checkpoint, and their first fill costs a fault and a cleared page per
 * page, taken by the copier's threads on one shared object: two windows of
 * 64 MiB for a process of 256 MiB made it take 40% more CPU than its data
 * needed, and an incremental image of 207 MiB spent 10-15 ms of its reading
 * on them (16 cores). A record does not wait for its writes at its end
 * (write_windows()), so the workers stay busy from one window into the next
 * without windows of several chunks each: on 16 cores, windows of 32 MiB made
 * that image's pipeline 10-25% shorter than windows of 64.
 */
#define WINDOW_PER_THREAD (2ull << 20)
#define WINDOW_MIN (16ull << 20)

static uint64_t window_bytes(unsigned threads)
{
	uint64_t bytes = threads * WINDOW_PER_THREAD;

	return bytes < WINDOW_MIN ? WINDOW_MIN : bytes > SC_WINDOW ? SC_WINDOW : bytes;
}

/*
 * The first windows are small: the writer waits for the first one, and its
 * time is the whole pipeline's at the start (an incremental image's first
 * 48 MiB of data take the reader a pass over a gigabyte). Each window then
 * holds at most as much data as all the windows before it, from FIRST_WINDOW
 * on, so the writer always has as much to do as the reader's next window takes.
 */
#define FIRST_WINDOW (4ull << 20)

/* The data pages the window being filled may hold before it is handed over. */
static uint64_t window_cap(const struct pipeline *pl)
{
	uint64_t first = FIRST_WINDOW / page_size();
	uint64_t cap = pl->handed_pages > first ? pl->handed_pages : first;

	return cap < pl->window_pages ? cap : pl->window_pages;
}

/* A window with less than 1/ROOM_PART of its room left is handed over; *@w is the next one. */
static int flush_if_full(struct pipeline *pl, struct window **w)
{
	uint64_t cap = window_cap(pl);
	int err = 0;

	if ((*w)->fill >= cap || cap - (*w)->fill < cap / ROOM_PART) {
		err = flush_window(pl);
		*w = &pl->win[pl->fill];
	}
	return err;
}

/*
 * Read @n data pages of @v from page @page on (at @src + page * ps in the
 * snapshot) into the window; a window whose buffer is full is handed over
 * and *@w is the next one.
 */
static int read_span(struct pipeline *pl, struct window **w, const struct sc_vma *v, uint64_t src,
		     uint64_t page, uint64_t n)
{
	uint64_t ps = page_size();
	int err = 0;

	while (!err && n) {
		/* a read fills the room left; its zero pages then drop out */
		uint64_t room = window_cap(pl) - (*w)->fill, take = room < n ? room : n;

		err = read_pages(*w, pl->pool, pl->child, pl->copier && copier_reads(v),
				 src + page * ps, take, &pl->reading);
		page += take;
		n -= take;
		if (!err)
			err = flush_if_full(pl, w);
	}
	return err;
}

/*
 * Flag the pages from @page on that the image leaves to its parent
 * SC_COPY_LEFT, the others 0, in @w's flags: as many as one read takes, with no
 * more pages to read than the window has room for. Return: the pages flagged,
 * with *@to_read, those not left.
 */
static uint64_t mark_left(struct pipeline *pl, struct window *w, const struct sc_vma *v,
			  uint64_t page, uint64_t left, uint64_t *to_read)
{
	uint64_t ps = page_size(), max = SC_WINDOW_FLAGS, room = window_cap(pl) - w->fill;
	uint64_t take = 0;

	*to_read = 0;
	while (take < left && take < max) {
		uint64_t at = v->start + (page + take) * ps, n;
		bool leave;

		n = sc_lineage_leaves(at, at + (left - take) * ps, &leave) / ps;
		n = n < max - take ? n : max - take;
		if (!leave && *to_read + n > room && !(n = room - *to_read))
			break;
		*to_read += leave ? 0 : n;
		memset(w->zero + take, leave ? SC_COPY_LEFT : 0, n);
		take += n;
	}
	return take;
}

/*
 * The pages of an incremental image's mapping: the ones nobody wrote since
 * the parent's instant are parent runs, and only the others are read, by the
 * copier in one pass over many pages (5% of them scattered: one read per
 * page took 28 us each). Without a copier, or where one of its threads did
 * not start, each run of pages is read on its own.
 */
static int read_leaving(struct pipeline *pl, struct window **w, const struct sc_vma *v,
			uint64_t src, uint64_t page, uint64_t left)
{
	uint64_t ps = page_size(), to_read = 0;
	bool copier = pl->copier && copier_reads(v);
	int err = 0;

	while (!err && left) {
		uint64_t take = copier ? mark_left(pl, *w, v, page, left, &to_read) : 0;
		double t0 = sc_log_seconds();
		int got = take ? copier_gather(pl->child, (*w)->buf + (*w)->fill * ps, (*w)->zero,
					       src + page * ps, take, to_read) : 1;

		pl->reading += sc_log_seconds() - t0;
		if (got < 0)
			return got;
		if (got == 1) { /* one run at a time */
			bool leave;
			uint64_t addr = v->start + page * ps;

			take = sc_lineage_leaves(addr, addr + left * ps, &leave) / ps;
			err = leave ? add_run(*w, SC_RUN_PARENT, take)
				    : read_span(pl, w, v, src, page, take);
		} else {
			(*w)->scanned += take;
			for (uint64_t i = 0; i < take && !err; i++) {
				uint8_t f = (*w)->zero[i];

				err = add_run(*w, f == SC_COPY_LEFT ? SC_RUN_PARENT : f ? SC_RUN_ZERO
							     : SC_RUN_STORED, 1);
				(*w)->fill += !f;
			}
			if (!err)
				err = flush_if_full(pl, w);
		}
		page += take;
		left -= take;
	}
	return err;
}

/*
 * Which pages exist comes from a walk of the mapping's page tables, 20 ms for
 * 4 GiB: it is found a slice at a time, the first SLICE_FIRST and each next
 * one twice as large, so that the reader starts on a large mapping's pages
 * after a short walk, and a huge sparse reservation still costs a few scans.
 */
#define SLICE_FIRST (64ull << 20)

/* The pages of [@from, @to) of @v into the windows; *@w is the window being filled. */
static int read_slice(struct pipeline *pl, struct window **w, const struct sc_vma *v,
		      uint64_t src, uint64_t from, uint64_t to)
{
	bool keep_shared = keeps_shared_file(v);
	uint64_t first = (from - v->start) / page_size();
	struct sc_page_run *pr;
	size_t n;
	double t0 = sc_log_seconds();
	int err = sc_pages_scan_pool(pl->pool, pl->child, from, to, &pr, &n);

	pl->residency += sc_log_seconds() - t0;
	if (err < 0)
		return err;
	for (size_t i = 0; !err && i < n; i++) {
		uint8_t kind = classify(v, pr[i].state, pl->embed, keep_shared);
		uint64_t page = first + pr[i].first, left = pr[i].count;

		if (kind != TO_READ)
			err = add_run(*w, kind, left);
		else if (pl->incremental && sc_written_watches(v))
			err = read_leaving(pl, w, v, src, page, left);
		else
			err = read_span(pl, w, v, src, page, left);
	}
	free(pr);
	return err;
}

static int read_vma(struct pipeline *pl, const struct sc_vma *v)
{
	uint64_t src = instant_source(pl, v, keeps_shared_file(v));
	struct window *w = &pl->win[pl->fill];
	int err = 0;

	w->vma = v;
	w->start = v->start;
	w->pages = w->fill = w->scanned = 0;
	w->n_runs = 0;
	for (uint64_t at = v->start, len = SLICE_FIRST; !err && at < v->end; at += len, len *= 2)
		err = read_slice(pl, &w, v, src, at, v->end - at < len ? v->end : at + len);
	return err ? err : flush_window(pl);
}

static void *reader_main(void *arg)
{
	struct pipeline *pl = arg;
	int err = 0;

	for (size_t i = 0; !err && i < pl->n; i++) {
		if (sc_vma_saved(&pl->v[i]))
			err = read_vma(pl, &pl->v[i]);
		else if (pl->v[i].kind == SC_VMA_SPECIAL)
			sc_log(SC_LOG_WARN, "mapping %s at 0x%llx is not saved", pl->v[i].path,
			       (unsigned long long)pl->v[i].start);
	}
	pthread_mutex_lock(&pl->lock);
	if (err < 0 && err != -ECANCELED) {
		pl->err = err;
		snprintf(pl->msg, sizeof(pl->msg), "%s", selfckpt_last_error());
	}
	pl->done = true;
	pthread_cond_broadcast(&pl->changed);
	pthread_mutex_unlock(&pl->lock);
	return NULL;
}

/*
 * The windows whose records ended and that are not given back yet: the @n
 * before @at, the window written next (they go round in order), each with the
 * mark of its bytes (sc_writer_end_lent()).
 */
struct lent {
	uint64_t mark[SC_WINDOWS];
	int at, n;
};

static int oldest(const struct lent *q)
{
	return (q->at - q->n + SC_WINDOWS) % SC_WINDOWS;
}

/*
 * Wait until window @q->at is handed over, or the reader waits for the oldest
 * window @q holds. Return: 1 handed over, 0 the reader waits, -1 the
 * reader is done and none is left.
 */
static int wait_full(struct pipeline *pl, const struct lent *q)
{
	double t0 = sc_log_seconds();
	int r;

	pthread_mutex_lock(&pl->lock);
	while (!pl->full[q->at] && !pl->done && !(pl->reader_waits && q->n))
		pthread_cond_wait(&pl->changed, &pl->lock);
	r = pl->full[q->at] ? 1 : pl->done ? -1 : 0;
	pl->full[q->at] = false; /* the writer's now, until given back */
	pthread_mutex_unlock(&pl->lock);
	pl->writer_waited += sc_log_seconds() - t0;
	return r;
}

/*
 * Give the oldest window of @q back to the reader once its bytes are out
 * (even after an error @err: the window may be unmapped next); with @wait
 * false, only if they already are. Return: 0 given back, 1 not yet, or @err
 * or the writer's error (given back, and the reader stopped).
 */
static int hand_back(struct sc_writer *wr, struct pipeline *pl, struct lent *q, bool wait,
		     int err)
{
	double t0 = sc_log_seconds();
	int r = sc_writer_returned(wr, q->mark[oldest(q)], wait);

	if (r == 1)
		return 1;
	err = err ? err : r;
	pl->writer_ended += sc_log_seconds() - t0;
	pthread_mutex_lock(&pl->lock);
	pl->held[oldest(q)] = false;
	pl->stop = pl->stop || err < 0;
	pthread_cond_broadcast(&pl->changed);
	pthread_mutex_unlock(&pl->lock);
	q->n--;
	return err;
}

/* Give back, oldest first, the windows whose bytes are out (all of them, with @wait). */
static int hand_back_out(struct sc_writer *wr, struct pipeline *pl, struct lent *q, bool wait,
			 int err)
{
	int r;

	while (q->n && (r = hand_back(wr, pl, q, wait, err)) != 1)
		err = err ? err : r;
	return err;
}

/*
 * Writer: write each window the reader hands over, in order. A record ends
 * without waiting for its bytes to be written, so the next one is made while
 * they are, paced by the writer's own slots; nothing is copied to let this
 * thread go on (sc_writer_end()). A window goes back to the reader once its
 * bytes are out: at once where they already are, and waited for only when
 * the reader has no other window to fill.
 */
static int write_windows(struct sc_writer *wr, struct pipeline *pl)
{
	struct lent q = { .at = 0, .n = 0 };
	int err = 0, r;

	while (!err && (r = wait_full(pl, &q)) >= 0) {
		if (!r) {
			err = hand_back(wr, pl, &q, true, 0);
			continue;
		}
		q.mark[q.at] = 0; /* nothing of it in the writer's hands */
		err = sc_segments_vmflags_wait(pl->flags, pl->win[q.at].vma);
		if (!err)
			err = write_record(wr, &pl->win[q.at], pl->embed, &q.mark[q.at]);
		q.at = (q.at + 1) % SC_WINDOWS;
		q.n++;
		err = hand_back_out(wr, pl, &q, err < 0, err);
	}
	/* no window is unmapped while a write still reads it */
	return hand_back_out(wr, pl, &q, true, err);
}

/*
 * The reader starts on the memory while the mappings' flags are read beside
 * it (segment_vmflags.c): a record waits only where its mapping's flags were
 * not known at the start, and the end for the checks of them all.
 */
static int run_pipeline(struct sc_writer *wr, struct pipeline *pl, const struct sc_frozen *fz,
			const struct sc_save_opts *o)
{
	struct sc_vmf_reader flags;
	pthread_t reader;
	double t0 = pl->started = sc_log_seconds();
	int err = sc_segments_vmflags_start(&flags, fz, o, pl->v, pl->n), end;

	if (err < 0)
		return err;
	pl->flags = &flags;
	err = pthread_create(&reader, NULL, reader_main, pl);
	if (err) {
		sc_segments_vmflags_end(&flags);
		return sc_err(err, "cannot start the snapshot reader: %s", strerror(err));
	}
	err = write_windows(wr, pl);
	pthread_join(reader, NULL);
	end = sc_segments_vmflags_end(&flags);
	if (!err && pl->err)
		err = sc_err_quiet(-pl->err, "%s", pl->msg); /* reported by the reader */
	if (!err)
		err = end;
	if (!err)
		sc_log(SC_LOG_DEBUG, "checkpoint: %.1f MiB of memory read and written in %.3f s; "
		       "the first window handed over after %.3f s; the reader took %.3f s to find "
		       "the pages that exist, %.3f s to read them and waited %.3f s for the "
		       "writer, the writer %.3f s for the reader, %.3f s for mappings' flags and "
		       "%.3f s for windows' bytes to be written",
		       (double)(pl->pages_read * page_size()) / (1 << 20), sc_log_seconds() - t0,
		       pl->first_handed ? pl->first_handed - t0 : 0.0, pl->residency, pl->reading,
		       pl->reader_waited, pl->writer_waited, flags.waited, pl->writer_ended);
	return err;
}

/*
 * The ring of an AIO context (io_setup()) shows as a removed file "/[aio]":
 * saved as memory, it would come back as a ring the kernel does not know,
 * and every io_submit() on it would fail.
 */
static int refuse_aio(const struct sc_vma *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].kind == SC_VMA_DELETED && strcmp(v[i].path, "/[aio]") == 0)
			return sc_err(SELFCKPT_EHOST, "the mapping at 0x%llx-0x%llx is the ring of "
				      "an AIO context (io_setup()): AIO contexts do not come back, so "
				      "no image is written", (unsigned long long)v[i].start,
				      (unsigned long long)v[i].end);
	return 0;
}

int sc_segments_write(struct sc_writer *wr, const struct sc_frozen *fz,
		      const struct sc_save_opts *o)
{
	struct pipeline pl = { .lock = PTHREAD_MUTEX_INITIALIZER,
			       .changed = PTHREAD_COND_INITIALIZER, .child = fz->child,
			       .shared = &fz->shared, .embed = o->embed_files,
			       .incremental = o->incremental };
	struct sc_vma *v;
	uint8_t *shared;
	size_t n, shared_size;
	double t0 = sc_log_seconds(), t1;
	int err = sc_maps_read(fz->child, &v, &n);

	if (!err && ((err = refuse_aio(v, n)) < 0 || (err = sc_segments_split(fz, &v, &n)) < 0))
		sc_maps_free(v, n);
	if (err < 0)
		return err;
	sc_segments_held(o, v, n);
	t1 = sc_log_seconds();
	pl.v = v;
	pl.n = n;
	err = sc_pool_new(&pl.pool, sc_settings()->threads ? sc_settings()->threads
							   : sc_job_threads());
	if (err < 0)
		err = sc_err(-err, "cannot start the snapshot readers: %s", strerror(-err));
	if (!err)
		pl.window_pages = window_bytes(sc_pool_threads(pl.pool)) / page_size();
	shared = sc_copier_buffer(&shared_size);
	pl.copier = shared && shared_size >= SC_SHARED_SIZE;
	for (int i = 0; i < SC_WINDOWS && !err; i++) {
		/* the copier writes the flags too */
		pl.win[i].zero = pl.copier ? shared + SC_WINDOWS * SC_WINDOW + i * SC_WINDOW_FLAGS
				 : malloc(SC_WINDOW / page_size());
		pl.win[i].buf = pl.copier ? shared + i * SC_WINDOW
				: mmap(NULL, SC_WINDOW, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (!pl.win[i].zero)
			err = sc_err(ENOMEM, "out of memory for a window");
		if (pl.win[i].buf == MAP_FAILED) {
			pl.win[i].buf = NULL;
			err = sc_err(ENOMEM, "out of memory for a %llu MiB window",
				     (unsigned long long)(SC_WINDOW >> 20));
		}
	}
	sc_log(SC_LOG_DEBUG, "checkpoint: the snapshot's mappings read in %.3f s, the readers "
	       "and windows ready in %.3f s", t1 - t0, sc_log_seconds() - t1);
	if (!err)
		err = run_pipeline(wr, &pl, fz, o);
	for (int i = 0; i < SC_WINDOWS; i++) {
		if (pl.win[i].buf && !pl.copier)
			munmap(pl.win[i].buf, SC_WINDOW);
		free(pl.win[i].runs);
		if (!pl.copier)
			free(pl.win[i].zero);
	}
	sc_pool_free(pl.pool);
	sc_maps_free(v, n);
	return err;
}
