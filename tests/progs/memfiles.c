/* SPDX-License-Identifier: MIT */
/*
 * memfiles.c - memfds and removed files, and their mappings, across a
 * checkpoint:
 *   - a read-write memfd holding a script, run with execveat() after the
 *     wait (a file that something holds open for writing cannot be run);
 *   - a file written, given an old modification time and removed while
 *     open: its time must be the same after the wait;
 *   - a memfd and a removed file, each mapped shared and private while a
 *     descriptor holds it: after the wait, writes through the descriptor
 *     are seen through both mappings (where the private one has not written
 *     the page itself) and writes through the shared mapping through the
 *     descriptor: one file, as before.
 * Waits about a second, then prints what it finds. Run under selfckpt-run
 * by tests/cli/test_memory.c: a restore must print the same.
 * ARGS: DIR, a folder for the removed files; or "readonly": a memfd mapped
 * shared and writable whose only descriptor left is read-only, which no
 * restore can map again that way (the checkpoint must refuse it).
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

#define PAGE 4096

struct mapped {
	int fd;
	char *shared, *private; /* two pages each */
};

/* @fd's two pages mapped shared and private; the private one writes its second page. */
static int map_both(int fd, struct mapped *m)
{
	m->fd = fd;
	if (ftruncate(fd, 2 * PAGE) < 0 || pwrite(fd, "before", 6, 0) != 6)
		return -1;
	m->shared = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	m->private = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (m->shared == MAP_FAILED || m->private == MAP_FAILED)
		return -1;
	memcpy(m->private + PAGE, "own", 4);
	return 0;
}

/* The same inode as @fd in /proc/self/maps at @addr? */
static const char *same_file(int fd, const void *addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long start, end, ino = 0;
	char line[1024];
	struct stat st;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %*s %*s %*s %lu", &start, &end, &ino) == 3 &&
		    start <= (unsigned long)addr && (unsigned long)addr < end)
			break;
	if (f)
		fclose(f);
	return fstat(fd, &st) == 0 && st.st_ino == ino ? "same file" : "another file";
}

static void report(const char *name, const struct mapped *m)
{
	char buf[8] = "";
	int seen_private, seen_file;

	printf("%s: shared mapping %s, private mapping %s\n", name,
	       same_file(m->fd, m->shared), same_file(m->fd, m->private));
	printf("%s: mappings hold '%s' and '%s', own page '%s'\n", name, m->shared, m->private,
	       m->private + PAGE);
	if (pwrite(m->fd, "by fd", 6, 0) != 6)
		return;
	seen_private = !strcmp(m->private, "by fd");
	memcpy(m->shared + PAGE, "shared", 7);
	seen_file = pread(m->fd, buf, 7, PAGE) == 7 && !strcmp(buf, "shared");
	printf("%s: a write through the descriptor is seen %s; through the shared mapping, %s\n",
	       name, !strcmp(m->shared, "by fd") && seen_private ? "by both mappings"
							    : "by one mapping or none",
	       seen_file ? "by the descriptor" : "not by the descriptor");
	printf("%s: the private mapping's own page holds '%s'\n", name, m->private + PAGE);
}

/* A shared writable mapping of a memfd whose only descriptor left is read-only. */
static int readonly(void)
{
	int fd = (int)syscall(SYS_memfd_create, "rw-mapped", 0), ro;
	char proc[64];
	char *at;

	if (fd < 0 || ftruncate(fd, PAGE) < 0)
		return 2;
	at = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	ro = open(proc, O_RDONLY);
	if (at == MAP_FAILED || ro < 0 || close(fd) < 0)
		return 2;
	printf("memfd mapped at %p\n", (void *)at);
	fflush(stdout);
	for (int i = 0; i < 50; i++)
		usleep(20000);
	return 0;
}

int main(int argc, char **argv)
{
	int memfd = (int)syscall(SYS_memfd_create, "script", 0), removed, gone;
	struct mapped of_memfd, of_removed;
	char path[4096];
	struct stat st;

	if (argc == 2 && !strcmp(argv[1], "readonly"))
		return readonly();
	if (argc != 2 || memfd < 0 || write(memfd, script, sizeof(script) - 1) < 0)
		return 2;
	removed = removed_file(argv[1]);
	snprintf(path, sizeof(path), "%s/mapped", argv[1]);
	gone = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (removed < 0 || gone < 0 || unlink(path) < 0 ||
	    map_both((int)syscall(SYS_memfd_create, "mapped", 0), &of_memfd) < 0 ||
	    map_both(gone, &of_removed) < 0)
		return 2;
	for (int i = 0; i < 50; i++)
		usleep(20000); /* a signal ends a sleep early: wait in steps */
	printf("memfd script: %s\n", run_memfd(memfd));
	if (fstat(removed, &st) < 0)
		return 2;
	printf("removed file: mtime %s, mode %o, %lld bytes\n",
	       st.st_mtim.tv_sec == OLD_MTIME ? "kept" : "changed", st.st_mode & 07777,
	       (long long)st.st_size);
	report("memfd", &of_memfd);
	report("removed file", &of_removed);
	return 0;
}
