/* SPDX-License-Identifier: MIT */
/*
 * module_elf.c - reading a cubin: sc_module_elf_read() (module_internal.h).
 *
 * A cubin is an ELF of machine EM_CUDA, read with libelf. Its architecture is
 * in e_flags (LLVM's EF_CUDA_* names): the low byte up to ELF ABI version 7,
 * bits 8-15 from version 8 (CUDA 13), with the architecture-specific bit at
 * 0x800 or 0x8. ptxas 13 leaves that bit clear for sm_90a; its tool-kit note
 * (.note.nv.tkinfo) keeps the options it ran with, "-arch sm_90a", which tell.
 * Kernels are the global function symbols marked STO_CUDA_ENTRY, each in its
 * section .text.<name>; in a cubin that marks none, every global function in
 * such a section.
 */
#include <ctype.h>
#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/tools/module_internal.h"

#ifndef EM_CUDA
#define EM_CUDA 190
#endif
#define STO_CUDA_ENTRY 0x10      /* st_other of a kernel's symbol */
#define EF_CUDA_ACCEL_V1 0x800u  /* sm_XYa, ELF ABI version 7 and before */
#define EF_CUDA_ACCEL_V2 0x8u    /* sm_XYa, ELF ABI version 8 */
#define CUDA_ELF_ABI_V2 8
#define TKINFO_NOTE ".note.nv.tkinfo"

/* The variant of @sm in the options ptxas ran with, kept in its tool-kit note. */
static char tkinfo_variant(Elf *e, size_t shstrndx, unsigned sm)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(name = elf_strptr(e, shstrndx, sh.sh_name)) || strcmp(name, TKINFO_NOTE) ||
		    !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		for (size_t i = 0; i + 5 <= d->d_size; i++) {
			const char *p = (const char *)d->d_buf + i;
			size_t n = 3;
			char variant;

			if (memcmp(p, "sm_", 3))
				continue;
			while (i + n < d->d_size && isalnum((unsigned char)p[n]))
				n++;
			if (sc_module_sm_parse(p, n, &variant) == sm && variant)
				return variant;
		}
	}
	return 0;
}

static int elf_arch(Elf *e, const GElf_Ehdr *h, size_t shstrndx, struct sc_module_info *m)
{
	uint32_t f = (uint32_t)h->e_flags;
	unsigned sm;
	char variant = 0;

	if (h->e_ident[EI_ABIVERSION] >= CUDA_ELF_ABI_V2) {
		sm = (f >> 8) & 0xff;
		variant = f & EF_CUDA_ACCEL_V2 ? 'a' : 0;
	} else {
		sm = f & 0xff;
		variant = f & EF_CUDA_ACCEL_V1 ? 'a' : 0;
	}
	if (!variant)
		variant = tkinfo_variant(e, shstrndx, sm);
	return sc_module_push_arch(m, SC_CODE_SASS, sm, variant, false);
}

/* Is the symbol's section .text.<@name>? */
static bool in_own_text(Elf *e, size_t shstrndx, const GElf_Sym *s, const char *name)
{
	Elf_Scn *scn = elf_getscn(e, s->st_shndx);
	const char *sec;
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || !(sec = elf_strptr(e, shstrndx, sh.sh_name)))
		return false;
	return !strncmp(sec, ".text.", 6) && !strcmp(sec + 6, name);
}

static bool defined_global_func(const GElf_Sym *s)
{
	unsigned bind = GELF_ST_BIND(s->st_info);

	return GELF_ST_TYPE(s->st_info) == STT_FUNC && (bind == STB_GLOBAL || bind == STB_WEAK) &&
	       s->st_shndx != SHN_UNDEF && s->st_shndx < SHN_LORESERVE;
}

