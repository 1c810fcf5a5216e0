/* SPDX-License-Identifier: MIT */
/*
 * checkpoint.c - selfckpt_save(): stop, snapshot, release, write.
 *
 * Phase 1 (freeze) runs with every other thread stopped, possibly inside
 * malloc or stdio, so it allocates nothing and takes no lock: it records
 * signal actions, brk and the coordinator's own state, saves the resume
 * context, and clones the frozen snapshot. Phase 2 runs after the release with
 * ordinary libc and writes the image from the snapshot.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/checkpoint_internal.h"
#include "core/lineage.h"
#include "core/sc_exiting.h"
#include "core/sc_fds.h"
#include "core/sc_handoff.h"
#include "core/sc_hooks.h"
#include "core/sc_locks.h"
#include "core/sc_settings.h"
#include "core/sc_sys.h"
#include "core/sc_sysv.h"
#include "core/job.h"
#include "core/sc_trigger.h"
#include "format/sc_log.h"
#include "selfckpt.h"

/*
 * One checkpoint at a time. Not a plain mutex: in the background mode the
 * writer thread, not the caller, ends the checkpoint. The flag is 1 in every
 * snapshot (a checkpoint was under way), so a restored process clears it.
 */
static pthread_mutex_t busy_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t busy_done = PTHREAD_COND_INITIALIZER;
static bool busy;
static pid_t busy_thread; /* the thread that began it; 0 once a writer thread has it */
static int busy_depth;    /* a job's checkpoint holds it around its process's own */
/*
 * The background writer of the last checkpoint, joined by the next one: it
 * ends that checkpoint before it ends itself, and a thread still ending would
 * be a thread of the image (one that blocks every signal, so none at all).
 */
static pthread_t writer;
static bool writer_joinable;
/*
 * The process whose memory this is. A child made with CLONE_VM (vfork(),
 * posix_spawn(), the library's own starts of its programs) shares it and
 * must never wait on what its parent's threads hold.
 */
static pid_t memory_owner;

static struct sc_hooks hooks;

void sc_hooks_set(const struct sc_hooks *h)
{
	hooks = *h;
}

const struct sc_hooks *sc_hooks_get(void)
{
	return &hooks;
}

static void checkpoint_begin(void)
{
	pid_t me = (pid_t)sc_gettid();

	pthread_mutex_lock(&busy_lock);
	if (busy && busy_thread == me) { /* inside the job's checkpoint this thread began */
		busy_depth++;
		pthread_mutex_unlock(&busy_lock);
		return;
	}
	while (busy)
		pthread_cond_wait(&busy_done, &busy_lock);
	busy = true;
	busy_depth = 1;
	busy_thread = me;
	pthread_mutex_unlock(&busy_lock);
}

/*
 * A child forked while a checkpoint was under way is not checkpointing: it
 * starts free of it (the lock may have been held by a thread it does not have).
 */
static void child_after_fork(void)
{
	pthread_mutex_init(&busy_lock, NULL);
	pthread_cond_init(&busy_done, NULL);
	busy = false;
	busy_depth = 0;
	writer_joinable = false; /* the parent's thread, not this process's */
	memory_owner = (pid_t)sc_sys0(SYS_getpid);
	sc_vmflags_cache_forget(); /* the parent's settings, which a fork does not all copy */
}

__attribute__((constructor)) static void checkpoint_init(void)
{
	memory_owner = (pid_t)sc_sys0(SYS_getpid);
	pthread_atfork(NULL, NULL, child_after_fork);
}

static void checkpoint_end(void)
{
	pthread_mutex_lock(&busy_lock);
	if (--busy_depth > 0) { /* the job's checkpoint goes on */
		pthread_mutex_unlock(&busy_lock);
		return;
	}
	busy_depth = 0;
	busy = false;
	pthread_cond_broadcast(&busy_done);
	pthread_mutex_unlock(&busy_lock);
}

struct kernel_sigaction {
	uint64_t handler, flags, restorer, mask;
};

int sc_stop_handler_install(void)
{
	struct sigaction sa = { 0 };

	if (sc_stopped.stop_signal)
		return 0;
	sc_stopped.stop_signal = sc_stop_signal();
	sa.sa_sigaction = sc_stop_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(sc_stopped.stop_signal, &sa, NULL) < 0)
		return sc_err(errno, "cannot install the handler of signal %d: %s",
			      sc_stopped.stop_signal, strerror(errno));
	return 0;
}

