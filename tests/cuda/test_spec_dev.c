/* SPDX-License-Identifier: MIT */
/*
 * test_spec_dev.c - the CUDA records of the image format (spec §9.8 cuda-log,
 * §9.9 devmem): each requirement's check in the decoder, in selfckpt-inspect and
 * in selfckpt-restore, and what a checkpoint of a CUDA program on the software
 * device (tests/softcuda) writes and a restart does with it.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/shared/gpu_records.h"
#include "cuda/tools/module_info.h"
#include "format/sc_format.h"
#include "format/sc_log.h"
#include "selfckpt.h"
#include "tests/core/roundtrip_harness.h"

/* A module of the software device: PTX for sm_80, its global in a comment. */
#define SOFT_MODULE ".version 8.0\n.target sm_80\n// softcuda global counter 4\n"
#define Z_BYTES (64ull << 20) /* cuda_state's allocation that stays zero */

static void quiet(void)
{
	sc_log_set_level(SC_LOG_NONE);
}

TestSuite(spec_dev, .init = quiet);

/* A record as a reader hands it out: this meta, this payload length. */
static struct sc_record devmem_rec(const uint8_t *meta, uint64_t raw_len)
{
	return (struct sc_record){ .type = SC_REC_DEVMEM, .flags = SC_RF_REQUIRED,
				   .meta = meta, .meta_len = SC_DEVMEM_META, .raw_len = raw_len };
}

static void devmem_meta(uint8_t *m, uint32_t kind, uint64_t len, uint64_t offset)
{
	memset(m, 0, SC_DEVMEM_META);
	sc_put_le64(m, 0x302000000ull);
	sc_put_le64(m + 8, len);
	sc_put_le32(m + 16, kind);
	sc_put_le32(m + 20, 1);
	sc_put_le64(m + 24, offset);
}

/* [R-DEV-1] kinds 0 to 3 only; an offset only for rows of an array (kind 3) */
Test(spec_dev, devmem_kind_and_offset)
{
	static const struct {
		uint32_t kind;
		uint64_t offset;
		int err;
	} cases[] = {
		{ SC_DEVMEM_DEVICE, 0, 0 },     { SC_DEVMEM_GLOBAL, 0, 0 },
		{ SC_DEVMEM_HOST, 0, 0 },       { SC_DEVMEM_ARRAY, 0, 0 },
		{ SC_DEVMEM_ARRAY, 4096, 0 },   { 4, 0, -SELFCKPT_EUNKNOWN },
		{ 0xffffffffu, 0, -SELFCKPT_EUNKNOWN },
		{ SC_DEVMEM_DEVICE, 8, -SELFCKPT_ERESERVED },
		{ SC_DEVMEM_GLOBAL, 1ull << 63, -SELFCKPT_ERESERVED },
		{ SC_DEVMEM_HOST, 4096, -SELFCKPT_ERESERVED },
	};
	uint8_t m[SC_DEVMEM_META];
	struct sc_devmem d;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sc_record rec = devmem_rec(m, 256);

		devmem_meta(m, cases[i].kind, 256, cases[i].offset);
		cr_assert_eq(sc_devmem_decode(m, sizeof(m), &d), cases[i].err, "case %zu", i);
		cr_assert_eq(sc_devmem_read(&rec, false, &d), cases[i].err, "case %zu", i);
		if (cases[i].err)
			continue;
		cr_assert_eq(d.addr, 0x302000000ull);
		cr_assert_eq(d.len, 256);
		cr_assert_eq(d.kind, cases[i].kind);
		cr_assert_eq(d.dev, 1);
		cr_assert_eq(d.offset, cases[i].offset);
	}
}

/* [R-DEV-2] the payload is the piece's bytes: raw_len is its length */
Test(spec_dev, devmem_raw_len_is_the_length)
{
	uint8_t m[SC_DEVMEM_META];
	struct sc_devmem d;

	devmem_meta(m, SC_DEVMEM_DEVICE, 4096, 0);
	for (uint64_t raw = 0; raw <= 8192; raw += 1024) {
		struct sc_record rec = devmem_rec(m, raw);

		cr_assert_eq(sc_devmem_read(&rec, false, &d), raw == 4096 ? 0 : -SELFCKPT_ELENGTH,
			     "raw_len %llu for a length of 4096", (unsigned long long)raw);
	}
	/* a meta of another size is no devmem meta of this version */
	cr_assert_eq(sc_devmem_decode(m, SC_DEVMEM_META - 1, &d), -SELFCKPT_ELENGTH);
}

