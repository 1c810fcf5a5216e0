/* SPDX-License-Identifier: MIT */
/*
 * restore.c - the order of a restore's steps (sc_restore.h).
 *
 * Stage 1 (this file and restore_*.c) reads and checks the whole image, stages
 * every mapping's content in a hole of the address space, and refuses with a
 * clear message, before it changes anything, an image that is damaged or that
 * this machine cannot take. Then it sets the descriptors, working directory
 * and limits, and jumps into the restorer blob (restorer_rt.c), which replaces
 * this program with the saved one. The process keeps this program's pid and
 * standard streams.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>

#include "core/job_set.h"
#include "core/restore/restore_internal.h"
#include "core/restore/sc_restore.h"
#include "format/sc_log.h"
#include "selfckpt.h"

/*
 * An image with System V objects comes back only where they get their ids
 * again, in an IPC namespace of the restore's own: never under other ids, or
 * among another program's objects.
 */
static int no_ipc_namespace(const char *path, const char *why)
{
	return sc_err(SELFCKPT_EIPCNS, "'%s' holds System V IPC objects (shared memory, "
		      "semaphores or message queues), which come back with their ids only in an "
		      "IPC namespace of the restore's own; %s: nothing was restored", path, why);
}

/* The parents of an incremental image: open from before the namespaces to the jump. */
static struct sc_chain chain;

/* Stage 1, before the point of no return: every refusal comes back from here. */
static int prepare(struct sc_restore_opts *o, struct image *im, struct plan *plan)
{
	bool same_ids = false;
	struct sc_peek peek;
	int fd, err, verdict;
	double t[5];

	t[0] = sc_log_seconds();
	if (sc_probe_clone3() == -EPERM) {
		/* glibc falls back to clone only on ENOSYS: no thread would start */
		sc_log(SC_LOG_DEBUG, "restore: clone3 is refused with EPERM: reading on this "
		       "thread only");
		o->threads = 1;
	}
	err = sc_image_open(o->path, &fd);
	if (!err)
		err = sc_image_peek(fd, o->path, &peek);
	if (!err) /* before the namespaces: inside one, root may no longer open them */
		err = sc_chain_open(o->path, fd, &chain);
	if (!err && o->check_machine)
		err = o->check_machine(fd, o->path, o->threads);
	if (err < 0)
		return err;
	/* From here on, in the same-ids case, this is the process at the saved pid. */
	t[1] = sc_log_seconds();
	if (peek.sysv && (o->new_ids || peek.pid <= 1))
		return no_ipc_namespace(o->path, "it restores with new ids (--new-ids or "
				       "SELFCKPT_NEW_IDS=1), and System V objects come back only "
				       "in the same-ids mode's namespaces");
	sc_loginuid_restore(&peek);
	if (o->in_tree)
		same_ids = true; /* at its pid already (tree_restore.c) */
	else if (!o->new_ids && peek.pid > 1)
		same_ids = sc_same_ids_enter(peek.pid, fd, peek.sysv) == 0;
	if (peek.sysv && !same_ids)
		return no_ipc_namespace(o->path, "the namespaces of the same-ids mode are not "
				       "allowed here (see the warning above)");
	if (same_ids)
		sc_loginuid_check_namespace(&peek);
	t[2] = sc_log_seconds();
	err = sc_image_load_fd(im, fd, o->path);
	if (!err && (err = sc_chain_load(&chain, o->path)) == 0)
		im->chain = &chain;
	if (!err && !o->in_tree) /* a tree's top made the objects of all its images */
		err = sc_sysv_restore(im);
	if (!err)
		err = sc_plan_build(im, plan);
	plan->same_ids = same_ids;
	if (!err)
		err = sc_probe_mm_map(im, false);
	t[3] = sc_log_seconds();
	if (!err)
		err = sc_image_verify_start(im);
	if (!err)
		err = sc_plan_fill(im, plan, o->threads);
	verdict = sc_image_verify_finish(im);
	t[4] = sc_log_seconds();
	if (!err)
		err = verdict;
	if (!err)
		sc_log(SC_LOG_DEBUG, "restore: '%s' checked in %.3f s, ids %.3f s, records "
		       "loaded and mappings planned %.3f s, memory staged and the file verified "
		       "%.3f s", o->path, t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3]);
	return err;
}

/*
 * A signal sent while the process is being restored (a checkpoint trigger,
 * a batch system's SIGTERM) waits, pending, until the restored program runs
 * with its own handlers and mask: delivered now, it would find the
 * restorer's default actions and end the restore. The processes that only
 * pass signals on in same-ids mode take them again (restore_ids.c); a
 * refused restore exits, and they go with it.
 */
static void block_signals(void)
{
	sigset_t all;

	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
}

int sc_restore(const struct sc_restore_opts *opts)
{
	struct sc_restore_opts o = *opts;
	struct image im;
	struct plan plan;
	int err;

	block_signals();
	if (!o.in_tree && sc_set_is_set(o.path))
		return sc_restore_tree(&o);
	err = prepare(&o, &im, &plan);
	if (o.staged)
		err = o.staged(err);
	if (!err)
		err = sc_restore_jump(&im, &plan);
	/* Only refusals come back here: a restore that succeeds never returns. */
	return err;
}
