/* SPDX-License-Identifier: MIT */
/*
 * test_module_info.c - what a CUDA module image holds (cuda/tools/module_info.h):
 * formats, architectures, kernels and the compatibility rules, on images nvcc
 * made (tests/cuda/fixtures; skipped without nvcc) and on texts written here;
 * and truncated, bit-flipped and garbage images, which must fail cleanly
 * (make test SAN=1 runs this under AddressSanitizer).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/tools/module_info.h"

#define FIXTURE_MAX (4u << 20)

struct fixture {
	uint8_t *bytes;
	size_t len;
};

/* An image of tests/cuda/fixtures, or the test is skipped. */
static struct fixture load(const char *name)
{
	const char *build = getenv("SELFCKPT_BUILD");
	struct fixture f = { malloc(FIXTURE_MAX), 0 };
	char path[4096];
	FILE *file;

	snprintf(path, sizeof(path), "%s/tests/fixtures/%s", build ? build : "build", name);
	if (!(file = fopen(path, "rb"))) {
		free(f.bytes);
		cr_skip_test("no %s: nvcc made no fixtures (make test-progs with the CUDA toolkit)",
			     path);
	}
	cr_assert_not_null(f.bytes);
	f.len = fread(f.bytes, 1, FIXTURE_MAX, file);
	fclose(file);
	cr_assert_gt(f.len, 0);
	return f;
}

static void describe(const void *img, size_t len, struct sc_module_info *m)
{
	int err = sc_module_info(img, len, m);

	cr_assert_eq(err, 0, "sc_module_info: %d (%s)", err, selfckpt_last_error());
}

static const char *archs(const struct sc_module_info *m)
{
	static char buf[512];

	return sc_module_archs_text(m, buf, sizeof(buf));
}

static bool has_kernel(const struct sc_module_info *m, const char *name)
{
	for (size_t i = 0; i < m->kernels_n; i++)
		if (!strcmp(m->kernels[i], name))
			return true;
	return false;
}

static bool runs(const struct sc_module_info *m, int major, int minor)
{
	char why[512];
	bool ok = sc_module_runs_on(m, major, minor, why, sizeof(why));

	cr_assert(ok || strstr(why, "no code for compute capability"), "%s", why);
	return ok;
}

/* vec_add, scale and count (C++: _Z5counti), and nothing else. */
static void expect_fixture_kernels(const struct sc_module_info *m)
{
	cr_expect_eq(m->kernels_n, 3, "%zu kernels", m->kernels_n);
	cr_expect(has_kernel(m, "vec_add"));
	cr_expect(has_kernel(m, "scale"));
	cr_expect(has_kernel(m, "_Z5counti"));
	cr_expect_not(has_kernel(m, "twice"), "a device function listed as a kernel");
	cr_expect_not(m->kernels_partial);
}

/* ---- images nvcc made ---- */

Test(module_info, cubin_sm90)
{
	struct fixture f = load("kernels_sm90.cubin");
	struct sc_module_info m;

	describe(f.bytes, f.len, &m);
	cr_expect_eq(m.format, SC_MODULE_CUBIN);
	cr_expect_str_eq(archs(&m), "sm_90 (SASS)");
	expect_fixture_kernels(&m);
	cr_expect(runs(&m, 9, 0));
	cr_expect_not(runs(&m, 8, 9), "SASS for 9.0 on an older device");
	cr_expect_not(runs(&m, 10, 0), "SASS for 9.0 on another major version");
	sc_module_info_release(&m);
	free(f.bytes);
}

Test(module_info, cubin_arch_specific)
{
	struct fixture f = load("kernels_sm90a.cubin");
	struct sc_module_info m;

	describe(f.bytes, f.len, &m);
	cr_expect_str_eq(archs(&m), "sm_90a (SASS)");
	cr_expect(runs(&m, 9, 0));
	cr_expect_not(runs(&m, 9, 1), "sm_90a runs on 9.0 only");
	cr_expect_not(runs(&m, 10, 0));
	sc_module_info_release(&m);
	free(f.bytes);
}

