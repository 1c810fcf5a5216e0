/* SPDX-License-Identifier: MIT */
/*
 * pool.c - a fixed set of worker threads running tasks from one FIFO queue.
 *
 * One mutex guards the queue, the stop flag and every task's ->done; workers
 * sleep on ->work, waiters on ->finished. A worker never touches a task after
 * setting ->done, since the waiter may free it as soon as it sees the flag.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "compress/sc_compress.h"

struct sc_pool {
	pthread_mutex_t lock;
	pthread_cond_t work;		/* a task was queued, or the pool is stopping */
	pthread_cond_t finished;	/* a task's ->done was set */
	struct sc_task *head;		/* next task to start */
	struct sc_task *tail;		/* last task queued */
	bool stopping;			/* sc_pool_free() was called */
	unsigned threads;		/* tasks that can run at once */
	unsigned started;		/* worker threads running */
	int take_signal;		/* one signal the workers leave unblocked, or 0 */
	pthread_t workers[];		/* @started of them; none with one thread */
};

static unsigned threads_default(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	return cpus > 0 && cpus <= UINT_MAX ? (unsigned)cpus : 1;
}

/* Set ->done and wake the waiters; @task may be freed once the lock is dropped. */
static void task_finish(struct sc_pool *pool, struct sc_task *task)
{
	pthread_mutex_lock(&pool->lock);
	task->done = 1;
	pthread_cond_broadcast(&pool->finished);
	pthread_mutex_unlock(&pool->lock);
}

/* The next task, or NULL once the pool is stopping and the queue is empty. */
static struct sc_task *task_next(struct sc_pool *pool)
{
	struct sc_task *task;

	pthread_mutex_lock(&pool->lock);
	while (!pool->head && !pool->stopping)
		pthread_cond_wait(&pool->work, &pool->lock);
	task = pool->head;
	if (task) {
		pool->head = task->next;
		if (!pool->head)
			pool->tail = NULL;
	}
	pthread_mutex_unlock(&pool->lock);
	return task;
}

static void *pool_worker(void *arg)
{
	struct sc_pool *pool = arg;
	struct sc_task *task;

	while ((task = task_next(pool))) {
		task->fn(task);
		task_finish(pool, task);
	}
	return NULL;
}

/*
 * Workers block every signal they can, so that signals sent to the process
 * (the checkpoint trigger among them) reach the application's threads and
 * never interrupt a worker in the middle of a chunk. Faults stay unblocked: a
 * blocked SIGSEGV or SIGBUS raised by the worker itself kills the process
 * without running the handler that was installed for it. New threads inherit
 * the mask of the thread that creates them.
 */
static int pool_start(struct sc_pool *pool)
{
	static const int faults[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS };
	sigset_t mask, old;
	int err = 0;
	size_t i;

	if (pool->threads == 1)
		return 0;
	sigfillset(&mask);
	for (i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&mask, faults[i]);
	if (pool->take_signal)
		sigdelset(&mask, pool->take_signal);
	pthread_sigmask(SIG_SETMASK, &mask, &old);
	while (pool->started < pool->threads) {
		err = pthread_create(&pool->workers[pool->started], NULL, pool_worker, pool);
		if (err)
			break;
		pool->started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}

static int pool_init_sync(struct sc_pool *pool)
{
	int err;

	err = pthread_mutex_init(&pool->lock, NULL);
	if (err)
		return -err;
	err = pthread_cond_init(&pool->work, NULL);
	if (err)
		goto err_lock;
	err = pthread_cond_init(&pool->finished, NULL);
	if (err)
		goto err_work;
	return 0;

err_work:
	pthread_cond_destroy(&pool->work);
err_lock:
	pthread_mutex_destroy(&pool->lock);
	return -err;
}

int sc_pool_new(struct sc_pool **out, unsigned threads)
{
	return sc_pool_new_taking(out, threads, 0);
}

int sc_pool_new_taking(struct sc_pool **out, unsigned threads, int take_signal)
{
	struct sc_pool *pool;
	size_t workers;
	int err;

	*out = NULL;
	if (!threads)
		threads = threads_default();
	workers = threads > 1 ? threads : 0;
	pool = calloc(1, sizeof(*pool) + workers * sizeof(pool->workers[0]));
	if (!pool)
		return -ENOMEM;
	pool->threads = threads;
	pool->take_signal = take_signal;
	err = pool_init_sync(pool);
	if (err) {
		free(pool);
		return err;
	}
	err = pool_start(pool);
	if (err) {
		sc_pool_free(pool); /* stops the workers that did start */
		return err;
	}
	*out = pool;
	return 0;
}

void sc_pool_free(struct sc_pool *pool)
{
	unsigned i;

	if (!pool)
		return;
	pthread_mutex_lock(&pool->lock);
	pool->stopping = true;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);
	for (i = 0; i < pool->started; i++)
		pthread_join(pool->workers[i], NULL);
	pthread_cond_destroy(&pool->finished);
	pthread_cond_destroy(&pool->work);
	pthread_mutex_destroy(&pool->lock);
	free(pool);
}

unsigned sc_pool_threads(const struct sc_pool *pool)
{
	return pool->threads;
}

void sc_pool_submit(struct sc_pool *pool, struct sc_task *task)
{
	pthread_mutex_lock(&pool->lock);
	task->next = NULL;
	task->done = 0;
	if (!pool->started) {
		pthread_mutex_unlock(&pool->lock);
		task->fn(task);
		task_finish(pool, task);
		return;
	}
	if (pool->tail)
		pool->tail->next = task;
	else
		pool->head = task;
	pool->tail = task;
	pthread_cond_signal(&pool->work);
	pthread_mutex_unlock(&pool->lock);
}

void sc_pool_wait(struct sc_pool *pool, struct sc_task *task)
{
	pthread_mutex_lock(&pool->lock);
	while (!task->done)
		pthread_cond_wait(&pool->finished, &pool->lock);
	pthread_mutex_unlock(&pool->lock);
}
