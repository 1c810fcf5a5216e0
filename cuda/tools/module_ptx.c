/* SPDX-License-Identifier: MIT */
/*
 * module_ptx.c - reading PTX text: sc_module_ptx_read() (module_internal.h).
 *
 * ".target sm_XY" names the architecture, ".entry NAME" each kernel. The text
 * is read as tokens, with comments and strings skipped, so a directive's name
 * inside either says nothing; no more of PTX's grammar is needed.
 */
#include <ctype.h>
#include <string.h>

#include "cuda/tools/module_internal.h"

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
		if ((sm = sc_module_sm_parse(tok, n, &variant)))
			err = sc_module_push_arch(m, SC_CODE_PTX, sm, variant, false);
		before = *pp;
		n = ptx_token(pp, end, &tok);
	} while (!err && is_tok(tok, n, ","));
	*pp = before; /* not a comma: the next directive's token */
	return err;
}

int sc_module_ptx_read(const char *text, size_t len, struct sc_module_info *m, bool own_arch)
{
	const char *p = text, *end = text + strnlen(text, len), *tok;
	bool ptx = false;
	size_t n;
	int err = 0;

	while (!err && (n = ptx_token(&p, end, &tok))) {
		if (is_tok(tok, n, ".entry")) {
			n = ptx_token(&p, end, &tok);
			if (n && ptx_word(*tok) && *tok != '.')
				err = sc_module_push_kernel(m, tok, n);
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
