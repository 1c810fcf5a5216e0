/* SPDX-License-Identifier: MIT */
/*
 * stop_rt.c - stopping every thread of the process at a consistent instant.
 *
 * Stage contract: sc_stop_handler() is a signal handler; sc_threads_stop() and
 * sc_threads_release() run in the coordinator while other threads may be
 * stopped anywhere, inside malloc or stdio included, so all three use only raw
 * system calls and static memory: no malloc, no locks, no errno.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>

#include "core/core_internal.h"
#include "core/sc_sys.h"

struct sc_stopped sc_stopped;

#define SI_QUEUE_CODE -1 /* SI_QUEUE */
#define ENOENT_ 2         /* errno values, without libc's errno.h */
#define ESRCH_ 3
#define E2BIG_ 7
#define ETIMEDOUT_ 110
#define EDEADLK_ 35
#define STOP_TIMEOUT_NS 10000000000ll
/* A thread not stopped after this long is looked at: does it block the signal? */
#define BLOCKED_CHECK_NS 200000000ll

/*
 * Each stop has its own number, carried in the signal with the thread's slot.
 * A thread that blocked the signal gets it late, after the stop was given up:
 * it must not park then, with nobody left to release it.
 */
#define SLOT_BITS 16
static int stop_epoch;
static int stop_active; /* the epoch of the stop under way, 0 when none */

/* The program's own action for the stop signal (interpose.c), run for signals not ours. */
static struct sc_stop_chain chain;

void sc_stop_chain_set(const struct sc_stop_chain *c)
{
	chain = *c;
}

static int load(int *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static int stop_active_epoch(void)
{
	return load(&stop_active);
}

/*
 * Runs in each thread being stopped. The thread records its state and a
 * resume context, reports, and waits for the release. At restart, the
 * re-created thread comes back here through the resume context (sc_ctx_save
 * returns 1), reports again and waits likewise; returning from the handler then
 * restores every register from the signal frame on its stack.
 */
void sc_stop_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct sc_thread_state *t;
	int gen = load(&sc_stopped.gen), v = si->si_value.sival_int;
	int slot = v & ((1 << SLOT_BITS) - 1);

	if (si->si_code != SI_QUEUE_CODE || si->si_pid != sc_stopped.pid || v <= 0 ||
	    (v >> SLOT_BITS) == 0) {
		if (chain.handler)
			chain.handler(sig, si, ucv); /* the program's own use of the signal */
		return;
	}
	if ((v >> SLOT_BITS) != stop_active_epoch() || slot >= sc_stopped.n)
		return; /* a stop that was given up */
	t = &sc_stopped.threads[slot];
	sc_thread_capture(t);
	t->sigmask = *(uint64_t *)&uc->uc_sigmask;
	sc_sys2(SYS_rt_sigpending, (long)&t->pending, 8);
	sc_pending_take_private(slot);
	sc_ctx_save(&t->ctx);
	__atomic_store_n(&t->parked, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&sc_stopped.stopped, 1, __ATOMIC_RELEASE);
	sc_futex_wake(&sc_stopped.stopped, 1);
	while (load(&sc_stopped.gen) == gen)
		sc_futex_wait(&sc_stopped.gen, gen);
	/* At a restart, a thread marked held waits until the restored() hook lets it go. */
	while (load(&sc_stopped.restored) && load(&t->held) && load(&sc_stopped.hold))
		sc_futex_wait(&sc_stopped.hold, 1);
	/* Released, here or in a process restored from an image: its signals wait again. */
	sc_pending_requeue(slot);
	sc_pending_requeue_leader(); /* in the main thread: those only it may queue */
}

/* Threads that exited after they were signalled (forget_exited()): not signalled again. */
static int32_t exited[SC_MAX_THREADS];
static int n_exited;

static int known(int tid)
{
	for (int i = 0; i < sc_stopped.n; i++)
		if (sc_stopped.threads[i].tid == tid)
			return 1;
	for (int i = 0; i < n_exited; i++)
		if (exited[i] == tid)
			return 1;
	return 0;
}

