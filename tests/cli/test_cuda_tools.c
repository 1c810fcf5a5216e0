/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_tools.c - the tools on images of CUDA programs, made here with the
 * format writer: selfckpt-inspect's CUDA section (text and JSON), its refusal of
 * a broken cuda-log record, and selfckpt-restore's check of the GPUs before a
 * restart, asked of the GPU proxy over the software CUDA device (tests/softcuda),
 * whose compute capability and device count the tests set.
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

#define OUT_MAX (1u << 20)
#define IMG_MAX (1u << 20)
#define MAX_MODS 8
#define MAX_DEVMEM 8

static char out[OUT_MAX], err[OUT_MAX]; /* the last run's stdout and stderr */

struct mod {
	bool library;
	const void *bytes;
	size_t len;
};

struct image {
	char path[64];
	struct mod mods[MAX_MODS];
	size_t n_mods;
	struct sc_devmem devmem[MAX_DEVMEM];
	size_t n_devmem;
	const uint8_t *raw_log; /* instead of mods: this payload, as it is */
	size_t raw_log_len;
	uint32_t raw_log_mods;
};

static const char ptx_module[] = ".version 8.0\n.target sm_86\n.address_size 64\n"
				 ".visible .entry first()\n{\n\tret;\n}\n"
				 ".visible .entry second()\n{\n\tret;\n}\n";
/* Modules of the software device: PTX, whose comments only the device reads. */
static const char soft_library[] = ".version 8.0\n.target sm_80\n.entry soft_kernel (8)\n";
static const char soft_sm90[] = ".version 8.0\n.target sm_90\n.entry needs_nine (8)\n";
static const uint8_t junk_module[] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5 };

static const char *build_dir(void)
{
	const char *build = getenv("SELFCKPT_BUILD");

	return build ? build : "build";
}

static const char *build_path(char *buf, size_t n, const char *rel)
{
	snprintf(buf, n, "%s/%s", build_dir(), rel);
	return buf;
}

static void add_mod(struct image *img, bool library, const void *bytes, size_t len)
{
	cr_assert_lt(img->n_mods, MAX_MODS);
	img->mods[img->n_mods++] = (struct mod){ library, bytes, len };
}

static void add_devmem(struct image *img, uint32_t kind, uint64_t len, uint32_t dev)
{
	cr_assert_lt(img->n_devmem, MAX_DEVMEM);
	img->devmem[img->n_devmem] = (struct sc_devmem){ .addr = 0x7f0000000000ull +
		img->n_devmem * 0x100000ull, .len = len, .kind = kind, .dev = dev };
	img->n_devmem++;
}

/* The cuda-log payload: a header per module, its bytes, zeros to 8 bytes. */
static size_t log_payload(const struct image *img, uint8_t *p)
{
	size_t off = 0;

	if (img->raw_log) {
		memcpy(p, img->raw_log, img->raw_log_len);
		return img->raw_log_len;
	}
	for (size_t i = 0; i < img->n_mods; i++) {
		const struct mod *m = &img->mods[i];

		cr_assert_leq(off + SC_CUDA_IMAGE_HEADER + sc_cuda_pad8(m->len), IMG_MAX);
		sc_cuda_image_header(p + off, m->library, m->len);
		off += SC_CUDA_IMAGE_HEADER;
		memset(p + off, 0, sc_cuda_pad8(m->len));
		memcpy(p + off, m->bytes, m->len);
		off += sc_cuda_pad8(m->len);
	}
	return off;
}

static void write_log(struct sc_writer *w, const struct image *img)
{
	struct sc_cuda_summary s = { .modules = (uint32_t)img->n_mods, .device_bytes = 1u << 20,
				     .host_bytes = 8192, .blocks = 1,
				     .channel = 0x7e0000000000ull };
	uint8_t meta[SC_CUDA_LOG_META], *payload = malloc(IMG_MAX);
	size_t len;

	cr_assert_not_null(payload);
	if (img->raw_log)
		s.modules = img->raw_log_mods;
	len = log_payload(img, payload);
	sc_cuda_summary_encode(&s, meta);
	cr_assert_eq(sc_writer_record(w, SC_REC_CUDA_LOG, SC_RF_REQUIRED, meta, sizeof(meta),
				      payload, len), 0);
	free(payload);
}

