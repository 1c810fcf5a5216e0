/* SPDX-License-Identifier: MIT */
/*
 * restore_plan.c - where every mapping of the image goes, and its content
 * staged in a hole of the address space that neither the image nor this
 * loader uses, so that nothing of the loader is touched until the blob takes
 * over. Every payload is read, decoded and checked here: a corrupt image is
 * refused while the loader can still report it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/restore/restore_internal.h"
#include "core/restore/tree_shared.h"
#include "core/sc_core.h"
#include "format/sc_array.h"
#include "format/sc_log.h"

#define ADDR_MIN 0x10000ull
#define ADDR_MAX 0x7ff000000000ull
#define GUARD (1ull << 20)

struct range {
	uint64_t start, end;
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

/* ---- the hole ---- */

/* What sc_plan_take() takes for @len bytes: whole guard units, and one spare. */
static uint64_t take_size(uint64_t len)
{
	return (len + GUARD + GUARD - 1) & ~(GUARD - 1);
}

/* An upper bound of everything taken from the hole: every mapping may be staged. */
static uint64_t staged_size(const struct image *im)
{
	uint64_t total = take_size(SC_BLOB_ROOM) + take_size(im->proc.vdso_block_len);

	for (size_t i = 0; i < im->n_maps; i++)
		total += take_size(im->maps[i].end - im->maps[i].start);
	return total;
}

/*
 * Claim the hole at once (inaccessible, no memory committed): the loader's own
 * later mappings - thread stacks, malloc's big blocks - then land elsewhere,
 * and the staging areas are placed inside it with MAP_FIXED.
 */
static int reserve_hole(struct plan *p)
{
	void *at = mmap((void *)p->hole, p->hole_end - p->hole, PROT_NONE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);

	if (at == MAP_FAILED || (uint64_t)at != p->hole)
		return sc_err(errno ? errno : EEXIST, "cannot reserve %llu MiB at 0x%llx to stage "
			      "the image: %s", (unsigned long long)((p->hole_end - p->hole) >> 20),
			      (unsigned long long)p->hole, strerror(errno ? errno : EEXIST));
	return 0;
}

/* The highest gap below ADDR_MAX that neither the image nor the loader uses. */
static int find_hole(const struct image *im, struct plan *p, const struct sc_vma *own,
		     size_t n_own)
{
	size_t n = im->n_maps + n_own + 1, k = 0;
	struct range *r = calloc(n, sizeof(*r));
	uint64_t need = staged_size(im), top = ADDR_MAX;

	if (!r)
		return sc_err(ENOMEM, "out of memory planning the restore");
	for (size_t i = 0; i < im->n_maps; i++)
		r[k++] = (struct range){ im->maps[i].start, im->maps[i].end };
	for (size_t i = 0; i < n_own; i++)
		if (own[i].end <= ADDR_MAX)
			r[k++] = (struct range){ own[i].start, own[i].end };
	r[k++] = (struct range){ im->proc.vdso_block_start,
				 im->proc.vdso_block_start + im->proc.vdso_block_len };
	qsort(r, k, sizeof(*r), cmp_range);
	for (size_t i = k; i-- > 0;) {
		if (r[i].end + need + GUARD <= top) {
			p->hole = (top - need - GUARD) & ~(GUARD - 1);
			break;
		}
		top = r[i].start < top ? r[i].start : top;
	}
	if (!p->hole && top > ADDR_MIN + need + GUARD)
		p->hole = (top - need - GUARD) & ~(GUARD - 1);
	free(r);
	if (!p->hole)
		return sc_err(ENOMEM, "no room of %llu MiB in the address space to stage '%s'",
			      (unsigned long long)(need >> 20), im->path);
	p->next = p->hole;
	p->hole_end = p->hole + need;
	return reserve_hole(p);
}

uint64_t sc_plan_take(struct plan *p, uint64_t len)
{
	uint64_t at = p->next;

	p->next += take_size(len);
	return at;
}

/* ---- checks on this machine ---- */

