/* SPDX-License-Identifier: MIT */
/*
 * restore_load.c - open the image once and read and check every record's
 * metadata, and group the segment windows into the mappings they belong to.
 * Payloads stay in the file until restore_plan.c reads them into place, while
 * a thread of this file checks the whole file's checksum: everything the
 * restore relies on is checked before the point of no return.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/restore/restore_internal.h"
#include "format/sc_array.h"
#include "format/sc_log.h"

/* Room for element @n of *@arr. */
static int room_for_one(void **arr, size_t *cap, size_t n, size_t size)
{
	return sc_grow(arr, cap, n + 1, size) ? sc_err(ENOMEM, "out of memory reading the image")
					      : 0;
}

static int add_window(struct image *im, size_t *cap, size_t rec, struct sc_segment_info *s)
{
	struct mapping *m = im->n_maps ? &im->maps[im->n_maps - 1] : NULL;
	int err;

	if (!m || m->start != s->vma_start || m->end != s->vma_end) {
		if (m && s->vma_start < m->end)
			return sc_err(SELFCKPT_ELENGTH, "segment record %zu of '%s' (0x%llx) "
				      "overlaps the mapping before it or is out of order", rec,
				      im->path, (unsigned long long)s->vma_start);
		if ((err = room_for_one((void **)&im->maps, cap, im->n_maps,
					sizeof(*im->maps))) < 0)
			return err;
		m = &im->maps[im->n_maps++];
		*m = (struct mapping){ .start = s->vma_start, .end = s->vma_end, .fd = -1 };
	}
	if (m->n_win && m->win[m->n_win - 1].seg.start + m->win[m->n_win - 1].seg.length !=
				s->start)
		return sc_err(SELFCKPT_ELENGTH, "segment record %zu of '%s' leaves a gap in the "
			      "mapping at 0x%llx", rec, im->path, (unsigned long long)s->vma_start);
	if (!m->n_win && s->start != s->vma_start)
		return sc_err(SELFCKPT_ELENGTH, "segment record %zu of '%s' does not start its "
			      "mapping at 0x%llx", rec, im->path, (unsigned long long)s->vma_start);
	if (m->n_win && m->win[0].seg.vmflags != s->vmflags) /* [R-SEG-6] */
		return sc_err(SELFCKPT_ELENGTH, "segment record %zu of '%s' gives the mapping at "
			      "0x%llx memory flags 0x%x, its first window 0x%x", rec, im->path,
			      (unsigned long long)s->vma_start, s->vmflags, m->win[0].seg.vmflags);
	m->win = realloc(m->win, (m->n_win + 1) * sizeof(*m->win));
	if (!m->win)
		return sc_err(ENOMEM, "out of memory reading the image");
	m->win[m->n_win++] = (struct window){ .record = rec, .seg = *s };
	return 0;
}

const struct sc_fd *sc_image_held_by(const struct image *im, const struct sc_segment_info *s)
{
	bool write = sc_seg_shared_writable(s);

	for (size_t i = 0; i < im->n_fds; i++) {
		const struct sc_fd *f = &im->fds[i];
		int mode = f->open_flags & O_ACCMODE;

		if ((f->kind == SC_FD_MEMFD || f->kind == SC_FD_DELETED) && f->fd > 2 &&
		    f->dev == s->dev && f->inode == s->inode &&
		    (write ? mode == O_RDWR : mode == O_RDONLY || mode == O_RDWR))
			return f;
	}
	return NULL;
}

/* [R-SEG-7] Each mapping of a descriptor's file has the descriptor that brings it back. */
static int check_held(const struct image *im)
{
	for (size_t i = 0; i < im->n_maps; i++) {
		const struct sc_segment_info *s = &im->maps[i].win[0].seg;

		if ((s->flags & SC_SEG_HELD) && !sc_image_held_by(im, s))
			return sc_err(SELFCKPT_ELENGTH, "'%s' maps the file of a descriptor at "
				      "0x%llx (device 0x%llx, inode %llu), but none of its "
				      "descriptors holds that file so that it can be mapped %s",
				      im->path, (unsigned long long)im->maps[i].start,
				      (unsigned long long)s->dev, (unsigned long long)s->inode,
				      sc_seg_shared_writable(s) ? "shared and writable"
								: "for reading");
	}
	return 0;
}

