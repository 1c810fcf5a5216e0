/* SPDX-License-Identifier: MIT */
/*
 * pagemap_scan.h - the kernel's PAGEMAP_SCAN ioctl and userfaultfd's
 * asynchronous write protection (Linux 6.7+), as in its
 * include/uapi/linux/fs.h and userfaultfd.h. Debian 12's headers predate
 * them, so they are spelled out here under our own names.
 */
#ifndef SC_PAGEMAP_SCAN_H
#define SC_PAGEMAP_SCAN_H

#include <stdint.h>
#include <sys/ioctl.h>

/* page categories */
#define SC_PAGE_IS_WRITTEN (1u << 1)
#define SC_PAGE_IS_FILE (1u << 2)
#define SC_PAGE_IS_PRESENT (1u << 3)
#define SC_PAGE_IS_SWAPPED (1u << 4)
#define SC_PAGE_IS_GUARD (1u << 8) /* Linux 6.15+; an earlier kernel refuses the bit */

/* scan flags */
#define SC_PM_SCAN_WP_MATCHING (1ull << 0)   /* protect the pages it reports, again */
#define SC_PM_SCAN_CHECK_WPASYNC (1ull << 1) /* refuse ranges not under async protection */

/* userfaultfd features */
#define SC_UFFD_USER_MODE_ONLY 1
#define SC_UFFD_FEATURE_WP_UNPOPULATED (1ull << 13)
#define SC_UFFD_FEATURE_WP_ASYNC (1ull << 15)

struct sc_page_region {
	uint64_t start, end; /* [start, end) */
	uint64_t categories; /* SC_PAGE_IS_* */
};

struct sc_pm_scan_arg {
	uint64_t size;
	uint64_t flags;
	uint64_t start;
	uint64_t end;
	uint64_t walk_end; /* set by the kernel: where the walk stopped */
	uint64_t vec;
	uint64_t vec_len;
	uint64_t max_pages;
	uint64_t category_inverted;
	uint64_t category_mask;
	uint64_t category_anyof_mask;
	uint64_t return_mask;
};

#define SC_PAGEMAP_SCAN _IOWR('f', 16, struct sc_pm_scan_arg)

_Static_assert(sizeof(struct sc_pm_scan_arg) == 96, "struct pm_scan_arg is 96 bytes");
_Static_assert(sizeof(struct sc_page_region) == 24, "struct page_region is 24 bytes");
_Static_assert(SC_PAGEMAP_SCAN == 0xc0606610, "PAGEMAP_SCAN is _IOWR('f', 16, 96 bytes)");

#endif /* SC_PAGEMAP_SCAN_H */
