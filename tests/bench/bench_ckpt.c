/* SPDX-License-Identifier: MIT */
/*
 * bench_ckpt.c - checkpoint and restart of a whole process, against what the
 * file system alone costs.
 *
 * For each kind of data (heap-like, float, random) and each size, ckpt-subject
 * fills that much memory, maps 512 MiB more that it never touches, and times
 * selfckpt_save() itself (it prints the time and the longest pause its ticker
 * thread saw); then it kills itself. This program then times:
 *
 *   restart    from just before it spawns `selfckpt-restore IMAGE` to the
 *              CLOCK_REALTIME stamp the restored process prints first thing;
 *   read-back  read() of the whole image into a buffer, as cat does, right
 *              after the restore read it (page cache, as the restore saw it);
 *              with --cold, the image is dropped from the page cache before
 *              the restore and again before the read-back, so that both read
 *              it from the device, as a restart on another node does;
 *   floor      plain pwrite() of as many bytes as the subject touched, in
 *              64 MiB pieces, one slice per online CPU, to a fresh file in the
 *              same directory; with a final fsync() (the checkpoint syncs its
 *              image before the rename) and without.
 *
 * Medians of the runs. Targets (informational): checkpoint <= 1.1x the synced
 * floor for float and random, <= 0.5x for heap-like with an image <= 0.2 of the
 * raw size; restart <= 1.2x the read-back; untouched memory costs nothing,
 * shown by the random case at the first size again with 4 GiB more untouched.
 *
 * It asserts nothing: the exit status is 0 unless a checkpoint or a restore
 * fails or the restored data does not check.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/bench_data.h"

#define PIECE (64ull << 20) /* bytes per write() or read() */
#define DEFAULT_MIB_1 1024u
#define DEFAULT_MIB_2 4096u
#define DEFAULT_RUNS 5u
#define MAX_RUNS 100u
#define MAX_THREADS 256
#define UNTOUCHED_MIB 512u        /* in every run */
#define EXTRA_UNTOUCHED_MIB 4096u /* on top of it, in the untouched check */
#define TIMEOUT_MS (900 * 1000)   /* one subject or restore, from spawn to exit */

/* Targets, informational only. */
#define TARGET_CKPT_DENSE 1.1  /* float and random: checkpoint / synced floor */
#define TARGET_CKPT_HEAP 0.5   /* heap-like: checkpoint / synced floor */
#define TARGET_HEAP_IMAGE 0.2  /* heap-like: image / raw */
#define TARGET_RESTART 1.2     /* restart / read-back */
#define TARGET_UNTOUCHED 1.05  /* time with 4 GiB more untouched / without */

extern char **environ;

struct bench_opts {
	uint64_t sizes[2]; /* touched bytes */
	unsigned n_sizes, runs;
	const char *dir;
	bool spin; /* the subject's ticker spins instead of sleeping */
	bool cold; /* restore and read-back find the image on the device, not cached */
	char subject[PATH_MAX], restore[PATH_MAX];
};

struct kind {
	const char *name;
	double ckpt_target;  /* checkpoint / synced floor */
	double image_target; /* image / raw; 0: none */
};

static const struct kind kinds[] = {
	{ "heap-like", TARGET_CKPT_HEAP, TARGET_HEAP_IMAGE },
	{ "float", TARGET_CKPT_DENSE, 0 },
	{ "random", TARGET_CKPT_DENSE, 0 },
};

enum metric {
	M_CKPT, M_PAUSE, M_IMAGE, M_RESTART, M_READBACK, M_FLOOR, M_FLOOR_SYNC,
	M_MAIN_CPU, M_ALL_CPU, /* CPU time of the saving thread and of the subject during the save */
	M_PAUSE_AT,            /* when the longest pause began, from the start of the save */
	M_N
};

struct row {
	const struct kind *kind;
	uint64_t size, untouched; /* bytes */
	double med[M_N];          /* seconds, or bytes for M_IMAGE */
};

/* What one measurement needs besides the options. */
struct job {
	const struct bench_opts *o;
	const struct kind *kind;
	uint64_t size, untouched;
	uint8_t *buf; /* pre-faulted: read-back destination and floor source */
	uint64_t buf_size;
};

