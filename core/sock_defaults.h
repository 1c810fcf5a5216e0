/* SPDX-License-Identifier: MIT */
/*
 * sock_defaults.h - the value each socket option has on a new socket of a
 * kind, read once per kind and option at restore.
 */
#ifndef SC_SOCK_DEFAULTS_H
#define SC_SOCK_DEFAULTS_H

#include <stdbool.h>
#include <stddef.h>

/**
 * sc_sock_option_is_default() - does a new socket of (@domain, @type,
 * @protocol) already have option (@level, @name) at the @len bytes of
 * @value? Then setting it again changes nothing and can be left out. The
 * first question about a kind and option makes a socket of that kind to read
 * it (and closes it); later ones are answered from memory. False when the
 * option cannot be read or the kinds seen are too many to remember.
 */
bool sc_sock_option_is_default(int domain, int type, int protocol, int level, int name,
			       const void *value, size_t len);

#endif /* SC_SOCK_DEFAULTS_H */
