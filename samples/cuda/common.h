/* SPDX-License-Identifier: MIT */
/*
 * common.h - what the CUDA samples share: options, error checks, module
 * loading, the result checksum and the per-iteration output.
 *
 * Every sample takes
 *   --iters N         iterations to run
 *   --save-at I FILE  after iteration I, checkpoint into FILE (selfckpt_save)
 *   --module PATH     load the kernels from PATH instead of <sample>.fatbin
 *                     next to the executable (tests pass a software module)
 *   --sleep-ms M      pause between iterations, so a signal is easy to time
 * and prints, on stdout, "iter <i> <checksum>" after each iteration and
 * "done <checksum>" at the end, nothing else: two runs, or a run and its
 * restored continuation, must print the same bytes.
 */
#ifndef SAMPLES_CUDA_COMMON_H
#define SAMPLES_CUDA_COMMON_H

#include <cuda.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SAMPLE_HASH_INIT 0xcbf29ce484222325ull /* FNV-1a offset basis */

/* Options a sample accepts beyond the common ones. */
#define SAMPLE_OPT_EMBEDDED 0x1u /* --embedded: the module linked into the program */

struct sample {
	const char *name;     /* "vecadd": names the default module file */
	long iters;
	long save_at;         /* 0: no checkpoint */
	const char *save_path;
	unsigned sleep_ms;
	bool embedded;
	char module[PATH_MAX]; /* resolved at start-up, before any checkpoint */
	uint64_t total;       /* checksum over every iteration so far */
	CUdevice dev;
	CUcontext ctx;
};

/*
 * CHECK() - run a Driver API call; on failure print the call, the error name
 * and the line, and exit 1.
 */
#define CHECK(call) sample_check((call), #call, __FILE__, __LINE__)

void sample_check(CUresult res, const char *call, const char *file, int line);

/**
 * sample_init() - parse the options, resolve the module path, and make the
 * primary context of device 0 current.
 * @s:     filled in
 * @name:  the sample's name, for messages and the default module file
 * @extra: SAMPLE_OPT_* the sample accepts
 *
 * Exits with 64 on a usage error, 1 on a CUDA error.
 */
void sample_init(struct sample *s, int argc, char **argv, const char *name, unsigned extra);

/**
 * sample_load_module() - cuModuleLoad() of the module path sample_init() chose.
 *
 * Return: the module; exits 1 on failure.
 */
CUmodule sample_load_module(const struct sample *s);

/**
 * sample_hash() - fold @n bytes at @buf into the 64-bit FNV-1a hash @h.
 *
 * Start from SAMPLE_HASH_INIT. Not cryptographic: it only has to change when
 * a device result does.
 */
uint64_t sample_hash(uint64_t h, const void *buf, size_t n);

/**
 * sample_iteration_done() - print "iter @i @sum", fold @sum into the run's
 * total, checkpoint if --save-at asked for this iteration, then pause.
 */
void sample_iteration_done(struct sample *s, long i, uint64_t sum);

/**
 * sample_finish() - print "done <total>" and release the context.
 *
 * Return: 0, for main() to return.
 */
int sample_finish(struct sample *s);

#endif /* SAMPLES_CUDA_COMMON_H */