/* Temporary files, removed at exit and on SIGINT/SIGTERM. */
static char tmp_dir[4096], image_path[4200], floor_path[4200];
static volatile pid_t child_pgid;

static void remove_tmp(void)
{
	DIR *d;
	struct dirent *e;

	if (!tmp_dir[0])
		return;
	d = opendir(tmp_dir); /* also the temporary image of a save that was cut short */
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' && dirfd(d) >= 0)
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	rmdir(tmp_dir);
}

static void on_signal(int sig)
{
	if (child_pgid > 0)
		kill(-child_pgid, SIGKILL);
	unlink(image_path); /* unlink, rmdir and kill are async-signal-safe */
	unlink(floor_path);
	rmdir(tmp_dir);
	signal(sig, SIG_DFL);
	raise(sig);
}

static int64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static double now(void)
{
	return (double)clock_ns(CLOCK_MONOTONIC) * 1e-9;
}

/* ---- child processes ---- */

static int read_output(int fd, char *out, size_t cap)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t n = 0;

	for (;;) {
		int r = poll(&p, 1, TIMEOUT_MS);
		ssize_t k;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -ETIMEDOUT;
		k = read(fd, out + n, cap - 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
		if (n == cap - 1)
			break;
	}
	out[n] = '\0';
	return 0;
}

/*
 * Spawn @argv in a process group of its own with its standard output into
 * @out, and wait for it. posix_spawn() (clone with CLONE_VM) copies none of
 * this process's page tables, which would add to the restart time.
 * @start_ns: CLOCK_REALTIME right before the spawn.
 */
static int run_child(char *const argv[], char *out, size_t cap, int *status, int64_t *start_ns)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int p[2], err;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&at, 0);
	*start_ns = clock_ns(CLOCK_REALTIME);
	err = -posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(p[1]);
	if (err < 0) {
		close(p[0]);
		return err;
	}
	child_pgid = pid;
	err = read_output(p[0], out, cap);
	close(p[0]);
	if (err < 0)
		kill(-pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	child_pgid = 0;
	return err;
}

