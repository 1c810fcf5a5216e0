/* SPDX-License-Identifier: MIT */
/*
 * bench_data.h - what the benchmarks share: the data sets they checkpoint or
 * write (bench-format, ckpt-subject), the median of a series of runs
 * (bench-format, bench-ckpt), and a run of a program or subject whose output
 * they read (bench-fds, bench-incremental).
 *
 * The generators are deterministic: the same size gives the same bytes in
 * every program and every run, so figures of different programs compare.
 */
#ifndef SC_BENCH_DATA_H
#define SC_BENCH_DATA_H

#include <stddef.h>
#include <stdint.h>

/*
 * bench_gen_heap() - fill @p with @size bytes of a busy heap: half the pages
 * zero (written, not skipped), the rest pointers into a few arenas, small
 * integers, short strings and NULLs, the two kinds of page in a pseudo-random
 * order. @size is a multiple of 4096.
 *
 * Return: 0, or -ENOMEM when the page order cannot be allocated (@p is then
 * left unwritten).
 */
int bench_gen_heap(uint8_t *p, uint64_t size);

/*
 * bench_gen_float() - fill @p with @size / 4 float32 values like trained
 * weights: two slow waves whose low 16 mantissa bits are noise (zstd -1 saves
 * only about a tenth of them). @size is a multiple of 4.
 *
 * Return: 0.
 */
int bench_gen_float(uint8_t *p, uint64_t size);

/*
 * bench_gen_random() - fill @p with @size pseudo-random bytes, which no
 * compressor shrinks. @size is a multiple of 8.
 *
 * Return: 0.
 */
int bench_gen_random(uint8_t *p, uint64_t size);

/* bench_now() - CLOCK_MONOTONIC, in seconds: for durations within one process. */
double bench_now(void);

/* bench_realtime_ns() - CLOCK_REALTIME, in ns: for stamps that another process compares. */
int64_t bench_realtime_ns(void);

/*
 * bench_median() - the median of the @n (>= 1) values of @v; of the middle
 * two when @n is even.
 *
 * Sorts @v in place, ascending, so v[0] and v[n - 1] are then the min and max.
 */
double bench_median(double *v, unsigned n);

/*
 * bench_run() - run the program @argv, or where @argv is NULL @subject(@arg)
 * in a child (which must not return), with its standard output read into
 * @out (@cap bytes, NUL-terminated).
 *
 * Return: 0 when it exited 0, else -1.
 */
int bench_run(char *const *argv, void (*subject)(const void *arg), const void *arg, char *out,
	      size_t cap);

#endif /* SC_BENCH_DATA_H */
