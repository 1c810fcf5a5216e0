/* SPDX-License-Identifier: MIT */
/*
 * More process round trips (the harness: tests/core/roundtrip_harness.c):
 *   - mappings: a shared file mapping, shared anonymous memory, a guard page
 *     and a read-only region, a 1 TiB sparse reservation (whose image must
 *     stay small), many small mappings;
 *   - threads blocked in read() and nanosleep(), with an alternate signal
 *     stack, and rseq in every thread (tests/progs/blocked.c);
 *   - the working directory, umask and resource limits, restored from
 *     another directory;
 *   - a checkpoint that fails keeps the previous image;
 * and the restores that must be refused without changing anything: another
 * kernel's vDSO, another architecture, a truncated image.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/sc_records.h"
#include "format/sc_format.h"
#include "tests/core/roundtrip_harness.h"

#define SMALL_IMAGE (64ull << 20)

static void expect_small_image(const char *image)
{
	struct stat st;

	cr_assert_eq(stat(image, &st), 0, "no image '%s': %s", image, strerror(errno));
	cr_assert_lt((uint64_t)st.st_size, SMALL_IMAGE,
		     "'%s' takes %lld bytes: the untouched pages of the reservation are stored",
		     image, (long long)st.st_size);
}

/* ---- mappings ---- */

/* Written through after the restore: the file holds the data, and a second restore finds it. */
Test(roundtrip, mappings_shared_file)
{
	roundtrip("mappings", (const char *[]){ "file", NULL });
}

Test(roundtrip, mappings_shared_anon)
{
	roundtrip("mappings", (const char *[]){ "anon", NULL });
}

Test(roundtrip, mappings_guard_readonly)
{
	roundtrip("mappings", (const char *[]){ "prot", NULL });
}

Test(roundtrip, mappings_sparse_1tib)
{
	roundtrip("mappings", (const char *[]){ "sparse", NULL });
	expect_small_image(in_base("ck/img.sckpt"));
	expect_small_image(in_base("ck/img.sckpt.2"));
}

/* Many small written mappings: each is staged on its own at the restore. */
Test(roundtrip, mappings_many_small)
{
	roundtrip("mappings", (const char *[]){ "many", NULL });
}

/* ---- threads and process-wide state ---- */

Test(roundtrip, threads_blocked_in_system_calls_go_on)
{
	roundtrip("blocked", NULL);
}

/* The program moves into its DIR; every process, the restorer too, starts in "/". */
Test(roundtrip, working_directory_umask_and_limits_come_back)
{
	run_cwd = "/";
	roundtrip("procstate", NULL);
}

/* ---- a failed checkpoint keeps the previous image ---- */

static uint64_t hash_file(const char *path)
{
	size_t len;
	char *b = read_file(path, &len);
	uint64_t h = XXH3_64bits(b, len);

	free(b);
	return h;
}

Test(roundtrip, a_failed_checkpoint_keeps_the_previous_image)
{
	const char *want = "the first save: ok\n"
			   "no shared mapping left by it: ok\n"
			   "the second save fails: ok\n"
			   "its message names the file: ok\n"
			   "the image is still the first one: ok\n"
			   "no temporary file left: ok\n"
			   "no shared mapping left by it: ok\n"
			   "both snapshots reaped, by a thread that ended: ok\n";
	const char *argv[MAX_ARGS], *rargv[] = { restorer(), NULL, NULL };
	char image[4096], listing[4096];
	struct run r;
	uint64_t h;
	FILE *ls;
	size_t n;

	cr_assert_eq(mkdir(in_base("img"), 0755), 0);
	snprintf(image, sizeof(image), "%s", in_base("img/a.sckpt"));
	prog_argv(argv, "failsave", image, in_base("ck"), NULL);
	run(argv, &r);
	expect_exit(&r, 0, "failsave");
	cr_assert_str_eq(r.out, want, "failsave's checks:\n%s\nstderr:\n%s", r.out, r.err);
	run_free(&r);
	h = hash_file(image);
	snprintf(listing, sizeof(listing), "ls -A '%s'", in_base("img"));
	ls = popen(listing, "r");
	cr_assert_not_null(ls);
	n = fread(listing, 1, sizeof(listing) - 1, ls);
	pclose(ls);
	listing[n] = '\0';
	cr_assert_str_eq(listing, "a.sckpt\n", "the image's directory holds more:\n%s", listing);

	rargv[1] = image;
	for (int i = 1; i <= 2; i++) {
		unlink(in_base("ck/snap.after1"));
		run(rargv, &r);
		expect_exit(&r, 0, "the restore of the first image");
		cr_assert_str_eq(r.out, "restored from the first image: ok\n",
				 "restore %d:\n%s\nstderr:\n%s", i, r.out, r.err);
		expect_same_snapshot(in_base("ck"), 1, "the restore of the first image");
		run_free(&r);
	}
	cr_assert_eq(hash_file(image), h, "restoring changed the image");
}

