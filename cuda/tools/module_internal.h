/* SPDX-License-Identifier: MIT */
/*
 * module_internal.h - what the readers of CUDA module images share
 * (module_elf.c, module_fatbin.c, module_ptx.c), and how module_info.c calls
 * them. Each reader adds to a struct sc_module_info; module_info.c sorts it.
 */
#ifndef SC_MODULE_INTERNAL_H
#define SC_MODULE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda/tools/module_info.h"
#include "format/sc_log.h"

#define SC_FATBIN_MAGIC 0xBA55ED50u /* the first four bytes of a fatbin, little-endian */

/* The message stays with the error for the caller, who names the file. */
#define sc_module_damaged(...) sc_err_quiet(SELFCKPT_ELENGTH, __VA_ARGS__)

/**
 * sc_module_push_arch() - add an architecture to @m, unless it is there already.
 * @sm: major * 10 + minor; one that cannot be named (below 10, above 999) is left out.
 * @variant: 0, 'a' or 'f'.
 * Return: 0 or -ENOMEM.
 */
int sc_module_push_arch(struct sc_module_info *m, enum sc_code_kind code, unsigned sm,
			char variant, bool compressed);

/** sc_module_push_kernel() - add the kernel @name (@len bytes, not NUL-terminated) to @m. */
int sc_module_push_kernel(struct sc_module_info *m, const char *name, size_t len);

/**
 * sc_module_sm_parse() - read "sm_90", "sm_100a" (the @n bytes at @t).
 * @variant: receives 0, 'a' or 'f'.
 * Return: the architecture number (major * 10 + minor), 0 when @t is not one.
 */
unsigned sc_module_sm_parse(const char *t, size_t n, char *variant);

/*
 * The readers. Each returns 0, -ENOMEM, or -SELFCKPT_ELENGTH with a message
 * (sc_module_damaged()) for a damaged image. @own_arch: the image says its own
 * architecture; false for code inside a fatbin, whose entry header says it.
 */

/** sc_module_elf_read() - a cubin: its architecture (when @own_arch) and kernels. */
int sc_module_elf_read(const uint8_t *img, size_t len, struct sc_module_info *m, bool own_arch);

/** sc_module_fatbin_read() - a fatbin: the architecture and kernels of every entry. */
int sc_module_fatbin_read(const uint8_t *img, size_t len, struct sc_module_info *m);

/**
 * sc_module_ptx_read() - PTX text: its .target (when @own_arch) and .entry names.
 * Reads up to the first NUL or @len bytes.
 * Return: 1 when the text has a .version or .target directive (it is PTX), 0
 * when it has neither, or -ENOMEM.
 */
int sc_module_ptx_read(const char *text, size_t len, struct sc_module_info *m, bool own_arch);

#endif /* SC_MODULE_INTERNAL_H */
