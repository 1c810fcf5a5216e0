/* SPDX-License-Identifier: MIT */
/*
 * restore_sysv.c - System V objects made again with their ids.
 *
 * The program holds ids as plain integers, so each object must get exactly
 * the one it had. This process is the root of the user namespace that owns
 * a new IPC namespace (restore_ids.c), so it may write the namespace's
 * kernel/{shm,sem,msg}_next_id, as CRIU does: the next object made of that
 * kind gets that id, and IPC_EXCL makes sure it is a new one. Then the
 * contents: semaphore values, queued messages in order, the bytes of a
 * segment that was not attached (an attached one is filled through its
 * mapping, restore_plan.c), and last the owner and mode, which may leave the
 * object out of this process's reach. Marking a segment for removal waits
 * until the blob has attached it (restorer_rt.c): now it would go at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <unistd.h>

#include "core/restore/restore_internal.h"
#include "format/sc_log.h"

static int write_number(const char *path, long long v)
{
	char text[32];

	snprintf(text, sizeof(text), "%lld", v);
	return sc_write_knob(path, text);
}

static int failed(const struct sc_sysv_obj *o, const char *what, int err)
{
	return sc_err(SELFCKPT_EHOST, "cannot make System V %s %d (key 0x%08x) again: %s: %s",
		      sc_sysv_kind_name(o->kind), o->id, (unsigned)o->key, what, strerror(err));
}

/*
 * The key to make @o with. A segment marked for removal keeps the key it was
 * made with in the image, as its attaches name it, unless an object of the
 * image has that key now: then it is made private (marking it drops its key).
 */
static key_t key_of(const struct sc_sysv_obj *all, size_t n, const struct sc_sysv_obj *o)
{
	if (!(o->flags & SC_SYSV_RMID))
		return o->key;
	for (size_t i = 0; i < n; i++)
		if (&all[i] != o && all[i].kind == o->kind && all[i].key == o->key)
			return IPC_PRIVATE;
	return o->key;
}

/* Make @o (of @all) with its id; the id, or a negative error (reported). */
static int make(const struct sc_sysv_obj *all, size_t n, const struct sc_sysv_obj *o)
{
	static const char *const next[] = { NULL, "/proc/sys/kernel/shm_next_id",
					    "/proc/sys/kernel/sem_next_id",
					    "/proc/sys/kernel/msg_next_id" };
	key_t key = key_of(all, n, o);
	int flags = IPC_CREAT | IPC_EXCL | 0600, id, err;

	if ((err = write_number(next[o->kind], o->id)) < 0)
		return failed(o, next[o->kind], -err);
	if (o->kind == SC_SYSV_SHM)
		id = shmget(key, o->size, flags);
	else if (o->kind == SC_SYSV_SEM)
		id = semget(key, (int)o->count, flags);
	else
		id = msgget(key, flags);
	if (id < 0)
		return failed(o, "creating it", errno);
	if (id != o->id) {
		sc_err(SELFCKPT_EHOST, "System V %s %d came back as %d: this kernel does not "
		       "honour %s", sc_sysv_kind_name(o->kind), o->id, id, next[o->kind]);
		return -SELFCKPT_EHOST;
	}
	return id;
}

/* The bytes of a segment that was not attached, through an attach of ours. */
static int fill_shm(const struct sc_sysv_obj *o)
{
	void *at;

	if (!(o->flags & SC_SYSV_STORED))
		return 0;
	at = shmat(o->id, NULL, 0);
	if (at == (void *)-1)
		return failed(o, "attaching it to fill it", errno);
	memcpy(at, o->data, o->data_len);
	shmdt(at);
	return 0;
}

/*
 * The values, each set alone: SETVAL makes this process the last to operate
 * on that semaphore, so one that no process touched yet keeps a pid of 0.
 */
