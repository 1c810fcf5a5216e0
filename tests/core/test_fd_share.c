/* SPDX-License-Identifier: MIT */
/*
 * Which descriptors share an open file description (core/fd_share_rt.c),
 * found the three ways the freeze has: marks (F_SETSIG) for long runs of one
 * file, kcmp() for short ones, and O_NONBLOCK flips where kcmp() is refused
 * and a run cannot be marked. Each case opens many descriptors of one file
 * or kind, dups some of them, and checks every pair in the records: dups
 * share, separate opens do not. The way each is found must leave the
 * descriptions as they were (their F_SETSIG number, their flags).
 *
 * Cases without kcmp() run in a child that refuses it by seccomp, as
 * Docker's default profile does; the child reports by exit status.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/sc_fds.h"
#include "format/sc_log.h"

#define OPENS 120 /* more than the 64 files above which /proc/locks is read */
#define DUPS 12   /* every tenth open is dup'd once */
#define MAX_FDS (OPENS + DUPS)

static char path[64];

static void setup(void)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/sc_share_%d", (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
}

static void teardown(void)
{
	unlink(path);
}

TestSuite(fd_share, .init = setup, .fini = teardown, .timeout = 60);

/* A run: @opens descriptors of one kind, every tenth one dup'd; which of them is which. */
struct run {
	int fd[MAX_FDS];
	int first[MAX_FDS]; /* the descriptor it was dup'd from, or itself */
	int n;
};

/* Open the run's descriptors with @make (-1 on failure); 0, or -1. */
static int open_run(struct run *r, int opens, int (*make)(void))
{
	r->n = 0;
	for (int i = 0; i < opens; i++) {
		int fd = make();

		if (fd < 0)
			return -1;
		r->fd[r->n] = fd;
		r->first[r->n++] = fd;
		if (i % 10 == 3) {
			r->fd[r->n] = dup(fd);
			if (r->fd[r->n] < 0)
				return -1;
			r->first[r->n++] = fd;
		}
	}
	return 0;
}

static int open_file(void)
{
	return open(path, O_RDWR);
}

static int open_inotify(void)
{
	return inotify_init1(0);
}

static int open_timer(void)
{
	return timerfd_create(CLOCK_MONOTONIC, 0);
}

static const struct sc_fd *record_of(const struct sc_fd *fds, size_t n, int fd)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i].fd == fd)
			return &fds[i];
	return NULL;
}

/*
 * Every pair of the run: shares a description in the records exactly where
 * one was dup'd from the other. Return: 0, or -1 after a message.
 */
static int check_pairs(const struct run *r, const struct sc_fd *fds, size_t n)
{
	for (int i = 0; i < r->n; i++) {
		const struct sc_fd *a = record_of(fds, n, r->fd[i]);

		if (!a) {
			fprintf(stderr, "descriptor %d has no record\n", r->fd[i]);
			return -1;
		}
		for (int j = 0; j < i; j++) {
			const struct sc_fd *b = record_of(fds, n, r->fd[j]);
			int want = r->first[i] == r->first[j];
			int got = a->share_id && a->share_id == b->share_id;

			if (want != got) {
				fprintf(stderr, "descriptors %d and %d: %s in the records, %s in fact\n",
					r->fd[j], r->fd[i], got ? "shared" : "apart",
					want ? "shared" : "apart");
				return -1;
			}
		}
	}
	return 0;
}

/* Capture the process's descriptors and check the run's pairs; 0, or -1 after a message. */
static int capture_and_check(const struct run *r)
{
	struct sc_fd *fds;
	size_t n;
	int err;

	if (sc_fds_capture(&fds, &n, NULL, 0)) {
		fprintf(stderr, "capture failed: %s\n", selfckpt_last_error());
		return -1;
	}
	err = check_pairs(r, fds, n);
	sc_fds_free(fds, n);
	return err;
}

/* Refuse kcmp() with EPERM from now on, as Docker's default seccomp profile does. */
static int refuse_kcmp(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_kcmp, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -1;
	return syscall(SYS_kcmp, getpid(), getpid(), 0, 0, 0) < 0 && errno == EPERM ? 0 : -1;
}

/* Run @fn in a child, with kcmp() refused where @no_kcmp; assert it exits 0. */
static void in_child(int (*fn)(void), int no_kcmp)
{
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (no_kcmp && refuse_kcmp()) {
			fprintf(stderr, "cannot refuse kcmp() by seccomp\n");
			_exit(2);
		}
		_exit(fn() ? 1 : 0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the child failed (status 0x%x); see its message above", status);
}

/* A long run of one file: told apart by marks. */
static int file_run(void)
{
	struct run r;

	return open_run(&r, OPENS, open_file) ? -1 : capture_and_check(&r);
}

/* A long run of timerfds (all on the one anon inode): told apart by marks. */
static int timer_run(void)
{
	struct run r;

	return open_run(&r, OPENS, open_timer) ? -1 : capture_and_check(&r);
}

/*
 * A run of inotify instances (long enough to be marked, short of the 128 a
 * user may have) with O_ASYNC on one description, whose F_SETSIG number is
 * the signal it sends: never marked, so kcmp() or flips decide. (A regular
 * file does not keep O_ASYNC.)
 */
static int async_run(void)
{
	struct run r;

	if (open_run(&r, 20, open_inotify) ||
	    fcntl(r.fd[5], F_SETFL, fcntl(r.fd[5], F_GETFL) | O_ASYNC) < 0)
		return -1;
	if (capture_and_check(&r))
		return -1;
	if (!(fcntl(r.fd[5], F_GETFL) & O_ASYNC) || (fcntl(r.fd[6], F_GETFL) & O_ASYNC)) {
		fprintf(stderr, "the flags of the descriptions changed\n");
		return -1;
	}
	return 0;
}

/* A long run whose descriptions have F_SETSIG numbers of their own: they keep them. */
static int numbers_run(void)
{
	struct run r;

	if (open_run(&r, OPENS, open_timer))
		return -1;
	for (int i = 0; i < r.n; i += 7)
		if (fcntl(r.fd[i], F_SETSIG, 1 + i % 64) < 0)
			return -1;
	if (capture_and_check(&r))
		return -1;
	for (int i = 0; i < r.n; i++) {
		int want = 0;

		for (int j = 0; j < r.n; j += 7)
			if (r.first[j] == r.first[i])
				want = 1 + j % 64; /* the last number set on its description */
		if (fcntl(r.fd[i], F_GETSIG) != want) {
			fprintf(stderr, "descriptor %d: F_GETSIG %d after the capture, %d before\n",
				r.fd[i], fcntl(r.fd[i], F_GETSIG), want);
			return -1;
		}
	}
	return 0;
}

Test(fd_share, long_run_of_one_file_shares_only_with_its_dups)
{
	in_child(file_run, 0);
}

Test(fd_share, long_run_of_timerfds_shares_only_with_their_dups)
{
	in_child(timer_run, 0);
}

Test(fd_share, run_with_o_async_shares_only_with_its_dups_and_keeps_its_flags)
{
	in_child(async_run, 0);
}

Test(fd_share, descriptions_keep_their_f_setsig_numbers)
{
	in_child(numbers_run, 0);
}

Test(fd_share, long_runs_share_only_with_their_dups_where_kcmp_is_refused)
{
	in_child(file_run, 1);
	in_child(timer_run, 1);
}

Test(fd_share, run_with_o_async_shares_only_with_its_dups_where_kcmp_is_refused)
{
	in_child(async_run, 1);
}
