/* SPDX-License-Identifier: MIT */
/*
 * sysv_collect.c - after the freeze: the System V objects read at the
 * instant (sysv_freeze_rt.c) become sysv-ipc records, once checked against
 * the snapshot's mappings. A segment comes back attached where the snapshot
 * attaches it, so each attach must be the whole segment, and every attach
 * must be this process's; an object another process made or uses refuses
 * the checkpoint, named (the module comment of sysv_ipc.c says why).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <unistd.h>

#include "core/job.h"
#include "core/sc_core.h"
#include "core/sc_sysv.h"
#include "format/sc_log.h"

static int refuse(const struct sc_sysv_slot *s, const char *why)
{
	return sc_err(SELFCKPT_EHOST, "System V %s %d (key 0x%08x) %s: no image is written",
		      sc_sysv_kind_name(s->kind), s->id, (unsigned)s->key, why);
}

/*
 * The key segment @s was made with, as its attaches name it ("/SYSV%08x"):
 * marked for removal, it has lost its key to the kernel, not to the maps.
 */
static int32_t key_of_attach(const struct sc_sysv_slot *s, const struct sc_vma *v, size_t n)
{
	unsigned key;

	for (size_t i = 0; i < n; i++)
		if (sc_vma_attaches(&v[i], s->id) && sscanf(v[i].path + 5, "%8x", &key) == 1)
			return (int32_t)key;
	return 0;
}

/* The snapshot's attaches of segment @s: their count; refused where one is partial. */
static int count_attaches(const struct sc_sysv_slot *s, const struct sc_vma *v, size_t n,
			  uint64_t size, int *attaches)
{
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE), len = (size + ps - 1) & ~(ps - 1);

	*attaches = 0;
	for (size_t i = 0; i < n; i++) {
		if (!sc_vma_attaches(&v[i], s->id))
			continue;
		if (v[i].offset || v[i].end - v[i].start != len)
			return sc_err(SELFCKPT_EHOST, "System V shared memory segment %d is "
				      "attached at 0x%llx-0x%llx only in part (unmapped or its "
				      "protection changed in part): it cannot come back so; no "
				      "image is written", s->id, (unsigned long long)v[i].start,
				      (unsigned long long)v[i].end);
		(*attaches)++;
	}
	return 0;
}

static int collect_shm(const struct sc_sysv_slot *s, pid_t pid, const struct sc_vma *v,
		       size_t n, struct sc_sysv_obj *o)
{
	const struct shmid_ds *ds = (const struct shmid_ds *)s->ds;
	int attaches, err = count_attaches(s, v, n, ds->shm_segsz, &attaches);

	if (err < 0)
		return err;
	if (ds->shm_cpid != pid && !attaches)
		return 1; /* another process's, which this one does not use */
	/* in a job, the job checks that its processes are all that use it (job_share.c) */
	if (ds->shm_cpid != pid && !sc_job_in_checkpoint())
		return refuse(s, "is attached, and another process made it");
	if ((int)ds->shm_nattch > attaches && !sc_job_in_checkpoint())
		return refuse(s, "is attached by another process too");
	if (ds->shm_perm.mode & SHM_LOCKED)
		return refuse(s, "is locked in memory (SHM_LOCK), which a restore cannot give "
			      "back without privileges");
	*o = (struct sc_sysv_obj){ .kind = SC_SYSV_SHM, .key = ds->shm_perm.__key, .id = s->id,
				   .mode = ds->shm_perm.mode, .uid = ds->shm_perm.uid,
				   .gid = ds->shm_perm.gid, .size = ds->shm_segsz,
				   .flags = ds->shm_perm.mode & SHM_DEST ? SC_SYSV_RMID : 0 };
	if (o->flags & SC_SYSV_RMID)
		o->key = key_of_attach(s, v, n);
	/* the freeze copied it whole; its attaches' segments hold no bytes (R-SEG-8) */
	if (s->used != ds->shm_segsz)
		return refuse(s, "could not be read (the process may not read it)");
	o->flags |= SC_SYSV_STORED;
	o->data = s->buf;
	o->data_len = s->used;
	sc_job_note_sysv(SC_SYSV_SHM, s->id, ds->shm_cpid == pid, (uint32_t)attaches,
			 (uint32_t)ds->shm_nattch);
	return 0;
}

