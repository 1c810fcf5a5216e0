/* SPDX-License-Identifier: MIT */
/*
 * lineage.c - the last image completed, and the choice between a full and an
 * incremental image at each checkpoint (lineage.h).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lineage.h"
#include "core/sc_settings.h"
#include "core/written.h"
#include "format/sc_format.h"
#include "format/sc_log.h"

struct ranges {
	struct sc_wrange *v;
	uint64_t n, cap;
	bool lost; /* a range could not be noted: the list is incomplete */
};

static struct {
	bool armed;               /* this checkpoint's watch of written pages */
	bool leaving;             /* the image being written is incremental */
	bool have_last;           /* an image was completed, and is known whole */
	char last_path[PATH_MAX]; /* absolute */
	uint64_t last_created, last_size, last_sum;
	uint32_t last_depth;      /* 0: a full image */
	struct ranges held;       /* the last image's private memory, by address */
	struct ranges noting;     /* the image being written's, as its records are written */
} ln;

void sc_lineage_prepare(bool job)
{
	int r;

	ln.armed = false;
	if (!sc_settings()->incremental)
		return;
	if (job) {
		sc_log(SC_LOG_INFO, "checkpoint: the images of a job are full, not incremental");
		return;
	}
	r = sc_written_arm();
	ln.armed = r == 0;
	if (r < 0)
		sc_log(SC_LOG_INFO, "checkpoint: the image is full: %s", selfckpt_last_error());
}

void sc_lineage_instant(void)
{
	if (ln.armed)
		sc_written_take();
}

void sc_lineage_snapshot_taken(void)
{
	if (ln.armed)
		sc_written_late();
}

/* @path made absolute, through the real path of its directory: two names of one file compare equal. */
static int absolute(const char *path, char *out)
{
	char a[PATH_MAX], b[PATH_MAX], dir[PATH_MAX];

	snprintf(a, sizeof(a), "%s", path);
	snprintf(b, sizeof(b), "%s", path);
	if (!realpath(dirname(a), dir))
		return -errno;
	if (snprintf(out, PATH_MAX, "%s/%s", strcmp(dir, "/") ? dir : "", basename(b)) >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* Is the last image still at its path, the same bytes? */
static bool last_unchanged(void)
{
	struct sc_parent_info last = { .created_ns = ln.last_created, .size = ln.last_size,
				       .file_sum = ln.last_sum };
	struct sc_reader *r;
	bool same;

	if (sc_reader_open(&r, ln.last_path, NULL) < 0)
		return false;
	same = sc_parent_is(r, &last);
	sc_reader_free(r);
	return same;
}

static bool full_because(const char *why, const char *path)
{
	sc_log(SC_LOG_INFO, "checkpoint: '%s' is a full image: %s", path, why);
	return false;
}

/* R-INC-7: may the image to @path (absolute: @abs) leave memory to the last one? */
static bool may_be_incremental(const char *path, const char *abs)
{
	if (!ln.armed)
		return full_because("the pages written since the last image are not known", path);
	if (!ln.have_last)
		return full_because("no earlier image of this process is known whole", path);
	if (ln.last_depth >= sc_settings()->incremental)
		return full_because("the chain reached SELFCKPT_INCREMENTAL images after a full one",
				    path);
	if (!strcmp(abs, ln.last_path))
		return full_because("it replaces the last image, which it would need (name each "
				    "image differently: selfckpt-run does)", path);
	if (!sc_written_vouches())
		return full_because("the last checkpoint failed, or no memory was watched since "
				    "the last image", path);
	if (!last_unchanged())
		return full_because("the last image is gone or changed", path);
	return true;
}

/* The parent's name as the image names it: alone in the same directory, else absolute. */
static char *parent_name(const char *abs)
{
	size_t dir = (size_t)(strrchr(ln.last_path, '/') - ln.last_path);

	if (!strncmp(abs, ln.last_path, dir + 1) && !strchr(abs + dir + 1, '/'))
		return strdup(ln.last_path + dir + 1);
	return strdup(ln.last_path);
}

int sc_lineage_plan(const char *path, struct sc_lineage_plan *p)
{
	char abs[PATH_MAX];

	memset(p, 0, sizeof(*p));
	ln.leaving = false;
	ln.noting.n = 0;
	ln.noting.lost = false;
	if (!sc_settings()->incremental || absolute(path, abs) < 0 ||
	    !may_be_incremental(path, abs))
		return 0;
	p->parent = (struct sc_parent_info){ .created_ns = ln.last_created, .size = ln.last_size,
					     .file_sum = ln.last_sum, .depth = ln.last_depth + 1,
					     .path = parent_name(abs) };
	if (!p->parent.path)
		return sc_err(ENOMEM, "out of memory planning the image");
	p->incremental = ln.leaving = true;
	return 0;
}

uint64_t sc_lineage_leaves(uint64_t addr, uint64_t end, bool *leave)
{
	uint64_t len, edge;
	bool clean, held;

	*leave = false;
	if (!ln.leaving)
		return end - addr;
	len = sc_written_clean_run(addr, end, &clean);
	held = sc_wrange_find(ln.held.v, ln.held.n, addr, &edge);
	*leave = clean && held;
	return edge - addr < len ? edge - addr : len;
}

void sc_lineage_note_held(uint64_t start, uint64_t end)
{
	struct ranges *r = &ln.noting;

	if (!sc_settings()->incremental || r->lost)
		return;
	if (r->n && r->v[r->n - 1].end == start) {
		r->v[r->n - 1].end = end;
		return;
	}
	if (r->n == r->cap) {
		uint64_t cap = r->cap ? 2 * r->cap : 1024;
		struct sc_wrange *v = realloc(r->v, cap * sizeof(*v));

		if (!v) {
			r->lost = true; /* the next image is full */
			return;
		}
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = (struct sc_wrange){ start, end };
}

void sc_lineage_done(struct sc_lineage_plan *p, const char *path, int err, uint64_t created_ns,
		     uint64_t size, uint64_t file_sum)
{
	struct ranges swap;

	ln.leaving = false;
	if (sc_settings()->incremental) {
		sc_written_settle(err == 0);
		/* a failure keeps the last image the parent; a success makes this one it */
		if (!err)
			ln.have_last = false;
		if (!err && absolute(path, ln.last_path) == 0) {
			swap = ln.held;
			ln.held = ln.noting;
			ln.noting = swap;
			ln.noting.n = 0;
			ln.last_created = created_ns;
			ln.last_size = size;
			ln.last_sum = file_sum;
			ln.last_depth = p->incremental ? p->parent.depth : 0;
			ln.have_last = !ln.held.lost;
		}
	}
	sc_parent_free(&p->parent);
	p->incremental = false;
}

void sc_lineage_again(struct sc_lineage_plan *p)
{
	ln.leaving = false;
	if (sc_settings()->incremental)
		sc_written_carry();
	sc_parent_free(&p->parent);
	p->incremental = false;
}

bool sc_lineage_last_full(void)
{
	return ln.last_depth == 0;
}

void sc_lineage_forget(void)
{
	ln.have_last = false;
	ln.armed = ln.leaving = false;
	ln.held.n = ln.noting.n = 0;
	sc_written_forget();
}
