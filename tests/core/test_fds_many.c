/* SPDX-License-Identifier: MIT */
/*
 * A table of more than 1,024 descriptors: the freeze shares the listing and
 * the fdinfo reads among helper threads (fds_workers_rt.c) and the records
 * are made by several threads (fds.c), where the machine has two processors
 * or more. The records must be what one thread makes: in the order of the
 * numbers, each with its own state, and a descriptor that cannot come back
 * refuses the capture with a message that names it, whichever thread met it.
 *
 * Each case runs in a child, which raises its limit of descriptors; it
 * reports by exit status.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/fd_objects.h"
#include "core/sc_fds.h"
#include "format/sc_log.h"

#define EVENTS 1200

TestSuite(fds_many, .timeout = 60);

/* @n eventfds, the k-th counting k + 1, into @ev; 0, or -1 after a message. */
static int open_events(int *ev, int n)
{
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	for (int k = 0; k < n; k++)
		if ((ev[k] = eventfd((unsigned)k + 1, EFD_NONBLOCK)) < 0) {
			perror("eventfd");
			return -1;
		}
	return 0;
}

/* The count of the eventfd made again from record @f (at 5,000 or above, not its number). */
static long long count_of(const struct sc_fd *f)
{
	uint64_t v = 0;
	int fd = sc_fd_object_restore(f, 5000);

	if (fd < 0 || read(fd, &v, sizeof(v)) != sizeof(v))
		v = 0;
	if (fd >= 0)
		close(fd);
	return (long long)v;
}

static int records_in_order_with_their_counts(void)
{
	static int ev[EVENTS];
	struct sc_fd *fds;
	size_t n;
	int bad = 0, k = 0;

	if (open_events(ev, EVENTS) || sc_fds_capture(&fds, &n, NULL, 0)) {
		fprintf(stderr, "capture: %s\n", selfckpt_last_error());
		return -1;
	}
	for (size_t i = 1; i < n; i++)
		if (fds[i].fd <= fds[i - 1].fd && !bad++)
			fprintf(stderr, "record %zu is descriptor %d, after %d\n", i, fds[i].fd,
				fds[i - 1].fd);
	for (size_t i = 0; i < n && k < EVENTS; i++) {
		if (fds[i].fd != ev[k])
			continue;
		if (fds[i].kind != SC_FD_EVENTFD || (k % 7 == 0 && count_of(&fds[i]) != k + 1)) {
			if (!bad++)
				fprintf(stderr, "descriptor %d: kind %u, count %lld: expected an eventfd "
					"counting %d\n", fds[i].fd, fds[i].kind, count_of(&fds[i]), k + 1);
		}
		k++;
	}
	if (k != EVENTS && !bad++)
		fprintf(stderr, "%d of the %d eventfds have a record\n", k, EVENTS);
	sc_fds_free(fds, n);
	return bad ? -1 : 0;
}

static int refused_descriptor_is_named(void)
{
	static int ev[EVENTS];
	struct sc_fd *fds;
	size_t n;
	char want[64];
	int pty;

	if (open_events(ev, EVENTS / 2))
		return -1;
	pty = open("/dev/ptmx", O_RDWR | O_NOCTTY);
	if (pty < 0 || open_events(ev + EVENTS / 2, EVENTS / 2)) {
		perror("/dev/ptmx");
		return -1;
	}
	sc_log_set_level(SC_LOG_NONE);
	if (sc_fds_capture(&fds, &n, NULL, 0) == 0) {
		fprintf(stderr, "the capture went through a pseudo-terminal's master side\n");
		sc_fds_free(fds, n);
		return -1;
	}
	snprintf(want, sizeof(want), "descriptor %d is the master side", pty);
	if (!strstr(selfckpt_last_error(), want)) {
		fprintf(stderr, "the message does not say '%s': %s\n", want, selfckpt_last_error());
		return -1;
	}
	return 0;
}

static void in_child(int (*fn)(void))
{
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(fn() ? 1 : 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the child failed (status 0x%x); see its message above", status);
}

Test(fds_many, records_are_in_the_order_of_the_numbers_with_their_own_state)
{
	in_child(records_in_order_with_their_counts);
}

Test(fds_many, a_descriptor_that_cannot_come_back_is_named_whichever_thread_met_it)
{
	in_child(refused_descriptor_is_named);
}
