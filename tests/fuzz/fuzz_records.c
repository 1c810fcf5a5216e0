/* SPDX-License-Identifier: MIT */
/*
 * fuzz_records.c - libFuzzer targets for the record decoders that
 * selfckpt-restore and selfckpt-inspect run (`make fuzz`, `make fuzz-build`).
 *
 * Built once per record type (FUZZ_TARGET: process, thread, segment, fd,
 * signals, cuda_log, devmem, timers, locks or sysv; fuzz_records.h lists them). An input is a list
 * of records of that type (fuzz_records.h gives its layout), which the target
 * writes into an image in a memfd with the image writer: every checksum holds,
 * so mutations of a meta or a payload reach the decoders instead of failing a
 * checksum. Images with other broken bytes are fuzz_reader's.
 *
 * The image gets a process and a thread record of its own where the target's
 * type is neither (what a restore needs besides), then the input's records,
 * in 4 KiB chunks so that payload reads cross chunk boundaries. It is then
 * read the way the tools read:
 *   - selfckpt-restore: sc_image_load() (core/restore/restore_load.c), which decodes
 *     every process, thread, fd, signals, timers, locks, sysv-ipc and segment
 *     record, checks the System V attaches against the segments, and groups the
 *     windows into mappings, then sc_gpu_check() (cuda/tools/gpu_check.c),
 *     which reads the cuda-log and devmem records and checks each module
 *     against the GPUs of a stand-in GPU proxy (two devices, 9.0 and 7.5);
 *   - selfckpt-inspect: its main() (cli/inspect.c, built with main renamed),
 *     in text and in JSON on the file, and in JSON on standard
 *     input, as a stream.
 * Whatever the bytes, each must return success or an error: never crash,
 * leak, hang or allocate without bound.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/restore/restore_internal.h"
#include "compress/sc_compress.h"
#include "core/sc_records.h"
#include "cuda/tools/sc_gpu_check.h"
#include "format/sc_format.h"
#include "format/sc_log.h"
#include "tests/fuzz/fuzz_records.h"

#ifndef FUZZ_TARGET
#error "FUZZ_TARGET names the record type this target fuzzes (fuzz_records.h)"
#endif

#define STR_(x) #x
#define STR(x) STR_(x)

int sc_inspect_main(int argc, char **argv); /* cli/inspect.c, main() renamed */

static uint32_t type;
static int img_fd = -1;
static char img_path[64];
static uint8_t *payload;
static char proxy_dir[] = "/tmp/selfckpt-fuzz-XXXXXX";
static char proxy_path[sizeof(proxy_dir) + 16];

static void remove_proxy(void)
{
	unlink(proxy_path);
	rmdir(proxy_dir);
}

/* A stand-in for selfckpt-gpu-proxy --query: two GPUs. */
static void make_proxy(void)
{
	static const char script[] = "#!/bin/sh\necho 'device 0 9.0 fuzz GPU'\n"
				     "echo 'device 1 7.5 fuzz GPU'\n";
	int fd;

	if (!mkdtemp(proxy_dir))
		abort();
	snprintf(proxy_path, sizeof(proxy_path), "%s/proxy", proxy_dir);
	fd = open(proxy_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	if (fd < 0 || write(fd, script, sizeof(script) - 1) != sizeof(script) - 1 || close(fd))
		abort();
	atexit(remove_proxy);
	setenv("SELFCKPT_PROXY", proxy_path, 1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

	(void)argc;
	(void)argv;
	for (size_t i = 0; i < FUZZ_TARGETS_N; i++)
		if (!strcmp(fuzz_targets[i].name, STR(FUZZ_TARGET)))
			type = fuzz_targets[i].type;
	img_fd = memfd_create("fuzz.sckpt", MFD_CLOEXEC);
	payload = malloc(FUZZ_RAW_MAX);
	/* what selfckpt-inspect prints goes nowhere; libFuzzer reports on stderr */
	if (!type || img_fd < 0 || !payload || null < 0 || dup2(null, 1) != 1)
		abort();
	close(null);
	snprintf(img_path, sizeof(img_path), "/proc/self/fd/%d", img_fd);
	make_proxy();
	sc_log_set_level(SC_LOG_NONE);
	return 0;
}

/* ---- the image ---- */

static int write_context(struct sc_writer *w)
{
	static char cwd[] = "/", exe[] = "/fuzz";
	static uint8_t auxv[16];
	struct sc_process_info p = { .pid = 1, .cwd = cwd, .exe = exe, .auxv = auxv,
				     .auxv_len = sizeof(auxv) };
	struct sc_thread_record t = { .tid = 1, .flags = 1 };
	int err = 0;

	if (type != SC_REC_PROCESS)
		err = sc_process_write(w, &p);
	if (!err && type != SC_REC_THREAD)
		err = sc_thread_write(w, &t);
	return err;
}

static int write_records(struct sc_writer *w, const uint8_t *in, size_t n)
{
	struct fuzz_rec rec;
	size_t off = 0;
	int err = write_context(w);

	for (unsigned i = 0; !err && i < FUZZ_RECORDS_MAX && fuzz_rec_next(in, n, &off, &rec);
	     i++) {
		fuzz_rec_payload(&rec, payload);
		err = sc_writer_record(w, type, SC_RF_REQUIRED, rec.meta, rec.meta_len, payload,
				       rec.raw_len);
	}
	return err ? err : sc_writer_finish(w);
}

static int make_image(const uint8_t *in, size_t n)
{
	struct sc_write_opts o = { .level = SC_LEVEL_STORE, .threads = 1, .chunk_shift = 12,
				   .created_ns = 1, .producer = "fuzz", .kernel = "fuzz" };
	struct sc_writer *w;
	int err;

	if (ftruncate(img_fd, 0) || lseek(img_fd, 0, SEEK_SET))
		abort();
	if (sc_writer_new(&w, img_fd, "fuzz.sckpt", &o))
		abort();
	err = write_records(w, in, n);
	sc_writer_free(w);
	return err;
}

/* ---- reading it as the tools do ---- */

static void restore(void)
{
	struct image im;

	sc_image_load(&im, img_path);
	sc_image_release(&im);
	sc_gpu_check(img_path, 1);
}

/* selfckpt-inspect --threads 1 @opts... @path; @opts ends with NULL. */
static void inspect(const char *const *opts, const char *path)
{
	char *argv[8] = { "selfckpt-inspect", "--threads", "1" };
	int argc = 3;

	while (*opts)
		argv[argc++] = (char *)*opts++;
	argv[argc++] = (char *)path;
	optind = 0; /* getopt starts afresh */
	sc_inspect_main(argc, argv);
}

/* selfckpt-inspect - : the image on standard input, read once, as a stream. */
static void inspect_stream(void)
{
	int fd = open(img_path, O_RDONLY | O_CLOEXEC), saved = dup(0);

	if (fd < 0 || saved < 0 || dup2(fd, 0) != 0)
		abort();
	close(fd);
	inspect((const char *[]){ "--json", NULL }, "-");
	if (dup2(saved, 0) != 0)
		abort();
	close(saved);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (make_image(data, size))
		return 0; /* the writer refused the records: nothing to read */
	restore();
	inspect((const char *[]){ NULL }, img_path);
	inspect((const char *[]){ "--json", NULL }, img_path);
	inspect_stream();
	return 0;
}