/*
 * [R-INC-6] the wide fixed part of an incremental image: flags at 32, bit 0 a
 * parent piece with no payload, of device memory, in an incremental image
 * only; the other bits and the u32 at 36 reserved; a 32-byte part has no flags
 */
Test(spec_dev, a_parent_piece_has_no_bytes_and_only_an_incremental_image_has_one)
{
	static const struct {
		uint32_t kind, flags, reserved;
		uint64_t raw_len;
		bool incremental;
		int err;
	} cases[] = {
		{ SC_DEVMEM_DEVICE, 1, 0, 0, true, 0 },
		{ SC_DEVMEM_DEVICE, 0, 0, 4096, true, 0 },
		{ SC_DEVMEM_DEVICE, 0, 0, 4096, false, 0 },
		{ SC_DEVMEM_DEVICE, 1, 0, 0, false, -SELFCKPT_ELENGTH },
		{ SC_DEVMEM_DEVICE, 1, 0, 4096, true, -SELFCKPT_ELENGTH },
		{ SC_DEVMEM_DEVICE, 0, 0, 0, true, -SELFCKPT_ELENGTH },
		{ SC_DEVMEM_HOST, 1, 0, 0, true, -SELFCKPT_ELENGTH },
		{ SC_DEVMEM_GLOBAL, 1, 0, 0, true, -SELFCKPT_ELENGTH },
		{ SC_DEVMEM_DEVICE, 2, 0, 4096, true, -SELFCKPT_ERESERVED },
		{ SC_DEVMEM_DEVICE, 1u << 31, 0, 0, true, -SELFCKPT_ERESERVED },
		{ SC_DEVMEM_DEVICE, 0, 1, 4096, true, -SELFCKPT_ERESERVED },
	};
	uint8_t m[SC_DEVMEM_META_WIDE];
	struct sc_devmem d;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sc_record rec = devmem_rec(m, cases[i].raw_len);

		rec.meta_len = SC_DEVMEM_META_WIDE;
		devmem_meta(m, cases[i].kind, 4096, 0);
		sc_put_le32(m + 32, cases[i].flags);
		sc_put_le32(m + 36, cases[i].reserved);
		cr_assert_eq(sc_devmem_read(&rec, cases[i].incremental, &d), cases[i].err,
			     "case %zu", i);
		if (!cases[i].err)
			cr_assert_eq(d.flags, cases[i].flags, "case %zu", i);
	}
	/* the 1.6 part reads as no flags, and the writer writes what it is asked */
	devmem_meta(m, SC_DEVMEM_DEVICE, 4096, 0);
	cr_assert_eq(sc_devmem_decode(m, SC_DEVMEM_META, &d), 0);
	cr_assert_eq(d.flags, 0);
	cr_assert_eq(sc_devmem_decode(m, SC_DEVMEM_META + 4, &d), -SELFCKPT_ELENGTH);
	d.flags = SC_DEVMEM_PARENT;
	cr_assert_eq(sc_devmem_encode(m, &d, true), SC_DEVMEM_META_WIDE);
	cr_assert_eq(sc_get_le32(m + 32), SC_DEVMEM_PARENT);
	cr_assert_eq(sc_get_le32(m + 36), 0);
	d.flags = 0;
	cr_assert_eq(sc_devmem_encode(m, &d, false), SC_DEVMEM_META);
}

/* ---- images for the tools ---- */

struct rec {
	uint32_t type;
	const void *meta, *payload;
	uint32_t meta_len;
	uint64_t raw_len;
};

/* An image of @recs at @path, written by the image writer. */
static void write_image(const char *path, const struct rec *recs, size_t n)
{
	struct sc_write_opts o;
	struct sc_writer *w;
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "cannot create %s", path);
	sc_write_opts_init(&o);
	o.threads = 1;
	cr_assert_eq(sc_writer_new(&w, fileno(f), path, &o), 0);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(sc_writer_record(w, recs[i].type, SC_RF_REQUIRED, recs[i].meta,
					      recs[i].meta_len, recs[i].payload, recs[i].raw_len),
			     0, "%s", selfckpt_last_error());
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	cr_assert_eq(fclose(f), 0);
}

