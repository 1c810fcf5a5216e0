/* SPDX-License-Identifier: MIT */
/*
 * trigger_internal.h - checkpoint triggers: what the signal handler
 * (trigger_rt.c), the checkpoint thread (trigger.c) and the sigaction()
 * interposer (interpose.c) share.
 */
#ifndef SC_TRIGGER_INTERNAL_H
#define SC_TRIGGER_INTERNAL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* Requests, as bits of sc_trigger.pending. */
#define SC_TRIGGER_SOON 0x1u  /* the "at the next safe point" signal */
#define SC_TRIGGER_NOW 0x2u   /* the "at once" signal */
#define SC_TRIGGER_TIMER 0x4u /* the interval elapsed (never set by the handler) */
#define SC_TRIGGER_JOIN 0x8u  /* the job's coordinator asks this process to join (job.h) */
#define SC_TRIGGER_SAVE 0x10u /* selfckpt_save() in a process below: up to the top (job_save.c) */

/* Static, so that the handler needs nothing set up but this. */
struct sc_trigger {
	int seq;           /* futex: bumped by every request */
	unsigned pending;  /* SC_TRIGGER_SOON | SC_TRIGGER_NOW not served yet */
	int sig_soon;      /* the signals; set before the handlers are installed */
	int sig_now;
	int active;        /* the handlers are installed and the thread runs */
	unsigned warned;   /* SC_TRIGGER_SOON/NOW: the program's own action was reported */
	int join_from;     /* SC_TRIGGER_JOIN: the coordinator's pid */
	uint64_t join;     /* and the value it queued (job.c) */
	uint64_t save;     /* SC_TRIGGER_SAVE: the value queued (job_save.c) */
};

extern struct sc_trigger sc_trigger;

/* trigger_rt.c */
void sc_trigger_handler(int sig, siginfo_t *info, void *uc);

/* trigger.c */

/**
 * sc_trigger_note_action() - the program has just set the action of @sig to
 * @handler (a function, SIG_DFL or SIG_IGN). When @sig is a trigger signal and
 * @handler is not ours, warn once that checkpointing on @sig is now up to the
 * program.
 */
void sc_trigger_note_action(int sig, void (*handler)(int));

/* trigger_chain.c */

/** sc_trigger_image_path() - where the next image of this process goes. Return: 0 or -ENAMETOOLONG. */
int sc_trigger_image_path(const char *dir, const char *prog, char *path, size_t size);
/** sc_trigger_chain_saved() - DIR/latest names @path: the images it does not need go. */
void sc_trigger_chain_saved(const char *path);

#endif /* SC_TRIGGER_INTERNAL_H */
