/* SPDX-License-Identifier: MIT */
/*
 * test_vmflags.c - the memory settings a fork loses, on this very process:
 * sc_vmflags_read() finds a MADV_DONTFORK and a locked mapping with their
 * bounds; sc_vmflags_fork_whole() lets a fork copy the MADV_DONTFORK one
 * (a child sees its memory) and sc_vmflags_fork_back() sets it again; a range
 * that was unmapped and mapped anew between the read and the freeze is left
 * alone, and marks the table stale, so that the image is refused (R-SEG-6).
 */
#include <criterion/criterion.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/vmflags.h"

static long page;
static char *area;

/* Three pages; the middle one MADV_DONTFORK, so a mapping of its own. */
static void setup(void)
{
	page = sysconf(_SC_PAGESIZE);
	area = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(area, MAP_FAILED);
	area[page] = 'x';
	cr_assert_eq(madvise(area + page, page, MADV_DONTFORK), 0);
}

TestSuite(vmflags, .init = setup);

/* The settings of the mapping holding @at, as smaps shows them now. */
static uint32_t bits_at(const char *at)
{
	struct sc_vmflags all;
	const struct sc_vmf_range *r;
	uint32_t bits;

	cr_assert_eq(sc_vmflags_read(0, ~0u, &all), 0);
	r = sc_vmflags_find(&all, (uint64_t)at);
	cr_assert_not_null(r, "no mapping at %p", (void *)at);
	bits = r->bits;
	sc_vmflags_free(&all);
	return bits;
}

/* Does a child forked now see the middle page, and its byte? */
static bool child_sees_middle(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		unsigned char vec;

		_exit(mincore(area + page, page, &vec) == 0 && area[page] == 'x' ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

Test(vmflags, a_dontfork_mapping_forks_whole_for_the_snapshot_then_gets_its_setting_back)
{
	struct sc_vmflags v;
	const struct sc_vmf_range *r;

	/* the system call itself: the sanitizers' mlock() does nothing */
	cr_assert_eq(syscall(SYS_mlock, area + 2 * page, page), 0);
	cr_assert_eq(sc_vmflags_read(0, SC_VMF_FORK_LOST, &v), 0);
	r = sc_vmflags_find(&v, (uint64_t)(area + page));
	cr_assert(r && r->start == (uint64_t)(area + page) && r->end == r->start + page);
	cr_assert(r->bits & SC_VMF_DONTFORK);
	r = sc_vmflags_find(&v, (uint64_t)(area + 2 * page));
	cr_assert(r && (r->bits & SC_VMF_LOCKED), "the locked page is not listed");
	cr_assert_null(sc_vmflags_find(&v, (uint64_t)area), "a page with no such setting is");
	cr_assert(!child_sees_middle());
	sc_vmflags_fork_whole(&v);
	cr_assert(!v.stale);
	cr_assert(child_sees_middle(), "a fork does not copy the MADV_DONTFORK mapping");
	sc_vmflags_fork_back(&v);
	cr_assert(!child_sees_middle());
	cr_assert(bits_at(area + page) & SC_VMF_DONTFORK);
	sc_vmflags_free(&v);
}

Test(vmflags, a_range_mapped_anew_before_the_freeze_is_left_alone_and_marks_the_table_stale)
{
	struct sc_vmflags v;

	cr_assert_eq(sc_vmflags_read(0, SC_VMF_FORK_LOST, &v), 0);
	cr_assert_not_null(sc_vmflags_find(&v, (uint64_t)(area + page)));
	/* the program unmaps it and maps something else there, all one mapping */
	cr_assert_eq(mmap(area, 3 * page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), area);
	sc_vmflags_fork_whole(&v);
	cr_assert(v.stale, "the table does not say that a range changed");
	sc_vmflags_fork_back(&v);
	cr_assert_eq(bits_at(area + page) & SC_VMF_DONTFORK, 0u,
		     "the new mapping got a setting that was not its own");
	sc_vmflags_free(&v);
}