static void describe_status(char *s, size_t n, int status)
{
	if (WIFSIGNALED(status))
		snprintf(s, n, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(s, n, "exit status %d", WEXITSTATUS(status));
}

/* The subject checkpoints itself and dies by SIGKILL; it reports the time and the pause. */
static int run_subject(const struct job *j, double *m)
{
	char size[32], untouched[32], out[4096], st[64];
	char *argv[] = { (char *)j->o->subject, (char *)j->kind->name, size, image_path,
			 untouched, j->o->spin ? "spin" : "sleep", NULL };
	int status = 0, err;
	int64_t t0;

	snprintf(size, sizeof(size), "%llu", (unsigned long long)(j->size >> 20));
	snprintf(untouched, sizeof(untouched), "%llu", (unsigned long long)(j->untouched >> 20));
	unlink(image_path);
	err = run_child(argv, out, sizeof(out), &status, &t0);
	describe_status(st, sizeof(st), status);
	if (err < 0 || !WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL ||
	    sscanf(out, "saved %lf %lf %*f %*f %lf %lf %lf", &m[M_CKPT], &m[M_PAUSE],
		   &m[M_MAIN_CPU], &m[M_ALL_CPU], &m[M_PAUSE_AT]) != 5) {
		fprintf(stderr, "bench-ckpt: the checkpoint of %s %llu MiB failed (%s, %s): "
				"expected 'saved' and SIGKILL, found '%s'\n",
			j->kind->name, (unsigned long long)(j->size >> 20),
			err < 0 ? strerror(-err) : "ran", st, out);
		return -EIO;
	}
	return 0;
}

/* From the spawn of selfckpt-restore to the first thing the restored process does. */
static int run_restore(const struct job *j, double *secs)
{
	char *argv[] = { (char *)j->o->restore, image_path, NULL };
	char out[4096], st[64];
	long long stamp = 0;
	int status = 0, err;
	int64_t t0;

	err = run_child(argv, out, sizeof(out), &status, &t0);
	describe_status(st, sizeof(st), status);
	if (err < 0 || !WIFEXITED(status) || WEXITSTATUS(status) ||
	    sscanf(out, "restored %lld", &stamp) != 1 || !strstr(out, "\ncheck ok\n")) {
		fprintf(stderr, "bench-ckpt: the restore of %s %llu MiB failed (%s, %s): "
				"expected 'restored', 'check ok' and exit status 0, found '%s'\n",
			j->kind->name, (unsigned long long)(j->size >> 20),
			err < 0 ? strerror(-err) : "ran", st, out);
		return -EIO;
	}
	*secs = (double)(stamp - t0) * 1e-9;
	return 0;
}

/* ---- the file system alone ---- */

/* Drop the image's pages from the page cache (they are clean: the save synced them). */
static int drop_cached(void)
{
	int fd = open(image_path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = fdatasync(fd) < 0 ? -errno : -posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	if (err < 0)
		fprintf(stderr, "bench-ckpt: cannot drop '%s' from the page cache: %s\n",
			image_path, strerror(-err));
	return err;
}

/* cat: the whole image through one buffer, 64 MiB at a time. */
static int time_readback(const struct job *j, double *secs)
{
	uint64_t off = 0;
	double t0 = now();
	int fd = open(image_path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	for (;;) {
		uint64_t at = off % j->buf_size;
		ssize_t k = read(fd, j->buf + at, PIECE);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int err = k < 0 ? -errno : 0;

			close(fd);
			*secs = now() - t0;
			return err;
		}
		off += (uint64_t)k;
	}
}

struct slice {
	int fd;
	const uint8_t *data;
	uint64_t from, to;
	int err;
};

static void *write_slice(void *arg)
{
	struct slice *s = arg;

	for (uint64_t off = s->from; off < s->to;) {
		uint64_t n = s->to - off < PIECE ? s->to - off : PIECE;
		ssize_t k = pwrite(s->fd, s->data + off, n, (off_t)off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			s->err = -errno;
			break;
		}
		off += (uint64_t)k;
	}
	return NULL;
}

static long floor_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
}

/* The floor: j->size bytes from j->buf, one slice per online CPU, to a fresh file. */
static int time_floor(const struct job *j, bool sync, double *secs)
{
	struct slice s[MAX_THREADS];
	pthread_t th[MAX_THREADS];
	bool started[MAX_THREADS];
	long n = floor_threads();
	uint64_t per = (j->size / (uint64_t)n + 4095) & ~4095ull;
	double t0;
	int fd, err = 0;

	unlink(floor_path);
	t0 = now();
	fd = open(floor_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	for (long i = 0; i < n; i++) {
		uint64_t from = per * (uint64_t)i < j->size ? per * (uint64_t)i : j->size;

		s[i] = (struct slice){ fd, j->buf, from, from + per < j->size ? from + per : j->size };
		started[i] = !pthread_create(&th[i], NULL, write_slice, &s[i]);
		if (!started[i])
			write_slice(&s[i]); /* no thread: this one writes it */
	}
	for (long i = 0; i < n; i++) {
		if (started[i])
			pthread_join(th[i], NULL);
		if (s[i].err && !err)
			err = s[i].err;
	}
	if (!err && sync && fsync(fd) < 0)
		err = -errno;
	close(fd);
	*secs = now() - t0;
	unlink(floor_path);
	return err;
}

/* ---- repetition and statistics ---- */

/* One run: checkpoint, restore, read the image back, then the two floors. */
static int run_once(const struct job *j, double *m)
{
	struct stat st;
	int err = run_subject(j, m);

	if (err < 0)
		return err;
	if (stat(image_path, &st) < 0) {
		err = -errno;
		fprintf(stderr, "bench-ckpt: cannot stat '%s': %s\n", image_path, strerror(-err));
		return err;
	}
	m[M_IMAGE] = (double)st.st_size;
	if (j->o->cold && (err = drop_cached()) < 0)
		return err;
	err = run_restore(j, &m[M_RESTART]);
	if (!err && j->o->cold)
		err = drop_cached();
	if (!err)
		err = time_readback(j, &m[M_READBACK]);
	unlink(image_path);
	if (!err)
		err = time_floor(j, false, &m[M_FLOOR]);
	if (!err)
		err = time_floor(j, true, &m[M_FLOOR_SYNC]);
	if (err < 0 && err != -EIO)
		fprintf(stderr, "bench-ckpt: reading or writing in '%s' failed: %s\n", tmp_dir,
			strerror(-err));
	return err;
}

static int bench_case(const struct job *j, struct row *row)
{
	double v[M_N][MAX_RUNS], m[M_N];
	unsigned n = j->o->runs;

	for (unsigned i = 0; i < n; i++) {
		fprintf(stderr, "%s %llu MiB (+%llu MiB untouched) run %u/%u\n", j->kind->name,
			(unsigned long long)(j->size >> 20), (unsigned long long)(j->untouched >> 20),
			i + 1, n);
		if (run_once(j, m) < 0)
			return -1;
		fprintf(stderr, "  ckpt %.3f s (cpu: saving thread %.3f s, all %.3f s), "
				"pause %.1f ms at +%.1f ms, image %.1f MiB, restart %.3f s, "
				"read-back %.3f s, floor %.3f s (fsync %.3f s)\n",
			m[M_CKPT], m[M_MAIN_CPU], m[M_ALL_CPU], m[M_PAUSE] * 1e3,
			m[M_PAUSE_AT] * 1e3,
			m[M_IMAGE] / (1 << 20), m[M_RESTART], m[M_READBACK], m[M_FLOOR],
			m[M_FLOOR_SYNC]);
		for (int k = 0; k < M_N; k++)
			v[k][i] = m[k];
	}
	*row = (struct row){ .kind = j->kind, .size = j->size, .untouched = j->untouched };
	for (int k = 0; k < M_N; k++)
		row->med[k] = bench_median(v[k], n);
	return 0;
}

/* ---- report ---- */

static const char *mark(bool applies, bool ok)
{
	return !applies ? "" : ok ? "PASS" : "MISS";
}

static void print_row(const struct row *r)
{
	double ckpt_ratio = r->med[M_CKPT] / r->med[M_FLOOR_SYNC];
	double image_ratio = r->med[M_IMAGE] / (double)r->size;
	double restart_ratio = r->med[M_RESTART] / r->med[M_READBACK];

	printf("%-9s %6llu %6llu  %7.3f %7.3f %7.3f %6.2f %-4s %8.1f  %9.1f %6.3f %-4s"
	       "  %7.3f %7.3f %6.2f %-4s\n",
	       r->kind->name, (unsigned long long)(r->size >> 20),
	       (unsigned long long)(r->untouched >> 20), r->med[M_CKPT], r->med[M_FLOOR_SYNC],
	       r->med[M_FLOOR], ckpt_ratio, mark(true, ckpt_ratio <= r->kind->ckpt_target),
	       r->med[M_PAUSE] * 1e3, r->med[M_IMAGE] / (1 << 20), image_ratio,
	       mark(r->kind->image_target > 0, image_ratio <= r->kind->image_target),
	       r->med[M_RESTART], r->med[M_READBACK], restart_ratio,
	       mark(true, restart_ratio <= TARGET_RESTART));
}

static void print_table(const struct row *rows, size_t n)
{
	printf("\n%-9s %6s %6s  %7s %7s %7s %6s %-4s %8s  %9s %6s %-4s  %7s %7s %6s\n", "data",
	       "MiB", "untch", "ckpt s", "floor s", "nosync", "c/flr", "", "pause ms",
	       "image MiB", "im/raw", "", "rstrt s", "read s", "r/read");
	for (size_t i = 0; i < n; i++)
		print_row(&rows[i]);
	printf("\ntargets (informational): ckpt/floor <= %.1f for float and random, <= %.1f for "
	       "heap-like; heap-like image <= %.1f of raw; restart/read-back <= %.1f\n",
	       TARGET_CKPT_DENSE, TARGET_CKPT_HEAP, TARGET_HEAP_IMAGE, TARGET_RESTART);
	printf("medians; floor = pwrite() of the touched bytes on %ld threads then fsync() "
	       "(nosync: without); c/flr = ckpt over floor; untch = MiB mapped, never touched\n",
	       floor_threads());
	printf("\nwhere the checkpoint's time goes (medians, seconds)\n%-9s %6s %6s  %7s %9s "
	       "%9s %9s\n", "data", "MiB", "untch", "ckpt", "save thr", "all thr", "fsync");
	for (size_t i = 0; i < n; i++)
		printf("%-9s %6llu %6llu  %7.3f %9.3f %9.3f %9.3f\n", rows[i].kind->name,
		       (unsigned long long)(rows[i].size >> 20),
		       (unsigned long long)(rows[i].untouched >> 20), rows[i].med[M_CKPT],
		       rows[i].med[M_MAIN_CPU], rows[i].med[M_ALL_CPU],
		       rows[i].med[M_FLOOR_SYNC] - rows[i].med[M_FLOOR]);
	printf("save thr, all thr: CPU time of the thread in selfckpt_save() and of the whole "
	       "subject during it;\nfsync: what the final fsync() adds to the floor (synced "
	       "minus unsynced), an estimate of the checkpoint's own\n");
}

/* The same case with 4 GiB more untouched: time and size must not move. */
static void print_untouched(const struct row *base, const struct row *more)
{
	double t = more->med[M_CKPT] / base->med[M_CKPT];
	double r = more->med[M_RESTART] / base->med[M_RESTART];
	double grow = more->med[M_IMAGE] - base->med[M_IMAGE];

	printf("\nuntouched memory, %s %llu MiB: %llu vs %llu MiB untouched\n", base->kind->name,
	       (unsigned long long)(base->size >> 20), (unsigned long long)(base->untouched >> 20),
	       (unsigned long long)(more->untouched >> 20));
	printf("  ckpt %.3f vs %.3f s (x%.3f) %s, restart %.3f vs %.3f s (x%.3f) %s, "
	       "image %+.1f KiB (%.0f vs %.0f bytes) %s\n",
	       base->med[M_CKPT], more->med[M_CKPT], t, mark(true, t <= TARGET_UNTOUCHED),
	       base->med[M_RESTART], more->med[M_RESTART], r, mark(true, r <= TARGET_UNTOUCHED),
	       grow / 1024, base->med[M_IMAGE], more->med[M_IMAGE],
	       mark(true, grow < (double)(1 << 20)));
	printf("  (PASS: times within x%.2f, image less than 1 MiB larger)\n", TARGET_UNTOUCHED);
}

/* ---- setup ---- */

static void usage(FILE *f)
{
	fprintf(f, "usage: bench-ckpt [--mib N] [--runs N] [--dir D] [--spin] [--cold]\n"
		   "  --mib N   MiB of touched memory, one size (default %u and %u)\n"
		   "  --runs N  repetitions of each case, median printed (default %u)\n"
		   "  --dir D   directory of the image and the floor file (default $TMPDIR "
		   "or /tmp)\n"
		   "  --spin    the subject's pause ticker spins (default: sleeps %s)\n"
		   "  --cold    restore and read back an image dropped from the page cache\n",
		DEFAULT_MIB_1, DEFAULT_MIB_2, DEFAULT_RUNS, "100 us");
}

/* A whole number in [min, max], or exit 2 naming the option. */
static long parse_num(const char *opt, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "bench-ckpt: bad %s '%s': expected %ld..%ld\n", opt, s, min, max);
		exit(2);
	}
	return v;
}