Test(module_info, fatbin)
{
	struct fixture f = load("kernels.fatbin");
	struct sc_module_info m;

	describe(f.bytes, f.len, &m);
	cr_expect_eq(m.format, SC_MODULE_FATBIN);
	cr_expect_str_eq(archs(&m), "sm_80 (SASS), sm_90 (SASS), compute_90 (PTX)");
	expect_fixture_kernels(&m);
	cr_expect(runs(&m, 8, 0));
	cr_expect(runs(&m, 8, 6), "sm_80 SASS on 8.6");
	cr_expect(runs(&m, 9, 0));
	cr_expect(runs(&m, 12, 0), "compute_90 PTX compiled for 12.0");
	cr_expect_not(runs(&m, 7, 5));
	sc_module_info_release(&m);
	free(f.bytes);
}

/* Compressed entries (zstd since CUDA 12.8) are decompressed for their kernels. */
Test(module_info, fatbin_compressed)
{
	struct fixture f = load("kernels_zstd.fatbin");
	struct sc_module_info m;

	describe(f.bytes, f.len, &m);
	cr_expect_str_eq(archs(&m), "sm_90 (SASS), compute_90 (PTX)");
	for (size_t i = 0; i < m.archs_n; i++)
		cr_expect(m.archs[i].compressed, "entry %zu not marked compressed", i);
	if (!m.kernels_partial) /* an older nvcc compresses in a way not read here */
		expect_fixture_kernels(&m);
	sc_module_info_release(&m);
	free(f.bytes);
}

Test(module_info, ptx)
{
	struct fixture f = load("kernels.ptx");
	struct sc_module_info m;

	describe(f.bytes, f.len, &m);
	cr_expect_eq(m.format, SC_MODULE_PTX);
	cr_expect_str_eq(archs(&m), "compute_90 (PTX)");
	expect_fixture_kernels(&m);
	cr_expect(runs(&m, 9, 0));
	cr_expect(runs(&m, 10, 3));
	cr_expect_not(runs(&m, 8, 9));
	sc_module_info_release(&m);
	free(f.bytes);
}

/* [R-SAFE-1] Every cut of a cubin or fatbin is refused; of PTX, read as far as it goes. */
static void sweep_truncations(const char *name, bool all_refused)
{
	struct fixture f = load(name);

	for (size_t len = 0; len < f.len; len++) {
		uint8_t *cut = malloc(len ? len : 1);
		struct sc_module_info m;
		int err;

		memcpy(cut, f.bytes, len);
		err = sc_module_info(cut, len, &m);
		if (len >= 4 && all_refused)
			cr_assert_eq(err, -SELFCKPT_ELENGTH, "%s cut at %zu: %d", name, len, err);
		else
			cr_assert(err == 0 || err == -SELFCKPT_ELENGTH, "%s cut at %zu", name, len);
		if (!err)
			sc_module_info_release(&m);
		free(cut);
	}
	free(f.bytes);
}

Test(module_info, truncated_cubin_refused, .timeout = 60)
{
	sweep_truncations("kernels_sm90.cubin", true);
}

Test(module_info, truncated_fatbin_refused, .timeout = 60)
{
	sweep_truncations("kernels.fatbin", true);
	sweep_truncations("kernels_zstd.fatbin", true);
}

Test(module_info, truncated_ptx_read, .timeout = 60)
{
	sweep_truncations("kernels.ptx", false);
}

/* Random bit flips: described or refused, never a read out of bounds. */
static void sweep_flips(const char *name)
{
	struct fixture f = load(name);
	uint8_t *img = malloc(f.len);
	unsigned seed = 12345;

	for (int round = 0; round < 3000; round++) {
		struct sc_module_info m;
		int err;

		memcpy(img, f.bytes, f.len);
		for (int k = 0; k < 1 + round % 4; k++) {
			seed = seed * 1103515245u + 12345u;
			img[(seed >> 8) % f.len] ^= (uint8_t)(1u << (seed >> 4) % 8);
		}
		err = sc_module_info(img, f.len, &m);
		cr_assert(err == 0 || err == -SELFCKPT_ELENGTH, "%s round %d: %d", name, round,
			  err);
		if (!err) {
			char why[256];

			sc_module_runs_on(&m, 9, 0, why, sizeof(why));
			sc_module_info_release(&m);
		}
	}
	free(img);
	free(f.bytes);
}

