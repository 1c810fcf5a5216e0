/* SPDX-License-Identifier: MIT */
/*
 * vmflags_rt.c - mappings that a fork would lose, copied whole by the
 * snapshot's clone (vmflags.h).
 *
 * Stage contract: both functions run in the checkpointing thread while every
 * other thread is stopped (possibly inside malloc), right before and right
 * after sc_clone_frozen(). Raw system calls, and the table and the maps
 * buffer that sc_vmflags_read() made before the stop, only. A MADV_DONTFORK
 * mapping is made MADV_DOFORK and a MADV_WIPEONFORK one MADV_KEEPONFORK for
 * the clone, so the snapshot holds their memory; the segment records still
 * carry their own settings. Only a range that is still a mapping of its own
 * (a line of /proc/self/maps, read here) is touched: the program may have
 * unmapped it since the table was read, and another mapping there must not
 * get its settings. Such a range marks the table stale, and the image is
 * refused after the release, as it is where a setting changed. The maps and
 * VmLck read here are the instant's, which the checks of segment_vmflags.c
 * hold the snapshot and the table against.
 */
#include <linux/mman.h>

#include "core/sc_sys.h"
#include "core/vmflags.h"

/* Read /proc/self/maps into v->maps; its length, or 0 where it cannot be read or does not fit. */
static long read_maps(struct sc_vmflags *v)
{
	long len = v->maps ? sc_proc_read("/proc/self/maps", v->maps, (long)v->maps_size) : -1;

	return len < 0 || len >= (long)v->maps_size - 1 ? 0 : len;
}

/* Mark each range that is a line of the maps, from its start to its end, present. */
static void mark_present(struct sc_vmflags *v)
{
	for (const char *p = v->maps; *p;) {
		uint64_t start = sc_parse_hex(&p), end = 0;

		if (*p == '-') {
			p++;
			end = sc_parse_hex(&p);
		}
		for (size_t i = 0; i < v->n; i++)
			if (v->r[i].start == start && v->r[i].end == end)
				v->r[i].present = 1;
		while (*p && *p != '\n')
			p++;
		if (*p)
			p++;
	}
}

static void advise_each(const struct sc_vmflags *v, uint32_t bit, int advice)
{
	for (size_t i = 0; i < v->n; i++)
		if ((v->r[i].bits & bit) && v->r[i].present)
			sc_sys3(SYS_madvise, (long)v->r[i].start, (long)(v->r[i].end - v->r[i].start),
				advice);
}

/* The calling thread's: a main thread that ended shows no memory in its status. */
long sc_vmflags_locked_kb(void)
{
	char buf[8192];
	const char *p = sc_status_value("/proc/thread-self/status", "VmLck:", buf, sizeof(buf));

	return p && *p >= '0' && *p <= '9' ? (long)sc_parse_dec(&p) : -1;
}

void sc_vmflags_fork_whole(struct sc_vmflags *v)
{
	v->locked_kb_frozen = sc_vmflags_locked_kb();
	v->maps_len = read_maps(v);
	for (size_t i = 0; i < v->n; i++)
		v->r[i].present = 0;
	if (v->maps_len)
		mark_present(v);
	for (size_t i = 0; i < v->n; i++)
		v->stale |= !v->r[i].present;
	advise_each(v, SC_VMF_DONTFORK, MADV_DOFORK);
	advise_each(v, SC_VMF_WIPEONFORK, MADV_KEEPONFORK);
}

void sc_vmflags_fork_back(const struct sc_vmflags *v)
{
	advise_each(v, SC_VMF_DONTFORK, MADV_DONTFORK);
	advise_each(v, SC_VMF_WIPEONFORK, MADV_WIPEONFORK);
}
