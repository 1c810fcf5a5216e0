/* SPDX-License-Identifier: MIT */
/*
 * mappings - kinds of mappings across a checkpoint:
 *   - a MAP_SHARED mapping of DIR/shared.dat, written before and after: the
 *     file holds the data, and writes through the mapping and to the file
 *     are seen on the other side after the restore;
 *   - MAP_SHARED|MAP_ANONYMOUS memory: its contents are kept, and it is still
 *     shared with a child forked after the restore;
 *   - a PROT_NONE guard page between two read-write regions;
 *   - a 1 TiB MAP_NORESERVE reservation with 3 touched pages (the test checks
 *     that the image stays small);
 *   - a region made read-only with mprotect() after it was filled;
 *   - many small mappings: MANY pages, every other one made read-only after
 *     it was filled, so that each is a mapping of its own.
 * Protections are checked by the snapshots, and here through the kernel: a
 * system call that reads from, or writes into, a page it may not touch fails
 * with EFAULT.
 *
 * After the checks the shared file gets its checkpoint contents back, so that
 * every restore of the same image finds the file as it was.
 *
 * ARGS: the groups to set up, comma-separated: "file" (the shared file
 * mapping), "anon" (the shared anonymous memory), "prot" (the guard page and
 * the read-only region), "sparse" (the reservation), "many" (the small
 * mappings); all of them without ARGS.
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "prog.h"

#define FILE_PAGES 4
#define ANON_PAGES 3
#define HUGE_LEN (1ull << 40)
#define MANY 64

static size_t ps;
static uint8_t *shfile, *shanon, *guarded, *huge, *ro, *many;
static char path[PATH_MAX];
static int with_file, with_anon, with_prot, with_sparse, with_many;

static uint8_t pat(uint64_t seed, size_t i)
{
	uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ull + i * 0xbf58476d1ce4e5b9ull;

	return (uint8_t)((x ^ (x >> 29)) >> 7);
}

static void fill(uint8_t *b, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pat(seed, i);
}

/* -1 when @b holds the pattern, else the first index that differs. */
static long differs(const uint8_t *b, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pat(seed, i))
			return (long)i;
	return -1;
}

static void *map(size_t len, int prot, int flags, int fd)
{
	void *m = mmap(NULL, len, prot, flags, fd, 0);

	if (m == MAP_FAILED)
		prog_die("mmap of %zu bytes: %s", len, strerror(errno));
	return m;
}

/* The file's bytes, read with a descriptor of its own (closed again). */
static long file_differs(uint64_t seed)
{
	static uint8_t buf[FILE_PAGES * 4096 * 4];
	size_t len = FILE_PAGES * ps;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : pread(fd, buf, len, 0);

	if (fd >= 0)
		close(fd);
	if (n != (ssize_t)len)
		return -2;
	return differs(buf, len, seed);
}

static void setup_file(const struct prog *p)
{
	int fd;

	snprintf(path, sizeof(path), "%s/shared.dat", p->dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)(FILE_PAGES * ps)))
		prog_die("cannot create %s: %s", path, strerror(errno));
	shfile = map(FILE_PAGES * ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd);
	close(fd);
	fill(shfile, FILE_PAGES * ps, 1);
	if (msync(shfile, FILE_PAGES * ps, MS_SYNC))
		prog_die("msync: %s", strerror(errno));
}

static void setup_anon(void)
{
	shanon = map(ANON_PAGES * ps, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1);
	fill(shanon, ANON_PAGES * ps, 2);
}

