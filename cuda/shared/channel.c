/* SPDX-License-Identifier: MIT */
/*
 * channel.c - what both ends of the channel share: its layout and the futex.
 */
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cuda/shared/channel.h"

void sc_ch_wake(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
}

void sc_ch_wait(uint32_t *word, uint32_t val, int timeout_ms)
{
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L };

	syscall(SYS_futex, word, FUTEX_WAIT, val, timeout_ms >= 0 ? &ts : NULL, NULL, 0);
}

void sc_ch_init(void *base, uint64_t size)
{
	struct sc_ch_header *h = sc_ch_header(base);

	memset(h, 0, sizeof(*h));
	h->magic = SC_CH_MAGIC;
	h->version = SC_CH_VERSION;
	h->slots = SC_CH_SLOTS;
	h->size = size;
	h->base = (uint64_t)(uintptr_t)base;
	for (uint32_t i = 0; i < SC_CH_SLOTS; i++) {
		struct sc_ch_slot *s = sc_ch_slot(base, i);

		s->turn = i;
		s->state = SC_SLOT_FREE;
	}
}
