/* SPDX-License-Identifier: MIT */
/*
 * gpu_records.h - the CUDA records of an image (spec/image-format.md §9):
 * CUDA_LOG, a summary of the GPU state with every module image, and DEVMEM,
 * one piece of device or pinned host memory. Used by the checkpoint, the
 * restart and selfckpt-inspect; no CUDA header needed.
 */
#ifndef SC_GPU_RECORDS_H
#define SC_GPU_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SC_CUDA_LOG_VERSION 1
#define SC_CUDA_LOG_META 64
#define SC_CUDA_IMAGE_HEADER 16 /* before each module image in the CUDA_LOG payload */
#define SC_DEVMEM_META 32      /* the fixed part up to 1.6, and of a full image */
#define SC_DEVMEM_META_WIDE 40 /* with flags: an incremental image's (1.7) */
#define SC_DEVMEM_PARENT 1u    /* flag: a parent piece, its bytes the parent's (R-INC-6) */

struct sc_cuda_summary {
	uint32_t version;
	uint32_t modules;      /* module and library images in the payload */
	uint64_t device_bytes; /* device memory the arena had mapped */
	uint64_t host_bytes;   /* pinned host memory saved */
	uint32_t blocks;       /* arena blocks */
	uint64_t channel;      /* the channel's address */
};

enum sc_devmem_kind {
	SC_DEVMEM_DEVICE = 0, /* a piece of an arena block */
	SC_DEVMEM_GLOBAL = 1, /* a module global */
	SC_DEVMEM_HOST = 2,   /* the channel's pinned host heap */
	SC_DEVMEM_ARRAY = 3,  /* rows of a CUDA array: address = the array's handle,
			       * offset = where the rows start in the array's bytes */
};

static inline size_t sc_cuda_pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

void sc_cuda_summary_encode(const struct sc_cuda_summary *s, uint8_t *meta);
/** sc_cuda_summary_decode() - 0, or -SELFCKPT_ERESERVED / -SELFCKPT_ELENGTH. */
int sc_cuda_summary_decode(const uint8_t *meta, uint32_t len, struct sc_cuda_summary *s);
void sc_cuda_image_header(uint8_t *h, int library, uint64_t len);
void sc_cuda_image_header_decode(const uint8_t *h, int *library, uint64_t *len);
struct sc_devmem {
	uint64_t addr, len;
	uint32_t kind, dev;
	uint64_t offset; /* arrays only */
	uint32_t flags;  /* SC_DEVMEM_PARENT, in an incremental image only */
};

/**
 * sc_devmem_encode() - @d into @meta: the wide fixed part with its flags
 * where @wide (an incremental image; SC_DEVMEM_META_WIDE bytes), else the
 * SC_DEVMEM_META bytes of 1.6, without flags. Return: the meta's length.
 */
uint32_t sc_devmem_encode(uint8_t *meta, const struct sc_devmem *d, bool wide);
/** sc_devmem_decode() - 0, or -SELFCKPT_ELENGTH / -SELFCKPT_EUNKNOWN / -SELFCKPT_ERESERVED. */
int sc_devmem_decode(const uint8_t *meta, uint32_t meta_len, struct sc_devmem *d);

struct sc_record;

/**
 * sc_devmem_read() - decode the meta of devmem record @rec of an image that is
 * @incremental or not, and check its payload: the length's bytes, or none for
 * a parent piece, which only an incremental image may hold, of kind 0 (spec
 * R-DEV-1, R-DEV-2, R-INC-6).
 * Return: as sc_devmem_decode(), -SELFCKPT_ELENGTH also for another payload
 * length or a parent piece where none may be; not reported: the caller names
 * the record.
 */
int sc_devmem_read(const struct sc_record *rec, bool incremental, struct sc_devmem *d);

/* cuda-driver (§9.12): the driver's process checkpoint is in the image's memory. */
#define SC_CUDA_DRIVER_VERSION 1
#define SC_CUDA_DRIVER_META 32

struct sc_cuda_driver {
	uint32_t pid;            /* the process the driver checkpointed */
	uint32_t driver_version; /* cuDriverGetVersion(), 0 when unknown */
	uint32_t threads;        /* threads whose names the image keeps */
};

/** sc_cuda_driver_encode() - @d into SC_CUDA_DRIVER_META bytes at @meta. */
void sc_cuda_driver_encode(const struct sc_cuda_driver *d, uint8_t *meta);

/**
 * sc_cuda_driver_decode() - a cuda-driver meta of @len bytes into @d (R-TYP-21).
 * Return: 0, -SELFCKPT_EVERSION, -SELFCKPT_ELENGTH or -SELFCKPT_ERESERVED;
 * not reported: the caller names the record.
 */
int sc_cuda_driver_decode(const uint8_t *meta, uint32_t len, struct sc_cuda_driver *d);

#endif /* SC_GPU_RECORDS_H */
