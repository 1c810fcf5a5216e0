/* SPDX-License-Identifier: MIT */
/*
 * vmflags.h - the memory settings of each mapping (madvise(), mlock(),
 * MAP_NORESERVE, MAP_DROPPABLE ...), as the kernel shows them in the VmFlags
 * line of /proc/<pid>/smaps, for the segment records (format 1.3).
 *
 * Most settings are the same in the snapshot, a fork, as in the process. Four
 * are not: a fork does not copy a MADV_DONTFORK mapping at all, gives a
 * MADV_WIPEONFORK one empty, and drops mlock() and mlock2(MLOCK_ONFAULT). So
 * the process's own settings are read just before the threads stop; while
 * they are stopped, the mappings a fork would lose or wipe are made to fork
 * whole for the instant of the clone (vmflags_rt.c), and set back at once.
 *
 * A setting the program changed between that read and the stop is found
 * without reading smaps again (which walks every page table, and holds up
 * the writer's own mmap() calls as long): a mapping made MADV_DONTFORK since
 * is one the instant's maps list and the snapshot lacks; one made
 * MADV_WIPEONFORK keeps "wf" in the snapshot, which the clone did not copy;
 * and a lock taken or dropped changes VmLck, read with the table and again at
 * the instant (segment_vmflags.c).
 */
#ifndef SC_VMFLAGS_H
#define SC_VMFLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/sc_records.h"

/* The settings a fork loses: they are read from the process, not the snapshot. */
#define SC_VMF_FORK_LOST (SC_VMF_DONTFORK | SC_VMF_WIPEONFORK | SC_VMF_LOCKED | \
			  SC_VMF_LOCKONFAULT)

/* Settings no restore can give back, found in VmFlags. */
#define SC_VMF_BAD_HUGETLB 0x1u /* ht: hugetlb pages */
#define SC_VMF_BAD_SEALED 0x2u  /* sl: mseal() */

struct sc_vmf_range {
	uint64_t start, end;
	uint32_t bits;    /* SC_VMF_*, without SC_VMF_KNOWN */
	uint16_t bad;     /* SC_VMF_BAD_* */
	uint16_t present; /* vmflags_rt.c: still a mapping of its own at the freeze */
};

/* One process's mappings with their settings, in address order. */
struct sc_vmflags {
	struct sc_vmf_range *r; /* mapped memory (vmflags.c says why) */
	size_t n;
	size_t bytes;           /* of r's mapping */
	char *maps;             /* room for /proc/self/maps at the freeze (vmflags_rt.c) */
	size_t maps_size;
	long maps_len;          /* of the maps read at the freeze; 0 where they were not */
	int stale;              /* a range was no longer a mapping of its own at the freeze */
	long locked_kb;         /* VmLck (its status) as the table was read */
	long locked_kb_frozen;  /* and at the freeze; -1 where it could not be read */
};

/**
 * sc_vmflags_read() - the settings of every mapping of process @pid (0: this one).
 * @keep: only mappings with one of these bits are kept (~0u: every mapping);
 *        with fewer, room to read this process's maps at the freeze comes too.
 * Return: 0 or a negative error (reported).
 */
int sc_vmflags_read(pid_t pid, uint32_t keep, struct sc_vmflags *out);
/**
 * sc_vmflags_stream() - the settings of every mapping of process @pid, each
 * handed to @each as soon as smaps shows it, in address order; the first
 * error of @each ends the read and is returned. 0 or a negative error.
 */
int sc_vmflags_stream(pid_t pid, int (*each)(const struct sc_vmf_range *r, void *arg), void *arg);
/**
 * sc_vmflags_read_own() - as sc_vmflags_read() of this process, and, from the
 * same read, every mapping into @all (no room for the maps). 0 or an error
 * (reported), with neither table kept.
 */
int sc_vmflags_read_own(uint32_t keep, struct sc_vmflags *out, struct sc_vmflags *all);
/**
 * sc_vmflags_own_from() - as sc_vmflags_read_own(), with no smaps read: @all
 * lists the ranges of @from, @out none, with VmLck 0; @from must
 * hold no setting a fork loses (vmflags_cache.c says when that is sound).
 */
int sc_vmflags_own_from(const struct sc_vmflags *from, struct sc_vmflags *out,
			struct sc_vmflags *all);
/** sc_vmflags_add() - append @r to @v (in address order), in mapped memory. 0 or -ENOMEM (reported). */
int sc_vmflags_add(struct sc_vmflags *v, const struct sc_vmf_range *r);
void sc_vmflags_free(struct sc_vmflags *v);

/** sc_vmflags_find() - the range holding @addr, or NULL. */
const struct sc_vmf_range *sc_vmflags_find(const struct sc_vmflags *v, uint64_t addr);

/* vmflags_cache.c: the last checkpoint's settings, in place of a read (it says when) */
/**
 * sc_vmflags_cache_serve() - as sc_vmflags_read_own(SC_VMF_FORK_LOST), from
 * the last checkpoint's settings, where they may stand in for the read.
 * Return: 1 (served), 0 (read smaps), or a negative error (reported).
 */
int sc_vmflags_cache_serve(struct sc_vmflags *out, struct sc_vmflags *all);
struct sc_vma;
/**
 * sc_vmflags_cache_keep() - the settings of the @n mappings @v (those an image
 * holds) as a snapshot vouched for them, for the next checkpoint.
 */
void sc_vmflags_cache_keep(const struct sc_vma *v, size_t n);
/** sc_vmflags_cache_refute() - they were not the instant's: never served again. */
void sc_vmflags_cache_refute(void);
/** sc_vmflags_cache_refuted() - did the checkpoint under way refute them? */
bool sc_vmflags_cache_refuted(void);
/** sc_vmflags_cache_forget() - a restarted process starts with none. */
void sc_vmflags_cache_forget(void);

/* vmflags_rt.c: raw, while every other thread is stopped */
/**
 * sc_vmflags_fork_whole() - read the instant's maps and VmLck into @v, then
 * let the snapshot's clone copy every listed mapping whole; one that is no
 * longer a mapping of its own is left alone, and marks @v stale (the image is
 * then refused).
 */
void sc_vmflags_fork_whole(struct sc_vmflags *v);
/** sc_vmflags_fork_back() - give those mappings their own settings again. */
void sc_vmflags_fork_back(const struct sc_vmflags *v);
/** sc_vmflags_locked_kb() - VmLck of this process now, in KiB, or -1. Raw. */
long sc_vmflags_locked_kb(void);

#endif /* SC_VMFLAGS_H */