static const char *inspect_path(void)
{
	static char path[4096];
	const char *build = getenv("SELFCKPT_BUILD");

	snprintf(path, sizeof(path), "%s/bin/selfckpt-inspect", build && *build ? build : "build");
	cr_assert_eq(access(path, X_OK), 0, "no selfckpt-inspect at '%s'", path);
	return path;
}

/* selfckpt-inspect on @image exits @code; on failure its message names @named. */
static void expect_inspect(const char *image, int code, const char *named)
{
	const char *argv[] = { inspect_path(), image, NULL };
	struct run r;

	run(argv, &r);
	expect_exit(&r, code, image);
	cr_assert(!named || strstr(r.err, named), "the message does not name '%s':\n%s", named,
		  r.err);
	run_free(&r);
}

/*
 * [R-DEV-1] [R-DEV-2] A devmem record of an unknown kind, with an offset where
 * none belongs, or whose payload is not its length, makes selfckpt-inspect fail
 * (65: the image is corrupt) and selfckpt-restore refuse before anything
 * changes (65, nothing of the program runs); a good one is listed.
 */
Test(roundtrip, devmem_damage_refused_by_the_tools)
{
	static uint8_t bytes[4096];
	static const struct {
		uint32_t kind;
		uint64_t len, offset, raw_len;
		const char *named;
	} cases[] = {
		{ 4, 4096, 0, 4096, "unknown required record or flag" },
		{ SC_DEVMEM_DEVICE, 4096, 512, 4096, "reserved field is not zero" },
		{ SC_DEVMEM_HOST, 4096, 0, 1024, "length or offset out of bounds" },
		{ SC_DEVMEM_ARRAY, 4096, 0, 4097, "length or offset out of bounds" },
	};
	uint8_t m[SC_DEVMEM_META];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *img = in_base("ck/devmem-%zu.sckpt", i);
		struct rec rec = { SC_REC_DEVMEM, m, bytes, sizeof(m), cases[i].raw_len };
		char named[256];

		devmem_meta(m, cases[i].kind, cases[i].len, cases[i].offset);
		write_image(img, &rec, 1);
		snprintf(named, sizeof(named), "devmem record 0 of '%s' has damaged metadata", img);
		expect_inspect(img, 65, named);
		expect_inspect(img, 65, cases[i].named);
		expect_refused(img, 65, named, "a damaged devmem record");
		expect_refused(img, 65, cases[i].named, "a damaged devmem record");
	}
	devmem_meta(m, SC_DEVMEM_ARRAY, 4096, 8192);
	write_image(in_base("ck/devmem-good.sckpt"),
		    &(struct rec){ SC_REC_DEVMEM, m, bytes, sizeof(m), 4096 }, 1);
	expect_inspect(in_base("ck/devmem-good.sckpt"), 0, NULL);
}

/* ---- cuda-log (§9.8) ---- */

struct module {
	uint32_t kind, reserved;
	uint64_t len;         /* as the header says */
	const char *image;    /* strlen(image) bytes follow the header */
	uint8_t pad;          /* the value of the padding bytes */
};

/* The payload of a cuda-log record holding @mods, into @p; its length. */
static size_t log_payload(uint8_t *p, const struct module *mods, size_t n)
{
	size_t at = 0;

	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(mods[i].image);

		memset(p + at, 0, SC_CUDA_IMAGE_HEADER);
		sc_put_le32(p + at, mods[i].kind);
		sc_put_le32(p + at + 4, mods[i].reserved);
		sc_put_le64(p + at + 8, mods[i].len);
		at += SC_CUDA_IMAGE_HEADER;
		memcpy(p + at, mods[i].image, len);
		memset(p + at + len, mods[i].pad, sc_cuda_pad8(len) - len);
		at += sc_cuda_pad8(len);
	}
	return at;
}

/* Read the cuda-log record of an image holding @meta and @payload (@len bytes). */
static int read_log(const uint8_t *meta, uint32_t meta_len, const uint8_t *payload, size_t len,
		    struct sc_cuda_log *log)
{
	struct sc_read_opts o = { .threads = 1 };
	char path[] = "/tmp/sc-spec-dev-XXXXXX";
	struct sc_reader *r;
	struct sc_record rec;
	int fd = mkstemp(path), err;

