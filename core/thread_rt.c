/* SPDX-License-Identifier: MIT */
/*
 * thread_rt.c - a thread's kernel-side state: recorded while it is stopped,
 * and put back by the thread itself when it is re-created at restart.
 *
 * Stage contract: sc_thread_capture() runs inside the stop-signal handler or
 * in the coordinator with every other thread stopped; sc_thread_start() is
 * the first code of a re-created thread, whose TLS base is already its own
 * but whose kernel state (robust list, rseq, alternate stack) is not. Both use
 * raw system calls only: no libc, no errno.
 */
#include <asm/prctl.h>
#include <linux/prctl.h>
#include <signal.h>
#include <stddef.h>

#include "core/core_internal.h"
#include "core/sc_sys.h"

#define RSEQ_SIG 0x53053053u
#define RSEQ_AREA_SIZE 32 /* the size glibc registers, whatever __rseq_size says */

/* glibc >= 2.35 registers an rseq area in every thread, at tp + __rseq_offset. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

struct kernel_stack_t {
	uint64_t sp;
	int32_t flags;
	int32_t pad;
	uint64_t size;
};

/*
 * Which rseq area the thread has registered, asked of the kernel: a
 * registration of the area already registered answers EBUSY; of another
 * area, EINVAL (EPERM: another signature); with none registered, it
 * registers, and is undone at once. The C library's area (where it
 * registers one) comes back; another, which the thread registered itself,
 * cannot be found, and is flagged for the coordinator to refuse.
 */
static void capture_rseq(struct sc_thread_state *t)
{
	static const int ebusy = 16, einval = 22, unregister = 1;
	uint8_t probe[RSEQ_AREA_SIZE] __attribute__((aligned(32))) = { 0 };
	uint64_t area = t->rseq_len ? t->rseq_addr : (uint64_t)probe;
	long r = sc_sys4(SYS_rseq, (long)area, RSEQ_AREA_SIZE, 0, RSEQ_SIG);

	if (r == -ebusy)
		return; /* the C library's, as expected; or the probe cannot be registered */
	if (r == 0) {
		sc_sys4(SYS_rseq, (long)area, RSEQ_AREA_SIZE, unregister, RSEQ_SIG);
		t->rseq_len = 0; /* none was registered: none at restart */
		return;
	}
	t->rseq_len = 0;
	t->rseq_foreign = r == -einval; /* else no rseq here (ENOSYS, or refused by a filter) */
}

void sc_thread_capture(struct sc_thread_state *t)
{
	struct kernel_stack_t ss = { 0 };
	uint64_t tp;

	t->tid = (int32_t)sc_gettid();
	sc_sys2(SYS_arch_prctl, ARCH_GET_FS, (long)&t->fs_base);
	sc_sys2(SYS_arch_prctl, ARCH_GET_GS, (long)&t->gs_base);
	sc_sys2(SYS_prctl, PR_GET_TID_ADDRESS, (long)&t->tid_addr);
	t->pdeath_sig = 0;
	sc_sys2(SYS_prctl, PR_GET_PDEATHSIG, (long)&t->pdeath_sig);
	sc_sys3(SYS_get_robust_list, 0, (long)&t->robust_head, (long)&t->robust_len);
	sc_sys2(SYS_sigaltstack, 0, (long)&ss);
	t->ss_sp = ss.sp;
	t->ss_size = ss.size;
	t->ss_flags = (uint32_t)ss.flags & ~(uint32_t)SS_ONSTACK;
	t->rseq_addr = 0;
	t->rseq_len = 0;
	t->rseq_foreign = 0;
	if (&__rseq_size && __rseq_size) {
		__asm__("mov %%fs:0, %0" : "=r"(tp));
		t->rseq_addr = tp + (uint64_t)__rseq_offset;
		t->rseq_len = RSEQ_AREA_SIZE;
		t->rseq_sig = RSEQ_SIG;
	}
	capture_rseq(t);
}

void sc_thread_start(struct sc_thread_state *t)
{
	struct kernel_stack_t ss = { .sp = t->ss_sp, .flags = (int32_t)t->ss_flags,
				     .size = t->ss_size };
	uint64_t all = ~0ull;

	sc_sys3(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0);
	if (t->robust_head)
		sc_sys2(SYS_set_robust_list, (long)t->robust_head, (long)t->robust_len);
	if (t->rseq_len)
		sc_sys4(SYS_rseq, (long)t->rseq_addr, t->rseq_len, 0, t->rseq_sig);
	if (t->ss_size)
		sc_sys2(SYS_sigaltstack, (long)&ss, 0);
	if (t->gs_base)
		sc_sys2(SYS_arch_prctl, ARCH_SET_GS, (long)t->gs_base);
	if (t->pdeath_sig)
		sc_sys2(SYS_prctl, PR_SET_PDEATHSIG, t->pdeath_sig);
	sc_ctx_resume(&t->ctx, 1);
}
