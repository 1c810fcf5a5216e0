/* SPDX-License-Identifier: MIT */
/*
 * job_share.c - what the processes of a job share, checked before its set is
 * made (job.h).
 *
 * A tree's restore gives back shared the pipes and sockets between its
 * processes, the files they hold open (one open file description where they
 * held one: kcmp() tells, job_files_rt.c; where it is refused, one file at
 * one position with the same flags is taken as one), the shared memory they
 * map (anonymous or a memfd), the System V objects they use (made once, in
 * the tree's IPC namespace), and the terminal or files of the restorer's own
 * standard streams. A removed file or memfd open for writing through two
 * open file descriptions (whose contents each image holds) held by two
 * processes would come back as one copy each, and the processes would no
 * longer see each other's work: silently wrong. So would a System V object
 * that a process outside the set made (a set or queue: the library notes
 * which process made it) or attaches (a segment: the kernel counts its
 * attaches): the restore makes it again in a namespace of its own, where
 * that process would never see it. Such a set is not made, and the refusal
 * names the processes and the object. Each
 * member notes these objects as its image is written, in its slot.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "core/job.h"
#include "core/sc_core.h"
#include "core/sc_fds.h"
#include "core/sc_sysv.h"
#include "format/sc_log.h"
#include "selfckpt.h"

static const struct sc_job_member *noting;

void sc_job_noting(const struct sc_job_member *jm)
{
	noting = jm;
	if (jm)
		jm->area->slot[jm->index].n_objects = 0;
}

const struct sc_job_member *sc_job_noted(void)
{
	return noting;
}

static void note(const struct sc_job_object *o)
{
	struct sc_job_slot *s = &noting->area->slot[noting->index];

	if (s->n_objects < 0)
		return;
	if (s->n_objects >= SC_JOB_OBJECTS) {
		s->n_objects = -1;
		return;
	}
	s->objects[s->n_objects++] = *o;
}

/* A standard descriptor that stays the restorer's: shared by the whole tree as it was. */
static bool restorers_own(const struct sc_fd *f)
{
	return f->fd <= 2 && !(f->fd_flags & SC_FD_OWN_STDIO);
}

void sc_job_note_fds(const struct sc_fd *fds, size_t n)
{
	if (!noting)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct sc_fd *f = &fds[i];
		struct sc_job_object o = { .fd = f->fd, .dev = f->dev, .ino = f->inode,
					   .pos = f->pos, .flags = f->open_flags };
		int acc = f->open_flags & O_ACCMODE;

		if ((f->kind == SC_FD_DELETED || f->kind == SC_FD_MEMFD) &&
			   acc != O_RDONLY && !restorers_own(f)) {
			o.kind = SC_JOB_FILE_W;
		} else {
			continue;
		}
		note(&o);
	}
}

bool sc_job_in_checkpoint(void)
{
	return noting != NULL;
}

void sc_job_note_sysv(uint32_t kind, int32_t id, bool made, uint32_t attaches, uint32_t nattch)
{
	if (noting)
		note(&(struct sc_job_object){ .kind = SC_JOB_SYSV, .sysv_kind = kind,
					      .sysv_id = id, .made = made, .attaches = attaches,
					      .nattch = nattch });
}

/* The open file description of descriptor @fd of process @pid, where kcmp() told; or 0. */
static uint32_t description(const struct sc_job_area *x, int32_t pid, int32_t fd)
{
	for (int i = 0; i < x->n_descs; i++)
		if (x->descs[i].pid == pid && x->descs[i].fd == fd)
			return x->descs[i].desc;
	return 0;
}

/*
 * Do @a (of process @p) and @b (of process @q) stand for one file that cannot
 * come back shared: two open file descriptions of it, each with its own copy
 * of the contents in its image? One description comes back as one.
 */
static bool clash(const struct sc_job_area *x, const struct sc_job_slot *p,
		  const struct sc_job_object *a, const struct sc_job_slot *q,
		  const struct sc_job_object *b)
{
	if (a->kind != SC_JOB_FILE_W || b->kind != SC_JOB_FILE_W || a->dev != b->dev ||
	    a->ino != b->ino)
		return false;
	/* known: the restore makes the file once, each description of it once */
	if (x->descs_exact)
		return !description(x, p->pid, a->fd) || !description(x, q->pid, b->fd);
	/* unknown: the restore takes one at one position with the same flags as one */
	return a->pos != b->pos || a->flags != b->flags;
}

static int refuse_file(const struct sc_job_slot *x, const struct sc_job_object *a,
		       const struct sc_job_slot *y, const struct sc_job_object *b)
{
	return sc_err(SELFCKPT_EHOST, "descriptor %d of process %d ('%s') and descriptor %d of "
		      "process %d ('%s') are one removed file or memfd (inode %llu) open for "
		      "writing twice (two open file descriptions), which a process tree does not "
		      "bring back shared yet: no image is written", a->fd, (int)x->pid, x->prog, b->fd,
		      (int)y->pid, y->prog, (unsigned long long)a->ino);
}

