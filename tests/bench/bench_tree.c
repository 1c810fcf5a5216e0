/* SPDX-License-Identifier: MIT */
/*
 * bench_tree.c - a job of several processes against one process of the same
 * size: a tree of PROCESSES processes of MIB MiB each (tree-subject under
 * selfckpt-run) and one process of PROCESSES x MIB MiB, each checkpointed by
 * SIGUSR2 and restored, RUNS times:
 *
 *   checkpoint  from the signal to DIR/latest naming the new image or set;
 *   CPU busy    the CPU time the whole machine spent in that span (/proc/stat),
 *               and its share of all the CPUs': it tells work done twice from
 *               CPUs left idle;
 *   pause       the longest gap any process of the job saw in its 1 ms ticks
 *               (how long the job was stopped);
 *   restart     from the spawn of selfckpt-restore to the last process of the
 *               job running again (the CLOCK_REALTIME stamp each writes).
 *
 * The tree and the single process take turns, run by run, so that a slow
 * spell of a shared machine weighs on both alike; the ratio is the median of
 * each pair's ratio. Targets (informational):
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
	char bin[PATH_MAX + 16], subject[PATH_MAX + 16];
};

enum figure { CKPT, PAUSE, RESTART, BUSY, FIGURES };

struct result {
	double v[FIGURES][MAX_RUNS];
	double all[MAX_RUNS]; /* the CPU seconds of all CPUs in the checkpoint's span */
};

static double clock_s(clockid_t clk)
{
	struct timespec t;

	clock_gettime(clk, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The CPU seconds the machine has spent busy and in all, since boot. */
static void cpu_seconds(double *busy, double *all)
{
	unsigned long long f[10] = { 0 };
	FILE *st = fopen("/proc/stat", "r");
	double ticks = (double)sysconf(_SC_CLK_TCK), sum = 0;

	if (!st || fscanf(st, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2],
			  &f[3], &f[4], &f[5], &f[6], &f[7]) != 8)
		f[0] = 0;
	if (st)
		fclose(st);
	for (int i = 0; i < 8; i++)
		sum += (double)f[i];
	*all = sum / ticks;
	*busy = (sum - (double)f[3] - (double)f[4]) / ticks; /* less idle and iowait */
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
	char run_bin[PATH_MAX + 64], restore_bin[PATH_MAX + 64];
	pid_t job, restorer;
	double t0, ignore, busy0, all0, busy1, all1;
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
	cpu_seconds(&busy0, &all0);
	t0 = clock_s(CLOCK_MONOTONIC);
	kill(job, SIGUSR2);
	while (access(latest, F_OK) != 0) {
		if (clock_s(CLOCK_MONOTONIC) - t0 > WAIT_S)
			return -1;
		usleep(200);
	}
	r->v[CKPT][i] = clock_s(CLOCK_MONOTONIC) - t0;
	cpu_seconds(&busy1, &all1);
	r->v[BUSY][i] = busy1 - busy0;
	r->all[i] = all1 - all0;
	sh("touch '%s/out/done'", o->dir);
	if (wait_files(out, "pause", procs, &r->v[PAUSE][i]) < 0)
		return -1;
	waitpid(job, &status, 0);
	sleep_ms(1200); /* a restored process knows itself by a gap of more than 1 s */
	t0 = clock_s(CLOCK_REALTIME);
	restorer = spawn((char *[]){ restore_bin, latest, NULL });
	if (restorer < 0 || wait_files(out, "resumed", procs, &r->v[RESTART][i]) < 0)
		return -1;
	r->v[RESTART][i] -= t0;
	waitpid(restorer, &status, 0);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* Run @i of the tree and of the single process, one after the other. */
static int measure_pair(const struct opts *o, struct result *tree, struct result *one, int i)
{
	if (run_once(o, o->processes, o->mib, tree, i) < 0) {
		fprintf(stderr, "bench-tree: run %d of %d x %d MiB failed\n", i + 1, o->processes,
			o->mib);
		return -1;
	}
	if (run_once(o, 1, o->processes * o->mib, one, i) < 0) {
		fprintf(stderr, "bench-tree: run %d of 1 x %d MiB failed\n", i + 1,
			o->processes * o->mib);
		return -1;
	}
	return 0;
}

static double median_of(const double *v, int n)
{
	double copy[MAX_RUNS];

	memcpy(copy, v, (size_t)n * sizeof(*v));
	return bench_median(copy, (unsigned)n);
}

static double median_ratio(const struct result *tree, const struct result *one, enum figure f,
			   int n)
{
	double ratio[MAX_RUNS];

	for (int i = 0; i < n; i++)
		ratio[i] = tree->v[f][i] / one->v[f][i];
	return bench_median(ratio, (unsigned)n);
}

static void print_row(const char *name, const struct result *tree, const struct result *one,
		      enum figure f, int n, const char *target)
{
	printf("%-22s %10.4f %10.4f %8.2f %8s\n", name, median_of(tree->v[f], n),
	       median_of(one->v[f], n), median_ratio(tree, one, f, n), target);
}

/* The share of all CPUs' time in the checkpoint's span that was busy, as a median. */
static double busy_share(const struct result *r, int n)
{
	double share[MAX_RUNS];

	for (int i = 0; i < n; i++)
		share[i] = r->all[i] > 0 ? r->v[BUSY][i] / r->all[i] : 0;
	return bench_median(share, (unsigned)n);
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
	char tmp[] = "/tmp/sc-bench-tree-XXXXXX";

	parse(&o, argc, argv);
	if (!o.dir && !(o.dir = mkdtemp(tmp)))
		return 1;
	printf("bench-tree: %d processes of %d MiB against one of %d MiB, %d runs, in %s\n",
	       o.processes, o.mib, o.processes * o.mib, o.runs, o.dir);
	for (int i = 0; i < o.runs; i++)
		if (measure_pair(&o, &tree, &one, i) < 0)
			return 1;
	printf("%-22s %10s %10s %8s %8s\n", "median (s)", "tree", "one", "ratio", "target");
	print_row("checkpoint", &tree, &one, CKPT, o.runs, "<=1.1");
	print_row("pause of the job", &tree, &one, PAUSE, o.runs, "<=2");
	print_row("restart", &tree, &one, RESTART, o.runs, "<=1.2");
	print_row("CPU busy in checkpoint", &tree, &one, BUSY, o.runs, "");
	printf("%-22s %9.0f%% %9.0f%%\n", "share of the CPUs busy", 100 * busy_share(&tree, o.runs),
	       100 * busy_share(&one, o.runs));
	if (o.dir == tmp)
		sh("rm -rf '%s'", o.dir);
	return 0;
}
