/* SPDX-License-Identifier: MIT */
/*
 * sc_records.h - the process, thread, signals and segment records (spec §9):
 * what a checkpoint writes and the restorer reads, with their encoders and
 * checking decoders.
 */
#ifndef SC_RECORDS_H
#define SC_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "format/sc_format.h"
#include "format/sc_parent.h"

#define SC_RLIMITS 16
#define SC_SIGNALS 64

struct sc_process_info {
	uint32_t pid, ppid, uid, gid, umask;
	uint64_t start_code, end_code, start_data, end_data;
	uint64_t start_brk, brk, start_stack, arg_start, arg_end, env_start, env_end;
	uint64_t vdso_block_start, vdso_block_len; /* [vvar] up to the end of [vdso] */
	uint64_t vdso_offset, vdso_len;            /* [vdso] within the block */
	uint64_t vdso_hash;                        /* XXH3-64 of the [vdso] bytes */
	uint64_t handoff;                          /* &sc_handoff in the process */
	uint64_t thread_start;                     /* sc_thread_start() in the process */
	uint64_t rlim_cur[SC_RLIMITS], rlim_max[SC_RLIMITS];
	char *cwd, *exe;
	uint8_t *auxv;
	size_t auxv_len;
	/* 1.2: attributes a program sets on itself */
	uint32_t attrs;        /* SC_ATTR_* */
	int32_t oom_score_adj; /* /proc/self/oom_score_adj, where SC_ATTR_KNOWN */
	uint32_t loginuid;     /* /proc/self/loginuid, where SC_ATTR_LOGINUID */
};

#define SC_ATTR_KNOWN 0x1u        /* the attributes below were recorded (format 1.2) */
#define SC_ATTR_THP_DISABLE 0x2u  /* prctl(PR_SET_THP_DISABLE) */
#define SC_ATTR_SUBREAPER 0x4u    /* prctl(PR_SET_CHILD_SUBREAPER) */
#define SC_ATTR_MEMBARRIER 0x8u            /* membarrier private expedited registered */
#define SC_ATTR_MEMBARRIER_SYNC_CORE 0x10u /* ... its sync-core variant */
#define SC_ATTR_MEMBARRIER_RSEQ 0x20u      /* ... its rseq variant */
#define SC_ATTR_MEMBARRIER_GLOBAL 0x40u    /* membarrier global expedited registered */
#define SC_ATTR_LOGINUID 0x80u             /* loginuid was recorded (format 1.4) */

struct sc_thread_record {
	int32_t tid;
	uint32_t flags; /* bit 0: the coordinator */
	uint64_t fs_base, gs_base, tid_addr, robust_head, robust_len, rseq_addr;
	uint32_t rseq_len, rseq_sig;
	uint64_t ss_sp, ss_size;
	uint32_t ss_flags;
	uint64_t sigmask, pending;
	uint64_t state;  /* its struct sc_thread_state in the process's memory */
	uint32_t pdeath_sig; /* (1.6) its parent-death signal, 0: none */
	uint8_t ctx[72]; /* struct sc_ctx, the payload */
};

struct sc_sigaction_record {
	uint64_t handler, flags, restorer, mask;
};

struct sc_signals_info {
	uint64_t pending; /* process-directed */
	struct sc_sigaction_record act[SC_SIGNALS]; /* act[i] is signal i + 1 */
};

/* Segment flags (spec §9.5). */
#define SC_SEG_SHARED 0x01u
#define SC_SEG_FILE 0x02u
#define SC_SEG_STACK 0x04u
#define SC_SEG_HEAP 0x08u
#define SC_SEG_GROWSDOWN 0x10u
#define SC_SEG_NORESERVE 0x20u
#define SC_SEG_EMBEDDED 0x40u
#define SC_SEG_HELD 0x80u /* 1.3: the file of a memfd or removed file descriptor */
#define SC_SEG_SYSV 0x100u /* 1.5: an attach of a System V segment; inode: its id */
#define SC_SEG_KNOWN 0x1ffu

/*
 * Memory flags of a segment (spec §9.5, format 1.3): the kernel's VmFlags of
 * the mapping that a restore gives back.
 */
#define SC_VMF_KNOWN 0x0001u       /* recorded: the bits below hold */
#define SC_VMF_NORESERVE 0x0002u   /* nr: MAP_NORESERVE */
#define SC_VMF_MAYWRITE 0x0004u    /* mw: may be made writable */
#define SC_VMF_LOCKED 0x0008u      /* lo: mlock() */
#define SC_VMF_LOCKONFAULT 0x0010u /* lf: mlock2(MLOCK_ONFAULT) */
#define SC_VMF_DONTFORK 0x0020u    /* dc */
#define SC_VMF_WIPEONFORK 0x0040u  /* wf */
#define SC_VMF_DONTDUMP 0x0080u    /* dd */
#define SC_VMF_HUGEPAGE 0x0100u    /* hg */
#define SC_VMF_NOHUGEPAGE 0x0200u  /* nh */
#define SC_VMF_MERGEABLE 0x0400u   /* mg */
#define SC_VMF_SEQUENTIAL 0x0800u  /* sr */
#define SC_VMF_RANDOM 0x1000u      /* rr */
#define SC_VMF_DROPPABLE 0x2000u   /* dp: MAP_DROPPABLE */
#define SC_VMF_DEFINED 0x3fffu

enum sc_run_kind {
	SC_RUN_STORED = 0, SC_RUN_ZERO = 1, SC_RUN_FILE = 2, SC_RUN_GUARD = 3 /* 1.5 */,
	SC_RUN_PARENT = 4 /* 1.7: the parent image's pages at these addresses */
};

struct sc_run {
	uint64_t first; /* page index within the window */
	uint32_t count;
	uint8_t kind;   /* enum sc_run_kind */
};

/* One window of one mapping; a mapping may be written as several windows. */
struct sc_segment_info {
	uint64_t start, length;         /* the window */
	uint64_t vma_start, vma_end;    /* the whole mapping */
	uint32_t prot, flags;
	uint64_t offset;                /* file offset of the window's first page */
	uint64_t dev, inode, file_size, mtime_ns;
	uint32_t vmflags;               /* SC_VMF_*; 0 in images before 1.3 */
	struct sc_run *runs;
	uint32_t n_runs;
	char *path;
};

int sc_process_write(struct sc_writer *w, const struct sc_process_info *p);
int sc_process_read(struct sc_reader *r, const struct sc_record *rec, struct sc_process_info *p);
void sc_process_free(struct sc_process_info *p);

int sc_thread_write(struct sc_writer *w, const struct sc_thread_record *t);
int sc_thread_read(struct sc_reader *r, const struct sc_record *rec, struct sc_thread_record *t);

int sc_signals_write(struct sc_writer *w, const struct sc_signals_info *s);
int sc_signals_read(struct sc_reader *r, const struct sc_record *rec, struct sc_signals_info *s);

/* The parent record (spec §9.14): format/sc_parent.h. */

/** sc_segment_begin() - write a segment's header and meta; the stored pages follow. */
int sc_segment_begin(struct sc_writer *w, const struct sc_segment_info *s, uint64_t page_size);

/** sc_segment_read() - decode and check a segment's meta (R-SEG-1 to R-SEG-4). */
int sc_segment_read(struct sc_reader *r, const struct sc_record *rec, uint64_t page_size,
		    struct sc_segment_info *s);
void sc_segment_free(struct sc_segment_info *s);

/** sc_segment_stored_pages() - pages of the window kept in the payload. */
uint64_t sc_segment_stored_pages(const struct sc_segment_info *s);

#endif /* SC_RECORDS_H */
