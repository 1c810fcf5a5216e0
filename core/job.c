/* SPDX-License-Identifier: MIT */
/*
 * job.c - the checkpoint of a job (job.h): the coordinator's side, which
 * finds the members, asks them to join and makes their images one set, and
 * a member's side, which joins.
 *
 * The coordinator gathers before it stops itself: it asks its children,
 * then the children each stopped member lists, until every member is
 * stopped. A process that exits meanwhile is a zombie of a stopped parent
 * (recorded as one) or gone (reaped before its parent stopped: not part of
 * the instant). Only then does the coordinator stop its own threads; a child
 * it started in between makes it give the instant up (job_rt.c), and the
 * whole job takes it again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/checkpoint_internal.h"
#include "core/core_internal.h"
#include "core/job.h"
#include "core/job_set.h"
#include "core/sc_exiting.h"
#include "core/sc_settings.h"
#include "core/sc_sys.h"
#include "core/sc_core.h"
#include "core/trigger_internal.h"
#include "format/sc_log.h"
#include "selfckpt.h"

#define JOIN_WAIT_MS 2000      /* for a new child to start the library's thread */
#define GATHER_WAIT_MS 30000   /* for every member to stop */
#define ROUNDS 3               /* instants given up and taken again, at most */
#define FLIGHT_WAIT_MS 2000    /* for the job to accept the connections it made */

/* ---- who belongs ---- */

/* Does @pid run the library's checkpoint thread? */
static bool runs_library(pid_t pid)
{
	char path[320], comm[32];
	struct dirent *e;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return false;
	while (!found && (e = readdir(d))) {
		int fd;
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, e->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		found = n == (ssize_t)strlen(SC_JOB_THREAD_NAME) + 1 &&
			!memcmp(comm, SC_JOB_THREAD_NAME "\n", (size_t)n);
	}
	closedir(d);
	return found;
}

bool sc_job_parent_is_member(void)
{
	pid_t parent = getppid();

	return parent > 1 && runs_library(parent);
}

bool sc_job_has_children(void)
{
	int32_t none[1];

	return sc_job_list_children(none, 0) != 0;
}

/* What /proc/<pid>/stat says: state, group, session and exit code (field 52). */
struct proc_stat {
	char state;
	int pgid, sid, exit_code;
};

static int read_stat(pid_t pid, struct proc_stat *st)
{
	char path[64], buf[1024], *p;
	int fd, field = 3;
	ssize_t n;

	sc_path_number(path, "/proc/", pid, "/stat");
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || !(p = strrchr((buf[n] = '\0', buf), ')')))
		return -EIO;
	*st = (struct proc_stat){ .state = p[2], .exit_code = 0 };
	for (p += 2; p && field <= 52; p = strchr(p, ' '), p = p ? p + 1 : p, field++) {
		if (field == 5)
			st->pgid = atoi(p);
		else if (field == 6)
			st->sid = atoi(p);
		else if (field == 52)
			st->exit_code = atoi(p);
	}
	return 0;
}

/* The program @pid runs, for a message. */
static const char *program_of(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, size - 1);
	if (n <= 0)
		snprintf(buf, size, "?");
	else
		buf[n] = '\0';
	return buf;
}

/* ---- the area ---- */

/* Its length as mapped: whole pages, so that the mapping is left out whole. */
static size_t area_len(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (sizeof(struct sc_job_area) + page - 1) / page * page;
}

static struct sc_job_area *area_create(int *fd)
{
	struct sc_job_area *a;