/* The segment an attach maps (its inode is the id), or NULL. */
const struct sc_sysv_obj *sc_image_segment_of(const struct image *im, uint64_t id)
{
	for (size_t i = 0; i < im->n_sysv; i++)
		if (im->sysv[i].kind == SC_SYSV_SHM && (uint64_t)im->sysv[i].id == id)
			return &im->sysv[i];
	return NULL;
}

/* R-SEG-8: every run of an attach is a file run (the bytes are the segment's). */
static bool file_runs_only(const struct mapping *m)
{
	for (size_t w = 0; w < m->n_win; w++)
		for (uint32_t i = 0; i < m->win[w].seg.n_runs; i++)
			if (m->win[w].seg.runs[i].kind != SC_RUN_FILE)
				return false;
	return true;
}

/* A segment marked for removal must have an attach: made again, it would go at once. */
static bool attached(const struct image *im, const struct sc_sysv_obj *o)
{
	for (size_t i = 0; i < im->n_maps; i++)
		if ((im->maps[i].win[0].seg.flags & SC_SEG_SYSV) &&
		    im->maps[i].win[0].seg.inode == (uint64_t)o->id)
			return true;
	return false;
}

/*
 * R-TYP-22, R-SEG-8: every attach of a System V segment maps one of the
 * image, whole, its bytes in the record; no id is there twice, and a segment
 * marked for removal is attached.
 */
static int check_sysv(const struct image *im)
{
	for (size_t i = 0; i < im->n_sysv; i++)
		for (size_t j = 0; j < i; j++)
			if (im->sysv[i].kind == im->sysv[j].kind &&
			    im->sysv[i].id == im->sysv[j].id)
				return sc_err(SELFCKPT_ELENGTH, "'%s' holds System V %s %d twice",
					      im->path, sc_sysv_kind_name(im->sysv[i].kind),
					      im->sysv[i].id);
	for (size_t i = 0; i < im->n_sysv; i++)
		if ((im->sysv[i].flags & SC_SYSV_RMID) && !attached(im, &im->sysv[i]))
			return sc_err(SELFCKPT_ELENGTH, "'%s' holds System V segment %d marked "
				      "for removal, but no attach of it", im->path, im->sysv[i].id);
	for (size_t i = 0; i < im->n_maps; i++) {
		const struct mapping *m = &im->maps[i];
		const struct sc_segment_info *s = &m->win[0].seg;
		const struct sc_sysv_obj *o;

		if (!(s->flags & SC_SEG_SYSV))
			continue;
		o = sc_image_segment_of(im, s->inode);
		if (!o || !(o->flags & SC_SYSV_STORED) || !(s->flags & SC_SEG_SHARED) ||
		    (s->flags & (SC_SEG_FILE | SC_SEG_HELD)) || !file_runs_only(m) ||
		    m->end - m->start != ((o->size + im->page - 1) & ~(im->page - 1)))
			return sc_err(SELFCKPT_ELENGTH, "mapping 0x%llx-0x%llx of '%s' attaches "
				      "System V segment %llu, which the image does not hold with "
				      "its bytes and of that size, or holds bytes of its own",
				      (unsigned long long)m->start,
				      (unsigned long long)m->end, im->path,
				      (unsigned long long)s->inode);
	}
	return 0;
}

static int check_complete(struct image *im)
{
	int err;

	for (size_t i = 0; i < im->n_maps; i++) {
		const struct mapping *m = &im->maps[i];
		const struct window *last = &m->win[m->n_win - 1];

		if (last->seg.start + last->seg.length != m->end)
			return sc_err(SELFCKPT_ELENGTH, "mapping 0x%llx-0x%llx of '%s' is not "
				      "covered by its segment records", (unsigned long long)m->start,
				      (unsigned long long)m->end, im->path);
	}
	if (!im->proc.cwd)
		return sc_err(SELFCKPT_ELENGTH, "'%s' has no process record", im->path);
	if (!im->has_parent != !(sc_reader_header(im->r)->flags & SC_HF_INCREMENTAL))
		return sc_err(SELFCKPT_ELENGTH, "'%s' is an incremental image without a parent "
			      "record", im->path); /* [R-INC-1] (the other way, sc_parent_read()) */
	for (size_t i = 0; i < im->n_threads; i++)
		if (im->threads[i].flags & 1)
			im->coord = &im->threads[i];
	if (!im->coord)
		return sc_err(SELFCKPT_ELENGTH, "'%s' has no thread that made the checkpoint",
			      im->path);
	if ((err = check_held(im)) < 0)
		return err;
	return check_sysv(im);
}