/* Global functions of one symbol table: marked ones into @m, the others into @other. */
static int elf_symtab(Elf *e, size_t shstrndx, Elf_Scn *scn, const GElf_Shdr *sh,
		      struct sc_module_info *m, struct sc_module_info *other)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t size = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
	int err = 0;

	if (!d || !size)
		return sc_module_damaged("ELF symbol table: %s", elf_errmsg(-1));
	for (size_t i = 0; !err && i < d->d_size / size && i < INT_MAX; i++) {
		const char *name;
		GElf_Sym s;

		if (!gelf_getsym(d, (int)i, &s) || !defined_global_func(&s) ||
		    !(name = elf_strptr(e, sh->sh_link, s.st_name)) ||
		    !in_own_text(e, shstrndx, &s, name))
			continue;
		if (s.st_other & STO_CUDA_ENTRY)
			err = sc_module_push_kernel(m, name, strlen(name));
		else
			err = sc_module_push_kernel(other, name, strlen(name));
	}
	return err;
}

static int elf_kernels(Elf *e, size_t shstrndx, struct sc_module_info *m)
{
	struct sc_module_info other = { 0 };
	size_t before = m->kernels_n;
	Elf_Scn *scn = NULL;
	int err = 0;

	while (!err && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			err = sc_module_damaged("ELF section header: %s", elf_errmsg(-1));
		else if (sh.sh_type == SHT_SYMTAB)
			err = elf_symtab(e, shstrndx, scn, &sh, m, &other);
	}
	/* No symbol marked as a kernel: a cubin of tools that did not mark them. */
	for (size_t i = 0; !err && m->kernels_n == before && i < other.kernels_n; i++)
		err = sc_module_push_kernel(m, other.kernels[i], strlen(other.kernels[i]));
	sc_module_info_release(&other);
	return err;
}

/*
 * libelf takes header tables that run past the image's end for absent, and
 * would describe a truncated cubin as one without kernels: every table and
 * section must lie inside the image.
 */
static int elf_bounds(Elf *e, const GElf_Ehdr *h, size_t len)
{
	uint64_t shn = h->e_shnum ? h->e_shnum : 1; /* 0: the count is in section 0 */
	Elf_Scn *scn = NULL;

	if (h->e_shoff && (h->e_shoff > len || shn * h->e_shentsize > len - h->e_shoff))
		return sc_module_damaged("ELF section headers at offset %llu run past the "
					 "image's %zu bytes", (unsigned long long)h->e_shoff, len);
	if (h->e_phoff && (h->e_phoff > len ||
			   (uint64_t)h->e_phnum * h->e_phentsize > len - h->e_phoff))
		return sc_module_damaged("ELF program headers at offset %llu run past the "
					 "image's %zu bytes", (unsigned long long)h->e_phoff, len);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			return sc_module_damaged("ELF section header: %s", elf_errmsg(-1));
		if (sh.sh_type != SHT_NOBITS &&
		    (sh.sh_offset > len || sh.sh_size > len - sh.sh_offset))
			return sc_module_damaged("ELF section %zu (%llu bytes at offset %llu) runs "
						 "past the image's %zu bytes", elf_ndxscn(scn),
						 (unsigned long long)sh.sh_size,
						 (unsigned long long)sh.sh_offset, len);
	}
	return 0;
}

/*
 * libelf reads the bytes where they lie when it can, which needs them aligned
 * and writable: it gets a copy.
 */
int sc_module_elf_read(const uint8_t *img, size_t len, struct sc_module_info *m, bool own_arch)
{
	char *copy = malloc(len ? len : 1);
	size_t shstrndx;
	Elf *e = NULL;
	GElf_Ehdr h;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	memcpy(copy, img, len);
	elf_version(EV_CURRENT);
	e = elf_memory(copy, len);
	if (!e || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &h) ||
	    elf_getshdrstrndx(e, &shstrndx) < 0)
		err = sc_module_damaged("ELF header of a %zu-byte image: %s", len, elf_errmsg(-1));
	else if (h.e_machine != EM_CUDA)
		err = sc_module_damaged("ELF for machine %u, not CUDA (%u)", h.e_machine, EM_CUDA);
	else
		err = elf_bounds(e, &h, len);
	if (!err && own_arch)
		err = elf_arch(e, &h, shstrndx, m);
	if (!err)
		err = elf_kernels(e, shstrndx, m);
	elf_end(e);
	free(copy);
	return err;
}
