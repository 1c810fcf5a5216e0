/* SPDX-License-Identifier: MIT */
/*
 * fds_workers_rt.c - the reads of a large descriptor table shared among
 * helper threads, at the freeze.
 *
 * Stage contract: as fds_freeze_rt.c (every other thread of the program
 * stopped, raw system calls, no malloc). The helpers are raw threads of this
 * process (sc_raw_thread()), made with every signal blocked, on stacks
 * prepared with the table: no libc, no TLS, no errno. They exit at the end
 * of their pass; the thread that freezes waits for them.
 *
 * What they share is what costs the freeze most and depends on nothing but
 * the descriptor itself: the fdinfo of each object without a file and of
 * each file (a procfs open, read and close: 8 to 12 us each) and the state
 * of each socket (twenty getsockopt() calls, a peek at its queue). Each helper takes the
 * next indexes from one counter and writes its copies into a block of
 * z->held of its own, taken from the end of the file by one atomic add; a
 * copy that does not fit the rest of a block starts a new one, and one that
 * does not fit a block, or a socket whose queue carries descriptors (which
 * join the table), is left to the thread that freezes (SC_HELD_LEFT). The
 * blocks' unused ends are never read. Nothing here changes the result: with
 * no helper, or few descriptors, the freeze reads each itself.
 */
#include <sys/stat.h>

#include "core/core_internal.h"
#include "core/fd_socket.h"
#include "core/fds_freeze.h"
#include "core/sc_sys.h"

#define EAGAIN_ 11
#define E2BIG_ 7
#define HELPER_STACK (64 << 10)
#define TAKE 16            /* indexes a helper takes at a time */
#define PARALLEL_MIN 256   /* fewer descriptors: this thread alone */
#define BLOCK_ROOM (8 << 10) /* less left in a block: a new one before the next copy */

unsigned long sc_fds_helpers_size(int n)
{
	return (unsigned long)n * (sizeof(struct sc_fds_helper) + SC_FDS_SCRATCH_SIZE +
				   SC_FDS_STAGE_SIZE + HELPER_STACK);
}

void sc_fds_helpers_place(struct sc_fds_frozen *z, void *mem, int n)
{
	char *p = (char *)mem + (unsigned long)n * sizeof(struct sc_fds_helper);

	z->helpers = mem;
	z->n_helpers = n;
	for (int i = 0; i < n; i++) {
		struct sc_fds_helper *h = &z->helpers[i];

		h->own.scratch = p;
		h->own.scratch_size = SC_FDS_SCRATCH_SIZE;
		h->own.stage = p + SC_FDS_SCRATCH_SIZE;
		h->own.stage_size = SC_FDS_STAGE_SIZE;
		p += SC_FDS_SCRATCH_SIZE + SC_FDS_STAGE_SIZE + HELPER_STACK;
		h->stack = (uint64_t)(uintptr_t)p & ~15ull; /* the stack grows down from here */
	}
}

/* Write the block's staged copies; 0 or -errno. */
static long flush(struct sc_fds_frozen *own)
{
	long err = 0;

	for (long done = 0, w; done < own->stage_len && !err; done += w) {
		w = sc_sys4(SYS_pwrite64, own->held, (long)(own->stage + done),
			    own->stage_len - done, own->stage_at + done);
		if (w <= 0)
			err = w < 0 ? w : -EAGAIN_;
	}
	own->stage_len = 0;
	return err;
}

/* A new block of z->held, the size of the stage, for @own's next copies. */
static long new_block(struct sc_fds_frozen *z, struct sc_fds_frozen *own)
{
	long err = flush(own);
	int64_t at = __atomic_fetch_add(&z->held_end, (int64_t)own->stage_size, __ATOMIC_RELAXED);

	own->held_end = at;
	own->stage_at = at;
	own->stage_len = 0;
	own->held_limit = at + own->stage_size;
	return err;
}

/* Does descriptor @i take part in @pass? */
static int in_pass(const struct sc_fds_frozen *z, int pass, int i)
{
	const struct sc_fd_instant *d = &z->fds[i];

	if (pass == SC_PASS_FDINFO)
		return (!(d->mode & S_IFMT) && d->held == -1) || sc_fds_freeze_lockable(d);
	return S_ISSOCK(d->mode) && d->share == i && d->held == -1;
}

static void clear_error(struct sc_fds_frozen *own)
{
	own->err = 0;
	own->err_fd = -1;
	own->err_what = 0;
}

/* One copy: made, or left (the block's bytes of it dropped), or a failure kept in own->err. */
static void copy_one(struct sc_fds_frozen *z, struct sc_fds_frozen *own, int pass, int i)
{
	struct sc_fd_instant *d = &z->fds[i];
	int64_t end;

	if (own->held_limit - own->held_end < BLOCK_ROOM) {
		long err = new_block(z, own);

		if (err < 0) {
			sc_fds_freeze_fail(own, (int)err, SC_FREEZE_COPY_FDINFO, -1);
			return;
		}
	}
	end = own->held_end;
	if (pass == SC_PASS_SOCKETS)
		sc_fd_socket_freeze(own, d);
	else if (!(d->mode & S_IFMT))
		sc_fds_freeze_object(own, d);
	else
		sc_fds_freeze_fdinfo_locks(own, d);
	if (own->err != -E2BIG_ && own->err != -EAGAIN_)
		return;
	/* too long for a block, or descriptors in flight: the coordinator's */
	clear_error(own);
	own->held_end = end;
	own->stage_len = (int)(end - own->stage_at);
	if (pass == SC_PASS_FDINFO && (d->mode & S_IFMT))
		d->locks = SC_HELD_LEFT;
	else
		d->held = SC_HELD_LEFT;
}