/* The image: a cuda-log record (when @img has modules or a raw log) and devmem records. */
static void write_image(struct image *img, bool cuda)
{
	static uint8_t bytes[64 << 10];
	struct sc_writer *w;
	int fd;

	strcpy(img->path, "/tmp/sc-cuda-tools-XXXXXX");
	fd = mkstemp(img->path);
	cr_assert_geq(fd, 0);
	memset(bytes, 0x5a, sizeof(bytes));
	cr_assert_eq(sc_writer_new(&w, fd, img->path, NULL), 0);
	if (cuda)
		write_log(w, img);
	for (size_t i = 0; i < img->n_devmem; i++) {
		uint8_t meta[SC_DEVMEM_META];

		cr_assert_leq(img->devmem[i].len, sizeof(bytes));
		sc_devmem_encode(meta, &img->devmem[i], false);
		cr_assert_eq(sc_writer_record(w, SC_REC_DEVMEM, SC_RF_REQUIRED, meta, sizeof(meta),
					      bytes, img->devmem[i].len), 0);
	}
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	close(fd);
}

static int temp_file(void)
{
	char tmp[] = "/tmp/sc-cuda-tools-out-XXXXXX";
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

/* Run bin/@tool with @argv (NULL-terminated), standard input @in; its output into out[], err[]. */
static int run(const char *tool, const char *in, const char *const *argv)
{
	const char *args[16] = { 0 };
	char path[4096], rel[64];
	int fd_out = temp_file(), fd_err = temp_file(), status;
	pid_t pid;

	snprintf(rel, sizeof(rel), "bin/%s", tool);
	args[0] = build_path(path, sizeof(path), rel);
	for (int i = 0; argv[i] && i < 14; i++)
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

#define RUN(tool, in, ...) run(tool, in, (const char *const[]){ __VA_ARGS__, NULL })

static bool json_parses(void)
{
	char tmp[] = "/tmp/sc-cuda-tools-json-XXXXXX", cmd[256];
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

/* PTX, a software-device library, bytes of no known format; memory of each kind. */
static void typical_image(struct image *img)
{
	memset(img, 0, sizeof(*img));
	add_mod(img, false, ptx_module, sizeof(ptx_module));
	add_mod(img, true, soft_library, sizeof(soft_library));
	add_mod(img, false, junk_module, sizeof(junk_module));
	add_devmem(img, SC_DEVMEM_DEVICE, 4096, 0);
	add_devmem(img, SC_DEVMEM_GLOBAL, 256, 0);
	add_devmem(img, SC_DEVMEM_HOST, 8192, 0);
	write_image(img, true);
}

/* ---- selfckpt-inspect ---- */

Test(cuda_tools, inspect_text_names_modules_archs_kernels, .timeout = 30)
{
	struct image img;

	typical_image(&img);
	cr_assert_eq(RUN("selfckpt-inspect", NULL, img.path), 0, "%s%s", out, err);
	cr_expect(strstr(out, "\nCUDA (cuda-log record 0, log version 1)\n"), "%s", out);
	cr_expect(strstr(out, "device memory 1.00 MiB mapped, 4.25 KiB stored (device 4.00 KiB, "
			      "globals 256 B, arrays 0 B)"), "%s", out);
	cr_expect(strstr(out, "pinned host   8.00 KiB, 8.00 KiB stored"), "%s", out);
	cr_expect(strstr(out, "devices       0\n"), "%s", out);
	cr_expect(strstr(out, "modules       3\n"), "%s", out);
	cr_expect(strstr(out, "  0    module   ptx"), "%s", out);
	cr_expect(strstr(out, "compute_86 (PTX)\n       kernels  first, second\n"), "%s", out);
	cr_expect(strstr(out, "  1    library  ptx"), "%s", out);
	cr_expect(strstr(out, "compute_80 (PTX)\n       kernels  soft_kernel\n"), "%s", out);
	cr_expect(strstr(out, "  2    module   unknown         9 B  none\n"), "%s", out);
	cr_expect_str_empty(err);
	unlink(img.path);
}

Test(cuda_tools, inspect_json_has_cuda_object, .timeout = 30)
{
	struct image img;

	typical_image(&img);
	cr_assert_eq(RUN("selfckpt-inspect", NULL, "--json", img.path), 0, "%s%s", out, err);
	cr_expect(strstr(out, "\"schema_version\": 1"), "%s", out);
	cr_expect(strstr(out, "\"cuda\": {\n    \"record\": 0, \"log_version\": 1, "
			      "\"device_bytes\": 1048576, \"host_bytes\": 8192, \"blocks\": 1"),
		  "%s", out);
	cr_expect(strstr(out, "\"devmem\": {\"records\": 3, \"device\": 4096, \"global\": 256, "
			      "\"array\": 0, \"host\": 8192, \"devices\": [0]"), "%s", out);
	cr_expect(strstr(out, "{\"index\": 0, \"kind\": \"module\", \"format\": \"ptx\""), "%s",
		  out);
	cr_expect(strstr(out, "{\"name\": \"compute_86\", \"code\": \"PTX\", \"major\": 8, "
			      "\"minor\": 6, \"variant\": null, \"compressed\": false}"),
		  "%s", out);
	cr_expect(strstr(out, "\"kernels\": [\"first\", \"second\"], \"kernels_complete\": true"),
		  "%s", out);
	cr_expect(strstr(out, "\"kind\": \"library\", \"format\": \"ptx\""), "%s", out);
	cr_expect(strstr(out, "\"format\": \"unknown\", \"size\": 9, \"archs\": [], "
			      "\"kernels\": [], \"kernels_complete\": false"), "%s", out);
	cr_expect(json_parses(), "%s", out);
	unlink(img.path);
}

/* Read as a stream, the cuda-log payload is read as it passes. */
Test(cuda_tools, inspect_stream, .timeout = 30)
{
	struct image img;

	typical_image(&img);
	cr_assert_eq(RUN("selfckpt-inspect", img.path, "-"), 0, "%s%s", out, err);
	cr_expect(strstr(out, "kernels  first, second"), "%s", out);
	cr_expect(strstr(out, "verified: every checksum matches"), "%s", out);
	unlink(img.path);
}

Test(cuda_tools, inspect_cubin_from_nvcc, .timeout = 30)
{
	static uint8_t cubin[1 << 20];
	char path[4096];
	struct image img = { 0 };
	FILE *f = fopen(build_path(path, sizeof(path), "tests/fixtures/kernels_sm90.cubin"), "rb");
	size_t len;

	if (!f)
		cr_skip_test("no %s: nvcc made no fixtures", path);
	len = fread(cubin, 1, sizeof(cubin), f);
	fclose(f);
	add_mod(&img, false, cubin, len);
	add_devmem(&img, SC_DEVMEM_DEVICE, 512, 0);
	write_image(&img, true);
	cr_assert_eq(RUN("selfckpt-inspect", NULL, img.path), 0, "%s%s", out, err);
	cr_expect(strstr(out, "cubin"), "%s", out);
	cr_expect(strstr(out, "sm_90 (SASS)\n       kernels  _Z5counti, scale, vec_add\n"), "%s",
		  out);
	cr_assert_eq(RUN("selfckpt-inspect", NULL, "--json", img.path), 0, "%s%s", out, err);
	cr_expect(strstr(out, "\"name\": \"sm_90\", \"code\": \"SASS\""), "%s", out);
	cr_expect(strstr(out, "\"kernels\": [\"_Z5counti\", \"scale\", \"vec_add\"]"), "%s", out);
	cr_expect(json_parses(), "%s", out);
	unlink(img.path);
}

Test(cuda_tools, inspect_without_cuda, .timeout = 30)
{
	struct image img = { 0 };

	write_image(&img, false);
	cr_assert_eq(RUN("selfckpt-inspect", NULL, "--json", img.path), 0, "%s%s", out, err);
	cr_expect(strstr(out, "\"cuda\": null,"), "%s", out);
	cr_assert_eq(RUN("selfckpt-inspect", NULL, img.path), 0, "%s%s", out, err);
	cr_expect_null(strstr(out, "CUDA"), "%s", out);
	unlink(img.path);
}

/* A module header that claims more bytes than the payload holds: exit 65. */
Test(cuda_tools, inspect_refuses_broken_log, .timeout = 30)
{
	struct image img = { 0 };
	uint8_t payload[64] = { 0 };

	sc_cuda_image_header(payload, 0, 4096);
	img.raw_log = payload;
	img.raw_log_len = sizeof(payload);
	img.raw_log_mods = 1;
	write_image(&img, true);
	cr_assert_eq(RUN("selfckpt-inspect", NULL, img.path), 65, "%s%s", out, err);
	cr_expect(strstr(err, "selfckpt-inspect: error: cuda-log record 0 of '"), "%s", err);
	cr_expect(strstr(err, "module 0 at payload offset 0 is 4096 bytes long, but 48 are left"),
		  "%s", err);
	unlink(img.path);
}

/* A module that claims a format its bytes break: shown, then exit 65. */
Test(cuda_tools, inspect_reports_damaged_module, .timeout = 30)
{
	static const uint8_t fatbin[24] = { 0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0, 0xff, 0xff };
	struct image img = { 0 };

	add_mod(&img, false, fatbin, sizeof(fatbin));
	write_image(&img, true);
	cr_assert_eq(RUN("selfckpt-inspect", NULL, img.path), 65, "%s%s", out, err);
	cr_expect(strstr(out, "fatbin         24 B  damaged: fatbin of "), "%s", out);
	cr_expect(strstr(err, "error: module 0 (fatbin) in cuda-log record 0 of '"), "%s", err);
	cr_assert_eq(RUN("selfckpt-inspect", NULL, "--json", img.path), 65, "%s%s", out, err);
	cr_expect(strstr(out, "\"error\": \"fatbin of "), "%s", out);
	cr_expect(json_parses(), "%s", out);
	unlink(img.path);
}

/* ---- selfckpt-restore's GPU check ---- */

/* The proxy and the software device of the build under test, or the test is skipped. */
static void use_software_device(const char *cc, const char *devices)
{
	char proxy[4096], device[4096], abs_proxy[PATH_MAX], abs_device[PATH_MAX];

	build_path(proxy, sizeof(proxy), "bin/selfckpt-gpu-proxy");
	build_path(device, sizeof(device), "tests/libsoftcuda.so.1");
	if (access(proxy, X_OK) || access(device, R_OK))
		cr_skip_test("no %s or %s: make test-progs", proxy, device);
	cr_assert(realpath(proxy, abs_proxy) && realpath(device, abs_device));
	setenv("SELFCKPT_PROXY", abs_proxy, 1);
	setenv("SELFCKPT_LIBCUDA", abs_device, 1);
	setenv("SOFTCUDA_CC", cc, 1);
	setenv("SOFTCUDA_DEVICES", devices, 1);
}

/*
 * One module for sm_90 on the software device, and no process: a restore that
 * passes the check is refused next (65) for that.
 */
static void gpu_image(struct image *img, uint32_t dev)
{
	memset(img, 0, sizeof(*img));
	add_mod(img, false, soft_sm90, sizeof(soft_sm90));
	add_devmem(img, SC_DEVMEM_DEVICE, 4096, dev);
	write_image(img, true);
}

Test(cuda_tools, restore_refuses_module_the_gpu_cannot_run, .timeout = 60)
{
	struct image img;

	use_software_device("8.0", "1");
	gpu_image(&img, 0);
	cr_assert_eq(RUN("selfckpt-restore", NULL, img.path), 69, "%s%s", out, err);
	cr_expect(strstr(err, "selfckpt-restore: error: cannot restart '"), "%s", err);
	cr_expect(strstr(err, "module 0 (ptx; kernels needs_nine) cannot run on GPU 0 "
			      "('selfckpt software device', compute capability 8.0): no code for "
			      "compute capability 8.0: compute_90 (PTX) runs on 9.0 and later"),
		  "%s", err);
	unlink(img.path);
}

Test(cuda_tools, restore_passes_check_on_capable_gpu, .timeout = 60)
{
	struct image img;

	use_software_device("9.0", "1");
	gpu_image(&img, 0);
	cr_assert_eq(RUN("selfckpt-restore", NULL, img.path), 65, "%s%s", out, err);
	cr_expect(strstr(err, "no process record"), "%s", err);
	unlink(img.path);
}

Test(cuda_tools, restore_refuses_without_driver, .timeout = 60)
{
	struct image img;

	use_software_device("9.0", "1");
	setenv("SELFCKPT_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
	gpu_image(&img, 0);
	cr_assert_eq(RUN("selfckpt-restore", NULL, img.path), 69, "%s%s", out, err);
	cr_expect(strstr(err, "no usable GPU here"), "%s", err);
	cr_expect(strstr(err, "exited with status 69: cannot load the CUDA driver "
			      "'/nonexistent/libcuda.so.1'"), "%s", err);
	unlink(img.path);
}

Test(cuda_tools, restore_refuses_without_device, .timeout = 60)
{
	struct image img;

	use_software_device("9.0", "0");
	gpu_image(&img, 0);
	cr_assert_eq(RUN("selfckpt-restore", NULL, img.path), 69, "%s%s", out, err);
	cr_expect(strstr(err, "cuInit failed: CUDA_ERROR_NO_DEVICE"), "%s", err);
	unlink(img.path);
}

Test(cuda_tools, restore_refuses_missing_device_ordinal, .timeout = 60)
{
	struct image img;

	use_software_device("9.0", "1");
	gpu_image(&img, 1);
	cr_assert_eq(RUN("selfckpt-restore", NULL, img.path), 69, "%s%s", out, err);
	cr_expect(strstr(err, "it used GPU 1, this machine has 1"), "%s", err);
	use_software_device("9.0", "2");
	cr_assert_eq(RUN("selfckpt-restore", NULL, img.path), 65, "%s%s", out, err);
	unlink(img.path);
}

Test(cuda_tools, restore_refuses_without_proxy, .timeout = 60)
{
	struct image img;

	use_software_device("9.0", "1");
	setenv("SELFCKPT_PROXY", "/nonexistent/selfckpt-gpu-proxy", 1);
	gpu_image(&img, 0);
	cr_assert_eq(RUN("selfckpt-restore", NULL, img.path), 69, "%s%s", out, err);
	cr_expect(strstr(err, "SELFCKPT_PROXY='/nonexistent/selfckpt-gpu-proxy' is not an "
			      "executable"), "%s", err);
	unlink(img.path);
}

/* An image without CUDA asks no GPU anything. */
Test(cuda_tools, restore_without_cuda_asks_nothing, .timeout = 60)
{
	struct image img = { 0 };

	setenv("SELFCKPT_PROXY", "/nonexistent/selfckpt-gpu-proxy", 1);
	write_image(&img, false);
	cr_assert_eq(RUN("selfckpt-restore", NULL, img.path), 65, "%s%s", out, err);
	cr_expect_null(strstr(err, "GPU"), "%s", err);
	cr_expect(strstr(err, "no process record"), "%s", err);
	unlink(img.path);
}
