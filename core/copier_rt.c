/* SPDX-License-Identifier: MIT */
/*
 * copier_rt.c - the snapshot process's side of the copier (core_internal.h).
 *
 * Stage contract: runs in the snapshot process that sc_clone_frozen() made, a
 * copy of one thread of a process whose other threads were stopped anywhere,
 * inside malloc or stdio included, with every signal blocked. Its threads'
 * stacks are in the region shared with the checkpoint, and they write nothing
 * else but that region, so the process's own memory stays what it was at the
 * clone. Raw system calls only: no libc, no TLS. It serves until it is killed.
 */
#include "core/core_internal.h"
#include "core/sc_core.h"
#include "core/sc_sys.h"

_Static_assert(sizeof(struct sc_copier_ctl) == 64, "one control block a cache line");
_Static_assert(__builtin_offsetof(struct sc_copier_ctl, stack) == 32,
	       "sc_clone_frozen() finds the first stack at 32");

struct sc_copier_ctl *sc_copier_ctl;
int sc_copier_n;

/* VM|FS|FILES|SIGHAND|THREAD|SYSVSEM: a plain thread of the snapshot */
#define COPIER_CLONE 0x50f00ul

/* Flag each page of the request, 1 where it is all zero; the others are counted. */
static void scan(struct sc_copier_ctl *c)
{
	uint8_t *flags = (uint8_t *)c->flags;
	uint64_t n = c->len / c->page, data = 0;

	for (uint64_t i = 0; i < n; i++) {
		flags[i] = sc_page_is_zero((const void *)(c->src + i * c->page), c->page);
		data += !flags[i];
	}
	c->count = data;
}

/*
 * Each page not flagged SC_COPY_LEFT, checked and copied in one pass while it
 * is in the cache: a page read for an incremental image is one of a few
 * scattered in memory nothing else touches, and a scan and a pack read it
 * from memory twice, a round of requests apart.
 */
static void gather(struct sc_copier_ctl *c)
{
	uint8_t *flags = (uint8_t *)c->flags;
	uint64_t n = c->len / c->page, dst = c->dst, data = 0;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t src = c->src + i * c->page;

		if (flags[i] == SC_COPY_LEFT)
			continue;
		flags[i] = sc_page_is_zero((const void *)src, c->page);
		if (flags[i])
			continue;
		sc_copy_bytes(dst, src, c->page);
		dst += c->page;
		data++;
	}
	c->count = data;
}

/* Copy the pages a scan found not zero to dst, packed, a run of them at a time. */
static void pack(const struct sc_copier_ctl *c)
{
	const uint8_t *flags = (const uint8_t *)c->flags;
	uint64_t n = c->len / c->page, dst = c->dst;

	for (uint64_t i = 0; i < n;) {
		uint64_t run = 0;

		if (flags[i]) {
			i++;
			continue;
		}
		while (i + run < n && !flags[i + run])
			run++;
		sc_copy_bytes(dst, c->src + i * c->page, run * c->page);
		dst += run * c->page;
		i += run;
	}
}

/* A snapshot thread: serve what block @arg asks, for ever. */
__attribute__((noreturn)) static void serve(void *arg)
{
	struct sc_copier_ctl *c = arg;
	int seen = 0;

	for (;;) {
		int seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);

		if (seq == seen) {
			sc_sys4(SYS_futex, (long)&c->seq, SC_FUTEX_WAIT_SHARED, seen, 0);
			continue;
		}
		if (c->op == SC_COPY_SCAN)
			scan(c);
		else if (c->op == SC_COPY_PACK)
			pack(c);
		else if (c->op == SC_COPY_GATHER)
			gather(c);
		seen = seq;
		__atomic_store_n(&c->done, seq, __ATOMIC_RELEASE);
		sc_sys3(SYS_futex, (long)&c->done, SC_FUTEX_WAKE_SHARED, 1);
	}
}

void sc_copier_main(struct sc_copier_ctl *c)
{
	/* A block whose thread cannot start says so; the checkpoint reads its
	 * pieces through /proc instead. */
	for (int i = 1; i < sc_copier_n; i++)
		if (sc_raw_thread(COPIER_CLONE, c[i].stack, NULL, serve, &c[i]) < 0)
			__atomic_store_n(&c[i].done, -1, __ATOMIC_RELEASE);
	serve(&c[0]);
}
