/* SPDX-License-Identifier: MIT */
/*
 * process_info.c - the process-wide state of the snapshot: memory layout
 * fields, vDSO block, limits, working directory, auxiliary vector.
 */
#include <errno.h>
#include <limits.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/checkpoint_internal.h"
#include "core/sc_core.h"
#include "core/sc_handoff.h"
#include "format/sc_log.h"

/* Fields 26.. of /proc/<pid>/stat, counted from 1, after the command name. */
static int parse_stat(pid_t child, struct sc_process_info *p)
{
	char *stat = sc_snapshot_file(child, "stat", NULL), *s;
	unsigned long long f[53] = { 0 };
	int i = 4; /* the first number after the state (field 3) is field 4 */

	if (!stat)
		return -EIO;
	s = strrchr(stat, ')'); /* the command name may hold spaces and parentheses */
	if (!s || s[1] != ' ') {
		free(stat);
		return sc_err(EPROTO, "cannot parse /proc/%d/stat", (int)child);
	}
	for (s = strchr(s + 2, ' '); s && i < 53; s = strchr(s + 1, ' '))
		f[i++] = strtoull(s + 1, NULL, 10);
	free(stat);
	if (i < 52)
		return sc_err(EPROTO, "/proc/%d/stat has only %d fields", (int)child, i);
	p->start_code = f[26];
	p->end_code = f[27];
	p->start_stack = f[28];
	p->start_data = f[45];
	p->end_data = f[46];
	p->start_brk = f[47];
	p->arg_start = f[48];
	p->arg_end = f[49];
	p->env_start = f[50];
	p->env_end = f[51];
	return 0;
}

static int read_link(pid_t child, const char *name, char **out)
{
	char path[64], buf[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)child, name);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return sc_err(errno, "cannot read '%s': %s", path, strerror(errno));
	buf[n] = '\0';
	*out = strdup(buf);
	return *out ? 0 : sc_err(ENOMEM, "out of memory");
}

/* Does @cwd read "PATH (deleted)", and is PATH not the folder @st describes? */
static bool gone_by_name(const char *cwd, const struct stat *st)
{
	static const char suffix[] = " (deleted)";
	size_t n = strlen(cwd), k = sizeof(suffix) - 1;
	char *path;
	struct stat now;
	bool gone;

	if (n <= k || strcmp(cwd + n - k, suffix))
		return false;
	path = strndup(cwd, n - k);
	gone = !path || stat(path, &now) < 0 || now.st_ino != st->st_ino ||
	       now.st_dev != st->st_dev;
	free(path);
	return gone;
}

/*
 * A working directory that was removed cannot be entered again: refuse the
 * image now rather than write one that no restore can use.
 */
static int check_cwd(pid_t child, const char *cwd)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/cwd", (int)child);
	/* removed: no links left, or (a folder of /proc of a process that ended) named so */
	if ((stat(path, &st) == 0 && st.st_nlink == 0) || gone_by_name(cwd, &st))
		return sc_err(SELFCKPT_EHOST, "the working directory '%.*s' was removed: a restore "
			      "could not enter it, so no image is written",
			      (int)(strlen(cwd) - (strstr(cwd, " (deleted)") ? 10 : 0)), cwd);
	return 0;
}

#define MEMBARRIER_GET_REGISTRATIONS (1 << 9) /* Linux 6.3 */

/*
 * The membarrier() registrations of the process (of its memory, so read
 * here, not in the snapshot). Kernels since 6.3 list them. On older ones a
 * private expedited barrier succeeds once the process registered for it and
 * fails with EPERM before (the barrier itself is harmless); a global
 * expedited registration cannot be told there.
 */
static uint32_t membarrier_registrations(void)
{
	static const struct {
		int cmd, registered;
		uint32_t attr;
	} kinds[] = {
		{ MEMBARRIER_CMD_PRIVATE_EXPEDITED, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
		  SC_ATTR_MEMBARRIER },
		{ MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE,
		  MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, SC_ATTR_MEMBARRIER_SYNC_CORE },
		{ MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ,
		  SC_ATTR_MEMBARRIER_RSEQ },
		{ -1, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, SC_ATTR_MEMBARRIER_GLOBAL },
	};
	long listed = syscall(SYS_membarrier, MEMBARRIER_GET_REGISTRATIONS, 0, 0);
	uint32_t attrs = 0;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (listed >= 0 ? (listed & kinds[i].registered) != 0 :
				  kinds[i].cmd >= 0 && syscall(SYS_membarrier, kinds[i].cmd, 0, 0) == 0)
			attrs |= kinds[i].attr;
	return attrs;
}