Test(module_info, flipped_bits, .timeout = 120)
{
	sweep_flips("kernels_sm90.cubin");
	sweep_flips("kernels.fatbin");
	sweep_flips("kernels_zstd.fatbin");
}

/* ---- texts written here ---- */

static const char ptx_text[] =
	"//\n// Generated by hand\n//\n.version 8.0\n.target sm_86, texmode_independent\n"
	".address_size 64\n\n"
	"// .entry in_a_comment(\n/* .entry in_a_block_comment( */\n"
	".visible .entry first(\n\t.param .u64 first_param_0\n)\n{\n\tret;\n}\n"
	".entry second()\n{\n\tret;\n}\n";

Test(module_info, ptx_text)
{
	struct sc_module_info m;

	describe(ptx_text, sizeof(ptx_text), &m);
	cr_expect_eq(m.format, SC_MODULE_PTX);
	cr_expect_str_eq(archs(&m), "compute_86 (PTX)");
	cr_expect_eq(m.kernels_n, 2);
	cr_expect(has_kernel(&m, "first") && has_kernel(&m, "second"));
	cr_expect(runs(&m, 8, 6) && runs(&m, 8, 9) && runs(&m, 9, 0));
	cr_expect_not(runs(&m, 8, 0));
	sc_module_info_release(&m);
}

/* The length bounds the text even without its NUL. */
Test(module_info, ptx_without_nul)
{
	const char *text = ".version 8.0\n.target sm_90a\n.entry cut_here_x()\n";
	size_t len = strstr(text, "_x") - text;
	char *img = malloc(len);
	struct sc_module_info m;

	memcpy(img, text, len);
	describe(img, len, &m);
	cr_expect_str_eq(archs(&m), "compute_90a (PTX)");
	cr_expect_eq(m.kernels_n, 1);
	cr_expect(has_kernel(&m, "cut_here"));
	cr_expect(runs(&m, 9, 0));
	cr_expect_not(runs(&m, 10, 0), "compute_90a runs on 9.0 only");
	sc_module_info_release(&m);
	free(img);
}

/* The software device's modules are PTX: its kernels are .entry lines, the rest comments. */
Test(module_info, software_device_module_is_ptx)
{
	static const char text[] = ".version 8.0\n// the tests' kernels\n.target sm_80\r\n"
				   "// softcuda library /lib/k.so\n.entry vec_add (8, 8, 8, 4)\n"
				   ".entry add_to (8, 4)\n// softcuda global counter 4\n";
	struct sc_module_info m;

	describe(text, sizeof(text), &m);
	cr_expect_eq(m.format, SC_MODULE_PTX);
	cr_expect_str_eq(archs(&m), "compute_80 (PTX)");
	cr_expect_eq(m.kernels_n, 2);
	cr_expect(has_kernel(&m, "vec_add") && has_kernel(&m, "add_to"));
	cr_expect(runs(&m, 8, 0) && runs(&m, 9, 0), "PTX: its target or newer");
	cr_expect_not(runs(&m, 7, 5));
	sc_module_info_release(&m);
}

Test(module_info, ptx_without_target_runs_but_says_why)
{
	static const char text[] = ".version 8.0\n// softcuda global a 4\n";
	struct sc_module_info m;
	char why[128];

	describe(text, sizeof(text) - 1, &m);
	cr_expect_eq(m.format, SC_MODULE_PTX);
	cr_expect_eq(m.archs_n, 0);
	cr_expect(sc_module_runs_on(&m, 3, 0, why, sizeof(why)), "not certainly refused");
	cr_expect_str_eq(why, "no architecture found in the module");
	sc_module_info_release(&m);
}

Test(module_info, unknown_bytes)
{
	static const uint8_t junk[] = { 0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3 };
	struct sc_module_info m;
	char why[128];

	describe(junk, sizeof(junk), &m);
	cr_expect_eq(m.format, SC_MODULE_UNKNOWN);
	cr_expect(sc_module_runs_on(&m, 9, 0, why, sizeof(why)), "unknown is not refused");
	cr_expect(strstr(why, "not known"), "%s", why);
	sc_module_info_release(&m);
	describe(junk, 0, &m);
	cr_expect_eq(m.format, SC_MODULE_UNKNOWN);
	sc_module_info_release(&m);
}

