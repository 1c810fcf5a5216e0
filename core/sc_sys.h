/* SPDX-License-Identifier: MIT */
/*
 * sc_sys.h - raw Linux x86-64 system calls for code that must not touch libc:
 * signal handlers, the frozen snapshot child, re-created threads and the
 * restore loader. Each returns the kernel's value: >= 0, or -errno. Nothing
 * here reads or writes errno or any other thread-local state.
 */
#ifndef SC_SYS_H
#define SC_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>

static inline long sc_sys0(long n)
{
	long r;

	__asm__ volatile("syscall" : "=a"(r) : "a"(n) : "rcx", "r11", "memory");
	return r;
}

static inline long sc_sys1(long n, long a)
{
	long r;

	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a) : "rcx", "r11", "memory");
	return r;
}

static inline long sc_sys2(long n, long a, long b)
{
	long r;

	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b) : "rcx", "r11", "memory");
	return r;
}

static inline long sc_sys3(long n, long a, long b, long c)
{
	long r;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return r;
}

static inline long sc_sys4(long n, long a, long b, long c, long d)
{
	long r;
	register long r10 __asm__("r10") = d;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return r;
}

static inline long sc_sys5(long n, long a, long b, long c, long d, long e)
{
	long r;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return r;
}

static inline long sc_sys6(long n, long a, long b, long c, long d, long e, long f)
{
	long r;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return r;
}

#define SC_FUTEX_WAIT_PRIVATE 128
#define SC_FUTEX_WAKE_PRIVATE 129

static inline long sc_futex_wait(int *addr, int val)
{
	return sc_sys4(SYS_futex, (long)addr, SC_FUTEX_WAIT_PRIVATE, val, 0);
}

static inline long sc_futex_wake(int *addr, int n)
{
	return sc_sys3(SYS_futex, (long)addr, SC_FUTEX_WAKE_PRIVATE, n);
}

/* Futexes in memory shared with another process (the copier's control block). */
#define SC_FUTEX_WAIT_SHARED 0
#define SC_FUTEX_WAKE_SHARED 1

static inline long sc_gettid(void)
{
	return sc_sys0(SYS_gettid);
}

/* A directory entry as getdents64() returns it. */
struct sc_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* The decimal number that is all of @s (a task or descriptor name); -1 otherwise. */
static inline int sc_parse_uint(const char *s)
{
	int v = 0;

	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (*s - '0');
	return *s ? -1 : v;
}

/* The lower-case hexadecimal number at *@p (as /proc/self/maps writes them); *@p moves past it. */
static inline uint64_t sc_parse_hex(const char **p)
{
	uint64_t v = 0;

	for (;; (*p)++) {
		char c = **p;

		if (c >= '0' && c <= '9')
			v = v << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
		else
			return v;
	}
}

/* Decimal digits at *@p, which moves past them: their value (0 where there are none). */
static inline uint64_t sc_parse_dec(const char **p)
{
	uint64_t v = 0;

	for (; **p >= '0' && **p <= '9'; (*p)++)
		v = v * 10 + (uint64_t)(**p - '0');
	return v;
}

/* proc_status_rt.c: /proc text files and the fields of status files, raw */
/**
 * sc_proc_read() - the text of @path into @buf (@size bytes, NUL-terminated):
 * its length (@size - 1: it may not all have fit), or -1.
 */
long sc_proc_read(const char *path, char *buf, long size);
/** sc_status_field() - the value of the line of @text starting with @key ("VmLck:"), past its blanks; or NULL. */
const char *sc_status_field(const char *text, const char *key);
/** sc_status_value() - both: the value of @key in @path, read into @buf; NULL where it cannot be read or is not there. */
const char *sc_status_value(const char *path, const char *key, char *buf, long size);

/* rep movsb: fast strings on every x86-64 CPU that has ERMS, and no libc. */
static inline void sc_copy_bytes(uint64_t dst, uint64_t src, uint64_t len)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(len) : : "memory");
}

/* @head, then the number @n (>= 0), then @tail, into @path (room for all, and a NUL). */
static inline void sc_path_number(char *path, const char *head, long n, const char *tail)
{
	char digits[20];
	int d = 0, k = 0;

	do
		digits[d++] = (char)('0' + n % 10);
	while ((n /= 10) > 0);
	for (int i = 0; head[i]; i++)
		path[k++] = head[i];
	while (d > 0)
		path[k++] = digits[--d];
	for (int i = 0; tail[i]; i++)
		path[k++] = tail[i];
	path[k] = '\0';
}

static inline long sc_write(int fd, const void *p, size_t n)
{
	return sc_sys3(SYS_write, fd, (long)p, (long)n);
}

#endif /* SC_SYS_H */
