/* SPDX-License-Identifier: MIT */
/*
 * devmem_chain.c - the parent pieces of an incremental image followed to the
 * records that store their bytes (devmem_chain.h, spec R-INC-6).
 *
 * Each parent's devmem records are listed from its index and metas alone, no
 * payload read, the first time a child asks it for a piece, and sorted, so
 * that every piece costs one search per image it passes through.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/shared/devmem_chain.h"
#include "format/sc_array.h"
#include "format/sc_format.h"
#include "format/sc_log.h"

static int key_cmp(const struct sc_devmem *a, const struct sc_devmem *b)
{
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static int entry_cmp(const void *a, const void *b)
{
	return key_cmp(&((const struct sc_devmem_entry *)a)->d,
		       &((const struct sc_devmem_entry *)b)->d);
}

void sc_devmem_chain_free(struct sc_devmem_chain *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->path[i]);
		free(c->entries[i]);
	}
	memset(c, 0, sizeof(*c));
}

/* The parent of the image open in @r at @path, opened and checked: its reader, or NULL at a full image. */
static int next_parent(struct sc_reader *r, const char *path, char **parent_path,
		       struct sc_reader **parent)
{
	struct sc_read_opts ro = { .threads = 1 };
	struct sc_parent_info p;
	int err = sc_parent_find(r, &p);

	*parent = NULL;
	*parent_path = NULL;
	if (err <= 0)
		return err;
	if (!(*parent_path = sc_parent_path(path, p.path))) {
		sc_parent_free(&p);
		return sc_err(ENOMEM, "out of memory following the chain of '%s'", path);
	}
	if (access(*parent_path, R_OK) < 0)
		err = sc_err(SELFCKPT_ENOPARENT, "'%s' is incremental: it needs its parent image "
			     "'%s', which cannot be read (%s)", path, *parent_path, strerror(errno));
	else if ((err = sc_reader_open(parent, *parent_path, &ro)) < 0)
		err = sc_err(SELFCKPT_EPARENT, "'%s', the parent image of '%s', cannot be used "
			     "(above)", *parent_path, path);
	else if (!sc_parent_is(*parent, &p))
		err = sc_err(SELFCKPT_EPARENT, "'%s' needs its parent image '%s' as it was (%llu "
			     "bytes, file checksum 0x%016llx); the file there is another image",
			     path, *parent_path, (unsigned long long)p.size,
			     (unsigned long long)p.file_sum);
	sc_parent_free(&p);
	if (err < 0) {
		sc_reader_free(*parent);
		*parent = NULL;
	}
	return err < 0 ? err : 1;
}

int sc_devmem_chain_open(struct sc_devmem_chain *c, const char *path)
{
	struct sc_read_opts ro = { .threads = 1 };
	struct sc_reader *r = NULL, *parent;
	int err;

	memset(c, 0, sizeof(*c));
	if (!(c->path[0] = strdup(path)))
		return sc_err(ENOMEM, "out of memory following the chain of '%s'", path);
	c->n = 1;
	err = sc_reader_open(&r, path, &ro);
	while (err >= 0) {
		char *next;

		if ((err = next_parent(r, c->path[c->n - 1], &next, &parent)) <= 0) {
			free(next);
			break;
		}
		sc_reader_free(r);
		r = parent;
		if (c->n == SC_CHAIN_MAX + 1) {
			free(next);
			err = sc_err(SELFCKPT_EPARENT, "the chain of '%s' holds more than %d "
				     "incremental images", path, SC_CHAIN_MAX);
			break;
		}
		c->path[c->n++] = next;
	}
	sc_reader_free(r);
	if (err < 0)
		sc_devmem_chain_free(c);
	return err < 0 ? err : 0;
}

/* The devmem records of the image at @level, from its index and their metas. */
static int list_level(struct sc_devmem_chain *c, size_t level)
{
	struct sc_read_opts ro = { .threads = 1 };
	const struct sc_index_entry *e;
	struct sc_reader *r = NULL;
	struct sc_record rec;
	size_t n, cap = 0;
	bool incremental;
	int err = sc_reader_open(&r, c->path[level], &ro);

	if (!err)
		err = sc_reader_index(r, &e, &n);
	incremental = !err && (sc_reader_header(r)->flags & SC_HF_INCREMENTAL);
	for (size_t i = 0; !err && i < n; i++) {
		struct sc_devmem_entry *v;

		if (e[i].type != SC_REC_DEVMEM)
			continue;
		if ((err = sc_reader_seek(r, i)) < 0 || (err = sc_reader_next(r, &rec)) < 0)
			break;
		if (sc_grow((void **)&c->entries[level], &cap, c->n_entries[level] + 1,
			    sizeof(*v))) {
			err = sc_err(ENOMEM, "out of memory reading '%s'", c->path[level]);
			break;
		}
		v = &c->entries[level][c->n_entries[level]];
		if ((err = sc_devmem_read(&rec, incremental, &v->d)) < 0) {
			err = sc_err(-err, "devmem record %zu of '%s' has damaged metadata: %s", i,
				     c->path[level], selfckpt_strerror(err));
			break;
		}
		v->index = i;
		c->n_entries[level]++;
	}
	sc_reader_free(r);
	if (err < 0)
		return err;
	qsort(c->entries[level], c->n_entries[level], sizeof(*c->entries[level]), entry_cmp);
	c->listed[level] = true;
	return 0;
}

static const struct sc_devmem_entry *lookup(const struct sc_devmem_chain *c, size_t level,
					     const struct sc_devmem *d)
{
	struct sc_devmem_entry key = { .d = *d };

	return bsearch(&key, c->entries[level], c->n_entries[level], sizeof(key), entry_cmp);
}

int sc_devmem_chain_find(struct sc_devmem_chain *c, size_t level, const struct sc_devmem *d,
			 struct sc_devmem_source *src)
{
	for (size_t l = level + 1; l < c->n; l++) {
		const struct sc_devmem_entry *e;
		int err;

		if (!c->listed[l] && (err = list_level(c, l)) < 0)
			return err;
		if (!(e = lookup(c, l, d)))
			break;
		if (!(e->d.flags & SC_DEVMEM_PARENT)) {
			*src = (struct sc_devmem_source){ l, e->index };
			return 0;
		}
	}
	return sc_err(SELFCKPT_EPARENT, "'%s' leaves %llu bytes of device memory at 0x%llx "
		      "(device %u) to its parent images, and none of them stores them: '%s' "
		      "is not the chain it was written with", c->path[level],
		      (unsigned long long)d->len, (unsigned long long)d->addr, d->dev,
		      c->path[level + 1 < c->n ? level + 1 : level]);
}

int sc_devmem_chain_source(struct sc_devmem_chain *c, struct sc_reader *r, size_t index,
			   struct sc_devmem_source *src)
{
	struct sc_record rec;
	struct sc_devmem d;
	int err;

	*src = (struct sc_devmem_source){ 0, index };
	if ((err = sc_reader_seek(r, index)) < 0 || (err = sc_reader_next(r, &rec)) < 0)
		return err;
	if ((err = sc_devmem_read(&rec, true, &d)) < 0)
		return sc_err(-err, "devmem record %zu of '%s' has damaged metadata: %s", index,
			      c->path[0], selfckpt_strerror(err));
	if (!(d.flags & SC_DEVMEM_PARENT))
		return 0;
	return (err = sc_devmem_chain_find(c, 0, &d, src)) < 0 ? err : 1;
}
