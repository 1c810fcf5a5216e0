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
#include <sys/mman.h>
#include <unistd.h>

#include "core/restore/restore_internal.h"
#include "format/sc_array.h"
#include "format/sc_log.h"

/* What the messages of a refusal end with: what the caller leaves undone. */
static const char *undone_of(const struct sc_chain *c)
{
	return c->undone ? c->undone : "nothing was restored";
}

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
static int open_parent(const char *child, const char *path, const char *undone, int *fd)
{
	int f = open(path, O_RDONLY | O_CLOEXEC);

	if (f < 0)
		return sc_err(SELFCKPT_ENOPARENT, "'%s' is incremental: it needs its parent image "
			      "'%s', which cannot be opened (%s); %s", child, path,
			      strerror(errno), undone);
	close(f);
	return sc_image_open(path, fd); /* the checks every image gets */
}

int sc_chain_open(const char *path, int fd, struct sc_chain *c)
{
	const char *cur = path, *undone = c->undone;
	int cur_fd = fd, err;

	memset(c, 0, sizeof(*c));
	c->undone = undone;
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
		if ((err = open_parent(cur, c->path[c->n - 1], undone_of(c), &c->fd[c->n - 1])) < 0)
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

	sc_reader_file_identity(im->r, &size, &sum); /* for the message */
	if (!sc_parent_is(im->r, want))
		return sc_err(SELFCKPT_EPARENT, "'%s' needs its parent image '%s' as it was "
			      "(%llu bytes, file checksum 0x%016llx); the file there is another "
			      "image (%llu bytes, file checksum 0x%016llx); %s",
			      child, im->path, (unsigned long long)want->size,
			      (unsigned long long)want->file_sum, (unsigned long long)size,
			      (unsigned long long)sum, undone_of(c));
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
				      "used: %s; %s", c->path[i], child,
				      selfckpt_last_error(), undone_of(c));
		c->loaded = i + 1;
		err = check_parent(c, i, child);
	}
	return err;
}

int sc_chain_ask(struct sc_chain *c, uint64_t addr, uint64_t len)
{
	struct sc_ask *last = c && c->n_asks ? &c->asks[c->n_asks - 1] : NULL;

	if (!c || !c->n)
		return sc_err(SELFCKPT_EPARENT, "a page at 0x%llx is left to a parent image, and "
			      "the image has none open", (unsigned long long)addr);
	if (last && last->addr + last->len > addr)
		return sc_err(SELFCKPT_ELENGTH, "parent runs out of address order at 0x%llx",
			      (unsigned long long)addr);
	if (last && last->addr + last->len == addr) {
		last->len += len;
		return 0;
	}
	if (sc_grow((void **)&c->asks, &c->cap_asks, c->n_asks + 1, sizeof(*c->asks)))
		return sc_err(ENOMEM, "out of memory planning the restore");
	c->asks[c->n_asks++] = (struct sc_ask){ addr, len, NULL };
	return 0;
}

int sc_chain_stage(struct sc_chain *c, uint64_t start, uint64_t end, void *premap)
{
	if (!c || !c->n)
		return sc_err(SELFCKPT_EPARENT, "the mapping at 0x%llx leaves pages to a parent "
			      "image, and the image has none open", (unsigned long long)start);
	if (sc_grow((void **)&c->areas, &c->cap_areas, c->n_areas + 1, sizeof(*c->areas)))
		return sc_err(ENOMEM, "out of memory planning the restore");
	c->areas[c->n_areas++] = (struct sc_ask){ start, end - start, premap };
	return 0;
}

static uint64_t win_end(const struct window *w)
{
	return w->seg.start + w->seg.length;
}

/* Every window of @im, in address order. */
static int list_windows(const struct image *im, const struct window ***out, size_t *n)
{
	size_t k = 0;

	for (size_t i = 0; i < im->n_maps; i++)
		k += im->maps[i].n_win;
	if (!(*out = calloc(k ? k : 1, sizeof(**out))))
		return sc_err(ENOMEM, "out of memory reading '%s'", im->path);
	*n = 0;
	for (size_t i = 0; i < im->n_maps; i++)
		for (size_t w = 0; w < im->maps[i].n_win; w++)
			(*out)[(*n)++] = &im->maps[i].win[w];
	return 0;
}

