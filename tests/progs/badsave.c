/* SPDX-License-Identifier: MIT */
/*
 * badsave - checkpoints that cannot be written, and checkpoints cut off
 * midway (tests/cli/test_ckside.c runs it).
 *
 *   badsave IMAGE DIR first
 *       Save IMAGE (a small image), print "the first save: ok", exit 0.
 *   badsave IMAGE DIR fail MIB GOOD
 *       Fill MIB MiB of memory with incompressible data and save IMAGE, which
 *       must fail (a full disk, a read-only folder): its error goes to standard
 *       error, one line "badsave: MESSAGE". Then save GOOD, which must work.
 *       Restored from GOOD, check the data, save GOOD.2, exit 0.
 *   badsave IMAGE DIR slow MIB
 *       Fill MIB MiB of memory likewise, print "filled", then save IMAGE over
 *       and over until killed.
 *   badsave IMAGE DIR describe [ARGS...]
 *       For selfckpt-inspect: in DIR, open data.txt (O_RDWR | O_APPEND |
 *       O_CLOEXEC) as descriptor 20, write 1234 bytes, dup it to 21; a pipe
 *       with "hello" in it as 22 (read end) and 23; /dev/null as 24 (read
 *       only); start a thread that blocks SIGUSR1 and waits; print "pid PID",
 *       save IMAGE and exit 0. The ARGS only lengthen the command line.
 *
 * Standard output: one check a line (prog.h). DIR is used by describe only.
 */
#include <pthread.h>

#include "prog.h"

static uint8_t *data;
static size_t data_len;

static uint64_t data_word(size_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 29);
}

static void fill(const char *mib)
{
	data_len = (size_t)atoi(mib) << 20;
	data = malloc(data_len);
	if (!data_len || !data)
		prog_die("cannot fill %s MiB", mib);
	for (size_t i = 0; i < data_len / 8; i++)
		memcpy(data + 8 * i, &(uint64_t){ data_word(i) }, 8);
}

static size_t first_bad_word(void)
{
	for (size_t i = 0; i < data_len / 8; i++)
		if (memcmp(data + 8 * i, &(uint64_t){ data_word(i) }, 8))
			return i;
	return data_len / 8;
}

static int save_fails(const struct prog *p, const char *good)
{
	char again[PATH_MAX];
	const char *msg;
	int r;

	fflush(stdout); /* else a restored process prints it again */
	r = selfckpt_save(p->image);

	msg = selfckpt_last_error();
	fprintf(stderr, "badsave: %s\n", r < 0 && msg ? msg : "(no error)");
	prog_check("the save fails", r < 0, "returned %d", r);
	prog_check("its message names the image", r < 0 && msg && strstr(msg, p->image),
		   "'%s'", msg);
	fflush(stdout);
	r = selfckpt_save(good);
	if (r == SELFCKPT_RESTORED) {
		size_t bad = first_bad_word();

		prog_check("restored from the later image", bad == data_len / 8, "word %zu", bad);
		snprintf(again, sizeof(again), "%s.2", good);
		r = selfckpt_save(again);
		prog_check("the restored process saves again", r == SELFCKPT_SAVED, "%d: %s", r,
			   selfckpt_last_error());
		return 0;
	}
	prog_check("a later save to a good folder works", r == SELFCKPT_SAVED, "%d: %s", r,
		   selfckpt_last_error());
	return 0;
}

static void *blocked_waiter(void *arg)
{
	sigset_t set;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (;;)
		pause();
	return NULL;
}

static void at(int fd, int want)
{
	if (fd < 0 || dup2(fd, want) != want)
		prog_die("descriptor %d: %s", want, strerror(errno));
	if (fd != want)
		close(fd);
}

static int describe(const struct prog *p)
{
	static char block[1234];
	int pipe_fds[2];
	pthread_t t;
	int r;

	if (chdir(p->dir) < 0)
		prog_die("chdir %s: %s", p->dir, strerror(errno));
	at(open("data.txt", O_RDWR | O_APPEND | O_CREAT | O_TRUNC, 0600), 20);
	fcntl(20, F_SETFD, FD_CLOEXEC);
	memset(block, 'x', sizeof(block));
	if (write(20, block, sizeof(block)) != (ssize_t)sizeof(block) || dup2(20, 21) != 21 ||
	    pipe(pipe_fds) < 0)
		prog_die("set-up: %s", strerror(errno));
	at(pipe_fds[0], 22);
	at(pipe_fds[1], 23);
	at(open("/dev/null", O_RDONLY), 24);
	if (write(23, "hello", 5) != 5 || pthread_create(&t, NULL, blocked_waiter, NULL))
		prog_die("set-up: %s", strerror(errno));
	usleep(100000); /* the thread blocks its signal */
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	r = selfckpt_save(p->image);
	prog_check("the save", r == SELFCKPT_SAVED, "%d: %s", r, selfckpt_last_error());
	fflush(stdout);
	_exit(0); /* the thread never ends */
}

int main(int argc, char **argv)
{
	struct prog p;
	int r;

	(void)prog_checkpoint; /* not the protocol here */
	(void)prog_snapshot;
	prog_init(&p, argc, argv);
	if (!p.image || p.argc < 1)
		prog_die("usage: badsave IMAGE DIR first | fail MIB GOOD | slow MIB | describe");
	if (!strcmp(p.argv[0], "first")) {
		fflush(stdout);
		r = selfckpt_save(p.image);
		prog_check("the first save", r == SELFCKPT_SAVED, "%d: %s", r,
			   selfckpt_last_error());
		return 0;
	}
	if (!strcmp(p.argv[0], "describe"))
		return describe(&p);
	if (p.argc < 2)
		prog_die("%s needs a size in MiB", p.argv[0]);
	fill(p.argv[1]);
	if (!strcmp(p.argv[0], "fail") && p.argc == 3)
		return save_fails(&p, p.argv[2]);
	if (strcmp(p.argv[0], "slow"))
		prog_die("unknown mode '%s'", p.argv[0]);
	puts("filled");
	fflush(stdout);
	for (;;)
		if (selfckpt_save(p.image) != SELFCKPT_SAVED)
			prog_die("save: %s", selfckpt_last_error());
}
