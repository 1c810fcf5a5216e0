/* SPDX-License-Identifier: MIT */
/*
 * sc_gpu_check.h - before a CUDA program is restored: can this machine's GPUs
 * run the modules it loaded (gpu_check.c)? selfckpt-restore asks the restore
 * engine to call it while a refusal still changes nothing.
 */
#ifndef SC_GPU_CHECK_H
#define SC_GPU_CHECK_H

/*
 * sc_gpu_check() - for an image with a cuda-log record, 0 when every GPU it
 * used is here and can run each of its modules; -SELFCKPT_EHOST (reported)
 * otherwise. 0 for an image without one.
 */
int sc_gpu_check(const char *path, unsigned threads);
/* The same on the image open at @fd (not owned). */
int sc_gpu_check_fd(int fd, const char *path, unsigned threads);

#endif /* SC_GPU_CHECK_H */
