/* SPDX-License-Identifier: MIT */
/*
 * module_info.h - what a CUDA module image holds, read without the driver:
 * its format, the GPU architectures it has code for, its kernels, and whether
 * it can run on a device of a given compute capability. Used by
 * selfckpt-inspect and by selfckpt-restore before it restarts a CUDA program.
 *
 * The images come from files that may be damaged: every length and offset is
 * checked against the image's length before it is used. No CUDA header needed.
 *
 * Formats (what a program may hand to cuModuleLoadData and cuLibraryLoadData):
 *   cubin   an ELF file of machine EM_CUDA: machine code (SASS) for one architecture
 *   fatbin  a container of cubins and PTX for several architectures, some compressed
 *   ptx     PTX assembly text, compiled for the device when it is loaded
 *
 * Read by module_info.c (which format), module_elf.c, module_fatbin.c and
 * module_ptx.c (each format), module_arch.c (where it runs) and
 * cuda_log_read.c (the modules of a CUDA_LOG record).
 */
#ifndef SC_MODULE_INFO_H
#define SC_MODULE_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda/shared/gpu_records.h"
#include "format/sc_format.h"

enum sc_module_format {
	SC_MODULE_UNKNOWN = 0, /* bytes of no format known here */
	SC_MODULE_CUBIN,
	SC_MODULE_FATBIN,
	SC_MODULE_PTX,
};

/*
 * What the code of one architecture is, which decides where it runs (the CUDA
 * compatibility rules, checked by sc_module_runs_on()):
 *   SASS sm_XY    devices X.Z with Z >= Y (binary compatible within a major version)
 *   SASS sm_XYf   the same: the family of X.Y is the later minors of X
 *   SASS sm_XYa   devices X.Y only (architecture-specific features)
 *   PTX  compute_XY   devices X.Y and every later one (compiled when loaded)
 *   PTX  compute_XYf  devices X.Z with Z >= Y
 *   PTX  compute_XYa  devices X.Y only
 */
enum sc_code_kind {
	SC_CODE_SASS,
	SC_CODE_PTX,
};

struct sc_module_arch {
	enum sc_code_kind code;
	unsigned major, minor; /* the compute capability it targets */
	char variant;          /* 0, 'a' (architecture-specific) or 'f' (family-specific) */
	bool compressed;       /* stored compressed in a fatbin */
};

struct sc_module_info {
	enum sc_module_format format;
	struct sc_module_arch *archs; /* SASS first, then PTX, each by compute capability */
	size_t archs_n;
	char **kernels;               /* entry functions, sorted, each once */
	size_t kernels_n;
	bool kernels_partial;         /* some code was stored in a way not read here
				       * (compressed with an older scheme): kernels may miss */
};

#define SC_MODULE_ARCH_NAME 24  /* enough for any sc_module_arch_name() result */

/**
 * sc_module_info() - describe a module image.
 * @image: the bytes, as the program passed them to the driver.
 * @len: how many bytes @image holds; nothing past them is read.
 * @out: filled on success; release it with sc_module_info_release().
 *
 * Bytes of no known format are a success with @out->format SC_MODULE_UNKNOWN.
 * Return: 0; -ENOMEM; or -SELFCKPT_ELENGTH for an image of a known format that is
 * truncated or inconsistent, with a message (selfckpt_last_error(), not printed:
 * it names the place inside the module, the caller names the file); @out then
 * holds nothing but the format the image claims.
 */
int sc_module_info(const void *image, size_t len, struct sc_module_info *out);

/** sc_module_info_release() - free what sc_module_info() filled in; NULL is a no-op. */
void sc_module_info_release(struct sc_module_info *m);

/**
 * sc_module_runs_on() - can a device of compute capability @major.@minor run @m?
 * @why: receives, when the answer is false, which architectures @m has and what
 *       each needs; when true but not certain (no known format or architecture),
 *       why it could not be told; empty otherwise. NULL when not wanted.
 * @why_len: bytes at @why.
 *
 * A module runs when one of its architectures does (the driver picks it).
 * Return: false only when @m certainly cannot run there.
 */
bool sc_module_runs_on(const struct sc_module_info *m, int major, int minor, char *why,
		       size_t why_len);

/** sc_module_format_name() - "cubin", "fatbin", "ptx" or "unknown". */
const char *sc_module_format_name(enum sc_module_format f);

/** sc_code_kind_name() - "SASS" or "PTX". */
const char *sc_code_kind_name(enum sc_code_kind c);

/**
 * sc_module_arch_name() - "sm_90", "sm_90a", "compute_90" (PTX), into @buf.
 * @n: bytes at @buf; SC_MODULE_ARCH_NAME is always enough.
 * Return: @buf.
 */
const char *sc_module_arch_name(const struct sc_module_arch *a, char *buf, size_t n);

/**
 * sc_module_archs_text() - "sm_90 (SASS), compute_90 (PTX)", or "none", into @buf.
 * Return: @buf, cut short (ending in "...") when @n is too small.
 */
const char *sc_module_archs_text(const struct sc_module_info *m, char *buf, size_t n);

/* ---- the module images of a CUDA_LOG record ---- */

struct sc_cuda_module {
	bool library;                 /* cuLibraryLoadData, not cuModuleLoadData */
	uint64_t len;                 /* bytes of the image */
	struct sc_module_info info;   /* only its format when @err */
	int err;                      /* 0, or why @info could not be read (-SELFCKPT_E*) */
	char *why;                    /* the message of @err */
};

struct sc_cuda_log {
	uint32_t seq;                 /* the record's position in the image */
	struct sc_cuda_summary sum;
	struct sc_cuda_module *mods;  /* sum.modules of them */
	size_t mods_n;
};

/**
 * sc_cuda_log_read() - read a CUDA_LOG record's summary and describe each of its
 * module images.
 * @r: the reader, just after sc_reader_next() returned @rec; the payload is read.
 * @rec: a record of type SC_REC_CUDA_LOG.
 * @log: filled on success; release it with sc_cuda_log_release().
 *
 * A module whose image cannot be described does not fail the call: its @err and
 * @why say why. The record's own layout (summary, module headers, lengths) must
 * hold, or the call fails.
 * Return: 0, -errno, or -SELFCKPT_E* (reported, naming the file and the record).
 */
int sc_cuda_log_read(struct sc_reader *r, const struct sc_record *rec, struct sc_cuda_log *log);

/** sc_cuda_log_release() - free what sc_cuda_log_read() filled in; NULL is a no-op. */
void sc_cuda_log_release(struct sc_cuda_log *log);

#endif /* SC_MODULE_INFO_H */