static int check_vdso(const struct image *im, struct plan *p, const struct sc_vma *own,
		      size_t n_own)
{
	const struct sc_process_info *pr = &im->proc;
	uint64_t vdso = 0, len = 0, base = 0;

	for (size_t i = 0; i < n_own; i++) {
		int part = own[i].kind == SC_VMA_VVAR ? 0 : own[i].kind == SC_VMA_VVAR_VCLOCK ? 1
			 : own[i].kind == SC_VMA_VDSO ? 2 : -1;

		if (part < 0)
			continue;
		p->vdso_parts[part][0] = own[i].start;
		p->vdso_parts[part][1] = own[i].end - own[i].start;
		if (!base)
			base = own[i].start;
		if (part == 2)
			vdso = own[i].start, len = own[i].end - own[i].start;
	}
	if (!vdso || len != pr->vdso_len || vdso - base != pr->vdso_offset ||
	    XXH3_64bits((const void *)vdso, len) != pr->vdso_hash)
		return sc_err(SELFCKPT_EHOST, "the kernel's vDSO differs from the one '%s' was made "
			      "with (another kernel): its code would not match", im->path);
	return 0;
}

/* Clean file pages come back from the file: it must be the same file. */
static int check_file(const struct image *im, const struct mapping *m)
{
	const struct sc_segment_info *s = &m->win[0].seg;
	struct stat st;

	if (stat(s->path, &st) < 0)
		return sc_err(SELFCKPT_EHOST, "'%s' needs '%s', mapped at 0x%llx: %s", im->path,
			      s->path, (unsigned long long)m->start, strerror(errno));
	if ((uint64_t)st.st_size != s->file_size ||
	    (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec !=
		    s->mtime_ns)
		return sc_err(SELFCKPT_EHOST, "'%s' changed since '%s' was made (size %llu, now "
			      "%llu): its pages mapped at 0x%llx would differ", s->path,
			      im->path, (unsigned long long)s->file_size,
			      (unsigned long long)st.st_size, (unsigned long long)m->start);
	return 0;
}

/* ---- what each mapping becomes ---- */

static int fd_base(const struct image *im)
{
	int top = 2;

	for (size_t i = 0; i < im->n_fds; i++)
		top = im->fds[i].fd > top ? im->fds[i].fd : top;
	return top + 64;
}

static int open_backing(const struct image *im, struct mapping *m, struct plan *p)
{
	const struct sc_segment_info *s = &m->win[0].seg;
	bool shared_write = sc_seg_shared_writable(s);
	int fd, err;

	if (s->flags & SC_SEG_FILE)
		fd = open(s->path, (shared_write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	else /* "/memfd:NAME" comes back with its name */
		fd = memfd_create(strncmp(s->path, "/memfd:", 7) ? "selfckpt-shared" : s->path + 7,
				  MFD_CLOEXEC);
	if (fd < 0)
		return sc_err(SELFCKPT_EHOST, "cannot open '%s' for the mapping at 0x%llx: %s",
			      s->flags & SC_SEG_FILE ? s->path : "a memfd",
			      (unsigned long long)m->start, strerror(errno));
	if (!(s->flags & SC_SEG_FILE) && ftruncate(fd, (off_t)(m->end - m->start)) < 0) {
		err = sc_err(errno, "cannot size the shared memory at 0x%llx: %s",
			     (unsigned long long)m->start, strerror(errno));
		close(fd);
		return err;
	}
	m->fd = sc_fd_move_above(fd, fd_base(im)); /* closes @fd once moved */
	if (m->fd < 0) {
		close(fd);
		return sc_err(-m->fd, "cannot move a descriptor: %s", strerror(-m->fd));
	}
	p->map_fds[p->n_map_fds++] = m->fd;
	return 0;
}

/* A shared mapping of a memfd or deleted file, as opposed to shared anonymous memory. */
static bool is_memfd(const struct sc_segment_info *s)
{
	return s->path[0] == '/' && strcmp(s->path, "/dev/zero") && strncmp(s->path, "/SYSV", 5);
}

/* Pages a parent image gives (spec §9.14): a private anonymous mapping only. */
static bool has_parent_runs(const struct mapping *m)
{
	for (size_t w = 0; w < m->n_win; w++)
		for (uint32_t i = 0; i < m->win[w].seg.n_runs; i++)
			if (m->win[w].seg.runs[i].kind == SC_RUN_PARENT)
				return true;
	return false;
}

/* Content to stage: stored pages, or pages a parent image gives. */
static bool has_stored(const struct mapping *m)
{
	for (size_t w = 0; w < m->n_win; w++)
		if (sc_segment_stored_pages(&m->win[w].seg))
			return true;
	return has_parent_runs(m);
}

static int add_op(struct plan *p, const struct mapping *m, uint32_t kind, uint64_t flags,
		  uint32_t map_prot)
{
	const struct sc_segment_info *s = &m->win[0].seg;

	p->ops[p->n_ops++] = (struct sc_op){
		.kind = kind, .prot = s->prot, .map_prot = map_prot, .vmflags = s->vmflags,
		.start = m->start, .len = m->end - m->start, .src = m->premap, .fd = m->fd,
		.offset = s->offset, .flags = flags };
	return 0;
}

#ifndef MAP_DROPPABLE
#define MAP_DROPPABLE 0x08
#endif

/*
 * The type of fresh private anonymous memory for @s: no swap reserved only
 * where the program asked for that (1.3; before, every such mapping was
 * MAP_NORESERVE), and droppable where it was. The staging memory that is moved
 * into place keeps the type it was made with.
 */
static uint64_t anon_type(const struct sc_segment_info *s)
{
	if (!(s->vmflags & SC_VMF_KNOWN))
		return MAP_PRIVATE | MAP_NORESERVE;
	return ((s->vmflags & SC_VMF_DROPPABLE) ? MAP_DROPPABLE : MAP_PRIVATE) |
	       ((s->vmflags & SC_VMF_NORESERVE) ? MAP_NORESERVE : 0);
}

/*
 * A shared mapping of a file that is gone (the JVM deletes its perf-data file
 * when it exits; shared memory in /dev/shm is removed): made again at its path
 * from the pages the image holds, as long as the mapping reaches. The file is
 * staged like a memfd: its pages are decoded straight into it.
 */
static int plan_remade_file(const struct image *im, struct mapping *m, struct plan *p)
{
	const struct sc_segment_info *s = &m->win[0].seg;
	uint64_t len = m->end - m->start, size = s->offset + len;
	int fd, err;

	fd = open(s->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return sc_err(SELFCKPT_EHOST, "cannot make '%s' again for the shared mapping at "
			      "0x%llx: %s", s->path, (unsigned long long)m->start, strerror(errno));
	if (ftruncate(fd, (off_t)(s->file_size > size ? s->file_size : size)) < 0) {
		err = sc_err(errno, "cannot size '%s' for the shared mapping at 0x%llx: %s",
			     s->path, (unsigned long long)m->start, strerror(errno));
		close(fd);
		return err;
	}
	sc_log(SC_LOG_WARN, "'%s', mapped shared at 0x%llx, was gone: made again from '%s'",
	       s->path, (unsigned long long)m->start, im->path);
	m->fd = sc_fd_move_above(fd, fd_base(im)); /* closes @fd once moved */
	if (m->fd < 0) {
		close(fd);
		return sc_err(-m->fd, "cannot move a descriptor: %s", strerror(-m->fd));
	}
	p->map_fds[p->n_map_fds++] = m->fd;
	m->remade = true;
	m->premap = sc_plan_take(p, len);
	return add_op(p, m, SC_OP_MAP_FD, MAP_SHARED, PROT_READ | PROT_WRITE);
}

/*
 * [R-SEG-7] A mapping of the file a descriptor holds: mapped by the blob from
 * that descriptor, which is back at its number by then (restore_jump.c), so
 * that the two are one file again. A shared one needs nothing staged; over a
 * private one go its stored and zeroed pages, as over a private file mapping.
 */
static int plan_held(const struct image *im, struct mapping *m, struct plan *p)
{
	const struct sc_segment_info *s = &m->win[0].seg;

	m->fd = sc_image_held_by(im, s)->fd; /* there is one: the load checked (R-SEG-7) */
	if (s->flags & SC_SEG_SHARED)
		return add_op(p, m, SC_OP_MAP_FD, MAP_SHARED, s->prot | PROT_READ);
	m->staged_copy = true;
	m->premap = has_stored(m) ? sc_plan_take(p, m->end - m->start) : 0;
	return add_op(p, m, SC_OP_MAP_FD, MAP_PRIVATE, PROT_READ | PROT_WRITE);
}

/*
 * An attach of a System V segment (1.5): the blob attaches at its place the
 * segment sc_sysv_restore() made with its id and filled, so nothing is staged
 * (R-SEG-8: its runs are file runs). Read-only where it could not be made
 * writable (no "mw"): attached with SHM_RDONLY.
 */
static int plan_sysv(const struct image *im, struct mapping *m, struct plan *p)
{
	const struct sc_segment_info *s = &m->win[0].seg;
	const struct sc_sysv_obj *o = sc_image_segment_of(im, s->inode);
	uint64_t flags = 0;

	if (!sc_seg_shared_writable(s))
		flags |= SHM_RDONLY;
	if (s->prot & PROT_EXEC)
		flags |= SHM_EXEC;
	if (o->flags & SC_SYSV_RMID)
		flags |= SC_SHMAT_RMID;
	add_op(p, m, SC_OP_SHMAT, flags, s->prot);
	p->ops[p->n_ops - 1].fd = o->id; /* the op's segment id; the mapping has no descriptor */
	p->ops[p->n_ops - 1].offset = sc_tree_shm_attaches(o->id);
	return 0;
}

/* Decide the operation for @m and stage room for its content. */
/*
 * Shared memory the tree being restored shares (tree_shared.h): the tree's
 * memfd, staged and filled through it by its owner, mapped as it is by the
 * others, so that all map one memory again.
 */
static int plan_tree_map(const struct image *im, struct mapping *m, struct plan *p,
			 const struct sc_tree_map *t)
{
	m->fd = fcntl(t->fd, F_DUPFD_CLOEXEC, fd_base(im));
	if (m->fd < 0)
		return sc_err(errno, "cannot copy the descriptor of the tree's shared memory: %s",
			      strerror(errno));
	p->map_fds[p->n_map_fds++] = m->fd;
	if (t->owner == getpid()) {
		m->remade = true; /* staged through the memfd, at the mapping's offset */
		m->premap = sc_plan_take(p, m->end - m->start);
	}
	return add_op(p, m, SC_OP_MAP_FD, MAP_SHARED, PROT_READ | PROT_WRITE);
}

static int plan_mapping(const struct image *im, struct mapping *m, struct plan *p)
{
	const struct sc_segment_info *s = &m->win[0].seg;
	uint64_t len = m->end - m->start;
	uint32_t rw = PROT_READ | PROT_WRITE;
	int err;

	const struct sc_tree_map *t = (s->flags & SC_SEG_SHARED) &&
				      !(s->flags & (SC_SEG_FILE | SC_SEG_SYSV | SC_SEG_HELD))
				      ? sc_tree_map_of(s->dev, s->inode) : NULL;

	if (t)
		return plan_tree_map(im, m, p, t);
	if (s->flags & SC_SEG_HELD)
		return plan_held(im, m, p);
	if (s->flags & SC_SEG_SYSV)
		return plan_sysv(im, m, p);
	if ((s->flags & SC_SEG_FILE) && (s->flags & SC_SEG_SHARED)) {
		/* The file holds the data, and writes through the mapping change its
		 * time: it must only be there, or made again from the image. */
		if (has_stored(m) && access(s->path, F_OK) < 0 && errno == ENOENT)
			return plan_remade_file(im, m, p);
		if ((err = open_backing(im, m, p)) < 0)
			return err;
		return add_op(p, m, SC_OP_MAP_FD, MAP_SHARED, s->prot | PROT_READ);
	}
	if (s->flags & SC_SEG_FILE) {
		if ((err = check_file(im, m)) < 0 || (err = open_backing(im, m, p)) < 0)
			return err;
		m->staged_copy = true; /* stored and zeroed pages go over the file's */
		m->premap = has_stored(m) ? sc_plan_take(p, len) : 0;
		return add_op(p, m, SC_OP_MAP_FD, MAP_PRIVATE, rw);
	}
	if ((s->flags & SC_SEG_SHARED) && is_memfd(s)) {
		if ((err = open_backing(im, m, p)) < 0)
			return err;
		m->premap = sc_plan_take(p, len);
		return add_op(p, m, SC_OP_MAP_FD, MAP_SHARED, rw);
	}
	if (s->flags & SC_SEG_SHARED) {
		/* Shared anonymous memory: staged as such and moved, so it stays what
		 * it was ("/dev/zero (deleted)" in the maps). */
		m->premap = sc_plan_take(p, len);
		return add_op(p, m, SC_OP_MOVE, 0, rw);
	}
	if (s->flags & SC_SEG_STACK) {
		m->staged_copy = true;
		m->premap = has_stored(m) ? sc_plan_take(p, len) : 0;
		return add_op(p, m, SC_OP_MAP_ANON, (s->vmflags & SC_VMF_KNOWN ? anon_type(s)
						     : MAP_PRIVATE) | MAP_GROWSDOWN, rw);
	}
	/*
	 * Nothing to copy in: mapped with its own protection at once, so that a
	 * reservation that was never writable is not charged as writable memory
	 * (a large one would not fit without MAP_NORESERVE).
	 */
	if (!has_stored(m))
		return add_op(p, m, SC_OP_MAP_ANON, anon_type(s), s->prot);
	m->premap = sc_plan_take(p, len);
	return add_op(p, m, SC_OP_MOVE, 0, rw);
}

/*
 * Locked mappings are locked again by the blob, after the point of no return:
 * refuse now an image whose locked memory RLIMIT_MEMLOCK will not allow (the
 * saved limit, which the restore sets, as far as this hard limit lets it).
 */
static int check_locked(const struct image *im)
{
	uint64_t locked = 0, limit = im->proc.rlim_cur[RLIMIT_MEMLOCK];
	struct rlimit now;

	for (size_t i = 0; i < im->n_maps; i++)
		if (im->maps[i].win[0].seg.vmflags & (SC_VMF_LOCKED | SC_VMF_LOCKONFAULT))
			locked += im->maps[i].end - im->maps[i].start;
	if (!locked || geteuid() == 0 || getrlimit(RLIMIT_MEMLOCK, &now) < 0)
		return 0; /* root may lock beyond the limit */
	if (now.rlim_max != RLIM_INFINITY && now.rlim_max < limit)
		limit = now.rlim_max;
	if (limit != RLIM_INFINITY && locked > limit)
		return sc_err(SELFCKPT_EHOST, "'%s' has %llu bytes of memory locked (mlock), more "
			      "than RLIMIT_MEMLOCK lets this restore lock (%llu bytes)", im->path,
			      (unsigned long long)locked, (unsigned long long)limit);
	return 0;
}

/*
 * The program's file, opened for the blob to name it /proc/self/exe again
 * (restorer_rt.c); -1 where it cannot be opened or is not the same file.
 */
static int open_exe(const struct image *im, struct plan *p)
{
	int fd = open(im->proc.exe, O_RDONLY | O_CLOEXEC), moved;
	struct stat st;

	if (fd < 0 || im->proc.exe[0] != '/' || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	moved = sc_fd_move_above(fd, fd_base(im)); /* closes @fd once moved */
	if (moved < 0)
		close(fd);
	if (moved >= 0)
		p->map_fds[p->n_map_fds++] = moved;
	return moved >= 0 ? moved : -1;
}

/* The guard pages of @m's runs, for the restorer to put back (format 1.5). */
static int note_guards(struct plan *p, const struct mapping *m, uint64_t page)
{
	for (size_t w = 0; w < m->n_win; w++)
		for (uint32_t i = 0; i < m->win[w].seg.n_runs; i++) {
			const struct sc_run *run = &m->win[w].seg.runs[i];

			if (run->kind != SC_RUN_GUARD)
				continue;
			if (sc_grow((void **)&p->guards, &p->cap_guards, p->n_guards + 1,
				    sizeof(*p->guards)))
				return sc_err(ENOMEM, "out of memory planning the restore");
			p->guards[p->n_guards++] = (struct sc_range){
				m->win[w].seg.start + run->first * page, (uint64_t)run->count * page
			};
		}
	return 0;
}

/*
 * Guard pages come back only where the kernel makes them (Linux 6.13+): asked
 * now, on a page of our own, so that a kernel without them refuses the image
 * before anything changed, not after the point of no return.
 */
static int guards_possible(const struct image *im, const struct plan *p)
{
	void *m;
	int r;

	if (!p->n_guards)
		return 0;
	m = mmap(NULL, (size_t)im->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	if (m == MAP_FAILED)
		return sc_err(errno, "cannot map a page: %s", strerror(errno));
	r = madvise(m, (size_t)im->page, 102 /* MADV_GUARD_INSTALL */) < 0 ? errno : 0;
	munmap(m, (size_t)im->page);
	if (r)
		return sc_err(SELFCKPT_EHOST, "'%s' has guard pages (MADV_GUARD_INSTALL, at "
			      "0x%llx first) and this kernel cannot make them (%s; Linux 6.13 or "
			      "later can): the program would not fault where it did", im->path,
			      (unsigned long long)p->guards[0].start, strerror(r));
	return 0;
}

int sc_plan_build(struct image *im, struct plan *p)
{
	struct sc_vma *own;
	size_t n_own;
	int err;

	memset(p, 0, sizeof(*p));
	p->ops = calloc(im->n_maps + 1, sizeof(*p->ops));
	p->map_fds = calloc(im->n_maps + 2, sizeof(*p->map_fds)); /* and the program's file */
	if (!p->ops || !p->map_fds)
		return sc_err(ENOMEM, "out of memory planning the restore");
	if ((err = sc_maps_read(0, &own, &n_own)) < 0)
		return err;
	err = check_vdso(im, p, own, n_own);
	if (!err)
		err = find_hole(im, p, own, n_own);
	sc_maps_free(own, n_own);
	if (err < 0)
		return err;
	if ((err = check_locked(im)) < 0)
		return err;
	p->vdso_temp = sc_plan_take(p, im->proc.vdso_block_len);
	for (size_t i = 0; i < im->n_maps && !err; i++)
		if (!(err = plan_mapping(im, &im->maps[i], p)))
			err = note_guards(p, &im->maps[i], im->page);
	if (!err) /* before any content is read: refused at once */
		err = guards_possible(im, p);
	p->exe_fd = err ? -1 : open_exe(im, p);
	return err;
}

/* ---- filling the staged content ---- */

static int add_copy(struct plan *p, uint64_t dst, uint64_t src, uint64_t len)
{
	if (sc_grow((void **)&p->copies, &p->cap_copies, p->n_copies + 1, sizeof(*p->copies)))
		return sc_err(ENOMEM, "out of memory planning the restore");
	p->copies[p->n_copies++] = (struct sc_copy){ dst, src, len };
	return 0;
}

static int premap(const struct mapping *m)
{
	uint64_t len = m->end - m->start;
	bool shared = (m->win[0].seg.flags & SC_SEG_SHARED) && !(m->win[0].seg.flags & SC_SEG_FILE);
	bool memfd = (shared || m->remade) && m->fd >= 0;
	uint32_t vmf = m->win[0].seg.vmflags;
	int flags = memfd ? MAP_SHARED
		    : shared ? MAP_SHARED | MAP_ANONYMOUS |
				       (vmf & SC_VMF_NORESERVE ? MAP_NORESERVE : 0)
			     : (int)anon_type(&m->win[0].seg) | MAP_ANONYMOUS;
	void *at = mmap((void *)m->premap, len, PROT_READ | PROT_WRITE, flags | MAP_FIXED, /* in the hole */
			memfd ? m->fd : -1, m->remade ? (off_t)m->win[0].seg.offset : 0);

	if (at == MAP_FAILED || (uint64_t)at != m->premap)
		return sc_err(errno ? errno : EEXIST, "cannot stage %llu bytes at 0x%llx: %s",
			      (unsigned long long)len, (unsigned long long)m->premap,
			      strerror(errno ? errno : EEXIST));
	return 0;
}

/* Room for @n pieces in p->pieces. */
static int pieces_room(struct plan *p, const struct image *im, size_t n)
{
	struct sc_piece *v;

	if (n <= p->cap_pieces)
		return 0;
	v = realloc(p->pieces, n * sizeof(*v));
	if (!v)
		return sc_err(ENOMEM, "out of memory reading '%s'", im->path);
	p->pieces = v;
	p->cap_pieces = n;
	return 0;
}

/*
 * Read one window's stored pages into the staging area, each run in its place:
 * the payload is read in one call, so that its chunks decode and land on every
 * thread. Then note the copies the restorer makes, if the mapping needs them.
 * @chained: the chain wrote over the staging first, so zero runs are made zero.
 */
static int fill_window(struct image *im, struct plan *p, const struct mapping *m,
		       const struct window *w, bool chained)
{
	uint64_t ps = im->page, off = w->seg.start - m->start;
	struct sc_record rec;
	size_t n = 0;
	int err;

	if ((err = sc_reader_seek(im->r, w->record)) < 0 ||
	    (err = sc_reader_next(im->r, &rec)) < 0 || (err = pieces_room(p, im, w->seg.n_runs)) < 0)
		return err;
	for (uint32_t i = 0; i < w->seg.n_runs; i++) {
		const struct sc_run *run = &w->seg.runs[i];
		uint64_t at = off + run->first * ps, len = (uint64_t)run->count * ps;

		if (run->kind == SC_RUN_STORED)
			p->pieces[n++] = (struct sc_piece){ (void *)(m->premap + at), len };
		else if (run->kind == SC_RUN_ZERO && chained)
			madvise((void *)(m->premap + at), len, MADV_DONTNEED);
	}
	if (n && (err = sc_reader_read_pieces(im->r, p->pieces, n)) < 0)
		return err;
	for (uint32_t i = 0; i < w->seg.n_runs && m->staged_copy; i++) {
		const struct sc_run *run = &w->seg.runs[i];
		uint64_t at = off + run->first * ps, len = (uint64_t)run->count * ps;

		if (run->kind == SC_RUN_STORED || run->kind == SC_RUN_PARENT)
			err = add_copy(p, m->start + at, m->premap + at, len);
		else if (run->kind == SC_RUN_ZERO && (w->seg.flags & (SC_SEG_FILE | SC_SEG_HELD)))
			err = add_copy(p, m->start + at, 0, len);
		if (err < 0)
			return err;
	}
	return 0;
}

/* A mapping with parent runs: staged, and what the chain gives it noted (restore_chain.c). */
static int ask_chain(struct image *im, const struct mapping *m)
{
	int err = sc_chain_stage(im->chain, m->start, m->end, (void *)m->premap);

	for (size_t w = 0; w < m->n_win && !err; w++) {
		const struct sc_segment_info *s = &m->win[w].seg;

		for (uint32_t i = 0; i < s->n_runs && !err; i++)
			if (s->runs[i].kind == SC_RUN_PARENT)
				err = sc_chain_ask(im->chain, s->start + s->runs[i].first * im->page,
						   (uint64_t)s->runs[i].count * im->page);
	}
	return err;
}

/*
 * An incremental image's mappings with parent runs: the chain writes them,
 * oldest image first, then their own pages go over (restore_chain.c).
 */
static int fill_from_chain(struct image *im, struct plan *p, unsigned threads)
{
	int err = sc_chain_fill(im->chain, im->path, threads);

	for (size_t i = 0; i < im->n_maps && !err; i++)
		if (im->maps[i].premap && has_parent_runs(&im->maps[i]))
			for (size_t w = 0; w < im->maps[i].n_win && !err; w++)
				err = fill_window(im, p, &im->maps[i], &im->maps[i].win[w], true);
	return err;
}

/*
 * The decoding threads start only now. Planning moves the backing files'
 * descriptors above the image's, which grows the descriptor table, and a
 * process with more than one thread grows it only after an RCU grace period:
 * 15-40 ms on a 16-CPU machine, a tenth of a whole 1 GiB restart.
 */
int sc_plan_fill(struct image *im, struct plan *p, unsigned threads)
{
	int err = sc_reader_set_threads(im->r, threads);
	bool chain = false;

	if (err < 0)
		return err;
	for (size_t i = 0; i < im->n_maps; i++) {
		struct mapping *m = &im->maps[i];
		bool memfd = (((m->win[0].seg.flags & SC_SEG_SHARED) &&
			      !(m->win[0].seg.flags & SC_SEG_FILE)) || m->remade) && m->fd >= 0;

		if (m->premap && has_parent_runs(m)) {
			if ((err = premap(m)) < 0 || (err = ask_chain(im, m)) < 0)
				return err;
			chain = true;
			continue;
		}
		if (!m->premap) {
			/* nothing staged; zeroed file pages still need their copies */
			for (size_t w = 0; w < m->n_win && m->staged_copy; w++)
				if ((err = fill_window(im, p, m, &m->win[w], false)) < 0)
					return err;
			continue;
		}
		if ((err = premap(m)) < 0)
			return err;
		for (size_t w = 0; w < m->n_win; w++)
			if ((err = fill_window(im, p, m, &m->win[w], false)) < 0)
				return err;
		if (memfd) {
			munmap((void *)m->premap, m->end - m->start);
			m->premap = 0;
		}
	}
	return chain ? fill_from_chain(im, p, threads) : 0;
}
