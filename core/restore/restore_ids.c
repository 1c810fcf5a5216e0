/* SPDX-License-Identifier: MIT */
/*
 * restore_ids.c - "same ids": the restored process gets back the pid and thread
 * ids it had, so that everything that remembered them (mutex owners in glibc,
 * pid files, libraries that cache getpid()) stays right.
 *
 * Unprivileged, through namespaces: this loader enters a new user, pid and
 * mount namespace, forks the namespace's init (which mounts a /proc of its
 * own), and init creates the restoring process with clone3(set_tid) at the
 * saved pid; the blob then creates each thread at its saved tid. init and this
 * process only wait, pass signals on, and exit as the restored process does;
 * init dies with this process (a parent-death signal), and the kernel then
 * kills every process of the namespace: a kill -9 of selfckpt-restore leaves
 * nothing running. Where namespaces or clone3 are not allowed (containers'
 * seccomp profiles) the caller falls back to new ids, decided before this
 * process has changed.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/restore/restore_internal.h"
#include "format/sc_log.h"

#define INIT_FAILED 121 /* init could not set up: the caller retries with new ids */
#define THREADS_WAIT_MS 2000

static volatile pid_t forward_to;

static void forward(int sig)
{
	if (forward_to > 0)
		kill(forward_to, sig);
}

/* Every signal a user or a batch system may send goes on to the restored process. */
static void forward_signals(pid_t to)
{
	struct sigaction sa = { .sa_handler = forward, .sa_flags = SA_RESTART };
	sigset_t none;

	forward_to = to;
	for (int sig = 1; sig < NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP || sig == SIGCHLD || sig == SIGSEGV ||
		    sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP ||
		    (sig >= 32 && sig < SIGRTMIN))
			continue; /* uncatchable, ours to wait on, faults, or libc's own */
		sigaction(sig, &sa, NULL);
	}
	sigemptyset(&none); /* main() blocked them: this process only passes them on */
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Leave the way the restored process did: killed by the same signal. */
static void __attribute__((noreturn)) exit_like_signal(int sig)
{
	signal(sig, SIG_DFL);
	raise(sig);
	_exit(128 + sig);
}

int sc_write_knob(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t w;

	if (fd < 0)
		return -errno;
	w = write(fd, text, strlen(text));
	w = w < 0 ? -errno : w == (ssize_t)strlen(text) ? 0 : -EIO;
	close(fd);
	return (int)w;
}

#define ALL_IDS "0 0 4294967295\n"

/*
 * Root keeps its rights over every file only where every id is mapped into the
 * new namespace (else another user's 0600 file is out of its reach, and it
 * cannot switch to another user). A process may map only its own id into a
 * namespace it has just entered: a helper left in this namespace maps them
 * all, once told to by a byte on @go. Return: the helper's pid, or -1.
 */
static pid_t start_mapper(int *go)
{
	char path[64], c;
	pid_t self = getpid(), helper;
	int p[2];

	if (geteuid() != 0 || pipe2(p, O_CLOEXEC) < 0)
		return -1;
	helper = fork();
	if (helper == 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(1);
		snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)self);
		if (sc_write_knob(path, ALL_IDS) < 0)
			_exit(1);
		snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)self);
		_exit(sc_write_knob(path, ALL_IDS) < 0 ? 2 : 0);
	}
	close(p[0]);
	if (helper < 0) {
		close(p[1]);
		return -1;
	}
	*go = p[1];
	return helper;
}

/*
 * Tell the helper to map (@map) or to go, and wait for it.
 * Return: 0 when every id is mapped, 1 uid_map only, 2 none.
 */
static int finish_mapper(pid_t helper, int go, bool map)
{
	int status;

	if (map && write(go, "m", 1) != 1)
		map = false;
	close(go);
	while (waitpid(helper, &status, 0) < 0)
		if (errno != EINTR)
			return 2;
	if (!map || !WIFEXITED(status))
		return 2;
	return WEXITSTATUS(status) == 0 ? 0 : WEXITSTATUS(status) == 2 ? 1 : 2;
}

static int enter_namespaces(bool ipc)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	int go = -1, mapped = 2;
	pid_t mapper = start_mapper(&go);

	if (unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | (ipc ? CLONE_NEWIPC : 0)) < 0) {
		int err = -errno;

		if (mapper > 0)
			finish_mapper(mapper, go, false);
		return err;
	}
	if (mapper > 0)
		mapped = finish_mapper(mapper, go, true);
	if (mapped == 0)
		return 0;
	snprintf(map, sizeof(map), "%u %u 1\n", uid, uid);
	if (mapped == 2 && sc_write_knob("/proc/self/uid_map", map) < 0)
		return -EPERM;
	sc_write_knob("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "%u %u 1\n", gid, gid);
	return sc_write_knob("/proc/self/gid_map", map);
}

