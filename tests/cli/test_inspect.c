/* SPDX-License-Identifier: MIT */
/*
 * test_inspect.c - selfckpt-inspect, run as a program: its output and its
 * documented exit codes (0, 64, 65, 66).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compress/sc_compress.h"
#include "format/sc_format.h"
#include "selfckpt.h"

#define OUT_MAX (1u << 20)
#define SEG_LEN (3u << 20)
#define OPT_TYPE 0x8001 /* an optional type this version does not know */
#define PROCESS_META 184 /* the fixed part of a process record (spec 9.3) */

struct image {
	char path[64];
	uint32_t meta_len; /* of the first record, which starts right after the header */
};

static char out[OUT_MAX], err[OUT_MAX]; /* the last run's stdout and stderr */

static const char *tool_path(void)
{
	static char path[1024];
	const char *build = getenv("SELFCKPT_BUILD");

	snprintf(path, sizeof(path), "%s/bin/selfckpt-inspect", build ? build : "build");
	return path;
}

/* process, segment (3 MiB, compressible), an unknown optional record; stored raw if @store. */
static void make_image(struct image *img, bool store, const char *producer)
{
	static const uint8_t process_meta[PROCESS_META] = { 0 }; /* pid 0, no cwd, exe, limits */
	static uint8_t seg[SEG_LEN];
	struct sc_write_opts o;
	struct sc_writer *w;
	int fd;

	strcpy(img->path, "/tmp/sc-inspect-XXXXXX");
	fd = mkstemp(img->path);
	cr_assert_geq(fd, 0);
	for (size_t i = 0; i < sizeof(seg); i++)
		seg[i] = (uint8_t)(i * 7 / 4096);
	sc_write_opts_init(&o);
	o.threads = 2;
	o.created_ns = 1700000000ull * 1000000000ull;
	o.producer = producer;
	if (store)
		o.level = SC_LEVEL_STORE;
	img->meta_len = sizeof(process_meta);
	cr_assert_eq(sc_writer_new(&w, fd, img->path, &o), 0);
	/* a payload that a reader of this version skips (R-TYP-6) */
	cr_assert_eq(sc_writer_record(w, SC_REC_PROCESS, SC_RF_REQUIRED, process_meta,
				      sizeof(process_meta), "hello", 5), 0);
	cr_assert_eq(sc_writer_record(w, SC_REC_SEGMENT, SC_RF_REQUIRED, NULL, 0, seg, SEG_LEN), 0);
	cr_assert_eq(sc_writer_record(w, OPT_TYPE, 0, "x", 1, "opt", 3), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	close(fd);
}

static int temp_file(void)
{
	char tmp[] = "/tmp/sc-inspect-out-XXXXXX";
	int fd = mkstemp(tmp);

	cr_assert_geq(fd, 0);
	unlink(tmp);
	return fd;
}

static void slurp(int fd, char *buf, size_t cap)
{
	ssize_t n = pread(fd, buf, cap - 1, 0);

	cr_assert_geq(n, 0);
	buf[n] = '\0';
	close(fd);
}

/*
 * Run the tool with @argv (NULL-terminated, without the program name), standard
 * input from @in (NULL: /dev/null); its standard output lands in out[], its
 * standard error in err[].
 * Return: the exit status, or -1 when it did not exit normally.
 */
static int run(const char *in, const char *const *argv)
{
	const char *args[16] = { tool_path() };
	int fd_out = temp_file(), fd_err = temp_file(), status;
	pid_t pid;

	for (int i = 0; argv[i]; i++)
		args[i + 1] = argv[i];
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd_in = open(in ? in : "/dev/null", O_RDONLY);

		if (fd_in < 0 || dup2(fd_in, 0) < 0 || dup2(fd_out, 1) < 0 || dup2(fd_err, 2) < 0)
			_exit(127);
		execv(args[0], (char *const *)args);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	slurp(fd_out, out, sizeof(out));
	slurp(fd_err, err, sizeof(err));
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Was exactly one error reported, one line naming @what? */
static bool one_error(const char *what)
{
	const char *prefix = "selfckpt-inspect: error: ";
	const char *nl = strchr(err, '\n');

	return !strncmp(err, prefix, strlen(prefix)) && nl && !nl[1] && strstr(err, what) &&
	       strstr(err, what) < nl;
}

#define RUN(in, ...) run(in, (const char *const[]){ __VA_ARGS__, NULL })

/* Does out[] parse as one JSON document? */
static bool json_parses(void)
{
	char tmp[] = "/tmp/sc-inspect-json-XXXXXX", cmd[256];
	int fd = mkstemp(tmp);
	size_t len = strlen(out);
	int rc;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, out, len), (ssize_t)len);
	close(fd);
	snprintf(cmd, sizeof(cmd), "python3 -c 'import json,sys; json.load(sys.stdin)' < %s", tmp);
	rc = system(cmd);
	unlink(tmp);
	return rc == 0;
}