static void parse_opts(struct bench_opts *o, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "help", no_argument, NULL, 'h' }, { "mib", required_argument, NULL, 'm' },
		{ "runs", required_argument, NULL, 'r' }, { "dir", required_argument, NULL, 'd' },
		{ "spin", no_argument, NULL, 's' }, { "cold", no_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->sizes[0] = (uint64_t)DEFAULT_MIB_1 << 20;
	o->sizes[1] = (uint64_t)DEFAULT_MIB_2 << 20;
	o->n_sizes = 2;
	o->runs = DEFAULT_RUNS;
	o->dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	while ((c = getopt_long(argc, argv, "hm:r:d:sc", longs, NULL)) != -1) {
		switch (c) {
		case 'h': usage(stdout); exit(0);
		case 'm':
			o->sizes[0] = (uint64_t)parse_num("--mib", optarg, 1, 1 << 20) << 20;
			o->n_sizes = 1;
			break;
		case 'r': o->runs = (unsigned)parse_num("--runs", optarg, 1, MAX_RUNS); break;
		case 'd': o->dir = optarg; break;
		case 's': o->spin = true; break;
		case 'c': o->cold = true; break;
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		usage(stderr);
		exit(2);
	}
}

/* ckpt-subject next to this program, selfckpt-restore in ../bin (the build tree). */
static int find_programs(struct bench_opts *o)
{
	char self[PATH_MAX], *dir;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0) {
		fprintf(stderr, "bench-ckpt: cannot read /proc/self/exe: %s\n", strerror(errno));
		return -1;
	}
	self[n] = '\0';
	dir = dirname(self);
	snprintf(o->subject, sizeof(o->subject), "%s/ckpt-subject", dir);
	snprintf(o->restore, sizeof(o->restore), "%s/../bin/selfckpt-restore", dir);
	if (access(o->subject, X_OK) || access(o->restore, X_OK)) {
		fprintf(stderr, "bench-ckpt: expected '%s' and '%s': build them with make\n",
			o->subject, o->restore);
		return -1;
	}
	return 0;
}

