/* SPDX-License-Identifier: MIT */
/*
 * restart.c - the last steps of a restart, inside the restored process.
 *
 * The loader has put the memory back, the descriptors and the signal
 * actions, and has re-created every thread with its TLS base and tid address:
 * each starts in sc_thread_start() and resumes its context. The coordinator
 * comes back here (freeze() returned 1); every other thread comes back inside
 * the stop handler, reports, and waits until all are back, then returns from
 * the signal with every register it had.
 */
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "core/core_internal.h"
#include "core/sc_handoff.h"
#include "core/sc_sys.h"
#include "format/sc_log.h"

struct sc_handoff sc_handoff;

static int live_others(void)
{
	int n = 0;

	for (int i = 0; i < sc_stopped.n; i++)
		n += i != sc_stopped.self && sc_stopped.threads[i].tid != 0;
	return n;
}

/* The restorer's environment lives in the loader's last stage, unmapped next. */
static void keep_environment(void)
{
	void *copy;

	if (!sc_handoff.env_len)
		return;
	copy = mmap(NULL, sc_handoff.env_len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (copy == MAP_FAILED) {
		sc_handoff.env = sc_handoff.env_len = 0;
		return;
	}
	memcpy(copy, (const void *)(uintptr_t)sc_handoff.env, sc_handoff.env_len);
	sc_handoff.env = (uint64_t)(uintptr_t)copy;
}

const char *sc_restart_getenv(const char *name)
{
	const char *e = (const char *)(uintptr_t)sc_handoff.env;
	size_t n = strlen(name);

	for (size_t off = 0; off < sc_handoff.env_len; off += strlen(e + off) + 1)
		if (!strncmp(e + off, name, n) && e[off + n] == '=')
			return e + off + n + 1;
	return NULL;
}

void sc_restart_env_release(void)
{
	if (sc_handoff.env_len)
		munmap((void *)(uintptr_t)sc_handoff.env, sc_handoff.env_len);
	sc_handoff.env = sc_handoff.env_len = 0;
}

int sc_restart_finish(void)
{
	struct sc_thread_state *me = &sc_stopped.threads[sc_stopped.self];
	int want = live_others(), got;

	/* Each re-created thread reports from the stop handler once it is back. */
	while ((got = __atomic_load_n(&sc_stopped.stopped, __ATOMIC_ACQUIRE)) < want)
		sc_futex_wait(&sc_stopped.stopped, got);
	for (int i = 0; i < sc_stopped.n; i++)
		if (sc_stopped.threads[i].tid)
			sc_stopped.threads[i].tid = *(int32_t *)sc_stopped.threads[i].tid_addr;
	sc_stopped.pid = (int32_t)sc_sys0(SYS_getpid);
	keep_environment();
	/* Every thread has left the loader's last stage: it is no part of the process. */
	if (sc_handoff.blob_len)
		munmap((void *)sc_handoff.blob_start, sc_handoff.blob_len);
	sc_handoff.blob_start = sc_handoff.blob_len = 0;
	sc_stopped.restored = 1;
	sc_threads_release();
	/* Still blocked here: they are delivered as the saved mask allows. */
	sc_pending_requeue(sc_stopped.self);
	sc_pending_requeue(SC_PENDING_PROCESS);
	sc_sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&me->sigmask, 0, 8);
	return 0;
}