	cr_assert_geq(fd, 0);
	close(fd);
	write_image(path, &(struct rec){ SC_REC_CUDA_LOG, meta, payload, meta_len, len }, 1);
	cr_assert_eq(sc_reader_open(&r, path, &o), 0, "%s", selfckpt_last_error());
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	err = sc_cuda_log_read(r, &rec, log);
	sc_reader_free(r);
	unlink(path);
	return err;
}

static void log_meta(uint8_t *m, uint32_t modules)
{
	struct sc_cuda_summary s = { .modules = modules, .device_bytes = 4u << 20, .blocks = 1,
				     .channel = 0x7f0000000000ull };

	sc_cuda_summary_encode(&s, m);
}

/* [R-TYP-10] a well-formed log: its summary and every module, module or library */
Test(spec_dev, cuda_log_reads_its_modules)
{
	const struct module mods[] = {
		{ 0, 0, sizeof(SOFT_MODULE) - 1, SOFT_MODULE, 0 },
		{ 1, 0, 5, "bytes", 0 },
	};
	uint8_t meta[SC_CUDA_LOG_META], p[256];
	size_t len = log_payload(p, mods, 2);
	struct sc_cuda_log log;

	log_meta(meta, 2);
	cr_assert_eq(read_log(meta, sizeof(meta), p, len, &log), 0, "%s", selfckpt_last_error());
	cr_assert_eq(log.sum.version, SC_CUDA_LOG_VERSION);
	cr_assert_eq(log.sum.modules, 2);
	cr_assert_eq(log.sum.device_bytes, 4u << 20);
	cr_assert_eq(log.sum.blocks, 1);
	cr_assert_eq(log.sum.channel, 0x7f0000000000ull);
	cr_assert_eq(log.mods_n, 2);
	cr_assert(!log.mods[0].library && log.mods[1].library);
	cr_assert_eq(log.mods[0].len, sizeof(SOFT_MODULE) - 1);
	cr_assert_eq(log.mods[0].info.format, SC_MODULE_PTX);
	cr_assert_eq(log.mods[0].info.archs_n, 1);
	cr_assert_eq(log.mods[0].info.archs[0].code, SC_CODE_PTX);
	cr_assert_eq(log.mods[0].info.archs[0].major * 10 + log.mods[0].info.archs[0].minor, 80);
	cr_assert_eq(log.mods[1].len, 5);
	cr_assert_eq(log.mods[1].info.format, SC_MODULE_UNKNOWN);
	sc_cuda_log_release(&log);
}

/*
 * [R-TYP-10] log version other than 1: SELFCKPT_EVERSION; reserved fields of the
 * summary or of a module header: SELFCKPT_ERESERVED; a module kind other than 0
 * or 1: SELFCKPT_EUNKNOWN; modules that do not fill the payload exactly, or an
 * image that runs past it: SELFCKPT_ELENGTH
 */
