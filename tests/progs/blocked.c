/* SPDX-License-Identifier: MIT */
/*
 * blocked - threads caught inside system calls and with their own kernel
 * state at the checkpoint:
 *   - a reader blocked in read() on an empty pipe: after the restore the main
 *     thread writes to the pipe and closes it; the reader gets exactly those
 *     bytes, then end of file;
 *   - a sleeper in nanosleep() of SLEEP_S seconds: a sleep cannot be
 *     restarted transparently once a signal handler ran (the checkpoint stops
 *     every thread with one), so the restored sleeper sees -1/EINTR with the
 *     time that remained at the checkpoint; a run that never checkpoints
 *     sleeps to the end;
 *   - a thread with an alternate signal stack: sigaltstack() gives the same
 *     stack after the restore, and a signal taken there runs on it;
 *   - every thread: rseq is registered again (the rseq system call says the
 *     area is busy) and sched_getcpu() agrees with the getcpu system call.
 * The threads report to the main thread, which prints everything in a fixed
 * order. What the sleeper saw goes to standard error too.
 */
#include <pthread.h>
#include <sched.h>
#include <sys/rseq.h>
#include <time.h>

#include "prog.h"

#define SLEEP_S 2
#define MSG_LEN 5000

static int pfd[2];
static pid_t reader_tid, sleeper_tid;
static long got_len;
static int got_ok;
static int sleep_ret, sleep_errno;
static struct timespec sleep_rem;
static long long sleep_ns;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int alt_ready, alt_go;
static char altstack[64 * 1024];
static volatile int on_alt, handled;
static int alt_same, alt_signal_ok;

enum { T_MAIN, T_READER, T_SLEEPER, T_ALT, T_N };
static const char *const tname[T_N] = { "main", "reader", "sleeper", "altstack" };
static int rseq_state[T_N]; /* 1 registered, 0 not (the call registered it), -1 not in use */
static int cpu_ok[T_N];

static char msg_byte(long i)
{
	return (char)('a' + (i * 7 + i / 13) % 26);
}

/* Is the rseq area of glibc registered for the calling thread? And sched_getcpu() right? */
static void check_cpu(int who)
{
	struct rseq *rs = (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
	unsigned cpu = 0;

	if (!__rseq_size) {
		rseq_state[who] = -1;
	} else {
		long r = syscall(SYS_rseq, rs, (unsigned)__rseq_size, 0, RSEQ_SIG);

		if (r < 0 && errno == EINVAL) /* glibc may register a larger area than it uses */
			r = syscall(SYS_rseq, rs, 32u, 0, RSEQ_SIG);
		rseq_state[who] = r < 0 && errno == EBUSY;
	}
	for (int i = 0; i < 20 && !cpu_ok[who]; i++) { /* the thread may migrate in between */
		int c = sched_getcpu();

		cpu_ok[who] = c >= 0 && syscall(SYS_getcpu, &cpu, NULL, NULL) == 0 &&
			      (unsigned)c == cpu;
	}
}

static void *reader(void *arg)
{
	static char buf[2 * MSG_LEN];
	ssize_t n;

	(void)arg;
	reader_tid = gettid();
	got_ok = 1;
	while ((n = read(pfd[0], buf, sizeof(buf))) != 0) {
		if (n < 0) {
			got_ok = 0;
			got_len = -errno;
			break;
		}
		for (ssize_t i = 0; i < n; i++)
			got_ok &= got_len + i < MSG_LEN && buf[i] == msg_byte(got_len + i);
		got_len += n;
	}
	check_cpu(T_READER);
	return NULL;
}

static void *sleeper(void *arg)
{
	struct timespec req = { SLEEP_S, 0 }, t0, t1;

	(void)arg;
	sleeper_tid = gettid();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	sleep_ret = nanosleep(&req, &sleep_rem);
	sleep_errno = errno;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	sleep_ns = (t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec);
	check_cpu(T_SLEEPER);
	return NULL;
}

static void on_usr1(int sig)
{
	char here;

	(void)sig;
	on_alt = &here > altstack && &here < altstack + sizeof(altstack);
	handled++;
}

static void *alt(void *arg)
{
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) }, now;

	(void)arg;
	if (sigaltstack(&ss, NULL))
		prog_die("sigaltstack: %s", strerror(errno));
	pthread_mutex_lock(&lock);
	alt_ready = 1;
	pthread_cond_broadcast(&cond);
	while (!alt_go)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	alt_same = sigaltstack(NULL, &now) == 0 && now.ss_sp == altstack &&
		   now.ss_size == sizeof(altstack) && now.ss_flags == 0;
	on_alt = 0;
	handled = 0;
	pthread_kill(pthread_self(), SIGUSR1);
	alt_signal_ok = handled == 1 && on_alt;
	check_cpu(T_ALT);
	return NULL;
}

