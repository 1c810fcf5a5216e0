/* SPDX-License-Identifier: MIT */
/*
 * bench_format.c - throughput of the image writer and reader, and the size of
 * the images, on three kinds of memory: heap-like (half zero pages, the rest
 * pointers, small integers and short strings), float32 weights whose low
 * mantissa bits are noise, and random bytes.
 *
 * Each data set is written as one segment record appended in 64 MiB pieces,
 * as a checkpoint of a big mapping would be, to a fresh file (page cache, no
 * fsync) and to /dev/null (the pipeline's own speed), then read back whole.
 * The "write floor" is plain write() of the same bytes in the same pieces to a
 * fresh file in the same directory: what the file system alone costs.
 *
 * It prints figures and ratios against the targets and asserts nothing: the
 * exit status is 0 unless an image cannot be written or does not read back.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compress/sc_compress.h"
#include "format/sc_format.h"
#include "tests/bench/bench_data.h"

#define PIECE (64ull << 20) /* bytes per sc_writer_append() and per write() */
#define DEFAULT_MIB 1024u
#define DEFAULT_RUNS 5u
#define MAX_RUNS 100u

/* Targets, informational only. */
#define TARGET_WRITE_GBS 1.5 /* float and random */
#define TARGET_READ_GBS 2.0  /* every data set */
#define TARGET_HEAP_RATIO 0.2

struct bench_opts {
	uint64_t size; /* raw bytes per data set */
	unsigned runs;
	const char *dir;
	int level; /* the compressing level measured besides SC_LEVEL_STORE */
};

struct data_set {
	const char *name;
	int (*gen)(uint8_t *p, uint64_t size); /* 0 or -errno */
	bool write_target; /* TARGET_WRITE_GBS applies */
	bool ratio_target; /* TARGET_HEAP_RATIO applies when compressing */
};

struct stat3 {
	double med, min, max; /* GB/s */
};

struct row {
	const struct data_set *set;
	int level;
	struct stat3 write, devnull, read;
	double ratio, floor; /* image/raw bytes; median floor GB/s */
};

/* One measurement: what to write or read, and where. */
struct job {
	const struct bench_opts *o;
	const struct data_set *set;
	const uint8_t *data;
	uint8_t *back; /* pre-faulted destination of reads */
	int level;
	uint64_t image_bytes; /* set by the last file write */
};

/* Temporary files, removed at exit and on SIGINT/SIGTERM. */
static char tmp_dir[4096], image_path[4200], floor_path[4200];

static void remove_tmp(void)
{
	if (!tmp_dir[0])
		return;
	unlink(image_path);
	unlink(floor_path);
	rmdir(tmp_dir);
}

