/* SPDX-License-Identifier: MIT */
/*
 * restorer.h - what the loader (selfckpt-restore, stage 1) hands to the
 * restorer blob (stage 2) in one block of memory, like CRIU's
 * task_restore_args. Every pointer in it points inside that block or into
 * memory the blob keeps; nothing refers to the loader's own mappings, which
 * the blob unmaps first.
 */
#ifndef SC_RESTORER_H
#define SC_RESTORER_H

#include <stdint.h>

enum sc_op_kind {
	SC_OP_MOVE = 1,      /* mremap premapped memory [src, src+len) to start */
	SC_OP_MAP_FD = 2,    /* mmap fd at start (MAP_FIXED, flags as given) */
	SC_OP_MAP_ANON = 3,  /* fresh anonymous memory at start (flags as given) */
	SC_OP_SHMAT = 4,     /* attach System V segment fd at start (flags: SHM_*, SC_SHMAT_RMID) */
};

/* SC_OP_SHMAT: mark the segment for removal once attached (it was so marked). */
#define SC_SHMAT_RMID (1ull << 32)

struct sc_op {
	uint32_t kind;
	uint32_t prot;   /* final protection */
	uint32_t map_prot; /* protection while the blob fills it (SC_OP_MAP_FD, SC_OP_MAP_ANON) */
	uint32_t vmflags;  /* SC_VMF_* settings given once the memory is in place */
	uint64_t start, len;
	uint64_t src;    /* SC_OP_MOVE */
	int64_t fd;      /* SC_OP_MAP_FD; SC_OP_SHMAT: the segment's id */
	uint64_t offset; /* SC_OP_MAP_FD; SC_OP_SHMAT: the attaches before it is marked removed */
	uint64_t flags;  /* MAP_* for SC_OP_MAP_FD and SC_OP_MAP_ANON */
};

/* After the mappings are in place: copy (or zero when src is 0) into them. */
struct sc_copy {
	uint64_t dst, src, len;
};

/* Pages the program had made guard pages (MADV_GUARD_INSTALL; format 1.5). */
struct sc_range {
	uint64_t start, len;
};

struct sc_kernel_sigaction {
	uint64_t handler, flags, restorer, mask;
};

/* The kernel's struct prctl_mm_map. */
struct sc_mm_map {
	uint64_t start_code, end_code, start_data, end_data, start_brk, brk, start_stack;
	uint64_t arg_start, arg_end, env_start, env_end;
	uint64_t auxv; /* pointer */
	uint32_t auxv_size;
	int32_t exe_fd;
};

/* A thread the blob re-creates: it starts in sc_thread_start(state). */
struct sc_thread_args {
	uint64_t fs_base, tid_addr, stack, state;
	int32_t tid; /* the saved tid, for same-ids mode */
	int32_t new_tid; /* set by the blob: the id the thread got */
};

/* A POSIX timer the blob makes again with its id, after the threads. */
struct sc_timer_args {
	int32_t id, clock;
	int32_t notify, signo; /* SIGEV_* as the kernel takes it, and the signal */
	uint64_t value;        /* sigev_value */
	int32_t thread;        /* SIGEV_THREAD_ID: index in threads; -1 otherwise */
	int32_t pad;
	int64_t left[2], interval[2]; /* seconds, nanoseconds; left 0: disarmed */
};

struct sc_restorer_args {
	uint64_t stack_top;          /* the blob's own stack */
	uint64_t blob_start, blob_len;
	uint64_t hole_start, hole_end; /* staging room, unmapped once copied from */

	uint64_t *unmap;             /* pairs: start, length of the loader's mappings */
	uint32_t n_unmap;
	uint32_t n_ops, n_copies, n_close, n_guards;
	struct sc_op *ops;
	struct sc_copy *copies;
	struct sc_range *guards;
	int32_t *close_fds;

	/* [vvar]..[vdso]: current block parts and where they go */
	uint64_t vdso_parts[3][2];   /* start, length of vvar, vvar_vclock, vdso (0: absent) */
	uint64_t vdso_target;        /* new start of the block */
	uint64_t vdso_temp;          /* free room of the block's size, for overlapping moves */

	struct sc_mm_map mm;
	uint8_t auxv[1024];          /* copied here; mm.auxv points at it */

	struct sc_kernel_sigaction act[64];
	uint64_t act_valid;          /* bit i: restore act[i] (signal i + 1) */

	/* the threads: the blob creates every one but threads[self], which it becomes */
	struct sc_thread_args *threads;
	uint32_t n_threads, self;
	uint64_t thread_start;       /* sc_thread_start() in the restored library */
	uint32_t same_ids;           /* create each thread with its saved tid (clone3 set_tid) */
	uint32_t pad2;

	/* threads[self]'s kernel state, which the blob sets for itself */
	uint64_t fs_base, gs_base, tid_addr, robust_head, robust_len;
	uint64_t rseq_addr;
	uint32_t rseq_len, rseq_sig;
	uint32_t pdeath_sig; /* the thread's parent-death signal, 0: none */
	uint64_t ss_sp, ss_size;
	uint32_t ss_flags;
	uint8_t ctx[72];             /* struct sc_ctx */

	/* timers: itimers as the kernel's itimerval (interval s, us, value s, us) */
	int64_t itimers[3][4];
	struct sc_timer_args *timers;
	uint32_t n_timers;
	uint32_t timer_restore_ids;  /* 1: PR_TIMER_CREATE_RESTORE_IDS; 0: make until the id */

	uint64_t handoff;            /* address of struct sc_handoff in the restored memory */
	char image[4096];            /* the image's absolute path, for the restored library */
	uint64_t env, env_len;       /* the restorer's environment, NUL-separated, in the blob */

	char msg[256];               /* the blob's last words, if it fails */
};

typedef void (*sc_restorer_entry_fn)(struct sc_restorer_args *args);

/*
 * In the blob (restorer_timers_rt.c): set the itimers and make every POSIX
 * timer again. Return: 0, or -errno with *@failed the timer's id (-1: an itimer).
 */
long sc_restorer_timers(struct sc_restorer_args *a, int32_t *failed);

#endif /* SC_RESTORER_H */
