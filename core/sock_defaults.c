/* SPDX-License-Identifier: MIT */
/*
 * sock_defaults.c - the option values a new socket starts with.
 *
 * Stage contract: the restorer (ordinary libc, one thread). A restored
 * socket gets back every option its record holds, and most hold what a new
 * socket has anyway: 3,300 sockets with 13 options each cost 43,000
 * setsockopt() calls, 20 ms, to change nothing. The defaults of a kind of
 * socket are read once from a socket made for that (in the restorer's own
 * network namespace and with its sysctls, as the restored sockets are), so
 * an option is set only where its recorded value differs.
 */
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/sock_defaults.h"

#define KINDS_MAX 8
#define OPTIONS_MAX 32
#define VALUE_MAX 16

struct known {
	int level, name;
	bool readable;
	unsigned len;
	unsigned char value[VALUE_MAX];
};

static struct kind {
	int domain, type, protocol, n;
	struct known opts[OPTIONS_MAX];
} kinds[KINDS_MAX];
static int n_kinds;

static struct kind *kind_of(int domain, int type, int protocol)
{
	for (int i = 0; i < n_kinds; i++)
		if (kinds[i].domain == domain && kinds[i].type == type &&
		    kinds[i].protocol == protocol)
			return &kinds[i];
	if (n_kinds == KINDS_MAX)
		return NULL;
	kinds[n_kinds] = (struct kind){ .domain = domain, .type = type, .protocol = protocol };
	return &kinds[n_kinds++];
}

/* Option (@level, @name) of a new socket of kind @k, read now; NULL: no room. */
static const struct known *learn(struct kind *k, int level, int name)
{
	struct known *o;
	socklen_t len = VALUE_MAX;
	int fd;

	if (k->n == OPTIONS_MAX)
		return NULL;
	o = &k->opts[k->n++];
	*o = (struct known){ .level = level, .name = name };
	fd = socket(k->domain, k->type | SOCK_CLOEXEC, k->protocol);
	if (fd < 0)
		return o;
	o->readable = getsockopt(fd, level, name, o->value, &len) == 0 && len <= VALUE_MAX;
	o->len = len;
	close(fd);
	return o;
}

bool sc_sock_option_is_default(int domain, int type, int protocol, int level, int name,
			       const void *value, size_t len)
{
	struct kind *k = kind_of(domain, type, protocol);
	const struct known *o = NULL;

	if (!k)
		return false;
	for (int i = 0; i < k->n && !o; i++)
		if (k->opts[i].level == level && k->opts[i].name == name)
			o = &k->opts[i];
	if (!o)
		o = learn(k, level, name);
	return o && o->readable && o->len == len && !memcmp(o->value, value, len);
}
