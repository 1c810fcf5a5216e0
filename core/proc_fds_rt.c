/* SPDX-License-Identifier: MIT */
/*
 * proc_fds_rt.c - the descriptors of a process, from /proc/PID/fd, for code
 * that runs while threads are stopped (proc_fds.h).
 *
 * Stage contract: raw system calls and a static buffer only; one caller at a
 * time (the coordinator of a job's instant, or the process's own freeze).
 */
#include <fcntl.h>

#include "core/proc_fds.h"
#include "core/sc_sys.h"

int sc_proc_fds_each(int32_t pid, sc_proc_fd_fn each, void *ctx)
{
	static char ents[4096];
	char path[48];
	long dir, n;
	int ret = 0;

	sc_path_number(path, "/proc/", pid, "/fd");
	dir = sc_sys3(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return 0; /* a zombie's, or one gone: it holds nothing */
	while (!ret && (n = sc_sys3(SYS_getdents64, dir, (long)ents, sizeof(ents))) > 0) {
		for (long at = 0; at < n && !ret;) {
			struct sc_dirent64 *e = (struct sc_dirent64 *)(ents + at);
			int fd = sc_parse_uint(e->d_name);

			at += e->d_reclen;
			if (fd >= 0)
				ret = each(ctx, dir, e->d_name, fd);
		}
	}
	sc_sys1(SYS_close, dir);
	return ret;
}
