/* SPDX-License-Identifier: MIT */
/*
 * module_info.c - what a CUDA module image holds (module_info.h).
 *
 * cubin: an ELF of machine EM_CUDA, read with libelf. Its architecture is in
 * e_flags (LLVM's EF_CUDA_* names): the low byte up to ELF ABI version 7, bits
 * 8-15 from version 8 (CUDA 13), with the architecture-specific bit at 0x800 or
 * 0x8. ptxas 13 leaves that bit clear for sm_90a; its tool-kit note
 * (.note.nv.tkinfo) keeps the options it ran with, "-arch sm_90a", which tell.
 * Kernels are the global function symbols marked STO_CUDA_ENTRY, each in its
 * section .text.<name>; in a cubin that marks none, every global function in
 * such a section.
 *
 * fatbin: a 16-byte header (magic 0xBA55ED50 u32, version u16 = 1, header size
 * u16, size u64 of the entries that follow), then entries, each a header and
 * its payload, next to each other. An entry header, of its own size (64 bytes
 * or more), little-endian:
 *   @0 kind u16 (1 PTX, 2 ELF; others hold nothing a driver runs), @4 header
 *   size u32, @8 payload size u64 (padded to 8), @28 architecture u32 (major *
 *   10 + minor), @40 flags u64, @56 payload size once decompressed u64.
 * Flags: 0x100000 architecture-specific (sm_90a), 0x200000 family-specific
 * (sm_100f), 0x8000 payload compressed with zstd (read here), 0x2000 payload
 * compressed with the older scheme (not read: that entry's kernels stay unknown).
 *
 * ptx: ".target sm_XY" names the architecture, ".entry NAME" each kernel.
 */
#include <ctype.h>
#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "cuda/module_info.h"
#include "format/sc_log.h"

#ifndef EM_CUDA
#define EM_CUDA 190
#endif
#define STO_CUDA_ENTRY 0x10      /* st_other of a kernel's symbol */
#define EF_CUDA_ACCEL_V1 0x800u  /* sm_XYa, ELF ABI version 7 and before */
#define EF_CUDA_ACCEL_V2 0x8u    /* sm_XYa, ELF ABI version 8 */
#define CUDA_ELF_ABI_V2 8
#define TKINFO_NOTE ".note.nv.tkinfo"

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_HEADER 16
#define FATBIN_ENTRY_MIN 64
#define FATBIN_PTX 1
#define FATBIN_ELF 2
#define FATBIN_F_OLD_COMPRESS 0x2000ull
#define FATBIN_F_ZSTD 0x8000ull
#define FATBIN_F_ARCH 0x100000ull
#define FATBIN_F_FAMILY 0x200000ull
#define UNPACK_MAX (256u << 20)  /* largest decompressed fatbin entry read */

#define SM_MAX 999               /* sm_999: compute capability 99.9 */

/* The message stays with the error for the caller, who names the file. */
#define damaged(...) sc_err_quiet(SELFCKPT_ELENGTH, __VA_ARGS__)

/* ---- building the description ---- */

