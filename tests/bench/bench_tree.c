/* SPDX-License-Identifier: MIT */
/*
 * bench_tree.c - a job of several processes against one process of the same
 * size: a tree of PROCESSES processes of MIB MiB each (tree-subject under
 * selfckpt-run) and one process of PROCESSES x MIB MiB, each checkpointed by
 * SIGUSR2 and restored, RUNS times:
 *
 *   checkpoint  from the signal to DIR/latest naming the new image or set;
 *   pause       the longest gap any process of the job saw in its 1 ms ticks
 *               (how long the job was stopped);
 *   restart     from the spawn of selfckpt-restore to the last process of the
 *               job running again (the CLOCK_REALTIME stamp each writes).
 *
 * Medians, and the tree's over the single process's. Targets (informational):
 * checkpoint <= 1.1x, restart <= 1.2x, pause <= 2x. Asserts nothing: exit 0
 * unless a run fails.
 *   bench-tree [--processes N] [--mib M] [--runs R] [--dir D]
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/bench_data.h"

#define MAX_RUNS 50
#define WAIT_S 300.0

extern char **environ;

struct opts {
	int processes, mib, runs;
	const char *dir;
	char bin[PATH_MAX], subject[PATH_MAX];
};

struct result {
	double ckpt[MAX_RUNS], pause[MAX_RUNS], restart[MAX_RUNS];
};

static double clock_s(clockid_t clk)
{
	struct timespec t;

	clock_gettime(clk, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
	nanosleep(&(struct timespec){ ms / 1000, (long)(ms % 1000) * 1000000L }, NULL);
}

static int sh(const char *fmt, const char *a)
{
	char cmd[3 * PATH_MAX];

	snprintf(cmd, sizeof(cmd), fmt, a, a);
	return system(cmd);
}

/* How many files DIR/<prefix>.* there are, and the largest value among them. */
static int count(const char *dir, const char *prefix, double *max)
{
	char cmd[PATH_MAX + 128], line[64];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "cat %s/%s.* 2>/dev/null", dir, prefix);
	*max = 0;
	if (!(p = popen(cmd, "r")))
		return 0;
	while (fgets(line, sizeof(line), p)) {
		double v = atof(line);

		n++;
		*max = v > *max ? v : *max;
	}
	pclose(p);
	return n;
}

static int wait_files(const char *dir, const char *prefix, int n, double *max)
{
	double until = clock_s(CLOCK_MONOTONIC) + WAIT_S;

	while (count(dir, prefix, max) < n) {
		if (clock_s(CLOCK_MONOTONIC) > until) {
			fprintf(stderr, "bench-tree: no %d %s files in %s\n", n, prefix, dir);
			return -1;
		}
		sleep_ms(5);
	}
	return 0;
}

static pid_t spawn(char *const argv[])
{
	pid_t pid;

	return posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) ? -1 : pid;
}