/* Wait until thread @tid sleeps in system call @nr (/proc/self/task/TID/syscall). */
static void wait_in_syscall(pid_t tid, long nr)
{
	char path[64], buf[128];

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	for (int i = 0; i < 5000; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

		if (fd >= 0)
			close(fd);
		if (n > 0) {
			buf[n] = '\0';
			if (strtol(buf, NULL, 10) == nr)
				return;
		}
		usleep(1000);
	}
	prog_die("thread %d never entered system call %ld", tid, nr);
}

static void start(pthread_t *th, void *(*fn)(void *))
{
	if (pthread_create(th, NULL, fn, NULL))
		prog_die("pthread_create failed");
}

static void report(const struct prog *p)
{
	long long rem_ns = sleep_rem.tv_sec * 1000000000ll + sleep_rem.tv_nsec;
	int want;

	prog_check("reader got exactly the bytes written after the restore",
		   got_ok && got_len == MSG_LEN, "%ld bytes, %s", got_len,
		   got_ok ? "right" : "wrong");
	fprintf(stderr, "blocked: sleeper: nanosleep returned %d (%s), %lld ns remaining, "
		"slept %lld ns\n", sleep_ret, sleep_ret ? strerror(sleep_errno) : "done", rem_ns,
		sleep_ns);
	if (p->image) /* restored: interrupted, with what remained at the checkpoint */
		want = sleep_ret == -1 && sleep_errno == EINTR && rem_ns > 0 &&
		       rem_ns < SLEEP_S * 1000000000ll;
	else
		want = sleep_ret == 0 && sleep_ns >= SLEEP_S * 1000000000ll;
	prog_check("sleeper: nanosleep as documented", want, "returned %d (%s), %lld ns left",
		   sleep_ret, strerror(sleep_errno), rem_ns);
	prog_check("altstack: sigaltstack gives the same stack", alt_same, "changed");
	prog_check("altstack: a signal runs on it", alt_signal_ok, "handled %d, on it %d",
		   handled, on_alt);
}

static void report_cpu(int from, int to)
{
	char name[80];

	for (int i = from; i < to; i++) {
		snprintf(name, sizeof(name), "%s: rseq registered", tname[i]);
		prog_check(name, rseq_state[i] != 0, "the rseq area is not registered");
		snprintf(name, sizeof(name), "%s: sched_getcpu", tname[i]);
		prog_check(name, cpu_ok[i], "disagrees with getcpu");
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_ONSTACK };
	static char msg[MSG_LEN];
	pthread_t th[T_N];
	struct prog p;

	prog_init(&p, argc, argv);
	sigaction(SIGUSR1, &sa, NULL);
	if (pipe(pfd))
		prog_die("pipe: %s", strerror(errno));
	start(&th[T_READER], reader);
	start(&th[T_SLEEPER], sleeper);
	start(&th[T_ALT], alt);
	pthread_mutex_lock(&lock);
	while (!alt_ready)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	while (!reader_tid || !sleeper_tid)
		usleep(1000);
	wait_in_syscall(reader_tid, SYS_read);
	wait_in_syscall(sleeper_tid, SYS_clock_nanosleep);
	puts("threads blocked");

	prog_checkpoint(&p, 1);

	for (long i = 0; i < MSG_LEN; i++)
		msg[i] = msg_byte(i);
	for (long off = 0; off < MSG_LEN; off += 1000) /* in pieces: several reads */
		if (write(pfd[1], msg + off, 1000) != 1000)
			prog_die("write to the pipe: %s", strerror(errno));
	close(pfd[1]);
	pthread_mutex_lock(&lock);
	alt_go = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	check_cpu(T_MAIN);
	for (int i = T_READER; i < T_N; i++)
		pthread_join(th[i], NULL);
	close(pfd[0]);
	report(&p);
	report_cpu(T_MAIN, T_N);

	prog_checkpoint(&p, 2);

	cpu_ok[T_MAIN] = 0;
	check_cpu(T_MAIN);
	report_cpu(T_MAIN, T_MAIN + 1);
	return 0;
}
