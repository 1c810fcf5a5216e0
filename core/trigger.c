/* SPDX-License-Identifier: MIT */
/*
 * trigger.c - checkpoints on a signal or on an interval, for a program that
 * does not call selfckpt_save() itself: selfckpt-run preloads the library and
 * sets SELFCKPT_DIR.
 *
 * The constructor does nothing unless the environment asks for triggers. When
 * it does, it installs the handlers of the two trigger signals and starts one
 * checkpoint thread. The handlers only record the request (trigger_rt.c); the
 * thread calls selfckpt_save(), so the checkpoint runs on an ordinary thread
 * with libc at hand, never inside a handler, and the program's threads are
 * stopped like those of any caller. The thread blocks every signal but the
 * stop signal: it must never run the program's handlers, and it must stop like
 * any other thread when the program itself calls selfckpt_save().
 *
 * Images go to DIR/<program>.<pid>.sckpt (with SELFCKPT_INCREMENTAL, a name
 * for each: trigger_chain.c), and DIR/latest is a symbolic link to the newest
 * (replaced by renaming, so it is always whole). A restored process has
 * another pid, so it never overwrites the image it came from.
 *
 * "At the next safe point" (SELFCKPT_SIGNAL, SIGUSR1) and "at once"
 * (SELFCKPT_SIGNAL_NOW, SIGUSR2) differ only for CUDA programs, whose safe
 * point is the next synchronising call; without CUDA both save at once.
 *
 * With SELFCKPT_EXIT_AFTER_SAVE=1 the process ends with _exit(75) after a save
 * that a signal asked for (not after a timed one), for a batch system to
 * requeue the job. The program's threads stay stopped from the instant of the
 * image to the exit (sc_checkpoint_then_exit()): what they did while the
 * image was written, the restored program would do again. _exit(), not
 * exit(): the image holds the program's unflushed stdio buffers and its
 * atexit work still to do, which the restored process does; running them now
 * as well would write that output twice and could remove files the restored
 * process needs.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/core_internal.h"
#include "core/job.h"
#include "core/job_set.h"
#include "core/sc_exiting.h"
#include "core/sc_hooks.h"
#include "core/sc_settings.h"
#include "core/sc_sys.h"
#include "core/sc_trigger.h"
#include "core/trigger_internal.h"
#include "format/sc_log.h"
#include "selfckpt.h"

#define THREAD_STACK (256u << 10) /* selfckpt_save() needs well under half */
#define NS_PER_S 1000000000ll

static struct {
	char *dir;           /* absolute */
	const char *prog;    /* basename of argv[0] */
	int64_t interval_ns; /* 0: no timed checkpoints */
	bool exit_after_save;
} cfg;

/*
 * Triggers are for every process of the job: the one selfckpt-run started and
 * every process started under it, which a trigger sends up to the job's top.
 */
static bool wanted(const struct sc_settings *set)
{
	return set->dir || set->interval || set->signal || set->signal_now;
}

/* @v: the value of @name, NULL when unset. */
static int read_signal(const char *name, const char *v, int def, int *sig)
{
	char buf[SC_SIGNAL_NAME_MAX];
	const char *why;

	*sig = v ? sc_signal_parse(v) : def;
	if (*sig < 0)
		return sc_err(SELFCKPT_EUSAGE, "%s='%s' is not a signal name or number: checkpoint "
			      "triggers are off", name, v);
	why = sc_trigger_signal_check(*sig);
	if (why)
		return sc_err(SELFCKPT_EUSAGE, "%s=%s: %s %s: checkpoint triggers are off", name,
			      v ? v : "", sc_signal_name(*sig, buf), why);
	return 0;
}

static int read_interval(const char *v)
{
	if (!v)
		return 0;
	if (sc_interval_parse(v, &cfg.interval_ns) < 0)
		return sc_err(SELFCKPT_EUSAGE, "%s='%s' is not a number of seconds from %g to "
			      "%.0f: checkpoint triggers are off", SC_ENV_INTERVAL, v,
			      SC_INTERVAL_MIN, SC_INTERVAL_MAX);
	return 0;
}