/* The kernel's count of this process's threads (/proc/self/stat, field 20), or -errno. */
static int count_threads(void)
{
	char buf[1024], *p;
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC), field = 2;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
	while (p && field < 20)
		p = strchr(p + 1, ' '), field++;
	return p ? atoi(p + 1) : -EIO;
}

/*
 * unshare(CLONE_NEWUSER) refuses a process of several threads (EINVAL). The
 * readers' threads are joined by now, but a joined thread is only released by
 * the kernel a moment after it woke its joiner: wait until the kernel counts
 * this thread alone.
 */
static int wait_single_threaded(void)
{
	struct timespec tick = { 0, 200 * 1000 };
	int n = count_threads(), i;

	for (i = 0; n > 1 && i < THREADS_WAIT_MS * 5; i++) {
		nanosleep(&tick, NULL);
		n = count_threads();
	}
	if (n > 1)
		return sc_err(EBUSY, "%d threads of selfckpt-restore still run after %d ms", n,
			      THREADS_WAIT_MS);
	if (i)
		sc_log(SC_LOG_DEBUG, "restore: waited %d times 0.2 ms for joined threads to end",
		       i);
	return 0; /* n < 0: no /proc to ask; unshare() will say */
}

/*
 * Die with the process that ran selfckpt-restore (@alive: a pipe whose only
 * writer it holds): SIGKILL when it dies, or now when it has died already.
 */
static void die_with_parent(int alive)
{
	struct pollfd p = { .fd = alive, .events = POLLIN };

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || poll(&p, 1, 0) != 0)
		_exit(INIT_FAILED);
}

/* The namespace's init: its own /proc, then the restoring process at @pid. */
static int run_init(pid_t pid, int image_fd, int alive)
{
	pid_t want = pid;
	struct clone_args ca = { .exit_signal = SIGCHLD, .set_tid = (uint64_t)(uintptr_t)&want,
				 .set_tid_size = 1 };
	long child;

	die_with_parent(alive);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		_exit(INIT_FAILED);
	child = syscall(SYS_clone3, &ca, sizeof(ca));
	if (child == 0) {
		close(alive);
		return 0; /* the restoring process, at its saved pid */
	}
	if (child < 0)
		_exit(INIT_FAILED);
	close(image_fd);
	forward_signals((pid_t)child);
	for (;;) {
		int status;
		pid_t done = waitpid(-1, &status, 0); /* init reaps every orphan too */

		if (done == child)
			_exit(WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status));
		if (done < 0 && errno == ECHILD)
			_exit(70);
	}
}

/* What must hold before this process changes: else new ids, and nothing changed. */
static int can_enter(void)
{
	if (sc_probe_clone3() < 0) {
		sc_log(SC_LOG_WARN, "clone3 is not allowed here (a seccomp profile): the process "
		       "comes back with new ids (--new-ids says so without this warning)");
		return 0;
	}
	if (wait_single_threaded() < 0) {
		sc_log(SC_LOG_WARN, "the process comes back with new ids");
		return 0;
	}
	return 1;
}

int sc_same_ids_enter(pid_t pid, int image_fd, bool ipc)
{
	int err, status, alive[2];
	pid_t init;

	if (!can_enter())
		return 1;
	if (pipe2(alive, O_CLOEXEC) < 0) {
		sc_log(SC_LOG_WARN, "cannot make a pipe (%s): the process comes back with new ids",
		       strerror(errno));
		return 1;
	}
	err = enter_namespaces(ipc);
	if (err < 0) {
		close(alive[0]);
		close(alive[1]);
		sc_log(SC_LOG_WARN, "no user namespace (%s): the process comes back with new "
		       "thread ids (--new-ids says so without this warning)", strerror(-err));
		return 1;
	}
	init = fork();
	if (init == 0) {
		close(alive[1]);
		return run_init(pid, image_fd, alive[0]);
	}
	close(alive[0]);
	if (init < 0) {
		close(alive[1]);
		return 1;
	}
	forward_signals(init);
	while (waitpid(init, &status, 0) < 0)
		if (errno != EINTR)
			_exit(70);
	if (WIFEXITED(status) && WEXITSTATUS(status) == INIT_FAILED) {
		close(alive[1]);
		sc_log(SC_LOG_WARN, "cannot mount a /proc for the new pid namespace: the process "
		       "comes back with new ids (--new-ids says so without this warning)");
		return 1;
	}
	if (WIFSIGNALED(status))
		exit_like_signal(WTERMSIG(status));
	_exit(WEXITSTATUS(status));
}