/* ---- refusals: images this machine cannot take, a truncated one ---- */

/* Checkpoint procstate into ck/img.sckpt; return the image's path. */
static const char *checkpoint_procstate(void)
{
	static char image[4096];
	const char *argv[MAX_ARGS];
	struct run r;

	snprintf(image, sizeof(image), "%s", in_base("ck/img.sckpt"));
	prog_argv(argv, "procstate", image, in_base("ck"), NULL);
	run(argv, &r);
	expect_killed(&r, "procstate's checkpoint");
	run_free(&r);
	return image;
}

/*
 * Copy image @from to @to record by record through the reader and the writer,
 * with @vdso_xor applied to the vDSO hash of the process record (offset 160
 * of its meta; core/records.c).
 */
static void rewrite_image(const char *from, const char *to, uint64_t vdso_xor)
{
	struct sc_read_opts ro = { .flags = SC_RD_ALL_RECORDS };
	const struct sc_header *h;
	struct sc_write_opts wo;
	struct sc_reader *rd;
	struct sc_writer *w;
	struct sc_record rec;
	int fd, err;

	cr_assert_eq(sc_reader_open(&rd, from, &ro), 0, "cannot read '%s'", from);
	h = sc_reader_header(rd);
	sc_write_opts_init(&wo);
	wo.created_ns = h->created_ns;
	wo.producer = h->producer;
	wo.kernel = h->kernel;
	fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "cannot create '%s': %s", to, strerror(errno));
	cr_assert_eq(sc_writer_new(&w, fd, to, &wo), 0);
	while ((err = sc_reader_next(rd, &rec)) == 1) {
		uint8_t *meta = malloc(rec.meta_len + 1), *payload = malloc(rec.raw_len + 1);

		cr_assert(meta && payload);
		memcpy(meta, rec.meta, rec.meta_len);
		if (rec.type == SC_REC_PROCESS) {
			cr_assert_geq(rec.meta_len, 168);
			sc_put_le64(meta + 160, sc_get_le64(meta + 160) ^ vdso_xor);
		}
		cr_assert_eq(rec.raw_len ? sc_reader_read(rd, payload, rec.raw_len) : 0, 0,
			     "cannot read record %u of '%s'", rec.seq, from);
		cr_assert_eq(sc_writer_record(w, rec.type, rec.flags, meta, rec.meta_len, payload,
					      rec.raw_len), 0, "cannot write record %u", rec.seq);
		free(meta);
		free(payload);
	}
	cr_assert_eq(err, 0, "cannot read '%s': %d", from, err);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	cr_assert_eq(close(fd), 0);
	sc_reader_free(rd);
}

/* Refused with @code naming @named; the image is left as it was. */
static void expect_refused_unchanged(const char *image, int code, const char *named,
				     const char *what)
{
	uint64_t h = hash_file(image);

	unlink(in_base("ck/snap.after1"));
	expect_refused(image, code, named, what);
	cr_assert_eq(hash_file(image), h, "%s: the image changed", what);
}

Test(roundtrip, refuses_other_vdso)
{
	const char *image = checkpoint_procstate();
	const char *copy = in_base("ck/copy.sckpt"), *other = in_base("ck/vdso.sckpt");
	const char *argv[] = { restorer(), copy, NULL };
	struct run r;

	/* the copy itself restores: only the hash makes the difference */
	rewrite_image(image, copy, 0);
	run(argv, &r);
	expect_exit(&r, 0, "the restore of a rewritten copy");
	cr_assert(r.out_len && !strstr(r.out, "FAILED"), "the rewritten copy:\n%s\n%s", r.out,
		  r.err);
	run_free(&r);
	rewrite_image(image, other, 0x5a5a5a5a5a5a5a5aull);
	expect_refused_unchanged(other, 69, "vDSO", "another kernel's vDSO");
}

Test(roundtrip, refuses_other_architecture)
{
	const char *image = checkpoint_procstate();
	const char *other = in_base("ck/arch.sckpt");
	size_t len;
	uint8_t *b = (uint8_t *)read_file(image, &len);
	int fd;

	cr_assert_gt(len, SC_HEADER_SIZE);
	cr_assert_eq(sc_get_le32(b + 16), SC_ARCH_X86_64);
	sc_put_le32(b + 16, 183); /* EM_AARCH64 */
	sc_put_le64(b + 136, XXH3_64bits(b, 136));
	fd = open(other, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, b, len), (ssize_t)len);
	close(fd);
	free(b);
	expect_refused_unchanged(other, 69, "architecture 183", "another architecture");
}

Test(roundtrip, refuses_truncated_image)
{
	const char *image = checkpoint_procstate();
	const char *cut = in_base("ck/cut.sckpt");
	size_t len;
	char *b = read_file(image, &len);
	int fd = open(cut, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, b, len / 2), (ssize_t)(len / 2));
	close(fd);
	free(b);
	expect_refused_unchanged(cut, 65, cut, "an image cut at half");
}