static int fill_sem(const struct sc_sysv_obj *o)
{
	for (uint32_t i = 0; i < o->count; i++)
		if ((o->semval[i] || o->sempid[i]) && semctl(o->id, (int)i, SETVAL,
							     (int)o->semval[i]) < 0)
			return failed(o, "setting a value", errno);
	return 0;
}

/* The queue's limit first (the namespace's msgmnb may need to grow), then its messages. */
static int fill_msg(const struct sc_sysv_obj *o)
{
	struct msqid_ds ds;
	uint64_t at = 0, limit = o->size > o->data_len ? o->size : o->data_len, longest = 0;
	struct { long type; char text[]; } *m;
	int err = 0;

	if (msgctl(o->id, IPC_STAT, &ds) < 0)
		return failed(o, "reading it", errno);
	if (limit > ds.msg_qbytes) {
		write_number("/proc/sys/kernel/msgmnb", (long long)limit);
		ds.msg_qbytes = limit;
		if (msgctl(o->id, IPC_SET, &ds) < 0)
			return failed(o, "raising its limit", errno);
	}
	for (uint32_t i = 0; i < o->count; i++)
		longest = o->msgs[i].len > longest ? o->msgs[i].len : longest;
	if (!(m = malloc(sizeof(*m) + longest + 1)))
		return sc_err(ENOMEM, "out of memory restoring a message queue");
	for (uint32_t i = 0; i < o->count && !err; i++) {
		m->type = (long)o->msgs[i].type;
		memcpy(m->text, o->data + at, o->msgs[i].len);
		at += o->msgs[i].len;
		if (msgsnd(o->id, m, o->msgs[i].len, IPC_NOWAIT) < 0)
			err = failed(o, "queueing a message", errno);
	}
	free(m);
	return err;
}

/* Owner, mode and (a queue) limit as they were: last, as they may lock us out. */
static int set_owner(const struct sc_sysv_obj *o)
{
	struct ipc_perm *p;
	struct shmid_ds shm;
	struct semid_ds sem;
	struct msqid_ds msg;
	int r;

	if (o->kind == SC_SYSV_SHM)
		r = shmctl(o->id, IPC_STAT, &shm), p = &shm.shm_perm;
	else if (o->kind == SC_SYSV_SEM)
		r = semctl(o->id, 0, IPC_STAT, &sem), p = &sem.sem_perm;
	else
		r = msgctl(o->id, IPC_STAT, &msg), p = &msg.msg_perm;
	if (r < 0)
		return failed(o, "reading it", errno);
	p->uid = o->uid;
	p->gid = o->gid;
	p->mode = o->mode & 0777;
	if (o->kind == SC_SYSV_MSG)
		msg.msg_qbytes = o->size;
	if (o->kind == SC_SYSV_SHM)
		r = shmctl(o->id, IPC_SET, &shm);
	else if (o->kind == SC_SYSV_SEM)
		r = semctl(o->id, 0, IPC_SET, &sem);
	else
		r = msgctl(o->id, IPC_SET, &msg);
	return r < 0 ? failed(o, "giving back its owner and mode", errno) : 0;
}

int sc_sysv_make_all(const struct sc_sysv_obj *objs, size_t n)
{
	int err = 0;

	for (size_t i = 0; i < n && err >= 0; i++) {
		const struct sc_sysv_obj *o = &objs[i];

		err = make(objs, n, o);
		if (err >= 0)
			err = o->kind == SC_SYSV_SHM ? fill_shm(o)
			      : o->kind == SC_SYSV_SEM ? fill_sem(o) : fill_msg(o);
	}
	for (size_t i = 0; i < n && !err; i++)
		err = set_owner(&objs[i]);
	if (!err && n)
		sc_log(SC_LOG_DEBUG, "restore: %zu System V objects made again", n);
	return err < 0 ? err : 0;
}

int sc_sysv_restore(const struct image *im)
{
	return sc_sysv_make_all(im->sysv, im->n_sysv);
}
