/* SPDX-License-Identifier: MIT */
/*
 * The image set's directory and manifest (core/job_set.c, spec/image-set.md):
 * written and read back whole; refused, naming the file and the line, when
 * cut short, edited, out of order, or holding a pid twice.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/job_set.h"
#include "selfckpt.h"

static char dir[PATH_MAX];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/sc-set-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static const struct sc_set_member three[] = {
	{ .pid = 100, .ppid = 1, .pgid = 100, .sid = 90, .file = "sh.100.sckpt" },
	{ .pid = 101, .ppid = 100, .pgid = 100, .sid = 90, .file = "sort.101.sckpt" },
	{ .pid = 102, .ppid = 100, .pgid = 100, .sid = 90, .zombie = true, .status = 7 << 8 },
};

/* A set of @s committed in dir: its path into @path. */
static void commit(const struct sc_set *s, char *path, size_t size)
{
	char tmp[PATH_MAX], name[PATH_MAX];

	cr_assert_eq(sc_set_begin(dir, "sh", 100, tmp, sizeof(tmp)), 0);
	cr_assert_eq(sc_set_commit(dir, tmp, "sh", 100, s, name, sizeof(name)), 0);
	snprintf(path, size, "%s/%s", dir, name);
}

/* R-SET-1 R-SET-3 R-SET-4 R-SET-6: written, renamed into place, and read back the same. */
Test(job_set, a_manifest_is_read_back_as_written)
{
	struct sc_set s = { .m = (struct sc_set_member *)three, .n = 3 }, back;
	char path[PATH_MAX + 32];

	make_dir();
	commit(&s, path, sizeof(path));
	cr_assert(strstr(path, "/sh.100.1.tree"), "%s", path);
	cr_assert(sc_set_is_set(path));
	cr_assert_eq(sc_set_read(path, &back), 0, "%s", selfckpt_last_error());
	cr_assert_eq(back.n, 3);
	for (size_t i = 0; i < 3; i++) {
		cr_expect_eq(back.m[i].pid, three[i].pid);
		cr_expect_eq(back.m[i].ppid, three[i].ppid);
		cr_expect_eq(back.m[i].pgid, three[i].pgid);
		cr_expect_eq(back.m[i].sid, three[i].sid);
		cr_expect_eq(back.m[i].zombie, three[i].zombie);
		cr_expect_eq(back.m[i].status, three[i].status);
		cr_expect_str_eq(back.m[i].file, three[i].file);
	}
	sc_set_free(&back);
	/* R-SET-1: a second set of the job takes the next number, the first stays */
	commit(&s, path, sizeof(path));
	cr_assert(strstr(path, "/sh.100.2.tree"), "%s", path);
	remove_dir();
}

/* Write @text as the manifest of a set directory, and read it: the verdict. */
static int read_text(const char *text)
{
	char set[PATH_MAX + 16], m[PATH_MAX + 32];
	struct sc_set s;
	FILE *f;
	int err;

	snprintf(set, sizeof(set), "%s/x.tree", dir);
	mkdir(set, 0700);
	snprintf(m, sizeof(m), "%s/manifest", set);
	cr_assert_not_null(f = fopen(m, "w"));
	fputs(text, f);
	fclose(f);
	err = sc_set_read(set, &s);
	if (!err)
		sc_set_free(&s);
	return err;
}

/* The manifest of @body, ended as a writer ends it, into @out. */
static const char *ended(const char *body, int count, char *out, size_t size)
{
	snprintf(out, size, "%send %d %016llx\n", body, count,
		 (unsigned long long)XXH64(body, strlen(body), 0));
	return out;
}