static int read_dir(const char *v)
{
	char cwd[PATH_MAX];
	struct stat st;

	if (!v)
		v = ".";
	if (v[0] != '/' && !getcwd(cwd, sizeof(cwd)))
		return sc_err(errno, "cannot read the working directory for %s='%s': %s: "
			      "checkpoint triggers are off", SC_ENV_DIR, v, strerror(errno));
	if (v[0] == '/')
		cfg.dir = strdup(v);
	else if (asprintf(&cfg.dir, "%s/%s", cwd, v) < 0)
		cfg.dir = NULL;
	if (!cfg.dir)
		return sc_err(ENOMEM, "out of memory");
	if (stat(cfg.dir, &st) < 0)
		return sc_err(errno, "cannot use the checkpoint directory '%s' (%s): %s: "
			      "checkpoint triggers are off", cfg.dir, SC_ENV_DIR, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return sc_err(ENOTDIR, "the checkpoint directory '%s' (%s) is not a directory: "
			      "checkpoint triggers are off", cfg.dir, SC_ENV_DIR);
	return 0;
}

static int read_config(const struct sc_settings *set)
{
	int err;

	cfg.prog = *program_invocation_short_name ? program_invocation_short_name : "program";
	cfg.exit_after_save = set->exit_after_save;
	if ((err = read_dir(set->dir)) < 0 || (err = read_interval(set->interval)) < 0)
		return err;
	if ((err = read_signal(SC_ENV_SIGNAL, set->signal, SC_TRIGGER_SIGNAL_DEFAULT,
			       &sc_trigger.sig_soon)) ||
	    (err = read_signal(SC_ENV_SIGNAL_NOW, set->signal_now, SC_TRIGGER_SIGNAL_NOW_DEFAULT,
			       &sc_trigger.sig_now)))
		return err;
	if (sc_trigger.sig_soon == sc_trigger.sig_now)
		return sc_err(SELFCKPT_EUSAGE, "%s and %s name the same signal %d: checkpoint "
			      "triggers are off", SC_ENV_SIGNAL, SC_ENV_SIGNAL_NOW,
			      sc_trigger.sig_now);
	return 0;
}

/* ---- the checkpoint thread ---- */

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * NS_PER_S + t.tv_nsec;
}

/* Sleep until a signal asks for a checkpoint or @deadline (CLOCK_MONOTONIC) passes. */
static unsigned wait_request(int64_t deadline)
{
	for (;;) {
		int seq = __atomic_load_n(&sc_trigger.seq, __ATOMIC_ACQUIRE);
		unsigned req = __atomic_exchange_n(&sc_trigger.pending, 0, __ATOMIC_ACQ_REL);
		struct timespec left, *timeout = NULL;
		int64_t ns;

		if (req)
			return req;
		if (cfg.interval_ns) {
			ns = deadline - now_ns();
			if (ns <= 0)
				return SC_TRIGGER_TIMER;
			left = (struct timespec){ ns / NS_PER_S, ns % NS_PER_S };
			timeout = &left;
		}
		syscall(SYS_futex, &sc_trigger.seq, SC_FUTEX_WAIT_PRIVATE, seq, timeout);
	}
}