static void flip_byte(const char *path, off_t off)
{
	int fd = open(path, O_RDWR);
	uint8_t b;

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &b, 1, off), 1);
	b ^= 0x40;
	cr_assert_eq(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

Test(cli, summary_lists_types_with_sizes, .timeout = 30)
{
	struct image img;

	make_image(&img, false, NULL);
	cr_assert_eq(RUN(NULL, img.path), 0, "%s", out);
	cr_expect(strstr(out, "architecture  x86-64"), "%s", out);
	cr_expect(strstr(out, "created       2023-11-14T22:13:20Z"), "%s", out);
	cr_expect(strstr(out, "producer      selfckpt " SELFCKPT_VERSION_STRING), "%s", out);
	cr_expect(strstr(out, "process"), "%s", out);
	cr_expect(strstr(out, "segment                   1     3.00 MiB"), "%s", out);
	cr_expect(strstr(out, "unknown 0x8001            1          3 B"), "%s", out);
	cr_expect(strstr(out, "end (index)               1        120 B"), "%s", out);
	cr_expect(strstr(out, "total                     4"), "%s", out);
	cr_expect(strstr(out, "file size"), "%s", out);
	cr_expect_null(strstr(out, "verified"), "%s", out);
	unlink(img.path);
}

Test(cli, json_parses_and_has_schema_version, .timeout = 30)
{
	struct image img;
	struct stat st;
	char size[64];

	make_image(&img, false, "we\"ird\\ \x01\t\xff name");
	cr_assert_eq(stat(img.path, &st), 0);
	cr_assert_eq(RUN(NULL, "--json", img.path), 0, "%s", out);
	cr_expect(strstr(out, "\"schema_version\": 1"), "%s", out);
	cr_expect(strstr(out, "\"producer\": \"we\\\"ird\\\\ \\u0001\\t\\ufffd name\""),
		  "%s", out);
	cr_expect(strstr(out, "\"type_name\": \"end\""), "%s", out);
	cr_expect(strstr(out, "\"type\": 32769, \"type_name\": null"), "%s", out);
	snprintf(size, sizeof(size), "\"file_size\": %lld", (long long)st.st_size);
	cr_expect(strstr(out, size), "%s", out);
	cr_expect(strstr(out, "\"verified\": false"), "%s", out);
	cr_expect(json_parses(), "%s", out);
	unlink(img.path);
}

Test(cli, verify_good_image, .timeout = 30)
{
	struct image img;

	make_image(&img, false, NULL);
	cr_assert_eq(RUN(NULL, "--verify", "--threads", "2", img.path), 0, "%s", out);
	cr_expect(strstr(out, "verified: every checksum matches"), "%s", out);
	cr_assert_eq(RUN(NULL, "--verify", "--json", img.path), 0, "%s", out);
	cr_expect(strstr(out, "\"verified\": true"), "%s", out);
	cr_expect(json_parses(), "%s", out);
	unlink(img.path);
}

Test(cli, missing_file_is_noinput)
{
	cr_assert_eq(RUN(NULL, "/nonexistent/image.sckpt"), 66);
	cr_assert_eq(out[0], '\0');
	cr_expect(one_error("'/nonexistent/image.sckpt'"), "%s", err);
}

Test(cli, directory_is_noinput)
{
	cr_assert_eq(RUN(NULL, "/tmp"), 66);
	cr_expect(one_error("directory"), "%s", err);
	cr_assert_eq(RUN("/tmp", "-"), 66);
	cr_expect(one_error("directory"), "%s", err);
}

Test(cli, wrong_magic_is_dataerr, .timeout = 30)
{
	struct image img;

	make_image(&img, false, NULL);
	flip_byte(img.path, 1);
	cr_assert_eq(RUN(NULL, img.path), 65);
	cr_assert_eq(out[0], '\0', "%s", out);
	cr_expect(one_error("magic"), "%s", err);
	cr_assert_eq(RUN(img.path, "-"), 65);
	cr_expect(one_error("magic"), "%s", err);
	unlink(img.path);
}

Test(cli, corrupt_chunk_is_dataerr_with_verify, .timeout = 30)
{
	struct image img;
	off_t payload;

	make_image(&img, true, NULL);
	payload = SC_HEADER_SIZE + SC_RECORD_HEADER_SIZE + img.meta_len + SC_CHUNK_HEADER_SIZE;
	flip_byte(img.path, payload + 2); /* "hello": a raw chunk, as stored */
	cr_assert_eq(RUN(NULL, img.path), 0, "without --verify chunks are not read");
	cr_assert_eq(RUN(NULL, "--verify", img.path), 65);
	cr_expect(one_error("checksum mismatch"), "%s", err);
	cr_assert_eq(RUN(img.path, "-"), 65, "a stream checks every chunk");
	cr_expect(one_error("checksum mismatch"), "%s", err);
	unlink(img.path);
}

Test(cli, truncated_image_is_dataerr, .timeout = 30)
{
	struct image img;
	struct stat st;

	make_image(&img, false, NULL);
	cr_assert_eq(stat(img.path, &st), 0);
	cr_assert_eq(truncate(img.path, st.st_size - 100), 0);
	cr_assert_eq(RUN(NULL, img.path), 65);
	cr_expect(one_error("truncated"), "%s", err);
	cr_assert_eq(RUN(img.path, "-"), 65);
	cr_expect(one_error("'<stdin>'"), "%s", err);
	unlink(img.path);
}

Test(cli, bad_usage_is_usage)
{
	cr_assert_eq(RUN(NULL, "--no-such-option", "x"), 64);
	cr_expect(strstr(err, "Try 'selfckpt-inspect --help'."), "%s", err);
	cr_assert_eq(RUN(NULL, "--threads"), 64);
	cr_assert_eq(RUN(NULL, "--threads", "many", "x"), 64);
	cr_assert_eq(RUN(NULL, "a", "b"), 64);
	cr_assert_eq(run(NULL, (const char *const[]){ NULL }), 64);
}

Test(cli, help_and_version)
{
	cr_assert_eq(RUN(NULL, "--help"), 0);
	cr_expect(strstr(out, "Usage: selfckpt-inspect"), "%s", out);
	cr_expect(strstr(out, "65"), "%s", out);
	cr_assert_eq(RUN(NULL, "--version"), 0);
	cr_expect_str_eq(out, "selfckpt-inspect " SELFCKPT_VERSION_STRING "\n");
}

Test(cli, standard_input_is_read_as_a_stream, .timeout = 30)
{
	struct image img;
	static char text[OUT_MAX];
	char cmd[1200];
	FILE *p;
	size_t n;

	make_image(&img, false, NULL);
	cr_assert_eq(RUN(NULL, img.path), 0, "%s", out);
	strcpy(text, strstr(out, "type "));
	cr_assert_eq(RUN(img.path, "-"), 0, "%s", out);
	cr_expect(strstr(out, "file          (standard input)"), "%s", out);
	cr_expect(strstr(out, "verified: every checksum matches"), "%s", out);
	*strstr(out, "verified:") = '\0';
	cr_expect_str_eq(strstr(out, "type "), text, "a stream reports the same sizes");

	/* through a pipe, which cannot seek */
	snprintf(cmd, sizeof(cmd), "cat %s | %s --json -", img.path, tool_path());
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	cr_assert_eq(pclose(p), 0, "%s", out);
	cr_expect(strstr(out, "\"file\": \"-\""), "%s", out);
	cr_expect(strstr(out, "\"verified\": true"), "%s", out);
	cr_expect(json_parses(), "%s", out);
	unlink(img.path);
}