/* Raw: runs while other threads are stopped. */
static void capture_signals(struct sc_signals_info *s)
{
	memset(s, 0, sizeof(*s));
	for (int sig = 1; sig <= SC_SIGNALS; sig++) {
		struct kernel_sigaction k = { 0 };

		if (sc_sys4(SYS_rt_sigaction, sig, 0, (long)&k, 8) == 0)
			s->act[sig - 1] = (struct sc_sigaction_record){ k.handler, k.flags,
									k.restorer, k.mask };
	}
}

/* The name the kernel gives thread @tid ("comm"), into @name. */
static void thread_name(int tid, char *name, size_t size)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
	snprintf(name, size, "?");
	f = fopen(path, "re");
	if (f && fgets(name, (int)size, f))
		name[strcspn(name, "\n")] = '\0';
	if (f)
		fclose(f);
}

static int blocking_thread_error(void)
{
	char name[32];
	int tid = sc_stopped.blocking_tid;

	thread_name(tid, name, sizeof(name));
	return sc_err(EDEADLK, "thread %d ('%s') blocks signal %d, which stops the threads for a "
		      "checkpoint, so the process cannot be checkpointed now; the checkpoint is "
		      "given up and the program goes on (glibc's helper thread of SIGEV_THREAD "
		      "timers blocks every signal)", tid, name, sc_stopped.stop_signal);
}

/* A thread that registered an rseq area of its own (the kernel does not tell where), or 0. */
static int32_t own_rseq_thread(void)
{
	for (int i = 0; i < sc_stopped.n; i++)
		if (sc_stopped.threads[i].tid && sc_stopped.threads[i].rseq_foreign)
			return sc_stopped.threads[i].tid;
	return 0;
}

/* The program's threads go on, and the signals taken for the image are theirs again. */
static void let_go(void)
{
	sc_threads_release();
	sc_pending_requeue(sc_stopped.self);
	sc_pending_requeue(SC_PENDING_PROCESS);
}

/*
 * Phase 1. Returns 0 in the process that checkpoints (with the snapshot in
 * fz->child), 1 when the process resumes from an image, or a negative error.
 * With @hold the other threads stay stopped once the snapshot is taken.
 */
static int freeze(struct sc_frozen *fz, bool hold, const struct sc_job_member *job)
{
	struct sc_thread_state *me;
	int32_t tid;
	int err = sc_threads_stop();

	if (err < 0) {
		sc_threads_release();
		if (err == -E2BIG)
			return sc_err(E2BIG, "the process has more than %d threads, the most a "
				      "checkpoint can stop", SC_MAX_THREADS);
		if (err == -ESRCH)
			return sc_err(ESRCH, "the main thread has exited (pthread_exit): a process "
				      "without it cannot be checkpointed");
		if (err == -EDEADLK)
			return blocking_thread_error();
		if (err == -ETIMEDOUT)
			return sc_err(ETIMEDOUT, "a thread did not stop for the checkpoint within "
				      "10 s; the checkpoint is given up and the program goes on");
		return sc_err(-err, "cannot stop the threads: %s", strerror(-err));
	}
	/* The job's instant: nothing is read until every process of it is stopped. */
	if ((err = sc_job_stopped(job)) < 0) {
		sc_threads_release();
		return sc_err_quiet(-err, "the checkpoint of the job was given up");
	}
	fz->at_stopped = sc_log_seconds();
	/* Counted again from zero as the threads come back from an image. */
	__atomic_store_n(&sc_stopped.stopped, 0, __ATOMIC_RELEASE);
	me = &sc_stopped.threads[sc_stopped.self];
	sc_thread_capture(me);
	if ((tid = own_rseq_thread())) {
		sc_threads_release(); /* before the message: a stopped thread may hold malloc's lock */
		return sc_err(SELFCKPT_EHOST, "thread %d registered a restartable sequences area "
			      "(rseq) of its own, not the C library's: it cannot come back, so no "
			      "image is written", (int)tid);
	}
	me->flags = SC_THREAD_COORDINATOR;
	sc_sys4(SYS_rt_sigprocmask, SIG_BLOCK, 0, (long)&me->sigmask, 8);
	sc_sys2(SYS_rt_sigpending, (long)&me->pending, 8);
	sc_pending_take_private(sc_stopped.self);
	sc_pending_take_shared();
	fz->brk = (uint64_t)sc_sys1(SYS_brk, 0);
	capture_signals(&fz->signals);
	if (hooks.frozen)
		hooks.frozen();
	sc_fds_freeze(&fz->fds);
	sc_shared_freeze(&fz->shared);
	sc_timers_freeze(&fz->timers);
	sc_sysv_freeze(&fz->sysv); /* before the clone: it may attach a segment for a moment */
	if (!job) { /* a job's coordinator asked it of every process of the job */
		int32_t self = (int32_t)sc_sys0(SYS_getpid);

		sc_unix_in_flight(&self, 1, &fz->flight);
	}
	sc_vmflags_fork_whole(&fz->vmflags);
	sc_lineage_instant(); /* last: a write after it counts for the next image */
	if (sc_ctx_save(&me->ctx))
		return 1;
	fz->at_taken = sc_log_seconds();
	fz->child = (pid_t)sc_clone_frozen();
	sc_lineage_snapshot_taken(); /* first: what this thread wrote since the scan */
	sc_vmflags_fork_back(&fz->vmflags);
	sc_fds_freeze_drop(&fz->fds); /* the snapshot holds the copies now */
	fz->at_cloned = sc_log_seconds();
	if (fz->child >= 0 && (err = sc_job_captured(job)) < 0) {
		let_go();
		return sc_err_quiet(-err, "the checkpoint of the job was given up");
	}
	if (!hold || fz->child < 0)
		let_go();
	if (fz->child < 0)
		return sc_err(-fz->child, "cannot create the snapshot process: %s",
			      strerror(-fz->child));
	return 0;
}

