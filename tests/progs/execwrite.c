/* SPDX-License-Identifier: MIT */
/*
 * execwrite.c - a program that executes another the moment its checkpoint
 * is being written. Run under selfckpt-run by tests/cli/test_exec.c:
 *
 *   execwrite WORK CKPT HOW
 *
 * It fills 96 MiB with numbers, prints "sum X", makes WORK/ready and waits.
 * When the images' folder CKPT holds an image or a set still being written
 * (a temporary name: "*.selfckpt-tmp.*", or a hidden set folder), it
 * executes "sh -c 'echo executed HOW'" through the exec call HOW names
 * (execve, execv, execvp, execvpe, execl, execlp, execle, fexecve,
 * execveat). Restored with WORK/go-on present, it prints "restored sum X"
 * over the same memory and exits 0.
 */
#define _GNU_SOURCE /* execvpe(), execveat(), O_PATH */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BYTES (96u << 20)
#define WAIT_S 60

extern char **environ;

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

static uint64_t sum(const uint64_t *p, size_t words)
{
	uint64_t s = 0;

	for (size_t i = 0; i < words; i++)
		s = mix(s + p[i] + i);
	return s;
}

static int exists(const char *dir, const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* Is an image or a set being written in @ckpt? */
static int being_written(const char *ckpt)
{
	DIR *d = opendir(ckpt);
	struct dirent *e;
	int found = 0;

	while (d && (e = readdir(d)) && !found)
		found = strstr(e->d_name, ".selfckpt-tmp.") ||
			(e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."));
	if (d)
		closedir(d);
	return found;
}

/* Execute "sh -c 'echo executed HOW'" through the call @how names; returns only on failure. */
static void execute(const char *how)
{
	char *argv[] = { "sh", "-c", "echo executed \"$0\"", (char *)how, NULL };

	fflush(stdout);
	if (!strcmp(how, "execve"))
		execve("/bin/sh", argv, environ);
	else if (!strcmp(how, "execv"))
		execv("/bin/sh", argv);
	else if (!strcmp(how, "execvp"))
		execvp("sh", argv);
	else if (!strcmp(how, "execvpe"))
		execvpe("sh", argv, environ);
	else if (!strcmp(how, "execl"))
		execl("/bin/sh", "sh", "-c", "echo executed \"$0\"", how, (char *)NULL);
	else if (!strcmp(how, "execlp"))
		execlp("sh", "sh", "-c", "echo executed \"$0\"", how, (char *)NULL);
	else if (!strcmp(how, "execle"))
		execle("/bin/sh", "sh", "-c", "echo executed \"$0\"", how, (char *)NULL, environ);
	else if (!strcmp(how, "fexecve"))
		fexecve(open("/bin/sh", O_RDONLY | O_CLOEXEC), argv, environ);
	else if (!strcmp(how, "execveat"))
		execveat(open("/bin", O_PATH | O_DIRECTORY | O_CLOEXEC), "sh", argv, environ, 0);
	else
		fprintf(stderr, "execwrite: no exec call named '%s'\n", how);
	perror("execwrite: exec");
}

int main(int argc, char **argv)
{
	uint64_t *mem = malloc(BYTES);
	time_t start = time(NULL);
	char ready[4096];
	FILE *f;

	if (argc != 4 || !mem) {
		fprintf(stderr, "usage: execwrite WORK CKPT HOW\n");
		return 2;
	}
	for (size_t i = 0; i < BYTES / 8; i++)
		mem[i] = mix(i);
	printf("sum %016llx\n", (unsigned long long)sum(mem, BYTES / 8));
	fflush(stdout);
	snprintf(ready, sizeof(ready), "%s/ready", argv[1]);
	if (!(f = fopen(ready, "w"))) {
		perror(ready);
		return 2;
	}
	fclose(f);
	while (time(NULL) - start < WAIT_S) {
		if (exists(argv[1], "go-on")) {
			printf("restored sum %016llx\n", (unsigned long long)sum(mem, BYTES / 8));
			return 0;
		}
		if (being_written(argv[2])) {
			execute(argv[3]);
			return 3;
		}
		usleep(500);
	}
	fprintf(stderr, "execwrite: no checkpoint was written within %d s\n", WAIT_S);
	return 4;
}
