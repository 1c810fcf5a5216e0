/* SPDX-License-Identifier: MIT */
/*
 * sc_sysv.h - System V IPC: the shared memory segments, semaphore sets and
 * message queues the process created, as they were at the instant of the
 * snapshot (sysv_freeze_rt.c reads them while every thread is stopped,
 * sysv_ipc.c decides which belong to the image and refuses the others), the
 * sysv-ipc record (type 11, spec §9.13, sysv_record.c), and making them
 * again with the same ids in the restore's own IPC namespace
 * (core/restore/restore_sysv.c).
 */
#ifndef SC_SYSV_H
#define SC_SYSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/sc_format.h"

/* Values are part of the image format (spec §9.13). */
enum sc_sysv_kind {
	SC_SYSV_SHM = 1, /* a shared memory segment */
	SC_SYSV_SEM = 2, /* a semaphore set */
	SC_SYSV_MSG = 3, /* a message queue */
};

#define SC_SYSV_RMID 0x1u   /* segment: marked for removal (IPC_RMID while attached) */
#define SC_SYSV_STORED 0x2u /* segment: its bytes are the payload (always, in 1.5) */
#define SC_SYSV_FLAGS 0x3u

#define SC_SYSV_SEMS_MAX 65536u     /* semaphores in one set a reader accepts */
#define SC_SYSV_MSGS_MAX (1u << 20) /* messages in one queue a reader accepts */
#define SC_SYSV_SHM_MAX (1ull << 40) /* bytes of one segment a reader accepts */

struct sc_sysv_msg {
	int64_t type;
	uint64_t len;
};

struct sc_sysv_obj {
	uint32_t kind;      /* enum sc_sysv_kind */
	int32_t key;        /* 0: IPC_PRIVATE (or a segment marked for removal) */
	int32_t id;
	uint32_t mode;      /* shm_perm.mode as the kernel gives it (SHM_DEST included) */
	uint32_t uid, gid;  /* the owner (IPC_SET can give it back; the creator is the restore) */
	uint32_t flags;     /* SC_SYSV_* */
	uint32_t count;     /* semaphores, or messages queued */
	uint64_t size;      /* segment: bytes; queue: its limit (msg_qbytes); set: 0 */
	uint16_t *semval;   /* set: count values */
	int32_t *sempid;    /* set: count pids of the last operation (0: none yet) */
	struct sc_sysv_msg *msgs; /* queue: count messages, oldest first */
	uint8_t *data;      /* queue: the texts one after another; segment (STORED): its bytes */
	uint64_t data_len;
};

/** sc_sysv_obj_release() - free what @o points to (not @o); NULL is a no-op. */
void sc_sysv_obj_release(struct sc_sysv_obj *o);
/** sc_sysv_objs_free() - release @n objects and free the array. */
void sc_sysv_objs_free(struct sc_sysv_obj *o, size_t n);
/** sc_sysv_kind_name() - "shared memory segment", "semaphore set" or "message queue". */
const char *sc_sysv_kind_name(uint32_t kind);

/** sc_sysv_write() - one sysv-ipc record of @o (meta and payload). */
int sc_sysv_write(struct sc_writer *w, const struct sc_sysv_obj *o);
/**
 * sc_sysv_read() - decode the sysv-ipc record the reader stands on into @o,
 * checking it (R-TYP-22). Return: 0 or a negative error (reported).
 */
int sc_sysv_read(struct sc_reader *r, const struct sc_record *rec, struct sc_sysv_obj *o);

/* ---- the checkpoint's side (sysv_ipc.c, sysv_freeze_rt.c) ---- */

/* One object as the freeze reads it, into room prepared before. */
struct sc_sysv_slot {
	uint32_t kind;
	int32_t id, key;    /* as prepared */
	int32_t gone;       /* the object was removed before the instant */
	int64_t err;        /* -errno of a read that failed at the instant; -E2BIG: no room */
	uint8_t ds[128];    /* the kernel's struct shmid_ds, semid_ds or msqid_ds */
	uint8_t *buf;       /* semaphore values, queued messages or segment bytes */
	uint64_t cap, used;
	int32_t *pids;      /* set: GETPID of each semaphore */
	uint32_t count;     /* set: semaphores; queue: messages copied */
	uint32_t copy;      /* segment: copy its bytes (the process created it) */
};

struct sc_sysv_frozen {
	struct sc_sysv_slot *s;
	int n;
	pid_t pid;
	int noted;           /* ids the library had noted at the instant (sc_sysv_noted) */
	int calls;           /* semget()/msgget() calls under way at the instant */
	int64_t instant_sec; /* CLOCK_REALTIME seconds at the instant */
};

/*
 * The count of ids noted so far, and of semget()/msgget() calls under way
 * (interpose_sysv.c), which the freeze reads raw: a call stopped between the
 * kernel's answer and the note would leave an object no table names.
 */
extern int sc_sysv_noted, sc_sysv_calls;

/**
 * sc_sysv_prepare() - find, before the freeze, the objects that may belong to
 * the image (every segment this process created or attached, the sets and
 * queues it got from semget() and msgget()) and make room for what the
 * freeze reads of them. Return: 0 or a negative error (reported).
 */
int sc_sysv_prepare(struct sc_sysv_frozen *z);
/** sc_sysv_frozen_free() - free what sc_sysv_prepare() allocated; no-op when nothing was. */
void sc_sysv_frozen_free(struct sc_sysv_frozen *z);
/* sysv_freeze_rt.c: raw, while every other thread is stopped: read each prepared object. */
void sc_sysv_freeze(struct sc_sysv_frozen *z);
/**
 * sc_sysv_write_all() - after the freeze: check that the snapshot @child's
 * objects are the process's own and can come back, then write one record
 * each. Refuses, naming the object, one that another process uses or that
 * cannot come back as it is. Return: 0 or a negative error (reported).
 */
int sc_sysv_write_all(struct sc_writer *w, const struct sc_sysv_frozen *z, pid_t child);

/*
 * interpose_sysv.c: the sets and queues the program got ids of through the C
 * library (semget(), msgget()), and whether it created them.
 */
struct sc_sysv_known {
	uint32_t kind;
	int32_t id, key;
	int32_t created; /* 1: made by this process; 0: it existed (another process's) */
};
#define SC_SYSV_KNOWN_MAX 256
/** sc_sysv_known() - the ids noted so far (@n of them); a table the library keeps. */
const struct sc_sysv_known *sc_sysv_known(int *n, int *lost);
/** sc_sysv_known_find() - the note of object @id of @kind, or NULL. */
const struct sc_sysv_known *sc_sysv_known_find(uint32_t kind, int32_t id);
/** sc_sysv_note() - note an id the program got (from any thread). */
void sc_sysv_note(uint32_t kind, int32_t id, int32_t key, bool created);

#endif /* SC_SYSV_H */
