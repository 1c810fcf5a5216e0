/* SPDX-License-Identifier: MIT */
/*
 * vmflags.c - reading the VmFlags of every mapping from /proc/<pid>/smaps
 * (vmflags.h). A mapping's block in smaps starts with its maps line
 * ("7f00-7f08 rw-p ...") and ends with "VmFlags: rd wr mr mw me ac", two
 * letters a setting; settings this version does not know are ignored.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/vmflags.h"
#include "format/sc_log.h"

static const struct {
	char name[3];
	uint32_t bit;
} known[] = {
	{ "nr", SC_VMF_NORESERVE }, { "mw", SC_VMF_MAYWRITE },    { "lo", SC_VMF_LOCKED },
	{ "lf", SC_VMF_LOCKONFAULT }, { "dc", SC_VMF_DONTFORK },  { "wf", SC_VMF_WIPEONFORK },
	{ "dd", SC_VMF_DONTDUMP },  { "hg", SC_VMF_HUGEPAGE },    { "nh", SC_VMF_NOHUGEPAGE },
	{ "mg", SC_VMF_MERGEABLE }, { "sr", SC_VMF_SEQUENTIAL },  { "rr", SC_VMF_RANDOM },
	{ "dp", SC_VMF_DROPPABLE },
};

/* The bits of one VmFlags line's tokens ("rd wr mr ..."), and those no restore can give. */
static void parse_flags(const char *p, struct sc_vmf_range *r)
{
	while (*p) {
		while (*p == ' ')
			p++;
		if (!p[0] || !p[1])
			break;
		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (p[0] == known[i].name[0] && p[1] == known[i].name[1])
				r->bits |= known[i].bit;
		if (p[0] == 'h' && p[1] == 't')
			r->bad |= SC_VMF_BAD_HUGETLB;
		if (p[0] == 's' && p[1] == 'l')
			r->bad |= SC_VMF_BAD_SEALED;
		while (*p && *p != ' ')
			p++;
	}
}

/* "start-end " at the head of a maps line (lowercase hex, as the kernel writes it). */
static int parse_range(const char *p, uint64_t *start, uint64_t *end)
{
	char *e;

	if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
		return -1;
	*start = strtoull(p, &e, 16);
	if (*e != '-')
		return -1;
	*end = strtoull(e + 1, &e, 16);
	return *e == ' ' ? 0 : -1;
}

/*
 * Memory for the text and the table comes from mmap(), not malloc(): the
 * table of the process is read just before the freeze, and malloc() could
 * move the program break the image records.
 */
