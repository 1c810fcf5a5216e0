/* SPDX-License-Identifier: MIT */
/*
 * test_sock_defaults.c - the option values a new socket starts with, which
 * a restore leaves alone instead of setting them again.
 */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "core/sock_defaults.h"

Test(sock_defaults, a_new_sockets_own_value_is_the_default)
{
	int off = 0, on = 1, keepidle = 0;
	socklen_t len = sizeof(keepidle);
	int tcp = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert(sc_sock_option_is_default(AF_UNIX, SOCK_STREAM, 0, SOL_SOCKET, SO_PASSCRED,
					    &off, sizeof(off)));
	cr_assert(!sc_sock_option_is_default(AF_UNIX, SOCK_STREAM, 0, SOL_SOCKET, SO_PASSCRED,
					     &on, sizeof(on)));
	/* asked again: the answer comes from memory, and is the same */
	cr_assert(sc_sock_option_is_default(AF_UNIX, SOCK_STREAM, 0, SOL_SOCKET, SO_PASSCRED,
					    &off, sizeof(off)));
	/* a kind is its domain, type and protocol: a datagram socket is asked on its own */
	cr_assert(!sc_sock_option_is_default(AF_UNIX, SOCK_DGRAM, 0, SOL_SOCKET, SO_PASSCRED,
					     &on, sizeof(on)));
	cr_assert_geq(tcp, 0);
	cr_assert_eq(getsockopt(tcp, IPPROTO_TCP, TCP_KEEPIDLE, &keepidle, &len), 0);
	cr_assert(sc_sock_option_is_default(AF_INET, SOCK_STREAM, 0, IPPROTO_TCP, TCP_KEEPIDLE,
					    &keepidle, sizeof(keepidle)), "the host's own %d",
		  keepidle);
	keepidle++;
	cr_assert(!sc_sock_option_is_default(AF_INET, SOCK_STREAM, 0, IPPROTO_TCP, TCP_KEEPIDLE,
					     &keepidle, sizeof(keepidle)));
}

Test(sock_defaults, what_cannot_be_read_is_never_a_default)
{
	int zero = 0;

	/* TCP options on a unix socket: no such option, so it must be set (and fail loudly) */
	cr_assert(!sc_sock_option_is_default(AF_UNIX, SOCK_STREAM, 0, IPPROTO_TCP, TCP_NODELAY,
					     &zero, sizeof(zero)));
	/* the right value at the wrong length is not the default either */
	cr_assert(!sc_sock_option_is_default(AF_UNIX, SOCK_STREAM, 0, SOL_SOCKET, SO_PASSCRED,
					     &zero, 2));
	/* a kind that cannot be made */
	cr_assert(!sc_sock_option_is_default(AF_UNIX, 77, 0, SOL_SOCKET, SO_PASSCRED, &zero,
					     sizeof(zero)));
}
