/* SPDX-License-Identifier: MIT */
/*
 * restorer_rt.c - stage 2 of selfckpt-restore: the restorer blob.
 *
 * Stage contract: the loader copied this code, its arguments and a private
 * stack into a hole that no saved mapping uses, blocked every signal,
 * unregistered its rseq area and jumped to sc_restorer_entry on the blob's
 * stack. The premapped memory is filled and checked; descriptors, working
 * directory and limits are already the restored process's. From here on only
 * raw system calls: the loader's code, libc and stack are being unmapped.
 * The blob is position-independent and self-contained (no relocations: the
 * build checks), because it runs at whatever address the hole has.
 */
#include <asm/prctl.h>
#include <linux/mman.h>
#include <linux/prctl.h>
#include <linux/sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/shm.h>

#include "core/restore/restorer.h"
#include "core/sc_records.h"
#include "core/sc_handoff.h"
#include "core/sc_sys.h"

#define MREMAP_MAYMOVE_ 1
#define MREMAP_FIXED_ 2

/* The entry: switch to the blob's stack, then restore. Must be first. */
__asm__(".section .text.entry,\"ax\",@progbits\n"
	".globl sc_restorer_entry\n"
	".hidden sc_restorer_entry\n"
	"sc_restorer_entry:\n"
	"	mov 0(%rdi), %rsp\n" /* args->stack_top */
	"	and $-16, %rsp\n"
	"	call sc_restorer_main\n"
	"	ud2\n"
	".text\n");

void sc_restorer_main(struct sc_restorer_args *a) __attribute__((used, noreturn));

/*
 * long blob_clone3(struct clone_args *ca, size_t size, entry, arg): the child
 * starts on ca->stack + ca->stack_size and calls entry(arg) in the restored
 * library; it never comes back into the blob. Only for saved thread ids
 * (set_tid), which clone() cannot ask for.
 */
long blob_clone3(void *ca, unsigned long size, uint64_t entry, uint64_t arg);
__asm__(".text\n"
	".globl blob_clone3\n"
	".hidden blob_clone3\n"
	"blob_clone3:\n"
	"	push %r12\n"
	"	push %r13\n"
	"	mov %rdx, %r12\n"
	"	mov %rcx, %r13\n"
	"	mov $435, %eax\n" /* SYS_clone3 */
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 1f\n"
	"	mov %r13, %rdi\n"
	"	and $-16, %rsp\n"
	"	xor %ebp, %ebp\n"
	"	call *%r12\n"
	"	ud2\n"
	"1:	pop %r13\n"
	"	pop %r12\n"
	"	ret\n");

/*
 * long blob_clone(flags, stack_top, tid_addr, tls, entry, arg): the same with
 * clone(), which every seccomp profile that refuses clone3 still allows (Docker
 * answers clone3 with ENOSYS so that libc falls back to clone). @tid_addr is
 * both the parent and the child tid pointer.
 */
long blob_clone(uint64_t flags, uint64_t stack_top, uint64_t tid_addr, uint64_t tls,
		uint64_t entry, uint64_t arg);
__asm__(".text\n"
	".globl blob_clone\n"
	".hidden blob_clone\n"
	"blob_clone:\n"
	"	push %r12\n"
	"	push %r13\n"
	"	mov %r8, %r12\n"
	"	mov %r9, %r13\n"
	"	mov %rcx, %r8\n"          /* tls */
	"	mov %rdx, %r10\n"         /* child tid */
	"	mov $56, %eax\n"          /* SYS_clone */
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 1f\n"
	"	mov %r13, %rdi\n"
	"	and $-16, %rsp\n"
	"	xor %ebp, %ebp\n"
	"	call *%r12\n"
	"	ud2\n"
	"1:	pop %r13\n"
	"	pop %r12\n"
	"	ret\n");

struct clone_args_ {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	uint64_t set_tid, set_tid_size, cgroup;
};

