/* SPDX-License-Identifier: MIT */
/*
 * unrestorable.c - a program that holds what no restore could bring back,
 * one thing per run: "cwd" works in a folder it removed, "dir" holds a
 * removed folder open, "ns" holds /proc/self/ns/net open, "ptmx" holds the
 * master side of a pseudo-terminal it made, "pts" the terminal side of one
 * whose master it closed, "aio" holds an AIO context, "rseq" registers an rseq area of its own (the C
 * library's registration turned off by GLIBC_TUNABLES, which the test
 * sets). With "exe" it prints what /proc/self/exe names. With "symlink" it
 * holds an O_PATH descriptor of a symbolic link instead, which does come
 * back; it prints whether descriptor 3 is still that link (left in place for
 * every restore of the image). It waits 3 s for a checkpoint. Run under selfckpt-run by tests/cli/test_objects.c.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RSEQ_SIG 0x53053053

/* The kernel's struct rseq, in its first, 32-byte form. */
static struct {
	uint32_t cpu_id_start, cpu_id;
	uint64_t cs;
	uint32_t flags, pad[3];
} __attribute__((aligned(32))) area;

/* The terminal side of a new pseudo-terminal, at descriptor 3, its master closed. */
static int orphan_terminal(void)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY), term;

	if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0)
		return -1;
	term = open(ptsname(master), O_RDWR | O_NOCTTY);
	close(master);
	if (term < 0 || dup2(term, 3) != 3)
		return -1;
	close(term);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long aio = 0;
	char dir[] = "/tmp/sc-unrestorable-XXXXXX", link[64];
	struct stat st;

	if (argc != 2 || !mkdtemp(dir))
		return 2;
	if (!strcmp(argv[1], "cwd") && (chdir(dir) < 0 || rmdir(dir) < 0))
		return 3;
	if (!strcmp(argv[1], "dir") && (open(dir, O_RDONLY | O_DIRECTORY) != 3 || rmdir(dir) < 0))
		return 3;
	if (!strcmp(argv[1], "ns") && open("/proc/self/ns/net", O_RDONLY) != 3)
		return 3;
	if (!strcmp(argv[1], "ptmx") && posix_openpt(O_RDWR | O_NOCTTY) != 3)
		return 3;
	if (!strcmp(argv[1], "pts") && orphan_terminal() < 0)
		return 3;
	if (!strcmp(argv[1], "aio") && syscall(SYS_io_setup, 8, &aio) < 0)
		return 3;
	if (!strcmp(argv[1], "rseq") && syscall(SYS_rseq, &area, sizeof(area), 0, RSEQ_SIG) < 0)
		return 3;
	snprintf(link, sizeof(link), "%s/link", dir);
	if (!strcmp(argv[1], "symlink") && (symlink("/etc/hostname", link) < 0 ||
					    open(link, O_PATH | O_NOFOLLOW) != 3))
		return 3;
	for (int i = 0; i < 30; i++)
		usleep(100000); /* a signal ends a sleep early: wait in steps */
	if (!strcmp(argv[1], "exe")) {
		char exe[4096];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe));

		printf("exe: %.*s\n", (int)(n > 0 ? n : 0), exe);
	}
	printf("descriptor 3 is the link: %s\n",
	       fstatat(3, "", &st, AT_EMPTY_PATH) == 0 && S_ISLNK(st.st_mode) ? "yes" : "no");
	return 0;
}
