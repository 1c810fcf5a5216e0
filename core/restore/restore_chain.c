/* SPDX-License-Identifier: MIT */
/*
 * restore_chain.c - the parents of an incremental image (spec §9.14):
 * opened before the restore enters namespaces, loaded and checked before
 * anything changes (R-INC-4), and read for the pages the image leaves to
 * them (R-INC-5).
 *
 * The pages a chain gives are gathered for the whole image, then looked up
 * one image after the other: each parent's windows are read once, in address
 * order, its stored pages that are asked for going straight to where the
 * image is staged, its parent runs asked of the next image in turn.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/restore/restore_internal.h"
#include "format/sc_array.h"
#include "format/sc_log.h"

/* The parent record of the image open at @fd: 1 with @p filled, 0 for a full image. */
static int read_parent(int fd, const char *path, struct sc_parent_info *p)
{
	struct sc_read_opts ro = { .threads = 1 };
	struct sc_reader *r;
	int err = sc_reader_open_fd(&r, fd, path, &ro);

	memset(p, 0, sizeof(*p));
	if (err < 0)
		return err;
	err = sc_parent_find(r, p);
	sc_reader_free(r);
	return err;
}

/* Open the parent at @path that @child names: ENOPARENT where it cannot be read. */
static int open_parent(const char *child, const char *path, int *fd)
{
	int f = open(path, O_RDONLY | O_CLOEXEC);

	if (f < 0)
		return sc_err(SELFCKPT_ENOPARENT, "'%s' is incremental: it needs its parent image "
			      "'%s', which cannot be opened (%s); nothing was restored", child, path,
			      strerror(errno));
	close(f);
	return sc_image_open(path, fd); /* the checks every image gets */
}

int sc_chain_open(const char *path, int fd, struct sc_chain *c)
{
	const char *cur = path;
	int cur_fd = fd, err;

	memset(c, 0, sizeof(*c));
	for (;;) {
		struct sc_parent_info p;

		if ((err = read_parent(cur_fd, cur, &p)) <= 0)
			return err;
		if (c->n == SC_CHAIN_MAX) {
			sc_parent_free(&p);
			return sc_err(SELFCKPT_EPARENT, "'%s' is the %dth incremental image of its "
				      "chain: more than a chain may hold", cur, SC_CHAIN_MAX + 1);
		}
		c->want[c->n] = p;
		c->path[c->n] = sc_parent_path(cur, p.path);
		c->fd[c->n] = -1;
		if (!c->path[c->n])
			return sc_err(ENOMEM, "out of memory opening the images of '%s'", path);
		c->n++;
		if ((err = open_parent(cur, c->path[c->n - 1], &c->fd[c->n - 1])) < 0)
			return err;
		cur = c->path[c->n - 1];
		cur_fd = c->fd[c->n - 1];
	}
}

/* R-INC-3, R-INC-4: the image loaded at level @i is the one its child names. */
static int check_parent(const struct sc_chain *c, size_t i, const char *child)
{
	const struct image *im = &c->im[i];
	const struct sc_header *h = sc_reader_header(im->r);
	const struct sc_parent_info *want = &c->want[i];
	uint64_t size = 0, sum = 0;
	bool full = !(h->flags & SC_HF_INCREMENTAL);

	sc_reader_file_identity(im->r, &size, &sum);
	if (h->created_ns != want->created_ns || size != want->size || sum != want->file_sum)
		return sc_err(SELFCKPT_EPARENT, "'%s' needs its parent image '%s' as it was "
			      "(%llu bytes, file checksum 0x%016llx); the file there is another "
			      "image (%llu bytes, file checksum 0x%016llx); nothing was restored",
			      child, im->path, (unsigned long long)want->size,
			      (unsigned long long)want->file_sum, (unsigned long long)size,
			      (unsigned long long)sum);
	if (full != (want->depth == 1) || (!full && c->want[i + 1].depth != want->depth - 1))
		return sc_err(SELFCKPT_EPARENT, "'%s' and its parent image '%s' do not make a "
			      "chain: its depth %u does not follow its parent's", child, im->path,
			      want->depth);
	return 0;
}

int sc_chain_load(struct sc_chain *c, const char *path)
{
	int err = 0;

	if (!c->n)
		return 0;
	if (!(c->im = calloc(c->n, sizeof(*c->im))))
		return sc_err(ENOMEM, "out of memory loading the images of '%s'", path);
	for (size_t i = 0; i < c->n && !err; i++) {
		const char *child = i ? c->path[i - 1] : path;

		if ((err = sc_image_load_fd(&c->im[i], c->fd[i], c->path[i])) < 0)
			return sc_err_quiet(SELFCKPT_EPARENT, "'%s', the parent image of '%s', cannot be "
				      "used: %s; nothing was restored", c->path[i], child,
				      selfckpt_last_error());
		c->loaded = i + 1;
		err = check_parent(c, i, child);
	}
	return err;
}