#define CLONE_THREAD_FLAGS                                                                     \
	(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |    \
	 CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID)
#define THREAD_START_ROOM 8192 /* below the saved stack pointer, nothing is live */

static void copy_bytes(uint8_t *d, const uint8_t *s, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		d[i] = s[i];
}

static void zero_bytes(uint8_t *d, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		d[i] = 0;
}

/* Report on standard error (already the restored process's) and die. */
__attribute__((noreturn)) static void fail(struct sc_restorer_args *a, const char *what,
					   long err, uint64_t addr)
{
	static const char hex[] = "0123456789abcdef";
	char *m = a->msg;
	uint64_t n = 0;
	const char *prefix = "selfckpt-restore: error: restore failed after the point of no "
			     "return: ";

	for (const char *p = prefix; *p && n < 200; p++)
		m[n++] = *p;
	for (const char *p = what; *p && n < 220; p++)
		m[n++] = *p;
	m[n++] = ' ';
	m[n++] = '0';
	m[n++] = 'x';
	for (int i = 60; i >= 0; i -= 4)
		m[n++] = hex[(addr >> i) & 15];
	m[n++] = ' ';
	m[n++] = 'e';
	m[n++] = '=';
	err = -err;
	m[n++] = (char)('0' + (err / 100) % 10);
	m[n++] = (char)('0' + (err / 10) % 10);
	m[n++] = (char)('0' + err % 10);
	m[n++] = '\n';
	sc_write(2, m, n);
	sc_sys1(SYS_exit_group, 70);
	__builtin_unreachable();
}

static void unmap_loader(struct sc_restorer_args *a)
{
	for (uint32_t i = 0; i < a->n_unmap; i++)
		sc_sys2(SYS_munmap, (long)a->unmap[2 * i], (long)a->unmap[2 * i + 1]);
}

static long move(uint64_t from, uint64_t len, uint64_t to)
{
	return sc_sys5(SYS_mremap, (long)from, (long)len, (long)len,
		       MREMAP_MAYMOVE_ | MREMAP_FIXED_, (long)to);
}

/* [vvar], [vvar_vclock] and [vdso] go back where the image had them, together. */
static void move_vdso(struct sc_restorer_args *a)
{
	uint64_t base = a->vdso_parts[0][0] ? a->vdso_parts[0][0] : a->vdso_parts[2][0];
	uint64_t shift_to = a->vdso_target;

	if (!a->vdso_target || base == a->vdso_target)
		return;
	/* Through a free room first when the old and new places overlap. */
	if (a->vdso_temp) {
		for (int i = 0; i < 3; i++)
			if (a->vdso_parts[i][1] &&
			    move(a->vdso_parts[i][0], a->vdso_parts[i][1],
				 a->vdso_temp + (a->vdso_parts[i][0] - base)) < 0)
				fail(a, "cannot move the vdso to", -22, a->vdso_temp);
		for (int i = 0; i < 3; i++)
			a->vdso_parts[i][0] = a->vdso_temp + (a->vdso_parts[i][0] - base);
		base = a->vdso_temp;
	}
	for (int i = 0; i < 3; i++) {
		long r;

		if (!a->vdso_parts[i][1])
			continue;
		r = move(a->vdso_parts[i][0], a->vdso_parts[i][1],
			 shift_to + (a->vdso_parts[i][0] - base));
		if (r < 0)
			fail(a, "cannot move the vdso to", r, shift_to);
	}
}

/* The madvise() advice for each memory flag a restore gives back. */
static const struct {
	uint32_t bit;
	int advice;
} advices[] = {
	{ SC_VMF_DONTFORK, MADV_DONTFORK },   { SC_VMF_WIPEONFORK, MADV_WIPEONFORK },
	{ SC_VMF_DONTDUMP, MADV_DONTDUMP },   { SC_VMF_HUGEPAGE, MADV_HUGEPAGE },
	{ SC_VMF_NOHUGEPAGE, MADV_NOHUGEPAGE }, { SC_VMF_MERGEABLE, MADV_MERGEABLE },
	{ SC_VMF_SEQUENTIAL, MADV_SEQUENTIAL }, { SC_VMF_RANDOM, MADV_RANDOM },
};

