/* SPDX-License-Identifier: MIT */
/*
 * procstate - process-wide state across a checkpoint: the working directory
 * (the program moves into DIR first; the test runs the restorer from
 * another directory), the umask, a lowered RLIMIT_NOFILE soft limit and
 * every other resource limit: all as they were at the checkpoint.
 */
#include <sys/resource.h>
#include <sys/stat.h>

#include "prog.h"

#define UMASK 0027
#define NOFILE_SOFT 200

static struct rlimit limits[RLIM_NLIMITS];

static void check_state(const char *when, const char *dir)
{
	char name[80], cwd[PATH_MAX];
	mode_t m = umask(0);
	struct rlimit rl;
	int same = 1, which = -1;

	umask(m);
	snprintf(name, sizeof(name), "%s: working directory", when);
	prog_check(name, getcwd(cwd, sizeof(cwd)) && !strcmp(cwd, dir), "'%s'",
		   getcwd(cwd, sizeof(cwd)) ? cwd : strerror(errno));
	snprintf(name, sizeof(name), "%s: umask", when);
	prog_check(name, m == UMASK, "%04o", (unsigned)m);
	snprintf(name, sizeof(name), "%s: RLIMIT_NOFILE soft limit", when);
	getrlimit(RLIMIT_NOFILE, &rl);
	prog_check(name, rl.rlim_cur == NOFILE_SOFT &&
			 rl.rlim_max == limits[RLIMIT_NOFILE].rlim_max,
		   "%llu / %llu", (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
	for (int i = 0; i < RLIM_NLIMITS && same; i++) {
		getrlimit(i, &rl);
		same = rl.rlim_cur == limits[i].rlim_cur && rl.rlim_max == limits[i].rlim_max;
		which = i;
	}
	snprintf(name, sizeof(name), "%s: every resource limit", when);
	prog_check(name, same, "limit %d is %llu / %llu, was %llu / %llu", which,
		   (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
		   (unsigned long long)limits[which].rlim_cur,
		   (unsigned long long)limits[which].rlim_max);
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX];
	struct rlimit rl;
	struct prog p;

	prog_init(&p, argc, argv);
	/* the image's paths stay valid after the chdir: the test gives absolute ones */
	if ((p.image && p.image[0] != '/') || !realpath(p.dir, dir))
		prog_die("IMAGE and DIR must be absolute paths: %s", p.dir);
	if (chdir(dir))
		prog_die("chdir %s: %s", dir, strerror(errno));
	umask(UMASK);
	if (getrlimit(RLIMIT_NOFILE, &rl))
		prog_die("getrlimit: %s", strerror(errno));
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < NOFILE_SOFT)
		prog_die("RLIMIT_NOFILE hard limit %llu is below %d",
			 (unsigned long long)rl.rlim_max, NOFILE_SOFT);
	rl.rlim_cur = NOFILE_SOFT;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		prog_die("setrlimit: %s", strerror(errno));
	for (int i = 0; i < RLIM_NLIMITS; i++)
		getrlimit(i, &limits[i]);
	check_state("before", dir);

	prog_checkpoint(&p, 1);

	check_state("after", dir);

	prog_checkpoint(&p, 2);

	check_state("later", dir);
	return 0;
}