/* A private directory for the image and the floor file, removed at exit. */
static int make_tmp(const char *dir)
{
	if ((size_t)snprintf(tmp_dir, sizeof(tmp_dir), "%s/bench-ckpt-XXXXXX", dir) >=
		    sizeof(tmp_dir) ||
	    !mkdtemp(tmp_dir)) {
		fprintf(stderr, "bench-ckpt: cannot create a directory in '%s': %s\n", dir,
			strerror(errno));
		tmp_dir[0] = 0;
		return -1;
	}
	snprintf(image_path, sizeof(image_path), "%s/image.sckpt", tmp_dir);
	snprintf(floor_path, sizeof(floor_path), "%s/floor", tmp_dir);
	atexit(remove_tmp);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	return 0;
}

/* Room for the largest size and its image (a little more than raw when stored), faulted in. */
static uint8_t *alloc_buf(const struct bench_opts *o, uint64_t *size)
{
	uint64_t max = 0;
	void *p;

	for (unsigned i = 0; i < o->n_sizes; i++)
		max = o->sizes[i] > max ? o->sizes[i] : max;
	*size = (max + 2 * PIECE - 1) / PIECE * PIECE;
	p = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		 -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "bench-ckpt: out of memory for a %llu MiB buffer\n",
			(unsigned long long)(*size >> 20));
		return NULL;
	}
	memset(p, 0xa5, *size); /* the floor writes data, not the zero page */
	return p;
}