#define MLOCK_ONFAULT_ 1

/*
 * Each mapping's own settings (format 1.3), once its content is in place:
 * locking first would fault in pages the copies then write anyway, and
 * MADV_WIPEONFORK or MADV_DONTFORK change nothing here. A setting the kernel
 * refuses now is no restore: the message names the mapping.
 */
static void give_settings(struct sc_restorer_args *a)
{
	for (uint32_t i = 0; i < a->n_ops; i++) {
		const struct sc_op *op = &a->ops[i];
		long r = 0;

		if (!(op->vmflags & SC_VMF_KNOWN))
			continue;
		for (unsigned k = 0; k < sizeof(advices) / sizeof(advices[0]); k++)
			if ((op->vmflags & advices[k].bit) &&
			    (r = sc_sys3(SYS_madvise, (long)op->start, (long)op->len,
					 advices[k].advice)) < 0)
				fail(a, "cannot give back the madvise() setting of the mapping at",
				     r, op->start);
		if (op->vmflags & (SC_VMF_LOCKED | SC_VMF_LOCKONFAULT))
			r = sc_sys3(SYS_mlock2, (long)op->start, (long)op->len,
				    op->vmflags & SC_VMF_LOCKONFAULT ? MLOCK_ONFAULT_ : 0);
		if (r < 0)
			fail(a, "cannot lock (mlock) again the mapping at", r, op->start);
	}
}

#define MADV_GUARD_INSTALL_ 102 /* Linux 6.13+ */

/*
 * The guard pages the program had (format 1.5), once the memory around them
 * is in place: before give_settings(), as the kernel puts none in a locked
 * mapping. A kernel without them cannot give the program its faults back.
 */
static void put_guards(struct sc_restorer_args *a)
{
	for (uint32_t i = 0; i < a->n_guards; i++) {
		long r = sc_sys3(SYS_madvise, (long)a->guards[i].start, (long)a->guards[i].len,
				 MADV_GUARD_INSTALL_);

		if (r < 0)
			fail(a, "cannot put back the guard pages (MADV_GUARD_INSTALL) at", r,
			     a->guards[i].start);
	}
}

#define SHM_REMAP_ 040000

/* Does segment @id have @attaches attaches (every process of a tree attached it)? */
static bool attached_by_all(long id, uint64_t attaches)
{
	struct shmid_ds ds;

	if (!attaches)
		return true;
	return sc_sys3(SYS_shmctl, id, IPC_STAT, (long)&ds) == 0 && ds.shm_nattch >= attaches;
}

/*
 * A System V segment, made and filled by stage 1 with its id, attached at its
 * place as it was (read-only or not), so that it is the segment again and not
 * a copy; marked for removal again once attached, if it was (in a tree, once
 * each of its processes has: op->offset).
 */
static long attach_segment(const struct sc_op *op)
{
	long r = sc_sys3(SYS_shmat, op->fd, (long)op->start,
			 (long)((op->flags & 0xffffffffu) | SHM_REMAP_));

	if (r >= 0 && (op->flags & SC_SHMAT_RMID) && attached_by_all(op->fd, op->offset)) {
		long rm = sc_sys3(SYS_shmctl, op->fd, 0 /* IPC_RMID */, 0);

		if (rm < 0)
			return rm;
	}
	return r;
}

