/* SPDX-License-Identifier: MIT */
/*
 * fd_state_check.c - the item list of an fd record checked as a whole when
 * the record is read (R-TYP-14), before a restore changes anything: every
 * item within the payload, every known tag with the length its kind gives
 * it, no unknown tag that must be understood, and the items a kind cannot
 * do without.
 */
#include <stdbool.h>

#include "core/fd_objects.h"
#include "core/fd_socket.h"
#include "core/fd_state.h"
#include "format/sc_log.h"

#define ANY_LEN 0xffffffffu

struct item_rule {
	int kind;
	uint32_t tag;
	uint32_t min, max; /* lengths allowed */
	bool needed;       /* the kind cannot do without it */
};

static const struct item_rule rules[] = {
	{ SC_FD_EVENTFD, SC_EVENTFD_COUNT, 8, 8, true },
	{ SC_FD_EVENTFD, SC_EVENTFD_SEMAPHORE, 8, 8, false },
	{ SC_FD_TIMERFD, SC_TIMERFD_CLOCK, 8, 8, true },
	{ SC_FD_TIMERFD, SC_TIMERFD_FLAGS, 8, 8, true },
	{ SC_FD_TIMERFD, SC_TIMERFD_VALUE, 16, 16, true },
	{ SC_FD_TIMERFD, SC_TIMERFD_INTERVAL, 16, 16, true },
	{ SC_FD_TIMERFD, SC_TIMERFD_TICKS, 8, 8, true },
	{ SC_FD_SIGNALFD, SC_SIGNALFD_MASK, 8, 8, true },
	{ SC_FD_INOTIFY, SC_INOTIFY_WATCH, 25, 24 + 4096, false },
	{ SC_FD_EPOLL, SC_EPOLL_TARGET, 24, 24, false },
	{ SC_FD_EPOLL, SC_EPOLL_VIA, 28, 28, false },
	{ SC_FD_PIDFD, SC_PIDFD_PID, 8, 8, true },
	{ SC_FD_UNIX, SC_SOCK_TYPE, 16, 16, true },
	{ SC_FD_UNIX, SC_SOCK_NAME, 2, SC_SOCK_ADDR_MAX, false },
	{ SC_FD_UNIX, SC_SOCK_PEER, 16, 16, false },
	{ SC_FD_UNIX, SC_SOCK_PEER_NAME, 2, SC_SOCK_ADDR_MAX, false },
	{ SC_FD_UNIX, SC_SOCK_QUEUE, 0, ANY_LEN, false },
	{ SC_FD_UNIX, SC_SOCK_BACKLOG, 4, 4, false },
	{ SC_FD_UNIX, SC_SOCK_BUFFERS, 8, 8, false },
	{ SC_FD_UNIX, SC_SOCK_OPTION, 12, 16, false },
	{ SC_FD_UNIX, SC_SOCK_FILTER, 12, 4 + 8 * 4096, false },
	{ SC_FD_UNIX, SC_SOCK_RIGHTS, 4, 4 * SC_RIGHTS_MAX, false },
	{ SC_FD_INET, SC_SOCK_TYPE, 16, 16, true },
	{ SC_FD_INET, SC_SOCK_NAME, 2, SC_SOCK_ADDR_MAX, false },
	{ SC_FD_INET, SC_SOCK_PEER_NAME, 2, SC_SOCK_ADDR_MAX, false },
	{ SC_FD_INET, SC_SOCK_BACKLOG, 4, 4, false },
	{ SC_FD_INET, SC_SOCK_BUFFERS, 8, 8, false },
	{ SC_FD_INET, SC_SOCK_OPTION, 12, 16, false },
	{ SC_FD_INET, SC_SOCK_FILTER, 12, 4 + 8 * 4096, false },
};

#define N_RULES (sizeof(rules) / sizeof(rules[0]))

static const struct item_rule *rule_of(int kind, uint32_t tag, size_t *index)
{
	for (size_t i = 0; i < N_RULES; i++)
		if (rules[i].kind == kind && rules[i].tag == tag) {
			*index = i;
			return &rules[i];
		}
	return NULL;
}

static int check_items(const struct sc_fd *f, bool *seen)
{
	struct sc_state_item it;
	size_t pos = 0, i;
	int r;

	while ((r = sc_state_next(f, &pos, &it)) > 0) {
		const struct item_rule *rule = rule_of(f->kind, it.tag, &i);

		if (!rule) {
			r = sc_state_unknown(f, &it);
			if (r)
				return r;
			continue;
		}
		if (it.len < rule->min || it.len > rule->max)
			return sc_err(SELFCKPT_ELENGTH, "descriptor %d (%s): state item 0x%x has %u "
				      "bytes: expected %u to %u", f->fd, f->path, it.tag, it.len,
				      rule->min, rule->max);
		seen[i] = true;
	}
	return r;
}

/*
 * A unix socket's rights (R-TYP-23): whole u32 numbers, each list followed
 * by the message that carries it.
 */
static int check_rights(const struct sc_fd *f)
{
	struct sc_state_item it;
	size_t pos = 0;
	bool want_queue = false;
	int r;

	while ((r = sc_state_next(f, &pos, &it)) > 0) {
		if (want_queue && it.tag != SC_SOCK_QUEUE)
			break;
		want_queue = it.tag == SC_SOCK_RIGHTS;
		if (want_queue && it.len % 4)
			return sc_err(SELFCKPT_ELENGTH, "descriptor %d (%s): its descriptors in "
				      "flight take %u bytes: expected a multiple of 4", f->fd,
				      f->path, it.len);
	}
	if (r < 0)
		return r;
	if (want_queue)
		return sc_err(SELFCKPT_ELENGTH, "descriptor %d (%s): its descriptors in flight "
			      "(item 0x%x) are not followed by the message that carries them",
			      f->fd, f->path, SC_SOCK_RIGHTS);
	return 0;
}

int sc_fd_state_check(const struct sc_fd *f)
{
	bool seen[N_RULES] = { false };
	int err;

	if (f->kind < SC_FD_EVENTFD)
		return 0; /* the payload is saved contents, not items */
	if (f->share_id && !f->data_len)
		return 0; /* a copy (dup) of a description: its state is the first one's */
	err = check_items(f, seen);
	if (!err && f->kind == SC_FD_UNIX)
		err = check_rights(f);
	if (err)
		return err;
	for (size_t i = 0; i < N_RULES; i++)
		if (rules[i].kind == (int)f->kind && rules[i].needed && !seen[i])
			return sc_err(SELFCKPT_ELENGTH, "descriptor %d (%s): its state lacks item "
				      "0x%x, which its kind needs", f->fd, f->path, rules[i].tag);
	return 0;
}
