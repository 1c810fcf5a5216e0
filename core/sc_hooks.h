/* SPDX-License-Identifier: MIT */
/*
 * sc_hooks.h - how another module (cuda/) takes part in a checkpoint and a
 * restart without core/ knowing about it.
 *
 * A checkpoint calls, in order: prepare() in the checkpointing thread before
 * any thread stops (libc allowed; it may wait, e.g. for the GPU to finish);
 * frozen() while every other thread is stopped (raw code only: no malloc, no
 * locks - another thread may have stopped holding them); write() in phase 2,
 * to add its records to the image; done() when the image is written or has
 * failed, whatever happened after prepare() succeeded. Between frozen() and
 * write(), thawed() in the checkpointing thread once the snapshot is taken
 * and the program's threads may run (libc allowed): a module that set its
 * state aside for the write may let the program's calls go on there. A restart calls
 * restored() in the restored process once every thread is back, before
 * selfckpt_save() returns SELFCKPT_RESTORED; a failure there ends the process
 * with a message, since there is no checkpoint to return to.
 */
#ifndef SC_HOOKS_H
#define SC_HOOKS_H

struct sc_writer;

/* Exit status of a restored process whose restored() hook failed: the same as
 * selfckpt-restore's "this machine cannot take the image". */
#define SC_EXIT_RESTART_FAILED 69

struct sc_hooks {
	int (*prepare)(void);
	void (*frozen)(void);
	void (*thawed)(void);
	int (*write)(struct sc_writer *w);
	void (*done)(int err);
	int (*restored)(const char *image);
	/* A checkpoint "at the next safe point" (the SELFCKPT_SIGNAL trigger):
	 * safe_point() waits until the program reaches one (a CUDA program: its
	 * next synchronising call) and holds it there; safe_point_done() lets it
	 * go, after the checkpoint, in the saving and in the restored process. */
	void (*safe_point)(void);
	void (*safe_point_done)(void);
};

/**
 * sc_threads_hold_at_restart() - from frozen(): at a restart from this image,
 * the stopped threads for which @hold(tid) is true stay stopped after the
 * others resume, until sc_threads_release_held(); the process that made the
 * image is not affected. For a program whose threads must not run before
 * restored() has rebuilt what they use (the CUDA driver's GPU state).
 * Raw code, as frozen(): @hold must be too.
 */
void sc_threads_hold_at_restart(int (*hold)(int tid));

/** sc_threads_release_held() - let the threads held at a restart go on. */
void sc_threads_release_held(void);

/** sc_hooks_set() - install @h (one set; a later call replaces it). */
void sc_hooks_set(const struct sc_hooks *h);

/** sc_hooks_get() - the hooks installed (every member NULL when none). */
const struct sc_hooks *sc_hooks_get(void);

#endif /* SC_HOOKS_H */