int sc_chain_verify_start(struct sc_chain *c)
{
	int err = 0;

	for (size_t i = 0; i < c->loaded && !err; i++)
		err = sc_image_verify_start(&c->im[i]);
	return err;
}

int sc_chain_ask(struct sc_chain *c, uint64_t addr, uint64_t len, void *dst)
{
	if (!c || !c->n)
		return sc_err(SELFCKPT_EPARENT, "a page at 0x%llx is left to a parent image, and "
			      "the image has none open", (unsigned long long)addr);
	if (c->n_asks && c->asks[c->n_asks - 1].addr + c->asks[c->n_asks - 1].len > addr)
		return sc_err(SELFCKPT_ELENGTH, "parent runs out of address order at 0x%llx",
			      (unsigned long long)addr);
	if (sc_grow((void **)&c->asks, &c->cap_asks, c->n_asks + 1, sizeof(*c->asks)))
		return sc_err(ENOMEM, "out of memory planning the restore");
	c->asks[c->n_asks++] = (struct sc_ask){ addr, len, dst };
	return 0;
}

/* An ask cut at a window's end: within window @win. */
struct slice {
	uint64_t addr, len;
	uint8_t *dst;
	size_t win;
};

/* One level's reading: the windows of one image, and what is asked of each. */
struct level {
	struct image *im;
	const struct window **wins;   /* every window, in address order */
	size_t n_wins;
	struct slice *slices;         /* the asks cut at window ends, in address order */
	size_t n_slices, cap_slices;
	struct sc_ask *next;          /* what this image leaves to its own parent */
	size_t n_next, cap_next;
	struct sc_piece *pieces;
	size_t cap_pieces;
};

static uint64_t win_end(const struct window *w)
{
	return w->seg.start + w->seg.length;
}

static int list_windows(struct level *l)
{
	size_t n = 0;

	for (size_t i = 0; i < l->im->n_maps; i++)
		n += l->im->maps[i].n_win;
	if (!(l->wins = calloc(n ? n : 1, sizeof(*l->wins))))
		return sc_err(ENOMEM, "out of memory reading '%s'", l->im->path);
	for (size_t i = 0; i < l->im->n_maps; i++)
		for (size_t w = 0; w < l->im->maps[i].n_win; w++)
			l->wins[l->n_wins++] = &l->im->maps[i].win[w];
	return 0;
}

static int push(struct sc_ask **v, size_t *n, size_t *cap, struct sc_ask a)
{
	if (*n && (*v)[*n - 1].addr + (*v)[*n - 1].len == a.addr &&
	    (*v)[*n - 1].dst + (*v)[*n - 1].len == a.dst) {
		(*v)[*n - 1].len += a.len; /* one ask, as the image asked it */
		return 0;
	}
	if (sc_grow((void **)v, cap, *n + 1, sizeof(**v)))
		return sc_err(ENOMEM, "out of memory reading the parent images");
	(*v)[(*n)++] = a;
	return 0;
}

/* [R-INC-5] Cut the asks at window ends; a page no window holds is refused. */
static int slice(struct level *l, const struct sc_ask *asks, size_t n, const char *child)
{
	size_t wi = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t at = asks[i].addr, end = at + asks[i].len;

		while (at < end) {
			uint64_t take;

			while (wi < l->n_wins && win_end(l->wins[wi]) <= at)
				wi++;
			if (wi == l->n_wins || l->wins[wi]->seg.start > at)
				return sc_err(SELFCKPT_EPARENT, "'%s' leaves the page at 0x%llx to its "
					      "parent image '%s', which does not hold it; nothing was "
					      "restored", child, (unsigned long long)at, l->im->path);
			take = (win_end(l->wins[wi]) < end ? win_end(l->wins[wi]) : end) - at;
			if (sc_grow((void **)&l->slices, &l->cap_slices, l->n_slices + 1,
				    sizeof(*l->slices)))
				return sc_err(ENOMEM, "out of memory reading the parent images");
			l->slices[l->n_slices++] = (struct slice){
				at, take, asks[i].dst + (at - asks[i].addr), wi };
			at += take;
		}
	}
	return 0;
}

static int add_piece(struct level *l, size_t *n, void *dst, uint64_t len)
{
	if (!len)
		return 0;
	if (*n && !dst && !l->pieces[*n - 1].dst) {
		l->pieces[*n - 1].len += len;
		return 0;
	}
	if (sc_grow((void **)&l->pieces, &l->cap_pieces, *n + 1, sizeof(*l->pieces)))
		return sc_err(ENOMEM, "out of memory reading the parent images");
	l->pieces[(*n)++] = (struct sc_piece){ dst, len };
	return 0;
}

/*
 * One window and its slices [@s, @e): its stored pages asked for go to their
 * places, the others are dropped; asked pages of its parent runs go to the
 * next level; its zero pages need nothing (the staging memory is new).
 */
