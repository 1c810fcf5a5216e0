/* SPDX-License-Identifier: MIT */
/*
 * written.c - arming the watch of written pages before a checkpoint's stop,
 * and the writer's questions once the instant is taken (written.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "core/sc_core.h"
#include "core/sc_fds.h"
#include "core/sc_sys.h"
#include "core/sc_write_watch.h"
#include "core/written.h"
#include "format/sc_log.h"

static struct {
	pid_t owner;                /* the process the descriptors are of; 0: none open */
	int uffd;
	bool unavailable;           /* said why once; every page counts as written */
	struct sc_written_scan scan;
	uint32_t cap_armed;
	bool taken;                 /* the scan ran at this checkpoint's instant */
	struct sc_wrange *vouched;  /* the ranges scanned at the last instant kept */
	uint32_t n_vouched, cap_vouched;
	struct sc_wrange *carried;  /* written since it, before an instant taken again */
	uint64_t n_carried;
} wt = { .uffd = -1, .scan = { .pagemap = -1 } };

/* Runs the late scan makes room for: the few pages the checkpointing thread writes. */
#define LATE_ROOM 4096

static void close_own(int *fd)
{
	if (*fd >= 0) {
		sc_fds_own_remove(*fd);
		close(*fd);
	}
	*fd = -1;
}

static int unavailable(int err, const char *what)
{
	close_own(&wt.uffd);
	close_own(&wt.scan.pagemap);
	wt.unavailable = true;
	sc_log(SC_LOG_INFO, "checkpoint: images are full, not incremental: the pages written "
	       "between checkpoints need userfaultfd's asynchronous write protection and "
	       "PAGEMAP_SCAN (Linux 6.7 or later, userfaultfd allowed by the seccomp profile): "
	       "%s: %s", what, strerror(-err));
	return 1;
}

static int open_watch(void)
{
	const char *what;
	int fd = sc_uffd_open_async(0, &what);

	if (fd < 0)
		return unavailable(fd, what);
	wt.uffd = fd;
	sc_fds_own_add(fd);
	if ((wt.scan.pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) < 0)
		return unavailable(-errno, "/proc/self/pagemap");
	sc_fds_own_add(wt.scan.pagemap);
	wt.owner = (pid_t)sc_sys0(SYS_getpid);
	return 0;
}

/*
 * A reservation of a terabyte or more (a sanitizer's shadow memory, a
 * runtime's address-space reserve) is not watched: written to all the time
 * and mostly empty, it would make every write fault for little gain. Its
 * pages are stored in every image.
 */
#define WATCH_MAX (1ull << 40)

/*
 * Private anonymous memory the program can write: what the watch covers.
 * A mapping it cannot write now (a PROT_NONE reservation: an allocator's or a
 * runtime's address space, a sanitizer's, hundreds of gigabytes each) is left
 * out: the kernel's scan of it costs seconds, and a part made writable later
 * was not watched, so it is not clean, and its pages are stored.
 */
bool sc_written_watches(const struct sc_vma *v)
{
	return !(v->flags & SC_VMA_SHARED) && (v->prot & PROT_WRITE) &&
	       !sc_skip_covers(v->start, v->end) && v->end - v->start < WATCH_MAX &&
	       (v->kind == SC_VMA_ANON || v->kind == SC_VMA_HEAP || v->kind == SC_VMA_STACK);
}

/* Registered already (by this descriptor) or now: true; refused (another watch's): false. */
static bool register_range(const struct sc_vma *v)
{
	struct uffdio_register reg = { .range = { v->start, v->end - v->start },
				       .mode = UFFDIO_REGISTER_MODE_WP };

	return ioctl(wt.uffd, UFFDIO_REGISTER, &reg) == 0;
}

static int grow(void **p, size_t n, size_t size)
{
	void *q = realloc(*p, n * size);

	if (!q)
		return sc_err(ENOMEM, "out of memory watching the pages written");
	*p = q;
	return 0;
}

/*
 * Room for every written run the scan can find, made before the stop: one run
 * per two pages at most (written, unwritten, written...), of the armed ranges
 * and of the machine's memory and swap, which hold every page written.
 * Reserved, not committed: only the runs found touch their pages (8 MiB of
 * address space for 4 GiB of memory).
 */
