/* SPDX-License-Identifier: MIT */
/*
 * test_fd_rights.c - descriptors in flight (SCM_RIGHTS): what the capture
 * records of a queue whose messages carry descriptors, that the program
 * never holds the descriptors the peeks installed, the record's encoding and
 * its checks (R-TYP-14, R-TYP-23).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fd_socket.h"
#include "core/fd_state.h"
#include "core/sc_fds.h"
#include "core/sc_locks.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"

static char img_path[64];

static void setup(void)
{
	snprintf(img_path, sizeof(img_path), "/tmp/sc-rights-%d.sckpt", (int)getpid());
	sc_log_set_level(SC_LOG_NONE);
}

static void teardown(void)
{
	unlink(img_path);
}

TestSuite(fd_rights, .init = setup, .fini = teardown);

static void send_fds(int sk, const char *data, const int *fds, int n)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} ctl = { 0 };
	struct iovec iov = { (void *)data, strlen(data) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			      .msg_controllen = CMSG_SPACE((size_t)n * sizeof(int)) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, (size_t)n * sizeof(int));
	cr_assert_eq(sendmsg(sk, &msg, 0), (ssize_t)strlen(data));
}

static const struct sc_fd *record_of(const struct sc_fd *fds, size_t n, int fd)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i].fd == fd)
			return &fds[i];
	return NULL;
}

/* The items of @f with tag @tag, in order, into @out (at most @max). */
static size_t items_of(const struct sc_fd *f, uint32_t tag, struct sc_state_item *out, size_t max)
{
	struct sc_state_item it;
	size_t pos = 0, k = 0;

	while (sc_state_next(f, &pos, &it) > 0)
		if (it.tag == tag && k < max)
			out[k++] = it;
	return k;
}

/* The numbers open in this process now, as a bitmap of the first 1024. */
static void open_now(uint8_t *open_fds)
{
	for (int fd = 0; fd < 1024; fd++)
		open_fds[fd] = fcntl(fd, F_GETFD) >= 0;
}

/*
 * A stream write and a datagram, each with data and descriptors: a pipe end
 * only the message holds is recorded as a record of its own in flight, a
 * file the program holds as the program's number; the stream keeps the
 * boundary after the write that carried them; the queue is left whole and
 * the program is given no descriptor.
 */
Test(fd_rights, capture_records_the_descriptors_a_message_carries)
{
	uint8_t before[1024], after[1024];
	struct sc_state_item q[4], r[4];
	struct sc_fd *fds;
	size_t n, n_q;
	int st[2], dg[2], p[2], file = open("/dev/null", O_RDWR), lone, sent[2];
	const struct sc_fd *f, *inflight = NULL;
	char buf[16];

	cr_assert_geq(file, 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, st), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_DGRAM, 0, dg), 0);
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(write(p[1], "xy", 2), 2);
	lone = p[0];
	sent[0] = lone;
	sent[1] = file;
	cr_assert_eq(send(st[0], "head", 4, 0), 4);
	send_fds(st[0], "abc", sent, 2);
	cr_assert_eq(send(st[0], "tail", 4, 0), 4);
	send_fds(dg[0], "d", &file, 1);
	close(lone);
	open_now(before);
	cr_assert_eq(sc_fds_capture(&fds, &n, NULL, 0), 0, "%s", selfckpt_last_error());
	open_now(after);
	cr_assert(!memcmp(before, after, sizeof(before)), "a descriptor in flight leaked");

	f = record_of(fds, n, st[1]);
	cr_assert(f && f->kind == SC_FD_UNIX);
	/* a peek cannot tell where the write that carried them began (R-TYP-23) */
	n_q = items_of(f, SC_SOCK_QUEUE, q, 4);
	cr_assert_eq(n_q, 2, "%zu items", n_q);
	cr_assert(q[0].len == 7 && !memcmp(q[0].value, "headabc", 7));
	cr_assert(q[1].len == 4 && !memcmp(q[1].value, "tail", 4), "the bytes after it apart");
	cr_assert_eq(items_of(f, SC_SOCK_RIGHTS, r, 4), 1);
	cr_assert_eq(r[0].len, 8);
	cr_assert_eq((int)sc_get_le32(r[0].value + 4), file, "the program's own number");
	inflight = record_of(fds, n, (int)sc_get_le32(r[0].value));
	cr_assert_not_null(inflight);
	cr_assert_eq(inflight->kind, SC_FD_PIPE_R);
	cr_assert_eq(inflight->fd_flags, SC_FD_IN_FLIGHT);
	cr_assert(inflight->data_len == 2 && !memcmp(inflight->data, "xy", 2), "its bytes");

	f = record_of(fds, n, dg[1]);
	cr_assert(f && items_of(f, SC_SOCK_RIGHTS, r, 4) == 1 && r[0].len == 4);
	cr_assert_eq((int)sc_get_le32(r[0].value), file);
	cr_assert_eq(sc_fd_sockets_check(fds, n), 0, "%s", selfckpt_last_error());
	sc_fds_free(fds, n);

	/* the queue is as it was */
	cr_assert_eq(recv(st[1], buf, sizeof(buf), 0), 7);
	cr_assert_eq(recv(st[1], buf, sizeof(buf), 0), 4);
	cr_assert_eq(recv(dg[1], buf, sizeof(buf), 0), 1);
	for (int fd = 0; fd < 1024; fd++)
		if (!before[fd] && fcntl(fd, F_GETFD) >= 0)
			close(fd); /* the descriptors the receives gave */
	close(st[0]), close(st[1]), close(dg[0]), close(dg[1]), close(p[1]), close(file);
}

