/* SPDX-License-Identifier: MIT */
/*
 * fd_owner_restore.c - where a description with O_ASYNC sends its signal
 * (F_SETOWN_EX, F_SETSIG), set again once the descriptors are back.
 *
 * The owner is a process, a process group or a thread by its id. In a
 * restore with the saved ids (a pid namespace of the restore's own) every id
 * is what it was. With new ids only the process's own id is known again (the
 * owner it most often is: a program that asks for SIGIO on its own
 * sockets); a signal to another process is not sent to whatever process has
 * that number now: it is dropped, with a warning. In a tree an owner that is
 * a process restored later is set by that process, which holds the same
 * description, so a process not there yet is no failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "core/sc_fds.h"
#include "format/sc_log.h"

/* The owner's id now, where the image's process was @was; 0: none to set. */
static pid_t owner_now(const struct sc_fd *f, pid_t was)
{
	if (getpid() == was)
		return f->owner_pid; /* the saved ids: every id is as it was */
	if (f->owner_pid == was && f->owner_type != F_OWNER_PGRP)
		return getpid(); /* the process itself, or its main thread */
	sc_log(SC_LOG_WARN, "descriptor %d ('%s') sent its signal to %s %d, which has another "
	       "id after a restore with new ids: it sends none now", f->fd,
	       f->path ? f->path : "?", f->owner_type == F_OWNER_PGRP ? "process group" :
	       "process", (int)f->owner_pid);
	return 0;
}

void sc_fd_owners_restore(const struct sc_fd *fds, size_t n, pid_t was)
{
	for (size_t i = 0; i < n; i++) {
		const struct sc_fd *f = &fds[i];
		struct f_owner_ex owner = { .type = (enum __pid_type)f->owner_type };

		if (!(f->open_flags & O_ASYNC) || (!f->owner_pid && !f->owner_sig))
			continue;
		if (f->owner_sig && fcntl(f->fd, F_SETSIG, (int)f->owner_sig) < 0)
			sc_log(SC_LOG_WARN, "cannot make descriptor %d send signal %u again: %s",
			       f->fd, f->owner_sig, strerror(errno));
		if (!f->owner_pid || !(owner.pid = owner_now(f, was)) ||
		    fcntl(f->fd, F_SETOWN_EX, &owner) == 0)
			continue;
		if (errno == ESRCH) /* in a tree, a process restored later sets it */
			sc_log(SC_LOG_DEBUG, "descriptor %d: the owner %d of its signal is not there "
			       "(yet)", f->fd, (int)owner.pid);
		else
			sc_log(SC_LOG_WARN, "cannot make descriptor %d send its signal to %d again: "
			       "%s", f->fd, (int)owner.pid, strerror(errno));
	}
}
