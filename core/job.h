/* SPDX-License-Identifier: MIT */
/*
 * job.h - a job is a process tree: the checkpoint of every process started
 * under selfckpt-run and of every process those start, at one instant.
 *
 * The process that checkpoints the job (the coordinator: the highest process
 * of the job whose parent is not of the job) shares a small area of memory
 * (a memfd, struct sc_job_area) with every member for the length of one
 * checkpoint. Members are found from the coordinator down: each member, once
 * its threads are stopped, lists its children in its slot, and the
 * coordinator asks each child to join (a queued trigger signal whose value
 * names the area). A child that cannot join (no library in it: a static
 * program, or one started with the environment cleared) is reported by pid
 * and program and the checkpoint is refused.
 *
 * The instant: every member stops its threads and waits; once all are
 * stopped (none can fork or exit any more) each takes its snapshot and waits;
 * once all have one, all go on. Each member then writes its image into the
 * set's directory, and the coordinator writes the set's manifest and makes
 * it the latest (job_set.c).
 */
#ifndef SC_JOB_H
#define SC_JOB_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/sc_fds.h"
#include "core/unix_flight.h"

#define SC_JOB_THREAD_NAME "selfckpt" /* the checkpoint thread's: how a member is known */
#define SC_JOB_MEMBERS 256  /* processes in one job */
#define SC_JOB_CHILDREN 128 /* children of one member at the instant */
#define SC_JOB_MAGIC 0x5343u /* in the top bits of a join request's value */
#define SC_JOB_SAVE_MAGIC 0x5353u /* in those of a selfckpt_save() passed up (job_save.c) */
#define SC_JOB_OBJECTS 256  /* objects one member notes that another may share */

/* What a member holds that another member may hold too (job_share.c). */
enum sc_job_object_kind {
	SC_JOB_FILE_W = 1, /* a removed file or memfd open for writing */
	SC_JOB_SYSV,       /* a System V object the image holds */
};

struct sc_job_object {
	uint32_t kind;
	int32_t fd;     /* a descriptor's number */
	uint64_t dev, ino;
	uint64_t pos;   /* a file's position */
	int32_t flags;  /* and its status flags */
	/* SC_JOB_SYSV: which object, and who made and attaches it */
	uint32_t sysv_kind; /* enum sc_sysv_kind */
	int32_t sysv_id;
	int32_t made;       /* by this process (a set or queue: as the library noted it) */
	uint32_t attaches;  /* a segment: this process's */
	uint32_t nattch;    /* a segment: every process's, as the kernel counts them */
};

/* The coordinator's word to every member (area->phase). */
enum sc_job_phase {
	SC_JOB_GATHER = 1,  /* stop your threads, list your children, wait */
	SC_JOB_CAPTURE,     /* every member is stopped: take the snapshot, wait */
	SC_JOB_RELEASE,     /* every member has its snapshot: go on, write the image */
	SC_JOB_DONE,        /* the set is complete (or refused): leave the area */
	SC_JOB_ABORT,       /* give the instant up: go on, write nothing */
};

/* Why the coordinator gave an instant up to take it again (area->again). */
enum sc_job_again {
	SC_JOB_AGAIN_STARTED = 1, /* a process was started as the checkpoint began */
	SC_JOB_AGAIN_IN_FLIGHT,   /* a connection queued at a socket of the job (area->flight) */
};

/* A member's word to the coordinator (slot->state). */
enum sc_job_state {
	SC_MEMBER_ASKED = 1, /* signalled, not stopped yet */
	SC_MEMBER_STOPPED,   /* threads stopped, children listed */
	SC_MEMBER_CAPTURED,  /* snapshot taken, still stopped */
	SC_MEMBER_WRITTEN,   /* image complete in the set's directory */
	SC_MEMBER_FAILED,    /* gave up: err and msg say why */
	SC_MEMBER_ZOMBIE,    /* not a process that runs: a child not waited for yet */
	SC_MEMBER_STARTING,  /* not signalled: it does not run the library's thread yet */
};