static int signal_thread(int tid)
{
	siginfo_t si = { 0 };
	int slot = sc_stopped.n;
	long err;

	if (slot == SC_MAX_THREADS)
		return -E2BIG_; /* more threads than SC_MAX_THREADS: the caller says so */
	sc_stopped.threads[slot].tid = tid;
	sc_stopped.threads[slot].parked = 0;
	sc_stopped.threads[slot].held = 0;
	sc_stopped.n++;
	si.si_signo = sc_stopped.stop_signal;
	si.si_code = SI_QUEUE_CODE;
	si.si_pid = sc_stopped.pid;
	si.si_uid = (uid_t)sc_sys0(SYS_getuid);
	si.si_value.sival_int = slot | stop_active << SLOT_BITS;
	err = sc_sys4(SYS_rt_tgsigqueueinfo, sc_stopped.pid, tid, sc_stopped.stop_signal,
		      (long)&si);
	if (err == -ESRCH_) { /* it exited meanwhile */
		sc_stopped.threads[slot].tid = 0;
		return 0;
	}
	return err < 0 ? (int)err : 1;
}

/* Signal every thread not yet signalled; returns how many were new, or -errno. */
static int signal_new_threads(int dirfd, char *buf, size_t size)
{
	int fresh = 0;
	long n;

	sc_sys3(SYS_lseek, dirfd, 0, SEEK_SET);
	while ((n = sc_sys3(SYS_getdents64, dirfd, (long)buf, (long)size)) > 0) {
		for (long off = 0; off < n;) {
			struct sc_dirent64 *d = (struct sc_dirent64 *)(buf + off);
			int tid = sc_parse_uint(d->d_name), r;

			off += d->d_reclen;
			if (tid <= 0 || known(tid))
				continue;
			r = signal_thread(tid);
			if (r < 0)
				return r;
			fresh += r;
		}
	}
	return n < 0 ? (int)n : fresh;
}

static int count_live(void)
{
	int live = 0;

	for (int i = 0; i < sc_stopped.n; i++)
		live += sc_stopped.threads[i].tid != 0 && i != sc_stopped.self;
	return live;
}

/* "/proc/self/task/<tid><tail>" into @path (at least 48 bytes; @tail of 8 at most). */
static void task_path(char *path, int tid, const char *tail)
{
	static const char head[] = "/proc/self/task/";
	char digits[12];
	int n = 0, k = 0;

	do
		digits[n++] = (char)('0' + tid % 10);
	while ((tid /= 10) > 0);
	for (size_t i = 0; i < sizeof(head) - 1; i++)
		path[k++] = head[i];
	while (n > 0)
		path[k++] = digits[--n];
	do
		path[k++] = *tail;
	while (*tail++);
}

/*
 * Has thread @tid exited? It has when its task is gone or a zombie (a main
 * thread that called pthread_exit stays listed as one). Its state is the
 * field after the name, which ends at the last ')' of the line.
 */
