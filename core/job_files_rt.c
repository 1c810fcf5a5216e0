/* SPDX-License-Identifier: MIT */
/*
 * job_files_rt.c - which descriptors of different processes of the job are
 * one open file description (job.h), found while every process is stopped.
 *
 * A child inherits its parent's open files: one description, one offset,
 * which either process moves for both. Two processes that opened one file
 * each hold two descriptions, each with its own offset, even where both
 * stand at the same place. Nothing but the kernel can tell these apart, and
 * it does so through kcmp(KCMP_FILE), which any process may ask of processes
 * of its own user. The regular files (memfds and removed files among them)
 * that processes of the job hold are listed by file; only a file that two
 * processes or more hold is asked about, each descriptor against one of each
 * description found so far.
 *
 * The objects of the anonymous inode (eventfd, timerfd, signalfd, epoll,
 * inotify: all on one inode) are asked about too: one that two processes
 * share cannot come back shared, and the job's checkpoint is refused, naming
 * it (job_share.c).
 *
 * Where kcmp() is refused (Docker's default seccomp profile refuses it
 * without CAP_SYS_PTRACE), the processes themselves tell: a flag a process
 * sets on a description (O_NONBLOCK, toggled by the process that holds the
 * descriptor, asked through the area while it waits stopped) shows in
 * /proc/PID/fdinfo of every descriptor of that description, and of no other;
 * it is toggled back at once. One toggle and one back per description of a
 * file two processes hold. Where there are more descriptors than the tables
 * hold, or a process does not answer, nothing is known (descs_exact stays
 * 0): the restore then takes descriptors of one file at one position with the
 * same flags as one description, as before.
 *
 * Stage contract: runs in the coordinator while every other thread of it is
 * stopped (possibly inside malloc): raw system calls and static buffers only.
 */
#include <fcntl.h>
#include <linux/kcmp.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "core/job.h"
#include "core/proc_fds.h"
#include "core/sc_sys.h"

#define HELD_MAX 16384 /* regular-file descriptors of the job looked at */
#define PROBE_WAIT_MS 2000 /* for a stopped process to toggle a flag asked of it */
#define FUTEX_WAKE_SHARED 1
#define S_IFMT_ 0170000
#define S_IFREG_ 0100000

struct held_file {
	uint64_t dev, ino;
	int32_t pid, fd;
	uint32_t desc; /* 0 until known */
	int32_t anon;  /* an object of the anonymous inode: eventfd, timerfd, epoll ... */
};

static struct held_file held[HELD_MAX];
static int n_held;
static int32_t reps[HELD_MAX]; /* a run's descriptions, one descriptor each, in kcmp() order */
static int8_t was_nonblock[HELD_MAX]; /* before a toggle, without kcmp() */

/* "/proc/<pid>/fd/<fd>" into @path (room for 80). */
static void fd_path(char *path, int32_t pid, int fd)
{
	int k = 0;

	sc_path_number(path, "/proc/", pid, "/fd/");
	while (path[k])
		k++;
	sc_path_number(path + k, "", fd, "");
}

/* One descriptor of process *@ctx: kept where it is a regular file; -1 past HELD_MAX. */
static int take_file(void *ctx, long dir, const char *name, int fd)
{
	int32_t pid = *(const int32_t *)ctx;
	char path[80];
	struct stat st;

	(void)dir;
	(void)name;
	/* the file itself, through the link: dev and inode as the kernel has them */
	fd_path(path, pid, fd);
	if (sc_sys4(SYS_newfstatat, AT_FDCWD, (long)path, (long)&st, 0) < 0 ||
	    ((st.st_mode & S_IFMT_) != S_IFREG_ && (st.st_mode & S_IFMT_) != 0))
		return 0;
	if (n_held >= HELD_MAX)
		return -1;
	held[n_held++] = (struct held_file){ st.st_dev, st.st_ino, pid, fd, 0,
					     (st.st_mode & S_IFMT_) == 0 };
	return 0;
}

/* The regular files process @pid holds, into held[]; -1 past HELD_MAX. */
static int list_files(int32_t pid)
{
	return sc_proc_fds_each(pid, take_file, &pid);
}

static int before(const struct held_file *x, const struct held_file *y)
{
	if (x->dev != y->dev)
		return x->dev < y->dev;
	if (x->ino != y->ino)
		return x->ino < y->ino;
	return x->pid < y->pid || (x->pid == y->pid && x->fd < y->fd);
}

/* Shell sort by file, then process: no allocation, few moves. */
static void sort_held(void)
{
	for (int gap = n_held / 2; gap > 0; gap /= 2)
		for (int i = gap; i < n_held; i++) {
			struct held_file t = held[i];
			int j = i;

			for (; j >= gap && before(&t, &held[j - gap]); j -= gap)
				held[j] = held[j - gap];
			held[j] = t;
		}
}