struct sc_job_slot {
	int32_t pid, ppid, pgid, sid;
	int32_t state;       /* enum sc_job_state */
	int32_t err;         /* a failure's code (negative) */
	int32_t status;      /* a zombie's wait status */
	int32_t n_children;  /* -1: more than SC_JOB_CHILDREN */
	int32_t gpu_copy;    /* forked from a GPU process: what its driver made is dead here */
	int32_t listed;      /* the coordinator took the children in */
	int32_t children[SC_JOB_CHILDREN];
	char prog[16];
	char msg[240];       /* a failure, as the member reported it */
	int32_t ran_past;    /* held for --exit-after-save, its threads went on (hold_rt.c) */
	int32_t n_objects;   /* -1: more than SC_JOB_OBJECTS */
	int64_t join_by;     /* SC_MEMBER_STARTING: escaped past this (the coordinator's ms) */
	int32_t writing;     /* its image is being written now (job_cpus.c) */
	struct sc_job_object objects[SC_JOB_OBJECTS];
};

#define SC_JOB_DESCS 4096 /* descriptors whose open file description two processes hold */

/* A descriptor of a process of the job and its open file description (job_files_rt.c). */
struct sc_job_desc {
	int32_t pid, fd;
	uint32_t desc; /* the same number: one description */
};

struct sc_job_area {
	uint32_t magic;
	int32_t phase;   /* futex, shared: enum sc_job_phase */
	int32_t changed; /* futex, shared: bumped by a member at each step */
	int32_t n;       /* slots in use; slot 0 is the coordinator */
	int32_t again;   /* enum sc_job_again: the instant is to be taken again; 0: it is not */
	int32_t exit_after; /* --exit-after-save: every process holds its threads until the end */
	int32_t exit_status; /* and ends with it, where end_job */
	int32_t end_job;    /* the set is complete and no process ran past the instant: end */
	int32_t n_left;     /* processes left out (--leave-out-escaped), no part of the set */
	int32_t turns;      /* futex, shared: bumped as a member ends writing (job_cpus.c) */
	int32_t left[SC_JOB_CHILDREN];
	struct sc_unix_flight flight; /* SC_JOB_AGAIN_IN_FLIGHT: what is not accepted yet */
	char dir[PATH_MAX]; /* the set's directory while it is written */
	struct sc_stdio_ids stdio; /* the top's 0, 1 and 2 at its start: the restorer's */
	struct sc_job_slot slot[SC_JOB_MEMBERS];
	/* the regular files two processes hold: descs_exact 1 where kcmp() told them all */
	int32_t descs_exact;
	int32_t n_descs;
	struct sc_job_desc descs[SC_JOB_DESCS];
	/* an eventfd, timerfd, epoll ... object two processes share (kcmp() told): which */
	int32_t objects_shared;
	struct sc_job_desc object_pair[2];
	/* kcmp() refused: a member toggles a flag of one description at a time (job_files_rt.c) */
	int32_t probe_seq;          /* bumped by the coordinator at each toggle it asks */
	int32_t probe_done;         /* futex, shared: the last toggle the member made */
	int32_t probe_pid, probe_fd; /* whose descriptor */
};

/* A member's part in a checkpoint of the job; NULL in a checkpoint of one process. */
struct sc_job_member {
	struct sc_job_area *area;
	int index;        /* its slot */
	bool coordinator; /* slot 0: the rest of the job is stopped before it stops */
};

/*
 * Set by the CUDA library in a child forked from a process that used the GPU:
 * the driver's own descriptors it inherited (an eventfd, say) are dead in it,
 * as CUDA is, so that they are no object the child shares with its parent.
 */
extern int sc_job_gpu_copy;

/* job_rt.c: run by freeze() while every other thread of the process is stopped (raw). */

/**
 * sc_job_stopped() - this member's threads are stopped: list its children in
 * its slot and wait until every member is stopped. The coordinator checks
 * that it has no child the job does not hold and gives the word to capture.
 * Return: 0 to capture, or -ECANCELED when the instant is given up.
 */