static int read_window(struct level *l, const struct window *w, size_t s, size_t e,
		       const char *child)
{
	uint64_t ps = l->im->page, used = 0; /* pieces up to the last one that lands */
	size_t n = 0, k = s;
	struct sc_record rec;
	int err = 0;

	for (uint32_t i = 0; i < w->seg.n_runs && !err; i++) {
		const struct sc_run *run = &w->seg.runs[i];
		uint64_t rs = w->seg.start + run->first * ps, re = rs + (uint64_t)run->count * ps;
		uint64_t cursor = rs;

		while (k < e && l->slices[k].addr + l->slices[k].len <= rs)
			k++;
		for (size_t j = k; j < e && l->slices[j].addr < re && !err; j++) {
			const struct slice *a = &l->slices[j];
			uint64_t os = a->addr > rs ? a->addr : rs;
			uint64_t oe = a->addr + a->len < re ? a->addr + a->len : re;
			uint8_t *dst = a->dst + (os - a->addr);

			if (run->kind == SC_RUN_STORED) {
				err = add_piece(l, &n, NULL, os - cursor);
				if (!err)
					err = add_piece(l, &n, dst, oe - os);
				used = n;
				cursor = oe;
			} else if (run->kind == SC_RUN_PARENT) {
				err = push(&l->next, &l->n_next, &l->cap_next,
					   (struct sc_ask){ os, oe - os, dst });
			} else if (run->kind != SC_RUN_ZERO) {
				err = sc_err(SELFCKPT_EPARENT, "'%s' leaves the page at 0x%llx to its "
					     "parent image '%s', which holds no contents there (run "
					     "kind %u); nothing was restored", child,
					     (unsigned long long)os, l->im->path, run->kind);
			}
		}
		if (!err && run->kind == SC_RUN_STORED)
			err = add_piece(l, &n, NULL, re - cursor);
	}
	if (err < 0 || !used)
		return err;
	if ((err = sc_reader_seek(l->im->r, w->record)) < 0 ||
	    (err = sc_reader_next(l->im->r, &rec)) < 0)
		return err;
	return sc_reader_read_pieces(l->im->r, l->pieces, (size_t)used);
}

static void level_free(struct level *l)
{
	free(l->wins);
	free(l->slices);
	free(l->pieces);
}

/* What @asks want of image @i of the chain; what it leaves to its own parent goes to @l->next. */
static int read_level(struct sc_chain *c, size_t i, struct level *l, const struct sc_ask *asks,
		      size_t n_asks, const char *child, unsigned threads)
{
	int err;

	l->im = &c->im[i];
	if ((err = sc_reader_set_threads(l->im->r, threads)) < 0 || (err = list_windows(l)) < 0 ||
	    (err = slice(l, asks, n_asks, child)) < 0)
		return err;
	for (size_t s = 0, e; s < l->n_slices && !err; s = e) {
		for (e = s; e < l->n_slices && l->slices[e].win == l->slices[s].win; e++)
			;
		err = read_window(l, l->wins[l->slices[s].win], s, e, child);
	}
	return err;
}

int sc_chain_fill(struct sc_chain *c, const char *path, unsigned threads)
{
	struct sc_ask *asks = c->asks;
	size_t n_asks = c->n_asks;
	int err = 0;

	c->asks = NULL; /* the levels own them from here */
	c->n_asks = c->cap_asks = 0;
	for (size_t i = 0; i < c->loaded && n_asks && !err; i++) {
		struct level l = { 0 };

		err = read_level(c, i, &l, asks, n_asks, i ? c->path[i - 1] : path, threads);
		free(asks);
		asks = l.next;
		n_asks = l.n_next;
		level_free(&l);
	}
	if (!err && n_asks) /* the full image at the end holds no parent run: cannot be */
		err = sc_err(SELFCKPT_EPARENT, "'%s' leaves pages to more images than its chain "
			     "holds", path);
	free(asks);
	/*
	 * Their decoding threads end here: a thread left idle would wake in the
	 * restored process, whose memory is no longer this program's.
	 */
	for (size_t i = 0; i < c->loaded; i++) {
		sc_reader_free(c->im[i].r);
		c->im[i].r = NULL;
	}
	return err;
}

int sc_chain_verified(struct sc_chain *c, const char *path)
{
	int err = 0;

	for (size_t i = 0; i < c->loaded; i++) {
		int v = sc_image_verify_finish(&c->im[i]);

		if (v < 0 && !err)
			err = sc_err(SELFCKPT_EPARENT, "'%s', the parent image of '%s', is damaged: "
				     "%s; nothing was restored", c->path[i],
				     i ? c->path[i - 1] : path, selfckpt_strerror(v));
	}
	return err;
}

void sc_chain_release(struct sc_chain *c)
{
	for (size_t i = 0; i < c->loaded; i++)
		sc_image_release(&c->im[i]);
	for (size_t i = 0; i < c->n; i++) {
		if (c->fd[i] >= 0)
			close(c->fd[i]);
		free(c->path[i]);
		sc_parent_free(&c->want[i]);
	}
	free(c->im);
	free(c->asks);
	memset(c, 0, sizeof(*c));
}
