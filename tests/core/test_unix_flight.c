/* SPDX-License-Identifier: MIT */
/*
 * Connections queued at a listening unix socket, not accepted yet
 * (core/unix_flight_rt.c): what the checkpoint waits for, and what it may
 * take as it is (a client of the process that sent nothing: the restore
 * connects it again).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/unix_flight.h"

static struct sockaddr_un addr = { .sun_family = AF_UNIX };

/* A listening socket of this process: its descriptor. */
static int listener(void)
{
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(addr.sun_path, sizeof(addr.sun_path), "/tmp/sc-flight-%d.sock", (int)getpid());
	unlink(addr.sun_path);
	cr_assert_geq(l, 0);
	cr_assert_eq(bind(l, (struct sockaddr *)&addr, sizeof(addr)), 0);
	cr_assert_eq(listen(l, 4), 0);
	return l;
}

static int client(void)
{
	int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_eq(connect(c, (struct sockaddr *)&addr, sizeof(addr)), 0);
	return c;
}

static int in_flight(struct sc_unix_flight *f)
{
	int32_t self = getpid();

	return sc_unix_in_flight(&self, 1, f);
}

Test(unix_flight, a_listener_with_nothing_queued_is_no_concern)
{
	struct sc_unix_flight f;
	int l = listener();

	cr_expect_eq(in_flight(&f), 0);
	cr_expect_eq(f.count, 0);
	close(l);
	unlink(addr.sun_path);
}

Test(unix_flight, a_queued_client_of_the_process_that_sent_nothing_is_no_concern)
{
	struct sc_unix_flight f;
	int l = listener(), c = client();

	cr_expect_eq(in_flight(&f), 0);
	cr_expect_eq(f.count, 0);
	close(c);
	close(l);
	unlink(addr.sun_path);
}

Test(unix_flight, a_queued_connection_with_data_sent_is_named)
{
	struct sc_unix_flight f;
	int l = listener(), c = client();

	cr_assert_eq(write(c, "request", 7), 7);
	cr_expect_eq(in_flight(&f), 1);
	cr_expect_eq(f.server, getpid());
	cr_expect_eq(f.count, 1);
	close(c);
	close(l);
	unlink(addr.sun_path);
}

Test(unix_flight, a_queued_connection_whose_client_closed_is_named)
{
	struct sc_unix_flight f;
	int l = listener(), c = client();

	close(c); /* what it sent, or its end of file, waits in the queue: no client to connect again */
	cr_expect_eq(in_flight(&f), 1);
	cr_expect_eq(f.count, 1);
	close(l);
	unlink(addr.sun_path);
}