/*
 * A set or queue must be one the program made (noted by the library); in a
 * job, one that a process of the job made (job_share.c checks).
 */
static int check_made(const struct sc_sysv_slot *s)
{
	const struct sc_sysv_known *k = sc_sysv_known_find(s->kind, s->id);

	if (!k)
		return refuse(s, "is used by this process, which did not make it through the C "
			      "library's semget() or msgget(); another process's object cannot "
			      "come back");
	if (!k->created && !sc_job_in_checkpoint())
		return refuse(s, "was made by another process (this one opened it by its key); "
			      "another process's object cannot come back");
	sc_job_note_sysv(s->kind, s->id, k->created, 0, 0);
	return 0;
}

static int collect_sem(const struct sc_sysv_slot *s, struct sc_sysv_obj *o)
{
	const struct semid_ds *ds = (const struct semid_ds *)s->ds;
	int err = check_made(s);

	if (err < 0)
		return err;
	*o = (struct sc_sysv_obj){ .kind = SC_SYSV_SEM, .key = ds->sem_perm.__key, .id = s->id,
				   .mode = ds->sem_perm.mode, .uid = ds->sem_perm.uid,
				   .gid = ds->sem_perm.gid, .count = s->count };
	o->semval = malloc(s->count * sizeof(*o->semval));
	o->sempid = malloc(s->count * sizeof(*o->sempid));
	if (!o->semval || !o->sempid)
		return sc_err(ENOMEM, "out of memory collecting a semaphore set");
	memcpy(o->semval, s->buf, s->count * sizeof(*o->semval));
	memcpy(o->sempid, s->pids, s->count * sizeof(*o->sempid));
	return 0;
}

/* The messages the freeze copied, as u64 length, i64 type, text padded to 8. */
static int collect_msg(const struct sc_sysv_slot *s, struct sc_sysv_obj *o)
{
	const struct msqid_ds *ds = (const struct msqid_ds *)s->ds;
	uint64_t at = 0, text = 0;
	int err = check_made(s);

	if (err < 0)
		return err;
	*o = (struct sc_sysv_obj){ .kind = SC_SYSV_MSG, .key = ds->msg_perm.__key, .id = s->id,
				   .mode = ds->msg_perm.mode, .uid = ds->msg_perm.uid,
				   .gid = ds->msg_perm.gid, .count = s->count,
				   .size = ds->msg_qbytes };
	if (s->count != ds->msg_qnum)
		return refuse(s, "changed while its messages were copied");
	o->msgs = calloc(s->count ? s->count : 1, sizeof(*o->msgs));
	o->data = malloc(s->used ? s->used : 1);
	if (!o->msgs || !o->data)
		return sc_err(ENOMEM, "out of memory collecting a message queue");
	for (uint32_t i = 0; i < s->count; i++) {
		uint64_t len;

		memcpy(&len, s->buf + at, 8);
		memcpy(&o->msgs[i].type, s->buf + at + 8, 8);
		o->msgs[i].len = len;
		memcpy(o->data + text, s->buf + at + 16, len);
		text += len;
		at += 16 + ((len + 7) & ~7ull);
	}
	o->data_len = text;
	return 0;
}

/* One object: 0 with @o filled, 1 when it is not the image's, or an error. */
static int collect(const struct sc_sysv_slot *s, pid_t pid, const struct sc_vma *v, size_t n,
		   struct sc_sysv_obj *o)
{
	if (s->gone)
		return 1; /* removed before the instant */
	if (s->err == -ENOSYS && s->kind == SC_SYSV_MSG)
		return refuse(s, "cannot be read without taking its messages: this kernel has "
			      "no MSG_COPY (CONFIG_CHECKPOINT_RESTORE)");
	if (s->err == -E2BIG)
		return refuse(s, "grew while the checkpoint was being taken; try again");
	if (s->err < 0)
		return sc_err((int)-s->err, "cannot read System V %s %d (key 0x%08x): %s; no "
			      "image is written", sc_sysv_kind_name(s->kind), s->id,
			      (unsigned)s->key, strerror((int)-s->err));
	if (s->kind == SC_SYSV_SHM)
		return collect_shm(s, pid, v, n, o);
	return s->kind == SC_SYSV_SEM ? collect_sem(s, o) : collect_msg(s, o);
}