int sc_job_stopped(const struct sc_job_member *jm);

/**
 * sc_job_captured() - this member has its snapshot: wait until every member
 * has one (the coordinator gives the word). Return: 0, or -ECANCELED.
 */
int sc_job_captured(const struct sc_job_member *jm);

/**
 * sc_job_list_children() - the children of this process that belong to the
 * job (not selfckpt's own helpers), into @out; raw. Return: their count, or
 * -1 when there are more than @max.
 */
int sc_job_list_children(int32_t *out, int max);

/**
 * sc_job_find_descriptions() - which descriptors of different processes of
 * the job (stopped, all of them) are one open file description: into
 * @a->descs, with @a->descs_exact set where the kernel told (raw).
 */
void sc_job_find_descriptions(struct sc_job_area *a);

/**
 * sc_job_answer_probe() - in a stopped member other than the coordinator: the
 * toggle the coordinator asked of one of this process's descriptors, where
 * it asked one (sc_job_find_descriptions() without kcmp()), made (raw).
 */
void sc_job_answer_probe(struct sc_job_area *a);

/**
 * sc_job_probes_undone() - as a member goes on from its wait: a toggle the
 * coordinator did not ask back (it gave up waiting) is put back (raw).
 */
void sc_job_probes_undone(void);

/**
 * sc_job_member_verdict() - a member other than the coordinator whose
 * threads are held (--exit-after-save) reports its image (@err, and whether
 * its threads ran past the instant) and waits for the coordinator's word
 * (raw). Return: true where the job ends now (its set is complete).
 */
bool sc_job_member_verdict(const struct sc_job_member *jm, int err, bool ran_past);

/**
 * sc_job_member_report() - a member's image is complete (@err 0) or refused:
 * said to the coordinator before the member's checkpoint ends, so that a
 * process that exits as soon as it may is no member "ended before its image".
 */
void sc_job_member_report(const struct sc_job_member *jm, int err);

/** sc_job_ran_past() - this member's threads went on past the instant (no hold could be had). */
void sc_job_ran_past(const struct sc_job_member *jm);

/** sc_job_holds() - is @pid of the job's instant: a member, or a process left out of it (raw)? */
bool sc_job_holds(const struct sc_job_area *a, int32_t pid);

/** sc_job_set_phase() - the coordinator's word @phase to every member, woken (raw). */
void sc_job_set_phase(struct sc_job_area *a, int phase);

/** sc_job_now_ms() - the monotonic clock in milliseconds (raw). */
long sc_job_now_ms(void);

/** sc_job_wake() - bump @word and wake every process waiting on it (shared futex). */
void sc_job_wake(int32_t *word);

/**
 * sc_job_wait() - wait while *@word is @seen, at most @ms milliseconds (raw).
 */
void sc_job_wait(int32_t *word, int32_t seen, int ms);

/* job.c */

/**
 * sc_job_parent_is_member() - does the parent of this process belong to the
 * job (it runs the library's checkpoint thread)? Then a trigger goes up to it.
 */
bool sc_job_parent_is_member(void);

/**
 * sc_job_has_children() - does this process have children of the job?
 */
bool sc_job_has_children(void);

/**
 * sc_job_checkpoint() - checkpoint the job this process coordinates into a
 * new set in @dir (images named after each member's @prog and pid), and make
 * @dir/latest name it. @why says what asked (for the log).
 * With @exit_status (--exit-after-save; 0: none) every process of the job
 * keeps its threads stopped from the instant on, and once the set is
 * complete all end with that status; the coordinator's threads are still
 * held when it returns SC_JOB_ENDS, and it ends itself.
 * Return: SELFCKPT_SAVED, SC_JOB_ENDS, SELFCKPT_RESTORED in the restored
 * coordinator, or a refusal (< 0, reported), with the previous set left as
 * it was.
 */