	*fd = memfd_create("selfckpt-job", MFD_CLOEXEC);
	if (*fd < 0 || ftruncate(*fd, (off_t)area_len()) < 0) {
		sc_err(errno, "cannot make the memory the job's checkpoint shares: %s",
		       strerror(errno));
		if (*fd >= 0)
			close(*fd);
		return NULL;
	}
	a = mmap(NULL, area_len(), PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (a == MAP_FAILED) {
		sc_err(errno, "cannot map the memory the job's checkpoint shares: %s",
		       strerror(errno));
		close(*fd);
		return NULL;
	}
	sc_skip_add((uint64_t)(uintptr_t)a, (uint64_t)(uintptr_t)a + area_len());
	return a;
}

static void area_drop(struct sc_job_area *a)
{
	sc_skip_remove((uint64_t)(uintptr_t)a);
	munmap(a, area_len());
}

/* ---- the coordinator ---- */

struct gather {
	struct sc_job_area *a;
	int fd;     /* the area's, which members open through /proc */
	int sig;    /* the members' "at once" signal */
	int starting; /* members not running the library's thread yet, at the last look */
};

static void zombie_slot(struct sc_job_slot *s, const struct proc_stat *st)
{
	s->pgid = st->pgid;
	s->sid = st->sid;
	s->status = st->exit_code;
	__atomic_store_n(&s->state, SC_MEMBER_ZOMBIE, __ATOMIC_RELEASE);
}

/*
 * @pid, a child of @parent, runs without the library: the checkpoint is
 * refused, or (--leave-out-escaped) it is left out of the job's instant, with
 * whatever it started. Return: the refusal, or 1 where it is left out.
 */
static int escaped(struct sc_job_area *a, pid_t pid, pid_t parent)
{
	char prog[256];

	program_of(pid, prog, sizeof(prog));
	if (!sc_settings()->leave_out_escaped)
		return sc_err(SELFCKPT_EHOST, "process %d ('%s'), a child of %d, runs without "
			      "the selfckpt library (a static program, or one started with the "
			      "environment cleared), so the job cannot be checkpointed whole: no "
			      "image is written (selfckpt-run --leave-out-escaped checkpoints the "
			      "job without it)", (int)pid, prog, (int)parent);
	if (a->n_left >= SC_JOB_CHILDREN)
		return sc_err(SELFCKPT_EHOST, "the job has more than %d processes to leave out "
			      "of its checkpoint: no image is written", SC_JOB_CHILDREN);
	a->left[a->n_left++] = pid;
	sc_log(SC_LOG_WARN, "process %d ('%s'), a child of %d, runs without the selfckpt "
	       "library: left out of the checkpoint of the job, as asked; a restore brings the "
	       "job back without it", (int)pid, prog, (int)parent);
	return 1;
}

/* @pid's command name ("comm"), into @s->prog. */
static void name_slot(struct sc_job_slot *s)
{
	char path[64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)s->pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, s->prog, sizeof(s->prog) - 1);
		close(fd);
	}
	if (n <= 0)
		snprintf(s->prog, sizeof(s->prog), "?");
	else
		s->prog[n - 1] = '\0';
}

/*
 * Is @pid a static program? The kernel names no program interpreter in its
 * auxiliary vector (AT_BASE 0): nothing can load the library into it, so it
 * is escaped at once, not after JOIN_WAIT_MS.
 */
static bool is_static(pid_t pid)
{
	uint64_t av[2 * 48];
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, av, sizeof(av));
	close(fd);
	for (ssize_t i = 0; i + 1 < n / (ssize_t)sizeof(av[0]) && av[i] != AT_NULL; i += 2)
		if (av[i] == AT_BASE)
			return av[i + 1] == 0;
	return false;
}

/* A slot whose process is gone, or left out: no part of the instant. */
static void no_part(struct sc_job_slot *s)
{
	s->pid = -s->pid;
	__atomic_store_n(&s->state, SC_MEMBER_ZOMBIE, __ATOMIC_RELEASE);
}

/* Ask the member of slot @s to join: the "at once" signal, naming its slot and the area. */
static int signal_member(struct gather *g, struct sc_job_slot *s)
{
	union sigval v;

	name_slot(s); /* after an exec, by its new name */
	v.sival_ptr = (void *)(((uintptr_t)SC_JOB_MAGIC << 48) |
			       ((uintptr_t)(s - g->a->slot) << 32) | (uint32_t)g->fd);
	__atomic_store_n(&s->state, SC_MEMBER_ASKED, __ATOMIC_RELEASE);
	if (sigqueue(s->pid, g->sig, v) == 0)
		return 0;
	if (errno == EPERM)
		return sc_err(SELFCKPT_EHOST, "process %d ('%s'), a child of %d, runs as another "
			      "user, so it cannot be asked to join the checkpoint of the job: no "
			      "image is written", (int)s->pid, s->prog, (int)s->ppid);
	return sc_err(errno, "cannot ask process %d to join the checkpoint: %s", (int)s->pid,
		      strerror(errno));
}

/*
 * A child that does not run the library's checkpoint thread yet (one just
 * forked or exec'd starts it at once) is asked once it does, while the rest
 * of the job is asked meanwhile; a static program, or one that did not start
 * it within JOIN_WAIT_MS, escaped. Return: 0, or a refusal.
 */
