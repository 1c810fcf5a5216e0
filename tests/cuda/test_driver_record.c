/* SPDX-License-Identifier: MIT */
/*
 * test_driver_record.c - the cuda-driver record (spec/image-format.md §9.12):
 * its meta read back as written, each broken meta refused with its error
 * (R-TYP-21), and selfckpt-inspect telling an image's CUDA mode from it.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda/shared/gpu_records.h"
#include "format/sc_format.h"
#include "selfckpt.h"

static const struct sc_cuda_driver sample = { .pid = 4242, .driver_version = 13000,
					      .threads = 4 };

Test(driver_record, meta_reads_back_as_written)
{
	uint8_t m[SC_CUDA_DRIVER_META];
	struct sc_cuda_driver d;

	sc_cuda_driver_encode(&sample, m);
	cr_assert_eq(sc_get_le32(m), 1, "record version 1 at offset 0");
	cr_assert_eq(sc_cuda_driver_decode(m, sizeof(m), &d), 0);
	cr_assert(d.pid == 4242 && d.driver_version == 13000 && d.threads == 4);
}

/* [R-TYP-21] each broken meta is refused with its own error */
Test(driver_record, broken_meta_refused_with_its_error)
{
	uint8_t m[SC_CUDA_DRIVER_META];
	struct sc_cuda_driver d;

	sc_cuda_driver_encode(&sample, m);
	cr_assert_eq(sc_cuda_driver_decode(m, sizeof(m) - 1, &d), -SELFCKPT_ELENGTH);
	sc_put_le32(m, 2);
	cr_assert_eq(sc_cuda_driver_decode(m, sizeof(m), &d), -SELFCKPT_EVERSION);
	sc_put_le32(m, 1);
	sc_put_le32(m + 4, 0);
	cr_assert_eq(sc_cuda_driver_decode(m, sizeof(m), &d), -SELFCKPT_ELENGTH);
	sc_put_le32(m + 4, (1u << 22) + 1);
	cr_assert_eq(sc_cuda_driver_decode(m, sizeof(m), &d), -SELFCKPT_ELENGTH);
	sc_put_le32(m + 4, 4242);
	m[SC_CUDA_DRIVER_META - 1] = 1;
	cr_assert_eq(sc_cuda_driver_decode(m, sizeof(m), &d), -SELFCKPT_ERESERVED);
}

/* An image of @n cuda-driver records (and nothing else) at @path, of record version @v. */
static void write_image_v(const char *path, int n, uint32_t v)
{
	uint8_t m[SC_CUDA_DRIVER_META];
	struct sc_write_opts o;
	struct sc_writer *w;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	cr_assert_geq(fd, 0);
	sc_write_opts_init(&o);
	o.threads = 1;
	sc_cuda_driver_encode(&sample, m);
	sc_put_le32(m, v);
	cr_assert_eq(sc_writer_new(&w, fd, path, &o), 0, "%s", selfckpt_last_error());
	for (int i = 0; i < n; i++)
		cr_assert_eq(sc_writer_record(w, SC_REC_CUDA_DRIVER, 0, m, sizeof(m), NULL, 0), 0,
			     "%s", selfckpt_last_error());
	cr_assert_eq(sc_writer_finish(w), 0, "%s", selfckpt_last_error());
	sc_writer_free(w);
	close(fd);
}

static void write_image(const char *path, int n)
{
	write_image_v(path, n, SC_CUDA_DRIVER_VERSION);
}

/* selfckpt-inspect [@opt] @path: its exit status, its standard output in @out. */
static int inspect(const char *opt, const char *path, char *out, size_t cap)
{
	const char *build = getenv("SELFCKPT_BUILD");
	char cmd[PATH_MAX * 2];
	FILE *p;
	size_t n;
	int st;

	snprintf(cmd, sizeof(cmd), "%s/bin/selfckpt-inspect %s %s 2>&1", build ? build : "build",
		 opt, path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

Test(driver_record, inspect_tells_the_driver_assisted_mode, .timeout = 30)
{
	char path[] = "/tmp/sc-driver-rec-XXXXXX", out[16384];

	cr_assert_geq(mkstemp(path), 0);
	write_image(path, 1);
	cr_assert_eq(inspect("", path, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "CUDA mode     driver-assisted (cuda-driver record 0): the CUDA "
			 "driver's process checkpoint of process 4242, driver API 13.0, 4 thread "
			 "names; a restart needs process id 4242"), "%s", out);
	cr_assert_eq(inspect("--json", path, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "\"cuda_mode\": \"driver\",") &&
		  strstr(out, "\"cuda_driver\": {\"record\": 0, \"pid\": 4242, \"driver_version\": "
			  "13000, \"threads\": 4},") && strstr(out, "\"cuda\": null,"), "%s", out);
	unlink(path);
}

/* [R-TYP-21] an image holds at most one cuda-driver record */
Test(driver_record, inspect_refuses_a_second_record, .timeout = 30)
{
	char path[] = "/tmp/sc-driver-rec-XXXXXX", out[16384];

	cr_assert_geq(mkstemp(path), 0);
	write_image(path, 2);
	cr_assert_eq(inspect("", path, out, sizeof(out)), 65, "%s", out);
	cr_assert(strstr(out, "has a second cuda-driver record (records 0 and 1)"), "%s", out);
	unlink(path);
}

/* [R-TYP-21] a record version other than 1 is refused, the record named */
Test(driver_record, inspect_refuses_another_record_version, .timeout = 30)
{
	char path[] = "/tmp/sc-driver-rec-XXXXXX", out[16384];

	cr_assert_geq(mkstemp(path), 0);
	write_image_v(path, 1, 2);
	cr_assert_eq(inspect("", path, out, sizeof(out)), 65, "%s", out);
	cr_assert(strstr(out, "cuda-driver record 0 of") &&
		  strstr(out, "has a version other than 1"), "%s", out);
	unlink(path);
}
