/* SPDX-License-Identifier: MIT */
/*
 * sysv_freeze_rt.c - the System V objects as they are at the instant.
 *
 * Stage contract: every other thread is stopped (possibly inside malloc);
 * sc_sysv_prepare() found the objects and made room for each. Raw system
 * calls only, no allocation: each object's state (the kernel's *id_ds), a
 * set's values and last pids, a queue's messages (copied, not taken:
 * MSG_COPY), and the bytes of each segment the process created, whole,
 * through an attach of its own: its attaches show only the pages this process
 * touched, not those written through another attach or before. A read
 * that fails is kept in the slot for sc_sysv_write_all() to report.
 */
#include <stddef.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/syscall.h>

#include "core/sc_sys.h"
#include "core/sc_sysv.h"

#define MSG_COPY_ 040000 /* <linux/msg.h>: read the message at an index, leave it queued */
#define ENOMSG_ 42
#define EINVAL_ 22
#define EIDRM_ 43
#define E2BIG_ 7

_Static_assert(sizeof(struct shmid_ds) <= 128 && sizeof(struct semid_ds) <= 128 &&
	       sizeof(struct msqid_ds) <= 128, "an *id_ds fits a slot");

/* A segment's bytes, through a read-only attach of our own that goes at once. */
static long copy_segment(struct sc_sysv_slot *s, uint64_t size)
{
	long at = sc_sys3(SYS_shmat, s->id, 0, SHM_RDONLY);

	if (at < 0 && at > -4096)
		return at;
	sc_copy_bytes((uint64_t)(uintptr_t)s->buf, (uint64_t)at, size);
	sc_sys1(SYS_shmdt, at);
	s->used = size;
	return 0;
}

static long freeze_shm(struct sc_sysv_slot *s)
{
	struct shmid_ds *ds = (struct shmid_ds *)s->ds;
	long r = sc_sys3(SYS_shmctl, s->id, IPC_STAT, (long)ds);

	if (r < 0 || !s->copy)
		return r;
	if (ds->shm_segsz > s->cap)
		return -E2BIG_;
	return copy_segment(s, ds->shm_segsz);
}

static long freeze_sem(struct sc_sysv_slot *s)
{
	struct semid_ds *ds = (struct semid_ds *)s->ds;
	long r = sc_sys4(SYS_semctl, s->id, 0, IPC_STAT, (long)ds);

	if (r < 0)
		return r;
	if (ds->sem_nsems * sizeof(uint16_t) > s->cap)
		return -7;
	s->count = (uint32_t)ds->sem_nsems;
	if ((r = sc_sys4(SYS_semctl, s->id, 0, GETALL, (long)s->buf)) < 0)
		return r;
	for (uint32_t i = 0; i < s->count; i++) {
		r = sc_sys4(SYS_semctl, s->id, i, GETPID, 0);
		if (r < 0)
			return r;
		s->pids[i] = (int32_t)r;
	}
	s->used = s->count * sizeof(uint16_t);
	return 0;
}

/*
 * Each message as u64 length, i64 type, the text padded to 8 bytes. The
 * kernel allocates as much as the size a copy asks for: ask for the queue's
 * limit, which no message exceeds unless the limit was lowered since.
 */
static long freeze_msg(struct sc_sysv_slot *s)
{
	struct msqid_ds *ds = (struct msqid_ds *)s->ds;
	long r = sc_sys3(SYS_msgctl, s->id, IPC_STAT, (long)ds);

	if (r < 0)
		return r;
	for (s->count = 0; s->count < ds->msg_qnum; s->count++) {
		uint8_t *at = s->buf + s->used;
		uint64_t room;

		if (s->used + 16 > s->cap)
			return -7;
		room = s->cap - s->used - 16;
		if (room > ds->msg_qbytes + 8192)
			room = ds->msg_qbytes + 8192;
		r = sc_sys5(SYS_msgrcv, s->id, (long)(at + 8), (long)room, s->count,
			    IPC_NOWAIT | MSG_COPY_);
		if (r == -ENOMSG_)
			break;
		if (r < 0)
			return r;
		*(uint64_t *)at = (uint64_t)r;
		s->used += 16 + (((uint64_t)r + 7) & ~7ull);
	}
	return 0;
}

void sc_sysv_freeze(struct sc_sysv_frozen *z)
{
	struct { int64_t sec, nsec; } now = { 0, 0 };

	/* what came after sc_sysv_prepare() and before now refuses the image (sysv_collect.c) */
	z->noted = __atomic_load_n(&sc_sysv_noted, __ATOMIC_ACQUIRE);
	z->calls = __atomic_load_n(&sc_sysv_calls, __ATOMIC_ACQUIRE);
	sc_sys2(SYS_clock_gettime, 0 /* CLOCK_REALTIME */, (long)&now);
	z->instant_sec = now.sec;
	for (int i = 0; i < z->n; i++) {
		struct sc_sysv_slot *s = &z->s[i];
		long r;

		s->used = 0;
		s->count = 0;
		if (s->kind == SC_SYSV_SHM)
			r = freeze_shm(s);
		else if (s->kind == SC_SYSV_SEM)
			r = freeze_sem(s);
		else
			r = freeze_msg(s);
		s->gone = r == -EINVAL_ || r == -EIDRM_;
		s->err = s->gone ? 0 : r;
	}
}
