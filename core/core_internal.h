/* SPDX-License-Identifier: MIT */
/*
 * core_internal.h - state shared by the files of core/.
 *
 * How a checkpoint works (see also DESIGN.md):
 *   1. The coordinating thread (the caller of selfckpt_save(), or the library's
 *      checkpoint thread for signal and timer requests) stops every other
 *      thread with the stop signal. Each stops inside the signal handler, so
 *      its registers, FPU and vector state lie in the signal frame on its own
 *      stack; it records its kernel-side state (TLS base, tid address, robust
 *      list, rseq, alternate stack) and a resume context, and waits.
 *   2. The coordinator records its own state and resume context and creates a
 *      frozen copy of the process with a raw clone(): a child that only blocks
 *      signals and waits, so its memory is the process at this instant.
 *   3. The other threads are released at once; the coordinator writes the
 *      image from the frozen child (its memory, its maps, its page residency)
 *      with ordinary libc, malloc and threads, then kills the child.
 * At restart the loader jumps into the coordinator's resume context; the
 * coordinator re-creates the other threads, each resuming inside its handler,
 * and releases them.
 */
#ifndef SC_CORE_INTERNAL_H
#define SC_CORE_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#define SC_MAX_THREADS 4096

/*
 * A resume context: what a function call preserves (x86-64 SysV callee-saved
 * registers, stack pointer, return address, MXCSR and x87 control word). A
 * thread resumes by returning a second time from sc_ctx_save(). Part of the
 * image (the thread record's payload): the layout must not change.
 */
struct sc_ctx {
	uint64_t rbx, rbp, r12, r13, r14, r15, rsp, rip;
	uint32_t mxcsr;
	uint16_t fpucw;
	uint16_t pad;
};
#define SC_CTX_SIZE 72

/* Everything a thread needs at restart that its memory does not hold. */
struct sc_thread_state {
	int32_t tid;
	uint32_t flags; /* SC_THREAD_* */
	struct sc_ctx ctx;
	uint64_t fs_base, gs_base;
	uint64_t tid_addr;          /* prctl(PR_GET_TID_ADDRESS): &pthread->tid */
	uint64_t robust_head, robust_len;
	uint64_t rseq_addr;
	uint32_t rseq_len, rseq_sig;
	uint32_t rseq_foreign;      /* an rseq area not the C library's is registered */
	uint64_t ss_sp, ss_size;    /* sigaltstack */
	uint32_t ss_flags;
	int32_t pdeath_sig;         /* prctl(PR_GET_PDEATHSIG): the thread's parent-death signal */
	uint64_t sigmask;           /* blocked signals once resumed */
	uint64_t pending;           /* thread-directed pending signals */
	int parked;                 /* set by the thread itself in the stop handler */
	int held;                   /* at a restart, waits for sc_threads_release_held();
				     * in the image's memory, not in its thread record */
};

#define SC_THREAD_COORDINATOR 0x1u /* made the checkpoint; the loader resumes it */

/* ctx_rt.c */
int sc_ctx_save(struct sc_ctx *ctx) __attribute__((returns_twice));
__attribute__((noreturn)) void sc_ctx_resume(const struct sc_ctx *ctx, int value);
long sc_clone_frozen(void);
/* A raw thread on @stack running fn(arg), which never returns: its id, or -errno. */
long sc_raw_thread(unsigned long flags, uint64_t stack, int *tid, void (*fn)(void *), void *arg);
/* A thread of our own: VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|PARENT_SETTID|CHILD_CLEARTID */
#define SC_RAW_THREAD_CLONE 0x350f00ul

/*
 * copier_rt.c - the snapshot process copies its own memory for the checkpoint.
 *
 * When a checkpoint has a copier, the process sc_clone_frozen() makes does not
 * only pause: on a stack in a region it shares with this process, it serves one
 * request at a time, reading its memory (the process as it was at the clone)
 * into that region. One core copying at memory speed replaces every core
 * reading /proc/<pid>/mem, which walks the page tables and copies twice for
 * every page. A read takes two requests per piece of memory:
 *   SC_COPY_SCAN  one flag per page of the piece, 1 where the page is all
 *                 zero, and the count of the others (->count);
 *   SC_COPY_PACK  the pages the scan found not zero, one after the other.
 * so the zero pages are neither copied nor checked again, and each piece's
 * data goes straight to its place in the record, after the pieces before it.
 * An incremental image reads few pages, scattered among many it leaves to its
 * parent, and takes one request per piece:
 *   SC_COPY_GATHER each page not flagged SC_COPY_LEFT checked and, unless it
 *                 is all zero, copied to dst at once, the flags and ->count
 *                 then as a scan leaves them.
 * The control block, in the shared region:
 */
