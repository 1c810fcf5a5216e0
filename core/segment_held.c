/* SPDX-License-Identifier: MIT */
/*
 * segment_held.c - mappings of a memfd or removed file that a descriptor of
 * the image also holds. The descriptor's record has the file's contents and
 * comes back as that file again; the mapping must map the same file, not a
 * copy of its pages: writes through one are seen through the other, and the
 * pages of a private mapping the program never wrote still follow the file.
 * So such a mapping is written with file runs (segment flag SC_SEG_HELD,
 * format 1.3), and the restore maps the file its descriptor comes back with.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "core/checkpoint_internal.h"
#include "core/sc_core.h"
#include "core/sc_fds.h"
#include "format/sc_log.h"

static struct sc_held_file *find(const struct sc_save_opts *o, uint64_t dev, uint64_t inode)
{
	for (size_t i = 0; i < o->n_held; i++)
		if (o->held[i].dev == dev && o->held[i].inode == inode)
			return &o->held[i];
	return NULL;
}

int sc_held_files(const struct sc_fd *fds, size_t n, struct sc_save_opts *o)
{
	for (size_t i = 0; i < n; i++) {
		const struct sc_fd *f = &fds[i];
		int mode = f->open_flags & O_ACCMODE;
		struct sc_held_file *h;

		/* 0, 1 and 2 may be the restorer's own at restore (spec §9.6) */
		if ((f->kind != SC_FD_MEMFD && f->kind != SC_FD_DELETED) || f->fd <= 2)
			continue;
		h = find(o, f->dev, f->inode);
		if (!h) {
			h = realloc(o->held, (o->n_held + 1) * sizeof(*h));
			if (!h)
				return sc_err(ENOMEM, "out of memory listing the files descriptors hold");
			o->held = h;
			h = &o->held[o->n_held++];
			*h = (struct sc_held_file){ .dev = f->dev, .inode = f->inode };
		}
		h->readable |= mode == O_RDONLY || mode == O_RDWR;
		h->writable |= mode == O_RDWR;
	}
	return 0;
}

static const struct sc_held_file *held_by(const struct sc_save_opts *o, const struct sc_vma *v)
{
	return v->kind == SC_VMA_DELETED && sc_vma_saved(v) ? find(o, v->dev, v->inode) : NULL;
}

void sc_segments_held(const struct sc_save_opts *o, struct sc_vma *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (held_by(o, &v[i]))
			v[i].flags |= SC_VMA_HELD;
}

int sc_segments_held_check(const struct sc_save_opts *o, const struct sc_vma *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct sc_held_file *h = held_by(o, &v[i]);
		bool shared = v[i].flags & SC_VMA_SHARED;
		bool write = shared && ((v[i].prot & PROT_WRITE) ||
					(v[i].vmflags & SC_VMF_MAYWRITE));

		if (h && (write ? !h->writable : !h->readable))
			return sc_err(SELFCKPT_EHOST, "the %s mapping of '%s' at 0x%llx-0x%llx maps "
				      "a file that the program's descriptors hold %s: it cannot "
				      "come back as one file with them, so no image is written",
				      shared ? "shared" : "private", v[i].path,
				      (unsigned long long)v[i].start, (unsigned long long)v[i].end,
				      h->readable ? "read-only" : "write-only");
	}
	return 0;
}