static int load_record(struct image *im, const struct sc_record *rec, size_t *caps)
{
	struct sc_segment_info s;
	int err;

	switch (rec->type) {
	case SC_REC_PROCESS:
		sc_process_free(&im->proc);
		return sc_process_read(im->r, rec, &im->proc);
	case SC_REC_SIGNALS:
		return sc_signals_read(im->r, rec, &im->sig);
	case SC_REC_TIMERS:
		sc_timers_free(&im->timers);
		return sc_timers_read(im->r, rec, &im->timers);
	case SC_REC_LOCKS:
		free(im->locks);
		return sc_locks_read(im->r, rec, &im->locks, &im->n_locks);
	case SC_REC_SYSV:
		if ((err = room_for_one((void **)&im->sysv, &caps[3], im->n_sysv,
					sizeof(*im->sysv))) < 0)
			return err;
		err = sc_sysv_read(im->r, rec, &im->sysv[im->n_sysv]);
		im->n_sysv += err == 0;
		return err;
	case SC_REC_FD:
		if ((err = room_for_one((void **)&im->fds, &caps[0], im->n_fds,
					sizeof(*im->fds))) < 0)
			return err;
		err = sc_fd_read_record(im->r, rec, &im->fds[im->n_fds]);
		im->n_fds += err == 0;
		return err;
	case SC_REC_THREAD:
		if ((err = room_for_one((void **)&im->threads, &caps[1], im->n_threads,
					sizeof(*im->threads))) < 0)
			return err;
		err = sc_thread_read(im->r, rec, &im->threads[im->n_threads]);
		im->n_threads += err == 0;
		return err;
	case SC_REC_PARENT: /* [R-INC-1] one, before the memory */
		if (im->has_parent || im->n_maps)
			return sc_err(SELFCKPT_ELENGTH, "parent record %u of '%s' is a second one, or "
				      "comes after memory", rec->seq, im->path);
		if ((err = sc_parent_read(im->r, rec, &im->parent)) < 0)
			return err;
		im->has_parent = true;
		return 0;
	case SC_REC_SEGMENT:
		if ((err = sc_segment_read(im->r, rec, im->page, &s)) < 0)
			return err;
		err = add_window(im, &caps[2], rec->seq, &s);
		if (err < 0)
			sc_segment_free(&s);
		return err;
	default:
		return 0; /* a record this tool does not use (cuda-log, devmem: later) */
	}
}

static int check_header(struct image *im)
{
	const struct sc_header *h = sc_reader_header(im->r);

	im->page = h->page_size;
	if (h->arch != SC_ARCH_X86_64 || h->page_size != (uint32_t)sysconf(_SC_PAGESIZE))
		return sc_err(SELFCKPT_EHOST, "'%s' was made on another kind of machine "
			      "(architecture %u, page size %u); this one is x86-64 with %ld-byte "
			      "pages", im->path, h->arch, h->page_size, sysconf(_SC_PAGESIZE));
	return 0;
}

static int load(struct image *im)
{
	struct sc_record rec;
	size_t caps[4] = { 0 };
	int err;

	if ((err = check_header(im)) < 0)
		return err;
	if (!sc_reader_seekable(im->r))
		return sc_err(SELFCKPT_EUSAGE, "'%s' is not a regular file: restoring needs to "
			      "read it twice", im->path);
	while ((err = sc_reader_next(im->r, &rec)) == 1)
		if ((err = load_record(im, &rec, caps)) < 0)
			return err;
	return err < 0 ? err : check_complete(im);
}

/*
 * The reader starts on one thread, that is on none of its own: until the
 * payloads are read, this process must stay single-threaded (see sc_plan_fill()).
 */
int sc_image_load(struct image *im, const char *path)
{
	struct sc_read_opts ro = { .threads = 1 };
	int err;

	memset(im, 0, sizeof(*im));
	im->path = path;
	im->fd = -1;
	if ((err = sc_reader_open(&im->r, path, &ro)) < 0)
		return err;
	return load(im);
}

int sc_image_load_fd(struct image *im, int fd, const char *path)
{
	struct sc_read_opts ro = { .threads = 1 };
	int err;

	memset(im, 0, sizeof(*im));
	im->path = path;
	im->fd = fd;
	if ((err = sc_reader_open_fd(&im->r, fd, path, &ro)) < 0)
		return err;
	return load(im);
}

/* ---- the image file, opened once ---- */