/*
 * The descriptions of the run held[@a, @b) (one file, several processes):
 * each descriptor joins the first earlier one kcmp() calls the same. Return:
 * the next free description number, or 0 where kcmp() failed.
 */
static uint32_t describe_run(int a, int b, uint32_t next)
{
	int n = 0;

	for (int i = a; i < b; i++) {
		int lo = 0, hi = n;

		while (lo < hi && !held[i].desc) { /* a binary search, in kcmp()'s order */
			const struct held_file *r = &held[reps[(lo + hi) / 2]];
			long c = sc_sys5(SYS_kcmp, held[i].pid, r->pid, KCMP_FILE, held[i].fd, r->fd);

			if (c < 0)
				return 0;
			if (c == 0)
				held[i].desc = r->desc;
			else if (c == 1)
				hi = (lo + hi) / 2;
			else
				lo = (lo + hi) / 2 + 1;
		}
		if (held[i].desc)
			continue;
		held[i].desc = next++;
		for (int k = n++; k > lo; k--)
			reps[k] = reps[k - 1];
		reps[lo] = i;
	}
	return next;
}

/* ---- without kcmp(): the processes toggle O_NONBLOCK, /proc/PID/fdinfo shows it ---- */

/* Does kcmp() answer here? (A seccomp profile may refuse it: EPERM, or ENOSYS.) */
static bool kcmp_answers(void)
{
	long self = sc_sys0(SYS_getpid);

	return sc_sys5(SYS_kcmp, self, self, KCMP_VM, 0, 0) == 0;
}

static int toggle_own(int fd)
{
	long flags = sc_sys2(SYS_fcntl, fd, F_GETFL);

	if (flags < 0)
		return -1;
	return sc_sys3(SYS_fcntl, fd, F_SETFL, flags ^ O_NONBLOCK) < 0 ? -1 : 0;
}

/* Is O_NONBLOCK set on descriptor @fd of @pid, as its fdinfo says: 1, 0, or -1. */
static int nonblock_of(int32_t pid, int fd)
{
	char path[96], text[512];
	const char *p;
	long f, n;
	int k = 0;
	uint64_t flags = 0;

	sc_path_number(path, "/proc/", pid, "/fdinfo/");
	while (path[k])
		k++;
	sc_path_number(path + k, "", fd, "");
	if ((f = sc_sys4(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0)) < 0)
		return -1;
	n = sc_sys3(SYS_read, f, (long)text, sizeof(text) - 1);
	sc_sys1(SYS_close, f);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	for (p = text; *p; p++)
		if ((p == text || p[-1] == '\n') && p[0] == 'f' && p[1] == 'l' && p[2] == 'a' &&
		    p[3] == 'g' && p[4] == 's' && p[5] == ':')
			break;
	if (!*p)
		return -1;
	for (p += 6; *p == ' ' || *p == '\t'; p++)
		;
	for (; *p >= '0' && *p <= '7'; p++)
		flags = flags * 8 + (uint64_t)(*p - '0');
	return (flags & O_NONBLOCK) != 0;
}

/* Toggle O_NONBLOCK on descriptor @fd of @pid: here, or asked of that process. */
static int toggle(struct sc_job_area *x, int32_t pid, int fd)
{
	int32_t seq, done;
	long until;

	if (pid == (int32_t)sc_sys0(SYS_getpid))
		return toggle_own(fd);
	x->probe_pid = pid;
	x->probe_fd = fd;
	seq = __atomic_add_fetch(&x->probe_seq, 1, __ATOMIC_RELEASE);
	/* the members wait on the phase: woken, each looks whether it is asked */
	sc_sys3(SYS_futex, (long)&x->phase, FUTEX_WAKE_SHARED, 0x7fffffff);
	for (until = sc_job_now_ms() + PROBE_WAIT_MS; sc_job_now_ms() < until;) {
		if ((done = __atomic_load_n(&x->probe_done, __ATOMIC_ACQUIRE)) == seq)
			return 0;
		sc_job_wait(&x->probe_done, done, 10);
	}
	return -1;
}

/*
 * The descriptor this member toggled and was not asked to toggle back yet
 * (the coordinator asks one toggle and one back at a time), or -1: a member
 * whose coordinator gave up between the two puts it back itself.
 */
static int toggled = -1;

void sc_job_answer_probe(struct sc_job_area *a)
{
	int32_t seq = __atomic_load_n(&a->probe_seq, __ATOMIC_ACQUIRE);

	if (seq == __atomic_load_n(&a->probe_done, __ATOMIC_ACQUIRE) ||
	    a->probe_pid != (int32_t)sc_sys0(SYS_getpid))
		return;
	/* one that fails shows nothing: no description joins it */
	if (toggle_own(a->probe_fd) == 0)
		toggled = toggled == a->probe_fd ? -1 : a->probe_fd;
	__atomic_store_n(&a->probe_done, seq, __ATOMIC_RELEASE);
	sc_sys3(SYS_futex, (long)&a->probe_done, FUTEX_WAKE_SHARED, 0x7fffffff);
}

