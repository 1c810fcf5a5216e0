/* SPDX-License-Identifier: MIT */
/*
 * written.h - which pages of the process's private memory it wrote since the
 * last checkpoint's instant: what an incremental image may leave to its
 * parent (spec §9.14, R-INC-7).
 *
 *   written.c     arming before the stop, and the writer's questions after it
 *   written_rt.c  the scan at the instant, among stopped threads
 *
 * userfaultfd's asynchronous write protection on every private anonymous
 * mapping (the write watch's mechanism, write_watch.c, with a descriptor of
 * its own: ranges that managed memory watches are refused to it, EBUSY, and
 * never scanned here). At each instant PAGEMAP_SCAN lists the pages written
 * since the last one and protects them again, in one call per range.
 *
 * A page is *clean* at an instant only where the kernel vouches for it the
 * whole time since the previous instant: its range was scanned then and is
 * scanned now, both times under this descriptor's protection, and the page is
 * not among the written. A mapping made, moved (mremap() drops the
 * registration of the range it moves to) or re-made since is registered again
 * at the next arming, unprotected: all its pages read as written that time.
 */
#ifndef SC_WRITTEN_H
#define SC_WRITTEN_H

#include <stdbool.h>
#include <stdint.h>

/* A range of addresses, [start, end). */
struct sc_wrange {
	uint64_t start, end;
};

/* What the scan at the instant reads and fills: made before the stop. */
struct sc_written_scan {
	int pagemap;                     /* /proc/self/pagemap */
	struct sc_wrange *armed;         /* the ranges registered, in address order */
	uint32_t n_armed;
	struct sc_wrange *scanned;       /* out: the armed ranges scanned whole */
	uint32_t n_scanned;
	struct sc_wrange *written;       /* out: written runs, in address order */
	uint64_t n_written, cap_written;
	struct sc_wrange *late;          /* out: written after the scan, before the snapshot */
	uint64_t n_late, cap_late;
};

/**
 * sc_wrange_find() - is @a in the @n sorted, disjoint ranges @r? *@edge: the
 * next address above @a where the answer changes (UINT64_MAX: none).
 */
bool sc_wrange_find(const struct sc_wrange *r, uint64_t n, uint64_t a, uint64_t *edge);

struct sc_vma;
/** sc_written_watches() - is @v memory the watch covers (private, anonymous, the program's)? */
bool sc_written_watches(const struct sc_vma *v);

/** sc_written_vouches() - after the instant: does the watch vouch for any page? */
bool sc_written_vouches(void);

/* written_rt.c: sc_written_take_rt() - the scan at the instant (async-signal-safe). */
void sc_written_take_rt(struct sc_written_scan *s);
/* sc_written_late_rt() - the scan right after the snapshot, which protects nothing. */
void sc_written_late_rt(struct sc_written_scan *s);

/**
 * sc_written_arm() - before the stop: register every private anonymous
 * mapping not yet registered, and make room for the scan. Where the kernel
 * offers no asynchronous write protection (before Linux 6.7, userfaultfd
 * refused by a seccomp profile) it says why at the info level, once, and
 * every page counts as written.
 * Return: 0 (armed), 1 (no tracking), or a negative error.
 */
int sc_written_arm(void);

/** sc_written_take() - at the instant, among stopped threads: the scan, when armed. */
void sc_written_take(void);
/**
 * sc_written_late() - right after the snapshot, the threads still stopped:
 * the pages this thread wrote since sc_written_take() are not clean.
 */
void sc_written_late(void);

/**
 * sc_written_clean_run() - after the instant: the length in bytes of the run
 * of pages from @addr (page-aligned) to at most @end that are all clean, with
 * *@clean true, or all not clean, with *@clean false.
 */
uint64_t sc_written_clean_run(uint64_t addr, uint64_t end, bool *clean);

/**
 * sc_written_settle() - the checkpoint is over: with @kept (its image was
 * completed), the ranges scanned at its instant are the ones vouched for
 * next time; without, nothing is (the pages written before the failed instant
 * were protected again by its scan, and no image holds them).
 */
void sc_written_settle(bool kept);

/**
 * sc_written_carry() - the image failed and its instant is taken again at
 * once: the pages written before it count as written at the next instant,
 * so that the image taken then may still leave the rest to the last one kept.
 */
void sc_written_carry(void);

/** sc_written_forget() - a restarted process: nothing is known, the descriptors are not ours. */
void sc_written_forget(void);

#endif /* SC_WRITTEN_H */
