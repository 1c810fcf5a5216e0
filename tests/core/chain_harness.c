/* SPDX-License-Identifier: MIT */
/*
 * chain_harness.c - chains of incremental images made by tests/progs/lineage,
 * for the tests of the chain (test_incremental.c) and of its merge
 * (test_merge.c); see chain_harness.h.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/sc_format.h"
#include "tests/core/chain_harness.h"
#include "tests/core/roundtrip_harness.h"

char *save_rounds(const char *setting, int rounds, const char *how)
{
	char n[16];
	const char *argv[] = { prog_path("lineage"), in_base("ck"), n, how, NULL };
	struct run r;
	char *out;

	snprintf(n, sizeof(n), "%d", rounds);
	setenv("SELFCKPT_INCREMENTAL", setting, 1);
	run(argv, &r);
	unsetenv("SELFCKPT_INCREMENTAL");
	expect_exit(&r, 0, "lineage");
	out = strdup(r.out);
	run_free(&r);
	return out;
}

void expect_restores(const char *saved, int k, const char *image)
{
	const char *argv[] = { restorer(), image, NULL };
	char want[64], line[64];
	const char *at;
	struct run r;

	snprintf(want, sizeof(want), "saved %d ", k);
	at = strstr(saved, want);
	cr_assert(at, "no '%s' in the output of the saving run:\n%s", want, saved);
	snprintf(line, sizeof(line), "restored %d %.16s\n", k, at + strlen(want));
	run(argv, &r);
	expect_exit(&r, 0, image);
	cr_assert_str_eq(r.out, line, "%s comes back with another memory:\n%s", image, r.err);
	run_free(&r);
}

const char *image(int k)
{
	return in_base("ck/img.%d.sckpt", k);
}

bool incremental(const char *path)
{
	struct sc_reader *r;
	bool yes;

	cr_assert_eq(sc_reader_open(&r, path, NULL), 0, "cannot read %s", path);
	yes = sc_reader_header(r)->flags & SC_HF_INCREMENTAL;
	sc_reader_free(r);
	return yes;
}

off_t size_of(const char *path)
{
	struct stat st;

	cr_assert_eq(stat(path, &st), 0, "%s is missing", path);
	return st.st_size;
}

void expect_no_temporary(void)
{
	DIR *d = opendir(in_base("ck"));
	struct dirent *e;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		cr_assert_null(strstr(e->d_name, "selfckpt-tmp"), "'%s' is left", e->d_name);
	closedir(d);
}