static int starting(struct gather *g, struct sc_job_slot *s)
{
	struct proc_stat st;
	int err;

	if (read_stat(s->pid, &st) < 0) {
		no_part(s); /* gone: reaped before its parent stopped */
		return 0;
	}
	if (st.state == 'Z') {
		zombie_slot(s, &st);
		return 0;
	}
	if (runs_library(s->pid))
		return signal_member(g, s);
	if (!is_static(s->pid) && sc_job_now_ms() <= s->join_by)
		return 0;
	if ((err = escaped(g->a, s->pid, s->ppid)) < 0)
		return err;
	no_part(s); /* left out, with whatever it started */
	return 0;
}

/* Add @pid, a child of @parent, to the job and ask it to join. */
static int ask(struct gather *g, pid_t pid, pid_t parent)
{
	struct sc_job_area *a = g->a;
	struct sc_job_slot *s;
	struct proc_stat st;
	char prog[256];

	if (a->n >= SC_JOB_MEMBERS)
		return sc_err(SELFCKPT_EHOST, "the job has more than %d processes, the most one "
			      "checkpoint takes", SC_JOB_MEMBERS);
	s = &a->slot[a->n];
	*s = (struct sc_job_slot){ .pid = pid, .ppid = parent };
	if (read_stat(pid, &st) < 0)
		return 0; /* gone already: reaped before its parent stopped */
	if (st.state == 'T' || st.state == 't')
		return sc_err(SELFCKPT_EHOST, "process %d ('%s'), a child of %d, is stopped (by a "
			      "signal or a debugger), so it cannot take part in the checkpoint of the "
			      "job: no image is written", (int)pid, program_of(pid, prog, sizeof(prog)),
			      (int)parent);
	a->n++;
	if (st.state == 'Z') {
		zombie_slot(s, &st);
		return 0;
	}
	s->join_by = sc_job_now_ms() + JOIN_WAIT_MS;
	s->state = SC_MEMBER_STARTING;
	return starting(g, s);
}

/* The children a stopped member listed, asked in their turn. */
static int take_children(struct gather *g, struct sc_job_slot *s)
{
	int err = 0;

	if (s->n_children < 0)
		return sc_err(SELFCKPT_EHOST, "process %d has more than %d children, the most "
			      "one checkpoint takes", (int)s->pid, SC_JOB_CHILDREN);
	for (int i = 0; i < s->n_children && !err; i++)
		if (!sc_job_holds(g->a, s->children[i]))
			err = ask(g, s->children[i], s->pid);
	s->listed = 1;
	return err;
}

/* A member asked but not stopped: still on its way, a zombie now, or gone. */
static void look_again(struct sc_job_slot *s)
{
	struct proc_stat st;

	if (read_stat(s->pid, &st) < 0)
		s->state = SC_MEMBER_ZOMBIE, s->pid = -s->pid; /* gone: no part of the instant */
	else if (st.state == 'Z')
		zombie_slot(s, &st);
}

static int member_failed(const struct sc_job_slot *s)
{
	return sc_err(s->err ? -s->err : ECANCELED, "process %d ('%s') of the job cannot be "
		      "checkpointed: %s", (int)s->pid, s->prog, s->msg[0] ? s->msg : "it gave up");
}

/* Every member but this one is stopped (or a zombie): 1; not yet: 0; or a refusal. */
static int gather_step(struct gather *g)
{
	int all = 1, err;

	g->starting = 0;
	for (int i = 1; i < g->a->n; i++) {
		struct sc_job_slot *s = &g->a->slot[i];
		int st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

		if (st == SC_MEMBER_FAILED)
			return member_failed(s);
		if (st == SC_MEMBER_STOPPED && !s->listed && (err = take_children(g, s)) < 0)
			return err;
		if (st == SC_MEMBER_STARTING) {
			if ((err = starting(g, s)) < 0)
				return err;
			g->starting += s->state == SC_MEMBER_STARTING;
			all &= s->state != SC_MEMBER_STARTING && s->state != SC_MEMBER_ASKED;
		} else if (st == SC_MEMBER_ASKED) {
			look_again(s);
			all = 0;
		}
	}
	return all;
}

