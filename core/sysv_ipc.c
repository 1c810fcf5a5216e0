/* SPDX-License-Identifier: MIT */
/*
 * sysv_ipc.c - which System V objects an image holds, and their records.
 *
 * The image holds the objects the process created: the segments whose
 * creator (cpid in /proc/sysvipc/shm) is this process, and the semaphore
 * sets and queues it made through semget() and msgget() (noted by the
 * library, interpose_sysv.c: the kernel does not tell who made those). An
 * object of another process that the program uses - a segment it attached,
 * a set or queue it opened by key, a queue it sent to or received from - is
 * refused at checkpoint, naming it: the restore brings the objects back in an
 * IPC namespace of its own, where the other process would never see them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <unistd.h>

#include "core/sc_core.h"
#include "core/sc_sysv.h"
#include "format/sc_log.h"

#define MSG_ROOM_MAX (64u << 20) /* the most a queue's copy may take */

/* ---- the ids the program got through the C library ---- */

static struct sc_sysv_known known[SC_SYSV_KNOWN_MAX];
int sc_sysv_noted, sc_sysv_calls;
static int lost_known;

void sc_sysv_note(uint32_t kind, int32_t id, int32_t key, bool created)
{
	int n = __atomic_load_n(&sc_sysv_noted, __ATOMIC_ACQUIRE), i;

	for (i = 0; i < n && i < SC_SYSV_KNOWN_MAX; i++)
		if (known[i].kind == kind && known[i].id == id) {
			if (created || known[i].key != key)
				known[i] = (struct sc_sysv_known){ kind, id, key, created };
			return;
		}
	i = __atomic_fetch_add(&sc_sysv_noted, 1, __ATOMIC_ACQ_REL);
	if (i >= SC_SYSV_KNOWN_MAX) {
		__atomic_store_n(&lost_known, 1, __ATOMIC_RELEASE);
		return;
	}
	known[i] = (struct sc_sysv_known){ kind, id, key, created };
}

const struct sc_sysv_known *sc_sysv_known(int *n, int *lost)
{
	int k = __atomic_load_n(&sc_sysv_noted, __ATOMIC_ACQUIRE);

	*n = k < SC_SYSV_KNOWN_MAX ? k : SC_SYSV_KNOWN_MAX;
	*lost = __atomic_load_n(&lost_known, __ATOMIC_ACQUIRE);
	return known;
}

const struct sc_sysv_known *sc_sysv_known_find(uint32_t kind, int32_t id)
{
	int n, lost;
	const struct sc_sysv_known *k = sc_sysv_known(&n, &lost);

	for (int i = 0; i < n; i++)
		if (k[i].kind == kind && k[i].id == id)
			return &k[i];
	return NULL;
}

/* ---- before the freeze ---- */

/* A slot for the object, in *@out; NULL there when it has one already. */
static int add_slot(struct sc_sysv_frozen *z, uint32_t kind, int32_t id, int32_t key,
		    struct sc_sysv_slot **out)
{
	struct sc_sysv_slot *s;

	*out = NULL;
	for (int i = 0; i < z->n; i++)
		if (z->s[i].kind == kind && z->s[i].id == id)
			return 0;
	s = realloc(z->s, (size_t)(z->n + 1) * sizeof(*s));
	if (!s)
		return sc_err(ENOMEM, "out of memory preparing the System V objects");
	z->s = s;
	z->s[z->n] = (struct sc_sysv_slot){ .kind = kind, .id = id, .key = key };
	*out = &z->s[z->n++];
	return 0;
}

