/* SPDX-License-Identifier: MIT */
/*
 * proc_fds.h - walk the descriptors of a process (/proc/PID/fd) in raw code:
 * what a job's coordinator asks of its stopped processes (job_files_rt.c,
 * unix_flight_rt.c).
 */
#ifndef SC_PROC_FDS_H
#define SC_PROC_FDS_H

#include <stdint.h>

/* One descriptor: @name in the directory @dir (an open /proc/PID/fd), number @fd. */
typedef int (*sc_proc_fd_fn)(void *ctx, long dir, const char *name, int fd);

/**
 * sc_proc_fds_each() - @each for every descriptor of process @pid, until one
 * returns non-zero (raw). Return: 0 (also for a process gone), or that value.
 */
int sc_proc_fds_each(int32_t pid, sc_proc_fd_fn each, void *ctx);

#endif /* SC_PROC_FDS_H */
