/* SPDX-License-Identifier: MIT */
/*
 * fd_share_rt.c - which descriptors share an open file description, found at
 * the freeze. Stage contract: as fds_freeze_rt.c (every other thread stopped,
 * raw system calls, the table's scratch buffer, no malloc).
 *
 * Descriptors of different files, of different kinds of object, of eventfds
 * with different ids or with different access modes never share one (none of
 * these can change): the table is sorted by them first, with no system call.
 * Only within a run of one file opened many times (a log file opened by each
 * worker; every timerfd lives on the one anon inode) must the kernel be asked:
 *
 *  - A long run is told apart by marks. F_SETSIG writes a number from 0 to
 *    64 into an open file description; F_GETSIG reads it back through any of
 *    its descriptors. Mark the run's descriptors in turn with the digits of
 *    their place in it, read each back, and each descriptor reads the place
 *    of the last descriptor of its description to be marked: one round tells
 *    65 apart, two 4,225, three 274,625, at two fcntl() calls a descriptor a
 *    round (0.3 us each), against log2 of the run's length calls of kcmp()
 *    (0.7 us each). The number is the signal the file sends for O_ASYNC and
 *    for a lease being broken, and nothing else: a run is marked only where
 *    no description of it has O_ASYNC or a lease (its fdinfo tells),
 *    while every thread of the process is stopped, and each description gets
 *    its own number back. It works where kcmp() is refused too.
 *  - Other runs are sorted by kcmp(), which orders open file descriptions: a
 *    binary insertion sort asks about log2(n!) times, the fewest a
 *    comparison sort can, and learns which are equal on the way.
 *  - Where kcmp() is refused (seccomp without CAP_SYS_PTRACE) and a run
 *    cannot be marked, its descriptors are compared pair by pair: flip
 *    O_NONBLOCK on one and see whether the other follows, then flip it back.
 */
#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/stat.h>

#include "core/fds_freeze.h"
#include "core/sc_sys.h"

#define EPERM_ 1
#define ENOSYS_ 38
#define FASYNC_ 020000
#define MARKS 65       /* F_SETSIG takes 0 .. _NSIG (64) */
#define MARK_ROUNDS 3  /* 65^3 = 274,625 descriptors in one run at most */
#define MARK_MIN_RUN 9 /* below this, kcmp() asks about as few times */

/* What can be told without asking the kernel: the order of the first sort. */
static int by_identity(const struct sc_fd_instant *x, const struct sc_fd_instant *y)
{
	int ax = x->status & (O_ACCMODE | O_PATH), ay = y->status & (O_ACCMODE | O_PATH);

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	if (x->anon_kind != y->anon_kind)
		return x->anon_kind < y->anon_kind ? -1 : 1;
	if (x->anon_id != y->anon_id)
		return x->anon_id < y->anon_id ? -1 : 1;
	return ax < ay ? -1 : ax > ay;
}

static void sift(struct sc_fds_frozen *z, int root, int end,
		 int (*cmp)(const struct sc_fd_instant *x, const struct sc_fd_instant *y))
{
	int32_t *o = z->order;

	for (int child; (child = 2 * root + 1) < end; root = child) {
		if (child + 1 < end && cmp(&z->fds[o[child]], &z->fds[o[child + 1]]) < 0)
			child++;
		if (cmp(&z->fds[o[root]], &z->fds[o[child]]) >= 0)
			return;
		int32_t t = o[root];

		o[root] = o[child];
		o[child] = t;
	}
}

/* Heapsort: no memory, no recursion. */
void sc_fds_sort(struct sc_fds_frozen *z,
		 int (*cmp)(const struct sc_fd_instant *x, const struct sc_fd_instant *y))
{
	int32_t *o = z->order;

	for (int i = 0; i < z->n; i++)
		o[i] = i;
	for (int i = z->n / 2 - 1; i >= 0; i--)
		sift(z, i, z->n, cmp);
	for (int end = z->n - 1; end > 0; end--) {
		int32_t t = o[0];

		o[0] = o[end];
		o[end] = t;
		sift(z, 0, end, cmp);
	}
}

/* Every descriptor of the run o[@a, @b) shares one description: the lowest index names it. */
static void all_one(struct sc_fds_frozen *z, int a, int b)
{
	int32_t low = z->order[a];

	for (int k = a; k < b; k++)
		if (z->order[k] < low)
			low = z->order[k];
	for (int k = a; k < b; k++)
		z->fds[z->order[k]].share = low;
}

