/* SPDX-License-Identifier: MIT */
/*
 * roundtrip_harness.h - what the process round-trip tests share
 * (tests/core/test_roundtrip.c, tests/core/test_roundtrip_more.c): running the
 * programs of tests/progs/ (see tests/progs/prog.h for their protocol), the
 * zdtm-style round trip, and the checks of a refused restore.
 *
 * The harness declares the Criterion suite `roundtrip` (setup: a fresh work
 * directory with ref/ and ck/ in it; teardown: its removal), so every test of
 * that suite, in whichever file, has a work directory.
 *
 * SELFCKPT_BUILD names the build directory (make test sets it);
 * SELFCKPT_TEST_KEEP=1 keeps the work directories in /tmp.
 */
#ifndef SC_ROUNDTRIP_HARNESS_H
#define SC_ROUNDTRIP_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

#define RUN_TIMEOUT_S 60
#define MAX_ARGS 16

/* One finished process: both outputs, NUL-terminated, and its wait status. */
struct run {
	char *out, *err;
	size_t out_len, err_len;
	int status;
	bool timed_out;
};

/* The work directory of the current test. */
extern char base[64];

/*
 * The working directory of the processes run() starts, NULL (the default, set
 * again before every test) for the test runner's own.
 */
extern const char *run_cwd;

/** tool() - the path of the selfckpt tool @name in the build; fails the test if missing. */
const char *tool(const char *name);
/** restorer() - the path of selfckpt-restore in the build; fails the test if missing. */
const char *restorer(void);

/** prog_path() - the path of test program @name in the build; fails the test if missing. */
const char *prog_path(const char *name);

/** in_base() - a path under the work directory, in one of four rotating buffers. */
const char *in_base(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/**
 * run() - run @argv with /dev/null as input, capturing both outputs into @r
 * (free with run_free()). After RUN_TIMEOUT_S its process group is killed.
 */
void run(const char *const argv[], struct run *r);
void run_free(struct run *r);

/** expect_exit() - @r exited with status @code (the test fails otherwise). */
void expect_exit(const struct run *r, int code, const char *what);

/** expect_killed() - @r killed itself with SIGKILL after a checkpoint (or 128 + 9). */
void expect_killed(const struct run *r, const char *what);

/** read_file() - the whole file at @path, NUL-terminated; free() it. */
char *read_file(const char *path, size_t *len);

/** expect_same_snapshot() - DIR/snap.before@point equals DIR/snap.after@point. */
void expect_same_snapshot(const char *dir, int point, const char *what);

/** touch() - create @path if missing. */
void touch(const char *path);

/** prog_argv() - the command line of program @name: IMAGE|- DIR @extra (NULL-ended). */
void prog_argv(const char *argv[], const char *name, const char *image, const char *dir,
	       const char *const extra[]);

/*
 * roundtrip_ids() - the whole round trip of program @name with @extra
 * arguments, images in base/ck/img.sckpt and base/ck/img.sckpt.2 (see
 * tests/core/test_roundtrip.c). @new_ids: restore with --new-ids.
 */
void roundtrip_ids(const char *name, const char *const extra[], bool new_ids);
void roundtrip(const char *name, const char *const extra[]);

/*
 * expect_refused() - restoring @image must exit with @code and a message naming
 * @named, and nothing of the program may have run (no output, no
 * base/ck/snap.after1).
 */
void expect_refused(const char *image, int code, const char *named, const char *what);

#endif /* SC_ROUNDTRIP_HARNESS_H */
