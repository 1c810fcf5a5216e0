/* SPDX-License-Identifier: MIT */
/*
 * job_rt.c - a member's steps of the job's instant (job.h).
 *
 * Stage contract: sc_job_stopped() and sc_job_captured() run in the
 * checkpointing thread while every other thread of the process is stopped
 * (possibly inside malloc or stdio): raw system calls, static buffers, no
 * errno. The area is shared with the other members, so its words are read
 * and written with atomics and waited on with shared (not private) futexes.
 */
#include <fcntl.h>
#include <time.h>

#include "core/job.h"
#include "core/sc_sys.h"
#include "core/unix_flight.h"

#define FUTEX_WAIT_SHARED 0
#define FUTEX_WAKE_SHARED 1
#define ENOENT_ 2
#define ECANCELED_ 125
/* A member waits this long for the rest of the job at each step. */
#define STEP_WAIT_MS 30000
#define TICK_MS 50

int sc_job_gpu_copy;

void sc_job_wake(int32_t *word)
{
	__atomic_add_fetch(word, 1, __ATOMIC_RELEASE);
	sc_sys3(SYS_futex, (long)word, FUTEX_WAKE_SHARED, 0x7fffffff);
}

void sc_job_wait(int32_t *word, int32_t seen, int ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };

	if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == seen)
		sc_sys4(SYS_futex, (long)word, FUTEX_WAIT_SHARED, seen, (long)&t);
}

/* Is @pid one of selfckpt's own programs (the GPU proxy), not the program's? */
static bool own_helper(long pid)
{
	static const char prefix[] = "selfckpt-";
	char path[48], target[256];
	long n, base = 0;

	sc_path_number(path, "/proc/", pid, "/exe");
	n = sc_sys4(SYS_readlinkat, AT_FDCWD, (long)path, (long)target, sizeof(target) - 1);
	if (n <= 0)
		return false; /* a zombie has no program: it is the job's */
	for (long i = 0; i < n; i++)
		if (target[i] == '/')
			base = i + 1;
	for (long i = 0; prefix[i]; i++)
		if (base + i >= n || target[base + i] != prefix[i])
			return false;
	return true;
}

/* The pids in the text @buf (@n bytes), appended to @out; -1 past @max. */
static int parse_pids(const char *buf, long n, int32_t *out, int count, int max)
{
	long v = -1;

	for (long i = 0; i <= n; i++) {
		if (i < n && buf[i] >= '0' && buf[i] <= '9') {
			v = (v < 0 ? 0 : v * 10) + (buf[i] - '0');
			continue;
		}
		if (v > 0 && !own_helper(v)) {
			if (count >= max)
				return -1;
			out[count++] = (int32_t)v;
		}
		v = -1;
	}
	return count;
}

struct dirent64_ {
	uint64_t ino;
	int64_t off;
	uint16_t reclen;
	uint8_t type;
	char name[];
};