/* One checkpoint and one restart of @procs processes of @mib MiB; figures into run @i. */
static int run_once(const struct opts *o, int procs, int mib, struct result *r, int i)
{
	char images[PATH_MAX], out[PATH_MAX], latest[PATH_MAX + 16], n_arg[16], mib_arg[16];
	char run_bin[PATH_MAX + 32], restore_bin[PATH_MAX + 32];
	pid_t job, restorer;
	double t0, ignore;
	int status;

	snprintf(images, sizeof(images), "%s/images", o->dir);
	snprintf(out, sizeof(out), "%s/out", o->dir);
	snprintf(latest, sizeof(latest), "%s/latest", images);
	snprintf(run_bin, sizeof(run_bin), "%s/selfckpt-run", o->bin);
	snprintf(restore_bin, sizeof(restore_bin), "%s/selfckpt-restore", o->bin);
	snprintf(n_arg, sizeof(n_arg), "%d", procs);
	snprintf(mib_arg, sizeof(mib_arg), "%d", mib);
	sh("rm -rf '%s/images' '%s/out'", o->dir);
	if (mkdir(images, 0700) < 0 || mkdir(out, 0700) < 0)
		return -1;
	job = spawn((char *[]){ run_bin, "--dir", images, "--", (char *)o->subject, n_arg,
				mib_arg, out, NULL });
	if (job < 0 || wait_files(out, "ready", procs, &ignore) < 0)
		return -1;
	t0 = clock_s(CLOCK_MONOTONIC);
	kill(job, SIGUSR2);
	while (access(latest, F_OK) != 0) {
		if (clock_s(CLOCK_MONOTONIC) - t0 > WAIT_S)
			return -1;
		usleep(200);
	}
	r->ckpt[i] = clock_s(CLOCK_MONOTONIC) - t0;
	sh("touch '%s/out/done'", o->dir);
	if (wait_files(out, "pause", procs, &r->pause[i]) < 0)
		return -1;
	waitpid(job, &status, 0);
	sleep_ms(1200); /* a restored process knows itself by a gap of more than 1 s */
	t0 = clock_s(CLOCK_REALTIME);
	restorer = spawn((char *[]){ restore_bin, latest, NULL });
	if (restorer < 0 || wait_files(out, "resumed", procs, &r->restart[i]) < 0)
		return -1;
	r->restart[i] -= t0;
	waitpid(restorer, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int measure(const struct opts *o, int procs, int mib, struct result *r, double med[3])
{
	for (int i = 0; i < o->runs; i++)
		if (run_once(o, procs, mib, r, i) < 0) {
			fprintf(stderr, "bench-tree: run %d of %d x %d MiB failed\n", i + 1, procs,
				mib);
			return -1;
		}
	med[0] = bench_median(r->ckpt, (unsigned)o->runs);
	med[1] = bench_median(r->pause, (unsigned)o->runs);
	med[2] = bench_median(r->restart, (unsigned)o->runs);
	return 0;
}

static void parse(struct opts *o, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "processes", required_argument, NULL, 'p' }, { "mib", required_argument, NULL, 'm' },
		{ "runs", required_argument, NULL, 'r' },      { "dir", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	char self[PATH_MAX];
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'p')
			o->processes = atoi(optarg);
		else if (c == 'm')
			o->mib = atoi(optarg);
		else if (c == 'r')
			o->runs = atoi(optarg);
		else if (c == 'd')
			o->dir = optarg;
		else
			exit(64);
	}
	if (o->processes < 2 || o->mib < 1 || o->runs < 1 || o->runs > MAX_RUNS) {
		fprintf(stderr, "bench-tree: --processes >= 2, --mib >= 1, --runs 1 to %d\n",
			MAX_RUNS);
		exit(64);
	}
	snprintf(self, sizeof(self), "%s", argv[0]);
	snprintf(o->subject, sizeof(o->subject), "%s/tree-subject", dirname(self));
	snprintf(o->bin, sizeof(o->bin), "%s/../bin", self);
}

int main(int argc, char **argv)
{
	struct opts o = { .processes = 8, .mib = 256, .runs = 3, .dir = NULL };
	static struct result tree, one;
	double t[3], s[3];
	char tmp[] = "/tmp/sc-bench-tree-XXXXXX";

	parse(&o, argc, argv);
	if (!o.dir && !(o.dir = mkdtemp(tmp)))
		return 1;
	printf("bench-tree: %d processes of %d MiB against one of %d MiB, %d runs, in %s\n",
	       o.processes, o.mib, o.processes * o.mib, o.runs, o.dir);
	if (measure(&o, o.processes, o.mib, &tree, t) < 0 ||
	    measure(&o, 1, o.processes * o.mib, &one, s) < 0)
		return 1;
	printf("%-22s %10s %10s %8s %8s\n", "median (s)", "tree", "one", "ratio", "target");
	printf("%-22s %10.3f %10.3f %8.2f %8s\n", "checkpoint", t[0], s[0], t[0] / s[0], "<=1.1");
	printf("%-22s %10.4f %10.4f %8.2f %8s\n", "pause of the job", t[1], s[1], t[1] / s[1],
	       "<=2");
	printf("%-22s %10.3f %10.3f %8.2f %8s\n", "restart", t[2], s[2], t[2] / s[2], "<=1.2");
	if (o.dir == tmp)
		sh("rm -rf '%s'", o.dir);
	return 0;
}