static int gather(struct gather *g)
{
	int64_t until = sc_job_now_ms() + GATHER_WAIT_MS;
	int32_t own[SC_JOB_CHILDREN];
	int n = sc_job_list_children(own, SC_JOB_CHILDREN), err = 0, done;

	if (n < 0)
		return sc_err(SELFCKPT_EHOST, "this process has more than %d children, the most "
			      "one checkpoint takes", SC_JOB_CHILDREN);
	for (int i = 0; i < n && !err; i++)
		err = ask(g, own[i], getpid());
	while (!err) {
		int32_t seen = __atomic_load_n(&g->a->changed, __ATOMIC_ACQUIRE);

		if ((done = gather_step(g)) != 0)
			return done < 0 ? done : 0;
		if (sc_job_now_ms() > until)
			return sc_err(ETIMEDOUT, "a process of the job did not stop for the "
				      "checkpoint within %d s; it is given up and the job goes on",
				      GATHER_WAIT_MS / 1000);
		/* a child starting the library's thread says nothing: looked at sooner */
		sc_job_wait(&g->a->changed, seen, g->starting ? 2 : 20);
	}
	return err;
}

/* A process of the job whose threads went on while they were to be held. */
static bool ran_past(const struct sc_job_area *a)
{
	for (int i = 0; i < a->n; i++)
		if (a->slot[i].ran_past)
			return true;
	return false;
}

/* Has process @pid ended (gone, or a zombie)? read_stat() is raw: this process's threads are held. */
static bool ended(pid_t pid)
{
	struct proc_stat st;

	return read_stat(pid, &st) < 0 || st.state == 'Z' || st.state == 'X';
}

