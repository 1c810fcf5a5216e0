/* SPDX-License-Identifier: MIT */
/*
 * own_mappings_rt.c - mappings of selfckpt's own that an image must not hold: the CUDA
 * channel, shared with a GPU proxy that does not survive a restart, and the
 * checkpoint's own buffers. Whoever owns one maps it again after a restart
 * (a restored() hook).
 *
 * Stage contract: plain reads and writes of a static table, no system call;
 * sc_skip_covers() runs while every other thread is stopped too
 * (shared_freeze_rt.c).
 */
#include "core/sc_core.h"

#define SKIP_MAX 8

static struct {
	uint64_t start, end;
} skips[SKIP_MAX];

int sc_skip_add(uint64_t start, uint64_t end)
{
	for (int i = 0; i < SKIP_MAX; i++)
		if (!skips[i].end) {
			skips[i].start = start;
			skips[i].end = end;
			return 0;
		}
	return -1;
}

void sc_skip_remove(uint64_t start)
{
	for (int i = 0; i < SKIP_MAX; i++)
		if (skips[i].start == start)
			skips[i].start = skips[i].end = 0;
}

bool sc_skip_covers(uint64_t start, uint64_t end)
{
	for (int i = 0; i < SKIP_MAX; i++)
		if (skips[i].end && start >= skips[i].start && end <= skips[i].end)
			return true;
	return false;
}
