/* SPDX-License-Identifier: MIT */
/*
 * cuda_api_harness.h - what the tests of the Driver API as libselfckpt
 * serves it share: the software device, a context, the test kernels, and a
 * child that saves and is restored.
 */
#ifndef SC_TESTS_CUDA_API_HARNESS_H
#define SC_TESTS_CUDA_API_HARNESS_H

#include <cuda.h>
#include <stddef.h>

#define OK(call) cr_assert_eq((call), CUDA_SUCCESS, "%s", #call)

/* The path of the test kernels' library (tests/progs/libcuda-kernels.so). */
extern char sc_test_kernels[4096];

/** sc_test_use_software_device() - a suite's .init: the software device and the GPU proxy. */
void sc_test_use_software_device(void);

/** sc_test_start() - cuInit, and device 0's primary context made current. */
CUcontext sc_test_start(void);

/**
 * sc_test_load() - the test kernels' module (kernels step and chase, global
 * counter); @step is its kernel step.
 */
CUmodule sc_test_load(CUfunction *step);

/**
 * sc_test_exit_of_child() - @fn(@image) in a child of the test (criterion's
 * timer thread blocks every signal, so its own process cannot be
 * checkpointed); its exit status.
 */
int sc_test_exit_of_child(int (*fn)(const char *), const char *image);

/**
 * sc_test_exit_in_dir() - sc_test_exit_of_child(@fn, @dir/img.sckpt) in a
 * new directory @dir (a mkdtemp() template); the image's path goes to @image
 * (@n bytes). The caller removes @dir (sc_test_remove_dir()).
 */
int sc_test_exit_in_dir(int (*fn)(const char *), char *dir, char *image, size_t n);

/**
 * sc_test_exit_after_restore() - @fn(image) in a child of the test, which
 * must save and exit 0, then selfckpt-restore of the image: the restored
 * process's exit status. Its output is in @dir/out; the caller removes @dir
 * (sc_test_remove_dir()) once it has asserted what it wants.
 */
int sc_test_exit_after_restore(int (*fn)(const char *), char *dir);

void sc_test_remove_dir(const char *dir);

#endif /* SC_TESTS_CUDA_API_HARNESS_H */
