/* SPDX-License-Identifier: MIT */
/*
 * hold_rt.c - the watchdog of a held checkpoint.
 *
 * A checkpoint that ends the program (--exit-after-save) keeps the program's
 * threads stopped while the image is written: they must not act after the
 * instant the image holds, or the restored program would do it again (a line
 * appended twice, a message sent twice). A stopped thread may hold a lock the
 * writer needs (malloc's arena, a library's own); then the writer would wait
 * for ever. This thread watches the process's input and output (rchar and
 * wchar of /proc/self/io: the snapshot read, the image written): once they
 * stand still for as long as it was given, the writer is taken for stuck,
 * and it lets the program's threads go, so the checkpoint ends as an
 * ordinary one whose program goes on. A job's coordinator, which waits for
 * the other processes' images with its own threads held, says it is not
 * stuck with sc_hold_beat().
 *
 * Stage contract: a raw thread of this process, as reaper_rt.c's (clone()
 * without glibc, its stack is this file's memory, every signal blocked, raw
 * system calls only). sc_hold_start() and sc_hold_end() run in the
 * checkpointing thread.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>

#include "core/core_internal.h"
#include "core/sc_sys.h"

#define HOLD_STACK 8192
#define NS_PER_S 1000000000ll

enum { IDLE, HOLDING, WRITTEN, LET_GO };

static int hold_tid;
static int hold_state;
static uint64_t hold_beats; /* sc_hold_beat(): progress that is no input or output */
static int64_t hold_stall_ns;
static char io_buf[512];
static uint8_t hold_stack[HOLD_STACK] __attribute__((aligned(64)));

static int64_t monotonic_ns(void)
{
	struct timespec t;

	sc_sys2(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&t);
	return (int64_t)t.tv_sec * NS_PER_S + t.tv_nsec;
}

/*
 * rchar + wchar of /proc/self/io: bytes read and written by the process so
 * far, less this thread's own reads of the file (each shows in the next).
 */
static uint64_t io_bytes(void)
{
	static uint64_t own;
	long fd = sc_sys4(SYS_openat, AT_FDCWD, (long)"/proc/self/io", O_RDONLY | O_CLOEXEC, 0);
	long n = fd < 0 ? 0 : sc_sys3(SYS_read, fd, (long)io_buf, sizeof(io_buf) - 1);
	uint64_t sum = __atomic_load_n(&hold_beats, __ATOMIC_ACQUIRE) - own;

	if (fd >= 0)
		sc_sys1(SYS_close, fd);
	io_buf[n > 0 ? n : 0] = '\0';
	own += n > 0 ? (uint64_t)n : 0;
	for (const char *p = io_buf; *p; p++) {
		if ((p[0] != 'r' && p[0] != 'w') || p[1] != 'c' || p[2] != 'h' || p[3] != 'a' ||
		    p[4] != 'r' || p[5] != ':')
			continue;
		for (p += 6; *p == ' '; p++)
			;
		sum += sc_parse_dec(&p);
		if (!*p)
			break;
	}
	return sum;
}

__attribute__((noreturn)) static void watch(void *unused)
{
	uint64_t seen = io_bytes(), now_bytes;
	int64_t moved = monotonic_ns();
	struct timespec tick = { 0, 250 * 1000 * 1000 };
	int expected = HOLDING;

	(void)unused;
	while (__atomic_load_n(&hold_state, __ATOMIC_ACQUIRE) == HOLDING) {
		sc_sys4(SYS_futex, (long)&hold_state, SC_FUTEX_WAIT_PRIVATE, HOLDING, (long)&tick);
		now_bytes = io_bytes();
		if (now_bytes != seen) {
			seen = now_bytes;
			moved = monotonic_ns();
		} else if (monotonic_ns() - moved > hold_stall_ns) {
			break;
		}
	}
	if (__atomic_compare_exchange_n(&hold_state, &expected, LET_GO, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		sc_threads_release();
	for (;;)
		sc_sys1(SYS_exit, 0);
}

long sc_hold_start(int64_t stall_ns)
{
	uint64_t all = ~0ull, old = 0;
	long tid;

	hold_stall_ns = stall_ns;
	__atomic_store_n(&hold_state, HOLDING, __ATOMIC_RELEASE);
	/* it takes none of the program's signals: blocked before it starts */
	sc_sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8);
	tid = sc_raw_thread(SC_RAW_THREAD_CLONE, (uint64_t)(uintptr_t)(hold_stack + HOLD_STACK), &hold_tid,
			    watch, NULL);
	sc_sys4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8);
	if (tid < 0)
		__atomic_store_n(&hold_state, IDLE, __ATOMIC_RELEASE);
	return tid;
}

void sc_hold_beat(void)
{
	__atomic_add_fetch(&hold_beats, 1, __ATOMIC_RELEASE);
}

bool sc_hold_end(void)
{
	int expected = HOLDING, tid;
	bool held = __atomic_compare_exchange_n(&hold_state, &expected, WRITTEN, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);

	sc_futex_wake(&hold_state, 1);
	while ((tid = __atomic_load_n(&hold_tid, __ATOMIC_ACQUIRE)) != 0)
		sc_sys4(SYS_futex, (long)&hold_tid, SC_FUTEX_WAIT_SHARED, tid, 0);
	__atomic_store_n(&hold_state, IDLE, __ATOMIC_RELEASE);
	return held;
}
