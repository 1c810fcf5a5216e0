/* SPDX-License-Identifier: MIT */
/*
 * failsave - a checkpoint that fails keeps the previous image.
 *
 * Saves IMAGE (image A) and goes on; then lowers the RLIMIT_FSIZE soft limit
 * below the image's size, ignores SIGXFSZ and saves to the same path again.
 * The limit falls half way through the data, where the bytes of several of
 * the snapshot's windows are being written at once (segments.c). That save
 * must fail with a negative error whose message names the file;
 * IMAGE must still be image A byte for byte, and its directory must hold
 * nothing else (no temporary file left). The program then exits 0. Restored
 * from image A, it returns from the first save and checks its memory.
 *
 * Neither save leaves a shared mapping behind (the memory the checkpoint
 * shares with its snapshot is gone once selfckpt_save() returns), and both
 * snapshot processes are reaped soon after, by a thread that then ends.
 *
 * Not for the round trip of prog.h: the test runs it once, then restores A.
 * IMAGE must be alone in its directory. Standard output: one check a line.
 */
#include <dirent.h>
#include <stdbool.h>
#include <libgen.h>
#include <sys/resource.h>
#include <xxhash.h>

#include "prog.h"

#define DATA_LEN (48u << 20) /* incompressible: the image is larger than FSIZE_LIMIT */
#define FSIZE_LIMIT (24u << 20)

static uint8_t data[DATA_LEN];

static uint64_t file_hash(const char *path)
{
	static uint8_t buf[1 << 16];
	XXH3_state_t *st = XXH3_createState();
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t h;
	ssize_t n;

	if (!st || fd < 0)
		prog_die("cannot hash %s: %s", path, strerror(errno));
	XXH3_64bits_reset(st);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		XXH3_64bits_update(st, buf, (size_t)n);
	close(fd);
	h = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return h;
}

/* The names in IMAGE's directory other than IMAGE's own, comma-separated in @out. */
static int others_in_dir(const char *image, char *out, size_t len)
{
	char d[PATH_MAX], b[PATH_MAX];
	struct dirent *e;
	DIR *dir;
	int n = 0;

	snprintf(d, sizeof(d), "%s", image);
	snprintf(b, sizeof(b), "%s", image);
	dir = opendir(dirname(d));
	if (!dir)
		prog_die("opendir: %s", strerror(errno));
	out[0] = '\0';
	while ((e = readdir(dir)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    strcmp(e->d_name, basename(b))) {
			snprintf(out + strlen(out), len - strlen(out), "%s%s", n ? ", " : "",
				 e->d_name);
			n++;
		}
	closedir(dir);
	return n;
}

/* Shared mappings in /proc/self/maps ('s' in the permissions). */
static int shared_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096], perms[8];
	int n = 0;

	if (!f)
		prog_die("cannot read /proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %7s", perms) == 1 && perms[3] == 's')
			n++;
	fclose(f);
	return n;
}

static int count_entries(const char *path)
{
	DIR *dir = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!dir)
		prog_die("opendir %s: %s", path, strerror(errno));
	while ((e = readdir(dir)))
		n += e->d_name[0] != '.';
	closedir(dir);
	return n;
}

/* Processes whose parent is this one, zombies included. */
static int children(void)
{
	DIR *dir = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!dir)
		prog_die("opendir /proc: %s", strerror(errno));
	while ((e = readdir(dir))) {
		char path[300], stat[1024], *close_paren;
		int ppid = 0;
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue; /* gone meanwhile */
		if (fgets(stat, sizeof(stat), f) && (close_paren = strrchr(stat, ')')) &&
		    sscanf(close_paren + 1, " %*c %d", &ppid) == 1 && ppid == getpid())
			n++;
		fclose(f);
	}
	closedir(dir);
	return n;
}

/* Within 10 s: no child process left and @threads threads, as before the saves. */
static bool snapshots_reaped(int threads)
{
	for (int i = 0; i < 1000; i++) {
		if (!children() && count_entries("/proc/self/task") == threads)
			return true;
		usleep(10000);
	}
	return false;
}

static uint8_t data_byte(size_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return (uint8_t)(x >> 40);
}

static void second_save(const char *image, int shared)
{
	struct rlimit rl, low;
	char others[1024];
	uint64_t a = file_hash(image);
	const char *msg;
	int r, n;

	signal(SIGXFSZ, SIG_IGN);
	if (getrlimit(RLIMIT_FSIZE, &rl))
		prog_die("getrlimit: %s", strerror(errno));
	low = rl;
	low.rlim_cur = FSIZE_LIMIT;
	if (setrlimit(RLIMIT_FSIZE, &low))
		prog_die("setrlimit: %s", strerror(errno));
	r = selfckpt_save(image);
	msg = selfckpt_last_error();
	setrlimit(RLIMIT_FSIZE, &rl);
	fprintf(stderr, "failsave: the second save returned %d: %s\n", r, msg);
	prog_check("the second save fails", r < 0, "returned %d", r);
	prog_check("its message names the file", msg && strstr(msg, image), "'%s'", msg);
	prog_check("the image is still the first one", file_hash(image) == a, "it changed");
	n = others_in_dir(image, others, sizeof(others));
	prog_check("no temporary file left", n == 0, "%s", others);
	prog_check("no shared mapping left by it", shared_maps() == shared, "%d, before %d",
		   shared_maps(), shared);
}

int main(int argc, char **argv)
{
	struct prog p;
	size_t bad = DATA_LEN;
	int r, shared, threads;

	(void)prog_checkpoint; /* saves and dies: not the protocol here */
	prog_init(&p, argc, argv);
	if (!p.image)
		prog_die("failsave needs an image");
	for (size_t i = 0; i < DATA_LEN; i++)
		data[i] = data_byte(i);
	shared = shared_maps();
	threads = count_entries("/proc/self/task");
	prog_snapshot(&p, "before", 1);
	r = selfckpt_save(p.image);
	if (r == SELFCKPT_RESTORED) {
		prog_snapshot(&p, "after", 1);
		for (size_t i = 0; i < DATA_LEN && bad == DATA_LEN; i++)
			if (data[i] != data_byte(i))
				bad = i;
		prog_check("restored from the first image", bad == DATA_LEN, "byte %zu", bad);
		return 0;
	}
	if (r != SELFCKPT_SAVED)
		prog_die("selfckpt_save('%s') returned %d: %s", p.image, r, selfckpt_last_error());
	puts("the first save: ok");
	prog_check("no shared mapping left by it", shared_maps() == shared, "%d, before %d",
		   shared_maps(), shared);
	second_save(p.image, shared);
	prog_check("both snapshots reaped, by a thread that ended", snapshots_reaped(threads),
		   "%d child process(es), %d threads, before %d", children(),
		   count_entries("/proc/self/task"), threads);
	return 0;
}
