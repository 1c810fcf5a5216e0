/* SPDX-License-Identifier: MIT */
/*
 * job_save.c - selfckpt_save(path) in a process of a job below its top
 * (job.h): the whole job is checkpointed into a set at the path, as the
 * top's own call does, and the call returns as the top's would: SELFCKPT_SAVED
 * once the set is complete, SELFCKPT_RESTORED in the restored process.
 *
 * The request goes up the tree as the "at once" signal queued with a value:
 * SC_JOB_SAVE_MAGIC, the asking process's pid and the number of a memfd of
 * its own that holds the path. Each process passes it to its parent while
 * that is of the job; the top reads the path through /proc/PID/fd, closes it
 * again (the memfd is no object of its own image), checkpoints the job, and
 * writes the result into the memfd. The asking thread waits on that word
 * meanwhile and is saved waiting, with the rest of its process; in a restored
 * process its checkpoint thread, back from the job's image, writes "restored"
 * there instead (sc_job_save_restored()).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/job.h"
#include "core/trigger_internal.h"
#include "format/sc_log.h"
#include "selfckpt.h"

struct save_request {
	int32_t result; /* futex, shared: 0 while under way, then SELFCKPT_SAVED or -error */
	char path[PATH_MAX];
};

/* This process's request under way, in its memfd: what a restored process answers. */
static struct save_request *pending;

static void answer(struct save_request *r, int32_t result)
{
	__atomic_store_n(&r->result, result, __ATOMIC_RELEASE);
	syscall(SYS_futex, &r->result, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* @path made absolute: the top resolves it in its own working directory. */
static int absolute(const char *path, char *out, size_t size)
{
	char cwd[PATH_MAX];

	if (path[0] == '/') {
		if ((size_t)snprintf(out, size, "%s", path) >= size)
			return sc_err(ENAMETOOLONG, "selfckpt_save('%s'): the path is too long", path);
		return 0;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return sc_err(errno, "selfckpt_save('%s'): cannot tell the working directory: %s",
			      path, strerror(errno));
	if ((size_t)snprintf(out, size, "%s/%s", cwd, path) >= size)
		return sc_err(ENAMETOOLONG, "selfckpt_save('%s'): the path is too long", path);
	return 0;
}

/* The request's memfd, mapped: its number into *@fd, or NULL (reported). */
static struct save_request *make_request(const char *path, int *fd)
{
	struct save_request *r;

	*fd = memfd_create("selfckpt-save", MFD_CLOEXEC);
	if (*fd > 0xffff) { /* the request's value has 16 bits for it */
		close(*fd);
		*fd = -1;
		errno = EMFILE;
	}
	if (*fd < 0 || ftruncate(*fd, sizeof(*r)) < 0 ||
	    (r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0)) ==
		    MAP_FAILED) {
		sc_err(errno, "selfckpt_save('%s'): cannot ask the job's top: %s", path,
		       strerror(errno));
		if (*fd >= 0)
			close(*fd);
		return NULL;
	}
	if (absolute(path, r->path, sizeof(r->path)) < 0) {
		munmap(r, sizeof(*r));
		close(*fd);
		return NULL;
	}
	return r;
}

/* Wait for the answer; the job's top may take as long as its set takes. */
static int32_t wait_answer(struct save_request *r)
{
	struct timespec tick = { 0, 200 * 1000 * 1000 };
	int32_t v;

	while (!(v = __atomic_load_n(&r->result, __ATOMIC_ACQUIRE))) {
		if (getppid() == 1)
			return sc_err(ECHILD, "selfckpt_save('%s'): the job's top ended before it "
				      "answered", r->path);
		syscall(SYS_futex, &r->result, FUTEX_WAIT, 0, &tick, NULL, 0);
	}
	return v;
}

int sc_job_save_up(const char *path)
{
	union sigval v;
	struct save_request *r;
	int fd, ret;

	if (__atomic_load_n(&pending, __ATOMIC_ACQUIRE))
		return sc_err(EBUSY, "selfckpt_save('%s'): another thread of this process is "
			      "saving the job already", path);
	if (!(r = make_request(path, &fd)))
		return -EMFILE;
	__atomic_store_n(&pending, r, __ATOMIC_RELEASE);
	v.sival_ptr = (void *)(((uintptr_t)SC_JOB_SAVE_MAGIC << 48) | ((uintptr_t)fd << 32) |
			       (uint32_t)getpid());
	if (sigqueue(getppid(), sc_trigger.sig_now, v) < 0)
		ret = sc_err(errno, "selfckpt_save('%s'): cannot ask the parent, process %d: %s",
			     path, (int)getppid(), strerror(errno));
	else
		ret = wait_answer(r);
	__atomic_store_n(&pending, NULL, __ATOMIC_RELEASE);
	munmap(r, sizeof(*r));
	close(fd);
	if (ret < 0 && ret != -ECHILD)
		sc_err(-ret, "selfckpt_save('%s'): the checkpoint of the job failed (the job's top "
		       "said why)", path);
	return ret;
}

void sc_job_save_restored(void)
{
	struct save_request *r = __atomic_load_n(&pending, __ATOMIC_ACQUIRE);

	if (r)
		answer(r, SELFCKPT_RESTORED);
}

/* The request of process @from in its memfd @fd, mapped here; NULL where it is gone. */
static struct save_request *open_request(pid_t from, int fd)
{
	return sc_job_map_of(from, fd, sizeof(struct save_request),
			     "read its selfckpt_save() request");
}

void sc_job_save_serve(pid_t from, int fd)
{
	char path[PATH_MAX], why[64];
	struct save_request *r = open_request(from, fd);
	int ret;

	if (!r)
		return;
	snprintf(path, sizeof(path), "%.*s", (int)sizeof(r->path) - 1, r->path);
	munmap(r, sizeof(*r)); /* no part of this process's image */
	snprintf(why, sizeof(why), "selfckpt_save() in process %d", (int)from);
	ret = sc_job_save_at(path, why);
	if (ret == SELFCKPT_RESTORED)
		return; /* the asking process, restored too, answers itself */
	if (ret < 0)
		sc_log(SC_LOG_WARN, "the checkpoint of the job into '%s' that process %d asked "
		       "for failed: %s", path, (int)from, selfckpt_last_error());
	if ((r = open_request(from, fd))) {
		answer(r, ret < 0 ? ret : SELFCKPT_SAVED);
		munmap(r, sizeof(*r));
	}
}
