/* SPDX-License-Identifier: MIT */
/*
 * module_info.c - describing a CUDA module image: sc_module_info() and
 * sc_module_info_release() (module_info.h).
 *
 * The first bytes tell the format; the reader of that format (module_elf.c,
 * module_fatbin.c, module_ptx.c) fills the description through the helpers
 * here, which keep each architecture once; the lists are sorted at the end.
 * Text that is not PTX is no format known here.
 */
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/tools/module_internal.h"

#define SM_MAX 999               /* sm_999: compute capability 99.9 */

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

int sc_module_push_arch(struct sc_module_info *m, enum sc_code_kind code, unsigned sm,
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

int sc_module_push_kernel(struct sc_module_info *m, const char *name, size_t len)
{
	char *s;

	if (!len)
		return 0;
	if (grow((void **)&m->kernels, m->kernels_n, sizeof(*m->kernels)) < 0 ||
	    !(s = strndup(name, len)))
		return -ENOMEM;
	m->kernels[m->kernels_n++] = s;
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

unsigned sc_module_sm_parse(const char *t, size_t n, char *variant)
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

static enum sc_module_format sniff(const uint8_t *img, size_t len)
{
	if (len >= SELFMAG && !memcmp(img, ELFMAG, SELFMAG))
		return SC_MODULE_CUBIN;
	if (len >= 4 && sc_get_le32(img) == SC_FATBIN_MAGIC)
		return SC_MODULE_FATBIN;
	return SC_MODULE_PTX; /* or text of no known kind: sc_module_ptx_read() tells */
}

int sc_module_info(const void *image, size_t len, struct sc_module_info *out)
{
	const uint8_t *img = image;
	int err = 0;

	memset(out, 0, sizeof(*out));
	out->format = sniff(img, len);
	switch (out->format) {
	case SC_MODULE_CUBIN: err = sc_module_elf_read(img, len, out, true); break;
	case SC_MODULE_FATBIN: err = sc_module_fatbin_read(img, len, out); break;
	default:
		err = sc_module_ptx_read(image, len, out, true);
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