/*
 * What the program set on itself that a restore sets again: THP disabled,
 * child subreaper, its OOM score adjustment, membarrier registrations, and
 * the audit login uid it had (that of its login session). Read
 * in this process (a child subreaper is not inherited by the snapshot).
 */
static void read_attrs(struct sc_process_info *p)
{
	char buf[32] = "";
	int fd = open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC), sub = 0;
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	p->attrs = SC_ATTR_KNOWN;
	p->oom_score_adj = n > 0 ? (int32_t)strtol(buf, NULL, 10) : 0;
	if (prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1)
		p->attrs |= SC_ATTR_THP_DISABLE;
	if (prctl(PR_GET_CHILD_SUBREAPER, (unsigned long)&sub, 0, 0, 0) == 0 && sub)
		p->attrs |= SC_ATTR_SUBREAPER;
	p->attrs |= membarrier_registrations();
	fd = open("/proc/self/loginuid", O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n > 0) {
		buf[n] = '\0';
		p->loginuid = (uint32_t)strtoul(buf, NULL, 10);
		p->attrs |= SC_ATTR_LOGINUID;
	}
}

static uint32_t parse_umask(pid_t child)
{
	char *status = sc_snapshot_file(child, "status", NULL), *u;
	uint32_t mask = 022;

	if (status && (u = strstr(status, "\nUmask:")))
		mask = (uint32_t)strtoul(u + 7, NULL, 8);
	free(status);
	return mask;
}

/* [vvar] .. [vdso] move together at restart; the vDSO's bytes identify the kernel. */
static int find_vdso(pid_t child, struct sc_process_info *p)
{
	struct sc_vma *v;
	size_t n;
	int err = sc_maps_read(child, &v, &n);

	if (err < 0)
		return err;
	for (size_t i = 0; i < n; i++) {
		if (v[i].kind == SC_VMA_VVAR && !p->vdso_block_start)
			p->vdso_block_start = v[i].start;
		if (v[i].kind == SC_VMA_VDSO) {
			if (!p->vdso_block_start)
				p->vdso_block_start = v[i].start;
			p->vdso_offset = v[i].start - p->vdso_block_start;
			p->vdso_len = v[i].end - v[i].start;
			p->vdso_block_len = v[i].end - p->vdso_block_start;
			/* Our own vDSO is the snapshot's: same kernel, same bytes. */
			p->vdso_hash = XXH3_64bits((const void *)v[i].start, p->vdso_len);
		}
	}
	sc_maps_free(v, n);
	return 0;
}

int sc_process_collect(const struct sc_frozen *fz, struct sc_process_info *p)
{
	pid_t child = fz->child;
	int err;

	memset(p, 0, sizeof(*p));
	p->pid = (uint32_t)getpid();
	p->ppid = (uint32_t)getppid();
	p->uid = (uint32_t)getuid();
	p->gid = (uint32_t)getgid();
	p->umask = parse_umask(child);
	p->brk = fz->brk;
	p->handoff = (uint64_t)&sc_handoff;
	p->thread_start = (uint64_t)&sc_thread_start;
	for (int i = 0; i < SC_RLIMITS; i++) {
		struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };

		prlimit(child, (__rlimit_resource_t)i, NULL, &rl);
		p->rlim_cur[i] = rl.rlim_cur;
		p->rlim_max[i] = rl.rlim_max;
	}
	if ((err = parse_stat(child, p)) < 0 || (err = find_vdso(child, p)) < 0 ||
	    (err = read_link(child, "cwd", &p->cwd)) < 0 ||
	    (err = check_cwd(child, p->cwd)) < 0 ||
	    (err = read_link(child, "exe", &p->exe)) < 0)
		goto fail;
	read_attrs(p);
	p->auxv = (uint8_t *)sc_snapshot_file(child, "auxv", &p->auxv_len);
	if (!p->auxv) {
		err = -EIO;
		goto fail;
	}
	return 0;
fail:
	sc_process_free(p);
	return err;
}
