/* SPDX-License-Identifier: MIT */
/*
 * interpose_sysv.c - semget() and msgget() as the program sees them while
 * the library is preloaded or linked as a shared library: the same, and the
 * library notes each id and whether the call made the object, which the
 * kernel does not tell afterwards (/proc/sysvipc has no creator's pid for
 * them). A checkpoint keeps the sets and queues the program made and refuses
 * the others (sysv_ipc.c). Where the key may name an existing object, a call
 * that may create it is tried first as IPC_EXCL: the answer says which it was.
 * Calls under way are counted, so that a checkpoint whose instant falls inside
 * one (the object made, not yet noted) is refused rather than miss it.
 *
 * Built into the shared library only, like interpose.c.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>

#include "core/sc_sysv.h"
#include "selfckpt_errors.h"

typedef int semget_fn(key_t, int, int);
typedef int msgget_fn(key_t, int);

static semget_fn *next_semget;
static msgget_fn *next_msgget;

__attribute__((constructor)) static void resolve(void)
{
	next_semget = (semget_fn *)dlsym(RTLD_NEXT, "semget");
	next_msgget = (msgget_fn *)dlsym(RTLD_NEXT, "msgget");
}

/* Would a call with @key and @flg make the object, or may it open an existing one? */
static bool may_open(key_t key, int flg)
{
	return key != IPC_PRIVATE && !((flg & IPC_CREAT) && (flg & IPC_EXCL));
}

/* The call the program made: semget()'s or msgget()'s, with semget()'s count. */
struct call {
	semget_fn *sem;
	msgget_fn *msg;
	int nsems;
};

static int get(const struct call *c, key_t key, int flg)
{
	return c->sem ? c->sem(key, c->nsems, flg) : c->msg(key, flg);
}

/* @c's call as the program asked for it, with the id and whether it made the object noted. */
static int noted_get(uint32_t kind, const struct call *c, key_t key, int flg)
{
	int id = -1, saved = errno;
	bool created = true;

	__atomic_add_fetch(&sc_sysv_calls, 1, __ATOMIC_ACQ_REL);
	if (may_open(key, flg) && (flg & IPC_CREAT)) {
		id = get(c, key, flg | IPC_EXCL);
		if (id < 0 && errno == EEXIST)
			errno = saved;
	}
	if (id < 0) { /* an object that was there already, or one of IPC_PRIVATE */
		id = get(c, key, flg);
		created = !may_open(key, flg);
	}
	if (id >= 0)
		sc_sysv_note(kind, id, (int32_t)key, created);
	saved = errno;
	__atomic_sub_fetch(&sc_sysv_calls, 1, __ATOMIC_ACQ_REL);
	errno = saved;
	return id;
}

SELFCKPT_API int semget(key_t key, int nsems, int flg)
{
	struct call c = { NULL, NULL, nsems };

	if (!next_semget)
		resolve();
	c.sem = next_semget;
	return noted_get(SC_SYSV_SEM, &c, key, flg);
}

SELFCKPT_API int msgget(key_t key, int flg)
{
	struct call c = { NULL, NULL, 0 };

	if (!next_msgget)
		resolve();
	c.msg = next_msgget;
	return noted_get(SC_SYSV_MSG, &c, key, flg);
}
