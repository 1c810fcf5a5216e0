/* SPDX-License-Identifier: MIT */
/*
 * timers_rt.c - read the process's timers at the instant of the snapshot.
 *
 * Stage contract: sc_timers_freeze() runs in the checkpointing thread while
 * every other thread is stopped (possibly inside malloc or stdio), before the
 * snapshot is cloned. Raw system calls and the memory sc_timers_prepare()
 * allocated only: no malloc, no locks, no errno. The list of POSIX timers is
 * read again here, so that a timer made or deleted while the threads stopped
 * is seen as it is; each timer's time left, interval and overrun, and the
 * three itimers, are read at this instant too.
 */
#include <fcntl.h>

#include "core/sc_sys.h"
#include "core/sc_timers.h"

#define E2BIG_ 7
#define EPROTO_ 71

struct kernel_timespec {
	int64_t sec, nsec;
};

struct kernel_itimerspec {
	struct kernel_timespec interval, value;
};

struct kernel_itimerval {
	int64_t interval_sec, interval_usec, value_sec, value_usec;
};

static int starts(const char *s, const char *end, const char *word)
{
	for (; *word; s++, word++)
		if (s >= end || *s != *word)
			return 0;
	return 1;
}

/*
 * A decimal (@base 10) or hex (16) number at *@s, which moves past it, into
 * @v (hex: all 64 bits). Return: 1, or 0 where there is none.
 */
static int number(const char **s, const char *end, int base, uint64_t *v)
{
	int digits = 0, neg = base == 10 && *s < end && **s == '-';

	*v = 0;
	for (*s += neg; *s < end && digits < 20; (*s)++, digits++) {
		char c = **s;
		int d = c >= '0' && c <= '9' ? c - '0' : base == 16 && c >= 'a' && c <= 'f' ?
			c - 'a' + 10 : -1;

		if (d < 0)
			break;
		*v = *v * (uint64_t)base + (uint64_t)d;
	}
	if (neg)
		*v = -*v;
	return digits > 0;
}

/* "signal"/"none"/"thread", then "/pid." or "/tid." and the id. */
static int parse_notify(const char *s, const char *end, struct sc_timer *t)
{
	uint64_t v;

	if (starts(s, end, "signal/"))
		t->notify = SC_TIMER_SIGNAL, s += 7;
	else if (starts(s, end, "none/"))
		t->notify = SC_TIMER_NONE, s += 5;
	else if (starts(s, end, "thread/"))
		t->notify = SC_TIMER_THREAD, s += 7;
	else
		return -EPROTO_;
	if (starts(s, end, "tid."))
		t->notify |= SC_TIMER_THREAD_ID;
	else if (!starts(s, end, "pid."))
		return -EPROTO_;
	s += 4;
	if (!number(&s, end, 10, &v))
		return -EPROTO_;
	t->tid = t->notify & SC_TIMER_THREAD_ID ? (int32_t)v : 0;
	return 0;
}

/* One line of a timer's entry into @t (the entry starts at "ID:"). */
static int parse_line(const char *s, const char *end, struct sc_timer *t)
{
	uint64_t v;

	if (starts(s, end, "signal: ")) {
		s += 8;
		if (!number(&s, end, 10, &v) || !starts(s, end, "/"))
			return -EPROTO_;
		s++;
		t->signo = (uint32_t)v;
		return number(&s, end, 16, &t->value) ? 0 : -EPROTO_;
	}
	if (starts(s, end, "notify: "))
		return parse_notify(s + 8, end, t);
	if (starts(s, end, "ClockID: ")) {
		s += 9;
		if (!number(&s, end, 10, &v))
			return -EPROTO_;
		t->clock = (int32_t)v;
	}
	return 0; /* a line a later kernel adds */
}