/* R-SET-3 R-SET-5 R-SET-6: what a reader refuses, and how it says so. */
Test(job_set, damaged_manifests_are_refused_by_line)
{
	char text[1024];

	make_dir();
	cr_expect_eq(read_text(ended("selfckpt-tree 1\nprocess 5 1 5 5 a.5.sckpt\n", 1, text,
				     sizeof(text))), 0, "%s", selfckpt_last_error());
	cr_expect_eq(read_text("selfckpt-tree 2\n"), -SELFCKPT_EMAGIC);
	cr_expect_eq(read_text("selfckpt-tree 1\nprocess 5 1 5 5 a.5.sckpt\n"), -SELFCKPT_EHEADER);
	cr_expect(strstr(selfckpt_last_error(), "line 3"), "%s", selfckpt_last_error());
	cr_expect_eq(read_text("selfckpt-tree 1\nprocess 5 1 5 5 a.5.sckpt\n"
			       "end 1 0000000000000000\n"), -SELFCKPT_EFILESUM);
	cr_expect_eq(read_text(ended("selfckpt-tree 1\nprocess 5 1 5 5 a.5.sckpt\n", 2, text,
				     sizeof(text))), -SELFCKPT_EHEADER);
	cr_expect_eq(read_text(ended("selfckpt-tree 1\nprocess 5 1 5 5 ../a\n", 1, text,
				     sizeof(text))), -SELFCKPT_EHEADER);
	cr_expect_eq(read_text(ended("selfckpt-tree 1\nprocess 6 5 5 5 b.6.sckpt\n"
				     "process 5 1 5 5 a.5.sckpt\n", 2, text, sizeof(text))),
		     -SELFCKPT_EHEADER);
	cr_expect(strstr(selfckpt_last_error(), "before its parent"), "%s",
		  selfckpt_last_error());
	cr_expect_eq(read_text(ended("selfckpt-tree 1\nprocess 5 1 5 5 a.5.sckpt\n"
				     "zombie 5 5 5 5 0\n", 2, text, sizeof(text))),
		     -SELFCKPT_EHEADER);
	cr_expect(strstr(selfckpt_last_error(), "twice"), "%s", selfckpt_last_error());
	cr_expect_eq(read_text(ended("selfckpt-tree 1\nzombie 5 1 5 5 0\n", 1, text,
				     sizeof(text))), -SELFCKPT_EHEADER);
	remove_dir();
}

/* R-SET-10: the open file descriptions two processes hold, written and read back. */
Test(job_set, the_descriptions_of_shared_files_are_read_back_as_written)
{
	struct sc_set_open open[] = { { 100, 3, 1 }, { 101, 3, 1 }, { 101, 7, 2 }, { 100, 9, 2 } };
	struct sc_set s = { .m = (struct sc_set_member *)three, .n = 3, .files_exact = true,
			    .open = open, .n_open = 4 }, back;
	char path[PATH_MAX + 32];

	make_dir();
	commit(&s, path, sizeof(path));
	cr_assert_eq(sc_set_read(path, &back), 0, "%s", selfckpt_last_error());
	cr_assert(back.files_exact);
	cr_assert_eq(back.n_open, 4);
	for (size_t i = 0; i < 4; i++) {
		cr_expect_eq(back.open[i].pid, open[i].pid);
		cr_expect_eq(back.open[i].fd, open[i].fd);
		cr_expect_eq(back.open[i].desc, open[i].desc);
	}
	sc_set_free(&back);
	/* where kcmp() was refused: no files line, nothing known */
	s.files_exact = false;
	s.n_open = 0;
	commit(&s, path, sizeof(path));
	cr_assert_eq(sc_set_read(path, &back), 0, "%s", selfckpt_last_error());
	cr_expect_not(back.files_exact);
	cr_expect_eq(back.n_open, 0);
	sc_set_free(&back);
	remove_dir();
}

/* R-SET-10: an open line without its files line, of a zombie, or of no process of the set. */
Test(job_set, open_lines_that_name_no_process_of_the_set_are_refused)
{
	char text[1024];
	const char *head = "selfckpt-tree 1\nprocess 5 1 5 5 a.5.sckpt\nzombie 6 5 5 5 0\n";
	char body[512];

	make_dir();
	snprintf(body, sizeof(body), "%sfiles exact\nopen 5 3 1\n", head);
	cr_expect_eq(read_text(ended(body, 2, text, sizeof(text))), 0, "%s", selfckpt_last_error());
	snprintf(body, sizeof(body), "%sopen 5 3 1\n", head);
	cr_expect_eq(read_text(ended(body, 2, text, sizeof(text))), -SELFCKPT_EHEADER);
	snprintf(body, sizeof(body), "%sfiles exact\nopen 6 3 1\n", head);
	cr_expect_eq(read_text(ended(body, 2, text, sizeof(text))), -SELFCKPT_EHEADER);
	cr_expect(strstr(selfckpt_last_error(), "line 5"), "%s", selfckpt_last_error());
	snprintf(body, sizeof(body), "%sfiles exact\nopen 7 3 1\n", head);
	cr_expect_eq(read_text(ended(body, 2, text, sizeof(text))), -SELFCKPT_EHEADER);
	snprintf(body, sizeof(body), "%sfiles exact\nfiles exact\n", head);
	cr_expect_eq(read_text(ended(body, 2, text, sizeof(text))), -SELFCKPT_EHEADER);
	snprintf(body, sizeof(body), "%sfiles exact\nprocess 8 5 5 5 c.8.sckpt\n", head);
	cr_expect_eq(read_text(ended(body, 3, text, sizeof(text))), -SELFCKPT_EHEADER);
	remove_dir();
}