/* Room for one more: arrays grow to powers of two, so their count says when. */
static int grow(void **arr, size_t n, size_t size)
{
	void *p;

	if (n && (n < 8 || (n & (n - 1))))
		return 0;
	if (n > SIZE_MAX / 2 / size)
		return -ENOMEM;
	p = realloc(*arr, (n ? 2 * n : 8) * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	return 0;
}

static int push_arch(struct sc_module_info *m, enum sc_code_kind code, unsigned sm,
		     char variant, bool compressed)
{
	struct sc_module_arch a = { code, sm / 10, sm % 10, variant, compressed };

	if (sm < 10 || sm > SM_MAX)
		return 0; /* no architecture that can be named: nothing to say about it */
	for (size_t i = 0; i < m->archs_n; i++) {
		const struct sc_module_arch *b = &m->archs[i];

		if (b->code == code && b->major == a.major && b->minor == a.minor &&
		    b->variant == variant)
			return 0;
	}
	if (grow((void **)&m->archs, m->archs_n, sizeof(*m->archs)) < 0)
		return -ENOMEM;
	m->archs[m->archs_n++] = a;
	return 0;
}

static int push_name(char ***names, size_t *n, const char *name, size_t len)
{
	char *s;

	if (!len)
		return 0;
	if (grow((void **)names, *n, sizeof(**names)) < 0 || !(s = strndup(name, len)))
		return -ENOMEM;
	(*names)[(*n)++] = s;
	return 0;
}

static int cmp_arch(const void *x, const void *y)
{
	const struct sc_module_arch *a = x, *b = y;

	if (a->code != b->code)
		return a->code < b->code ? -1 : 1;
	if (a->major != b->major)
		return a->major < b->major ? -1 : 1;
	if (a->minor != b->minor)
		return a->minor < b->minor ? -1 : 1;
	return (a->variant > b->variant) - (a->variant < b->variant);
}

static int cmp_name(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Sort both lists; a kernel found in several entries of a fatbin is listed once. */
static void finish(struct sc_module_info *m)
{
	size_t k = 0;

	if (m->archs_n)
		qsort(m->archs, m->archs_n, sizeof(*m->archs), cmp_arch);
	if (!m->kernels_n)
		return;
	qsort(m->kernels, m->kernels_n, sizeof(*m->kernels), cmp_name);
	for (size_t i = 0; i < m->kernels_n; i++) {
		if (k && !strcmp(m->kernels[k - 1], m->kernels[i]))
			free(m->kernels[i]);
		else
			m->kernels[k++] = m->kernels[i];
	}
	m->kernels_n = k;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

void sc_module_info_release(struct sc_module_info *m)
{
	if (!m)
		return;
	free(m->archs);
	free_names(m->kernels, m->kernels_n);
	memset(m, 0, sizeof(*m));
}

/* "sm_90", "sm_100a": the architecture number, or 0 when @t is not one. */
static unsigned parse_sm(const char *t, size_t n, char *variant)
{
	unsigned v = 0;
	size_t i = 3;

	*variant = 0;
	if (n < 5 || memcmp(t, "sm_", 3))
		return 0;
	for (; i < n && isdigit((unsigned char)t[i]) && v <= SM_MAX; i++)
		v = v * 10 + (unsigned)(t[i] - '0');
	if (i < n && (t[i] == 'a' || t[i] == 'f'))
		*variant = t[i++];
	return i == n && v >= 10 && v <= SM_MAX ? v : 0;
}

/* ---- cubin ---- */

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
			if (parse_sm(p, n, &variant) == sm && variant)
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
	return push_arch(m, SC_CODE_SASS, sm, variant, false);
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
		return damaged("ELF symbol table: %s", elf_errmsg(-1));
	for (size_t i = 0; !err && i < d->d_size / size && i < INT_MAX; i++) {
		const char *name;
		GElf_Sym s;

		if (!gelf_getsym(d, (int)i, &s) || !defined_global_func(&s) ||
		    !(name = elf_strptr(e, sh->sh_link, s.st_name)) ||
		    !in_own_text(e, shstrndx, &s, name))
			continue;
		if (s.st_other & STO_CUDA_ENTRY)
			err = push_name(&m->kernels, &m->kernels_n, name, strlen(name));
		else
			err = push_name(&other->kernels, &other->kernels_n, name, strlen(name));
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
			err = damaged("ELF section header: %s", elf_errmsg(-1));
		else if (sh.sh_type == SHT_SYMTAB)
			err = elf_symtab(e, shstrndx, scn, &sh, m, &other);
	}
	/* No symbol marked as a kernel: a cubin of tools that did not mark them. */
	for (size_t i = 0; !err && m->kernels_n == before && i < other.kernels_n; i++)
		err = push_name(&m->kernels, &m->kernels_n, other.kernels[i],
				strlen(other.kernels[i]));
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
		return damaged("ELF section headers at offset %llu run past the image's %zu "
			       "bytes", (unsigned long long)h->e_shoff, len);
	if (h->e_phoff && (h->e_phoff > len ||
			   (uint64_t)h->e_phnum * h->e_phentsize > len - h->e_phoff))
		return damaged("ELF program headers at offset %llu run past the image's %zu "
			       "bytes", (unsigned long long)h->e_phoff, len);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			return damaged("ELF section header: %s", elf_errmsg(-1));
		if (sh.sh_type != SHT_NOBITS &&
		    (sh.sh_offset > len || sh.sh_size > len - sh.sh_offset))
			return damaged("ELF section %zu (%llu bytes at offset %llu) runs past the "
				       "image's %zu bytes", elf_ndxscn(scn),
				       (unsigned long long)sh.sh_size,
				       (unsigned long long)sh.sh_offset, len);
	}
	return 0;
}

/*
 * libelf reads the bytes where they lie when it can, which needs them aligned
 * and writable: it gets a copy.
 */
static int elf_read(const uint8_t *img, size_t len, struct sc_module_info *m, bool own_arch)
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
		err = damaged("ELF header of a %zu-byte image: %s", len, elf_errmsg(-1));
	else if (h.e_machine != EM_CUDA)
		err = damaged("ELF for machine %u, not CUDA (%u)", h.e_machine, EM_CUDA);
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

/* ---- PTX ---- */

static bool ptx_word(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '%' || c == '.';
}

/* Skip blanks, comments and strings; return where the next token starts. */
static const char *ptx_skip(const char *p, const char *end)
{
	const char *q;

	while (p < end) {
		if (isspace((unsigned char)*p)) {
			p++;
		} else if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
			q = memchr(p, '\n', (size_t)(end - p));
			p = q ? q + 1 : end;
		} else if (end - p >= 2 && p[0] == '/' && p[1] == '*') {
			q = memmem(p + 2, (size_t)(end - p - 2), "*/", 2);
			p = q ? q + 2 : end;
		} else if (*p == '"') {
			q = memchr(p + 1, '"', (size_t)(end - p - 1));
			p = q ? q + 1 : end;
		} else {
			break;
		}
	}
	return p;
}