Test(spec_dev, cuda_log_checks)
{
	static const struct {
		int meta_at;     /* byte of the summary changed, or -1 */
		uint8_t meta_to;
		uint32_t kind, reserved;
		uint64_t len;    /* of the second module, as its header says */
		uint32_t modules;
		size_t extra;    /* bytes after the last module */
		int err;
	} cases[] = {
		{ 0, 2, 0, 0, 5, 2, 0, -SELFCKPT_EVERSION },
		{ 3, 1, 0, 0, 5, 2, 0, -SELFCKPT_EVERSION },
		{ 28, 1, 0, 0, 5, 2, 0, -SELFCKPT_ERESERVED },
		{ 40, 1, 0, 0, 5, 2, 0, -SELFCKPT_ERESERVED },
		{ 63, 0x80, 0, 0, 5, 2, 0, -SELFCKPT_ERESERVED },
		{ -1, 0, 2, 0, 5, 2, 0, -SELFCKPT_EUNKNOWN },
		{ -1, 0, 0xffffffffu, 0, 5, 2, 0, -SELFCKPT_EUNKNOWN },
		{ -1, 0, 0, 1, 5, 2, 0, -SELFCKPT_ERESERVED },
		{ -1, 0, 0, 0, 5, 2, 8, -SELFCKPT_ELENGTH },     /* 8 bytes left over */
		{ -1, 0, 0, 0, 5, 1, 0, -SELFCKPT_ELENGTH },     /* a module not counted */
		{ -1, 0, 0, 0, 5, 3, 0, -SELFCKPT_ELENGTH },     /* a module missing */
		{ -1, 0, 0, 0, 9, 2, 0, -SELFCKPT_ELENGTH },     /* image past the payload */
		{ -1, 0, 0, 0, 1ull << 63, 2, 0, -SELFCKPT_ELENGTH },
		{ -1, 0, 0, 0, 5, 0xffffffffu, 0, -SELFCKPT_ELENGTH },
		{ -1, 0, 0, 0, 5, 2, 0, 0 },
	};
	uint8_t meta[SC_CUDA_LOG_META], p[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct module mods[] = {
			{ 0, 0, sizeof(SOFT_MODULE) - 1, SOFT_MODULE, 0 },
			{ cases[i].kind, cases[i].reserved, cases[i].len, "bytes", 0 },
		};
		size_t len = log_payload(p, mods, 2);
		struct sc_cuda_log log;
		int err;

		memset(p + len, 0, cases[i].extra);
		log_meta(meta, cases[i].modules);
		if (cases[i].meta_at >= 0)
			meta[cases[i].meta_at] = cases[i].meta_to;
		err = read_log(meta, sizeof(meta), p, len + cases[i].extra, &log);
		cr_assert_eq(err, cases[i].err, "case %zu: %d (%s)", i, err, selfckpt_last_error());
		if (err)
			cr_assert(strstr(selfckpt_last_error(),
					 "cuda-log record 0 of '/tmp/sc-spec"),
				  "case %zu: %s", i, selfckpt_last_error());
		else
			sc_cuda_log_release(&log);
	}
	/* a summary of another size */
	log_meta(meta, 0);
	cr_assert_eq(read_log(meta, sizeof(meta) - 1, p, 0, &(struct sc_cuda_log){ 0 }),
		     -SELFCKPT_ELENGTH);
}

/* ---- what a checkpoint writes and a restart does (the software device) ---- */

static char kernels[4096];

/* The proxy and the device it loads come from the build under test. */
static void use_software_device(void)
{
	const char *build = getenv("SELFCKPT_BUILD") ? getenv("SELFCKPT_BUILD") : "build";
	char path[4096];

	snprintf(path, sizeof(path), "%s/tests/libsoftcuda.so.1", build);
	cr_assert(realpath(path, kernels), "no software device at %s: run make test-progs", path);
	setenv("SELFCKPT_LIBCUDA", kernels, 1);
	snprintf(path, sizeof(path), "%s/bin/selfckpt-gpu-proxy", build);
	cr_assert(realpath(path, kernels), "no GPU proxy at %s", path);
	setenv("SELFCKPT_PROXY", kernels, 1);
	snprintf(path, sizeof(path), "%s/tests/progs/libcuda-kernels.so", build);
	cr_assert(realpath(path, kernels), "no kernel library at %s", path);
	unsetenv("SOFTCUDA_GLOBAL_SHIFT");
	unsetenv("SOFTCUDA_FAIL");
}

/* cuda_state checkpoints itself into ck/img.sckpt; the address of its zero allocation. */
static uint64_t checkpoint_cuda_state(void)
{
	const char *argv[MAX_ARGS];
	unsigned long long a, b, z, counter;
	const char *line;
	struct run r;

	prog_argv(argv, "cuda_state", in_base("ck/img.sckpt"), in_base("ck"),
		  (const char *[]){ kernels, NULL });
	run(argv, &r);
	expect_killed(&r, "cuda_state checkpoint");
	line = strstr(r.out, "pointers ");
	cr_assert(line && sscanf(line, "pointers %llx %llx %llx %llx", &a, &b, &z, &counter) == 4,
		  "no pointers in the output of cuda_state:\n%s", r.out);
	run_free(&r);
	return z;
}

/* What the devmem records of ck/img.sckpt hold, and the cuda-log summary. */
struct devmem_seen {
	size_t records, kinds[4];
	uint64_t device_bytes, covered_z; /* kind 0 bytes; of them, inside [z, z + Z_BYTES) */
	struct sc_cuda_summary sum;
};

