/* SPDX-License-Identifier: MIT */
/*
 * trip.h - the round trip of a program that knows nothing of selfckpt: run
 * under selfckpt-run, checkpointed by SIGUSR2 at a moment of the test's
 * choosing, killed with -9, restored (twice) from the same image; each
 * restore must print what an uninterrupted run prints. The programs print
 * at their end (standard output is a file, so fully buffered): a restored
 * run prints all of it. Used by tests/cli/test_instant.c and test_objects.c;
 * the processes come from the plain build (SELFCKPT_BUILD), also under SAN=1.
 */
#ifndef SC_TESTS_TRIP_H
#define SC_TESTS_TRIP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#define OUT_MAX 4096

struct trip {
	char dir[64];         /* the test's folder; the images go to DIR/ckpt */
	char latest[96];
	char err[OUT_MAX];    /* selfckpt-run's standard error */
};

/* BUILD/@rel into @buf (PATH_MAX bytes). */
const char *build_path(char *buf, const char *rel);
long ms_since(const struct timespec *t0);
/* All of @path into @buf (OUT_MAX bytes), NUL-terminated. */
void slurp(const char *path, char *buf);

/*
 * A command every process of a test starts under (tests/progs/sandbox with
 * its options, NULL-terminated), or none: the setting the test runs in.
 */
extern const char *setting[8];
/*
 * From now on every process of the test runs under Docker's default seccomp
 * profile with no_new_privs (tests/progs/sandbox); @sandbox (PATH_MAX bytes)
 * holds the sandbox's path, which setting[] points to.
 */
void trip_under_docker(char *sandbox);

/* Start @argv with standard output to @out and standard error to @err; stdin /dev/null. */
pid_t spawn(const char *const *argv, const char *out, const char *err);
int wait_status(pid_t pid);

/* A new folder for the test. */
void trip_init(struct trip *t);

/* trip_remove_at_exit() - @dir and all in it are removed as the test's process ends. */
void trip_remove_at_exit(const char *dir);
/* The program's own output, uninterrupted, into @ref. */
void reference(struct trip *t, const char *const *prog, char *ref);
/*
 * trip_init(), then tests/progs/@name with a new folder DIR/work (into @dir,
 * 128 bytes) as its argument, in @prog (3 entries; @prog_path holds its
 * path), and its reference output in @ref.
 */
void trip_prog_in_work(struct trip *t, const char *name, char *prog_path, char *dir,
		       const char **prog, char *ref);
/*
 * Run @prog under selfckpt-run, send SIGUSR2 after @delay_ms, and wait up to
 * @wait_ms for DIR/ckpt/latest; then kill -9. Returns whether an image came.
 */
bool checkpoint_at(struct trip *t, const char *const *prog, long delay_ms, long wait_ms);
/*
 * Restore DIR/ckpt/latest; its standard output into @got. With @again_ms,
 * checkpoint the restored process again by SIGUSR2 after that long, and
 * kill it once the new image is there. Returns the exit status.
 */
int restore_and(struct trip *t, char *got, long again_ms);
int restore(struct trip *t, char *got);
/* Checkpoint at @delay_ms, restore twice: each restore prints @ref. */
void round_trip(struct trip *t, const char *const *prog, const char *ref, long delay_ms);
/*
 * Checkpoint at @delay_ms, restore and checkpoint the restored process again
 * @again_ms later, then restore that image twice: each prints @ref.
 */
void round_trip_again(struct trip *t, const char *const *prog, const char *ref,
		      long delay_ms, long again_ms);

#endif /* SC_TESTS_TRIP_H */