/* The room the freeze fills for @s, as big as the object can be by then. */
static int make_room(struct sc_sysv_slot *s, uint64_t shm_size)
{
	struct semid_ds sd;
	struct msqid_ds md;

	if (s->kind == SC_SYSV_SHM) {
		s->cap = s->copy ? shm_size : 0;
	} else if (s->kind == SC_SYSV_SEM) {
		if (semctl(s->id, 0, IPC_STAT, &sd) < 0)
			return 0; /* gone, or not ours to read: the freeze says which */
		s->cap = sd.sem_nsems * sizeof(uint16_t);
		if (!(s->pids = calloc(sd.sem_nsems, sizeof(*s->pids))))
			return sc_err(ENOMEM, "out of memory preparing a semaphore set");
	} else {
		if (msgctl(s->id, IPC_STAT, &md) < 0)
			return 0;
		/* at most msg_qbytes messages of 16 bytes of header each, and their texts */
		s->cap = (uint64_t)(md.msg_qbytes > md.__msg_cbytes ? md.msg_qbytes
								    : md.__msg_cbytes) * 17 + 4096;
		if (s->cap > MSG_ROOM_MAX)
			s->cap = MSG_ROOM_MAX;
	}
	/* malloc'd, so untouched room costs nothing (a large block is its own mapping) */
	if (s->cap && !(s->buf = malloc(s->cap)))
		return sc_err(ENOMEM, "out of memory preparing %llu bytes of a System V %s",
			      (unsigned long long)s->cap, sc_sysv_kind_name(s->kind));
	return 0;
}

/* The ids of the segments this process attaches now: the inodes of its /SYSV mappings. */
static bool attached_now(const struct sc_vma *v, size_t n, int32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (sc_vma_attaches(&v[i], id))
			return true;
	return false;
}

/* Every segment this process created or attaches, from /proc/sysvipc/shm. */
static int prepare_shm(struct sc_sysv_frozen *z)
{
	FILE *f = fopen("/proc/sysvipc/shm", "re");
	char line[512];
	struct sc_sysv_slot *s;
	struct sc_vma *v = NULL;
	size_t n = 0;
	bool maps = false;
	int err = 0;

	if (!f)
		return 0; /* no System V IPC in this kernel */
	while (!err && fgets(line, sizeof(line), f)) {
		int key, id, cpid;
		unsigned mode;
		unsigned long long size;

		if (sscanf(line, "%d %d %o %llu %d", &key, &id, &mode, &size, &cpid) != 5)
			continue; /* the heading */
		/* the maps only where there is a segment to look for: most processes have none */
		if (cpid != z->pid && !maps && (err = sc_maps_read(0, &v, &n)) < 0)
			break;
		maps = maps || cpid != z->pid;
		if (cpid != z->pid && !attached_now(v, n, id))
			continue;
		if (!(err = add_slot(z, SC_SYSV_SHM, id, key, &s)) && s) {
			/* another's attached here is the image's in a job (sysv_collect.c) */
			s->copy = true;
			err = make_room(s, size);
		}
	}
	sc_maps_free(v, n);
	fclose(f);
	return err;
}

/*
 * The sets whose last operation was this process's (GETPID): the library
 * did not see it make them (a static link has no semget() of ours), so the
 * checkpoint must refuse them rather than miss them.
 */
/*
 * When this process started, in seconds since the epoch (0: not known). A
 * pid noted on an object at a time before that was another process's with
 * the same number: pids are reused, and a job killed with -9 leaves its
 * queues and semaphores behind, naming its pids.
 */
static unsigned long long process_start(void)
{
	unsigned long long btime = 0, ticks = 0;
	long hz = sysconf(_SC_CLK_TCK);
	char line[1024], *p;
	FILE *f = fopen("/proc/stat", "re");

	while (f && fgets(line, sizeof(line), f) && sscanf(line, "btime %llu", &btime) != 1)
		;
	if (f)
		fclose(f);
	f = fopen("/proc/self/stat", "re");
	p = f && fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
	if (f)
		fclose(f);
	/* after the command: the state is the 1st field, the start time (field 22) the 20th */
	for (int field = 0; p && field < 20; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, "%llu", &ticks) != 1 || hz <= 0 || !btime)
		return 0;
	return btime + ticks / (unsigned long long)hz;
}