static void sync_dir(void)
{
	int fd = open(cfg.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* Point DIR/latest at @name (in DIR): a new link under a temporary name, renamed. */
static int update_latest(const char *name)
{
	char tmp[PATH_MAX], latest[PATH_MAX];
	int err;

	snprintf(tmp, sizeof(tmp), "%s/.%s.%d.tmp", cfg.dir, SC_TRIGGER_LATEST, (int)getpid());
	snprintf(latest, sizeof(latest), "%s/%s", cfg.dir, SC_TRIGGER_LATEST);
	unlink(tmp);
	if (symlink(name, tmp) < 0)
		return sc_err(errno, "cannot create the link '%s' to '%s': %s", tmp, name,
			      strerror(errno));
	if (rename(tmp, latest) < 0) {
		err = sc_err(errno, "cannot rename '%s' to '%s': %s", tmp, latest,
			     strerror(errno));
		unlink(tmp);
		return err;
	}
	sync_dir();
	return 0;
}

static const char *describe(unsigned req, char *buf)
{
	if (req & SC_TRIGGER_NOW)
		return sc_signal_name(sc_trigger.sig_now, buf);
	if (req & SC_TRIGGER_SOON)
		return sc_signal_name(sc_trigger.sig_soon, buf);
	return "interval";
}

/* The image at @path is complete: DIR/latest names it. */
static void saved(const char *path, const char *why)
{
	if (update_latest(path + strlen(cfg.dir) + 1) < 0)
		sc_log(SC_LOG_WARN, "'%s/%s' still names an older image", cfg.dir,
		       SC_TRIGGER_LATEST);
	else
		sc_trigger_chain_saved(path);
	sc_log(SC_LOG_INFO, "checkpoint on %s written to '%s'", why, path);
}

/* The set this process wrote last: replaced by the next, as an image is. */
static char last_set[2 * PATH_MAX + 2];

/* The set at @path is complete: DIR/latest names it, and the job's previous set goes. */
static void saved_set(const char *path, const char *why)
{
	if (update_latest(path + strlen(cfg.dir) + 1) < 0) {
		sc_log(SC_LOG_WARN, "'%s/%s' still names an older image", cfg.dir,
		       SC_TRIGGER_LATEST);
		return;
	}
	if (last_set[0] && strcmp(last_set, path))
		sc_set_discard(last_set);
	snprintf(last_set, sizeof(last_set), "%s", path);
	sc_log(SC_LOG_INFO, "checkpoint of the job on %s written to '%s'", why, path);
}

static const char *exit_why; /* what asked for the checkpoint that ends the program */

/* sc_checkpoint_then_exit()'s end: every other thread is still stopped. */
static void saved_then_exit(const char *path)
{
	saved(path, exit_why);
	sc_log(SC_LOG_INFO, "exiting with status %d as asked", SC_TRIGGER_EXIT_SAVED);
}

/* Join the job's checkpoint its coordinator asked for (job.c). */
static void join(void)
{
	uint64_t v = __atomic_load_n(&sc_trigger.join, __ATOMIC_ACQUIRE);

	sc_job_join(sc_trigger.join_from, (int)(uint32_t)v, (int)((v >> 32) & 0xffff));
}

/*
 * selfckpt_save() in a process below: passed up to the parent while that is of
 * the job, and served by the job's top (job_save.c).
 */
static void save_asked(void)
{
	uint64_t v = __atomic_load_n(&sc_trigger.save, __ATOMIC_ACQUIRE);
	union sigval up = { .sival_ptr = (void *)(uintptr_t)v };

	if (sc_job_parent_is_member()) {
		if (sigqueue(getppid(), sc_trigger.sig_now, up) < 0)
			sc_log(SC_LOG_WARN, "cannot pass the selfckpt_save() of process %d on to "
			       "process %d: %s", (int)(uint32_t)v, (int)getppid(), strerror(errno));
		return;
	}
	sc_job_save_serve((pid_t)(uint32_t)v, (int)((v >> 32) & 0xffff));
}

/*
 * A trigger in a process whose parent is of the job goes up to the parent,
 * and so to the job's top, which checkpoints the whole job; the interval is
 * the top's alone. It goes up as the "at once" signal: a program may take the
 * other over for itself (make takes SIGUSR1), and a job's instant is one for
 * all its processes anyway. Return: true when the request was passed on (or
 * dropped).
 */
static bool passed_up(unsigned req)
{
	pid_t parent = getppid();

	if (!sc_job_parent_is_member())
		return false;
	if (req & (SC_TRIGGER_NOW | SC_TRIGGER_SOON)) {
		kill(parent, sc_trigger.sig_now);
		sc_log(SC_LOG_DEBUG, "checkpoint request passed to the parent, process %d, "
		       "which checkpoints the job", (int)parent);
	}
	return true;
}

/*
 * The top of a job with children checkpoints them all: one set, named by
 * DIR/latest. With @exit_status (--exit-after-save) the whole job ends once
 * the set is complete, nothing done past its instant.
 */
static void serve_job(const char *why, int exit_status)
{
	char name[PATH_MAX], path[2 * PATH_MAX + 2];
	int ret;

	ret = sc_job_checkpoint(cfg.dir, cfg.prog, why, exit_status, name, sizeof(name));
	if (ret == SELFCKPT_RESTORED) {
		sc_log(SC_LOG_INFO, "resumed from the checkpoint of the job");
		return;
	}
	if (ret < 0) {
		sc_log(SC_LOG_WARN, "the checkpoint of the job on %s failed; the job goes on", why);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", cfg.dir, name);
	saved_set(path, why);
	if (ret == SC_JOB_ENDS) { /* this process's threads are held still */
		sc_log(SC_LOG_INFO, "the job ends with status %d as asked", exit_status);
		_exit(exit_status);
	}
}

static void serve_in_span(unsigned req);

/*
 * A request, served whole before an exit may end the process: the image or
 * the set and then DIR/latest (an exit let go between the two left the link
 * naming an older image, or none, and its temporary name behind).
 */
static void serve(unsigned req)
{
	sc_checkpoint_span_begin();
	serve_in_span(req);
	sc_checkpoint_span_end();
}

static void serve_in_span(unsigned req)
{
	char path[PATH_MAX], buf[SC_SIGNAL_NAME_MAX];
	bool by_signal = req & (SC_TRIGGER_SOON | SC_TRIGGER_NOW);
	const char *why = describe(req, buf);
	int n, ret;

	if (req & SC_TRIGGER_JOIN)
		join();
	if (req & SC_TRIGGER_SAVE)
		save_asked();
	req &= ~(SC_TRIGGER_JOIN | SC_TRIGGER_SAVE);
	if (!req || sc_exiting())
		return; /* the program is exiting: no new checkpoint */
	if (passed_up(req))
		return;
	if (sc_job_has_children()) {
		serve_job(why, cfg.exit_after_save && by_signal ? SC_TRIGGER_EXIT_SAVED : 0);
		return;
	}
	n = sc_trigger_image_path(cfg.dir, cfg.prog, path, sizeof(path));
	if (n < 0) {
		sc_err(ENAMETOOLONG, "image path '%s/%s...' is too long", cfg.dir, cfg.prog);
		return;
	}
	bool at_safe_point = (req & SC_TRIGGER_SOON) && !(req & SC_TRIGGER_NOW) &&
			     sc_hooks_get()->safe_point;

	if (at_safe_point)
		sc_hooks_get()->safe_point();
	if (cfg.exit_after_save && by_signal) {
		struct sc_exit_after ex = { saved_then_exit, SC_TRIGGER_EXIT_SAVED };

		exit_why = why;
		ret = sc_checkpoint_then_exit(path, &ex); /* returns only if the program goes on */
	} else {
		ret = sc_checkpoint(path, false); /* this thread is the background already */
	}
	if (at_safe_point)
		sc_hooks_get()->safe_point_done();
	if (ret == SELFCKPT_RESTORED) {
		sc_log(SC_LOG_INFO, "resumed from the checkpoint '%s'", path);
		return;
	}
	if (ret < 0 && sc_exiting()) { /* no failure: the signal came as the program ended */
		sc_log(SC_LOG_WARN, "no checkpoint on %s: the program is exiting", why);
		return;
	}
	if (ret < 0) { /* selfckpt_save() reported the cause */
		sc_log(SC_LOG_WARN, "the checkpoint on %s failed; the program goes on", why);
		return;
	}
	saved(path, why);
}

static void *trigger_main(void *arg)
{
	int64_t deadline = now_ns() + cfg.interval_ns;

	(void)arg;
	for (;;) {
		unsigned req = wait_request(deadline);

		serve(req);
		/*
		 * Named again: a restored thread has the restorer's name, and the
		 * job's checkpoint knows the processes of the job by this one.
		 */
		pthread_setname_np(pthread_self(), SC_JOB_THREAD_NAME);
		/* From the end of this checkpoint, or of the restart: a restored
		 * process's clock may have nothing to do with the old one's. */
		deadline = now_ns() + cfg.interval_ns;
	}
	return NULL;
}

/* ---- starting ---- */

static int install_handler(int sig)
{
	struct sigaction sa = { 0 };
	char buf[SC_SIGNAL_NAME_MAX];

	sa.sa_sigaction = sc_trigger_handler;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	sigfillset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) < 0)
		return sc_err(errno, "cannot install the handler of %s: %s",
			      sc_signal_name(sig, buf), strerror(errno));
	return 0;
}

/*
 * Every signal blocked in the thread but the stop signal, which it must take,
 * and the trigger signals: where the program's threads all block them, the
 * kernel delivers them here.
 */
static int start_thread(void)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t t;
	int err;

	sigfillset(&all);
	sigdelset(&all, sc_stop_signal());
	sigdelset(&all, sc_trigger.sig_soon);
	sigdelset(&all, sc_trigger.sig_now);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, THREAD_STACK);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t, &attr, trigger_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err)
		return sc_err(err, "cannot start the checkpoint thread: %s", strerror(err));
	pthread_setname_np(t, SC_JOB_THREAD_NAME);
	return 0;
}