/* In ascending ids: the kernel lists the newest first, so reverse, then sort what is left. */
static void sort_ids(struct sc_timer *t, long n)
{
	for (long i = 0; i < n / 2; i++) {
		struct sc_timer x = t[i];

		t[i] = t[n - 1 - i];
		t[n - 1 - i] = x;
	}
	for (long i = 1; i < n; i++) {
		struct sc_timer x = t[i];
		long j = i;

		for (; j > 0 && t[j - 1].id > x.id; j--)
			t[j] = t[j - 1];
		t[j] = x;
	}
}

long sc_timers_parse(const char *text, long len, struct sc_timer *t, uint32_t cap)
{
	const char *s = text, *end = text + len;
	long n = 0;

	while (s < end) {
		const char *eol = s;
		int err = 0;

		while (eol < end && *eol != '\n')
			eol++;
		if (starts(s, eol, "ID: ")) {
			const char *p = s + 4;
			uint64_t id;

			if (n >= cap)
				return -E2BIG_;
			if (!number(&p, eol, 10, &id) || id > 0x7fffffff)
				return -EPROTO_;
			t[n++] = (struct sc_timer){ .id = (int32_t)id, .clock = -1 };
		} else if (n > 0) {
			err = parse_line(s, eol, &t[n - 1]);
		}
		if (err < 0)
			return err;
		s = eol + 1;
	}
	sort_ids(t, n);
	return n;
}

static struct sc_time from_ts(struct kernel_timespec ts)
{
	return (struct sc_time){ (uint64_t)ts.sec, (uint64_t)ts.nsec };
}

static void read_itimers(struct sc_timers *s)
{
	for (int which = 0; which < SC_ITIMERS; which++) {
		struct kernel_itimerval v = { 0 };

		sc_sys2(SYS_getitimer, which, (long)&v);
		s->it[which].value = (struct sc_time){ (uint64_t)v.value_sec,
						       (uint64_t)v.value_usec * 1000 };
		s->it[which].interval = (struct sc_time){ (uint64_t)v.interval_sec,
							  (uint64_t)v.interval_usec * 1000 };
		/*
		 * ITIMER_REAL is armed again only when its SIGALRM is taken: one that
		 * fired while the threads stopped reads as no time left. It is still
		 * an interval timer, due one interval after that signal.
		 */
		if (!v.value_sec && !v.value_usec && (v.interval_sec || v.interval_usec))
			s->it[which].value = s->it[which].interval;
	}
}

/* The list at this instant, into z->text, then z->timers.t. */
static long read_list(struct sc_timers_frozen *z)
{
	long fd = sc_sys4(SYS_openat, AT_FDCWD, (long)"/proc/self/timers",
			  O_RDONLY | O_CLOEXEC, 0), len = 0, r = 1;

	if (fd < 0)
		return fd;
	while (r > 0 && len < z->text_size) {
		r = sc_sys3(SYS_read, fd, (long)(z->text + len), z->text_size - len);
		len += r > 0 ? r : 0;
	}
	sc_sys1(SYS_close, fd);
	if (r < 0)
		return r;
	if (len >= z->text_size)
		return -E2BIG_;
	return sc_timers_parse(z->text, len, z->timers.t, z->cap);
}

void sc_timers_freeze(struct sc_timers_frozen *z)
{
	long n = z->text ? read_list(z) : 0;

	z->err = 0;
	z->err_id = -1;
	z->timers.n = 0;
	read_itimers(&z->timers);
	if (n < 0) {
		z->err = (int)n;
		return;
	}
	for (long i = 0; i < n; i++) {
		struct sc_timer *t = &z->timers.t[i];
		struct kernel_itimerspec its = { 0 };
		long r = sc_sys2(SYS_timer_gettime, t->id, (long)&its);

		if (r >= 0)
			r = sc_sys1(SYS_timer_getoverrun, t->id);
		if (r < 0) {
			z->err = (int)r;
			z->err_id = t->id;
			return;
		}
		t->overrun = (int32_t)r;
		t->left = from_ts(its.value);
		t->interval = from_ts(its.interval);
	}
	z->timers.n = (uint32_t)n;
}