static bool any_segment(void)
{
	FILE *f = fopen("/proc/sysvipc/shm", "re");
	char line[512];
	int lines = 0;

	while (f && lines < 2 && fgets(line, sizeof(line), f))
		lines++;
	if (f)
		fclose(f);
	return lines > 1; /* the heading, then a segment */
}

static bool has_slot(const struct sc_sysv_frozen *z, uint32_t kind, int32_t id)
{
	for (int i = 0; i < z->n; i++)
		if (z->s[i].kind == kind && z->s[i].id == id)
			return true;
	return false;
}

static int late(uint32_t kind, long long id)
{
	return sc_err(SELFCKPT_EHOST, "System V %s %lld was made, opened or attached while the "
		      "checkpoint was being taken: no image is written (the next checkpoint holds "
		      "it)", sc_sysv_kind_name(kind), id);
}

/* A segment this process made before the instant that the freeze did not read. */
static int late_segment(const struct sc_sysv_frozen *z)
{
	FILE *f = fopen("/proc/sysvipc/shm", "re");
	char line[512];
	int err = 0;

	while (f && !err && fgets(line, sizeof(line), f)) {
		int key, id, cpid, lpid;
		unsigned mode;
		unsigned long long size, nattch, uid, gid, cuid, cgid, atime, dtime, ctime;

		if (sscanf(line, "%d %d %o %llu %d %d %llu %llu %llu %llu %llu %llu %llu %llu",
			   &key, &id, &mode, &size, &cpid, &lpid, &nattch, &uid, &gid, &cuid, &cgid,
			   &atime, &dtime, &ctime) == 14 && cpid == z->pid &&
		    (long long)ctime <= z->instant_sec && !has_slot(z, SC_SYSV_SHM, id))
			err = late(SC_SYSV_SHM, id);
	}
	if (f)
		fclose(f);
	return err;
}

/*
 * The objects that came between sc_sysv_prepare() and the instant, which the
 * freeze could not read: ids the library noted by then, segments attached in
 * the snapshot, segments made (by their creation time, in seconds) by then.
 */
static int check_late(const struct sc_sysv_frozen *z, const struct sc_vma *v, size_t n)
{
	int k, lost;
	const struct sc_sysv_known *known = sc_sysv_known(&k, &lost);
	int noted = z->noted < SC_SYSV_KNOWN_MAX ? z->noted : SC_SYSV_KNOWN_MAX;

	if (z->calls)
		return sc_err(SELFCKPT_EHOST, "a thread was inside semget() or msgget() at the "
			      "instant of the checkpoint: no image is written (the next checkpoint "
			      "holds what it made)");

	for (int i = 0; i < noted && i < k; i++)
		if (!known[i].kind || !has_slot(z, known[i].kind, known[i].id))
			return late(known[i].kind, known[i].id);
	for (size_t i = 0; i < n; i++)
		if ((v[i].flags & SC_VMA_SYSV) && !has_slot(z, SC_SYSV_SHM, (int32_t)v[i].inode))
			return late(SC_SYSV_SHM, (long long)v[i].inode);
	return late_segment(z);
}

int sc_sysv_write_all(struct sc_writer *w, const struct sc_sysv_frozen *z, pid_t child)
{
	struct sc_vma *v = NULL;
	size_t n = 0;
	int lost, k, err = 0;

	sc_sysv_known(&k, &lost);
	if (lost)
		return sc_err(SELFCKPT_EHOST, "the program got more than %d System V semaphore "
			      "sets and message queues: the image cannot tell which it made; no "
			      "image is written", SC_SYSV_KNOWN_MAX);
	/* the snapshot's attaches: read where the system has a segment at all */
	if ((z->n || any_segment()) && (err = sc_maps_read(child, &v, &n)) < 0)
		return err;
	err = check_late(z, v, n);
	for (int i = 0; i < z->n && err >= 0; i++) {
		struct sc_sysv_obj o = { 0 };

		err = collect(&z->s[i], z->pid, v, n, &o);
		if (err == 0)
			err = sc_sysv_write(w, &o);
		if (o.data == z->s[i].buf)
			o.data = NULL; /* the freeze's room, freed with it */
		sc_sysv_obj_release(&o);
	}
	sc_maps_free(v, n);
	return err < 0 ? err : 0;
}