static void on_signal(int sig)
{
	remove_tmp(); /* unlink and rmdir are async-signal-safe */
	signal(sig, SIG_DFL);
	raise(sig);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- data sets (bench_data.c), generated once per set before any timing ---- */

static const struct data_set data_sets[] = {
	{ "heap-like", bench_gen_heap, false, true },
	{ "float", bench_gen_float, true, false },
	{ "random", bench_gen_random, true, false },
};

/* ---- the operations timed ---- */

/* One segment record of the whole data set, appended in PIECE pieces. */
static int write_image(int fd, const char *name, const struct job *j, uint64_t *bytes)
{
	uint64_t size = j->o->size;
	struct sc_write_opts wo;
	struct sc_writer *w;
	int err;

	sc_write_opts_init(&wo);
	wo.level = j->level;
	err = sc_writer_new(&w, fd, name, &wo);
	if (err < 0)
		return err;
	err = sc_writer_begin(w, SC_REC_SEGMENT, SC_RF_REQUIRED, NULL, 0, size);
	for (uint64_t off = 0; !err && off < size; off += PIECE)
		err = sc_writer_append(w, j->data + off, size - off < PIECE ? size - off : PIECE);
	if (!err)
		err = sc_writer_end(w);
	if (!err)
		err = sc_writer_finish(w);
	*bytes = sc_writer_bytes(w);
	sc_writer_free(w);
	return err;
}

/* Open to finish: a fresh file each time, left in the page cache. */
static int time_write_file(struct job *j, double *secs)
{
	double t0;
	int fd, err;

	unlink(image_path);
	t0 = now();
	fd = open(image_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = write_image(fd, image_path, j, &j->image_bytes);
	*secs = now() - t0;
	close(fd);
	return err;
}

static int time_write_devnull(struct job *j, double *secs)
{
	uint64_t bytes;
	double t0;
	int fd, err;

	t0 = now();
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = write_image(fd, "/dev/null", j, &bytes);
	*secs = now() - t0;
	close(fd);
	return err;
}

static int time_read(struct job *j, double *secs)
{
	struct sc_reader *r;
	struct sc_record rec;
	double t0 = now();
	int err;

	err = sc_reader_open(&r, image_path, NULL);
	if (err < 0)
		return err;
	err = sc_reader_next(r, &rec);
	if (err == 1 && rec.raw_len != j->o->size)
		err = -EBADMSG;
	if (err == 1)
		err = sc_reader_read(r, j->back, j->o->size);
	else if (err == 0)
		err = -ENODATA;
	sc_reader_free(r);
	*secs = now() - t0;
	return err;
}

/* The floor: plain write() of the same bytes in the same pieces to a fresh file. */
static int time_floor(struct job *j, double *secs)
{
	uint64_t size = j->o->size, off = 0;
	double t0;
	int fd;

	unlink(floor_path);
	t0 = now();
	fd = open(floor_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (off < size) {
		ssize_t k = write(fd, j->data + off, size - off < PIECE ? size - off : PIECE);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int err = -errno;

			close(fd);
			return err;
		}
		off += (uint64_t)k;
	}
	*secs = now() - t0;
	close(fd);
	unlink(floor_path);
	return 0;
}

/* ---- repetition and statistics ---- */

/*
 * Run @fn o->runs times and keep the median, min and max throughput of raw bytes.
 * @what: "writing", ...; the progress lines read "@what <data set> level <level> run i/n".
 */
static int measure(struct job *j, int (*fn)(struct job *, double *), const char *what,
		   struct stat3 *st)
{
	double gbs[MAX_RUNS], secs;
	unsigned n = j->o->runs;
	char label[128];

	if (fn == time_floor)
		snprintf(label, sizeof(label), "%s for %s", what, j->set->name);
	else
		snprintf(label, sizeof(label), "%s %s level %d", what, j->set->name, j->level);
	for (unsigned i = 0; i < n; i++) {
		int err;

		fprintf(stderr, "%s run %u/%u\n", label, i + 1, n);
		err = fn(j, &secs);
		if (err < 0) {
			fprintf(stderr, "bench-format: %s failed: %s\n", label,
				selfckpt_strerror(err));
			return err;
		}
		gbs[i] = (double)j->o->size / secs / 1e9;
	}
	st->med = bench_median(gbs, n); /* sorts gbs */
	st->min = gbs[0];
	st->max = gbs[n - 1];
	return 0;
}

static void print_stat(const char *what, const struct stat3 *st)
{
	printf("  %-18s median %6.2f GB/s  (min %.2f, max %.2f)\n", what, st->med, st->min,
	       st->max);
}

/* The first read must give back the data set exactly; later reads are only timed. */
static int check_back(const struct job *j)
{
	uint64_t off = 0;

	if (!memcmp(j->back, j->data, j->o->size))
		return 0;
	while (j->back[off] == j->data[off])
		off++;
	fprintf(stderr, "bench-format: '%s' (%s level %d) reads back wrong at offset %llu: "
			"expected 0x%02x, found 0x%02x\n",
		image_path, j->set->name, j->level, (unsigned long long)off, j->data[off],
		j->back[off]);
	return -EBADMSG;
}

/* Write, write to /dev/null and read one data set at one level. */
static int bench_level(struct job *j, struct row *row)
{
	double secs;
	int err;

	row->set = j->set;
	row->level = j->level;
	err = measure(j, time_write_file, "writing", &row->write);
	if (!err)
		err = measure(j, time_write_devnull, "writing to /dev/null", &row->devnull);
	if (err)
		return err;
	row->ratio = (double)j->image_bytes / (double)j->o->size;
	fprintf(stderr, "checking %s level %d\n", j->set->name, j->level);
	err = time_read(j, &secs);
	if (!err)
		err = check_back(j);
	if (!err)
		err = measure(j, time_read, "reading", &row->read);
	if (err)
		return err;
	printf("%s, level %d: image %.4f of raw\n", j->set->name, j->level, row->ratio);
	print_stat("write", &row->write);
	print_stat("write /dev/null", &row->devnull);
	print_stat("read", &row->read);
	fflush(stdout);
	unlink(image_path);
	return 0;
}

/* Floor, then every level, for one data set generated here and freed after. */
static int bench_set(const struct bench_opts *o, const struct data_set *set, const int *levels,
		     size_t n_levels, uint8_t *back, struct row *rows)
{
	struct job j = { .o = o, .set = set, .back = back };
	struct stat3 floor;
	uint8_t *data = malloc(o->size);
	int err;

	if (!data) {
		fprintf(stderr, "bench-format: out of memory for %llu MiB of %s\n",
			(unsigned long long)(o->size >> 20), set->name);
		return -ENOMEM;
	}
	fprintf(stderr, "generating %s (%llu MiB)\n", set->name,
		(unsigned long long)(o->size >> 20));
	err = set->gen(data, o->size);
	if (err < 0)
		fprintf(stderr, "bench-format: cannot generate %s: %s\n", set->name,
			strerror(-err));
	j.data = data;
	if (!err)
		err = measure(&j, time_floor, "write floor", &floor);
	if (!err)
		print_stat("write floor", &floor);
	for (size_t i = 0; !err && i < n_levels; i++) {
		j.level = levels[i];
		err = bench_level(&j, &rows[i]);
		rows[i].floor = floor.med;
	}
	free(data);
	return err;
}

static const char *mark(bool applies, bool ok)
{
	return !applies ? "" : ok ? "PASS" : "MISS";
}

static void print_table(const struct row *rows, size_t n)
{
	printf("\n%-10s %5s  %-15s %9s  %-14s %-15s %11s\n", "data", "level", "write GB/s",
	       "(devnull)", "read GB/s", "size ratio", "write/floor");
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		bool wt = r->set->write_target;
		bool rt = r->set->ratio_target && r->level != SC_LEVEL_STORE;

		printf("%-10s %5d  %6.2f %-8s %9.2f  %6.2f %-7s %7.4f %-7s %11.2f\n",
		       r->set->name, r->level, r->write.med,
		       mark(wt, r->write.med >= TARGET_WRITE_GBS), r->devnull.med, r->read.med,
		       mark(true, r->read.med >= TARGET_READ_GBS), r->ratio,
		       mark(rt, r->ratio <= TARGET_HEAP_RATIO), r->write.med / r->floor);
	}
	printf("\ntargets (informational): write >= %.1f GB/s for float and random, "
	       "read >= %.1f GB/s, heap-like size ratio <= %.1f when compressed\n",
	       TARGET_WRITE_GBS, TARGET_READ_GBS, TARGET_HEAP_RATIO);
	printf("GB/s = 1e9 bytes of raw data a second, median of the runs; "
	       "write/floor = write over plain write() of the raw bytes\n");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench-format [--mib N] [--runs N] [--dir D] [--level L]\n"
		   "  --mib N    MiB per data set (default $BENCH_MIB or %u)\n"
		   "  --runs N   repetitions of each measurement, median printed (default %u)\n"
		   "  --dir D    directory of the temporary files (default $TMPDIR or /tmp)\n"
		   "  --level L  compressing level measured besides 0 (default $SELFCKPT_LEVEL "
		   "or %d)\n",
		DEFAULT_MIB, DEFAULT_RUNS, SC_LEVEL_DEFAULT);
}