/* May the run o[@a, @b) be marked (see the top of this file)? */
static int markable(const struct sc_fds_frozen *z, int a, int b)
{
	if (b - a < MARK_MIN_RUN || (b - a) * 5 > z->scratch_size)
		return 0;
	for (int k = a; k < b; k++) {
		const struct sc_fd_instant *d = &z->fds[z->order[k]];

		if (d->status & (FASYNC_ | O_PATH))
			return 0;
		if ((d->mode & S_IFMT) && !S_ISREG(d->mode))
			return 0;
		if (d->leased)
			return 0;
	}
	return 1;
}

/* Put back the number of each of the first @count descriptors of the run at @a. */
static void unmark(const struct sc_fds_frozen *z, int a, int count, const int8_t *own)
{
	for (int i = 0; i < count; i++)
		sc_sys3(SYS_fcntl, z->fds[z->order[a + i]].fd, F_SETSIG, own[i]);
}

/*
 * rep[i]: the place in the run o[@a, @a + @k) of the last descriptor of i's
 * description to be marked. Return: 0, or -1 where fcntl() failed (every
 * number is back as it was).
 */
static int mark_rounds(const struct sc_fds_frozen *z, int a, int k, int32_t *rep, int8_t *own)
{
	int rounds = k <= MARKS ? 1 : k <= MARKS * MARKS ? 2 : 3;
	int32_t weight = 1;

	for (int i = 0; i < k; i++) {
		long sig = sc_sys2(SYS_fcntl, z->fds[z->order[a + i]].fd, F_GETSIG);

		if (sig < 0)
			return -1;
		own[i] = (int8_t)sig;
		rep[i] = 0;
	}
	for (int r = 0; r < rounds; r++, weight *= MARKS) {
		for (int i = 0; i < k; i++)
			if (sc_sys3(SYS_fcntl, z->fds[z->order[a + i]].fd, F_SETSIG,
				    (i / weight) % MARKS) < 0) {
				unmark(z, a, k, own);
				return -1;
			}
		for (int i = 0; i < k; i++) {
			long sig = sc_sys2(SYS_fcntl, z->fds[z->order[a + i]].fd, F_GETSIG);

			if (sig < 0) {
				unmark(z, a, k, own);
				return -1;
			}
			rep[i] += (int32_t)sig * weight;
		}
	}
	unmark(z, a, k, own);
	return 0;
}

/*
 * The run o[@a, @b) told apart by marks. Return: 0, or -1 where it could not
 * be (a failed call, or a reading that contradicts itself: a description
 * changed by another process meanwhile), nothing decided.
 */
static int by_marks(struct sc_fds_frozen *z, int a, int b)
{
	int k = b - a;
	int32_t *rep = (int32_t *)z->scratch;
	int8_t *own = (int8_t *)(rep + k);

	if (mark_rounds(z, a, k, rep, own))
		return -1;
	for (int i = 0; i < k; i++)
		if (rep[i] < 0 || rep[i] >= k || rep[rep[i]] != rep[i])
			return -1; /* the last one marked reads its own place */
	for (int i = 0; i < k; i++)
		z->fds[z->order[a + i]].share = z->order[a + i];
	for (int i = 0; i < k; i++) { /* the lowest index of each description, on its last */
		struct sc_fd_instant *last = &z->fds[z->order[a + rep[i]]];

		if (z->order[a + i] < last->share)
			last->share = z->order[a + i];
	}
	for (int i = 0; i < k; i++)
		z->fds[z->order[a + i]].share = z->fds[z->order[a + rep[i]]].share;
	return 0;
}

static int kcmp_refused;

/* kcmp()'s order of the descriptions of @x and @y: <0, 0 or >0; 2 where it failed. */
static int by_description(int pid, const struct sc_fd_instant *x, const struct sc_fd_instant *y)
{
	long r = sc_sys5(SYS_kcmp, pid, pid, KCMP_FILE, x->fd, y->fd);

	if (r == -EPERM_ || r == -ENOSYS_)
		kcmp_refused = 1;
	return r == 0 ? 0 : r == 1 ? -1 : r == 2 ? 1 : 2;
}