static void thread_record(const struct sc_thread_state *t, struct sc_thread_record *r)
{
	*r = (struct sc_thread_record){
		.tid = t->tid, .flags = t->flags, .fs_base = t->fs_base, .gs_base = t->gs_base,
		.tid_addr = t->tid_addr, .robust_head = t->robust_head,
		.robust_len = t->robust_len, .rseq_addr = t->rseq_addr, .rseq_len = t->rseq_len,
		.rseq_sig = t->rseq_sig, .ss_sp = t->ss_sp, .ss_size = t->ss_size,
		.ss_flags = t->ss_flags, .sigmask = t->sigmask, .pending = t->pending,
		.state = (uint64_t)t, .pdeath_sig = (uint32_t)t->pdeath_sig };
	memcpy(r->ctx, &t->ctx, sizeof(r->ctx));
}

static int write_threads(struct sc_writer *w)
{
	for (int i = 0; i < sc_stopped.n; i++) {
		struct sc_thread_record r;
		int err;

		if (!sc_stopped.threads[i].tid)
			continue; /* exited while we stopped the others */
		thread_record(&sc_stopped.threads[i], &r);
		if ((err = sc_thread_write(w, &r)) < 0)
			return err;
	}
	return 0;
}

/* The timers, unless there is none; refused, named, where one cannot come back. */
static int write_timers(struct sc_writer *w, const struct sc_frozen *fz)
{
	int32_t tids[SC_MAX_THREADS];
	int n = 0;
	int err;

	for (int i = 0; i < sc_stopped.n; i++)
		if (sc_stopped.threads[i].tid)
			tids[n++] = sc_stopped.threads[i].tid;
	err = sc_timers_check(&fz->timers, tids, n);
	if (!err && !sc_timers_empty(&fz->timers.timers))
		err = sc_timers_write(w, &fz->timers.timers);
	return err;
}

/* The descriptors; @o notes the files they hold, which mappings of them then map. */
static int write_fds(struct sc_writer *w, const struct sc_frozen *fz, struct sc_save_opts *o)
{
	struct sc_fd *fds;
	size_t n;
	struct sc_lock *locks = NULL;
	size_t n_locks = 0, n_own;
	const int *own = sc_fds_own(&n_own);
	int err = sc_fds_collect(&fz->fds, fz->child, own, n_own, &fds, &n);

	for (size_t i = 0; !err && i < n; i++)
		err = sc_fd_write_record(w, &fds[i]);
	if (!err)
		sc_job_note_fds(fds, n);
	if (!err)
		err = sc_held_files(fds, n, o);
	sc_fds_free(fds, n);
	if (!err)
		err = sc_locks_collect(&fz->fds, fz->child, &locks, &n_locks);
	if (!err)
		err = sc_locks_write(w, locks, n_locks);
	free(locks);
	return err;
}