/* The next token (a word, or one other character) at *@tok; its length, 0 at the end. */
static size_t ptx_token(const char **pp, const char *end, const char **tok)
{
	const char *p = ptx_skip(*pp, end), *q = p;

	while (q < end && ptx_word(*q))
		q++;
	if (q == p && q < end)
		q++;
	*tok = p;
	*pp = q;
	return (size_t)(q - p);
}

static bool is_tok(const char *tok, size_t n, const char *word)
{
	return n == strlen(word) && !memcmp(tok, word, n);
}

/* ".target sm_90a, texmode_independent": the architecture among the options. */
static int ptx_target(const char **pp, const char *end, struct sc_module_info *m)
{
	const char *tok, *before;
	size_t n;
	int err = 0;

	do {
		char variant;
		unsigned sm;

		n = ptx_token(pp, end, &tok);
		if ((sm = parse_sm(tok, n, &variant)))
			err = push_arch(m, SC_CODE_PTX, sm, variant, false);
		before = *pp;
		n = ptx_token(pp, end, &tok);
	} while (!err && is_tok(tok, n, ","));
	*pp = before; /* not a comma: the next directive's token */
	return err;
}

/* Return: 1 when the text had a .version or .target directive (it is PTX), 0, or -ENOMEM. */
static int ptx_read(const char *text, size_t len, struct sc_module_info *m, bool own_arch)
{
	const char *p = text, *end = text + strnlen(text, len), *tok;
	bool ptx = false;
	size_t n;
	int err = 0;

	while (!err && (n = ptx_token(&p, end, &tok))) {
		if (is_tok(tok, n, ".entry")) {
			n = ptx_token(&p, end, &tok);
			if (n && ptx_word(*tok) && *tok != '.')
				err = push_name(&m->kernels, &m->kernels_n, tok, n);
		} else if (is_tok(tok, n, ".target")) {
			ptx = true;
			if (own_arch)
				err = ptx_target(&p, end, m);
		} else if (is_tok(tok, n, ".version")) {
			ptx = true;
		}
	}
	return err < 0 ? err : ptx;
}