int sc_image_open(const char *path, int *fd)
{
	struct stat st;
	int f = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;

	*fd = -1;
	if (f < 0)
		return sc_err(errno, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(f, &st) < 0) {
		int err = sc_err(errno, "cannot stat '%s': %s", path, strerror(errno));

		close(f);
		return err;
	}
	/* As ssh refuses a key that others may change: they would choose the code it runs. */
	if (S_ISREG(st.st_mode) && (st.st_mode & (S_IWGRP | S_IWOTH))) {
		if (f != STDIN_FILENO)
			close(f);
		return sc_err(EACCES, "'%s' may be written by users other than its owner (mode "
			      "%04o): any of them could change what it runs; refused (chmod go-w "
			      "'%s')", path, (unsigned)(st.st_mode & 07777), path);
	}
	if (S_ISREG(st.st_mode) && st.st_uid != geteuid())
		sc_log(SC_LOG_WARN, "'%s' belongs to uid %u, not to this user (uid %u): the "
		       "process comes back with this user's rights", path, (unsigned)st.st_uid,
		       (unsigned)geteuid());
	*fd = f;
	return 0;
}

/* Whether the index lists a sysv-ipc record (a reader that cannot seek: none). */
static int peek_sysv(struct sc_reader *r, struct sc_peek *peek)
{
	const struct sc_index_entry *e;
	size_t n;
	int err;

	if (!sc_reader_seekable(r))
		return 0;
	if ((err = sc_reader_index(r, &e, &n)) < 0)
		return err;
	for (size_t i = 0; i < n; i++)
		peek->sysv |= e[i].type == SC_REC_SYSV;
	return 0;
}

int sc_image_peek(int fd, const char *path, struct sc_peek *peek)
{
	struct sc_read_opts ro = { .threads = 1 };
	struct sc_process_info p;
	struct sc_reader *r;
	struct sc_record rec;
	int err = sc_reader_open_fd(&r, fd, path, &ro);

	*peek = (struct sc_peek){ 0 };
	while (!err && (err = sc_reader_next(r, &rec)) == 1 && rec.type != SC_REC_PROCESS)
		err = 0;
	if (err == 1 && (err = sc_process_read(r, &rec, &p)) == 0) {
		*peek = (struct sc_peek){ .pid = (pid_t)p.pid, .attrs = p.attrs,
					  .loginuid = p.loginuid };
		sc_process_free(&p);
		err = peek_sysv(r, peek);
	}
	sc_reader_free(r);
	return err < 0 ? err : 0;
}

/* ---- the whole-file checksum ---- */

/*
 * The reader checks each record and chunk it hands out, not the bytes the
 * restore skips (index, records it does not use): the whole-file XXH3 covers
 * every byte, as selfckpt-inspect --verify does. It reads the file once more,
 * on its own reader and thread, while the payloads are decoded.
 */
static void *verify_main(void *arg)
{
	struct image *im = arg;
	struct sc_read_opts ro = { .threads = 1 };
	struct sc_reader *r;

	im->verify_err = sc_reader_open_fd(&r, im->fd, im->path, &ro);
	if (!im->verify_err) {
		im->verify_err = sc_reader_verify_file(r);
		sc_reader_free(r);
	}
	return NULL;
}

/* Where no thread can start (clone3 refused with EPERM), the check runs here and now. */
int sc_image_verify_start(struct image *im)
{
	if (im->fd < 0)
		return sc_err(SELFCKPT_EUSAGE, "'%s' has no descriptor to verify", im->path);
	im->verifying = pthread_create(&im->verifier, NULL, verify_main, im) == 0;
	if (!im->verifying)
		verify_main(im);
	return 0;
}

int sc_image_verify_finish(struct image *im)
{
	if (im->verifying)
		pthread_join(im->verifier, NULL);
	im->verifying = false;
	return im->verify_err;
}

void sc_image_release(struct image *im)
{
	sc_reader_free(im->r);
	im->r = NULL;
	sc_process_free(&im->proc);
	sc_timers_free(&im->timers);
	sc_fds_free(im->fds, im->n_fds);
	free(im->locks);
	sc_sysv_objs_free(im->sysv, im->n_sysv);
	free(im->threads);
	for (size_t i = 0; i < im->n_maps; i++) {
		for (size_t j = 0; j < im->maps[i].n_win; j++)
			sc_segment_free(&im->maps[i].win[j].seg);
		free(im->maps[i].win);
	}
	free(im->maps);
	sc_parent_free(&im->parent);
	memset(im, 0, sizeof(*im));
}
