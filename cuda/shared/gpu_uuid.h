/* SPDX-License-Identifier: MIT */
/*
 * gpu_uuid.h - a GPU's UUID as text, the way nvidia-smi and CUDA_VISIBLE_DEVICES
 * write it ("GPU-8f4022ba-e0cb-1298-286e-225c953a7feb"): the library hands the
 * GPUs of a process to selfckpt-driver-ckpt so, and the tool reads them and
 * says what it paired.
 */
#ifndef SC_CUDA_GPU_UUID_H
#define SC_CUDA_GPU_UUID_H

#include <stdio.h>
#include <string.h>

/* The GPUs of one process, at most this many; a UUID's bytes. */
#define SC_CU_GPUS_MAX 64
#define SC_CU_UUID_LEN 16
#define SC_CU_UUID_NAME_LEN 41 /* "GPU-" + 32 digits + 4 dashes + NUL */

static inline void sc_cu_uuid_name(const unsigned char *u, char *out)
{
	char *p = out + sprintf(out, "GPU-");

	for (int i = 0; i < SC_CU_UUID_LEN; i++)
		p += sprintf(p, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", u[i]);
}

/* @s, as sc_cu_uuid_name() writes it (the "GPU-" and the dashes optional), into @u; 0 or -1. */
static inline int sc_cu_uuid_parse(const char *s, unsigned char *u)
{
	int k = 0;

	if (!strncmp(s, "GPU-", 4))
		s += 4;
	for (; *s && k < 2 * SC_CU_UUID_LEN; s++) {
		int v;

		if (*s == '-')
			continue;
		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			v = *s - 'A' + 10;
		else
			return -1;
		u[k / 2] = (unsigned char)(k % 2 ? u[k / 2] | v : v << 4);
		k++;
	}
	return k == 2 * SC_CU_UUID_LEN && !*s ? 0 : -1;
}

#endif /* SC_CUDA_GPU_UUID_H */
