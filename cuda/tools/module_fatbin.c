/* SPDX-License-Identifier: MIT */
/*
 * module_fatbin.c - reading a fatbin: sc_module_fatbin_read() (module_internal.h).
 *
 * A fatbin is a 16-byte header (magic 0xBA55ED50 u32, version u16 = 1, header
 * size u16, size u64 of the entries that follow), then entries, each a header
 * and its payload, next to each other. An entry header, of its own size (64
 * bytes or more), little-endian:
 *   @0 kind u16 (1 PTX, 2 ELF; others hold nothing a driver runs), @4 header
 *   size u32, @8 payload size u64 (padded to 8), @28 architecture u32 (major *
 *   10 + minor), @40 flags u64, @56 payload size once decompressed u64.
 * Flags: 0x100000 architecture-specific (sm_90a), 0x200000 family-specific
 * (sm_100f), 0x8000 payload compressed with zstd (read here), 0x2000 payload
 * compressed with the older scheme (not read: that entry's kernels stay unknown).
 * The payloads are cubins and PTX, read by module_elf.c and module_ptx.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <zstd.h>

#include "cuda/tools/module_internal.h"

#define FATBIN_HEADER 16
#define FATBIN_ENTRY_MIN 64
#define FATBIN_PTX 1
#define FATBIN_ELF 2
#define FATBIN_F_OLD_COMPRESS 0x2000ull
#define FATBIN_F_ZSTD 0x8000ull
#define FATBIN_F_ARCH 0x100000ull
#define FATBIN_F_FAMILY 0x200000ull
#define UNPACK_MAX (256u << 20)  /* largest decompressed fatbin entry read */

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
		return sc_module_damaged("fatbin entry at offset %llu: compressed payload: %s",
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
		return sc_module_damaged("fatbin entry at offset %llu: compressed payload: %s",
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
		err = sc_module_elf_read(code, n, m, false);
	else if ((err = sc_module_ptx_read((const char *)code, n, m, false)) > 0)
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
		return sc_module_damaged("fatbin entry at offset %llu: %llu bytes left for a "
					 "%u-byte header", (unsigned long long)at,
					 (unsigned long long)left, FATBIN_ENTRY_MIN);
	kind = sc_get_le16(p);
	hs = sc_get_le32(p + 4);
	n = sc_get_le64(p + 8);
	sm = sc_get_le32(p + 28);
	flags = sc_get_le64(p + 40);
	if (hs < FATBIN_ENTRY_MIN || hs > left || n > left - hs)
		return sc_module_damaged("fatbin entry at offset %llu: a %llu-byte header and "
					 "%llu bytes of code do not fit in the %llu bytes left",
					 (unsigned long long)at, (unsigned long long)hs,
					 (unsigned long long)n, (unsigned long long)left);
	*used = hs + n;
	if (kind != FATBIN_PTX && kind != FATBIN_ELF)
		return 0; /* code for tools (LTO IR, ...), none the driver runs */
	variant = flags & FATBIN_F_ARCH ? 'a' : flags & FATBIN_F_FAMILY ? 'f' : 0;
	err = sc_module_push_arch(m, kind == FATBIN_PTX ? SC_CODE_PTX : SC_CODE_SASS, sm,
				  variant, flags & (FATBIN_F_ZSTD | FATBIN_F_OLD_COMPRESS));
	return err ? err : fatbin_code(p, at, kind, m);
}

int sc_module_fatbin_read(const uint8_t *img, size_t len, struct sc_module_info *m)
{
	uint64_t hs, size, off, end, used = 0;
	unsigned version;
	int err = 0;

	if (len < FATBIN_HEADER)
		return sc_module_damaged("fatbin header cut at %zu of %u bytes", len,
					 FATBIN_HEADER);
	version = sc_get_le16(img + 4);
	hs = sc_get_le16(img + 6);
	size = sc_get_le64(img + 8);
	if (version != 1)
		return sc_module_damaged("fatbin version %u, expected 1", version);
	if (hs < FATBIN_HEADER || hs > len || size > len - hs)
		return sc_module_damaged("fatbin of %llu bytes after a %llu-byte header does not "
					 "fit in %zu bytes", (unsigned long long)size,
					 (unsigned long long)hs, len);
	end = hs + size;
	for (off = hs; !err && off < end; off += used) {
		if (end - off < FATBIN_ENTRY_MIN && all_zero(img + off, end - off))
			break; /* padding */
		err = fatbin_entry(img + off, end - off, off, m, &used);
	}
	return err;
}