static void place_memory(struct sc_restorer_args *a)
{
	for (uint32_t i = 0; i < a->n_ops; i++) {
		const struct sc_op *op = &a->ops[i];
		long r;

		switch (op->kind) {
		case SC_OP_MOVE:
			r = move(op->src, op->len, op->start);
			break;
		case SC_OP_MAP_FD:
			r = sc_sys6(SYS_mmap, (long)op->start, (long)op->len, op->map_prot,
				    (long)(op->flags | MAP_FIXED), op->fd, (long)op->offset);
			break;
		case SC_OP_SHMAT:
			r = attach_segment(op);
			break;
		default:
			r = sc_sys6(SYS_mmap, (long)op->start, (long)op->len, op->map_prot,
				    (long)(op->flags | MAP_FIXED | MAP_ANONYMOUS), -1, 0);
			break;
		}
		if (r < 0 || (uint64_t)r != op->start)
			fail(a, "cannot map memory at", r < 0 ? r : -17, op->start);
	}
	for (uint32_t i = 0; i < a->n_copies; i++) {
		const struct sc_copy *c = &a->copies[i];

		if (c->src)
			copy_bytes((uint8_t *)c->dst, (const uint8_t *)c->src, c->len);
		else
			zero_bytes((uint8_t *)c->dst, c->len);
	}
	put_guards(a);
	give_settings(a);
	/* Staged content is in place now: drop the staging room around the blob. */
	sc_sys2(SYS_munmap, (long)a->hole_start, (long)(a->blob_start - a->hole_start));
	sc_sys2(SYS_munmap, (long)(a->blob_start + a->blob_len),
		(long)(a->hole_end - a->blob_start - a->blob_len));
	for (uint32_t i = 0; i < a->n_ops; i++)
		sc_sys3(SYS_mprotect, (long)a->ops[i].start, (long)a->ops[i].len,
			a->ops[i].prot);
}

/*
 * The memory layout, and /proc/self/exe naming the program's file again.
 * The second needs CAP_CHECKPOINT_RESTORE in the process's user namespace
 * (same-ids mode has it, in the namespace it made): where the kernel refuses
 * it, the layout is set alone, as stage 1 checked it would be, and the
 * process keeps the restorer's name there (README).
 */
static void restore_process(struct sc_restorer_args *a)
{
	long r = -1;

	a->mm.auxv = (uint64_t)a->auxv;
	if (a->mm.exe_fd >= 0)
		r = sc_sys5(SYS_prctl, PR_SET_MM, PR_SET_MM_MAP, (long)&a->mm, sizeof(a->mm), 0);
	a->mm.exe_fd = -1;
	if (r < 0)
		r = sc_sys5(SYS_prctl, PR_SET_MM, PR_SET_MM_MAP, (long)&a->mm, sizeof(a->mm), 0);
	if (r < 0)
		fail(a, "cannot set the memory layout (PR_SET_MM_MAP), brk", r, a->mm.brk);
	for (uint32_t i = 0; i < a->n_close; i++)
		sc_sys1(SYS_close, a->close_fds[i]);
	for (int sig = 1; sig <= 64; sig++)
		if (a->act_valid & (1ull << (sig - 1)))
			sc_sys4(SYS_rt_sigaction, sig, (long)&a->act[sig - 1], 0, 8);
}

struct kernel_stack_t {
	uint64_t sp;
	int32_t flags;
	int32_t pad;
	uint64_t size;
};

/*
 * Every other thread: each resumes where it stopped, inside the stop handler.
 * clone3 only for the saved ids; stage 1 made sure it is allowed before it
 * chose them (restore_probe.c).
 */