static int written_room(struct sc_written_scan *s)
{
	uint64_t pages = 0, need, page = (uint64_t)sysconf(_SC_PAGESIZE), held;
	struct sysinfo si;
	void *p;

	for (uint32_t i = 0; i < s->n_armed; i++)
		pages += (s->armed[i].end - s->armed[i].start) / page;
	if (sysinfo(&si) == 0) {
		held = ((uint64_t)si.totalram + si.totalswap) * si.mem_unit / page;
		pages = pages < held ? pages : held;
	}
	need = pages / 2 + s->n_armed + 1;
	if (need <= s->cap_written)
		return 0;
	p = mmap(NULL, need * sizeof(*s->written), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return sc_err(ENOMEM, "out of address space watching the pages written");
	/* the library's own: in no image, under no watch */
	if (sc_skip_add((uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)p + need * sizeof(*s->written))) {
		munmap(p, need * sizeof(*s->written));
		return sc_err(ENOMEM, "too many mappings of the library's own");
	}
	if (s->written) {
		sc_skip_remove((uint64_t)(uintptr_t)s->written);
		munmap(s->written, s->cap_written * sizeof(*s->written));
	}
	s->written = p;
	s->cap_written = need;
	return 0;
}

static int arm_ranges(const struct sc_vma *v, size_t n)
{
	struct sc_written_scan *s = &wt.scan;

	s->n_armed = 0;
	if (n > wt.cap_armed) {
		if (grow((void **)&s->armed, n, sizeof(*s->armed)) < 0 ||
		    grow((void **)&s->scanned, n, sizeof(*s->scanned)) < 0)
			return -ENOMEM;
		wt.cap_armed = (uint32_t)n;
	}
	if (!s->cap_late) {
		if (grow((void **)&s->late, LATE_ROOM, sizeof(*s->late)) < 0)
			return -ENOMEM;
		s->cap_late = LATE_ROOM;
	}
	for (size_t i = 0; i < n; i++)
		if (sc_written_watches(&v[i]) && register_range(&v[i]))
			s->armed[s->n_armed++] = (struct sc_wrange){ v[i].start, v[i].end };
	return written_room(s);
}

int sc_written_arm(void)
{
	struct sc_vma *v;
	size_t n;
	int err;

	/*
	 * An instant whose checkpoint never settled (it failed, or was taken
	 * again) protected the pages it found written, and no image holds them:
	 * nothing is vouched for now.
	 */
	if (wt.taken)
		wt.n_vouched = 0;
	wt.taken = false;
	if (wt.owner && wt.owner != (pid_t)sc_sys0(SYS_getpid)) {
		/* a forked child: the descriptors are copies of its parent's watch */
		close_own(&wt.uffd);
		close_own(&wt.scan.pagemap);
		sc_written_forget();
	}
	if (wt.unavailable)
		return 1;
	if (wt.uffd < 0 && (err = open_watch()) != 0)
		return err;
	if ((err = sc_maps_read(0, &v, &n)) < 0)
		return err;
	err = arm_ranges(v, n);
	sc_maps_free(v, n);
	return err < 0 ? err : 0;
}

void sc_written_take(void)
{
	if (wt.uffd < 0 || wt.unavailable)
		return;
	sc_written_take_rt(&wt.scan);
	wt.taken = true;
}

void sc_written_late(void)
{
	if (wt.taken)
		sc_written_late_rt(&wt.scan);
}

bool sc_wrange_find(const struct sc_wrange *r, uint64_t n, uint64_t a, uint64_t *edge)
{
	uint64_t lo = 0, hi = n;

	while (lo < hi) { /* the first range that ends above @a */
		uint64_t mid = lo + (hi - lo) / 2;

		if (r[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n) {
		*edge = UINT64_MAX;
		return false;
	}
	if (r[lo].start <= a) {
		*edge = r[lo].end;
		return true;
	}
	*edge = r[lo].start;
	return false;
}

uint64_t sc_written_clean_run(uint64_t addr, uint64_t end, bool *clean)
{
	const struct sc_written_scan *s = &wt.scan;
	uint64_t e1 = UINT64_MAX, e2 = UINT64_MAX, e3 = UINT64_MAX, e4 = UINT64_MAX;
	uint64_t e5 = UINT64_MAX, edge;

	*clean = false;
	if (!wt.taken || addr >= end)
		return end > addr ? end - addr : 0;
	bool vouched = sc_wrange_find(wt.vouched, wt.n_vouched, addr, &e1);
	bool scanned = sc_wrange_find(s->scanned, s->n_scanned, addr, &e2);
	bool written = sc_wrange_find(s->written, s->n_written, addr, &e3);
	bool late = sc_wrange_find(s->late, s->n_late, addr, &e4);
	bool carried = sc_wrange_find(wt.carried, wt.n_carried, addr, &e5);

	*clean = vouched && scanned && !written && !late && !carried;
	/* the answer holds up to the nearest edge of the five */
	edge = e1 < e2 ? e1 : e2;
	edge = edge < e3 ? edge : e3;
	edge = edge < e4 ? edge : e4;
	edge = edge < e5 ? edge : e5;
	return (edge < end ? edge : end) - addr;
}

bool sc_written_vouches(void)
{
	return wt.taken && wt.n_vouched && wt.scan.n_scanned;
}

void sc_written_settle(bool kept)
{
	const struct sc_written_scan *s = &wt.scan;

	wt.n_vouched = 0;
	wt.n_carried = 0;
	if (kept && wt.taken && s->n_scanned) {
		if (s->n_scanned > wt.cap_vouched) {
			if (grow((void **)&wt.vouched, s->n_scanned, sizeof(*wt.vouched)) < 0)
				return; /* nothing vouched for: the next image is full */
			wt.cap_vouched = s->n_scanned;
		}
		memcpy(wt.vouched, s->scanned, s->n_scanned * sizeof(*wt.vouched));
		wt.n_vouched = s->n_scanned;
	}
	wt.taken = false;
}

/* The ranges of @a and of @b (each sorted, disjoint) into @out: their union, sorted, disjoint. */
static uint64_t ranges_union(const struct sc_wrange *a, uint64_t na, const struct sc_wrange *b,
			     uint64_t nb, struct sc_wrange *out)
{
	uint64_t i = 0, j = 0, n = 0;

	while (i < na || j < nb) {
		struct sc_wrange r = j >= nb || (i < na && a[i].start <= b[j].start) ? a[i++] : b[j++];

		if (n && r.start <= out[n - 1].end) {
			if (r.end > out[n - 1].end)
				out[n - 1].end = r.end;
		} else {
			out[n++] = r;
		}
	}
	return n;
}

/* The parts of @a (sorted, disjoint) that @b covers too, into @out (room for @na + @nb). */
static uint64_t ranges_within(const struct sc_wrange *a, uint64_t na, const struct sc_wrange *b,
			      uint64_t nb, struct sc_wrange *out)
{
	uint64_t n = 0, j = 0;

	for (uint64_t i = 0; i < na; i++) {
		while (j < nb && b[j].end <= a[i].start)
			j++;
		for (uint64_t k = j; k < nb && b[k].start < a[i].end; k++)
			out[n++] = (struct sc_wrange){ a[i].start > b[k].start ? a[i].start : b[k].start,
						       a[i].end < b[k].end ? a[i].end : b[k].end };
	}
	return n;
}

/* wt.vouched cut down to what @scanned covers too. Return: false where there is no room. */
static bool vouch_within(const struct sc_wrange *scanned, uint64_t n)
{
	struct sc_wrange *out = malloc((wt.n_vouched + n + 1) * sizeof(*out));
	uint64_t k;

	if (!out)
		return false;
	k = ranges_within(wt.vouched, wt.n_vouched, scanned, n, out);
	free(wt.vouched);
	wt.vouched = out;
	wt.cap_vouched = (uint32_t)(wt.n_vouched + n + 1);
	wt.n_vouched = (uint32_t)k;
	return true;
}

/*
 * Two lists made one: @extra's @n ranges into wt.carried. Return: false
 * where there is no room (then nothing is vouched for).
 */
static bool carry_more(const struct sc_wrange *extra, uint64_t n)
{
	struct sc_wrange *out = malloc((wt.n_carried + n + 1) * sizeof(*out));

	if (!out)
		return false;
	wt.n_carried = ranges_union(wt.carried, wt.n_carried, extra, n, out);
	free(wt.carried);
	wt.carried = out;
	return true;
}

void sc_written_carry(void)
{
	const struct sc_written_scan *s = &wt.scan;

	if (!wt.taken) {
		sc_written_settle(false);
		return;
	}
	wt.taken = false;
	/*
	 * Clean at the next instant: vouched for at the last one kept, scanned
	 * at this one and that one, written at neither nor in between.
	 */
	if (!vouch_within(s->scanned, s->n_scanned) || !carry_more(s->written, s->n_written) ||
	    !carry_more(s->late, s->n_late)) {
		sc_log(SC_LOG_INFO, "checkpoint: out of memory keeping the pages written: the "
		       "next image is full");
		wt.n_vouched = 0;
		wt.n_carried = 0;
	}
}

void sc_written_forget(void)
{
	/*
	 * In a restarted process the numbers are the checkpointed process's:
	 * never closed here, the program may own them now.
	 */
	if (wt.uffd >= 0)
		sc_fds_own_remove(wt.uffd);
	if (wt.scan.pagemap >= 0)
		sc_fds_own_remove(wt.scan.pagemap);
	wt.uffd = wt.scan.pagemap = -1;
	wt.owner = 0;
	wt.unavailable = false;
	wt.taken = false;
	wt.n_vouched = 0;
	wt.scan.n_armed = wt.scan.n_scanned = 0;
	wt.scan.n_written = wt.scan.n_late = 0;
}
