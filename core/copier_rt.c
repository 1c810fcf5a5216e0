/* SPDX-License-Identifier: MIT */
/*
 * copier_rt.c - the snapshot process's side of the copier (core_internal.h).
 *
 * Stage contract: runs in the snapshot process that sc_clone_frozen() made, a
 * copy of one thread of a process whose other threads were stopped anywhere,
 * inside malloc or stdio included, with every signal blocked. Its threads'
 * stacks are in the region shared with the checkpoint, and they write nothing
 * else but that region, so the process's own memory stays what it was at the
 * clone. Raw system calls only: no libc, no TLS. It serves until it is killed.
 */
#include "core/core_internal.h"
#include "core/sc_sys.h"

_Static_assert(sizeof(struct sc_copier_ctl) == 64, "one control block a cache line");
_Static_assert(__builtin_offsetof(struct sc_copier_ctl, stack) == 32,
	       "sc_clone_frozen() finds the first stack at 32");

struct sc_copier_ctl *sc_copier_ctl;
int sc_copier_n;

/* rep movsb: fast strings on every x86-64 CPU that has ERMS, and no libc. */
static void copy(uint64_t dst, uint64_t src, uint64_t len)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(len) : : "memory");
}

__attribute__((noreturn)) void sc_copier_serve(struct sc_copier_ctl *c);

void sc_copier_serve(struct sc_copier_ctl *c)
{
	int seen = 0;

	for (;;) {
		int seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);

		if (seq == seen) {
			sc_sys4(SYS_futex, (long)&c->seq, SC_FUTEX_WAIT_SHARED, seen, 0);
			continue;
		}
		copy(c->dst, c->src, c->len);
		seen = seq;
		__atomic_store_n(&c->done, seq, __ATOMIC_RELEASE);
		sc_sys3(SYS_futex, (long)&c->done, SC_FUTEX_WAKE_SHARED, 1);
	}
}

/*
 * long copier_thread(uint64_t stack, struct sc_copier_ctl *c): a thread of
 * the snapshot on @stack serving @c. The new thread has the caller's registers
 * but rax and rsp, so @c travels in r9, which clone() does not take.
 */
long copier_thread(uint64_t stack, struct sc_copier_ctl *c);
__asm__(".text\n"
	".type copier_thread,@function\n"
	"copier_thread:\n"
	"	mov %rsi, %r9\n"
	"	mov %rdi, %rsi\n"
	"	mov $0x50f00, %edi\n" /* VM|FS|FILES|SIGHAND|THREAD|SYSVSEM */
	"	xor %edx, %edx\n"
	"	xor %r10d, %r10d\n"
	"	xor %r8d, %r8d\n"
	"	mov $56, %eax\n"      /* SYS_clone */
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jnz 1f\n"
	"	mov %r9, %rdi\n"
	"	call sc_copier_serve\n"
	"1:	ret\n"
	".size copier_thread, .-copier_thread\n");

void sc_copier_main(struct sc_copier_ctl *c)
{
	/* A block whose thread cannot start says so; the checkpoint reads its
	 * pieces through /proc instead. */
	for (int i = 1; i < sc_copier_n; i++)
		if (copier_thread(c[i].stack, &c[i]) < 0)
			__atomic_store_n(&c[i].done, -1, __ATOMIC_RELEASE);
	sc_copier_serve(&c[0]);
}