/* The job ends: its other processes are gone (or zombies) before this one goes, for 2 s at most. */
static void wait_members_gone(const struct sc_job_area *a)
{
	for (int ms = 0; ms < 2000; ms += 10) {
		bool all = true;

		for (int i = 1; i < a->n && all; i++)
			all = a->slot[i].pid <= 0 || a->slot[i].state == SC_MEMBER_ZOMBIE ||
			      ended(a->slot[i].pid);
		if (all)
			return;
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
}

/* Every member wrote its image: 0; or the refusal of the first that could not. */
static int wait_written(struct sc_job_area *a)
{
	for (;;) {
		int32_t seen = __atomic_load_n(&a->changed, __ATOMIC_ACQUIRE);
		int pending = 0;

		for (int i = 1; i < a->n; i++) {
			struct sc_job_slot *s = &a->slot[i];
			int st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

			if (st == SC_MEMBER_FAILED)
				return member_failed(s);
			if (st != SC_MEMBER_WRITTEN && st != SC_MEMBER_ZOMBIE) {
				if (kill(s->pid, 0) < 0)
					return sc_err(ESRCH, "process %d ('%s') of the job ended "
						      "before its image was written", (int)s->pid,
						      s->prog);
				pending = 1;
			}
		}
		if (!pending)
			return 0;
		sc_hold_beat(); /* where this process's threads are held: waiting is no stall */
		sc_job_wait(&a->changed, seen, 100);
	}
}

/* The descriptors whose description two processes of the set hold, where kcmp() told. */
static int descriptions_of(const struct sc_job_area *a, struct sc_set *s)
{
	s->files_exact = a->descs_exact != 0;
	if (!s->files_exact || !a->n_descs)
		return 0;
	if (!(s->open = calloc((size_t)a->n_descs, sizeof(*s->open))))
		return sc_err(ENOMEM, "out of memory");
	for (int i = 0; i < a->n_descs; i++)
		s->open[s->n_open++] = (struct sc_set_open){ a->descs[i].pid, a->descs[i].fd,
							     a->descs[i].desc };
	return 0;
}

/* The set's processes, from the area: members and zombies, parents first. */
static int set_of(const struct sc_job_area *a, struct sc_set *s)
{
	s->m = calloc((size_t)a->n, sizeof(*s->m));
	s->n = 0;
	if (!s->m)
		return sc_err(ENOMEM, "out of memory");
	for (int i = 0; i < a->n; i++) {
		const struct sc_job_slot *sl = &a->slot[i];
		struct sc_set_member *m = &s->m[s->n];

		if (sl->pid <= 0)
			continue; /* gone before the instant */
		*m = (struct sc_set_member){ .pid = sl->pid, .ppid = sl->ppid, .pgid = sl->pgid,
					     .sid = sl->sid, .status = sl->status,
					     .zombie = sl->state == SC_MEMBER_ZOMBIE };
		if (!m->zombie) {
			char path[PATH_MAX + SC_SET_FILE_MAX];

			snprintf(m->file, sizeof(m->file), "%s.%d.sckpt", sl->prog, (int)sl->pid);
			snprintf(path, sizeof(path), "%s/%s", a->dir, m->file);
			if (access(path, F_OK) < 0)
				return sc_err(errno, "the image of process %d ('%s') is not in the "
					      "set '%s': no set is written", (int)sl->pid, m->file,
					      a->dir);
		}
		s->n++;
	}
	return descriptions_of(a, s);
}

/* Tell every member the checkpoint is over and wait until none is stopped by it. */
static void finish(struct sc_job_area *a, int phase)
{
	sc_job_set_phase(a, phase);
	/* a member that joined leaves the area at once once told */
	for (int ms = 0; ms < 200; ms += 20) {
		int busy = 0;

		for (int i = 1; i < a->n; i++) {
			int st = __atomic_load_n(&a->slot[i].state, __ATOMIC_ACQUIRE);

			busy |= st == SC_MEMBER_STOPPED || st == SC_MEMBER_CAPTURED;
		}
		if (!busy)
			break;
		nanosleep(&(struct timespec){ 0, 20000000 }, NULL);
	}
}

/*
 * One round: gather, the instant, the images, the set. Return as
 * sc_job_checkpoint(); -EAGAIN when the round is to be taken again.
 */
/* Where a set goes: in @dir under a name of its own (into @name), or at @at (selfckpt_save()). */
struct target {
	const char *dir, *prog, *at;
	char *name;
	size_t size;
	int exit_status; /* --exit-after-save: the job ends once its set is complete */
};

static int commit(const struct target *t, const char *tmp, const struct sc_set *set)
{
	if (t->at)
		return sc_set_commit_at(tmp, t->at, set);
	return sc_set_commit(t->dir, tmp, t->prog, getpid(), set, t->name, t->size);
}

static int round_of(struct gather *g, const struct target *t)
{
	const char *dir = t->dir, *prog = t->prog;
	struct sc_job_area *a = g->a;
	struct sc_job_member self = { .area = a, .index = 0, .coordinator = true };
	struct sc_exit_after ex = { .status = t->exit_status };
	char path[PATH_MAX + 64];
	struct sc_set set = { 0 };
	int err;

	memset(a, 0, sizeof(*a));
	a->magic = SC_JOB_MAGIC;
	a->phase = SC_JOB_GATHER;
	a->n = 1;
	a->exit_after = t->exit_status != 0;
	a->exit_status = t->exit_status;
	sc_fds_stdio_start(&a->stdio);
	a->slot[0] = (struct sc_job_slot){ .pid = getpid(), .state = SC_MEMBER_ASKED };
	snprintf(a->slot[0].prog, sizeof(a->slot[0].prog), "%s", prog);
	if ((err = sc_set_begin(dir, prog, getpid(), a->dir, sizeof(a->dir))) < 0)
		return err;
	err = gather(g);
	/* named as the manifest names it: by the slot's name, which may be cut short */
	snprintf(path, sizeof(path), "%s/%s.%d.sckpt", a->dir, a->slot[0].prog, (int)getpid());
	if (!err) {
		sc_fds_job_stdio(&a->stdio);
		err = sc_checkpoint_member(path, &self, a->exit_after ? &ex : NULL);
		sc_fds_job_stdio(NULL);
		if (err == SELFCKPT_RESTORED)
			return err; /* the area is no part of the restored process */
		if (err == -ECANCELED && a->again)
			err = -EAGAIN; /* a->again says why */
	}
	if (err >= 0)
		err = wait_written(a);
	if (err >= 0)
		err = sc_job_check_shares(a);
	if (err >= 0)
		err = set_of(a, &set);
	if (err >= 0)
		err = commit(t, a->dir, &set);
	sc_set_free(&set);
	if (a->exit_after) /* the job ends where every process still holds its threads */
		a->end_job = sc_checkpoint_hold_end() && err >= 0 && !ran_past(a);
	finish(a, err < 0 ? SC_JOB_ABORT : SC_JOB_DONE);
	if (err < 0)
		sc_set_discard(a->dir);
	if (a->exit_after && !a->end_job) {
		sc_checkpoint_hold_release();
		if (err >= 0)
			sc_log(SC_LOG_WARN, "a process of the job ran past the instant of its "
			       "image (a stopped thread held what writing it needed): the job "
			       "goes on after its checkpoint");
	}
	if (err >= 0 && a->end_job) {
		wait_members_gone(a);
		return SC_JOB_ENDS;
	}
	return err < 0 ? err : SELFCKPT_SAVED;
}

/* The program of process @pid of the job, as its slot names it. */
static const char *prog_of(const struct sc_job_area *a, int32_t pid)
{
	for (int i = 0; i < a->n; i++)
		if (a->slot[i].pid == pid)
			return a->slot[i].prog;
	return "?";
}

static int refuse_in_flight(const struct sc_job_area *a, const char *why)
{
	const struct sc_unix_flight *f = &a->flight;

	return sc_err(EAGAIN, "process %d ('%s') of the job did not accept %d connection%s "
		      "queued at its unix socket within %d s of the checkpoint on %s: what was sent "
		      "on a connection not accepted yet is in no process's hands and could not "
		      "come back, so no image is written", (int)f->server, prog_of(a, f->server),
		      (int)f->count, f->count == 1 ? "" : "s", FLIGHT_WAIT_MS / 1000, why);
}

/*
 * Rounds until one makes a set: again at once where a process started as the
 * instant began (at most ROUNDS times), again a little later while a
 * connection waits to be accepted at a socket of the job (for at most
 * FLIGHT_WAIT_MS: a server that accepts is quick about it).
 */
static int rounds(struct gather *g, const struct target *t, const char *why)
{
	int64_t flight_until = 0;
	int started = 0, pause_ms = 1, err;

	for (;;) {
		err = round_of(g, t);
		if (err != -EAGAIN)
			return err;
		if (g->a->again == SC_JOB_AGAIN_STARTED) {
			if (++started >= ROUNDS)
				return sc_err(EAGAIN, "the job kept starting processes as its "
					      "checkpoint on %s began: no image is written", why);
			sc_log(SC_LOG_DEBUG, "checkpoint of the job: a process started as it "
			       "began; taken again");
			continue;
		}
		if (!flight_until)
			flight_until = sc_job_now_ms() + FLIGHT_WAIT_MS;
		else if (sc_job_now_ms() > flight_until)
			return refuse_in_flight(g->a, why);
		sc_log(SC_LOG_DEBUG, "checkpoint of the job: process %d has a connection queued "
		       "at its unix socket; taken again in %d ms", (int)g->a->flight.server,
		       pause_ms);
		nanosleep(&(struct timespec){ 0, pause_ms * 1000000L }, NULL);
		pause_ms = pause_ms < 32 ? pause_ms * 2 : pause_ms;
	}
}

static int checkpoint_job(const struct target *t, const char *why)
{
	struct gather g = { .sig = sc_trigger.sig_now };
	int err;

	sc_snapshot_reaped(); /* the last snapshot is a child no more */
	if (!(g.a = area_create(&g.fd)))
		return -ENOMEM;
	/* an exit of this process (the top of the job) waits for the whole of it */
	sc_exiting_watch(sc_checkpoint_wait_idle);
	sc_checkpoint_span_begin();
	err = rounds(&g, t, why);
	close(g.fd); /* in a restored image only as a number the program never knew */
	if (err != SELFCKPT_RESTORED)
		area_drop(g.a);
	sc_checkpoint_span_end();
	return err;
}

int sc_job_checkpoint(const char *dir, const char *prog, const char *why, int exit_status,
		      char *name, size_t size)
{
	struct target t = { .dir = dir, .prog = prog, .name = name, .size = size,
			    .exit_status = exit_status };

	return checkpoint_job(&t, why);
}

int sc_job_save(const char *path)
{
	if (!__atomic_load_n(&sc_trigger.active, __ATOMIC_ACQUIRE))
		return 0; /* no job: the library is linked, not run by selfckpt-run */
	if (sc_job_parent_is_member())
		return sc_job_save_up(path); /* the job's top saves the whole job */
	if (!sc_job_has_children())
		return 0; /* a job of one process: one image, as ever */
	return sc_job_save_at(path, "selfckpt_save()");
}

int sc_job_save_at(const char *path, const char *why)
{
	char dir[PATH_MAX], *slash;
	struct target t = { .at = path, .prog = *program_invocation_short_name
						? program_invocation_short_name : "program" };

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	t.dir = dir;
	return checkpoint_job(&t, why);
}

/* @msg into @s->msg, cut to its room (raw). */
static void put_msg(struct sc_job_slot *s, const char *msg)
{
	int k = 0;

	for (; msg && msg[k] && k < (int)sizeof(s->msg) - 1; k++)
		s->msg[k] = msg[k];
	s->msg[k] = '\0';
}

/* ---- a member ---- */

void *sc_job_map_of(pid_t pid, int fd, size_t len, const char *what)
{
	char path[64];
	void *m;
	int mine;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
	if ((mine = open(path, O_RDWR | O_CLOEXEC)) < 0) {
		sc_log(SC_LOG_WARN, "cannot %s (process %d): %s", what, (int)pid, strerror(errno));
		return NULL;
	}
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mine, 0);
	close(mine);
	if (m != MAP_FAILED)
		return m;
	sc_log(SC_LOG_WARN, "cannot %s (process %d): %s", what, (int)pid, strerror(errno));
	return NULL;
}