static void take_devmem(const struct sc_record *rec, uint64_t z, struct devmem_seen *s)
{
	struct sc_devmem d;
	uint64_t lo, hi;

	cr_assert_eq(sc_devmem_read(rec, false, &d), 0, "devmem record %u", rec->seq);
	cr_assert(d.kind <= SC_DEVMEM_ARRAY);
	cr_assert(d.kind == SC_DEVMEM_ARRAY || d.offset == 0);
	s->records++;
	s->kinds[d.kind]++;
	if (d.kind != SC_DEVMEM_DEVICE)
		return;
	s->device_bytes += d.len;
	lo = d.addr > z ? d.addr : z;
	hi = d.addr + d.len < z + Z_BYTES ? d.addr + d.len : z + Z_BYTES;
	s->covered_z += hi > lo ? hi - lo : 0;
}

static void read_devmem(uint64_t z, struct devmem_seen *s)
{
	struct sc_read_opts o = { .threads = 1 };
	struct sc_reader *r;
	struct sc_record rec;
	int ret;

	memset(s, 0, sizeof(*s));
	cr_assert_eq(sc_reader_open(&r, in_base("ck/img.sckpt"), &o), 0, "%s",
		     selfckpt_last_error());
	while ((ret = sc_reader_next(r, &rec)) == 1) {
		if (rec.type == SC_REC_DEVMEM)
			take_devmem(&rec, z, s);
		else if (rec.type == SC_REC_CUDA_LOG)
			cr_assert_eq(sc_cuda_summary_decode(rec.meta, rec.meta_len, &s->sum), 0);
	}
	cr_assert_eq(ret, 0, "%s", selfckpt_last_error());
	sc_reader_free(r);
}

/*
 * [R-DEV-3] [R-DEV-1] [R-DEV-2] cuda_state's 64 MiB allocation that stays zero is
 * in no devmem record: the checkpoint leaves it out, though the arena had it
 * mapped; the records it writes are of the kinds and sizes the format allows.
 * At the restart every arena block is cleared, and the clear waited for, before
 * the records fill it: the first memsets of the restarted GPU proxy, one per
 * block, are the clears (the first or the last failing fails the restart before
 * the program runs; the one after them is not the restart's), and the restored
 * program reads its 64 MiB as zeros while the data the records hold comes back.
 */
Test(roundtrip, cuda_zero_memory_is_left_out_then_cleared)
{
	const char *argv[] = { restorer(), in_base("ck/img.sckpt"), NULL };
	struct devmem_seen seen;
	char fail[64];
	struct run r;
	uint64_t z;

	use_software_device();
	z = checkpoint_cuda_state();
	read_devmem(z, &seen);
	cr_assert_eq(seen.covered_z, 0, "%llu bytes of the zero allocation are in the image",
		     (unsigned long long)seen.covered_z);
	cr_assert_geq(seen.sum.device_bytes, seen.device_bytes + Z_BYTES,
		      "the arena had %llu bytes mapped, the image holds %llu",
		      (unsigned long long)seen.sum.device_bytes,
		      (unsigned long long)seen.device_bytes);
	cr_assert(seen.kinds[SC_DEVMEM_DEVICE] && seen.kinds[SC_DEVMEM_GLOBAL] &&
		  seen.kinds[SC_DEVMEM_HOST] && seen.kinds[SC_DEVMEM_ARRAY],
		  "cuda_state has memory of every kind");
	cr_assert_geq(seen.sum.blocks, 2);

	setenv("SOFTCUDA_FAIL", "cuMemsetD8Async:1", 1);
	expect_refused(in_base("ck/img.sckpt"), 69, "clearing device memory", "first clear");
	snprintf(fail, sizeof(fail), "cuMemsetD8Async:%u", seen.sum.blocks);
	setenv("SOFTCUDA_FAIL", fail, 1);
	expect_refused(in_base("ck/img.sckpt"), 69, "clearing device memory", "last clear");
	/* the next one is no clear: the program runs */
	snprintf(fail, sizeof(fail), "cuMemsetD8Async:%u", seen.sum.blocks + 1);
	setenv("SOFTCUDA_FAIL", fail, 1);
	run(argv, &r);
	unsetenv("SOFTCUDA_FAIL");
	expect_exit(&r, 0, "the restored cuda_state");
	cr_assert(strstr(r.out, "64 MiB of zeros: ok"), "%s", r.out);
	cr_assert(strstr(r.out, "its old bytes are not in the image: ok"), "%s", r.out);
	cr_assert_null(strstr(r.out, "FAILED"), "%s", r.out);
	run_free(&r);
}