/*
 * A unix socket record with the items @items (@len bytes), at 507, and a
 * pipe end in flight at 509: numbers the test runner does not use.
 */
static void socket_records(struct sc_fd *fds, const void *items, size_t len)
{
	memset(fds, 0, 2 * sizeof(*fds));
	fds[0] = (struct sc_fd){ .fd = 507, .kind = SC_FD_UNIX, .path = strdup("socket:[1]") };
	fds[0].data = malloc(len);
	memcpy(fds[0].data, items, len);
	fds[0].data_len = len;
	fds[1] = (struct sc_fd){ .fd = 509, .kind = SC_FD_PIPE_R, .fd_flags = SC_FD_IN_FLIGHT,
				 .path = strdup("pipe:[2]"), .pipe_id = 2 };
}

static void write_records(const struct sc_fd *fds, size_t n)
{
	struct sc_writer *w;
	int fd = open(img_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_eq(sc_writer_new(&w, fd, img_path, NULL), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(sc_fd_write_record(w, &fds[i]), 0, "%s", selfckpt_last_error());
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	close(fd);
}

/* Read the first record of the image into @f: the reader's answer. */
static int read_first(struct sc_fd *f)
{
	struct sc_read_opts ro = { .threads = 1 };
	struct sc_reader *r;
	struct sc_record rec;
	int err;

	cr_assert_eq(sc_reader_open(&r, img_path, &ro), 0, "%s", selfckpt_last_error());
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	err = sc_fd_read_record(r, &rec, f);
	sc_reader_free(r);
	return err;
}

/* type: stream unix socket; then the cases' items */
static const uint8_t type_item[] = { 1, 0, 0, 0x80, 16, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
				     0, 0, 0, 0, 0, 0, 0, 0 };

static size_t with(uint8_t *buf, const void *tail, size_t len)
{
	memcpy(buf, type_item, sizeof(type_item));
	memcpy(buf + sizeof(type_item), tail, len);
	return sizeof(type_item) + len;
}

/* R-TYP-23: item 0x8000000a and fd flag bit 9 read back as written. */
Test(fd_rights, rights_and_the_in_flight_flag_read_back)
{
	static const uint8_t tail[] = { 10, 0, 0, 0x80, 8, 0, 0, 0, 0xfd, 1, 0, 0, 0xfb, 1, 0, 0,
					5, 0, 0, 0x80, 2, 0, 0, 0, 'h', 'i' };
	uint8_t buf[64];
	struct sc_fd fds[2], f;
	struct sc_state_item r[2];

	socket_records(fds, buf, with(buf, tail, sizeof(tail)));
	write_records(fds, 2);
	cr_assert_eq(read_first(&f), 0, "%s", selfckpt_last_error());
	cr_assert(f.data_len == fds[0].data_len && !memcmp(f.data, fds[0].data, f.data_len));
	cr_assert_eq(items_of(&f, SC_SOCK_RIGHTS, r, 2), 1);
	cr_assert(sc_get_le32(r[0].value) == 509 && sc_get_le32(r[0].value + 4) == 507);
	free(f.path);
	free(f.data);
	{
		struct sc_read_opts ro = { .threads = 1 };
		struct sc_reader *rd;
		struct sc_record rec;

		cr_assert_eq(sc_reader_open(&rd, img_path, &ro), 0);
		cr_assert_eq(sc_reader_next(rd, &rec), 1);
		cr_assert_eq(sc_reader_next(rd, &rec), 1);
		cr_assert_eq(sc_fd_read_record(rd, &rec, &f), 0, "%s", selfckpt_last_error());
		cr_assert_eq(f.fd_flags, SC_FD_IN_FLIGHT);
		free(f.path);
		free(f.data);
		sc_reader_free(rd);
	}
	cr_assert_eq(sc_fd_sockets_check(fds, 2), 0, "%s", selfckpt_last_error());
	for (int i = 0; i < 2; i++) {
		free(fds[i].path);
		free(fds[i].data);
	}
}

/* R-TYP-14, R-TYP-23: a reader refuses a malformed item 0x8000000a, named. */
Test(fd_rights, malformed_rights_are_refused)
{
	static const struct {
		uint8_t tail[32];
		size_t len;
		int err;
	} cases[] = {
		/* 6 bytes: not whole numbers */
		{ { 10, 0, 0, 0x80, 6, 0, 0, 0, 9, 0, 0, 0, 7, 0, 5, 0, 0, 0x80, 0, 0, 0, 0 }, 22,
		  -SELFCKPT_ELENGTH },
		/* no number at all */
		{ { 10, 0, 0, 0x80, 0, 0, 0, 0, 5, 0, 0, 0x80, 0, 0, 0, 0 }, 16, -SELFCKPT_ELENGTH },
		/* not followed by the message that carries them */
		{ { 10, 0, 0, 0x80, 4, 0, 0, 0, 9, 0, 0, 0 }, 12, -SELFCKPT_ELENGTH },
		/* followed by another item first */
		{ { 10, 0, 0, 0x80, 4, 0, 0, 0, 9, 0, 0, 0, 7, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0,
		    2, 0, 0, 0 }, 28, -SELFCKPT_ELENGTH },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t buf[64];
		struct sc_fd fds[2], f;

		socket_records(fds, buf, with(buf, cases[i].tail, cases[i].len));
		write_records(fds, 1);
		cr_assert_eq(read_first(&f), cases[i].err, "case %zu: %s", i, selfckpt_last_error());
		cr_assert(strstr(selfckpt_last_error(), "fd record 0"), "%s", selfckpt_last_error());
		cr_assert_null(f.path);
		for (int k = 0; k < 2; k++) {
			free(fds[k].path);
			free(fds[k].data);
		}
	}
}

/*
 * R-TYP-23: a restore refuses, before it makes anything, a message that
 * carries a number the image does not hold, and a descriptor in flight at
 * a standard number.
 */
Test(fd_rights, restore_refuses_rights_it_cannot_honour)
{
	static const uint8_t tail[] = { 10, 0, 0, 0x80, 4, 0, 0, 0, 11, 0, 0, 0,
					5, 0, 0, 0x80, 1, 0, 0, 0, 'h' };
	uint8_t buf[64];
	struct sc_fd fds[2];

	socket_records(fds, buf, with(buf, tail, sizeof(tail)));
	cr_assert_eq(sc_fd_sockets_check(fds, 2), -SELFCKPT_EUSAGE);
	cr_assert(strstr(selfckpt_last_error(), "carries descriptor 11, which the image does "
			 "not hold"), "%s", selfckpt_last_error());
	cr_assert_eq(sc_fds_restore(fds, 2), -SELFCKPT_EUSAGE);
	cr_assert(fcntl(507, F_GETFD) < 0 && fcntl(509, F_GETFD) < 0, "something was made");
	fds[0].kind = SC_FD_REGULAR; /* leaves only the record in flight to judge */
	fds[1].fd = 2;
	cr_assert_eq(sc_fd_sockets_check(fds, 2), -SELFCKPT_EUSAGE);
	cr_assert(strstr(selfckpt_last_error(), "in flight and has a standard number"), "%s",
		  selfckpt_last_error());
	for (int k = 0; k < 2; k++) {
		free(fds[k].path);
		free(fds[k].data);
	}
}

/*
 * A lock held through a description that only a message holds refuses the
 * image, named: the restore closes that description before it takes locks.
 */
Test(fd_rights, a_lock_held_only_in_flight_refuses)
{
	char path[64];
	struct sc_fds_frozen z;
	struct sc_lock *locks = NULL;
	size_t n = 0;
	int sk[2], fd;

	snprintf(path, sizeof(path), "/tmp/sc-rights-lock-%d", (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(flock(fd, LOCK_EX), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_DGRAM, 0, sk), 0);
	send_fds(sk[0], "l", &fd, 1);
	close(fd);
	cr_assert_eq(sc_fds_prepare(&z, 0), 0, "%s", selfckpt_last_error());
	sc_fds_freeze(&z);
	cr_assert_eq(z.err, 0);
	cr_assert_eq(sc_locks_collect(&z, getpid(), &locks, &n), -SELFCKPT_EHOST);
	cr_assert(strstr(selfckpt_last_error(), "only a message queued on a socket holds"), "%s",
		  selfckpt_last_error());
	sc_fds_freeze_drop(&z);
	sc_fds_frozen_free(&z);
	unlink(path);
	close(sk[0]);
	close(sk[1]);
}