void sc_job_probes_undone(void)
{
	if (toggled >= 0)
		toggle_own(toggled);
	toggled = -1;
}

/*
 * The descriptions of the run held[@a, @b), told by toggles: each descriptor
 * not placed yet starts a description, and every later one whose flag turned
 * with its toggle joins it. The flags are read once before the first toggle:
 * each toggle is undone before the next, so they hold for every one.
 * Return: as describe_run().
 */
static uint32_t describe_run_probed(struct sc_job_area *x, int a, int b, uint32_t next)
{
	for (int k = a; k < b; k++)
		if ((was_nonblock[k] = (int8_t)nonblock_of(held[k].pid, held[k].fd)) < 0)
			return 0;
	for (int i = a; i < b; i++) {
		bool open = false, seen_ok = true;

		if (held[i].desc)
			continue;
		held[i].desc = next++;
		for (int k = i + 1; k < b; k++)
			open |= !held[k].desc;
		if (!open)
			continue;
		if (toggle(x, held[i].pid, held[i].fd) < 0)
			return 0;
		for (int k = i + 1; k < b; k++) {
			int now = held[k].desc ? 0 : nonblock_of(held[k].pid, held[k].fd);

			seen_ok &= now >= 0;
			if (!held[k].desc && now >= 0 && now != was_nonblock[k])
				held[k].desc = held[i].desc;
		}
		if (toggle(x, held[i].pid, held[i].fd) < 0 || !seen_ok)
			return 0; /* back as it was where the process answers; nothing known */
	}
	return next;
}

/* Is @pid a child forked from a GPU process (its driver's objects dead in it)? */
static bool gpu_copy(const struct sc_job_area *x, int32_t pid)
{
	for (int i = 0; i < x->n; i++)
		if (x->slot[i].pid == pid)
			return x->slot[i].gpu_copy != 0;
	return false;
}

/*
 * An eventfd, timerfd, epoll or inotify object of the run held[@a, @b) two
 * processes share; not one the GPU driver made in a process whose children
 * inherited it, dead in them (it comes back a copy each, none used).
 */
static void find_shared_object(struct sc_job_area *x, int a, int b)
{
	for (int i = a; i < b && !x->objects_shared; i++) {
		if (gpu_copy(x, held[i].pid))
			continue;
		for (int k = a; k < b && !x->objects_shared; k++)
			if (held[k].desc == held[i].desc && held[k].pid != held[i].pid &&
			    !gpu_copy(x, held[k].pid)) {
				x->object_pair[0] = (struct sc_job_desc){ held[i].pid, held[i].fd,
									  held[i].desc };
				x->object_pair[1] = (struct sc_job_desc){ held[k].pid, held[k].fd,
									  held[k].desc };
				x->objects_shared = 1;
			}
	}
}

/*
 * The descriptors of held[@a, @b), a file two processes hold, into @x: all of
 * them, so that the restore makes each of its descriptions once, and a memfd
 * or removed file once for all.
 */
static int keep_run(struct sc_job_area *x, int a, int b)
{
	for (int i = a; i < b; i++) {
		if (x->n_descs >= SC_JOB_DESCS)
			return -1;
		x->descs[x->n_descs++] = (struct sc_job_desc){ held[i].pid, held[i].fd,
							       held[i].desc };
	}
	return 0;
}

void sc_job_find_descriptions(struct sc_job_area *x)
{
	uint32_t next = 1;
	bool by_kcmp = kcmp_answers();

	x->descs_exact = 0;
	x->n_descs = 0;
	x->objects_shared = 0;
	n_held = 0;
	for (int i = 0; i < x->n; i++)
		if (x->slot[i].pid > 0 && x->slot[i].state != SC_MEMBER_ZOMBIE &&
		    list_files(x->slot[i].pid) < 0)
			return;
	sort_held();
	for (int a = 0, b; a < n_held; a = b) {
		bool several = false;

		for (b = a + 1; b < n_held && held[b].dev == held[a].dev &&
				held[b].ino == held[a].ino; b++)
			several |= held[b].pid != held[a].pid;
		if (!several)
			continue;
		next = by_kcmp ? describe_run(a, b, next) : describe_run_probed(x, a, b, next);
		if (!next) {
			x->n_descs = 0;
			return;
		}
		if (held[a].anon)
			find_shared_object(x, a, b);
		else if (keep_run(x, a, b) < 0) {
			x->n_descs = 0;
			return;
		}
	}
	x->descs_exact = 1;
}
