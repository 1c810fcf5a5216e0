/* SPDX-License-Identifier: MIT */
/*
 * sc_write_watch.h - which pages of a range the program has written since it
 * was last asked (write_watch.c): managed memory sends the pages the CPU wrote
 * to the GPU.
 */
#ifndef SC_WRITE_WATCH_H
#define SC_WRITE_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * sc_uffd_open_async() - a userfaultfd descriptor with asynchronous write
 * protection (Linux 6.7) and @features besides (SC_UFFD_FEATURE_*), usable
 * without privilege (UFFD_USER_MODE_ONLY).
 * Return: the descriptor, or -errno with *@what naming the step that failed.
 */
int sc_uffd_open_async(uint64_t features, const char **what);

/** sc_ww_init() - open the write watch once. Return: 0, or -errno (logged) where it cannot be had. */
int sc_ww_init(void);
/** sc_ww_reopen() - at a restart: a new watch (the image holds none). */
int sc_ww_reopen(void);
/** sc_ww_watch() - watch @len bytes at @p (page-aligned): every page counts as unwritten. */
int sc_ww_watch(void *p, size_t len);
/** sc_ww_unwatch() - stop watching @len bytes at @p. */
void sc_ww_unwatch(void *p, size_t len);
/** sc_ww_protect() - set (@on) or lift the watch's protection of a range, reporting nothing. */
int sc_ww_protect(void *p, size_t len, bool on);
/* one run of written pages, [start, end) */
typedef int (*sc_ww_fn)(void *arg, uint64_t start, uint64_t end);
/**
 * sc_ww_take() - call @fn for each run of pages of [@p, @p + @len) written
 * since the last call, and count them as unwritten again. Return: 0, -errno,
 * or the first non-zero value @fn returned.
 */
int sc_ww_take(void *p, size_t len, sc_ww_fn fn, void *arg);

#endif /* SC_WRITE_WATCH_H */