/*
 * @x, just placed at o[@at + 1], shares the description of o[@at]: the
 * group, together in o[@a, @end), takes the lowest index of all of them.
 */
static void join(struct sc_fds_frozen *z, int a, int end, int at, int32_t x)
{
	int32_t was = z->fds[z->order[at]].share, low = was < x ? was : x;

	for (int k = at; k >= a && z->fds[z->order[k]].share == was; k--)
		z->fds[z->order[k]].share = low;
	z->fds[x].share = low;
	for (int k = at + 2; k < end && z->fds[z->order[k]].share == was; k++)
		z->fds[z->order[k]].share = low;
}

/*
 * The run o[@a, @b) sorted by description (binary insertion): descriptors of
 * one description end up together, each with the group's lowest index.
 * Return: 0, or -1 where kcmp() failed.
 */
static int by_kcmp(struct sc_fds_frozen *z, int pid, int a, int b)
{
	int32_t *o = z->order;

	z->fds[o[a]].share = o[a];
	for (int k = a + 1; k < b; k++) {
		int32_t x = o[k];
		int lo = a, hi = k, equal = -1;

		while (lo < hi && equal < 0) {
			int mid = lo + (hi - lo) / 2, c = by_description(pid, &z->fds[o[mid]],
									&z->fds[x]);

			if (c == 2)
				return -1;
			if (c == 0)
				equal = mid;
			else if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (equal >= 0)
			lo = equal + 1;
		for (int j = k; j > lo; j--)
			o[j] = o[j - 1];
		o[lo] = x;
		z->fds[x].share = x;
		if (equal >= 0)
			join(z, a, k + 1, equal, x);
	}
	return 0;
}

/* Do descriptors @a and @b share a description? Told by an O_NONBLOCK flip. */
static int flip_follows(int a, int b)
{
	long sa = sc_sys2(SYS_fcntl, a, F_GETFL), sb = sc_sys2(SYS_fcntl, b, F_GETFL), after;

	if (sa < 0 || sb < 0 || sc_sys3(SYS_fcntl, a, F_SETFL, sa ^ O_NONBLOCK) < 0)
		return 0;
	after = sc_sys2(SYS_fcntl, b, F_GETFL);
	sc_sys3(SYS_fcntl, a, F_SETFL, sa);
	return after >= 0 && ((after ^ sb) & O_NONBLOCK); /* @b changed with @a */
}

/*
 * The run o[@a, @b) compared pair by pair, in the order of the table: each
 * joins the first it shares with, which has the lowest index of them.
 */
static void by_flips(struct sc_fds_frozen *z, int a, int b)
{
	int32_t *o = z->order;

	for (int k = a + 1; k < b; k++) /* insertion sort by index: the pairs cost more */
		for (int j = k; j > a && o[j - 1] > o[j]; j--) {
			int32_t t = o[j];

			o[j] = o[j - 1];
			o[j - 1] = t;
		}
	for (int k = a; k < b; k++) {
		struct sc_fd_instant *d = &z->fds[o[k]];

		d->share = o[k];
		for (int j = a; j < k; j++) {
			const struct sc_fd_instant *e = &z->fds[o[j]];

			if (e->share == o[j] && flip_follows(e->fd, d->fd)) {
				d->share = o[j];
				break;
			}
		}
	}
}

/* The run o[@a, @b): descriptors of one file, one kind and one access mode. */
static void find_in_run(struct sc_fds_frozen *z, int pid, int a, int b)
{
	if (b - a == 1) {
		z->fds[z->order[a]].share = z->order[a];
		return;
	}
	if (z->fds[z->order[a]].anon_id >= 0) {
		all_one(z, a, b); /* one eventfd: its id names its description */
		return;
	}
	if (markable(z, a, b) && by_marks(z, a, b) == 0)
		return;
	if (!kcmp_refused && by_kcmp(z, pid, a, b) == 0)
		return;
	by_flips(z, a, b);
}

void sc_fds_find_shared(struct sc_fds_frozen *z)
{
	int pid = (int)sc_sys0(SYS_getpid);

	sc_fds_sort(z, by_identity);
	for (int a = 0, b; a < z->n; a = b) {
		for (b = a + 1; b < z->n && by_identity(&z->fds[z->order[a]],
							 &z->fds[z->order[b]]) == 0;)
			b++;
		find_in_run(z, pid, a, b);
	}
}
