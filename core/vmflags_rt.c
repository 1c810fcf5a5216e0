/* SPDX-License-Identifier: MIT */
/*
 * vmflags_rt.c - mappings that a fork would lose, copied whole by the
 * snapshot's clone (vmflags.h).
 *
 * Stage contract: both functions run in the checkpointing thread while every
 * other thread is stopped (possibly inside malloc), right before and right
 * after sc_clone_frozen(). Raw system calls and the table that
 * sc_vmflags_read() filled before the stop, only. A MADV_DONTFORK mapping is
 * made MADV_DOFORK and a MADV_WIPEONFORK one MADV_KEEPONFORK for the clone,
 * so the snapshot holds their memory; the segment records still carry their
 * own settings. A mapping that changed since the table was read is found out
 * after the release (sc_vmflags_same()), and the image is refused.
 */
#include <linux/mman.h>

#include "core/sc_sys.h"
#include "core/vmflags.h"

static void advise_each(const struct sc_vmflags *v, uint32_t bit, int advice)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->r[i].bits & bit)
			sc_sys3(SYS_madvise, (long)v->r[i].start, (long)(v->r[i].end - v->r[i].start),
				advice);
}

void sc_vmflags_fork_whole(const struct sc_vmflags *v)
{
	advise_each(v, SC_VMF_DONTFORK, MADV_DOFORK);
	advise_each(v, SC_VMF_WIPEONFORK, MADV_KEEPONFORK);
}

void sc_vmflags_fork_back(const struct sc_vmflags *v)
{
	advise_each(v, SC_VMF_DONTFORK, MADV_DONTFORK);
	advise_each(v, SC_VMF_WIPEONFORK, MADV_WIPEONFORK);
}