struct sc_copier_ctl {
	int seq;      /* futex: bumped by the checkpoint once a request is set */
	int done;     /* futex: set to seq by the snapshot once the request is served */
	uint64_t src; /* the request: len bytes at src (snapshot) */
	uint64_t dst; /* SC_COPY_PACK: where their data pages go (shared) */
	uint64_t len; /* a multiple of page */
	uint64_t stack; /* top of the stack of the snapshot thread serving this block */
	uint32_t op;    /* SC_COPY_* */
	uint32_t page;  /* the page size */
	uint64_t flags; /* one byte per page (shared): written by a scan, read by a pack */
	uint64_t count; /* answer to a scan: the pages that are not zero */
};

#define SC_COPY_SCAN 1u
#define SC_COPY_PACK 2u
#define SC_COPY_GATHER 3u
#define SC_COPY_LEFT 2 /* a page's flag: not read (an incremental image leaves it) */
#define SC_COPIER_MAX 8 /* snapshot threads that copy: a few cores saturate memory */

/* The control blocks, sc_copier_n of them; NULL: the snapshot only pauses. */
extern struct sc_copier_ctl *sc_copier_ctl;
extern int sc_copier_n;
/* In the snapshot: start a thread for every block but the first, serve the first. */
__attribute__((noreturn)) void sc_copier_main(struct sc_copier_ctl *c);

/* reaper_rt.c */
/* The reaper thread's id while it lives; the kernel zeroes it as the thread ends. */
extern int sc_reaper_tid;
/* Start a raw thread that reaps @child and ends: its id, or -errno. Block every signal first. */
long sc_reaper_start(pid_t child);

/* hold_rt.c: the watchdog of a checkpoint that keeps the program's threads stopped */
/* Start it: it lets the threads go once no byte is read or written for @stall_ns. Its id, or -errno. */
long sc_hold_start(int64_t stall_ns);
/* The image is written: true when the threads are still stopped, false when it let them go. */
bool sc_hold_end(void);
/* The writer is not stuck, though it reads and writes nothing now (it waits for others). */
void sc_hold_beat(void);

/* thread_rt.c */
void sc_thread_capture(struct sc_thread_state *t);
void sc_thread_start(struct sc_thread_state *t) __attribute__((noreturn));


/*
 * A signal that was pending (blocked) at the checkpoint, with its siginfo.
 * Pending signals are taken off the kernel's queues while the threads are
 * stopped, so that the snapshot holds them, and queued again as they were -
 * in the running process at once, in a restored one when it resumes.
 */
#define SC_MAX_PENDING 256
#define SC_PENDING_PROCESS -1 /* slot of a process-directed signal */

struct sc_pending_sig {
	int32_t slot; /* thread index in sc_stopped, or SC_PENDING_PROCESS */
	int32_t sig;
	uint8_t info[128]; /* siginfo_t */
};

/*
 * The threads of the process while a checkpoint stops them. Lives in static
 * memory so that the stop path never allocates, and so that at restart the
 * restored coordinator finds every thread's state in its own memory.
 */
struct sc_stopped {
	struct sc_thread_state threads[SC_MAX_THREADS];
	int n;             /* entries used; the coordinator's own is one of them */
	int self;          /* index of the coordinator */
	int stopped;       /* futex: threads parked in the handler */
	int gen;           /* futex: bumped to release the parked threads */
	int restored;      /* 1 while the threads resume from an image */
	int hold;          /* futex: 1 while SC_THREAD_HELD threads wait at a restart */
	int stop_signal;   /* the signal that stops a thread */
	struct sc_pending_sig pending[SC_MAX_PENDING]; /* taken off the queues at the stop */
	int n_pending;
	int32_t pid;
	int32_t blocking_tid; /* a thread that blocks the stop signal (-EDEADLK) */
};

