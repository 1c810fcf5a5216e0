/* SPDX-License-Identifier: MIT */
/*
 * test_pool.c - the worker pool: every task runs exactly once, waits return
 * only after their task ran, the thread count, and chunks compressed on it.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "compress/sc_compress.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

struct counted {
	struct sc_task task;
	int runs;	/* written by the task, read after sc_pool_wait() */
	pthread_t ran_on;
};

static void count_run(struct sc_task *task)
{
	struct counted *c = container_of(task, struct counted, task);

	c->runs++;
	c->ran_on = pthread_self();
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts))
		;
}

static void slow_run(struct sc_task *task)
{
	sleep_ms(20);
	count_run(task);
}

static void run_each_once(unsigned threads, size_t n, void (*fn)(struct sc_task *))
{
	struct counted *tasks = calloc(n, sizeof(*tasks));
	struct sc_pool *pool;

	cr_assert(tasks);
	cr_assert_eq(sc_pool_new(&pool, threads), 0);
	cr_assert_eq(sc_pool_threads(pool), threads);
	for (size_t i = 0; i < n; i++) {
		tasks[i].task.fn = fn;
		sc_pool_submit(pool, &tasks[i].task);
	}
	for (size_t i = 0; i < n; i++) {
		sc_pool_wait(pool, &tasks[i].task);
		cr_assert_eq(tasks[i].runs, 1, "task %zu ran %d times on %u threads", i,
			     tasks[i].runs, threads);
	}
	sc_pool_free(pool);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(tasks[i].runs, 1, "task %zu ran again after its wait", i);
	free(tasks);
}

Test(compress, pool_runs_each_task_once_on_one_thread)
{
	run_each_once(1, 100, count_run);
}

Test(compress, pool_runs_each_task_once_on_four_threads)
{
	run_each_once(4, 100, count_run);
}

Test(compress, pool_runs_many_tasks)
{
	run_each_once(4, 100000, count_run);
	run_each_once(2, 100000, count_run);
}

Test(compress, pool_wait_returns_after_the_task_ran, .timeout = 30)
{
	run_each_once(4, 16, slow_run);
	run_each_once(2, 5, slow_run);
}

Test(compress, pool_one_thread_runs_inline)
{
	struct counted c = { .task.fn = count_run };
	struct sc_pool *pool;

	cr_assert_eq(sc_pool_new(&pool, 1), 0);
	sc_pool_submit(pool, &c.task);
	cr_assert_eq(c.runs, 1, "submit returned before the task ran");
	cr_assert(pthread_equal(c.ran_on, pthread_self()));
	sc_pool_wait(pool, &c.task);
	sc_pool_free(pool);
}

Test(compress, pool_workers_are_other_threads)
{
	struct counted c = { .task.fn = count_run };
	struct sc_pool *pool;

	cr_assert_eq(sc_pool_new(&pool, 2), 0);
	sc_pool_submit(pool, &c.task);
	sc_pool_wait(pool, &c.task);
	cr_assert_eq(c.runs, 1);
	cr_assert(!pthread_equal(c.ran_on, pthread_self()));
	sc_pool_free(pool);
}

struct mask_probe {
	struct sc_task task;
	sigset_t mask;
};

static void probe_mask(struct sc_task *task)
{
	struct mask_probe *p = container_of(task, struct mask_probe, task);

	pthread_sigmask(SIG_SETMASK, NULL, &p->mask);
}

Test(compress, pool_workers_block_signals_but_faults)
{
	struct mask_probe p = { .task.fn = probe_mask };
	struct sc_pool *pool;
	sigset_t before, after;

	pthread_sigmask(SIG_SETMASK, NULL, &before);
	cr_assert_eq(sc_pool_new(&pool, 2), 0);
	sc_pool_submit(pool, &p.task);
	sc_pool_wait(pool, &p.task);
	cr_assert(sigismember(&p.mask, SIGUSR1) && sigismember(&p.mask, SIGINT));
	cr_assert(!sigismember(&p.mask, SIGSEGV) && !sigismember(&p.mask, SIGBUS));
	pthread_sigmask(SIG_SETMASK, NULL, &after);
	cr_assert_eq(sigismember(&after, SIGUSR1), sigismember(&before, SIGUSR1),
		     "the caller's mask changed");
	sc_pool_free(pool);
}