static void *grow(void *old, size_t old_size, size_t new_size)
{
	void *p = old ? mremap(old, old_size, new_size, MREMAP_MAYMOVE)
		      : mmap(NULL, new_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Where the text of smaps was as it was read: it may show itself in any of them. */
#define TEXT_PLACES 48 /* from 64 KiB, doubling: more than any smaps needs */
struct text_places {
	uint64_t start[TEXT_PLACES], end[TEXT_PLACES];
	int n;
};

static void note_place(struct text_places *t, const char *buf, size_t cap)
{
	if (t && buf && t->n < TEXT_PLACES) {
		t->start[t->n] = (uint64_t)(uintptr_t)buf;
		t->end[t->n++] = (uint64_t)(uintptr_t)buf + cap;
	}
}

/*
 * All of the /proc file @path, NUL-terminated, in *@cap bytes of mapped memory
 * (*@len of text); each place its buffer had into @places, where not NULL.
 * Return: the text, or NULL (reported).
 */
static char *read_proc_text(const char *path, size_t *len, size_t *cap,
			    struct text_places *places)
{
	size_t n = 0;
	char *buf, *nb;
	int fd, e;
	ssize_t k;

	*cap = 1 << 16;
	buf = grow(NULL, 0, *cap);
	note_place(places, buf, *cap);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !buf) {
		e = fd < 0 ? errno : ENOMEM;
		sc_err(e, "cannot read '%s': %s", path, strerror(e));
		goto fail;
	}
	while ((k = read(fd, buf + n, *cap - n - 1)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			e = errno;
			sc_err(e, "cannot read '%s' at offset %zu: %s", path, n, strerror(e));
			goto fail;
		}
		n += (size_t)k;
		if (*cap - n < 4096) {
			if (!(nb = grow(buf, *cap, 2 * *cap))) {
				sc_err(ENOMEM, "out of memory reading '%s'", path);
				goto fail;
			}
			buf = nb;
			*cap *= 2;
			note_place(places, buf, *cap);
		}
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	if (buf)
		munmap(buf, *cap);
	return NULL;
}

/* All of /proc/<pid>/smaps, as read_proc_text() gives it, in @size bytes. */
static char *read_smaps(pid_t pid, size_t *size, struct text_places *places)
{
	char path[64];
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	return read_proc_text(path, &len, size, places);
}

static int add_range(struct sc_vmflags *v, const struct sc_vmf_range *r)
{
	if ((v->n + 1) * sizeof(*r) > v->bytes) {
		size_t bytes = v->bytes ? 2 * v->bytes : 4096;
		struct sc_vmf_range *nr = grow(v->r, v->bytes, bytes);

		if (!nr)
			return sc_err(ENOMEM, "out of memory reading the memory flags");
		v->r = nr;
		v->bytes = bytes;
	}
	v->r[v->n++] = *r;
	return 0;
}

/*
 * Take [@a, @b) out of the ranges of @v (in address order, disjoint), cutting
 * the one that holds it in two: a mapping that is gone. 0 or -ENOMEM (reported).
 */
static int cut(struct sc_vmflags *v, uint64_t a, uint64_t b)
{
	size_t k = 0;

	for (size_t i = 0; i < v->n; i++) {
		struct sc_vmf_range r = v->r[i];

		if (r.start < a && r.end > b) { /* the one range that holds it: two */
			if (add_range(v, &r) < 0)
				return -ENOMEM;
			memmove(&v->r[i + 2], &v->r[i + 1], (v->n - 2 - i) * sizeof(r));
			v->r[i].end = a;
			v->r[i + 1] = r;
			v->r[i + 1].start = b;
			return 0; /* ranges are disjoint: no other one meets it */
		}
	}
	for (size_t i = 0; i < v->n; i++) {
		struct sc_vmf_range r = v->r[i];

		if (r.start < a && r.end > a)
			r.end = a;
		else if (r.start < b && r.end > b)
			r.start = b;
		else if (r.start >= a && r.end <= b)
			continue;
		v->r[k++] = r;
	}
	v->n = k;
	return 0;
}

/* One line of smaps: a mapping's first line starts @cur, its VmFlags line ends it. */
static int smaps_line(const char *line, struct sc_vmf_range *cur,
		       int (*each)(const struct sc_vmf_range *r, void *arg), void *arg)
{
	if (parse_range(line, &cur->start, &cur->end) == 0) {
		cur->bits = cur->bad = 0;
		return 0;
	}
	if (strncmp(line, "VmFlags:", 8))
		return 0;
	parse_flags(line + 8, cur);
	return each(cur, arg);
}

/* Where one read of smaps puts each mapping (read_tables()). */
struct tables {
	uint32_t keep;
	struct sc_vmflags *out, *all;
};

static int add_to_tables(const struct sc_vmf_range *r, void *arg)
{
	struct tables *t = arg;
	int err = 0;

	if (t->keep == ~0u || (r->bits & t->keep))
		err = add_range(t->out, r);
	if (!err && t->all)
		err = add_range(t->all, r);
	return err;
}

/* One read of smaps: the mappings with a @keep bit into @out, and every one into @all. */
static int read_tables(pid_t pid, uint32_t keep, struct sc_vmflags *out, struct sc_vmflags *all)
{
	struct text_places places = { .n = 0 };
	size_t size;
	char *text = read_smaps(pid ? pid : getpid(), &size, all ? &places : NULL), *line, *nl;
	struct tables t = { .keep = keep, .out = out, .all = all };
	struct sc_vmf_range cur = { 0 };
	int err = 0;

	if (!text) {
		sc_vmflags_free(out);
		if (all)
			sc_vmflags_free(all);
		return -EIO; /* reported */
	}
	for (line = text; !err && *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		err = smaps_line(line, &cur, add_to_tables, &t);
		if (!nl)
			break;
	}
	/*
	 * The text's own buffer is gone before the stop (and it may have moved as
	 * it grew): none of its places may lend its settings to another mapping
	 * made there by then.
	 */
	for (int i = 0; all && !err && i < places.n; i++)
		err = cut(all, places.start[i], places.end[i]);
	/* the maps of the freeze are shorter than this smaps; room for new mappings too */
	if (!err && keep != ~0u && !out->maps) {
		out->maps_size = size + (64u << 10);
		out->maps = grow(NULL, 0, out->maps_size);
		if (!out->maps)
			err = sc_err(ENOMEM, "out of memory for the memory map of the freeze");
	}
	munmap(text, size);
	/* this process's locks, to compare with the instant's (vmflags.h) */
	if (!err && !pid && (out->locked_kb = sc_vmflags_locked_kb()) < 0)
		err = sc_err(EIO, "cannot read VmLck from '/proc/thread-self/status'");
	if (err) {
		sc_vmflags_free(out);
		if (all)
			sc_vmflags_free(all);
	}
	return err;
}

int sc_vmflags_read(pid_t pid, uint32_t keep, struct sc_vmflags *out)
{
	*out = (struct sc_vmflags){ 0 };
	return read_tables(pid, keep, out, NULL);
}

/*
 * Reads shorter than a mapping's block (about 1.3 KiB): the kernel walks a
 * mapping's page tables as it makes the block, and makes no further one once
 * it holds as many bytes as were asked for, so that each block is handed on
 * as soon as its own walk is done, not after the next mapping's. A line is at
 * most a path and its maps fields.
 */
#define STREAM_READ 512
#define STREAM_LINE (PATH_MAX + 256)

int sc_vmflags_stream(pid_t pid, int (*each)(const struct sc_vmf_range *r, void *arg), void *arg)
{
	char path[64], buf[STREAM_LINE + STREAM_READ + 1], *line, *nl;
	struct sc_vmf_range cur = { 0 };
	size_t have = 0;
	int fd, err = 0;
	ssize_t k;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return sc_err(errno, "cannot read '%s': %s", path, strerror(errno));
	while (!err && (k = read(fd, buf + have, STREAM_READ)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			err = sc_err(errno, "cannot read '%s': %s", path, strerror(errno));
			break;
		}
		have += (size_t)k;
		buf[have] = '\0';
		for (line = buf; !err && (nl = memchr(line, '\n', have - (size_t)(line - buf)));
		     line = nl + 1) {
			*nl = '\0';
			err = smaps_line(line, &cur, each, arg);
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (!err && have > STREAM_LINE)
			err = sc_err(EPROTO, "'%s' holds a line longer than %d bytes", path,
				     STREAM_LINE);
	}
	close(fd);
	return err;
}

/* Lines in /proc/self/maps (one a mapping), and its length; a read of it walks no page. */
static int count_own_maps(size_t *lines, size_t *len)
{
	size_t cap;
	char *text = read_proc_text("/proc/self/maps", len, &cap, NULL);

	*lines = 0;
	if (!text)
		return -EIO; /* reported */
	for (size_t i = 0; i < *len; i++)
		*lines += text[i] == '\n';
	munmap(text, cap);
	return 0;
}

/* Room for @n ranges in @v, mapped now. */
static int reserve(struct sc_vmflags *v, size_t n)
{
	v->bytes = (n * sizeof(*v->r) + 4095) & ~(size_t)4095;
	v->r = grow(NULL, 0, v->bytes);
	if (!v->r) {
		v->bytes = 0;
		return sc_err(ENOMEM, "out of memory reading the memory flags");
	}
	return 0;
}

/*
 * The tables, and the room for the maps the freeze reads, are mapped before
 * smaps is read, sized from a count of the mappings: smaps then lists them,
 * with their own settings, as mappings that were there before the stop. Made
 * after it, they would be mappings a checkpoint must wait for the snapshot's
 * smaps to know (segment_vmflags.c).
 */
#define SPARE_RANGES 256 /* mappings made between the count and the read */

/* The room both tables and the freeze's maps take, mapped now (see above). */
static int make_room(struct sc_vmflags *out, struct sc_vmflags *all, size_t more)
{
	size_t lines, len;
	int err = count_own_maps(&lines, &len);

	*out = (struct sc_vmflags){ 0 };
	*all = (struct sc_vmflags){ 0 };
	if (err < 0)
		return err;
	out->maps_size = 2 * len + (64u << 10);
	out->maps = grow(NULL, 0, out->maps_size);
	if (!out->maps) {
		out->maps_size = 0;
		return sc_err(ENOMEM, "out of memory for the memory map of the freeze");
	}
	if ((err = reserve(out, lines + SPARE_RANGES)) < 0 ||
	    (err = reserve(all, lines + more + SPARE_RANGES)) < 0) {
		sc_vmflags_free(out);
		sc_vmflags_free(all);
		return err;
	}
	return 0;
}

int sc_vmflags_read_own(uint32_t keep, struct sc_vmflags *out, struct sc_vmflags *all)
{
	int err = make_room(out, all, 0);

	return err < 0 ? err : read_tables(0, keep, out, all);
}

int sc_vmflags_own_from(const struct sc_vmflags *from, struct sc_vmflags *out,
			struct sc_vmflags *all)
{
	int err = make_room(out, all, from->n);

	for (size_t i = 0; !err && i < from->n; i++)
		err = add_range(all, &from->r[i]);
	if (err < 0) {
		sc_vmflags_free(out);
		sc_vmflags_free(all);
		return err;
	}
	return 0; /* out->locked_kb 0, as the lender checked */
}

int sc_vmflags_add(struct sc_vmflags *v, const struct sc_vmf_range *r)
{
	return add_range(v, r);
}

void sc_vmflags_free(struct sc_vmflags *v)
{
	if (v->r)
		munmap(v->r, v->bytes);
	if (v->maps)
		munmap(v->maps, v->maps_size);
	*v = (struct sc_vmflags){ 0 };
}

const struct sc_vmf_range *sc_vmflags_find(const struct sc_vmflags *v, uint64_t addr)
{
	size_t lo = 0, hi = v->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < v->r[mid].start)
			hi = mid;
		else if (addr >= v->r[mid].end)
			lo = mid + 1;
		else
			return &v->r[mid];
	}
	return NULL;
}
