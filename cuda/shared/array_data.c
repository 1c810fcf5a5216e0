/* SPDX-License-Identifier: MIT */
/*
 * array_data.c - the contents of CUDA arrays, in pieces of whole rows of one
 * slice that fit a staging buffer: what a checkpoint saves and a restart
 * fills again. A piece is named by its offset in the array's bytes laid out
 * row after row, slice after slice.
 */
#include <string.h>

#include "cuda/shared/channel.h"
#include "cuda/shared/cuda_array.h"

/* Used by the library and by the proxy (proxy_upload.c) alike. */

struct shape {
	uint64_t row, rows, slices; /* row bytes, rows per slice, slices */
};

static bool shape_of(const CUDA_ARRAY3D_DESCRIPTOR *d, struct shape *s)
{
	s->row = sc_array_element_bytes(d) * d->Width;
	s->rows = d->Height ? d->Height : 1;
	s->slices = d->Depth ? d->Depth : 1;
	return s->row && s->row <= SC_CH_STAGING_BUF;
}

uint64_t sc_array_piece_len(const CUDA_ARRAY3D_DESCRIPTOR *d, uint64_t offset)
{
	struct shape s;
	uint64_t per, y, left;

	if (!shape_of(d, &s) || offset % s.row || offset >= s.row * s.rows * s.slices)
		return 0;
	per = SC_CH_STAGING_BUF / s.row;
	y = offset / s.row % s.rows;
	left = s.rows - y;
	return (left < per ? left : per) * s.row;
}

bool sc_array_piece_copy(const CUDA_ARRAY3D_DESCRIPTOR *d, CUarray real, uint64_t offset,
			 uint64_t len, void *host, bool to_array, CUDA_MEMCPY3D *c)
{
	struct shape s;

	if (!shape_of(d, &s) || !len || len % s.row || len > sc_array_piece_len(d, offset))
		return false;
	memset(c, 0, sizeof(*c));
	c->WidthInBytes = s.row;
	c->Height = len / s.row;
	c->Depth = 1;
	if (to_array) {
		c->srcMemoryType = CU_MEMORYTYPE_HOST;
		c->srcHost = host;
		c->srcPitch = s.row;
		c->srcHeight = c->Height;
		c->dstMemoryType = CU_MEMORYTYPE_ARRAY;
		c->dstArray = real;
		c->dstY = offset / s.row % s.rows;
		c->dstZ = offset / s.row / s.rows;
	} else {
		c->dstMemoryType = CU_MEMORYTYPE_HOST;
		c->dstHost = host;
		c->dstPitch = s.row;
		c->dstHeight = c->Height;
		c->srcMemoryType = CU_MEMORYTYPE_ARRAY;
		c->srcArray = real;
		c->srcY = offset / s.row % s.rows;
		c->srcZ = offset / s.row / s.rows;
	}
	return true;
}