extern struct sc_stopped sc_stopped;

/* checkpoint.c */
/**
 * sc_checkpoint() - selfckpt_save(), with the background mode chosen by the
 * caller: with @background, return SELFCKPT_SAVED once the snapshot is taken
 * and let a library thread write the image (the previous image stays in place
 * until the new one is complete).
 */
int sc_checkpoint(const char *path, bool background);

/**
 * sc_checkpoint_member() - sc_checkpoint() of this process as @job's member:
 * its instant is the job's (job.h); the image is written before it returns.
 * With @ex (--exit-after-save) the threads stay stopped after the instant: a
 * member other than the coordinator then ends with _exit(@ex->status) if the
 * job's set is complete and every process of it still held its threads, and
 * goes on otherwise; the coordinator's threads stay held when it returns.
 */
struct sc_job_member;
struct sc_exit_after;
int sc_checkpoint_member(const char *path, const struct sc_job_member *job,
			 const struct sc_exit_after *ex);

/**
 * sc_checkpoint_hold_end() - in a job's coordinator whose checkpoint held its
 * threads (sc_checkpoint_member() with @ex), once the set is complete or
 * refused: end the watchdog. Return: true where the threads are still held
 * (the process may end now, nothing done past the instant), false where
 * they ran on or nothing was held.
 */
bool sc_checkpoint_hold_end(void);

/** sc_checkpoint_hold_release() - the job goes on: its held threads are let go. */
void sc_checkpoint_hold_release(void);

/**
 * sc_checkpoint_wait_idle() - return once no checkpoint of this process is
 * under way (at once in the thread that began it): what an exit waits for.
 */
void sc_checkpoint_wait_idle(void);

/**
 * sc_checkpoint_span_begin() - a checkpoint with more to do than this
 * process's image is under way from now on (the job's set this thread
 * coordinates, DIR/latest naming what was written): an exit of this process
 * waits for all of it (the process's own checkpoint, taken inside, nests).
 * sc_checkpoint_span_end() ends it, in the process that saved and in one
 * restored from it alike.
 */
void sc_checkpoint_span_begin(void);
void sc_checkpoint_span_end(void);

/* How a checkpoint that ends the program ends it (sc_checkpoint_then_exit()). */
struct sc_exit_after {
	void (*saved)(const char *path); /* runs once the image is complete, threads stopped */
	int status;                      /* then _exit(status) */
};

/* A held checkpoint may wait this long for a stopped thread's lock (hold_rt.c). */
#define SC_HOLD_STALL_S 10

/**
 * sc_checkpoint_then_exit() - a checkpoint after which the process ends: the
 * program's threads stay stopped from the instant of the image until it is
 * complete, @ex->saved() has run and the process has ended with
 * _exit(@ex->status), so the restored program does nothing twice. Returns
 * only where the image failed, or where a stopped thread held what the
 * writing needed for SC_HOLD_STALL_S seconds and the threads went on (then
 * SELFCKPT_SAVED, and a warning): the program goes on, as it ran past the
 * image. Return: SELFCKPT_SAVED or a negative error (reported).
 */
int sc_checkpoint_then_exit(const char *path, const struct sc_exit_after *ex);
/** sc_stop_handler_install() - install the stop signal's handler, once; 0 or an error. */
int sc_stop_handler_install(void);

/* restart.c */
int sc_restart_finish(void);

/* stop_rt.c */
void sc_stop_handler(int sig, siginfo_t *si, void *uc);
/*
 * The program's own action for the stop signal, which the library keeps
 * (interpose.c): the stop handler runs it for every instance of the signal
 * that is not a checkpoint's. NULL: such signals are ignored.
 */
struct sc_stop_chain {
	void (*handler)(int sig, siginfo_t *si, void *uc);
};
void sc_stop_chain_set(const struct sc_stop_chain *c);
int sc_threads_stop(void);
void sc_threads_release(void);

/* pending_rt.c */
void sc_pending_take_private(int slot);
void sc_pending_take_shared(void);
void sc_pending_requeue(int slot);
/* In the main thread, once released: the process's signals only it may queue again. */
void sc_pending_requeue_leader(void);

#endif /* SC_CORE_INTERNAL_H */
