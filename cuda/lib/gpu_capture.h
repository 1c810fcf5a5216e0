/* SPDX-License-Identifier: MIT */
/*
 * gpu_capture.h - the device memory a checkpoint writes, and where it reads
 * it: in place, with the program's CUDA calls held until the image is
 * written, or from a copy taken at the instant (gpu_capture.c), with the
 * program's calls going on while the image is written.
 */
#ifndef SC_GPU_CAPTURE_H
#define SC_GPU_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda/shared/gpu_records.h"

struct sc_cu_array;

/* One piece of device memory on its way into the image: one staging buffer at most. */
struct sc_gpu_piece {
	struct sc_devmem d;              /* where the bytes come back at a restart */
	uint64_t ctx;                    /* the proxy's context */
	uint64_t src;                    /* where they are read: d.addr, or a capture area */
	uint64_t stream;                 /* the proxy's stream that reads them (0: default) */
	const struct sc_cu_array *array; /* SC_DEVMEM_ARRAY read from the array itself */
	const uint64_t *slots;           /* a slab's slots in use (bitmap), or NULL */
	uint32_t slot_size;              /* a slab's allocation size */
	bool has_data;                   /* the GPU found a non-zero byte in it */
	bool summed;                     /* sum holds its hash (devmem_lineage.h) */
	uint64_t sum[2];
};

/* Where sc_capture_take() put the pieces. */
enum sc_capture_where {
	SC_CAPTURED_NONE,   /* read in place: the program's CUDA calls wait for the write */
	SC_CAPTURED_DEVICE, /* copied into spare device memory */
	SC_CAPTURED_HOST,   /* copied into pinned host memory of the channel */
};

/* A device area leaves at least 1/SC_CAPTURE_SPARE_PART of the device's memory free. */
#define SC_CAPTURE_SPARE_PART 16

/**
 * sc_capture_prepare() - before the API lock: where a device may have no
 * room for a copy of its memory, set pinned host memory aside for one
 * (pinning costs far more than the copy). Says in the log where it cannot.
 */
void sc_capture_prepare(void);

/** sc_capture_host_area() - that host memory, or NULL: no part of the image. */
const void *sc_capture_host_area(void);

/**
 * sc_capture_take() - with the API lock held for writing and the GPU idle,
 * copy the @n pieces at @p aside, each context's into an area of its own
 * device's memory, else all into the host memory sc_capture_prepare() set
 * aside, and point each piece at its copy (its slots too).
 *
 * Return: where the pieces now are read (SC_CAPTURED_NONE where the device has
 * no room, said in the log: they are read in place), or a negative error (a
 * copy failed: the checkpoint fails).
 */
int sc_capture_take(struct sc_gpu_piece *p, size_t n);

/**
 * sc_capture_read() - post the copy of captured piece @p into @host (memory
 * of the channel's heap); *@ticket to wait for. A failure shows in
 * sc_capture_failed(), never in the program's sticky error.
 */
int sc_capture_read(const struct sc_gpu_piece *p, void *host, uint32_t *ticket);

/** sc_capture_failed() - the first failure of a read since the capture, or 0. */
int sc_capture_failed(void);

/**
 * sc_capture_buffers() - @n buffers of @len bytes in the channel's heap for
 * the reads, allocated after the instant (no part of the image); NULL on
 * failure. Freed by sc_capture_release().
 */
void *sc_capture_buffers(unsigned n, size_t len);

/** sc_capture_release() - free what the capture holds (the checkpoint is over). */
void sc_capture_release(void);

/** sc_capture_forget() - at a restart: the areas were the old proxy's; forget them. */
void sc_capture_forget(void);

/**
 * sc_capture_wait_room() - the device ran out of memory for the program: if
 * a capture area holds device memory, wait until the write is over and it is
 * freed. Return: true if the program should try again.
 */
bool sc_capture_wait_room(void);

#endif /* SC_GPU_CAPTURE_H */