/* The first run of @w that ends above @at. */
static uint32_t run_at(const struct window *w, uint64_t page, uint64_t at)
{
	uint32_t lo = 0, hi = w->seg.n_runs;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct sc_run *r = &w->seg.runs[mid];

		if (w->seg.start + (r->first + r->count) * page <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int push(struct sc_ask **v, size_t *n, size_t *cap, uint64_t addr, uint64_t len)
{
	if (*n && (*v)[*n - 1].addr + (*v)[*n - 1].len == addr) {
		(*v)[*n - 1].len += len;
		return 0;
	}
	if (sc_grow((void **)v, cap, *n + 1, sizeof(**v)))
		return sc_err(ENOMEM, "out of memory reading the parent images");
	(*v)[(*n)++] = (struct sc_ask){ addr, len, NULL };
	return 0;
}

/*
 * [R-INC-5] Which pages @asks wants of image @im: held as stored or zero
 * pages, or left to its own parent (into @next); a page it does not hold, or
 * holds as a file or guard page, is refused.
 */
static int resolve(const struct image *im, const char *child, const char *undone,
		   const struct sc_ask *asks, size_t n, struct sc_ask **next, size_t *n_next)
{
	const struct window **wins;
	size_t n_wins = 0, wi = 0, cap = 0;
	int err = list_windows(im, &wins, &n_wins);

	for (size_t i = 0; i < n && !err; i++) {
		for (uint64_t at = asks[i].addr, end = at + asks[i].len; at < end && !err;) {
			const struct window *w;
			uint64_t stop;

			while (wi < n_wins && win_end(wins[wi]) <= at)
				wi++;
			if (wi == n_wins || wins[wi]->seg.start > at) {
				err = sc_err(SELFCKPT_EPARENT, "'%s' leaves the page at 0x%llx to its "
					     "parent image '%s', which does not hold it; %s", child,
					     (unsigned long long)at, im->path, undone);
				break;
			}
			w = wins[wi];
			stop = win_end(w) < end ? win_end(w) : end;
			for (uint32_t r = run_at(w, im->page, at); at < stop && !err; r++) {
				const struct sc_run *run = &w->seg.runs[r];
				uint64_t re = w->seg.start + (run->first + run->count) * im->page;
				uint64_t oe = re < stop ? re : stop;

				if (run->kind == SC_RUN_PARENT)
					err = push(next, n_next, &cap, at, oe - at);
				else if (run->kind != SC_RUN_STORED && run->kind != SC_RUN_ZERO)
					err = sc_err(SELFCKPT_EPARENT, "'%s' leaves the page at 0x%llx "
						     "to its parent image '%s', which holds no contents "
						     "there (run kind %u); %s", child,
						     (unsigned long long)at, im->path, run->kind, undone);
				at = oe;
			}
		}
	}
	free(wins);
	return err;
}

/* ---- writing the chain's pages, the oldest image first ---- */

struct pieces {
	struct sc_piece *v;
	size_t n, cap, used; /* used: up to the last piece that lands */
};

static int add_piece(struct pieces *p, void *dst, uint64_t len)
{
	if (!len)
		return 0;
	if (p->n && !dst && !p->v[p->n - 1].dst) {
		p->v[p->n - 1].len += len;
		return 0;
	}
	if (p->n && dst && (uint8_t *)p->v[p->n - 1].dst + p->v[p->n - 1].len == dst) {
		p->v[p->n - 1].len += len;
		p->used = p->n;
		return 0;
	}
	if (sc_grow((void **)&p->v, &p->cap, p->n + 1, sizeof(*p->v)))
		return sc_err(ENOMEM, "out of memory reading the parent images");
	p->v[p->n++] = (struct sc_piece){ dst, len };
	if (dst)
		p->used = p->n;
	return 0;
}

/*
 * Run [@rs, @re) of one image, over the staged areas: stored bytes go where
 * they are staged (the rest of the run is dropped), zero pages are made zero
 * again there, as an older image may have written them.
 */
static int apply_run(const struct sc_chain *c, size_t *ai, uint8_t kind, uint64_t rs, uint64_t re,
		     struct pieces *p)
{
	uint64_t at = rs;
	int err = 0;

	while (*ai < c->n_areas && c->areas[*ai].addr + c->areas[*ai].len <= rs)
		(*ai)++;
	for (size_t i = *ai; i < c->n_areas && c->areas[i].addr < re && !err; i++) {
		const struct sc_ask *a = &c->areas[i];
		uint64_t os = a->addr > rs ? a->addr : rs, oe = a->addr + a->len < re ? a->addr + a->len
										    : re;
		uint8_t *dst = a->dst + (os - a->addr);

		if (kind == SC_RUN_STORED) {
			err = add_piece(p, NULL, os - at);
			if (!err)
				err = add_piece(p, dst, oe - os);
		} else if (kind == SC_RUN_ZERO) {
			madvise(dst, oe - os, MADV_DONTNEED); /* private staging: zero pages again */
		}
		at = oe;
	}
	return !err && kind == SC_RUN_STORED ? add_piece(p, NULL, re - at) : err;
}

static int apply_image(const struct sc_chain *c, struct image *im, struct pieces *p)
{
	int err = 0;

	for (size_t m = 0; m < im->n_maps && !err; m++) {
		for (size_t k = 0; k < im->maps[m].n_win && !err; k++) {
			const struct window *w = &im->maps[m].win[k];
			struct sc_record rec;
			size_t ai = 0;

			p->n = p->used = 0;
			for (uint32_t i = 0; i < w->seg.n_runs && !err; i++) {
				const struct sc_run *r = &w->seg.runs[i];
				uint64_t rs = w->seg.start + r->first * im->page;

				err = apply_run(c, &ai, r->kind, rs, rs + (uint64_t)r->count * im->page,
						p);
			}
			if (err < 0 || !p->used)
				continue;
			if ((err = sc_reader_seek(im->r, w->record)) < 0 ||
			    (err = sc_reader_next(im->r, &rec)) < 0)
				break;
			err = sc_reader_read_pieces(im->r, p->v, p->used);
		}
	}
	return err;
}

/*
 * First every page asked for is found in the chain (metadata only). Then the
 * images are written over the staged areas from the oldest to the newest,
 * each as a whole: a page ends up with the bytes of the newest image that
 * holds it, and the oldest, full image (most of the bytes) is decoded
 * straight into place, not cut around the pages newer images hold. The
 * image's own pages go last (restore_plan.c).
 */
int sc_chain_give(struct sc_chain *c, const char *path, unsigned threads)
{
	struct sc_ask *asks = c->asks, *next = NULL;
	size_t n_asks = c->n_asks, n_next = 0;
	struct pieces p = { 0 };
	int err = 0;

	for (size_t i = 0; i < c->loaded && n_asks && !err; i++, asks = next, n_asks = n_next) {
		next = NULL;
		n_next = 0;
		err = resolve(&c->im[i], i ? c->path[i - 1] : path, undone_of(c), asks, n_asks, &next,
			      &n_next);
		if (asks != c->asks)
			free(asks);
	}
	if (asks != c->asks)
		free(asks);
	if (!err && n_asks) /* the full image at the end holds no parent run: cannot be */
		err = sc_err(SELFCKPT_EPARENT, "'%s' leaves pages to more images than its chain "
			     "holds", path);
	for (size_t i = 0; i < c->loaded && !c->threaded && !err; i++)
		err = sc_reader_set_threads(c->im[i].r, threads);
	c->threaded = !err;
	for (size_t i = c->loaded; i-- > 0 && !err;)
		err = apply_image(c, &c->im[i], &p);
	free(p.v);
	c->n_asks = c->n_areas = 0;
	return err;
}

int sc_chain_fill(struct sc_chain *c, const char *path, unsigned threads)
{
	int err = sc_chain_give(c, path, threads);

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
	free(c->areas);
	memset(c, 0, sizeof(*c));
}
