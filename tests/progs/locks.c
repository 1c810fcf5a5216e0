/* SPDX-License-Identifier: MIT */
/*
 * locks.c - a program that holds file locks of each kind on three files of
 * DIR: a POSIX write lock on bytes 10 to 19, an OFD read lock on the whole
 * file, and a flock() write lock. It waits about a second, then asks a child
 * process (which shares none of them) whether each is held. Run under
 * selfckpt-run by tests/cli/test_objects.c: a restore must print the same.
 * Usage: locks DIR.
 */
#define _GNU_SOURCE /* F_OFD_* */
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

static int open_in(const char *dir, const char *name)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return open(path, O_RDWR | O_CREAT, 0600);
}

/* In a child: is each lock held by someone else? */
static void probe(const char *dir)
{
	struct flock posix = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 15, .l_len = 1 };
	struct flock ofd = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int a = open_in(dir, "posix"), b = open_in(dir, "ofd"), c = open_in(dir, "flock");

	fcntl(a, F_GETLK, &posix);
	fcntl(b, F_OFD_GETLK, &ofd);
	printf("posix lock held: %s (%lld+%lld)\n", posix.l_type == F_WRLCK ? "write" : "no",
	       (long long)posix.l_start, (long long)posix.l_len);
	printf("ofd lock held: %s\n", ofd.l_type == F_RDLCK ? "read" : "no");
	printf("flock held: %s\n", flock(c, LOCK_SH | LOCK_NB) < 0 ? "yes" : "no");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct flock posix = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 10, .l_len = 10 };
	struct flock ofd = { .l_type = F_RDLCK, .l_whence = SEEK_SET };
	int a, b, c, status;
	pid_t pid;

	if (argc != 2)
		return 2;
	a = open_in(argv[1], "posix");
	b = open_in(argv[1], "ofd");
	c = open_in(argv[1], "flock");
	if (fcntl(a, F_SETLK, &posix) < 0 || fcntl(b, F_OFD_SETLK, &ofd) < 0 ||
	    flock(c, LOCK_EX | LOCK_NB) < 0)
		return 3;
	for (int i = 0; i < 50; i++)
		usleep(20000); /* a signal ends a sleep early: wait in steps */
	pid = fork();
	if (pid == 0) {
		probe(argv[1]);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return 0;
}
