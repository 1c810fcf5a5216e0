/* SPDX-License-Identifier: MIT */
/*
 * chain_harness.h - chains of incremental images (spec §9.14) for the
 * roundtrip suite: tests/progs/lineage checkpoints itself into base/ck as
 * img.<k>.sckpt, changing a little of its memory between images, and prints
 * "saved k SUM"; a restored image prints "restored k SUM".
 */
#ifndef SC_CHAIN_HARNESS_H
#define SC_CHAIN_HARNESS_H

#include <stdbool.h>
#include <sys/types.h>

#define ROUNDS 4
#define EX_USAGE 64
#define EX_DATAERR 65
#define EX_NOINPUT 66

/**
 * save_rounds() - run lineage for @rounds images with SELFCKPT_INCREMENTAL=@setting
 * (@how: NULL, or "same" for one image name); its "saved k SUM" lines (free them).
 */
char *save_rounds(const char *setting, int rounds, const char *how);
/** expect_restores() - @image restores the process of instant @k of @saved. */
void expect_restores(const char *saved, int k, const char *image);
/** image() - base/ck/img.@k.sckpt, in one of in_base()'s buffers. */
const char *image(int k);
/** incremental() - does the image at @path have the INCREMENTAL header flag? */
bool incremental(const char *path);
off_t size_of(const char *path);
/** expect_no_temporary() - no image's temporary file is left in base/ck. */
void expect_no_temporary(void);

#endif /* SC_CHAIN_HARNESS_H */