static struct sc_job_area *area_open(pid_t coord, int fd)
{
	struct sc_job_area *a = sc_job_map_of(coord, fd, area_len(),
					      "join the checkpoint of the job");

	if (!a)
		return NULL;
	if (a->magic != SC_JOB_MAGIC) {
		munmap(a, area_len());
		sc_log(SC_LOG_WARN, "cannot join the checkpoint of the job (process %d)",
		       (int)coord);
		return NULL;
	}
	sc_skip_add((uint64_t)(uintptr_t)a, (uint64_t)(uintptr_t)a + area_len());
	return a;
}

void sc_job_join(pid_t coord, int fd, int index)
{
	struct sc_job_area *a = area_open(coord, fd);
	struct sc_job_member me = { .area = a, .index = index };
	struct sc_exit_after ex = { .status = a ? a->exit_status : 0 };
	struct sc_job_slot *s;
	char path[PATH_MAX + 64];
	int ret;

	if (!a)
		return;
	/* one exiting ends as a zombie or is gone, which the coordinator sees */
	if (sc_exiting() || index <= 0 || index >= a->n || a->slot[index].pid != getpid()) {
		area_drop(a);
		return;
	}
	s = &a->slot[index];
	snprintf(path, sizeof(path), "%s/%s.%d.sckpt", a->dir, s->prog, (int)getpid());
	sc_fds_job_stdio(&a->stdio);
	ret = sc_checkpoint_member(path, &me, a->exit_after ? &ex : NULL);
	sc_fds_job_stdio(NULL);
	if (ret == SELFCKPT_RESTORED) { /* the area is no part of the restored process */
		sc_job_save_restored(); /* its selfckpt_save() under way, if any, returns */
		return;
	}
	sc_job_member_report(&me, ret); /* told already, unless refused before the stop */
	area_drop(a);
}

