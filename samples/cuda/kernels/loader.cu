/* SPDX-License-Identifier: MIT */
/* loader.cu - the kernel of samples/cuda/loader.c: vecadd's. */
#include "vecadd.cu"
