/* SPDX-License-Identifier: MIT */
/*
 * test_build.c - what the build promises.
 *
 * The layering check (tests/check-layering.sh) names every include that
 * crosses the layering, and passes a tree that keeps it.
 *
 * The build where CUDA's header is not (CUDA_HOME=/nonexistent),
 * as on an embedded board or in a CPU container: `make` builds the process
 * library and the tools, says once that it leaves the CUDA part out, exports
 * no cu* entry point and builds no GPU proxy; and those tools checkpoint and
 * restore a program. The build is made from this tree into a folder of the
 * test's own, as a user would make it (none of `make test`'s settings).
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cli/trip.h"

#define NOTICE "building without CUDA support"

/* @path under @root, with @text. */
static void put(const char *root, const char *path, const char *text)
{
	char full[PATH_MAX], cmd[2 * PATH_MAX];
	FILE *f;

	snprintf(full, sizeof(full), "%s/%s", root, path);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", full);
	cr_assert_eq(system(cmd), 0);
	cr_assert_not_null(f = fopen(full, "w"), "%s", full);
	fputs(text, f);
	fclose(f);
}

/* tests/check-layering.sh on @root with three modules, low <- mid <- top/sub; its stderr in @err. */
static int check_layering(const char *root, char *err)
{
	char cmd[2 * PATH_MAX], log[PATH_MAX];
	int status;

	snprintf(log, sizeof(log), "%s.err", root);
	snprintf(cmd, sizeof(cmd), "sh tests/check-layering.sh '%s' 'top/sub=low mid top/sub' "
		 "'top=low top' 'mid=low mid' 'low=low' 2> '%s'", root, log);
	status = system(cmd);
	slurp(log, err);
	unlink(log);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(build, the_layering_check_names_each_include_across_the_layers)
{
	char root[] = "/tmp/sc-layering-XXXXXX", err[OUT_MAX], cmd[PATH_MAX];

	cr_assert_not_null(mkdtemp(root));
	put(root, "low/low.h", "int low(void);\n");
	put(root, "mid/mid.c", "#include \"low/low.h\"\n#include \"mid/mid.h\"\n");
	put(root, "mid/mid.h", "#include <stdio.h>\n#include \"selfckpt.h\"\n");
	put(root, "top/sub/s.c", "#include \"mid/mid.h\"\n");
	put(root, "top/t.c", "#include \"low/low.h\"\n");
	cr_expect_eq(check_layering(root, err), 0, "a tree that keeps the layering: %s", err);

	/* up a layer, into a sibling's folder, and into no module at all */
	put(root, "low/bad.c", "int x;\n#include \"mid/mid.h\"\n");
	put(root, "top/t.c", "#include \"low/low.h\"\n  # include \"top/sub/s.h\"\n");
	put(root, "mid/m2.c", "#include \"tests/helper.h\"\n");
	cr_expect_eq(check_layering(root, err), 1, "%s", err);
	cr_expect(strstr(err, "low/bad.c:2: includes \"mid/mid.h\"; low may include only from: low"),
		  "%s", err);
	cr_expect(strstr(err, "top/t.c:2: includes \"top/sub/s.h\"; top may include only from: "
			 "low top"), "%s", err);
	cr_expect(strstr(err, "mid/m2.c:1: includes \"tests/helper.h\""), "%s", err);
	cr_expect_not(strstr(err, "top/t.c:1"), "%s", err);
	cr_expect_not(strstr(err, "mid/mid.c"), "%s", err);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_expect_eq(system(cmd), 0);
}

static void cpu_only_build(const char *build, const char *log)
{
	char cwd[PATH_MAX], cmd[5 * PATH_MAX];

	cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
	cr_assert_eq(access("Makefile", R_OK), 0, "the tests run from the source tree, not '%s'",
		     cwd);
	/*
	 * The sub-make must not inherit `make test`'s variables (SAN=1, BUILD):
	 * make passes those of its command line down in MAKEFLAGS and in the
	 * environment.
	 */
	snprintf(cmd, sizeof(cmd), "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES "
		 "-u SAN -u BUILD -u WITH_CUDA -u CUDA_INCLUDE make -C '%s' -j2 "
		 "--no-print-directory SAN= BUILD='%s' CUDA_HOME=/nonexistent all "
		 "'%s/tests/progs/sigblock' > '%s' 2>&1", cwd, build, build, log);
	cr_assert_eq(system(cmd), 0, "the build without CUDA failed: see '%s'", log);
}

static unsigned count(const char *text, const char *what)
{
	unsigned n = 0;

	for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static bool exported_cu_functions(const char *lib)
{
	char cmd[PATH_MAX + 64], line[512];
	bool any = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s'", lib);
	cr_assert_not_null(p = popen(cmd, "r"));
	while (fgets(line, sizeof(line), p))
		any |= strstr(line, " T cu") != NULL;
	cr_assert_eq(pclose(p), 0, "nm could not read '%s'", lib);
	return any;
}

Test(build, builds_without_cuda_h_and_its_tools_restore_a_program, .timeout = 900)
{
	char dir[] = "/tmp/sc-cpu-only-XXXXXX", build[PATH_MAX], log[PATH_MAX], path[PATH_MAX];
	char text[OUT_MAX], prog_path[PATH_MAX], ref[OUT_MAX];
	const char *prog[2] = { prog_path, NULL };
	struct trip t;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(build, sizeof(build), "%s/build", dir);
	snprintf(log, sizeof(log), "%s/make.log", dir);
	cpu_only_build(build, log);
	slurp(log, text);
	cr_expect_eq(count(text, NOTICE), 1, "the build says once that CUDA is left out: %s",
		     text);
	setenv("SELFCKPT_BUILD", build, 1);
	cr_expect_neq(access(build_path(path, "bin/selfckpt-gpu-proxy"), F_OK), 0, "%s", path);
	cr_expect_neq(access(build_path(path, "bin/selfckpt-driver-ckpt"), F_OK), 0, "%s", path);
	cr_assert_eq(access(build_path(path, "bin/selfckpt-inspect"), X_OK), 0, "%s", path);
	cr_assert_eq(access(build_path(path, "bin/selfckpt-merge"), X_OK), 0, "%s", path);
	cr_expect_not(exported_cu_functions(build_path(path, "lib/libselfckpt.so.1")),
		      "a library without CUDA exports no Driver API entry point");

	build_path(prog_path, "tests/progs/sigblock");
	trip_init(&t);
	reference(&t, prog, ref);
	round_trip(&t, prog, ref, 500);
	snprintf(text, sizeof(text), "rm -rf '%s'", dir);
	cr_expect_eq(system(text), 0);
}
