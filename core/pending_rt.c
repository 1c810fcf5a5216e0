/* SPDX-License-Identifier: MIT */
/*
 * pending_rt.c - pending signals across a checkpoint, each with its siginfo
 * and as many times as it was queued.
 *
 * Stage contract: runs in the stop-signal handler and in the coordinator while
 * other threads are stopped (raw system calls, static memory only), and again
 * when they are released. A thread takes its own queue first (the kernel's
 * thread queue, "SigPnd" of /proc/thread-self/status); then the coordinator,
 * with every other thread stopped and every thread queue empty, takes the
 * process queue. Queued again with rt_tgsigqueueinfo()/rt_sigqueueinfo(),
 * which keep si_code, si_pid and si_value when a process signals itself.
 * The kernel lets only the thread whose id is the process's own (the main
 * thread) put a signal on the process queue that claims to come from the
 * kernel or from tkill() (si_code >= 0 or SI_TKILL: SIGCHLD from a child's
 * exit, say): those wait for the main thread, which puts them back as it is
 * released (sc_pending_requeue_leader()), unless it made the checkpoint.
 */
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>

#include "core/core_internal.h"
#include "core/sc_sys.h"

#define EAGAIN_ 11
#define SI_TKILL_ (-6)

/* A hex signal set from a "Key:\t..." line of a /proc status file; 0 where there is none. */
static uint64_t read_set(const char *path, const char *key)
{
	char buf[8192];
	const char *p = sc_status_value(path, key, buf, sizeof(buf));

	return p ? sc_parse_hex(&p) : 0;
}

static int ours(int sig)
{
	return sig == SIGKILL || sig == SIGSTOP || sig == sc_stopped.stop_signal;
}

/* Take one instance of @sig off the caller's queues; 0 when there is none. */
static int take_one(int slot, int sig)
{
	struct { long s, ns; } zero = { 0, 0 };
	uint64_t set = 1ull << (sig - 1);
	int i;
	long r;

	if (__atomic_load_n(&sc_stopped.n_pending, __ATOMIC_ACQUIRE) >= SC_MAX_PENDING)
		return 0; /* full: the rest stay queued in the kernel, not in the image */
	i = __atomic_fetch_add(&sc_stopped.n_pending, 1, __ATOMIC_ACQ_REL);
	if (i >= SC_MAX_PENDING)
		return 0;
	r = sc_sys4(SYS_rt_sigtimedwait, (long)&set, (long)sc_stopped.pending[i].info,
		    (long)&zero, 8);
	sc_stopped.pending[i].slot = slot;
	sc_stopped.pending[i].sig = r > 0 ? (int32_t)r : 0; /* 0: an empty entry */
	return r > 0 && r != -EAGAIN_;
}

void sc_pending_take_private(int slot)
{
	for (int sig = 1; sig <= 64; sig++) {
		if (ours(sig))
			continue;
		/* Only while the thread queue holds it: the process queue comes later. */
		while ((read_set("/proc/thread-self/status", "SigPnd:\t") >> (sig - 1)) & 1)
			if (!take_one(slot, sig))
				break;
	}
}

void sc_pending_take_shared(void)
{
	uint64_t shared = read_set("/proc/self/status", "ShdPnd:\t");

	for (int sig = 1; sig <= 64; sig++)
		if ((shared >> (sig - 1)) & 1 && !ours(sig))
			while (take_one(SC_PENDING_PROCESS, sig))
				;
}

/* Does the kernel take @info on the process queue only from the main thread? */
static int leader_only(const struct sc_pending_sig *p)
{
	int32_t code;

	__builtin_memcpy(&code, p->info + 8, sizeof(code)); /* si_code */
	return code >= 0 || code == SI_TKILL_;
}

static void requeue(int slot, int leader, long pid, long tid)
{
	int n = __atomic_load_n(&sc_stopped.n_pending, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n && i < SC_MAX_PENDING; i++) {
		struct sc_pending_sig *p = &sc_stopped.pending[i];

		if (p->slot != slot || !p->sig)
			continue;
		if (slot != SC_PENDING_PROCESS)
			sc_sys4(SYS_rt_tgsigqueueinfo, pid, tid, p->sig, (long)p->info);
		else if (leader_only(p) == leader)
			sc_sys3(SYS_rt_sigqueueinfo, pid, p->sig, (long)p->info);
	}
}

void sc_pending_requeue(int slot)
{
	long pid = sc_sys0(SYS_getpid), tid = sc_gettid();

	requeue(slot, 0, pid, tid);
	if (slot == SC_PENDING_PROCESS && tid == pid)
		requeue(slot, 1, pid, tid);
}

void sc_pending_requeue_leader(void)
{
	long pid = sc_sys0(SYS_getpid);

	if (sc_gettid() == pid)
		requeue(SC_PENDING_PROCESS, 1, pid, pid);
}