/* ---- damaged containers ---- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)v);
	put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

/* A fatbin of one PTX entry (sm_86) holding @ptx, uncompressed. */
static size_t make_fatbin(uint8_t *buf, const char *ptx)
{
	size_t n = strlen(ptx) + 1, padded = (n + 7) & ~(size_t)7;

	memset(buf, 0, 16 + 64 + padded);
	put32(buf, 0xBA55ED50u);
	put16(buf + 4, 1);
	put16(buf + 6, 16);
	put64(buf + 8, 64 + padded);
	put16(buf + 16, 1);          /* PTX */
	put32(buf + 16 + 4, 64);     /* header size */
	put64(buf + 16 + 8, padded); /* payload */
	put32(buf + 16 + 28, 86);    /* sm_86 */
	put64(buf + 16 + 40, 0x11);  /* 64-bit, Linux */
	memcpy(buf + 16 + 64, ptx, n);
	return 16 + 64 + padded;
}

Test(module_info, handmade_fatbin)
{
	uint8_t buf[512];
	size_t len = make_fatbin(buf, ".version 8.0\n.target sm_86\n.entry k()\n{\n}\n");
	struct sc_module_info m;

	describe(buf, len, &m);
	cr_expect_eq(m.format, SC_MODULE_FATBIN);
	cr_expect_str_eq(archs(&m), "compute_86 (PTX)");
	cr_expect(has_kernel(&m, "k"));
	sc_module_info_release(&m);
}

static void expect_refused(const uint8_t *img, size_t len, const char *what)
{
	struct sc_module_info m;
	int err = sc_module_info(img, len, &m);

	cr_expect_eq(err, -SELFCKPT_ELENGTH, "%s: %d", what, err);
	cr_expect(strstr(selfckpt_last_error(), what), "'%s' lacks '%s'", selfckpt_last_error(),
		  what);
	if (!err)
		sc_module_info_release(&m);
}

Test(module_info, damaged_fatbins_refused)
{
	uint8_t buf[512];
	size_t len = make_fatbin(buf, ".target sm_86\n");

	put64(buf + 8, UINT64_MAX - 8); /* entries larger than anything */
	expect_refused(buf, len, "does not fit");
	len = make_fatbin(buf, ".target sm_86\n");
	put32(buf + 16 + 4, UINT32_MAX); /* an entry header larger than the fatbin */
	expect_refused(buf, len, "do not fit");
	len = make_fatbin(buf, ".target sm_86\n");
	put64(buf + 16 + 8, UINT64_MAX); /* a payload larger than the fatbin */
	expect_refused(buf, len, "do not fit");
	len = make_fatbin(buf, ".target sm_86\n");
	put64(buf + 16 + 40, 0x8011); /* says zstd, is not */
	expect_refused(buf, len, "compressed payload");
	len = make_fatbin(buf, ".target sm_86\n");
	put16(buf + 4, 2);
	expect_refused(buf, len, "version 2");
	expect_refused(buf, 10, "header cut");
}

Test(module_info, damaged_elf_refused)
{
	uint8_t elf[64] = { 0x7f, 'E', 'L', 'F', 2, 1, 1, 0x41, 8 };

	put16(elf + 16, 2);          /* ET_EXEC */
	put16(elf + 18, 190);        /* EM_CUDA */
	put32(elf + 20, 1);          /* EV_CURRENT */
	put64(elf + 40, 1ull << 40); /* section headers far away */
	put16(elf + 52, 64);
	put16(elf + 58, 64);
	put16(elf + 60, 3);
	expect_refused(elf, sizeof(elf), "section headers");
	put64(elf + 40, 0);
	put16(elf + 60, 0);
	put16(elf + 18, 62); /* x86-64 */
	expect_refused(elf, sizeof(elf), "not CUDA");
}

