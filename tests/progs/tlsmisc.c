/* SPDX-License-Identifier: MIT */
/*
 * tlsmisc - thread-local storage, errno, pthread_self(), thread ids,
 * pthread_join() of a thread created before the checkpoint, and mutexes
 * whose owner is recorded as a thread id.
 *
 * Before point 1: TLS values set in the main thread and in a worker, errno
 * set in both, a recursive mutex locked twice by the main thread. After it,
 * in both threads: the TLS values and errno, pthread_self(), the thread id
 * glibc caches (pthread_kill(), the thread's CPU clock, error-checking and
 * recursive mutexes) against the kernel's, then the worker is joined. Thread
 * ids may change at a restore; the program reports it on standard error only.
 *
 * ARGS: "new-ids" when restored with new thread ids: the mutexes held across
 * the checkpoint then name an owner that no longer exists, and are not checked.
 */
#include <pthread.h>
#include <time.h>

#include "prog.h"

static __thread int tls_int = 7;
static __thread char tls_text[32] = "initial";
static __thread uint64_t tls_big[64];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int go, ready;
static pthread_t worker_self;
static pthread_mutex_t rec, errchk;

static void set_tls(int base)
{
	tls_int = base;
	snprintf(tls_text, sizeof(tls_text), "thread %d", base);
	for (int i = 0; i < 64; i++)
		tls_big[i] = (uint64_t)base * 1000 + (uint64_t)i;
}

static int tls_ok(int base)
{
	char want[32];
	int ok = tls_int == base;

	snprintf(want, sizeof(want), "thread %d", base);
	ok &= strcmp(tls_text, want) == 0;
	for (int i = 0; i < 64; i++)
		ok &= tls_big[i] == (uint64_t)base * 1000 + (uint64_t)i;
	return ok;
}

/* Checks that depend on the thread id glibc caches for the calling thread. */
static void tid_checks(const char *who)
{
	pthread_mutex_t m;
	pthread_mutexattr_t a;
	clockid_t cid;
	struct timespec ts;
	char name[64];
	int r1, r2, r3;

	snprintf(name, sizeof(name), "%s gettid is the kernel's", who);
	prog_check(name, gettid() == (pid_t)syscall(SYS_gettid), "%d vs %ld", gettid(),
		   syscall(SYS_gettid));
	snprintf(name, sizeof(name), "%s pthread_kill(self, 0)", who);
	r1 = pthread_kill(pthread_self(), 0);
	prog_check(name, r1 == 0, "%s", strerror(r1));
	snprintf(name, sizeof(name), "%s cpu clock", who);
	r1 = pthread_getcpuclockid(pthread_self(), &cid);
	r2 = r1 ? r1 : clock_gettime(cid, &ts) ? errno : 0;
	prog_check(name, r2 == 0, "%s", strerror(r2));
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&m, &a);
	r1 = pthread_mutex_lock(&m);
	r2 = pthread_mutex_lock(&m);
	r3 = pthread_mutex_unlock(&m);
	snprintf(name, sizeof(name), "%s errorcheck mutex", who);
	prog_check(name, r1 == 0 && r2 == EDEADLK && r3 == 0, "lock %d, relock %d, unlock %d",
		   r1, r2, r3);
}

static void *worker(void *arg)
{
	(void)arg;
	set_tls(2);
	pthread_mutex_lock(&lock);
	worker_self = pthread_self();
	ready = 1;
	pthread_cond_broadcast(&cond);
	errno = 5678;
	while (!go)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	prog_check("worker errno kept", errno == 5678, "errno %d", errno);
	prog_check("worker TLS kept", tls_ok(2), "tls_int %d, text '%s'", tls_int, tls_text);
	prog_check("worker pthread_self", pthread_equal(worker_self, pthread_self()),
		   "changed");
	tid_checks("worker");
	fflush(stdout);
	return (void *)0x1234;
}

int main(int argc, char **argv)
{
	pthread_mutexattr_t a;
	pthread_t th, self;
	struct prog p;
	void *ret = NULL;
	pid_t tid_before;
	int r1, r2, r3, e, new_ids;

	prog_init(&p, argc, argv);
	new_ids = p.argc > 0 && !strcmp(p.argv[0], "new-ids");
	set_tls(1);
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&rec, &a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&errchk, &a);
	if (pthread_create(&th, NULL, worker, NULL))
		prog_die("pthread_create failed");
	pthread_mutex_lock(&lock);
	while (!ready)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	r1 = pthread_mutex_lock(&rec);
	r2 = pthread_mutex_lock(&rec);
	r3 = pthread_mutex_lock(&errchk);
	printf("recursive mutex locked twice: %d %d, errorcheck mutex locked: %d\n", r1, r2, r3);
	self = pthread_self();
	tid_before = gettid();

	errno = 1234;
	prog_checkpoint(&p, 1);
	e = errno;

	prog_check("main errno kept", e == 1234, "errno %d", e);
	prog_check("main TLS kept", tls_ok(1), "tls_int %d, text '%s'", tls_int, tls_text);
	prog_check("main pthread_self", pthread_equal(self, pthread_self()), "changed");
	prog_check("main thread id is the pid", gettid() == getpid(), "tid %d, pid %d", gettid(),
		   getpid());
	fprintf(stderr, "tlsmisc: main thread id %d -> %d (%s)\n", tid_before, gettid(),
		tid_before == gettid() ? "same" : "changed");
	tid_checks("main");
	if (!new_ids) {
		r1 = pthread_mutex_unlock(&rec);
		r2 = pthread_mutex_unlock(&rec);
		prog_check("recursive mutex unlocked twice", r1 == 0 && r2 == 0,
			   "unlock %d (%s), %d (%s)", r1, strerror(r1), r2, strerror(r2));
		r3 = pthread_mutex_unlock(&errchk);
		prog_check("errorcheck mutex held across, unlocked", r3 == 0, "unlock %d (%s)",
			   r3, strerror(r3));
	}
	r1 = pthread_kill(th, 0);
	prog_check("pthread_kill(worker, 0)", r1 == 0, "%s", strerror(r1));
	fflush(stdout);

	pthread_mutex_lock(&lock);
	go = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	r1 = pthread_join(th, &ret);
	prog_check("join the worker", r1 == 0 && ret == (void *)0x1234, "%s, returned %p",
		   strerror(r1), ret);
	prog_checkpoint(&p, 2);
	prog_check("main TLS kept again", tls_ok(1), "tls_int %d", tls_int);
	tid_checks("main again");
	return 0;
}