/* Phase 2: everything is read from the snapshot; other threads run meanwhile. */
static int write_image(struct sc_writer *w, const struct sc_frozen *fz,
		       const struct sc_lineage_plan *plan)
{
	struct sc_process_info p;
	struct sc_save_opts o = { .embed_files = sc_settings()->embed_files,
				  .incremental = plan->incremental };
	int err = sc_process_collect(fz, &p);

	if (err < 0)
		return err;
	err = sc_process_write(w, &p);
	sc_process_free(&p);
	if (!err && plan->incremental)
		err = sc_parent_write(w, &plan->parent);
	if (!err)
		err = sc_signals_write(w, &fz->signals);
	if (!err)
		err = write_timers(w, fz);
	if (!err)
		err = write_fds(w, fz, &o);
	if (!err)
		err = write_threads(w);
	if (!err)
		err = sc_sysv_write_all(w, &fz->sysv, fz->child);
	if (!err)
		err = sc_segments_write(w, fz, &o);
	free(o.held);
	if (!err && hooks.write)
		err = hooks.write(w);
	return err ? err : sc_writer_finish(w);
}

/* How the image is written: the user's level, threads, writers and writeback. */
static void write_opts(struct sc_write_opts *wo)
{
	const struct sc_settings *set = sc_settings();

	sc_write_opts_init(wo);
	wo->level = set->level;
	/* the members of a job take turns writing: each takes its share of the CPUs */
	wo->threads = set->threads ? set->threads : sc_job_threads();
	wo->writers = set->writers;
	wo->no_writeback = !set->writeback;
}

/* Did the image fail because the settings lent for it were not the instant's? */
static bool lent_settings_refuted(const struct sc_frozen *fz)
{
	return fz->settings_cached && sc_vmflags_cache_refuted();
}

static int save_to(const char *path, const struct sc_frozen *fz)
{
	struct sc_atomic_file f;
	struct sc_writer *w = NULL;
	struct sc_write_opts wo;
	struct sc_lineage_plan plan;
	int err = sc_lineage_plan(path, &plan);

	if (!err)
		err = sc_atomic_open(&f, path);
	if (err < 0) {
		sc_lineage_done(&plan, path, err, 0, 0, 0);
		return err;
	}
	double t0 = sc_log_seconds(), t1;
	uint64_t bytes = 0, created = 0, sum = 0;

	write_opts(&wo);
	wo.incremental = plan.incremental;
	err = sc_writer_new(&w, f.fd, path, &wo);
	if (!err)
		err = write_image(w, fz, &plan);
	if (!err) {
		bytes = sc_writer_bytes(w);
		sc_writer_identity(w, &created, &sum);
	}
	sc_writer_free(w);
	if (err < 0) {
		sc_atomic_abort(&f);
		if (lent_settings_refuted(fz))
			sc_lineage_again(&plan); /* settings_refuted() takes it again */
		else
			sc_lineage_done(&plan, path, err, 0, 0, 0);
		return err;
	}
	t1 = sc_log_seconds();
	err = sc_atomic_commit(&f);
	sc_lineage_done(&plan, path, err, created, bytes, sum);
	if (!err)
		sc_log(SC_LOG_DEBUG, "checkpoint: '%s' (%.1f MiB) written in %.3f s, synced and "
		       "renamed in %.3f s", path, (double)bytes / (1 << 20), t1 - t0,
		       sc_log_seconds() - t1);
	return err;
}

struct background {
	char *path;
	struct sc_frozen fz;
};

/* What the preparations hold; each part is free already where its preparation did not run. */
static void frozen_free(struct sc_frozen *fz)
{
	sc_fds_frozen_free(&fz->fds);
	sc_shared_free(&fz->shared);
	sc_timers_frozen_free(&fz->timers);
	sc_sysv_frozen_free(&fz->sysv);
	sc_vmflags_free(&fz->vmflags);
	sc_vmflags_free(&fz->own_flags);
}

static void *write_in_background(void *arg)
{
	struct background *bg = arg;
	int err = save_to(bg->path, &bg->fz);

	if (err < 0)
		sc_log(SC_LOG_ERROR, "background checkpoint to '%s' failed: %s", bg->path,
		       selfckpt_strerror(err));
	sc_copier_stop(); /* first: the snapshot's exit then frees the buffers */
	sc_snapshot_kill(bg->fz.child);
	frozen_free(&bg->fz);
	free(bg->path);
	free(bg);
	if (hooks.done)
		hooks.done(err);
	checkpoint_end();
	return NULL;
}

void sc_checkpoint_span_begin(void)
{
	checkpoint_begin();
}

void sc_checkpoint_span_end(void)
{
	checkpoint_end();
}

void sc_checkpoint_wait_idle(void)
{
	if ((pid_t)sc_sys0(SYS_getpid) != memory_owner)
		return; /* a CLONE_VM child: its parent's checkpoint is not its own */
	pthread_mutex_lock(&busy_lock);
	while (busy && busy_thread != (pid_t)sc_gettid())
		pthread_cond_wait(&busy_done, &busy_lock);
	pthread_mutex_unlock(&busy_lock);
}

