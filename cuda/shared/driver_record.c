/* SPDX-License-Identifier: MIT */
/*
 * driver_record.c - the cuda-driver record (spec/image-format.md §9.12):
 * the image holds the CUDA driver's own process checkpoint in its memory.
 */
#include <string.h>

#include "cuda/shared/gpu_records.h"
#include "format/sc_format.h"
#include "selfckpt_errors.h"

#define PID_LIMIT (1u << 22) /* the kernel's largest pid_max */

void sc_cuda_driver_encode(const struct sc_cuda_driver *d, uint8_t *meta)
{
	memset(meta, 0, SC_CUDA_DRIVER_META);
	sc_put_le32(meta, SC_CUDA_DRIVER_VERSION);
	sc_put_le32(meta + 4, d->pid);
	sc_put_le32(meta + 8, d->driver_version);
	sc_put_le32(meta + 12, d->threads);
}

int sc_cuda_driver_decode(const uint8_t *meta, uint32_t len, struct sc_cuda_driver *d)
{
	if (len < SC_CUDA_DRIVER_META)
		return -SELFCKPT_ELENGTH;
	if (sc_get_le32(meta) != SC_CUDA_DRIVER_VERSION)
		return -SELFCKPT_EVERSION;
	d->pid = sc_get_le32(meta + 4);
	d->driver_version = sc_get_le32(meta + 8);
	d->threads = sc_get_le32(meta + 12);
	if (d->pid == 0 || d->pid > PID_LIMIT)
		return -SELFCKPT_ELENGTH;
	for (int i = 16; i < SC_CUDA_DRIVER_META; i++)
		if (meta[i])
			return -SELFCKPT_ERESERVED;
	return 0;
}
