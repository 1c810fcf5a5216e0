/* SPDX-License-Identifier: MIT */
/*
 * memfiles.c - memfds and removed files, and their mappings, across a
 * checkpoint:
 *   - a read-write memfd holding a script, run with execveat() after the
 *     wait (a file that something holds open for writing cannot be run);
 *   - a file written, given an old modification time and removed while
 *     open: its time must be the same after the wait.
 * Waits about a second, then prints what it finds. Run under selfckpt-run
 * by tests/cli/test_memory.c: a restore must print the same.
 * ARGS: DIR, a folder for the removed file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define OLD_MTIME 1234567890

static const char script[] = "#!/bin/true\n";

/* Run the memfd @fd as a program in a child: its exit status, or the errno of execveat(). */
static const char *run_memfd(int fd)
{
	static char why[64];
	char *const argv[] = { "true", NULL }, *const envp[] = { NULL };
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
		_exit(100 + errno);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return "no child";
	if (WEXITSTATUS(status) == 0)
		return "ran";
	snprintf(why, sizeof(why), "failed: %s", WEXITSTATUS(status) >= 100 ?
		 strerror(WEXITSTATUS(status) - 100) : "exit status");
	return why;
}

static int removed_file(const char *dir)
{
	struct timespec t[2] = { { OLD_MTIME, 0 }, { OLD_MTIME, 0 } };
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/removed", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0640);
	if (fd < 0 || write(fd, "contents\n", 9) != 9 || futimens(fd, t) < 0 || unlink(path) < 0)
		return -1;
	return fd;
}

int main(int argc, char **argv)
{
	int memfd = (int)syscall(SYS_memfd_create, "script", 0), removed;
	struct stat st;

	if (argc != 2 || memfd < 0 || write(memfd, script, sizeof(script) - 1) < 0)
		return 2;
	removed = removed_file(argv[1]);
	if (removed < 0)
		return 2;
	for (int i = 0; i < 50; i++)
		usleep(20000); /* a signal ends a sleep early: wait in steps */
	printf("memfd script: %s\n", run_memfd(memfd));
	if (fstat(removed, &st) < 0)
		return 2;
	printf("removed file: mtime %s, mode %o, %lld bytes\n",
	       st.st_mtim.tv_sec == OLD_MTIME ? "kept" : "changed", st.st_mode & 07777,
	       (long long)st.st_size);
	return 0;
}