/* The last background writer is gone (called with the checkpoint begun). */
static void join_writer(void)
{
	if (writer_joinable)
		pthread_join(writer, NULL);
	writer_joinable = false;
}

/*
 * Hand the snapshot to a thread of its own; the caller goes on at once. The
 * checkpoint is the writer's now: the caller's next one waits for it, as any
 * other thread's does (not as a job's checkpoint nested in its own).
 */
static int start_background(const char *path, const struct sc_frozen *fz)
{
	struct background *bg = malloc(sizeof(*bg));
	int err = bg ? 0 : ENOMEM;

	if (bg && !(bg->path = strdup(path)))
		err = ENOMEM;
	if (!err) {
		bg->fz = *fz;
		pthread_mutex_lock(&busy_lock);
		busy_thread = 0;
		pthread_mutex_unlock(&busy_lock);
		err = pthread_create(&writer, NULL, write_in_background, bg);
		writer_joinable = !err;
	}
	if (!err)
		return 0;
	pthread_mutex_lock(&busy_lock);
	busy_thread = (pid_t)sc_gettid(); /* still the caller's, which ends it */
	pthread_mutex_unlock(&busy_lock);
	if (bg)
		free(bg->path);
	free(bg);
	return sc_err(err, "cannot start the background checkpoint to '%s': %s", path,
		      strerror(err));
}

/* The process came back from an image: finish the threads, then the hooks. */
static int restarted(void)
{
	int err;

	/* with new ids, another pid, and this thread, which began the checkpoint, another tid */
	memory_owner = (pid_t)sc_sys0(SYS_getpid);
	busy_thread = (pid_t)sc_gettid();
	sc_lineage_forget(); /* the watch was the saved process's */
	sc_vmflags_cache_forget(); /* and the settings the last checkpoint saw */
	err = sc_restart_finish();

	sc_copier_forget();

	/* The restart is the restorer's to watch: its log level, when it has one. */
	sc_settings_follow_restorer();
	sc_log(SC_LOG_DEBUG, "restored from '%s'", sc_handoff.image[0] ? sc_handoff.image :
		"a stream");
	if (!err && hooks.restored && (err = hooks.restored(sc_handoff.image)) < 0) {
		sc_log(SC_LOG_ERROR, "the restored process cannot go on: %s",
		       selfckpt_strerror(err));
		_exit(SC_EXIT_RESTART_FAILED);
	}
	sc_restart_env_release();
	checkpoint_end();
	return err < 0 ? err : SELFCKPT_RESTORED;
}

/*
 * The end of a held checkpoint (@ex): once the image is written, @ex->saved
 * runs and the process ends while its threads are still stopped, so that
 * nothing the program does after the instant is done twice. Where the
 * watchdog let them go (a stopped thread held what the writing needed), or
 * the image failed, the program goes on.
 */
/* A held checkpoint that does not end the program: the threads go on (@held: still stopped). */
static void go_on_after_hold(bool held)
{
	if (held)
		sc_threads_release(); /* else the watchdog let them go already */
	sc_pending_requeue(sc_stopped.self);
	sc_pending_requeue(SC_PENDING_PROCESS);
}

static void end_hold(const struct sc_exit_after *ex, const char *path, pid_t child, int err)
{
	bool held = sc_hold_end();

	if (!err && held) {
		ex->saved(path);
		kill(child, SIGKILL); /* the snapshot would outlive the process */
		_exit(ex->status);
	}
	go_on_after_hold(held);
	if (!err && !held)
		sc_log(SC_LOG_WARN, "a stopped thread held what writing the image needed for more "
		       "than %d s, so the program's threads went on before the image was complete: "
		       "the program does not end, as it ran past the image", SC_HOLD_STALL_S);
}

/* A job's coordinator holds its threads until its set is complete (job.c). */
static bool coordinator_holds;

/*
 * The end of a held checkpoint in a job (--exit-after-save). The job ends
 * only once its set is complete and every process still held its threads:
 * a member reports its image and waits for the coordinator's word (raw: its
 * threads are stopped); the coordinator keeps its hold, and its watchdog,
 * until the set is written (sc_checkpoint_hold_end()).
 */
static void end_job_hold(const struct sc_exit_after *ex, pid_t child, int err,
			 const struct sc_job_member *job)
{
	bool held;

	if (job->coordinator && !err) {
		coordinator_holds = true;
		return;
	}
	held = sc_hold_end();
	if (!job->coordinator && sc_job_member_verdict(job, err, !held) && held && !err) {
		kill(child, SIGKILL); /* the snapshot would outlive the process */
		_exit(ex->status);
	}
	go_on_after_hold(held);
}

