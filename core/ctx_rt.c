/* SPDX-License-Identifier: MIT */
/*
 * ctx_rt.c - resume contexts and raw clones.
 *
 * Stage contract: runs anywhere - in signal handlers, in the frozen child, in
 * threads re-created at restart before their TLS is trusted. Pure assembly:
 * no libc, no stack protector, no TLS.
 */
#include <stddef.h>

#include "core/core_internal.h"

_Static_assert(sizeof(struct sc_ctx) == SC_CTX_SIZE, "resume context layout");
_Static_assert(offsetof(struct sc_ctx, mxcsr) == 64, "resume context layout");

/*
 * int sc_ctx_save(struct sc_ctx *ctx): like setjmp. Returns 0 now, and the
 * value given to sc_ctx_resume() when some thread resumes the context.
 */
__asm__(".text\n"
	".globl sc_ctx_save\n"
	".hidden sc_ctx_save\n"
	".type sc_ctx_save,@function\n"
	"sc_ctx_save:\n"
	"	mov %rbx, 0(%rdi)\n"
	"	mov %rbp, 8(%rdi)\n"
	"	mov %r12, 16(%rdi)\n"
	"	mov %r13, 24(%rdi)\n"
	"	mov %r14, 32(%rdi)\n"
	"	mov %r15, 40(%rdi)\n"
	"	lea 8(%rsp), %rdx\n"      /* the caller's stack pointer after return */
	"	mov %rdx, 48(%rdi)\n"
	"	mov (%rsp), %rdx\n"       /* the return address */
	"	mov %rdx, 56(%rdi)\n"
	"	stmxcsr 64(%rdi)\n"
	"	fnstcw 68(%rdi)\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	".size sc_ctx_save, .-sc_ctx_save\n");

/* void sc_ctx_resume(const struct sc_ctx *ctx, int value): never returns. */
__asm__(".text\n"
	".globl sc_ctx_resume\n"
	".hidden sc_ctx_resume\n"
	".type sc_ctx_resume,@function\n"
	"sc_ctx_resume:\n"
	"	mov 0(%rdi), %rbx\n"
	"	mov 8(%rdi), %rbp\n"
	"	mov 16(%rdi), %r12\n"
	"	mov 24(%rdi), %r13\n"
	"	mov 32(%rdi), %r14\n"
	"	mov 40(%rdi), %r15\n"
	"	ldmxcsr 64(%rdi)\n"
	"	fldcw 68(%rdi)\n"
	"	mov 48(%rdi), %rsp\n"
	"	mov %esi, %eax\n"
	"	jmp *56(%rdi)\n"
	".size sc_ctx_resume, .-sc_ctx_resume\n");

/*
 * long sc_clone_frozen(void): fork the address space (clone with nothing
 * shared and no exit signal: its end must not reach the program as a SIGCHLD
 * of a child it never made, nor can the program's wait() reap it; it is
 * waited for with __WALL) and return the child's pid to the caller. The child never
 * returns: it asks to be killed with the thread that made it, blocks every
 * signal and pauses for ever, writing nothing to its memory, so that memory
 * stays the parent's at the instant of the clone; or, when the checkpoint set
 * up a copier, serves it on the copier's own stacks (copier_rt.c). It runs no
 * atfork handler (glibc's would reset locks and thread lists in the copy) and
 * never uses its own stack.
 */
__asm__(".text\n"
	".globl sc_clone_frozen\n"
	".hidden sc_clone_frozen\n"
	".type sc_clone_frozen,@function\n"
	"sc_clone_frozen:\n"
	"	mov $56, %eax\n"          /* SYS_clone */
	"	xor %edi, %edi\n"         /* no exit signal */
	"	xor %esi, %esi\n"
	"	xor %edx, %edx\n"
	"	xor %r10d, %r10d\n"
	"	xor %r8d, %r8d\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 1f\n"
	"	mov $157, %eax\n"         /* SYS_prctl(PR_SET_PDEATHSIG, SIGKILL) */
	"	mov $1, %edi\n"
	"	mov $9, %esi\n"
	"	syscall\n"
	"	mov $14, %eax\n"          /* SYS_rt_sigprocmask(SIG_SETMASK, all, NULL, 8) */
	"	mov $2, %edi\n"
	"	lea sc_all_signals(%rip), %rsi\n"
	"	xor %edx, %edx\n"
	"	mov $8, %r10d\n"
	"	syscall\n"
	"	mov sc_copier_ctl(%rip), %rdi\n"
	"	test %rdi, %rdi\n"
	"	jz 2f\n"
	"	mov 32(%rdi), %rsp\n"    /* its first block's stack */
	"	call sc_copier_main\n"
	"2:	mov $34, %eax\n"          /* SYS_pause */
	"	syscall\n"
	"	jmp 2b\n"
	"1:	ret\n"
	".size sc_clone_frozen, .-sc_clone_frozen\n"
	".section .rodata\n"
	".balign 8\n"
	"sc_all_signals: .quad -1\n"
	".text\n");

/*
 * long sc_raw_thread(unsigned long flags, uint64_t stack, int *tid,
 *                    void (*fn)(void *), void *arg):
 * clone() a thread of this process (@flags: CLONE_VM and the rest) whose
 * stack ends at @stack (16-byte aligned), running fn(arg), which never
 * returns; @tid goes to the kernel as both parent and child tid pointer.
 * Return: the thread's id, or -errno. The thread gets the caller's registers
 * but rax and rsp: @fn waits on its new stack, @arg travels in r9, which
 * clone() does not take.
 */
__asm__(".text\n"
	".globl sc_raw_thread\n"
	".hidden sc_raw_thread\n"
	".type sc_raw_thread,@function\n"
	"sc_raw_thread:\n"
	"	mov %rcx, -8(%rsi)\n"    /* @fn, for the new thread to pop */
	"	sub $8, %rsi\n"
	"	mov %r8, %r9\n"
	"	mov %rdx, %r10\n"
	"	xor %r8d, %r8d\n"
	"	mov $56, %eax\n"          /* SYS_clone */
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 1f\n"
	"	pop %rax\n"
	"	and $-16, %rsp\n"
	"	mov %r9, %rdi\n"
	"	call *%rax\n"
	"	ud2\n"
	"1:	ret\n"
	".size sc_raw_thread, .-sc_raw_thread\n");
