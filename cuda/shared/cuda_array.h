/* SPDX-License-Identifier: MIT */
/*
 * cuda_array.h - the contents of CUDA arrays in pieces that fit a staging
 * buffer (array_data.c) and their element sizes (array_format.c): what the
 * library saves at a checkpoint and the proxy fills again at a restart.
 */
#ifndef SC_CUDA_ARRAY_H
#define SC_CUDA_ARRAY_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** sc_array_element_bytes() - bytes of one element of an array; 0 if not whole bytes. */
size_t sc_array_element_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d);

/** sc_array_piece_len() - bytes of the piece of an array @d that starts at @offset; 0: none. */
uint64_t sc_array_piece_len(const CUDA_ARRAY3D_DESCRIPTOR *d, uint64_t offset);
/** sc_array_piece_copy() - the copy of one piece between array @real and @host, either way. */
bool sc_array_piece_copy(const CUDA_ARRAY3D_DESCRIPTOR *d, CUarray real, uint64_t offset,
			 uint64_t len, void *host, bool to_array, CUDA_MEMCPY3D *c);

#endif
