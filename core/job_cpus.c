/* SPDX-License-Identifier: MIT */
/*
 * job_cpus.c - the CPUs the members of a job share as they write their images.
 *
 * Every member of a job writes its own image once the instant is taken. All
 * at once, eight members on two CPUs compress at about half the speed one
 * compressor has alone (each thrashes the others' caches, and each member's
 * snapshot copier runs beside it): the set took a third longer than one
 * process of the same size. So members take turns, as many writing at once
 * as there are CPUs, each with its share of them. A member that died while
 * writing holds no turn: a turn counts only while its process lives.
 */

#include <sched.h>
#include <signal.h>

#include "core/job.h"

#define TURN_LOOK_MS 50 /* a waiting member looks again at least this often */

/* The CPUs this process may run on (its affinity: a cgroup or Slurm's binding). */
static int usable_cpus(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 1;
	n = CPU_COUNT(&set);
	return n > 0 ? n : 1;
}

/* The members with an image to write (not zombies, not gone). */
static int writers_in(const struct sc_job_area *a)
{
	int n = 0;

	for (int i = 0; i < a->n; i++)
		n += a->slot[i].pid > 0 && a->slot[i].state != SC_MEMBER_ZOMBIE;
	return n;
}

unsigned sc_job_threads(void)
{
	const struct sc_job_member *jm = sc_job_noted();
	int cpus = usable_cpus(), at_once;

	if (!jm || writers_in(jm->area) < 2)
		return 0;
	at_once = writers_in(jm->area) < cpus ? writers_in(jm->area) : cpus;
	return (unsigned)(cpus / at_once > 1 ? cpus / at_once : 1);
}

/* Members writing now, whose processes live. */
static int writing_now(const struct sc_job_area *a, int self)
{
	int n = 0;

	for (int i = 0; i < a->n; i++)
		n += i != self && __atomic_load_n(&a->slot[i].writing, __ATOMIC_ACQUIRE) &&
		     a->slot[i].pid > 0 && kill(a->slot[i].pid, 0) == 0;
	return n;
}

void sc_job_write_turn(void)
{
	const struct sc_job_member *jm = sc_job_noted();
	int cpus = usable_cpus();

	if (!jm)
		return;
	for (;;) {
		int32_t seen = __atomic_load_n(&jm->area->turns, __ATOMIC_ACQUIRE);

		/* two may take the last turn at once: one writer more, for a moment, is no harm */
		if (writing_now(jm->area, jm->index) < cpus)
			break;
		sc_job_wait(&jm->area->turns, seen, TURN_LOOK_MS);
	}
	__atomic_store_n(&jm->area->slot[jm->index].writing, 1, __ATOMIC_RELEASE);
}

void sc_job_write_done(void)
{
	const struct sc_job_member *jm = sc_job_noted();

	if (!jm)
		return;
	__atomic_store_n(&jm->area->slot[jm->index].writing, 0, __ATOMIC_RELEASE);
	sc_job_wake(&jm->area->turns);
}