int sc_job_checkpoint(const char *dir, const char *prog, const char *why, int exit_status,
		      char *set_path, size_t size);

#define SC_JOB_ENDS 100 /* the set is complete: the job's other processes end, and so must this */

/**
 * sc_job_save() - selfckpt_save(@path) in a job: in its top, with children,
 * the job's set at @path (a directory; what @path was is replaced once the
 * set is complete); in a process whose parent is of the job, the same,
 * asked of the top (sc_job_save_up()).
 * Return: 0 where the caller is a job of one process (or in none: it saves
 * itself alone), else as sc_job_checkpoint().
 */
int sc_job_save(const char *path);

/**
 * sc_job_save_at() - in the job's top: the job's set at @path, for @why
 * (the log). Return: as sc_job_checkpoint().
 */
int sc_job_save_at(const char *path, const char *why);

/**
 * sc_job_map_of() - @len bytes of the memfd that process @pid holds as @fd,
 * mapped shared here (through /proc/PID/fd); NULL where it cannot be, with
 * a warning that says it could not @what.
 */
void *sc_job_map_of(pid_t pid, int fd, size_t len, const char *what);

/* job_save.c */

/**
 * sc_job_save_up() - selfckpt_save(@path) in a process whose parent is of
 * the job: the job's top checkpoints the whole job into a set at @path.
 * Return: SELFCKPT_SAVED, SELFCKPT_RESTORED in the restored process, or a
 * refusal (reported).
 */
int sc_job_save_up(const char *path);

/** sc_job_save_serve() - in the job's top: serve process @from's request, in its memfd @fd. */
void sc_job_save_serve(pid_t from, int fd);

/** sc_job_save_restored() - a restored process answers its own request under way, if any. */
void sc_job_save_restored(void);

/**
 * sc_job_join() - take part in the checkpoint of coordinator @coord whose
 * area is its descriptor @fd, as slot @index. The image goes to the set's
 * directory.
 */
void sc_job_join(pid_t coord, int fd, int index);

/* job_share.c */

/**
 * sc_job_noting() - the member whose image is being written (@jm), or NULL
 * once it is: what the image holds that another process may share is noted
 * in its slot as it is written.
 */
void sc_job_noting(const struct sc_job_member *jm);

struct sc_fd;
/** sc_job_note_fds() - note the removed files and memfds @fds write (no-op outside a job). */
void sc_job_note_fds(const struct sc_fd *fds, size_t n);

/** sc_job_in_checkpoint() - is the image being written a member's of a job's checkpoint? */
bool sc_job_in_checkpoint(void);

/** sc_job_noted() - the member whose image is being written (sc_job_noting()), or NULL. */
const struct sc_job_member *sc_job_noted(void);

/* job_cpus.c: the CPUs the members share as they write their images */
/**
 * sc_job_threads() - the threads one member's image may compress and read
 * with, as many members writing at once as there are CPUs: its share of the
 * CPUs (at least one); 0 outside a job's checkpoint (the default: every CPU).
 */
unsigned sc_job_threads(void);

/**
 * sc_job_write_turn() - wait until fewer members than there are CPUs write
 * their images, then write (no-op outside a job's checkpoint);
 * sc_job_write_done() - this member wrote: the next one's turn.
 */
void sc_job_write_turn(void);
void sc_job_write_done(void);

/**
 * sc_job_note_sysv() - note a System V object the image holds (no-op
 * outside a job): whether this process made it (@made), and for a segment
 * its attaches here (@attaches) and everywhere (@nattch).
 */
void sc_job_note_sysv(uint32_t kind, int32_t id, bool made, uint32_t attaches, uint32_t nattch);

/**
 * sc_job_check_shares() - refuse (reported) a set in which two processes
 * share what a tree's restore cannot give back shared (a removed file open
 * for writing at two positions), or that holds a System V object made or
 * attached by a process outside the set. Return: 0 or the refusal.
 */
int sc_job_check_shares(const struct sc_job_area *a);

#endif /* SC_JOB_H */
