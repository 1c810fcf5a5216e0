/* SPDX-License-Identifier: MIT */
/*
 * softcuda.h - the kernel interface of the software CUDA device.
 *
 * The software device (libsoftcuda.so.1, tests only) is a stand-in for
 * libcuda.so.1 that the GPU proxy can load where no GPU exists. It implements
 * the Driver API subset the proxy uses on the CPU. It is a test double: it
 * proves nothing about GPUs.
 *
 * Its modules are PTX text whose comments say what the device needs (format
 * in tests/softcuda/README.md):
 *
 *   .version 8.0
 *   .target sm_90
 *   // softcuda library /path/to/libkernels.so
 *   .entry vec_add (8, 8, 8, 4)
 *   // softcuda global counter 4
 *
 * A kernel named K is the host function softk_K in the module's library, run
 * once per launch (it loops over the grid itself); its parameters are those
 * the launch passed, one pointer per parameter as in kernelParams.
 */
#ifndef SOFTCUDA_H
#define SOFTCUDA_H

#include <stdint.h>

struct softcuda_launch {
	unsigned grid[3];
	unsigned block[3];
	unsigned shared_bytes;
	void *stream; /* the CUstream of the launch */
};

typedef void (*softcuda_kernel_fn)(const struct softcuda_launch *launch, void **params);

/*
 * Textures and surfaces, for kernels: texture and surface objects are the
 * small integers the device handed out. Reads clamp the coordinates to the
 * array (CU_TR_ADDRESS_MODE_CLAMP, point filtering, unnormalised
 * coordinates); element_bytes must match the array's element size. Both
 * return 0, or -1 for an unknown object or a wrong element size.
 * Coordinates count elements, not bytes. A write outside the array is
 * dropped and returns -1. Linear textures read row 0 only.
 */
int softcuda_tex2d_read(unsigned long long tex, int x, int y, void *element,
			unsigned element_bytes);
int softcuda_surf2d_write(unsigned long long surf, int x, int y, const void *element,
			  unsigned element_bytes);

#endif /* SOFTCUDA_H */