Test(compress, pool_task_can_be_submitted_again)
{
	struct counted c = { .task.fn = count_run };
	struct sc_pool *pool;

	cr_assert_eq(sc_pool_new(&pool, 3), 0);
	for (int i = 1; i <= 10; i++) {
		sc_pool_submit(pool, &c.task);
		sc_pool_wait(pool, &c.task);
		cr_assert_eq(c.runs, i);
	}
	sc_pool_free(pool);
}

Test(compress, pool_free_runs_queued_tasks, .timeout = 30)
{
	struct counted tasks[8] = { 0 };
	struct sc_pool *pool;

	cr_assert_eq(sc_pool_new(&pool, 2), 0);
	for (size_t i = 0; i < 8; i++) {
		tasks[i].task.fn = slow_run;
		sc_pool_submit(pool, &tasks[i].task);
	}
	sc_pool_free(pool); /* no wait: free must drain the queue before the workers stop */
	for (size_t i = 0; i < 8; i++)
		cr_assert_eq(tasks[i].runs, 1, "queued task %zu ran %d times", i, tasks[i].runs);
}

Test(compress, pool_free_null_is_a_noop)
{
	sc_pool_free(NULL);
}

/* The pool never reads the environment: SELFCKPT_THREADS is its caller's (core/settings.c). */
Test(compress, pool_zero_threads_means_cpus_whatever_the_env)
{
	unsigned cpus = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
	struct sc_pool *pool;

	cr_assert_eq(setenv("SELFCKPT_THREADS", "3", 1), 0);
	cr_assert_eq(sc_pool_new(&pool, 0), 0);
	cr_assert_eq(sc_pool_threads(pool), cpus);
	sc_pool_free(pool);
	cr_assert_eq(sc_pool_new(&pool, 5), 0);
	cr_assert_eq(sc_pool_threads(pool), 5);
	sc_pool_free(pool);
}

/* Chunks compressed and decompressed on several workers at once, each with its own contexts. */
struct chunk_job {
	struct sc_task task;
	struct sc_chunk c;
	uint8_t *raw;
	uint8_t *back;
	int ret;
};

static void chunk_round_trip(struct sc_task *task)
{
	struct chunk_job *j = container_of(task, struct chunk_job, task);

	sc_chunk_compress(&j->c);
	j->ret = sc_chunk_decompress(j->c.codec, j->c.stored, j->c.stored_len, j->back,
				     j->c.raw_len);
}

static void fill_job(uint8_t *p, size_t n, unsigned seed)
{
	/* odd seeds: a hash of the offset; even: text and zero runs */
	for (size_t i = 0; i < n; i++)
		p[i] = seed & 1 ? (uint8_t)(i * 2654435761u >> 13 ^ seed) :
				  (i & 4096 ? 0 : (uint8_t)"chunk text "[i % 11]);
}

Test(compress, pool_compresses_chunks_in_parallel, .timeout = 60)
{
	enum { JOBS = 32, LEN = 256 << 10 };
	struct chunk_job *jobs = calloc(JOBS, sizeof(*jobs));
	struct sc_pool *pool;

	cr_assert(jobs);
	cr_assert_eq(sc_pool_new(&pool, 4), 0);
	for (unsigned i = 0; i < JOBS; i++) {
		struct chunk_job *j = &jobs[i];

		j->raw = malloc(LEN);
		j->back = malloc(LEN);
		cr_assert(j->raw && j->back);
		fill_job(j->raw, LEN, i);
		j->c = (struct sc_chunk){ .raw = j->raw, .raw_len = LEN, .level = (int)i % 4 - 1 };
		j->c.out = malloc(sc_chunk_bound(LEN));
		cr_assert(j->c.out);
		j->task.fn = chunk_round_trip;
		sc_pool_submit(pool, &j->task);
	}
	for (unsigned i = 0; i < JOBS; i++) {
		struct chunk_job *j = &jobs[i];

		sc_pool_wait(pool, &j->task);
		cr_assert_eq(j->ret, 0, "job %u: %d", i, j->ret);
		cr_assert_eq(memcmp(j->raw, j->back, LEN), 0, "job %u differs", i);
		cr_assert_eq(j->c.hash, XXH3_64bits(j->raw, LEN));
		free(j->raw);
		free(j->back);
		free(j->c.out);
	}
	sc_pool_free(pool);
	free(jobs);
}
