/* SPDX-License-Identifier: MIT */
/*
 * job_share.c - what the processes of a job share, checked before its set is
 * made (job.h).
 *
 * A tree's restore gives back shared the pipes and sockets between its
 * processes, the files they hold open (one open file where they are at one
 * position), the shared memory they map (anonymous or a memfd), and the
 * terminal or files of the restorer's own standard streams. System V shared
 * memory, or a removed file or memfd open for writing at different positions
 * (two open files of one file whose contents each image holds) held by two
 * processes would come back as one copy each, and the processes would no
 * longer see each other's work: silently wrong. So a set in which two processes hold one of
 * them is not made, and the refusal names both processes and the object.
 * Each member notes these objects as its image is written, in its slot.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "core/job.h"
#include "core/sc_core.h"
#include "core/sc_fds.h"
#include "format/sc_log.h"
#include "selfckpt.h"

static const struct sc_job_member *noting;

void sc_job_noting(const struct sc_job_member *jm)
{
	noting = jm;
	if (jm)
		jm->area->slot[jm->index].n_objects = 0;
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

void sc_job_note_maps(pid_t child)
{
	struct sc_vma *v;
	size_t n;

	if (!noting || sc_maps_read(child, &v, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		if ((v[i].flags & SC_VMA_SYSV) && !sc_skip_covers(v[i].start, v[i].end))
			note(&(struct sc_job_object){ .kind = SC_JOB_MAP, .dev = v[i].dev,
						      .ino = v[i].inode, .start = v[i].start });
	sc_maps_free(v, n);
}

/* Do @a (of one process) and @b (of another) stand for one object? */
static bool same(const struct sc_job_object *a, const struct sc_job_object *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == SC_JOB_FILE_W) /* at one position: one open file, which comes back */
		return a->dev == b->dev && a->ino == b->ino &&
		       (a->pos != b->pos || a->flags != b->flags);
	return a->dev == b->dev && a->ino == b->ino;
}

static int refuse(const struct sc_job_slot *x, const struct sc_job_object *a,
		  const struct sc_job_slot *y, const struct sc_job_object *b)
{
	if (a->kind == SC_JOB_MAP)
		return sc_err(SELFCKPT_EHOST, "processes %d ('%s', at 0x%llx) and %d ('%s', at "
			      "0x%llx) share System V shared memory (segment %llu), which a process "
			      "tree does not bring back yet: no image is written", (int)x->pid, x->prog,
			      (unsigned long long)a->start, (int)y->pid, y->prog,
			      (unsigned long long)b->start, (unsigned long long)a->ino);
	return sc_err(SELFCKPT_EHOST, "descriptor %d of process %d ('%s') and descriptor %d of "
		      "process %d ('%s') are one removed file or memfd (inode %llu) open for "
		      "writing at two positions, which a process tree does not bring back "
		      "shared yet: no image is written", a->fd, (int)x->pid, x->prog, b->fd, (int)y->pid, y->prog,
		      (unsigned long long)a->ino);
}

static int compare(const struct sc_job_slot *x, const struct sc_job_slot *y)
{
	for (int i = 0; i < x->n_objects; i++)
		for (int k = 0; k < y->n_objects; k++)
			if (same(&x->objects[i], &y->objects[k]))
				return refuse(x, &x->objects[i], y, &y->objects[k]);
	return 0;
}

int sc_job_check_shares(const struct sc_job_area *a)
{
	int err = 0;

	for (int i = 0; i < a->n && !err; i++) {
		const struct sc_job_slot *x = &a->slot[i];

		if (x->pid <= 0 || x->state == SC_MEMBER_ZOMBIE)
			continue;
		if (x->n_objects < 0)
			return sc_err(SELFCKPT_EHOST, "process %d ('%s') holds more than %d removed files or "
				      "memfds open for writing and System V attaches, more than a "
				      "process tree's checkpoint can check: no image is written",
				      (int)x->pid, x->prog, SC_JOB_OBJECTS);
		for (int k = i + 1; k < a->n && !err; k++)
			if (a->slot[k].pid > 0 && a->slot[k].state != SC_MEMBER_ZOMBIE)
				err = compare(x, &a->slot[k]);
	}
	return err;
}