/* A whole number in [min, max], or exit 2 naming the option. */
static long parse_num(const char *opt, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "bench-format: bad %s '%s': expected %ld..%ld\n", opt, s, min,
			max);
		exit(2);
	}
	return v;
}

static void parse_opts(struct bench_opts *o, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "help", no_argument, NULL, 'h' }, { "mib", required_argument, NULL, 'm' },
		{ "runs", required_argument, NULL, 'r' }, { "dir", required_argument, NULL, 'd' },
		{ "level", required_argument, NULL, 'l' }, { NULL, 0, NULL, 0 },
	};
	const char *env = getenv("BENCH_MIB");
	struct sc_write_opts wo;
	int c;

	sc_write_opts_init(&wo);
	o->size = (uint64_t)(env && *env ? parse_num("BENCH_MIB", env, 1, 1 << 20)
					 : DEFAULT_MIB) << 20;
	o->runs = DEFAULT_RUNS;
	o->dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	o->level = wo.level;
	while ((c = getopt_long(argc, argv, "hm:r:d:l:", longs, NULL)) != -1) {
		switch (c) {
		case 'h': usage(stdout); exit(0);
		case 'm': o->size = (uint64_t)parse_num("--mib", optarg, 1, 1 << 20) << 20; break;
		case 'r': o->runs = (unsigned)parse_num("--runs", optarg, 1, MAX_RUNS); break;
		case 'd': o->dir = optarg; break;
		case 'l': o->level = (int)parse_num("--level", optarg, -131072, 22); break;
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc) {
		usage(stderr);
		exit(2);
	}
}

/* A private directory for the image and the floor file, removed at exit. */
static int make_tmp(const char *dir)
{
	if ((size_t)snprintf(tmp_dir, sizeof(tmp_dir), "%s/bench-format-XXXXXX", dir) >=
		    sizeof(tmp_dir) ||
	    !mkdtemp(tmp_dir)) {
		fprintf(stderr, "bench-format: cannot create a directory in '%s': %s\n", dir,
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

int main(int argc, char **argv)
{
	size_t n_sets = sizeof(data_sets) / sizeof(data_sets[0]), n_levels = 1, n_rows = 0;
	struct row rows[sizeof(data_sets) / sizeof(data_sets[0]) * 2];
	struct bench_opts o;
	int levels[2] = { SC_LEVEL_STORE };
	uint8_t *back;

	parse_opts(&o, argc, argv);
	if (o.level != SC_LEVEL_STORE)
		levels[n_levels++] = o.level;
	if (make_tmp(o.dir) < 0)
		return 1;
	back = malloc(o.size);
	if (!back) {
		fprintf(stderr, "bench-format: out of memory for the read buffer\n");
		return 1;
	}
	memset(back, 0xa5, o.size); /* fault it in now, not inside the timed reads */
	printf("bench-format: %llu MiB per data set, %u runs, %ld online CPUs, files in '%s'\n",
	       (unsigned long long)(o.size >> 20), o.runs, sysconf(_SC_NPROCESSORS_ONLN), tmp_dir);
	for (size_t i = 0; i < n_sets; i++, n_rows += n_levels)
		if (bench_set(&o, &data_sets[i], levels, n_levels, back, &rows[n_rows]) < 0)
			return 1;
	print_table(rows, n_rows);
	free(back);
	return 0;
}
