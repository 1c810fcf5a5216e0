/* SPDX-License-Identifier: MIT */
/*
 * api_lock.c - the API lock: entry points read, a checkpoint writes.
 *
 * Not a pthread_rwlock: that one remembers its writer by thread id, and the
 * checkpoint that takes it for writing releases it in the restored process,
 * where the thread may have another id. One word: readers in the low bits,
 * WRITER while a checkpoint holds it, WANTED while one waits - new readers
 * then wait too, so a checkpoint is never starved by a busy program.
 */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cuda/lib/cuda_internal.h"

#define WRITER 0x40000000u
#define WANTED 0x80000000u
#define READERS 0x3fffffffu

static uint32_t word;

static void futex_wait(uint32_t val)
{
	syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake_all(void)
{
	syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
}

void sc_cu_lock_read(void)
{
	for (;;) {
		uint32_t w = __atomic_load_n(&word, __ATOMIC_ACQUIRE);

		if (w & (WRITER | WANTED)) {
			futex_wait(w);
			continue;
		}
		if (__atomic_compare_exchange_n(&word, &w, w + 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return;
	}
}

void sc_cu_unlock_read(void)
{
	uint32_t w = __atomic_sub_fetch(&word, 1, __ATOMIC_RELEASE);

	if (!(w & READERS) && (w & WANTED))
		futex_wake_all();
}

void sc_cu_lock_write(void)
{
	for (;;) {
		uint32_t w = __atomic_load_n(&word, __ATOMIC_ACQUIRE);

		if (!(w & (READERS | WRITER))) {
			if (__atomic_compare_exchange_n(&word, &w, WRITER, false, __ATOMIC_ACQUIRE,
							__ATOMIC_RELAXED))
				return;
			continue;
		}
		if (!(w & WANTED) && !__atomic_compare_exchange_n(&word, &w, w | WANTED, false,
								   __ATOMIC_RELAXED,
								   __ATOMIC_RELAXED))
			continue;
		futex_wait(w | WANTED);
	}
}

void sc_cu_unlock_write(void)
{
	__atomic_store_n(&word, 0, __ATOMIC_RELEASE);
	futex_wake_all();
}

void sc_cu_lock_forget(void)
{
	__atomic_store_n(&word, 0, __ATOMIC_RELAXED);
}