Test(module_info, garbage_never_crashes, .timeout = 60)
{
	static const char *const heads[] = { "\x7f" "ELF", "\x50\xed\x55\xba", ".target sm_",
					     ".version", "" };
	uint8_t buf[1024];
	unsigned seed = 7;

	for (int round = 0; round < 5000; round++) {
		const char *head = heads[round % 5];
		size_t len = (size_t)(round * 7919) % sizeof(buf);
		struct sc_module_info m;

		for (size_t i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			buf[i] = (uint8_t)(seed >> 16);
		}
		memcpy(buf, head, strlen(head) < len ? strlen(head) : len);
		if (sc_module_info(buf, len, &m) == 0)
			sc_module_info_release(&m);
	}
}

/* ---- the compatibility rules ---- */

static bool arch_runs(enum sc_code_kind code, unsigned major, unsigned minor, char variant,
		      int dev_major, int dev_minor)
{
	struct sc_module_arch a = { code, major, minor, variant, false };
	struct sc_module_info m = { .format = SC_MODULE_FATBIN, .archs = &a, .archs_n = 1 };

	return sc_module_runs_on(&m, dev_major, dev_minor, NULL, 0);
}

Test(module_info, sass_runs_on_later_minors_of_its_major)
{
	cr_expect(arch_runs(SC_CODE_SASS, 8, 0, 0, 8, 0));
	cr_expect(arch_runs(SC_CODE_SASS, 8, 0, 0, 8, 9));
	cr_expect(arch_runs(SC_CODE_SASS, 8, 6, 0, 8, 7));
	cr_expect_not(arch_runs(SC_CODE_SASS, 8, 6, 0, 8, 0));
	cr_expect_not(arch_runs(SC_CODE_SASS, 8, 0, 0, 9, 0));
	cr_expect_not(arch_runs(SC_CODE_SASS, 9, 0, 0, 8, 9));
}

Test(module_info, arch_specific_runs_on_its_own_only)
{
	cr_expect(arch_runs(SC_CODE_SASS, 9, 0, 'a', 9, 0));
	cr_expect_not(arch_runs(SC_CODE_SASS, 10, 0, 'a', 10, 3));
	cr_expect(arch_runs(SC_CODE_PTX, 9, 0, 'a', 9, 0));
	cr_expect_not(arch_runs(SC_CODE_PTX, 9, 0, 'a', 10, 0));
}

Test(module_info, family_specific_runs_within_its_major)
{
	cr_expect(arch_runs(SC_CODE_SASS, 10, 0, 'f', 10, 3));
	cr_expect_not(arch_runs(SC_CODE_SASS, 10, 0, 'f', 12, 0));
	cr_expect(arch_runs(SC_CODE_PTX, 10, 0, 'f', 10, 3));
	cr_expect_not(arch_runs(SC_CODE_PTX, 10, 0, 'f', 11, 0));
	cr_expect_not(arch_runs(SC_CODE_PTX, 10, 3, 'f', 10, 0));
}

Test(module_info, ptx_runs_on_newer_devices)
{
	cr_expect(arch_runs(SC_CODE_PTX, 5, 2, 0, 5, 2));
	cr_expect(arch_runs(SC_CODE_PTX, 5, 2, 0, 12, 1));
	cr_expect(arch_runs(SC_CODE_PTX, 8, 6, 0, 9, 0));
	cr_expect_not(arch_runs(SC_CODE_PTX, 8, 6, 0, 8, 0));
	cr_expect_not(arch_runs(SC_CODE_PTX, 9, 0, 0, 8, 9));
}

Test(module_info, refusal_says_what_each_architecture_needs)
{
	struct sc_module_arch a[2] = { { SC_CODE_SASS, 8, 0, 0, false },
				       { SC_CODE_PTX, 9, 0, 'a', false } };
	struct sc_module_info m = { .format = SC_MODULE_FATBIN, .archs = a, .archs_n = 2 };
	char why[256], tiny[16];

	cr_assert_not(sc_module_runs_on(&m, 10, 0, why, sizeof(why)));
	cr_expect_str_eq(why, "no code for compute capability 10.0: sm_80 (SASS) runs on 8.0 "
			      "and later 8.x; compute_90a (PTX) runs on 9.0 only");
	cr_assert_not(sc_module_runs_on(&m, 10, 0, tiny, sizeof(tiny)));
	cr_expect_eq(strlen(tiny), sizeof(tiny) - 1);
	cr_expect_str_eq(tiny + sizeof(tiny) - 4, "...");
}
