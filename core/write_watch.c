/* SPDX-License-Identifier: MIT */
/*
 * write_watch.c - which pages of a range the program has written since it
 * was last asked: the managed memory's copy on the host (managed.c) is sent
 * to the GPU by the pages the CPU wrote, not whole.
 *
 * userfaultfd's asynchronous write protection (Linux 6.7): a write to a
 * protected page, by the program or by the kernel on its behalf (a read(2)
 * into it), lifts the protection in the kernel itself, with no signal and no
 * thread to answer; PAGEMAP_SCAN then lists the pages so written and protects
 * them again, in one call. Write protection by mprotect() and SIGSEGV would
 * make the kernel's own writes fail with EFAULT instead: a read(2) into
 * managed memory would come back short, silently for a program that does not
 * check. UFFD_USER_MODE_ONLY lets a process without privilege use it (with
 * vm.unprivileged_userfaultfd at 0, the default); asynchronous protection is
 * resolved in the kernel whatever mode the write came from.
 *
 * Measured (2-core dev box, 256 MiB): a scan that finds nothing takes 70 us,
 * 5 us where the memory is in huge pages; the first write to each protected
 * page costs about 1.5 us.
 *
 * The descriptor is the library's own: a checkpoint leaves it out, and a
 * restart opens another (sc_ww_reopen).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/pagemap_scan.h"
#include "core/sc_fds.h"
#include "core/sc_write_watch.h"
#include "format/sc_log.h"

#define WW_RUNS 256 /* written runs per scan call */

static struct {
	int uffd, pagemap;
	int err; /* why the watch cannot be had, once tried */
} ww = { -1, -1, 0 };

static int ww_fail(int err, const char *what)
{
	sc_log(SC_LOG_ERROR, "managed memory needs userfaultfd's asynchronous write protection "
	       "and PAGEMAP_SCAN (Linux 6.7 or later, and userfaultfd allowed by the seccomp "
	       "profile): %s: %s", what, strerror(-err));
	if (ww.uffd >= 0)
		close(ww.uffd);
	if (ww.pagemap >= 0)
		close(ww.pagemap);
	ww.uffd = ww.pagemap = -1;
	ww.err = err;
	return err;
}

/* The scan that lists the written pages also protects them again. */
static long ww_scan(uint64_t start, uint64_t end, struct sc_page_region *runs, uint64_t *walk_end)
{
	struct sc_pm_scan_arg a = {
		.size = sizeof(a), .flags = SC_PM_SCAN_WP_MATCHING | SC_PM_SCAN_CHECK_WPASYNC,
		.start = start, .end = end, .vec = (uint64_t)(uintptr_t)runs, .vec_len = WW_RUNS,
		.category_mask = SC_PAGE_IS_WRITTEN, .return_mask = SC_PAGE_IS_WRITTEN,
	};
	long n = ioctl(ww.pagemap, SC_PAGEMAP_SCAN, &a);

	*walk_end = a.walk_end;
	return n < 0 ? -errno : n;
}

int sc_uffd_open_async(uint64_t features, const char **what)
{
	struct uffdio_api api = { .api = UFFD_API, .features = SC_UFFD_FEATURE_WP_ASYNC | features };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | SC_UFFD_USER_MODE_ONLY);
	int err;

	*what = "userfaultfd()";
	if (fd < 0)
		return -errno;
	if (ioctl(fd, UFFDIO_API, &api) < 0) {
		err = -errno;
		close(fd);
		*what = "UFFDIO_API with asynchronous write protection";
		return err;
	}
	return fd;
}

static int ww_open(void)
{
	const char *what;
	int fd = sc_uffd_open_async(SC_UFFD_FEATURE_WP_UNPOPULATED, &what);

	if (fd < 0)
		return ww_fail(fd, what);
	ww.uffd = fd;
	if ((ww.pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) < 0)
		return ww_fail(-errno, "/proc/self/pagemap");
	sc_fds_own_add(ww.uffd);
	sc_fds_own_add(ww.pagemap);
	return 0;
}

int sc_ww_init(void)
{
	if (ww.err)
		return ww.err;
	return ww.uffd >= 0 ? 0 : ww_open();
}

int sc_ww_reopen(void)
{
	/*
	 * The numbers are the checkpointed process's: never close them, the
	 * program may own them now, and no checkpoint may leave them out.
	 */
	sc_fds_own_remove(ww.uffd);
	sc_fds_own_remove(ww.pagemap);
	ww.uffd = ww.pagemap = -1;
	ww.err = 0;
	return ww_open();
}

int sc_ww_protect(void *p, size_t len, bool on)
{
	struct uffdio_writeprotect wp = { .range = { (uint64_t)(uintptr_t)p, len },
					  .mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0 };

	return ioctl(ww.uffd, UFFDIO_WRITEPROTECT, &wp) < 0 ? -errno : 0;
}

int sc_ww_watch(void *p, size_t len)
{
	struct uffdio_register reg = { .range = { (uint64_t)(uintptr_t)p, len },
				       .mode = UFFDIO_REGISTER_MODE_WP };

	if (ioctl(ww.uffd, UFFDIO_REGISTER, &reg) < 0)
		return -errno;
	return sc_ww_protect(p, len, true);
}

void sc_ww_unwatch(void *p, size_t len)
{
	struct uffdio_range r = { (uint64_t)(uintptr_t)p, len };

	ioctl(ww.uffd, UFFDIO_UNREGISTER, &r);
}

int sc_ww_take(void *p, size_t len, sc_ww_fn fn, void *arg)
{
	struct sc_page_region runs[WW_RUNS];
	uint64_t at = (uint64_t)(uintptr_t)p, end = at + len, walked;
	long n;
	int err = 0;

	while (at < end && !err) {
		if ((n = ww_scan(at, end, runs, &walked)) < 0)
			return (int)n;
		for (long i = 0; i < n && !err; i++)
			err = fn(arg, runs[i].start, runs[i].end);
		/* a full vector stops the walk early: go on from where it stopped */
		at = n == WW_RUNS && walked > at ? walked : end;
	}
	return err;
}