/* Number @fd into the table where it is open: at the next free place, in no order. */
static void list_one(struct sc_fds_frozen *z, struct sc_fds_frozen *own, int fd)
{
	struct sc_fd_instant d;
	int at;

	if (sc_fds_freeze_read_one(&d, fd) < 0)
		return;
	at = __atomic_fetch_add(&z->n, 1, __ATOMIC_RELAXED);
	if (at < z->cap)
		z->fds[at] = d;
	else
		sc_fds_freeze_fail(own, -E2BIG_, SC_FREEZE_TOO_MANY, fd);
}

static int by_number(const struct sc_fd_instant *x, const struct sc_fd_instant *y)
{
	return x->fd < y->fd ? -1 : x->fd > y->fd;
}

/*
 * The table in the order of the numbers, as a listing by one thread makes
 * it: z->order sorted, then the entries moved along its cycles, one entry
 * held aside for each.
 */
static void sort_by_number(struct sc_fds_frozen *z)
{
	int32_t *o = z->order;

	sc_fds_sort(z, by_number);
	for (int i = 0; i < z->n; i++) { /* place i takes entry o[i] */
		struct sc_fd_instant aside;
		int at = i;

		if (o[i] == i)
			continue;
		aside = z->fds[i];
		while (o[at] != i) {
			int32_t from = o[at];

			z->fds[at] = z->fds[from];
			o[at] = at;
			at = from;
		}
		z->fds[at] = aside;
		o[at] = at;
	}
}

/* Take indexes (numbers, for SC_PASS_LIST) from z->cursor until [.., @to) is done. */
static void take_all(struct sc_fds_frozen *z, struct sc_fds_frozen *own, int pass, int to)
{
	for (;;) {
		int first = __atomic_fetch_add(&z->cursor, TAKE, __ATOMIC_RELAXED);

		if (first >= to)
			break;
		if (pass == SC_PASS_LIST) {
			for (int fd = first; fd < first + TAKE && fd < to; fd++)
				list_one(z, own, fd);
			continue;
		}
		for (int i = first; i < first + TAKE && i < to && !own->err; i++)
			if (in_pass(z, pass, i))
				copy_one(z, own, pass, i);
	}
	if (!own->err && pass != SC_PASS_LIST) {
		long err = flush(own);

		if (err < 0)
			sc_fds_freeze_fail(own, (int)err, SC_FREEZE_COPY_FDINFO, -1);
	}
}

/* A helper's copy of the table's state: the shared parts, its own buffers, no block yet. */
static void share(struct sc_fds_frozen *own, const struct sc_fds_frozen *z)
{
	char *scratch = own->scratch, *stage = own->stage;
	int scratch_size = own->scratch_size, stage_size = own->stage_size;

	*own = *z;
	own->scratch = scratch;
	own->scratch_size = scratch_size;
	own->stage = stage;
	own->stage_size = stage_size;
	own->stage_len = 0;
	own->held_limit = 0; /* no block yet: copy_one() takes one before the first copy */
	own->held_end = 0;
	clear_error(own);
	own->helpers = 0;
	own->n_helpers = 0;
}

__attribute__((noreturn)) static void help(void *arg)
{
	struct sc_fds_helper *h = arg;

	take_all(h->z, &h->own, h->pass, h->to);
	for (;;)
		sc_sys1(SYS_exit, 0);
}

/* Keep the first failure of @own in @z. */
static void merge_error(struct sc_fds_frozen *z, const struct sc_fds_frozen *own)
{
	if (own->err)
		sc_fds_freeze_fail(z, own->err, own->err_what, own->err_fd);
}

int sc_fds_parallel(struct sc_fds_frozen *z, int pass, int from, int to)
{
	struct sc_fds_helper self = { .own = { .scratch = z->scratch, .stage = z->stage,
					       .scratch_size = z->scratch_size,
					       .stage_size = z->stage_size } };
	uint64_t all = ~0ull, old = 0;

	if (!z->n_helpers || to - from < PARALLEL_MIN || z->err)
		return -1;
	/* a listing makes no copy: no z->held yet, whose number it would list */
	if (pass != SC_PASS_LIST && sc_fds_freeze_ready(z) < 0)
		return -1; /* the copies go one by one, as without helpers */
	z->cursor = from;
	/* every copy of the table's state is made before the first helper changes it */
	for (int i = 0; i < z->n_helpers; i++) {
		struct sc_fds_helper *h = &z->helpers[i];

		share(&h->own, z);
		h->z = z;
		h->pass = pass;
		h->to = to;
		h->tid = 0;
	}
	share(&self.own, z);
	/* the helpers take none of the program's signals: blocked before they start */
	sc_sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8);
	for (int i = 0; i < z->n_helpers; i++)
		if (sc_raw_thread(SC_RAW_THREAD_CLONE, z->helpers[i].stack, &z->helpers[i].tid,
				  help, &z->helpers[i]) < 0)
			z->helpers[i].tid = 0; /* the others take its part */
	sc_sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8);
	take_all(z, &self.own, pass, to);
	merge_error(z, &self.own);
	for (int i = 0; i < z->n_helpers; i++) {
		int tid;

		while ((tid = __atomic_load_n(&z->helpers[i].tid, __ATOMIC_ACQUIRE)) != 0)
			sc_sys4(SYS_futex, (long)&z->helpers[i].tid, SC_FUTEX_WAIT_SHARED, tid, 0);
		merge_error(z, &z->helpers[i].own);
	}
	if (pass == SC_PASS_LIST) {
		if (z->n > z->cap)
			z->n = z->cap; /* the failure is kept */
		sort_by_number(z);
		return 0;
	}
	z->stage_at = z->held_end; /* the coordinator's next copies go after every block */
	z->stage_len = 0;
	return 0;
}