static int thread_gone(int tid)
{
	char path[48], buf[512];
	long fd, n;
	int state = 0;

	task_path(path, tid, "/stat");
	fd = sc_sys4(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd == -ENOENT_ || fd == -ESRCH_;
	n = sc_sys3(SYS_read, fd, (long)buf, sizeof(buf));
	sc_sys1(SYS_close, fd);
	for (long i = n - 2; i > 0; i--)
		if (buf[i] == ')') {
			state = buf[i + 2];
			break;
		}
	return n <= 0 ? 0 : state == 'Z' || state == 'X' || state == 'x';
}

/*
 * A thread that exits after it was signalled never runs the handler (a thread
 * that pthread_join() just returned for may still be listed while the kernel
 * finishes it). Threads that have not parked yet and are gone are forgotten.
 * Returns -ESRCH when the gone thread is the main one (it called
 * pthread_exit() and stays listed as a zombie): such a process cannot be
 * checkpointed.
 */
static int forget_exited(void)
{
	for (int i = 0; i < sc_stopped.n; i++) {
		struct sc_thread_state *t = &sc_stopped.threads[i];

		if (i == sc_stopped.self || !t->tid ||
		    __atomic_load_n(&t->parked, __ATOMIC_ACQUIRE) || !thread_gone(t->tid))
			continue;
		if (t->tid == sc_stopped.pid)
			return -ESRCH_;
		exited[n_exited++] = t->tid; /* at most one per slot: fits */
		t->tid = 0;
	}
	return 0;
}

/*
 * Is thread @tid asleep with the stop signal blocked (/proc/self/task/<tid>/
 * status: "State: S" and its bit in "SigBlk:")? Such a thread stays so until
 * something else wakes it. A thread that blocks the signal while it runs (one
 * just made, which glibc starts with every signal blocked, not yet scheduled
 * on a loaded machine) is only late.
 */
static int asleep_blocking(int tid)
{
	static char buf[4096];
	const char *state, *blk;
	char path[48];

	task_path(path, tid, "/status");
	if (sc_proc_read(path, buf, sizeof(buf)) < 0)
		return 0;
	state = sc_status_field(buf, "State:");
	blk = sc_status_field(buf, "SigBlk:");
	if (!state || *state != 'S' || !blk)
		return 0;
	return (int)(sc_parse_hex(&blk) >> (sc_stopped.stop_signal - 1) & 1);
}

/*
 * A thread that sleeps with the stop signal blocked never stops (glibc's
 * helper thread of SIGEV_THREAD timers blocks every signal and waits): found
 * so twice in a row, BLOCKED_CHECK_NS apart, it gives the stop up at once
 * rather than after the time limit, and is named.
 */
static int find_blocking_thread(void)
{
	int seen = sc_stopped.blocking_tid;

	sc_stopped.blocking_tid = 0;
	for (int i = 0; i < sc_stopped.n; i++) {
		struct sc_thread_state *t = &sc_stopped.threads[i];

		if (i == sc_stopped.self || !t->tid ||
		    __atomic_load_n(&t->parked, __ATOMIC_ACQUIRE) || !asleep_blocking(t->tid))
			continue;
		if (t->tid == seen) {
			sc_stopped.blocking_tid = seen;
			return -EDEADLK_;
		}
		if (!sc_stopped.blocking_tid)
			sc_stopped.blocking_tid = t->tid; /* looked at again next time */
	}
	return 0;
}

static int wait_stopped(void)
{
	struct { long s, ns; } ts = { 0, 10000000 };
	long waited = 0;
	int got;

	while ((got = load(&sc_stopped.stopped)) < count_live()) {
		sc_sys4(SYS_futex, (long)&sc_stopped.stopped, SC_FUTEX_WAIT_PRIVATE, got,
			(long)&ts);
		waited += ts.ns;
		if (load(&sc_stopped.stopped) < count_live() && forget_exited() < 0)
			return -ESRCH_;
		if (waited >= BLOCKED_CHECK_NS && waited % BLOCKED_CHECK_NS < ts.ns &&
		    load(&sc_stopped.stopped) < count_live() && find_blocking_thread() < 0)
			return -EDEADLK_;
		if (waited > STOP_TIMEOUT_NS)
			return -ETIMEDOUT_; /* a thread that cannot take the signal */
	}
	return 0;
}

/*
 * Stop every other thread. Threads may be created while we look, so the task
 * list is read until a pass finds nobody new. Return: 0, -ETIMEDOUT when a
 * thread did not stop (it blocks the stop signal), -ESRCH when the main
 * thread has exited, or -errno.
 */
int sc_threads_stop(void)
{
	static char buf[16384];
	int dirfd, r;

	sc_stopped.pid = (int32_t)sc_sys0(SYS_getpid);
	sc_stopped.n = 0;
	sc_stopped.stopped = 0;
	sc_stopped.restored = 0;
	sc_stopped.hold = 0;
	sc_stopped.self = 0;
	sc_stopped.n_pending = 0;
	sc_stopped.blocking_tid = 0;
	n_exited = 0;
	stop_epoch = stop_epoch % 0x7fff + 1;
	__atomic_store_n(&stop_active, stop_epoch, __ATOMIC_RELEASE);
	sc_stopped.threads[0].tid = (int32_t)sc_gettid();
	sc_stopped.n = 1;
	dirfd = (int)sc_sys4(SYS_openat, AT_FDCWD, (long)"/proc/self/task",
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (dirfd < 0)
		return dirfd;
	do {
		r = signal_new_threads(dirfd, buf, sizeof(buf));
		if (r >= 0) {
			int w = wait_stopped();

			r = w < 0 ? w : r;
		}
	} while (r > 0);
	sc_sys1(SYS_close, dirfd);
	return r;
}

void sc_threads_hold_at_restart(int (*hold)(int tid))
{
	for (int i = 0; i < sc_stopped.n; i++)
		if (i != sc_stopped.self && sc_stopped.threads[i].tid &&
		    hold(sc_stopped.threads[i].tid))
			sc_stopped.threads[i].held = 1;
	__atomic_store_n(&sc_stopped.hold, 1, __ATOMIC_RELEASE);
}

void sc_threads_release_held(void)
{
	__atomic_store_n(&sc_stopped.hold, 0, __ATOMIC_RELEASE);
	sc_futex_wake(&sc_stopped.hold, 0x7fffffff);
}

void sc_threads_release(void)
{
	/* first: a thread whose signal comes only now must not park */
	__atomic_store_n(&stop_active, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&sc_stopped.gen, 1, __ATOMIC_RELEASE);
	sc_futex_wake(&sc_stopped.gen, 0x7fffffff);
}