int sc_job_list_children(int32_t *out, int max)
{
	static char ents[4096], text[4096];
	char path[64];
	int count = 0;
	long dir = sc_sys3(SYS_openat, AT_FDCWD, (long)"/proc/self/task",
			   O_RDONLY | O_DIRECTORY | O_CLOEXEC), n;

	if (dir < 0)
		return 0;
	while (count >= 0 && (n = sc_sys3(SYS_getdents64, dir, (long)ents, sizeof(ents))) > 0) {
		for (long at = 0; at < n && count >= 0;) {
			struct dirent64_ *e = (struct dirent64_ *)(ents + at);
			long tid = sc_parse_uint(e->name), fd, len;

			at += e->reclen;
			if (tid <= 0)
				continue;
			sc_path_number(path, "/proc/self/task/", tid, "/children");
			fd = sc_sys3(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue; /* the thread ended */
			len = sc_sys3(SYS_read, fd, (long)text, sizeof(text));
			sc_sys1(SYS_close, fd);
			if (len > 0)
				count = parse_pids(text, len, out, count, max);
		}
	}
	sc_sys1(SYS_close, dir);
	return count;
}

bool sc_job_holds(const struct sc_job_area *a, int32_t pid)
{
	for (int i = 0; i < a->n; i++)
		if (a->slot[i].pid == pid)
			return true;
	for (int i = 0; i < a->n_left; i++)
		if (a->left[i] == pid)
			return true;
	return false;
}

long sc_job_now_ms(void)
{
	struct timespec t;

	sc_sys2(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * Wait while the phase is @phase, at most STEP_WAIT_MS; the phase then. The
 * coordinator may wake the members meanwhile to ask a toggle of one of them.
 */
static int wait_phase(struct sc_job_area *a, int phase)
{
	long until = sc_job_now_ms() + STEP_WAIT_MS;

	while (sc_job_now_ms() < until) {
		int now = __atomic_load_n(&a->phase, __ATOMIC_ACQUIRE);

		if (now != phase) {
			sc_job_probes_undone();
			return now;
		}
		sc_job_answer_probe(a);
		sc_job_wait(&a->phase, now, TICK_MS);
	}
	sc_job_probes_undone();
	return SC_JOB_ABORT;
}

void sc_job_set_phase(struct sc_job_area *a, int phase)
{
	__atomic_store_n(&a->phase, phase, __ATOMIC_RELEASE);
	sc_sys3(SYS_futex, (long)&a->phase, FUTEX_WAKE_SHARED, 0x7fffffff);
}

static void set_state(struct sc_job_area *a, struct sc_job_slot *s, int state)
{
	__atomic_store_n(&s->state, state, __ATOMIC_RELEASE);
	sc_job_wake(&a->changed);
}

static void fail_slot(struct sc_job_slot *s, const char *why)
{
	int k = 0;

	for (; why[k] && k < (int)sizeof(s->msg) - 1; k++)
		s->msg[k] = why[k];
	s->msg[k] = '\0';
	s->err = -ECANCELED_;
}

/* The instant is given up, to be taken again for @why (enum sc_job_again). */
static int again(struct sc_job_area *a, struct sc_job_slot *s, int why, const char *msg)
{
	fail_slot(s, msg);
	a->again = why;
	sc_job_set_phase(a, SC_JOB_ABORT);
	return -ECANCELED_;
}

/* A connection queued at a socket of the job, which no image could hold (unix_flight.h)? */
static bool in_flight(struct sc_job_area *a)
{
	static int32_t pids[SC_JOB_MEMBERS];
	int n = 0;

	for (int i = 0; i < a->n; i++)
		if (a->slot[i].pid > 0 && a->slot[i].state != SC_MEMBER_ZOMBIE)
			pids[n++] = a->slot[i].pid;
	return sc_unix_in_flight(pids, n, &a->flight) > 0;
}

/*
 * The coordinator, stopped: every child it has now must be one the job
 * holds, and no connection may wait in the queue of a socket of the job.
 */
static int coordinator_stopped(struct sc_job_area *a, struct sc_job_slot *s)
{
	for (int i = 0; i < s->n_children; i++)
		if (!sc_job_holds(a, s->children[i]))
			return again(a, s, SC_JOB_AGAIN_STARTED,
				     "a process was started as the checkpoint began");
	if (s->n_children < 0) {
		fail_slot(s, "the coordinator has too many children");
		sc_job_set_phase(a, SC_JOB_ABORT);
		return -ECANCELED_;
	}
	if (in_flight(a))
		return again(a, s, SC_JOB_AGAIN_IN_FLIGHT,
			     "a connection queued at a socket of the job was not accepted yet");
	sc_job_find_descriptions(a);
	sc_job_set_phase(a, SC_JOB_CAPTURE);
	return 0;
}

int sc_job_stopped(const struct sc_job_member *jm)
{
	struct sc_job_area *a;
	struct sc_job_slot *s;

	if (!jm)
		return 0;
	a = jm->area;
	s = &a->slot[jm->index];
	s->n_children = sc_job_list_children(s->children, SC_JOB_CHILDREN);
	s->ppid = (int32_t)sc_sys0(SYS_getppid);
	s->pgid = (int32_t)sc_sys1(SYS_getpgid, 0);
	s->sid = (int32_t)sc_sys1(SYS_getsid, 0);
	s->gpu_copy = __atomic_load_n(&sc_job_gpu_copy, __ATOMIC_ACQUIRE);
	set_state(a, s, SC_MEMBER_STOPPED);
	if (jm->coordinator)
		return coordinator_stopped(a, s);
	return wait_phase(a, SC_JOB_GATHER) == SC_JOB_CAPTURE ? 0 : -ECANCELED_;
}

/* Every member that runs has its snapshot: 1; one gave up: -1; else 0. */
static int all_captured(const struct sc_job_area *a)
{
	int all = 1;

	for (int i = 0; i < a->n; i++) {
		int st = __atomic_load_n(&a->slot[i].state, __ATOMIC_ACQUIRE);

		if (st == SC_MEMBER_FAILED)
			return -1;
		if (st != SC_MEMBER_CAPTURED && st != SC_MEMBER_ZOMBIE)
			all = 0;
	}
	return all;
}

int sc_job_captured(const struct sc_job_member *jm)
{
	struct sc_job_area *a;
	int verdict = 0;

	if (!jm)
		return 0;
	a = jm->area;
	set_state(a, &a->slot[jm->index], SC_MEMBER_CAPTURED);
	if (!jm->coordinator)
		return wait_phase(a, SC_JOB_CAPTURE) == SC_JOB_RELEASE ? 0 : -ECANCELED_;
	for (int ms = 0; ms < STEP_WAIT_MS && !verdict; ms += TICK_MS) {
		int seen = __atomic_load_n(&a->changed, __ATOMIC_ACQUIRE);

		verdict = all_captured(a);
		if (!verdict)
			sc_job_wait(&a->changed, seen, TICK_MS);
	}
	if (verdict <= 0) {
		if (!verdict)
			fail_slot(&a->slot[jm->index], "a process of the job did not take its "
				  "snapshot in time");
		sc_job_set_phase(a, SC_JOB_ABORT);
		return -ECANCELED_;
	}
	sc_job_set_phase(a, SC_JOB_RELEASE);
	return 0;
}
