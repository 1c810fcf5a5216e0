/* SPDX-License-Identifier: MIT */
/*
 * restart.c - the last steps of a restart, inside the restored process.
 *
 * The loader has put the memory back, the descriptors, the signal actions,
 * and the coordinator's own kernel state, and has resumed the coordinator's
 * context: freeze() returned 1. Every other thread is re-created here with
 * its TLS base and tid address; each resumes inside the stop handler, where
 * it waits until all are back, then returns from the signal with every
 * register it had.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "core/core_internal.h"
#include "core/sc_handoff.h"
#include "core/sc_sys.h"
#include "format/sc_log.h"

#define CLONE_THREAD_FLAGS                                                                     \
	(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |    \
	 CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID)

/* Below the red zone of the stopped frame: nothing there is live any more. */
#define STACK_GAP 512

struct sc_handoff sc_handoff;

static int recreate(struct sc_thread_state *t)
{
	int *tid_addr = (int *)t->tid_addr;
	long tid = sc_clone_thread(CLONE_THREAD_FLAGS, (void *)(t->ctx.rsp - STACK_GAP), tid_addr,
				   tid_addr, t->fs_base, t);

	if (tid < 0)
		return sc_err((int)-tid, "cannot re-create thread %d: %s", t->tid,
			      strerror((int)-tid));
	t->tid = (int32_t)tid;
	return 1;
}

int sc_restart_finish(void)
{
	struct sc_thread_state *me = &sc_stopped.threads[sc_stopped.self];
	int want = 0, err = 0;

	/* The loader's last stage is no part of the process: drop it. */
	if (sc_handoff.blob_len)
		munmap((void *)sc_handoff.blob_start, sc_handoff.blob_len);
	sc_handoff.blob_start = sc_handoff.blob_len = 0;
	__atomic_store_n(&sc_stopped.stopped, 0, __ATOMIC_RELEASE);
	sc_stopped.pid = (int32_t)sc_sys0(SYS_getpid);
	me->tid = (int32_t)sc_gettid();
	for (int i = 0; i < sc_stopped.n && err >= 0; i++) {
		if (i == sc_stopped.self || !sc_stopped.threads[i].tid)
			continue;
		err = recreate(&sc_stopped.threads[i]);
		want += err > 0;
	}
	while (__atomic_load_n(&sc_stopped.stopped, __ATOMIC_ACQUIRE) < want) {
		int got = __atomic_load_n(&sc_stopped.stopped, __ATOMIC_ACQUIRE);

		if (got < want)
			sc_futex_wait(&sc_stopped.stopped, got);
	}
	sc_stopped.restored = 1;
	sc_threads_release();
	sc_sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&me->sigmask, 0, 8);
	return err < 0 ? err : 0;
}