static int compare(const struct sc_job_area *a, const struct sc_job_slot *x,
		   const struct sc_job_slot *y)
{
	for (int i = 0; i < x->n_objects; i++)
		for (int k = 0; k < y->n_objects; k++)
			if (clash(a, x, &x->objects[i], y, &y->objects[k]))
				return refuse_file(x, &x->objects[i], y, &y->objects[k]);
	return 0;
}

static bool runs(const struct sc_job_slot *s)
{
	return s->pid > 0 && s->state != SC_MEMBER_ZOMBIE;
}

/*
 * What the set's images say of System V object @o: made by one of them,
 * attaches in all, and the kernel's count of them. Each process read that
 * count as it froze, and a process that froze earlier may have its snapshot
 * (a copy, attached too) by then: the first to read it, the lowest count,
 * saw none.
 */
static void tally(const struct sc_job_area *a, const struct sc_job_object *o, bool *made,
		  uint32_t *attaches, uint32_t *nattch)
{
	*made = false;
	*attaches = 0;
	*nattch = o->nattch;
	for (int i = 0; i < a->n; i++) {
		const struct sc_job_slot *s = &a->slot[i];

		for (int k = 0; runs(s) && k < s->n_objects; k++) {
			const struct sc_job_object *p = &s->objects[k];

			if (p->kind != SC_JOB_SYSV || p->sysv_kind != o->sysv_kind ||
			    p->sysv_id != o->sysv_id)
				continue;
			*made |= p->made != 0;
			*attaches += p->attaches;
			*nattch = p->nattch < *nattch ? p->nattch : *nattch;
		}
	}
}

/* A System V object that @s's image holds and that a process outside the set uses. */
static int check_sysv(const struct sc_job_area *a, const struct sc_job_slot *s,
		      const struct sc_job_object *o)
{
	uint32_t attaches, nattch;
	bool made;

	tally(a, o, &made, &attaches, &nattch);
	if (o->sysv_kind == SC_SYSV_SHM && attaches < nattch)
		return sc_err(SELFCKPT_EHOST, "System V shared memory segment %d, which process %d "
			      "('%s') holds, is attached %u time%s by processes outside the job "
			      "(or ended): it would come back without them, so no image is written",
			      (int)o->sysv_id, (int)s->pid, s->prog, nattch - attaches,
			      nattch - attaches == 1 ? "" : "s");
	if (o->sysv_kind != SC_SYSV_SHM && !made)
		return sc_err(SELFCKPT_EHOST, "System V %s %d, which process %d ('%s') uses, was "
			      "made by a process outside the job (or one that ended or started "
			      "another program): it would come back without it, so no image is "
			      "written", sc_sysv_kind_name(o->sysv_kind), (int)o->sysv_id,
			      (int)s->pid, s->prog);
	return 0;
}

static int check_sysv_all(const struct sc_job_area *a)
{
	int err = 0;

	for (int i = 0; i < a->n && !err; i++)
		for (int k = 0; runs(&a->slot[i]) && k < a->slot[i].n_objects && !err; k++)
			if (a->slot[i].objects[k].kind == SC_JOB_SYSV)
				err = check_sysv(a, &a->slot[i], &a->slot[i].objects[k]);
	return err;
}

/* What descriptor @d is, as its link says ("anon_inode:[eventfd]"), into @buf; or "?". */
static const char *object_name(const struct sc_job_desc *d, char *buf, size_t size)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)d->pid, d->fd);
	n = readlink(path, buf, size - 1);
	buf[n > 0 ? n : 0] = '\0';
	return n > 0 ? buf : "?";
}

/* An eventfd, timerfd, epoll, signalfd or inotify object that two processes share. */
static int refuse_object(const struct sc_job_area *a)
{
	const struct sc_job_desc *p = a->object_pair;
	char name[64];

	return sc_err(SELFCKPT_EHOST, "descriptor %d of process %d and descriptor %d of process "
		      "%d are one %s object (an eventfd, timer, epoll, signalfd or inotify "
		      "descriptor shared across fork()), which a process tree does not bring back "
		      "shared: each would get a copy of its own, so no image is written",
		      p[0].fd, (int)p[0].pid, p[1].fd, (int)p[1].pid,
		      object_name(&p[0], name, sizeof(name)));
}

int sc_job_check_shares(const struct sc_job_area *a)
{
	int err = 0;

	if (a->objects_shared)
		return refuse_object(a);

	for (int i = 0; i < a->n && !err; i++) {
		const struct sc_job_slot *x = &a->slot[i];

		if (!runs(x))
			continue;
		if (x->n_objects < 0)
			return sc_err(SELFCKPT_EHOST, "process %d ('%s') holds more than %d removed "
				      "files or memfds open for writing and System V objects, more "
				      "than a process tree's checkpoint can check: no image is written",
				      (int)x->pid, x->prog, SC_JOB_OBJECTS);
		for (int k = i + 1; k < a->n && !err; k++)
			if (runs(&a->slot[k]))
				err = compare(a, x, &a->slot[k]);
	}
	return err ? err : check_sysv_all(a);
}
