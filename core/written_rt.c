/* SPDX-License-Identifier: MIT */
/*
 * written_rt.c - the pages written since the last instant, listed and
 * protected again at this one (written.h).
 *
 * Stage contract: runs in the checkpointing thread while every other thread
 * is stopped (possibly inside malloc), right before sc_clone_frozen(). Raw
 * system calls and the buffers sc_written_arm() made before the stop, only.
 * A range whose scan fails (it is no longer under this descriptor's
 * protection: unmapped, moved or re-made since the arming) or whose written
 * runs do not fit is left out of the scanned ranges: none of its pages is
 * clean now, nor next time. Its pages not yet protected again still read as
 * written at the next scan, so nothing written is ever missed.
 */
#include "core/pagemap_scan.h"
#include "core/sc_sys.h"
#include "core/written.h"

#define SCAN_RUNS 256 /* written runs per ioctl */

/*
 * One armed range: 0 when scanned whole, -1 when it is to be left out. With
 * @protect the pages found are protected again (the instant's scan); without,
 * they are only noted, into the late list (the scan after the snapshot).
 */
static int scan_range(struct sc_written_scan *s, uint64_t start, uint64_t end, bool protect)
{
	struct sc_wrange *out = protect ? s->written : s->late;
	uint64_t *n_out = protect ? &s->n_written : &s->n_late;
	uint64_t cap = protect ? s->cap_written : s->cap_late;
	struct sc_page_region runs[SCAN_RUNS];
	uint64_t at = start;

	while (at < end) {
		struct sc_pm_scan_arg a = {
			.size = sizeof(a),
			.flags = (protect ? SC_PM_SCAN_WP_MATCHING : 0) | SC_PM_SCAN_CHECK_WPASYNC,
			.start = at, .end = end, .vec = (uint64_t)(uintptr_t)runs,
			.vec_len = SCAN_RUNS, .category_mask = SC_PAGE_IS_WRITTEN,
			.return_mask = SC_PAGE_IS_WRITTEN,
		};
		long n = sc_sys3(SYS_ioctl, s->pagemap, (long)SC_PAGEMAP_SCAN, (long)&a);

		if (n < 0)
			return -1;
		if ((uint64_t)n > cap - *n_out)
			return -1; /* stop: what it would protect could not be noted */
		for (long i = 0; i < n; i++)
			out[(*n_out)++] = (struct sc_wrange){ runs[i].start, runs[i].end };
		/* a full vector stops the walk early: go on from where it stopped */
		if (n < SCAN_RUNS || a.walk_end <= at)
			break;
		at = a.walk_end;
	}
	return 0;
}

void sc_written_take_rt(struct sc_written_scan *s)
{
	s->n_scanned = 0;
	s->n_written = 0;
	s->n_late = 0;
	for (uint32_t i = 0; i < s->n_armed; i++) {
		uint64_t mark = s->n_written;

		if (scan_range(s, s->armed[i].start, s->armed[i].end, true) == 0)
			s->scanned[s->n_scanned++] = s->armed[i];
		else
			s->n_written = mark; /* the range is left out whole */
	}
}

/*
 * Between the scan and the snapshot the checkpointing thread itself writes:
 * its stack, the library's state. The snapshot holds those writes, so the
 * pages are not clean for this image; left unprotected, they count as written
 * for the next one too. A range whose late scan fails is left out whole.
 */
void sc_written_late_rt(struct sc_written_scan *s)
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < s->n_scanned; i++) {
		uint64_t mark = s->n_late;

		if (scan_range(s, s->scanned[i].start, s->scanned[i].end, false) == 0)
			s->scanned[kept++] = s->scanned[i];
		else
			s->n_late = mark;
	}
	s->n_scanned = kept;
}