bool sc_checkpoint_hold_end(void)
{
	bool held = coordinator_holds && sc_hold_end();

	if (coordinator_holds && !held)
		go_on_after_hold(false); /* the watchdog let the threads go */
	coordinator_holds = held;
	return held;
}

void sc_checkpoint_hold_release(void)
{
	if (!coordinator_holds)
		return;
	coordinator_holds = false;
	let_go();
}

/*
 * Everything the checkpoint sets up while the program runs, with room for
 * @fd_spare descriptors opened before the stop. On failure nothing is held.
 */
static int prepare(struct sc_frozen *fz, unsigned fd_spare)
{
	int err = sc_stop_handler_install();

	if (!err)
		err = sc_fds_prepare(&fz->fds, fd_spare);
	if (!err)
		err = sc_shared_prepare(&fz->shared);
	if (!err)
		err = sc_sysv_prepare(&fz->sysv);
	if (!err)
		err = sc_timers_prepare(&fz->timers);
	/* before the memory settings: the CUDA driver's checkpoint drops its mappings */
	if (!err && hooks.prepare)
		err = hooks.prepare();
	else if (!err)
		err = sc_gpu_guard();
	if (err)
		frozen_free(fz);
	return err;
}

/*
 * Last before the stop: the process's memory settings (segment_vmflags.c),
 * or, where @may_lend, the last checkpoint's in their place (vmflags_cache.c).
 * The closer to the stop, the fewer can change in between, and nothing of the
 * checkpoint's own is mapped or unmapped after them. On failure what the
 * preparations hold is let go, the copier too.
 */
static int read_own_settings(struct sc_frozen *fz, bool may_lend)
{
	int err = may_lend ? sc_vmflags_cache_serve(&fz->vmflags, &fz->own_flags) : 0;

	fz->settings_cached = err == 1;
	if (err == 0)
		err = sc_vmflags_read_own(SC_VMF_FORK_LOST, &fz->vmflags, &fz->own_flags);

	if (err < 0) {
		sc_copier_stop();
		frozen_free(fz);
		if (hooks.done)
			hooks.done(err); /* prepare() succeeded: undo what it holds */
	}
	return err;
}

/*
 * An instant that cannot be used (see FREEZE_TRIES) is given up: the threads
 * go on, the snapshot dies, and what prepare() holds is released.
 */
static void drop_instant(struct sc_frozen *fz, bool held)
{
	if (held)
		let_go();
	sc_copier_stop();
	sc_snapshot_kill(fz->child);
	sc_snapshot_reaped(); /* its reaper is no thread for the next instant to save */
	frozen_free(fz);
	if (hooks.done)
		hooks.done(-EAGAIN);
	*fz = (struct sc_frozen){ .child = -1 };
}

/*
 * A program that opens descriptors fast can open more between their count
 * and the stop than the table has room for; the instant is then taken again
 * with four times the room, up to this many tries, before it is refused.
 */
#define FREEZE_TRIES 4
/* An instant with inotify events unread is taken again this long after. */
#define QUEUE_RETRY_MS 2
/* An instant with a connection to itself not accepted yet is refused after this long. */
#define FLIGHT_WAIT_MS 2000

/* What take_again() says of the instant just taken. */
enum instant_verdict {
	INSTANT_KEEP,        /* the image is made of it (or refused, where it cannot hold it) */
	INSTANT_AGAIN,       /* taken again at once, with more room for descriptors */
	INSTANT_AGAIN_LATER, /* taken again after QUEUE_RETRY_MS, once the program read its events */
	INSTANT_REFUSE,      /* no image can be made of it for long: refused */
};

/*
 * What a connection queued at a listening socket of the process carries
 * before it is accepted is in no descriptor's hands: the process accepts it
 * first, or no image is made (unix_flight.h).
 */
static enum instant_verdict in_flight_again(const struct sc_frozen *fz, double *flight_since)
{
	if (!*flight_since)
		*flight_since = sc_log_seconds();
	else if (sc_log_seconds() - *flight_since >= FLIGHT_WAIT_MS / 1000.0)
		return INSTANT_REFUSE;
	sc_log(SC_LOG_DEBUG, "checkpoint: %d connection%s queued at a unix socket of the "
	       "process: taken again", (int)fz->flight.count, fz->flight.count == 1 ? "" : "s");
	return INSTANT_AGAIN_LATER;
}