/*
 * A forked child is of the job too: it gets a checkpoint thread of its own
 * (the parent's is not in it), and no request the parent had not served yet.
 */
static void start_in_child(void)
{
	if (!__atomic_load_n(&sc_trigger.active, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&sc_trigger.pending, 0, __ATOMIC_RELEASE);
	if (start_thread() < 0) {
		signal(sc_trigger.sig_soon, SIG_DFL);
		signal(sc_trigger.sig_now, SIG_DFL);
		__atomic_store_n(&sc_trigger.active, 0, __ATOMIC_RELEASE);
	}
}

static void start_triggers(const struct sc_settings *set)
{
	char soon[SC_SIGNAL_NAME_MAX], now[SC_SIGNAL_NAME_MAX];

	if (!wanted(set) || read_config(set) < 0)
		return;
	if (install_handler(sc_trigger.sig_soon) < 0 || install_handler(sc_trigger.sig_now) < 0 ||
	    start_thread() < 0) {
		signal(sc_trigger.sig_soon, SIG_DFL);
		signal(sc_trigger.sig_now, SIG_DFL);
		return;
	}
	__atomic_store_n(&sc_trigger.active, 1, __ATOMIC_RELEASE);
	pthread_atfork(NULL, NULL, start_in_child);
	sc_log(SC_LOG_DEBUG, "checkpoints to '%s' on %s, %s%s", cfg.dir,
	       sc_signal_name(sc_trigger.sig_soon, soon), sc_signal_name(sc_trigger.sig_now, now),
	       cfg.interval_ns ? " and on an interval" : "");
}

/*
 * The trigger signals selfckpt-run blocked across its exec of the program
 * (cli/run_held.c), unblocked now that their handlers are in place, or not
 * to be: one sent meanwhile is taken now, as it would have been. The
 * variable goes, so that a program this one executes starts as any other.
 */
static void release_held_signals(void)
{
	const char *held = getenv(SC_ENV_HELD_SIGNALS);
	sigset_t set;
	char *end;

	if (!held)
		return;
	sigemptyset(&set);
	for (const char *p = held; *p; p = *end ? end + 1 : end) {
		long sig = strtol(p, &end, 10);

		if (end == p || (*end && *end != ','))
			break;
		if (sig > 0 && sig < NSIG)
			sigaddset(&set, (int)sig);
	}
	unsetenv(SC_ENV_HELD_SIGNALS);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

/* The settings are read here first: the library's start-up, before the program's main(). */
__attribute__((constructor)) static void trigger_init(void)
{
	start_triggers(sc_settings());
	release_held_signals();
}

void sc_trigger_note_action(int sig, void (*handler)(int))
{
	unsigned bit = sig == sc_trigger.sig_soon ? SC_TRIGGER_SOON
		       : sig == sc_trigger.sig_now ? SC_TRIGGER_NOW : 0;
	char name[SC_SIGNAL_NAME_MAX];

	if (!bit || handler == (void (*)(int))(void (*)(void))sc_trigger_handler ||
	    !__atomic_load_n(&sc_trigger.active, __ATOMIC_ACQUIRE))
		return;
	if (__atomic_fetch_or(&sc_trigger.warned, bit, __ATOMIC_ACQ_REL) & bit)
		return;
	sc_signal_name(sig, name);
	sc_log(SC_LOG_WARN, "the program sets its own action for %s: checkpointing on %s is now "
	       "up to the program (choose another signal with %s)", name, name,
	       bit == SC_TRIGGER_SOON ? SC_ENV_SIGNAL : SC_ENV_SIGNAL_NOW);
}