/* Was an operation at @when (0: not kept) this process's? One second of slack: the clocks differ. */
static bool since_start(unsigned long long when, unsigned long long start)
{
	return !when || !start || when + 1 >= start;
}

static bool used_set(int id, unsigned long nsems, pid_t pid, unsigned long long otime,
		     unsigned long long start)
{
	if (!since_start(otime, start))
		return false; /* its last operation was before this process began */
	for (unsigned long i = 0; i < nsems; i++)
		if (semctl(id, (int)i, GETPID) == pid)
			return true;
	return false;
}

/* A line of /proc/sysvipc/sem naming a set this process used last and did not note. */
static bool sem_used(const char *line, pid_t pid, unsigned long long start, int *key, int *id)
{
	unsigned mode, uid, gid, cuid, cgid;
	unsigned long nsems;
	unsigned long long otime = 0;

	return sscanf(line, "%d %d %o %lu %u %u %u %u %llu", key, id, &mode, &nsems, &uid, &gid,
		      &cuid, &cgid, &otime) >= 4 &&
	       !sc_sysv_known_find(SC_SYSV_SEM, *id) && used_set(*id, nsems, pid, otime, start);
}

/* A line of /proc/sysvipc/msg naming a queue this process sent to or received from last. */
static bool msg_used(const char *line, pid_t pid, unsigned long long start, int *key, int *id)
{
	int lspid, lrpid;
	unsigned mode, uid, gid, cuid, cgid;
	unsigned long long cbytes, qnum, stime = 0, rtime = 0;

	if (sscanf(line, "%d %d %o %llu %llu %d %d %u %u %u %u %llu %llu", key, id, &mode, &cbytes,
		   &qnum, &lspid, &lrpid, &uid, &gid, &cuid, &cgid, &stime, &rtime) < 7 ||
	    (lspid != pid && lrpid != pid))
		return false;
	/* a pid seen before this process began was another process's */
	return (lspid == pid && since_start(stime, start)) ||
	       (lrpid == pid && since_start(rtime, start));
}

/* A slot for each object of @path (of @kind) that @used() says this process used. */
static int prepare_used(struct sc_sysv_frozen *z, const char *path, uint32_t kind,
			bool (*used)(const char *line, pid_t pid, unsigned long long start,
				     int *key, int *id))
{
	FILE *f = fopen(path, "re");
	char line[512];
	struct sc_sysv_slot *s;
	int err = 0, key, id;
	unsigned long long start = process_start();

	while (f && !err && fgets(line, sizeof(line), f))
		if (used(line, z->pid, start, &key, &id) && !(err = add_slot(z, kind, id, key, &s)) && s)
			err = make_room(s, 0);
	if (f)
		fclose(f);
	return err;
}

int sc_sysv_prepare(struct sc_sysv_frozen *z)
{
	const struct sc_sysv_known *k;
	struct sc_sysv_slot *s;
	int n, lost, err;

	*z = (struct sc_sysv_frozen){ .pid = getpid() };
	k = sc_sysv_known(&n, &lost);
	err = prepare_shm(z);
	for (int i = 0; !err && i < n; i++)
		if (!(err = add_slot(z, k[i].kind, k[i].id, k[i].key, &s)) && s)
			err = make_room(s, 0);
	if (!err)
		err = prepare_used(z, "/proc/sysvipc/msg", SC_SYSV_MSG, msg_used);
	if (!err)
		err = prepare_used(z, "/proc/sysvipc/sem", SC_SYSV_SEM, sem_used);
	if (err < 0)
		sc_sysv_frozen_free(z);
	return err;
}

void sc_sysv_frozen_free(struct sc_sysv_frozen *z)
{
	for (int i = 0; z->s && i < z->n; i++) {
		free(z->s[i].buf);
		free(z->s[i].pids);
	}
	free(z->s);
	z->s = NULL;
	z->n = 0;
}
