/* SPDX-License-Identifier: MIT */
/*
 * parent_record.c - the parent record of an incremental image: the image that
 * holds the bytes this one leaves to it, by creation time, size and file
 * checksum, and where it is (spec §9.14, R-INC-1 to R-INC-3).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/sc_parent.h"
#include "format/sc_log.h"

#define PARENT_FIXED 48
#define PARENT_PATH_MAX 4095

int sc_parent_write(struct sc_writer *w, const struct sc_parent_info *p)
{
	size_t len = strlen(p->path), size = PARENT_FIXED + len;
	uint8_t *m;
	int err;

	if (len == 0 || len > PARENT_PATH_MAX)
		return sc_err(SELFCKPT_EUSAGE, "the parent image's path '%s' is empty or longer "
			      "than %d bytes", p->path, PARENT_PATH_MAX);
	if (!(m = calloc(1, size)))
		return sc_err(ENOMEM, "out of memory writing the parent record");
	sc_put_le64(m, p->created_ns);
	sc_put_le64(m + 8, p->size);
	sc_put_le64(m + 16, p->file_sum);
	sc_put_le32(m + 24, p->depth);
	sc_put_le32(m + 28, (uint32_t)len);
	memcpy(m + PARENT_FIXED, p->path, len);
	err = sc_writer_record(w, SC_REC_PARENT, SC_RF_REQUIRED, m, (uint32_t)size, NULL, 0);
	free(m);
	return err;
}

static int bad(struct sc_reader *r, const struct sc_record *rec, int code, const char *why)
{
	return sc_err(code, "bad parent record %u in '%s' at offset %llu: %s", rec->seq,
		      sc_reader_name(r), (unsigned long long)rec->offset, why);
}

int sc_parent_read(struct sc_reader *r, const struct sc_record *rec, struct sc_parent_info *p)
{
	const uint8_t *m = rec->meta;
	uint32_t len;

	memset(p, 0, sizeof(*p));
	if (!(sc_reader_header(r)->flags & SC_HF_INCREMENTAL))
		return bad(r, rec, SELFCKPT_ELENGTH, "the image is not incremental");
	if (rec->meta_len < PARENT_FIXED)
		return bad(r, rec, SELFCKPT_ELENGTH, "its metadata is shorter than 48 bytes");
	if (sc_get_le64(m + 32) | sc_get_le64(m + 40))
		return bad(r, rec, SELFCKPT_ERESERVED, "the reserved bytes at 32 are set");
	if (rec->raw_len)
		return bad(r, rec, SELFCKPT_ELENGTH, "it has a payload");
	len = sc_get_le32(m + 28);
	if (len == 0 || len > PARENT_PATH_MAX || len > rec->meta_len - PARENT_FIXED ||
	    memchr(m + rec->meta_len - len, 0, len))
		return bad(r, rec, SELFCKPT_ELENGTH, "the path is empty, too long, or holds a NUL");
	p->created_ns = sc_get_le64(m);
	p->size = sc_get_le64(m + 8);
	p->file_sum = sc_get_le64(m + 16);
	p->depth = sc_get_le32(m + 24);
	if (p->depth == 0 || p->depth > SC_CHAIN_MAX)
		return bad(r, rec, SELFCKPT_ELENGTH, "the depth is not 1 to 64");
	/* the variable part ends the meta: a newer minor may grow the fixed part */
	if (!(p->path = strndup((const char *)m + rec->meta_len - len, len)))
		return sc_err(ENOMEM, "out of memory reading '%s'", sc_reader_name(r));
	return 0;
}

void sc_parent_free(struct sc_parent_info *p)
{
	free(p->path);
	p->path = NULL;
}

int sc_parent_find(struct sc_reader *r, struct sc_parent_info *p)
{
	struct sc_record rec;
	int err;

	memset(p, 0, sizeof(*p));
	if (!(sc_reader_header(r)->flags & SC_HF_INCREMENTAL))
		return 0;
	/* [R-INC-1] before every segment and devmem record */
	while ((err = sc_reader_next(r, &rec)) == 1 && rec.type != SC_REC_PARENT &&
	       rec.type != SC_REC_SEGMENT && rec.type != SC_REC_DEVMEM)
		;
	if (err == 1 && rec.type == SC_REC_PARENT && (err = sc_parent_read(r, &rec, p)) == 0)
		return 1;
	if (err >= 0)
		err = sc_err(SELFCKPT_ELENGTH, "'%s' is an incremental image without a parent record "
			     "before its memory", sc_reader_name(r));
	return err;
}

bool sc_parent_is(const struct sc_reader *r, const struct sc_parent_info *want)
{
	uint64_t size = 0, sum = 0;

	return sc_reader_file_identity(r, &size, &sum) == 0 && size == want->size &&
	       sum == want->file_sum && sc_reader_header(r)->created_ns == want->created_ns;
}

char *sc_parent_path(const char *child, const char *parent)
{
	char dir[PATH_MAX], *out;

	if (parent[0] == '/')
		return strdup(parent);
	snprintf(dir, sizeof(dir), "%s", child);
	if (asprintf(&out, "%s/%s", dirname(dir), parent) < 0)
		return NULL;
	return out;
}