static int refuse_in_flight(const struct sc_frozen *fz)
{
	return sc_err(EAGAIN, "the process did not accept %d connection%s queued at its unix "
		      "socket within %d s: what was sent on a connection not accepted yet is in no "
		      "descriptor's hands and could not come back, so no image is written",
		      (int)fz->flight.count, fz->flight.count == 1 ? "" : "s", FLIGHT_WAIT_MS / 1000);
}

static enum instant_verdict take_again(const struct sc_frozen *fz, unsigned *fd_tries,
				       unsigned *fd_spare, double *queued_since,
				       double *flight_since)
{
	if (fz->flight.count)
		return in_flight_again(fz, flight_since);
	if (sc_fds_outgrown(&fz->fds)) {
		if (++*fd_tries >= FREEZE_TRIES)
			return INSTANT_KEEP;
		sc_log(SC_LOG_DEBUG, "checkpoint: more descriptors were opened before the stop "
		       "than the %u spare: again, with %u", *fd_spare, 4 * *fd_spare);
		*fd_spare *= 4;
		return INSTANT_AGAIN;
	}
	if (sc_fds_events_queued(&fz->fds) >= 0) {
		if (!*queued_since)
			*queued_since = sc_log_seconds();
		else if (sc_log_seconds() - *queued_since >= SC_FDS_QUEUE_WAIT_MS / 1000.0)
			return INSTANT_KEEP;
		return INSTANT_AGAIN_LATER;
	}
	return INSTANT_KEEP;
}

/*
 * The instant: prepare, stop every thread and take the snapshot, taken again
 * where a later one can do better (take_again()); @t[0..2]: when the
 * preparations began, when they ended, and when the memory settings were read.
 * Return: as freeze(), with *@stopped; or, with *@stopped false, the refusal
 * of prepare(), which left nothing held.
 */
static int take_instant(struct sc_frozen *fz, bool hold, int program_errno, double t[3],
			bool *stopped, const struct sc_job_member *job, bool may_lend)
{
	unsigned fd_tries = 0, fd_spare = SC_FDS_SPARE;
	double queued_since = 0; /* when the first instant found inotify events unread */
	double flight_since = 0; /* when the first found a connection queued */
	enum instant_verdict verdict;
	int err;

	for (;;) {
		*stopped = false;
		t[0] = sc_log_seconds();
		if ((err = prepare(fz, fd_spare)) < 0)
			return err;
		sc_lineage_prepare(job != NULL);
		/* Without a copier the snapshot is read through /proc: slower, as good. */
		err = sc_copier_start(SC_SHARED_SIZE);
		if (err < 0)
			sc_log(SC_LOG_DEBUG, "checkpoint: no memory shared with the snapshot: %s",
			       strerror(-err));
		t[1] = sc_log_seconds();
		if ((err = read_own_settings(fz, may_lend)) < 0)
			return err;
		t[2] = sc_log_seconds();
		/* the image holds the program's errno, not what the preparations left in it */
		errno = program_errno;
		*stopped = true;
		err = freeze(fz, hold, job);
		/* A job's instant is taken again by the whole job (job.c), never by one member. */
		if (err || job ||
		    (verdict = take_again(fz, &fd_tries, &fd_spare, &queued_since,
					  &flight_since)) == INSTANT_KEEP)
			return err;
		if (verdict == INSTANT_REFUSE) {
			err = refuse_in_flight(fz); /* before the drop, which clears it */
			drop_instant(fz, hold);
			*stopped = false; /* nothing is held any more */
			return err;
		}
		drop_instant(fz, hold);
		if (verdict == INSTANT_AGAIN_LATER)
			nanosleep(&(struct timespec){ 0, QUEUE_RETRY_MS * 1000000L }, NULL);
	}
}

/*
 * May the last checkpoint's memory settings stand in for the read of the
 * process's own (vmflags_cache.c)? Only where the instant can be taken again
 * on this thread if they prove wrong: not in the background, not for a job or
 * an exit after.
 */
static bool may_lend_settings(bool background, const struct sc_exit_after *ex,
			      const struct sc_job_member *job)
{
	return !background && !ex && !job;
}

/*
 * An image given up (@err) because the settings lent were not the instant's:
 * this checkpoint ends as a failed one does, and the caller takes the instant
 * again, from the preparations on, with the settings read.
 */
static bool settings_refuted(struct sc_frozen *fz, int err)
{
	if (!lent_settings_refuted(fz))
		return false;
	sc_log(SC_LOG_DEBUG, "checkpoint: the instant is taken again, with this process's own "
	       "memory settings read");
	sc_copier_stop();
	sc_snapshot_kill(fz->child);
	frozen_free(fz);
	*fz = (struct sc_frozen){ .child = -1 };
	if (hooks.done)
		hooks.done(err); /* what prepare() holds is let go: it runs again */
	return true;
}

