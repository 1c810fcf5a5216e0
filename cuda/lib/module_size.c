/* SPDX-License-Identifier: MIT */
/*
 * module_size.c - how long a module image is. cuModuleLoadData gets a bare pointer:
 * the library keeps a copy of the bytes (a restart must not need the original
 * file), so it must know where the image ends: an ELF cubin ends with its
 * last section or header table, a fatbin says its size in its header, and
 * PTX (or any text image) ends at its NUL.
 */
#include <elf.h>
#include <string.h>

#include "cuda/lib/cuda_internal.h"

#define FATBIN_MAGIC 0xBA55ED50u

struct fatbin_header {
	uint32_t magic;
	uint16_t version, header_size;
	uint64_t fat_size;
};

static size_t elf_length(const Elf64_Ehdr *e)
{
	const Elf64_Shdr *sh = (const Elf64_Shdr *)((const char *)e + e->e_shoff);
	size_t end = e->e_shoff + (size_t)e->e_shnum * e->e_shentsize;
	size_t ph_end = e->e_phoff + (size_t)e->e_phnum * e->e_phentsize;

	if (ph_end > end)
		end = ph_end;
	for (unsigned i = 0; e->e_shoff && i < e->e_shnum; i++)
		if (sh[i].sh_type != SHT_NOBITS && sh[i].sh_offset + sh[i].sh_size > end)
			end = sh[i].sh_offset + sh[i].sh_size;
	return end;
}

size_t sc_image_length(const void *p)
{
	const unsigned char *b = p;
	struct fatbin_header f;

	if (!memcmp(b, ELFMAG, SELFMAG) && b[EI_CLASS] == ELFCLASS64)
		return elf_length(p);
	memcpy(&f, b, sizeof(f));
	if (f.magic == FATBIN_MAGIC)
		return f.header_size + f.fat_size;
	return strlen(p) + 1;
}
