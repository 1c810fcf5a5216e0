/* SPDX-License-Identifier: MIT */
/*
 * churn - checkpoints taken while threads are created and exit all the time.
 *
 * Two spawner threads create and join short-lived threads in a loop, so every
 * checkpoint finds some thread being born and some thread exiting (a thread
 * that pthread_join() has returned for can still be listed by the kernel for
 * a moment, and never runs a signal handler). Meanwhile the main thread calls
 * selfckpt_save() SAVES times into DIR/churn.sckpt; each must succeed. Then
 * the spawners stop and the process is checkpointed (point 1); the restored
 * process does the same again, once more with point 2.
 */
#include <pthread.h>

#include "prog.h"

#define SAVES 30
#define SPAWNERS 2

static volatile int stop_spawning;
static long spawned[SPAWNERS];

static void *short_lived(void *arg)
{
	return arg;
}

static void *spawner(void *arg)
{
	long *count = arg;

	while (!__atomic_load_n(&stop_spawning, __ATOMIC_ACQUIRE)) {
		pthread_t t;

		if (pthread_create(&t, NULL, short_lived, NULL))
			prog_die("pthread_create failed");
		pthread_join(t, NULL);
		(*count)++;
	}
	return NULL;
}

/* SAVES checkpoints while threads come and go; returns how many succeeded. */
static int saves_while_churning(const struct prog *p, int round)
{
	pthread_t th[SPAWNERS];
	char path[PATH_MAX];
	int ok = 0;

	snprintf(path, sizeof(path), "%s/churn.sckpt", p->dir);
	stop_spawning = 0;
	for (int i = 0; i < SPAWNERS; i++)
		if (pthread_create(&th[i], NULL, spawner, &spawned[i]))
			prog_die("pthread_create failed");
	while (!spawned[0] || !spawned[SPAWNERS - 1])
		usleep(1000);
	for (int i = 0; i < SAVES; i++) {
		int r = p->image ? selfckpt_save(path) : SELFCKPT_SAVED;

		if (r != SELFCKPT_SAVED) {
			fprintf(stderr, "churn: round %d, save %d returned %d: %s\n", round, i, r,
				r < 0 ? selfckpt_last_error() : "restored from a scratch image");
			break;
		}
		ok++;
	}
	__atomic_store_n(&stop_spawning, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < SPAWNERS; i++)
		pthread_join(th[i], NULL);
	return ok;
}

int main(int argc, char **argv)
{
	struct prog p;
	int ok;

	prog_init(&p, argc, argv);
	ok = saves_while_churning(&p, 1);
	prog_check("saves while threads come and go", ok == SAVES, "%d of %d", ok, SAVES);

	prog_checkpoint(&p, 1);

	ok = saves_while_churning(&p, 2);
	prog_check("saves in the restored process", ok == SAVES, "%d of %d", ok, SAVES);

	prog_checkpoint(&p, 2);

	puts("done");
	return 0;
}