int main(int argc, char **argv)
{
	size_t n_kinds = sizeof(kinds) / sizeof(kinds[0]), n_rows = 0;
	struct row rows[sizeof(kinds) / sizeof(kinds[0]) * 2 + 1], base = { 0 };
	struct bench_opts o = { 0 };
	struct job j = { .o = &o, .untouched = (uint64_t)UNTOUCHED_MIB << 20 };

	parse_opts(&o, argc, argv);
	if (find_programs(&o) < 0 || make_tmp(o.dir) < 0)
		return 1;
	j.buf = alloc_buf(&o, &j.buf_size);
	if (!j.buf)
		return 1;
	printf("bench-ckpt: %u runs, %ld online CPUs, %s pause ticker, files in '%s', image %s "
	       "for restore and read-back\n", o.runs, floor_threads(),
	       o.spin ? "spinning" : "sleeping", tmp_dir,
	       o.cold ? "dropped from the page cache" : "in the page cache");
	fflush(stdout);
	for (unsigned s = 0; s < o.n_sizes; s++) {
		j.size = o.sizes[s];
		for (size_t k = 0; k < n_kinds; k++) {
			j.kind = &kinds[k];
			if (bench_case(&j, &rows[n_rows]) < 0)
				return 1;
			if (s == 0 && !strcmp(j.kind->name, "random"))
				base = rows[n_rows];
			n_rows++;
		}
	}
	j.kind = base.kind;
	j.size = base.size;
	j.untouched += (uint64_t)EXTRA_UNTOUCHED_MIB << 20;
	if (bench_case(&j, &rows[n_rows]) < 0)
		return 1;
	print_table(rows, n_rows + 1);
	print_untouched(&base, &rows[n_rows]);
	munmap(j.buf, j.buf_size);
	return 0;
}