static int checkpoint(const char *path, bool background, const struct sc_exit_after *ex,
		      const struct sc_job_member *job)
{
	struct sc_frozen fz = { .child = -1 };
	int err, program_errno = errno;
	double t[3] = { 0, 0, 0 }, t2, t3;
	bool stopped = false; /* the threads were stopped: what follows must undo it */
	bool may_lend = may_lend_settings(background, ex, job);

	if (!path || !*path)
		return sc_err(SELFCKPT_EUSAGE, "selfckpt_save() needs a file name");
	sc_exiting_watch(sc_checkpoint_wait_idle); /* an exit waits for the checkpoint under way */
	checkpoint_begin();
	join_writer();
	err = sc_exiting_refuse(path); /* none starts once the program is exiting */
again:
	sc_snapshot_reaped(); /* the last snapshot's reaper is no thread to save */
	if (!err)
		err = take_instant(&fz, ex != NULL, program_errno, t, &stopped, job, may_lend);
	if (err == 1) {
		sc_fds_restarted(&fz.fds);
		sc_shared_forget(&fz.shared); /* its stage was no part of the image: not unmapped */
		frozen_free(&fz);
		return restarted();
	}
	if (!stopped) { /* refused before the stop: nothing is held */
		checkpoint_end();
		return err;
	}
	t2 = sc_log_seconds();
	if (!err && hooks.thawed)
		hooks.thawed();
	if (!err && background && (err = start_background(path, &fz)) == 0)
		return SELFCKPT_SAVED; /* the writer thread ends the checkpoint */
	if (!err && ex && sc_hold_start((int64_t)SC_HOLD_STALL_S * 1000000000) < 0) {
		let_go(); /* no watchdog: no hold */
		if (job)
			sc_job_ran_past(job); /* the job must not end: this process ran on */
		ex = NULL;
	}
	sc_job_noting(job);
	if (!err) {
		sc_job_write_turn(); /* a job's members take turns at the CPUs */
		err = save_to(path, &fz);
		sc_job_write_done();
	}
	sc_job_noting(NULL);
	if (err < 0 && settings_refuted(&fz, err)) {
		may_lend = false;
		err = 0;
		goto again;
	}
	if (ex && fz.child > 0 && job)
		end_job_hold(ex, fz.child, err, job);
	else if (ex && fz.child > 0)
		end_hold(ex, path, fz.child, err);
	t3 = sc_log_seconds();
	/*
	 * Unmapped while the snapshot still maps it, the region costs this thread
	 * its page tables only; the snapshot's exit frees the buffers, and the
	 * snapshot dies on the reaper's time, not the application's.
	 */
	sc_copier_stop();
	sc_snapshot_kill(fz.child);
	frozen_free(&fz);
	sc_log(SC_LOG_DEBUG, "checkpoint: prepared in %.3f s, memory settings %s in %.3f s, "
	       "snapshot taken in %.3f s (threads stopped in %.3f s, the instant's state taken in "
	       "%.3f s, the clone in %.3f s), image in %.3f s, snapshot and shared memory "
	       "released in %.3f s", t[1] - t[0], fz.settings_cached ? "lent" : "read",
	       t[2] - t[1], t2 - t[2], fz.at_stopped - t[2],
	       fz.at_taken - fz.at_stopped, fz.at_cloned - fz.at_taken, t3 - t2,
	       sc_log_seconds() - t3);
	if (hooks.done)
		hooks.done(err);
	/* before the end, which lets an exit under way go: a member that ends is no loss then */
	if (job && !job->coordinator)
		sc_job_member_report(job, err);
	checkpoint_end();
	return err < 0 ? err : SELFCKPT_SAVED;
}

int sc_checkpoint(const char *path, bool background)
{
	return checkpoint(path, background, NULL, NULL);
}

int sc_checkpoint_then_exit(const char *path, const struct sc_exit_after *ex)
{
	return checkpoint(path, false, ex, NULL);
}

int sc_checkpoint_member(const char *path, const struct sc_job_member *job,
			 const struct sc_exit_after *ex)
{
	return checkpoint(path, false, ex, job);
}

SELFCKPT_API int selfckpt_save(const char *path)
{
	int ret;

	if (!path || !*path)
		return sc_err(SELFCKPT_EUSAGE, "selfckpt_save() needs a file name");
	if ((ret = sc_job_save(path)) != 0)
		return ret; /* the job's set, or its refusal */
	return sc_checkpoint(path, sc_settings()->fork);
}