/* ---- fatbin ---- */

static bool all_zero(const uint8_t *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * A zstd payload, decompressed into *@out. Return: 0, 1 when it is larger than
 * is read here, -ENOMEM, or -SELFCKPT_ELENGTH when it does not decode.
 */
static int unpack(const uint8_t *src, size_t n, uint64_t raw, uint64_t at, uint8_t **out,
		  size_t *out_n)
{
	size_t frame = ZSTD_findFrameCompressedSize(src, n), got;

	if (ZSTD_isError(frame))
		return damaged("fatbin entry at offset %llu: compressed payload: %s",
			       (unsigned long long)at, ZSTD_getErrorName(frame));
	if (!raw)
		raw = ZSTD_getFrameContentSize(src, frame);
	if (!raw || raw > UNPACK_MAX)
		return 1; /* also ZSTD_CONTENTSIZE_UNKNOWN and _ERROR, which are huge */
	if (!(*out = malloc(raw)))
		return -ENOMEM;
	got = ZSTD_decompress(*out, raw, src, frame);
	if (ZSTD_isError(got)) {
		free(*out);
		return damaged("fatbin entry at offset %llu: compressed payload: %s",
			       (unsigned long long)at, ZSTD_getErrorName(got));
	}
	*out_n = got;
	return 0;
}

/* The kernels of one entry's code: ELF or PTX, maybe compressed. */
static int fatbin_code(const uint8_t *p, uint64_t at, unsigned kind, struct sc_module_info *m)
{
	uint64_t hs = sc_get_le32(p + 4), n = sc_get_le64(p + 8), flags = sc_get_le64(p + 40);
	const uint8_t *code = p + hs;
	uint8_t *raw = NULL;
	size_t raw_n = 0;
	int err = 0;

	if (flags & FATBIN_F_ZSTD) {
		err = unpack(code, n, sc_get_le64(p + 56), at, &raw, &raw_n);
		code = raw;
		n = raw_n;
	} else if (flags & FATBIN_F_OLD_COMPRESS) {
		err = 1;
	}
	if (err) {
		m->kernels_partial = err > 0;
		return err < 0 ? err : 0;
	}
	if (kind == FATBIN_ELF)
		err = elf_read(code, n, m, false);
	else if ((err = ptx_read((const char *)code, n, m, false)) > 0)
		err = 0;
	free(raw);
	return err;
}

/* One entry at @p, @left bytes before the fatbin's end; *@used: its length. */
static int fatbin_entry(const uint8_t *p, uint64_t left, uint64_t at, struct sc_module_info *m,
			uint64_t *used)
{
	unsigned kind, sm;
	uint64_t hs, n, flags;
	char variant;
	int err;

	if (left < FATBIN_ENTRY_MIN)
		return damaged("fatbin entry at offset %llu: %llu bytes left for a %u-byte header",
			       (unsigned long long)at, (unsigned long long)left, FATBIN_ENTRY_MIN);
	kind = sc_get_le16(p);
	hs = sc_get_le32(p + 4);
	n = sc_get_le64(p + 8);
	sm = sc_get_le32(p + 28);
	flags = sc_get_le64(p + 40);
	if (hs < FATBIN_ENTRY_MIN || hs > left || n > left - hs)
		return damaged("fatbin entry at offset %llu: a %llu-byte header and %llu bytes of "
			       "code do not fit in the %llu bytes left", (unsigned long long)at,
			       (unsigned long long)hs, (unsigned long long)n,
			       (unsigned long long)left);
	*used = hs + n;
	if (kind != FATBIN_PTX && kind != FATBIN_ELF)
		return 0; /* code for tools (LTO IR, ...), none the driver runs */
	variant = flags & FATBIN_F_ARCH ? 'a' : flags & FATBIN_F_FAMILY ? 'f' : 0;
	err = push_arch(m, kind == FATBIN_PTX ? SC_CODE_PTX : SC_CODE_SASS, sm, variant,
			flags & (FATBIN_F_ZSTD | FATBIN_F_OLD_COMPRESS));
	return err ? err : fatbin_code(p, at, kind, m);
}

static int fatbin_read(const uint8_t *img, size_t len, struct sc_module_info *m)
{
	uint64_t hs, size, off, end, used = 0;
	unsigned version;
	int err = 0;

	if (len < FATBIN_HEADER)
		return damaged("fatbin header cut at %zu of %u bytes", len, FATBIN_HEADER);
	version = sc_get_le16(img + 4);
	hs = sc_get_le16(img + 6);
	size = sc_get_le64(img + 8);
	if (version != 1)
		return damaged("fatbin version %u, expected 1", version);
	if (hs < FATBIN_HEADER || hs > len || size > len - hs)
		return damaged("fatbin of %llu bytes after a %llu-byte header does not fit in "
			       "%zu bytes", (unsigned long long)size, (unsigned long long)hs, len);
	end = hs + size;
	for (off = hs; !err && off < end; off += used) {
		if (end - off < FATBIN_ENTRY_MIN && all_zero(img + off, end - off))
			break; /* padding */
		err = fatbin_entry(img + off, end - off, off, m, &used);
	}
	return err;
}

/* ---- describing an image ---- */

static enum sc_module_format sniff(const uint8_t *img, size_t len)
{
	if (len >= SELFMAG && !memcmp(img, ELFMAG, SELFMAG))
		return SC_MODULE_CUBIN;
	if (len >= 4 && sc_get_le32(img) == FATBIN_MAGIC)
		return SC_MODULE_FATBIN;
	return SC_MODULE_PTX; /* or text of no known kind: ptx_read() tells */
}

int sc_module_info(const void *image, size_t len, struct sc_module_info *out)
{
	const uint8_t *img = image;
	int err = 0;

	memset(out, 0, sizeof(*out));
	out->format = sniff(img, len);
	switch (out->format) {
	case SC_MODULE_CUBIN: err = elf_read(img, len, out, true); break;
	case SC_MODULE_FATBIN: err = fatbin_read(img, len, out); break;
	default:
		err = ptx_read(image, len, out, true);
		if (err == 0) {
			sc_module_info_release(out); /* not PTX: nothing it found means anything */
			return 0;
		}
		err = err < 0 ? err : 0;
		break;
	}
	if (err < 0) {
		enum sc_module_format f = out->format;

		sc_module_info_release(out);
		out->format = f; /* what it claims to be, to say what is damaged */
		return err;
	}
	finish(out);
	return 0;
}

/* ---- where it runs ---- */

const char *sc_module_format_name(enum sc_module_format f)
{
	static const char *const names[] = { "unknown", "cubin", "fatbin", "ptx" };

	return (unsigned)f < sizeof(names) / sizeof(names[0]) ? names[f] : "unknown";
}

const char *sc_code_kind_name(enum sc_code_kind c)
{
	return c == SC_CODE_SASS ? "SASS" : "PTX";
}

const char *sc_module_arch_name(const struct sc_module_arch *a, char *buf, size_t n)
{
	snprintf(buf, n, "%s_%u%u%.1s", a->code == SC_CODE_PTX ? "compute" : "sm", a->major,
		 a->minor, a->variant ? &a->variant : "");
	return buf;
}

/* printf at *@used into @buf, which ends in "..." once it is full. */
static void append(char *buf, size_t n, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (!n || *used >= n)
		return;
	va_start(ap, fmt);
	k = vsnprintf(buf + *used, n - *used, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= n - *used) {
		*used = n;
		if (n > 3)
			memcpy(buf + n - 4, "...", 4);
		return;
	}
	*used += (size_t)k;
}

const char *sc_module_archs_text(const struct sc_module_info *m, char *buf, size_t n)
{
	char name[SC_MODULE_ARCH_NAME];
	size_t used = 0;

	if (n)
		*buf = '\0';
	if (!m->archs_n)
		append(buf, n, &used, "none");
	for (size_t i = 0; i < m->archs_n; i++)
		append(buf, n, &used, "%s%s (%s)", i ? ", " : "",
		       sc_module_arch_name(&m->archs[i], name, sizeof(name)),
		       sc_code_kind_name(m->archs[i].code));
	return buf;
}

static bool arch_runs(const struct sc_module_arch *a, unsigned major, unsigned minor)
{
	bool same_major = major == a->major;
	bool same_or_newer = major > a->major || (same_major && minor >= a->minor);

	if (a->variant == 'a')
		return same_major && minor == a->minor;
	if (a->code == SC_CODE_SASS || a->variant == 'f')
		return same_major && minor >= a->minor;
	return same_or_newer;
}

/* "sm_80 (SASS) runs on 8.0 and later 8.x", for a refusal to explain itself. */
static void append_rule(char *buf, size_t n, size_t *used, const struct sc_module_arch *a)
{
	char name[SC_MODULE_ARCH_NAME];

	append(buf, n, used, "%s (%s) runs on %u.%u", sc_module_arch_name(a, name, sizeof(name)),
	       sc_code_kind_name(a->code), a->major, a->minor);
	if (a->variant == 'a')
		append(buf, n, used, " only");
	else if (a->code == SC_CODE_SASS || (a->code == SC_CODE_PTX && a->variant == 'f'))
		append(buf, n, used, " and later %u.x", a->major);
	else
		append(buf, n, used, " and later");
}

bool sc_module_runs_on(const struct sc_module_info *m, int major, int minor, char *why,
		       size_t why_len)
{
	size_t used = 0;

	if (why && why_len)
		*why = '\0';
	else
		why_len = 0;
	if (m->format == SC_MODULE_UNKNOWN) {
		append(why, why_len, &used, "the module's format is not known here");
		return true;
	}
	if (!m->archs_n) {
		append(why, why_len, &used, "no architecture found in the module");
		return true;
	}
	for (size_t i = 0; i < m->archs_n; i++)
		if (major >= 0 && minor >= 0 &&
		    arch_runs(&m->archs[i], (unsigned)major, (unsigned)minor))
			return true;
	append(why, why_len, &used, "no code for compute capability %d.%d: ", major, minor);
	for (size_t i = 0; i < m->archs_n; i++) {
		if (i)
			append(why, why_len, &used, "; ");
		append_rule(why, why_len, &used, &m->archs[i]);
	}
	return false;
}

/* ---- the modules of a CUDA_LOG record ---- */

#define log_err(r, rec, code, fmt, ...)                                                      \
	sc_err(code, "cuda-log record %u of '%s': " fmt, (rec)->seq, sc_reader_name(r),       \
	       ##__VA_ARGS__)

void sc_cuda_log_release(struct sc_cuda_log *log)
{
	if (!log)
		return;
	for (size_t i = 0; i < log->mods_n; i++) {
		sc_module_info_release(&log->mods[i].info);
		free(log->mods[i].why);
	}
	free(log->mods);
	memset(log, 0, sizeof(*log));
}

/* A module that cannot be described is kept, with why; only running out of memory fails. */
static int describe(struct sc_cuda_module *mod, const uint8_t *img)
{
	int err = sc_module_info(img, mod->len, &mod->info);

	if (err == -ENOMEM)
		return sc_err(ENOMEM, "out of memory describing a %llu-byte CUDA module",
			      (unsigned long long)mod->len);
	if (err < 0) {
		mod->err = err;
		if (!(mod->why = strdup(selfckpt_last_error())))
			return sc_err(ENOMEM, "out of memory describing a CUDA module");
	}
	return 0;
}

/* The header of module @i, at payload offset @at; *@left: payload bytes not read yet. */
static int read_module_header(struct sc_reader *r, const struct sc_record *rec, uint32_t i,
			      uint64_t *left, struct sc_cuda_module *mod)
{
	uint64_t at = rec->raw_len - *left;
	uint8_t h[SC_CUDA_IMAGE_HEADER];
	uint32_t kind, reserved;
	int library, err;

	if (*left < sizeof(h))
		return log_err(r, rec, SELFCKPT_ELENGTH, "the header of module %u at payload "
			       "offset %llu runs past the payload's end", i,
			       (unsigned long long)at);
	if ((err = sc_reader_read(r, h, sizeof(h))) < 0)
		return err;
	*left -= sizeof(h);
	kind = sc_get_le32(h);
	reserved = sc_get_le32(h + 4);
	if (kind > 1 || reserved)
		return log_err(r, rec, kind > 1 ? SELFCKPT_EUNKNOWN : SELFCKPT_ERESERVED,
			       "module %u at payload offset %llu: kind %u (expected 0 or 1), "
			       "reserved 0x%x (expected 0)", i, (unsigned long long)at, kind,
			       reserved);
	sc_cuda_image_header_decode(h, &library, &mod->len);
	mod->library = library;
	if (mod->len > *left || sc_cuda_pad8(mod->len) > *left)
		return log_err(r, rec, SELFCKPT_ELENGTH, "module %u at payload offset %llu is "
			       "%llu bytes long, but %llu are left", i, (unsigned long long)at,
			       (unsigned long long)mod->len, (unsigned long long)*left);
	return 0;
}

static int read_module(struct sc_reader *r, const struct sc_record *rec, uint32_t i,
		       uint64_t *left, struct sc_cuda_module *mod)
{
	uint8_t pad[8] = { 0 }, *img;
	size_t n_pad;
	int err = read_module_header(r, rec, i, left, mod);

	if (err < 0)
		return err;
	n_pad = sc_cuda_pad8(mod->len) - mod->len;
	if (!(img = malloc(mod->len ? mod->len : 1)))
		return sc_err(ENOMEM, "out of memory reading module %u (%llu bytes) of '%s'", i,
			      (unsigned long long)mod->len, sc_reader_name(r));
	err = sc_reader_read(r, img, mod->len);
	if (!err)
		err = sc_reader_read(r, pad, n_pad);
	if (!err && !all_zero(pad, n_pad))
		err = log_err(r, rec, SELFCKPT_ERESERVED, "the padding after module %u is not zero",
			      i);
	*left -= mod->len + n_pad;
	if (!err)
		err = describe(mod, img);
	free(img);
	return err;
}

int sc_cuda_log_read(struct sc_reader *r, const struct sc_record *rec, struct sc_cuda_log *log)
{
	uint64_t left = rec->raw_len;
	int err;

	memset(log, 0, sizeof(*log));
	log->seq = rec->seq;
	err = sc_cuda_summary_decode(rec->meta, rec->meta_len, &log->sum);
	if (err < 0)
		return log_err(r, rec, -err, "its %u-byte summary is damaged: %s", rec->meta_len,
			       selfckpt_strerror(err));
	if (log->sum.modules > left / SC_CUDA_IMAGE_HEADER)
		return log_err(r, rec, SELFCKPT_ELENGTH, "%u modules cannot fit in a payload of "
			       "%llu bytes", log->sum.modules, (unsigned long long)left);
	log->mods = calloc(log->sum.modules ? log->sum.modules : 1, sizeof(*log->mods));
	if (!log->mods)
		return sc_err(ENOMEM, "out of memory reading the CUDA modules of '%s'",
			      sc_reader_name(r));
	for (uint32_t i = 0; !err && i < log->sum.modules; i++) {
		err = read_module(r, rec, i, &left, &log->mods[i]);
		log->mods_n++;
	}
	if (!err && left)
		err = log_err(r, rec, SELFCKPT_ELENGTH, "%llu bytes follow the last of its %u "
			      "modules", (unsigned long long)left, log->sum.modules);
	if (err < 0)
		sc_cuda_log_release(log);
	return err;
}