static void setup_prot(void)
{
	guarded = map(3 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	fill(guarded, ps, 3);
	fill(guarded + 2 * ps, ps, 4);
	if (mprotect(guarded + ps, ps, PROT_NONE))
		prog_die("mprotect: %s", strerror(errno));
	ro = map(2 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	fill(ro, 2 * ps, 5);
	if (mprotect(ro, 2 * ps, PROT_READ))
		prog_die("mprotect: %s", strerror(errno));
}

static void setup_sparse(void)
{
	huge = map(HUGE_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		   -1);
	huge[0] = 0x11;
	huge[HUGE_LEN / 2 + 123] = 0x22;
	huge[HUGE_LEN - 1] = 0x33;
}

static void setup_many(void)
{
	many = map(MANY * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	for (int i = 0; i < MANY; i++) {
		fill(many + (size_t)i * ps, ps, 100 + (uint64_t)i);
		if (i % 2 && mprotect(many + (size_t)i * ps, ps, PROT_READ))
			prog_die("mprotect: %s", strerror(errno));
	}
}

static void setup(const struct prog *p)
{
	const char *groups = p->argc ? p->argv[0] : "file,anon,prot,sparse,many";

	ps = (size_t)sysconf(_SC_PAGESIZE);
	with_file = strstr(groups, "file") != NULL;
	with_anon = strstr(groups, "anon") != NULL;
	with_prot = strstr(groups, "prot") != NULL;
	with_sparse = strstr(groups, "sparse") != NULL;
	with_many = strstr(groups, "many") != NULL;
	if (with_file)
		setup_file(p);
	if (with_anon)
		setup_anon();
	if (with_prot)
		setup_prot();
	if (with_sparse)
		setup_sparse();
	if (with_many)
		setup_many();
}

/* Can the kernel read @len bytes at @a (write(2) from it), or write there (read(2) into it)? */
static int kernel_access(void *a, size_t len, int write_to)
{
	int pfd[2], ok;
	char buf[64] = "0123456789";

	if (pipe(pfd))
		prog_die("pipe: %s", strerror(errno));
	if (write_to) {
		if (write(pfd[1], buf, len) != (ssize_t)len)
			prog_die("write to a pipe: %s", strerror(errno));
		ok = read(pfd[0], a, len) == (ssize_t)len;
	} else {
		ok = write(pfd[1], a, len) == (ssize_t)len;
	}
	ok = ok ? 1 : errno == EFAULT ? 0 : -1;
	close(pfd[0]);
	close(pfd[1]);
	return ok;
}

static void check_shared_file(const char *when)
{
	char name[80];
	long d;

	snprintf(name, sizeof(name), "%s: shared file mapping holds the data", when);
	d = differs(shfile, FILE_PAGES * ps, 1);
	prog_check(name, d < 0, "byte %ld", d);
	snprintf(name, sizeof(name), "%s: the file holds the data", when);
	d = file_differs(1);
	prog_check(name, d == -1, "byte %ld", d);
}

/* Writes through the mapping reach the file, and writes to the file reach the mapping. */
static void write_shared_file(void)
{
	int fd;
	long d;

	fill(shfile, FILE_PAGES * ps, 6);
	if (msync(shfile, FILE_PAGES * ps, MS_SYNC))
		prog_die("msync: %s", strerror(errno));
	d = file_differs(6);
	prog_check("write through the shared mapping reaches the file", d == -1, "byte %ld", d);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || pwrite(fd, "written to the file", 19, (off_t)ps) != 19)
		prog_die("cannot write %s: %s", path, strerror(errno));
	close(fd);
	prog_check("write to the file reaches the shared mapping",
		   !memcmp(shfile + ps, "written to the file", 19), "not seen");
	/* back to the checkpoint's contents, for the next restore of the same image */
	fill(shfile, FILE_PAGES * ps, 1);
	if (msync(shfile, FILE_PAGES * ps, MS_SYNC))
		prog_die("msync: %s", strerror(errno));
}

static void check_shared_anon(const char *when)
{
	char name[80];
	long d = differs(shanon, ANON_PAGES * ps, 2);
	pid_t pid;
	int st;

	snprintf(name, sizeof(name), "%s: shared anonymous memory kept", when);
	prog_check(name, d < 0, "byte %ld", d);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		prog_die("fork: %s", strerror(errno));
	if (pid == 0) {
		memcpy(shanon + ps, "from the child", 14);
		_exit(0);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	snprintf(name, sizeof(name), "%s: shared anonymous memory shared with a child", when);
	prog_check(name, !memcmp(shanon + ps, "from the child", 14), "the child's write is lost");
	fill(shanon, ANON_PAGES * ps, 2);
}

static void check_guard(const char *when)
{
	char name[80];
	long d1 = differs(guarded, ps, 3), d2 = differs(guarded + 2 * ps, ps, 4);
	int r = kernel_access(guarded + ps, 1, 0);

	snprintf(name, sizeof(name), "%s: regions around the guard page kept", when);
	prog_check(name, d1 < 0 && d2 < 0, "byte %ld, %ld", d1, d2);
	snprintf(name, sizeof(name), "%s: guard page inaccessible", when);
	prog_check(name, r == 0, "kernel read it: %d", r);
	guarded[ps - 1] ^= 0xff; /* both still writable */
	guarded[2 * ps] ^= 0xff;
	guarded[ps - 1] ^= 0xff;
	guarded[2 * ps] ^= 0xff;
}

static void check_huge(const char *when)
{
	char name[80];
	int ok = huge[0] == 0x11 && huge[HUGE_LEN / 2 + 123] == 0x22 &&
		 huge[HUGE_LEN - 1] == 0x33 && huge[HUGE_LEN / 4] == 0 && huge[ps] == 0;

	snprintf(name, sizeof(name), "%s: 1 TiB reservation, 3 touched pages kept", when);
	prog_check(name, ok, "%02x %02x %02x", huge[0], huge[HUGE_LEN / 2 + 123],
		   huge[HUGE_LEN - 1]);
	huge[HUGE_LEN / 4 + 7] = 0x44; /* still writable anywhere */
	snprintf(name, sizeof(name), "%s: 1 TiB reservation writable", when);
	prog_check(name, huge[HUGE_LEN / 4 + 7] == 0x44, "no");
	huge[HUGE_LEN / 4 + 7] = 0;
	if (madvise(huge + HUGE_LEN / 4, ps, MADV_DONTNEED)) /* 3 touched pages again */
		prog_die("madvise: %s", strerror(errno));
}

static void check_ro(const char *when)
{
	char name[80];
	long d = differs(ro, 2 * ps, 5);
	int r = kernel_access(ro + ps, 8, 0), w = kernel_access(ro + ps, 8, 1);

	snprintf(name, sizeof(name), "%s: read-only region kept", when);
	prog_check(name, d < 0, "byte %ld", d);
	snprintf(name, sizeof(name), "%s: read-only region readable, not writable", when);
	prog_check(name, r == 1 && w == 0, "read %d, write %d", r, w);
}

static void check_many(const char *when)
{
	char name[80];
	int bad = -1, w = kernel_access(many + ps, 8, 1);

	for (int i = 0; i < MANY && bad < 0; i++)
		if (differs(many + (size_t)i * ps, ps, 100 + (uint64_t)i) >= 0)
			bad = i;
	snprintf(name, sizeof(name), "%s: %d small mappings kept", when, MANY);
	prog_check(name, bad < 0, "page %d", bad);
	snprintf(name, sizeof(name), "%s: the read-only ones not writable", when);
	prog_check(name, w == 0, "write %d", w);
	many[0] ^= 1; /* the others still writable */
	many[0] ^= 1;
}

static void check_all(const char *when)
{
	if (with_file)
		check_shared_file(when);
	if (with_anon)
		check_shared_anon(when);
	if (with_prot) {
		check_guard(when);
		check_ro(when);
	}
	if (with_sparse)
		check_huge(when);
	if (with_many)
		check_many(when);
}

int main(int argc, char **argv)
{
	struct prog p;

	prog_init(&p, argc, argv);
	setup(&p);
	check_all("before");

	prog_checkpoint(&p, 1);

	check_all("after");
	if (with_file) {
		write_shared_file();
		check_shared_file("after writing");
	}

	prog_checkpoint(&p, 2);

	check_all("later");
	return 0;
}