static void spawn_threads(struct sc_restorer_args *a)
{
	for (uint32_t i = 0; i < a->n_threads; i++) {
		const struct sc_thread_args *t = &a->threads[i];
		uint64_t top = t->stack - 512;
		struct clone_args_ ca = {
			.flags = CLONE_THREAD_FLAGS, .child_tid = t->tid_addr,
			.parent_tid = t->tid_addr, .stack = top - THREAD_START_ROOM,
			.stack_size = THREAD_START_ROOM, .tls = t->fs_base,
			.set_tid = (uint64_t)&t->tid, .set_tid_size = 1 };
		long r;

		if (i == a->self)
			continue;
		if (a->same_ids)
			r = blob_clone3(&ca, sizeof(ca), a->thread_start, t->state);
		else
			r = blob_clone(CLONE_THREAD_FLAGS, top, t->tid_addr, t->fs_base,
				       a->thread_start, t->state);
		if (r < 0)
			fail(a, "cannot re-create the thread whose stack is at", r, t->stack);
		a->threads[i].new_tid = (int32_t)r;
	}
}

/* This thread becomes threads[self]: its TLS, tid address, robust list, rseq. */
static void restore_thread(struct sc_restorer_args *a)
{
	struct kernel_stack_t ss = { .sp = a->ss_sp, .flags = (int32_t)a->ss_flags,
				     .size = a->ss_size };
	long tid;

	sc_sys2(SYS_arch_prctl, ARCH_SET_FS, (long)a->fs_base);
	if (a->gs_base)
		sc_sys2(SYS_arch_prctl, ARCH_SET_GS, (long)a->gs_base);
	tid = sc_sys1(SYS_set_tid_address, (long)a->tid_addr);
	if (a->tid_addr)
		*(int32_t *)a->tid_addr = (int32_t)tid; /* glibc's cached thread id */
	if (a->robust_head)
		sc_sys2(SYS_set_robust_list, (long)a->robust_head, (long)a->robust_len);
	if (a->rseq_len)
		sc_sys4(SYS_rseq, (long)a->rseq_addr, a->rseq_len, 0, a->rseq_sig);
	if (a->ss_size)
		sc_sys2(SYS_sigaltstack, (long)&ss, 0);
	/* the parent-death signal this thread had set (prctl), as for every thread */
	if (a->pdeath_sig)
		sc_sys2(SYS_prctl, PR_SET_PDEATHSIG, a->pdeath_sig);
}

/* The itimers and POSIX timers, once every thread is back (restorer_timers_rt.c). */
static void restore_timers(struct sc_restorer_args *a)
{
	int32_t failed = -1;
	long r = sc_restorer_timers(a, &failed);

	if (r < 0 && failed < 0)
		fail(a, "cannot set an interval timer (setitimer) of", r, 0);
	if (r < 0)
		fail(a, "cannot make again the POSIX timer of id", r, (uint64_t)failed);
}

/* Load the callee-saved registers of the resume context and jump: like longjmp. */
__attribute__((noreturn)) static void resume(const uint8_t *ctx)
{
	__asm__ volatile("mov 0(%0), %%rbx\n"
			 "mov 8(%0), %%rbp\n"
			 "mov 16(%0), %%r12\n"
			 "mov 24(%0), %%r13\n"
			 "mov 32(%0), %%r14\n"
			 "mov 40(%0), %%r15\n"
			 "ldmxcsr 64(%0)\n"
			 "fldcw 68(%0)\n"
			 "mov 48(%0), %%rsp\n"
			 "mov $1, %%eax\n"
			 "jmp *56(%0)\n"
			 :
			 : "D"(ctx)
			 : "memory");
	__builtin_unreachable();
}

void sc_restorer_main(struct sc_restorer_args *a)
{
	struct sc_handoff *h;

	unmap_loader(a);
	move_vdso(a);
	place_memory(a);
	restore_process(a);
	spawn_threads(a);
	restore_thread(a);
	restore_timers(a);
	h = (struct sc_handoff *)a->handoff;
	if (h) {
		h->blob_start = a->blob_start;
		h->blob_len = a->blob_len;
		h->restores++;
		for (unsigned i = 0; i < sizeof(h->image); i++)
			h->image[i] = a->image[i];
		h->env = a->env;
		h->env_len = a->env_len;
	}
	resume(a->ctx);
}