void sc_job_member_report(const struct sc_job_member *jm, int err)
{
	struct sc_job_slot *s = &jm->area->slot[jm->index];
	int state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

	if (state == SC_MEMBER_WRITTEN || state == SC_MEMBER_FAILED)
		return;
	if (err < 0) {
		put_msg(s, selfckpt_last_error());
		s->err = err;
	}
	__atomic_store_n(&s->state, err < 0 ? SC_MEMBER_FAILED : SC_MEMBER_WRITTEN,
			 __ATOMIC_RELEASE);
	sc_job_wake(&jm->area->changed);
}

void sc_job_ran_past(const struct sc_job_member *jm)
{
	__atomic_store_n(&jm->area->slot[jm->index].ran_past, 1, __ATOMIC_RELEASE);
}

/*
 * Called while this member's other threads are stopped (they may hold
 * malloc's or stdio's lock): atomics, kill() and futexes only.
 */
bool sc_job_member_verdict(const struct sc_job_member *jm, int err, bool ran_past)
{
	struct sc_job_area *a = jm->area;
	struct sc_job_slot *s = &a->slot[jm->index];
	int32_t coord = a->slot[0].pid;
	int phase;

	if (ran_past)
		s->ran_past = 1;
	sc_job_member_report(jm, err);
	/* the coordinator may write its own image long after: no limit but its life */
	while ((phase = __atomic_load_n(&a->phase, __ATOMIC_ACQUIRE)) != SC_JOB_DONE &&
	       phase != SC_JOB_ABORT && kill(coord, 0) == 0)
		sc_job_wait(&a->phase, phase, 50);
	return phase == SC_JOB_DONE && __atomic_load_n(&a->end_job, __ATOMIC_ACQUIRE);
}
