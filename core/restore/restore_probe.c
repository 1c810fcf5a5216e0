/* SPDX-License-Identifier: MIT */
/*
 * restore_probe.c - what the system refuses, asked before the point of no
 * return.
 *
 * Where users deploy, a seccomp profile and a capability set refuse calls that
 * a bare machine allows: Docker's default profile and Kubernetes' RuntimeDefault
 * answer clone3 with ENOSYS and unshare with EPERM; a kernel may lack
 * CONFIG_CHECKPOINT_RESTORE or keep PR_SET_MM_MAP for a capability. Once the
 * blob has unmapped this loader, a refusal can only kill the process. So each
 * call that the blob makes and a policy may refuse is tried here first, in a
 * form that the kernel turns down after its checks and before any effect, and
 * the restore takes another way (clone for clone3) or is refused.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/restore/restore_internal.h"
#include "format/sc_log.h"

/*
 * clone3 with no arguments: a kernel that runs it refuses the size (EINVAL)
 * before anything else; a seccomp filter answers first, with ENOSYS or EPERM.
 */
int sc_probe_clone3(void)
{
	if (syscall(SYS_clone3, NULL, 0) < 0 && errno != EINVAL)
		return -errno;
	return 0;
}

void sc_mm_map_fill(const struct sc_process_info *pr, struct sc_mm_map *mm)
{
	*mm = (struct sc_mm_map){
		.start_code = pr->start_code, .end_code = pr->end_code,
		.start_data = pr->start_data, .end_data = pr->end_data,
		.start_brk = pr->start_brk, .brk = pr->brk, .start_stack = pr->start_stack,
		.arg_start = pr->arg_start, .arg_end = pr->arg_end, .env_start = pr->env_start,
		.env_end = pr->env_end, .auxv_size = (uint32_t)pr->auxv_len, .exe_fd = -1 };
}

static int refused(const struct image *im, int e, bool exact)
{
	const struct sc_process_info *pr = &im->proc;
	struct rlimit rl = { 0 };

	if (e == EPERM || e == EACCES || e == ENOSYS || !exact)
		return sc_err(SELFCKPT_EHOST, "cannot restore '%s' here: the system refuses to "
			      "set a process's memory layout (prctl PR_SET_MM_MAP: %s; a kernel "
			      "without CONFIG_CHECKPOINT_RESTORE, or a security policy)", im->path,
			      strerror(e));
	getrlimit(RLIMIT_DATA, &rl);
	return sc_err(SELFCKPT_EHOST, "cannot restore '%s' here: the kernel refuses its memory "
		      "layout (prctl PR_SET_MM_MAP: %s): brk 0x%llx from 0x%llx, data "
		      "0x%llx-0x%llx, RLIMIT_DATA %llu, auxiliary vector of %llu bytes", im->path,
		      strerror(e), (unsigned long long)pr->brk, (unsigned long long)pr->start_brk,
		      (unsigned long long)pr->start_data, (unsigned long long)pr->end_data,
		      (unsigned long long)rl.rlim_cur, (unsigned long long)pr->auxv_len);
}

/*
 * The kernel checks the permission, every address and RLIMIT_DATA, then copies
 * the auxiliary vector before it changes anything: an auxv pointer to a page
 * that cannot be read makes the call fail with EFAULT exactly when everything
 * else would pass (kernel/sys.c, prctl_set_mm_map()).
 */
int sc_probe_mm_map(const struct image *im, bool exact)
{
	long page = sysconf(_SC_PAGESIZE);
	void *unreadable = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct sc_mm_map mm;
	int r, e;

	if (unreadable == MAP_FAILED)
		return sc_err(errno, "cannot map a page: %s", strerror(errno));
	sc_mm_map_fill(&im->proc, &mm);
	mm.auxv = (uint64_t)(uintptr_t)unreadable;
	if (!mm.auxv_size)
		mm.auxv_size = 16; /* never 0: with no auxv to copy the call would apply */
	r = prctl(PR_SET_MM, PR_SET_MM_MAP, &mm, sizeof(mm), 0);
	e = errno;
	munmap(unreadable, (size_t)page);
	if (r == 0)
		return sc_err(EFAULT, "prctl PR_SET_MM_MAP read no auxiliary vector from an "
			      "unreadable page");
	if (e == EFAULT || (!exact && e == EINVAL))
		return 0;
	return refused(im, e, exact);
}
