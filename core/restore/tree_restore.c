/* SPDX-License-Identifier: MIT */
/*
 * tree_restore.c - a job's image set brought back as the process tree it was
 * (job_set.h): every process at its pid, under its parent, in its process
 * group and session, zombies not yet waited for, and the pipes between them
 * each one object with its saved bytes once, and the files they hold open at
 * one position (what a child inherited from its parent: one offset).
 *
 * Before anything changes, every image of the set is opened and checked and
 * the pipes that cross processes are found. Then, in new namespaces (a tree
 * comes back only with its own pids: its processes remember each other's),
 * the first process (at the top's pid) makes those pipes and the processes,
 * each parent its children, with clone3(set_tid). Once all exist, the pid
 * counter is moved past every id the tree had, so that no thread started by
 * a restore takes an id a thread still to come back needs; then every
 * process restores itself from its image (sc_restore()) at once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/fd_socket.h"
#include "core/job_set.h"
#include "core/restore/restore_internal.h"
#include "core/restore/sc_restore.h"
#include "core/restore/fd_place.h"
#include "core/restore/tree_shared.h"
#include "format/sc_log.h"
#include "selfckpt.h"

#define EXIT_TREE_FAILED 70 /* a process of the tree could not be made */

/* One end of a pipe, as an image of the set holds it. */
struct pipe_end {
	uint64_t dev, pipe_id;
	size_t member;
	uint64_t cap;
	void *data; /* the saved bytes (one read end's record per pipe), or NULL */
	size_t len;
};

/* A regular file a process of the set holds open: its record, kept for the path. */
struct open_file {
	struct sc_fd f;
	size_t member;
	unsigned desc; /* its open file description, where the set knows them (R-SET-10) */
};

struct tree {
	char dir[PATH_MAX];
	struct sc_set set;
	struct pipe_end *ends;
	size_t n_ends;
	struct open_file *files;
	size_t n_files;
	int max_fd;   /* the highest descriptor number any process of the tree had */
	pid_t max_id; /* the highest pid or thread id */
	struct shared_map *maps;
	size_t n_maps;
	struct open_file *socks; /* every unix and IP socket of the set, its record kept whole */
	size_t n_socks;
	bool in_flight;          /* a socket of the set has descriptors queued in it */
	struct sc_sysv_obj *sysv; /* the System V objects of the set, each once */
	size_t n_sysv;
	int go[2];     /* every process waits for the end of file on go[0] */
	int ready[2];  /* a byte from each process once its children exist */
	int staged[2]; /* each process's verdict on its image, once staged (an int) */
	int jump[2];   /* every process jumps at the end of file on jump[0] */
	bool foreground; /* the restorer had its terminal (standard input) in the foreground */
	size_t self;   /* the process of the tree this one is */
};

/* Shared memory a process of the set maps: its identity, how much of it. */
struct shared_map {
	uint64_t dev, inode, size;
	size_t member;
};

static const char *image_path(const struct tree *t, size_t i, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", t->dir, t->set.m[i].file);
	return buf;
}

/* Room in *@v (@n items of @size bytes) for one more: grown to twice as many at 0, 1, 3, 7... */
static int room_for_one(void *v, size_t n, size_t size)
{
	void *m;

	if (n & (n + 1))
		return 0;
	if (!(m = realloc(*(void **)v, (2 * n + 2) * size)))
		return sc_err(ENOMEM, "out of memory");
	*(void **)v = m;
	return 0;
}

static int add_end(struct tree *t, const struct sc_fd *f, size_t member)
{
	struct pipe_end *e;

	if (room_for_one(&t->ends, t->n_ends, sizeof(*t->ends)) < 0)
		return -ENOMEM;
	e = &t->ends[t->n_ends++];
	*e = (struct pipe_end){ .dev = f->dev, .pipe_id = f->pipe_id, .member = member,
				.cap = f->size };
	if (f->data && f->data_len) {
		if (!(e->data = malloc(f->data_len)))
			return sc_err(ENOMEM, "out of memory");
		memcpy(e->data, f->data, f->data_len);
		e->len = f->data_len;
	}
	return 0;
}

/* A copy of @f (its path and contents too) at the end of @v (@n of them). */
static int keep_record(struct open_file **v, size_t *n, const struct sc_fd *f, size_t member)
{
	struct open_file *o;

	if (room_for_one(v, *n, sizeof(**v)) < 0)
		return -ENOMEM;
	o = &(*v)[(*n)++];
	o->f = *f;
	o->f.data = NULL;
	o->f.data_len = 0;
	o->member = member;
	if (!(o->f.path = strdup(f->path ? f->path : "")))
		return sc_err(ENOMEM, "out of memory");
	if (f->data_len) { /* a removed file's or memfd's contents, a socket's state */
		if (!(o->f.data = malloc(f->data_len)))
			return sc_err(ENOMEM, "out of memory");
		memcpy(o->f.data, f->data, f->data_len);
		o->f.data_len = f->data_len;
	}
	return 0;
}

static int add_map(struct tree *t, const struct sc_segment_info *s, size_t member)
{
	uint64_t vma_off = s->offset - (s->start - s->vma_start);

	if (room_for_one(&t->maps, t->n_maps, sizeof(*t->maps)) < 0)
		return -ENOMEM;
	t->maps[t->n_maps++] = (struct shared_map){ .dev = s->dev, .inode = s->inode,
						    .size = vma_off + (s->vma_end - s->vma_start),
						    .member = member };
	return 0;
}

/* A standard descriptor that stays the restorer's, shared by the tree as it is. */
static bool restorers_own(const struct sc_fd *f)
{
	return f->fd <= 2 && !(f->fd_flags & SC_FD_OWN_STDIO);
}

/*
 * The System V objects of @im that no image before it held, moved into the
 * tree's list: every image of the set read them at the one instant, so the
 * first copy is the object as it was.
 */
static int take_sysv(struct tree *t, struct image *im)
{
	for (size_t k = 0; k < im->n_sysv; k++) {
		struct sc_sysv_obj *o = &im->sysv[k];
		bool known = false;

		for (size_t j = 0; j < t->n_sysv && !known; j++)
			known = t->sysv[j].kind == o->kind && t->sysv[j].id == o->id;
		if (known)
			continue;
		if (room_for_one(&t->sysv, t->n_sysv, sizeof(*t->sysv)) < 0)
			return -ENOMEM;
		t->sysv[t->n_sysv++] = *o;
		*o = (struct sc_sysv_obj){ 0 }; /* the tree's now */
	}
	return 0;
}

/* One more attach of segment @id in the tree (tree_shared.h). */
static int count_attach(int32_t id)
{
	size_t i = 0;

	while (i < sc_tree_n_shms && sc_tree_shms[i].id != id)
		i++;
	if (i == sc_tree_n_shms) {
		if (room_for_one(&sc_tree_shms, sc_tree_n_shms, sizeof(*sc_tree_shms)) < 0)
			return -ENOMEM;
		sc_tree_shms[sc_tree_n_shms++] = (struct sc_tree_shm){ .id = id };
	}
	sc_tree_shms[i].attaches++;
	return 0;
}

/* What the tree needs of one process's image: its pipe ends and files, its highest ids. */
static int note_image(struct tree *t, size_t i, const struct image *im)
{
	int err = 0;

	for (size_t k = 0; k < im->n_fds && !err; k++) {
		const struct sc_fd *f = &im->fds[k];

		if (f->fd > t->max_fd && f->fd < (1 << 20))
			t->max_fd = f->fd;
		if (f->kind == SC_FD_PIPE_R || f->kind == SC_FD_PIPE_W)
			err = add_end(t, f, i);
		else if (sc_tree_file_key(f) && !restorers_own(f))
			err = keep_record(&t->files, &t->n_files, f, i);
		else if (f->kind == SC_FD_UNIX || f->kind == SC_FD_INET)
			err = keep_record(&t->socks, &t->n_socks, f, i);
		t->in_flight |= (f->fd_flags & SC_FD_IN_FLIGHT) != 0;
	}
	for (size_t k = 0; k < im->n_threads; k++)
		if ((pid_t)im->threads[k].tid > t->max_id)
			t->max_id = (pid_t)im->threads[k].tid;
	for (size_t k = 0; k < im->n_maps && !err; k++) {
		const struct sc_segment_info *s = &im->maps[k].win[0].seg;

		if ((s->flags & SC_SEG_SHARED) &&
		    !(s->flags & (SC_SEG_FILE | SC_SEG_SYSV | SC_SEG_HELD)))
			err = add_map(t, s, i);
		if (s->flags & SC_SEG_SYSV)
			err = count_attach((int32_t)s->inode);
	}
	return err;
}

/* Open, check and read one process's image; refusals name the set and the file. */
static int check_member(struct tree *t, size_t i, const struct sc_restore_opts *o)
{
	const struct sc_set_member *m = &t->set.m[i];
	char path[PATH_MAX + SC_SET_FILE_MAX];
	struct sc_peek peek;
	struct image im;
	int fd, err;

	image_path(t, i, path, sizeof(path));
	if (access(path, F_OK) < 0)
		return sc_err(errno, "the set '%s' is missing the image of process %d ('%s'): "
			      "nothing was restored", t->dir, (int)m->pid, m->file);
	if ((err = sc_image_open(path, &fd)) < 0)
		return err;
	err = sc_image_peek(fd, path, &peek);
	if (!err && peek.pid != m->pid)
		err = sc_err(SELFCKPT_EHEADER, "'%s' is the image of process %d, but the set's "
			     "manifest names it for process %d: nothing was restored", path,
			     (int)peek.pid, (int)m->pid);
	if (!err && o->check_machine)
		err = o->check_machine(fd, path, o->threads);
	if (!err && !(err = sc_image_load_fd(&im, fd, path))) {
		err = note_image(t, i, &im);
		if (!err)
			err = take_sysv(t, &im);
		sc_image_release(&im);
	}
	close(fd);
	return err;
}

static int compare_ends(const void *a, const void *b)
{
	const struct pipe_end *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->pipe_id != y->pipe_id)
		return x->pipe_id < y->pipe_id ? -1 : 1;
	return x->member < y->member ? -1 : x->member > y->member;
}

/* Make one pipe two processes share, above @base, with its saved bytes. */
static int make_pipe(const struct pipe_end *first, const struct pipe_end *end, int base,
		     struct sc_tree_pipe *p)
{
	const struct pipe_end *src = NULL;
	int ends[2];

	for (const struct pipe_end *e = first; e < end; e++)
		if (e->data)
			src = e;
	if (pipe2(ends, O_CLOEXEC) < 0)
		return sc_err(errno, "cannot make a pipe of the tree: %s", strerror(errno));
	p->dev = first->dev;
	p->pipe_id = first->pipe_id;
	p->ends[0] = fcntl(ends[0], F_DUPFD_CLOEXEC, base);
	p->ends[1] = fcntl(ends[1], F_DUPFD_CLOEXEC, base);
	close(ends[0]);
	close(ends[1]);
	if (p->ends[0] < 0 || p->ends[1] < 0)
		return sc_err(errno, "cannot move a pipe of the tree above descriptor %d: %s",
			      base, strerror(errno));
	if (first->cap > (uint64_t)fcntl(p->ends[1], F_GETPIPE_SZ))
		fcntl(p->ends[1], F_SETPIPE_SZ, (int)first->cap);
	if (src && write(p->ends[1], src->data, src->len) != (ssize_t)src->len)
		return sc_err(errno ? errno : EIO, "cannot put %zu saved bytes back in a pipe of "
			      "the tree", src->len);
	return 0;
}

/* The pipes with ends in two processes or more, each made once (tree_shared.h). */
static int make_pipes(struct tree *t)
{
	int base = t->max_fd + 1, err = 0;

	qsort(t->ends, t->n_ends, sizeof(*t->ends), compare_ends);
	sc_tree_pipes = calloc(t->n_ends ? t->n_ends : 1, sizeof(*sc_tree_pipes));
	if (!sc_tree_pipes)
		return sc_err(ENOMEM, "out of memory");
	for (size_t i = 0, j; i < t->n_ends && !err; i = j) {
		bool crosses = false;

		for (j = i + 1; j < t->n_ends && t->ends[j].dev == t->ends[i].dev &&
				t->ends[j].pipe_id == t->ends[i].pipe_id; j++)
			crosses |= t->ends[j].member != t->ends[i].member;
		if (crosses)
			err = make_pipe(&t->ends[i], &t->ends[j], base,
					&sc_tree_pipes[sc_tree_n_pipes++]);
	}
	return err;
}

static int compare_files(const void *a, const void *b)
{
	const struct open_file *x = a, *y = b;

	if (x->desc != y->desc)
		return x->desc < y->desc ? -1 : 1;
	if (x->f.dev != y->f.dev)
		return x->f.dev < y->f.dev ? -1 : 1;
	if (x->f.inode != y->f.inode)
		return x->f.inode < y->f.inode ? -1 : 1;
	if (x->f.pos != y->f.pos)
		return x->f.pos < y->f.pos ? -1 : 1;
	if (x->f.open_flags != y->f.open_flags)
		return x->f.open_flags < y->f.open_flags ? -1 : 1;
	return x->member < y->member ? -1 : x->member > y->member;
}

static bool same_file(const struct open_file *a, const struct open_file *b)
{
	if (sc_tree_files_exact)
		return a->desc && a->desc == b->desc;
	return a->f.dev == b->f.dev && a->f.inode == b->f.inode && a->f.pos == b->f.pos &&
	       a->f.open_flags == b->f.open_flags;
}

/* The tree's descriptor of memfd or removed file @f made already (another description of it). */
static int held_made(const struct sc_fd *f)
{
	for (size_t i = 0; i < sc_tree_n_files; i++)
		if (sc_tree_files[i].dev == f->dev && sc_tree_files[i].inode == f->inode)
			return sc_tree_files[i].fd;
	return -1;
}

/*
 * @f opened again, or made again with its contents, at @base or above. A
 * memfd or removed file is made once: its other descriptions open the same.
 */
static int open_shared(const struct sc_fd *f, int base)
{
	struct sc_fd at = *f;
	int fd = f->kind == SC_FD_REGULAR ? -1 : held_made(f);

	if (fd >= 0)
		return sc_fd_reopen_held(fd, f, base);
	fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, base);
	if (f->kind == SC_FD_REGULAR || fd < 0) {
		if (fd >= 0)
			close(fd);
		return f->kind == SC_FD_REGULAR ? sc_fd_open_regular(f, base)
						: sc_err(errno, "no descriptor is free above %d",
							 base);
	}
	at.fd = fd; /* a number that is free: the file is made there */
	close(fd);
	fd = sc_fd_make_held_file(&at, at.fd + 1);
	return fd < 0 ? fd : at.fd;
}

/*
 * The files that two processes or more hold, each open file description
 * made once here and inherited. Where the set knows the descriptions
 * (R-SET-10), every description of such a file is made so, and a memfd or
 * removed file is made once for all its descriptions. Where it does not, a
 * file held at the same position with the same flags by two processes is
 * taken as one description, as a parent's that its children inherited (two
 * that opened it each would be at different positions, or are never told
 * apart by what they do next but by their offsets, which are one now).
 */
static int make_files(struct tree *t)
{
	int base = t->max_fd + 1, err = 0;

	for (size_t i = 0; i < t->n_files; i++)
		t->files[i].desc = sc_tree_description(t->set.m[t->files[i].member].pid,
						       t->files[i].f.fd);
	qsort(t->files, t->n_files, sizeof(*t->files), compare_files);
	sc_tree_files = calloc(t->n_files ? t->n_files : 1, sizeof(*sc_tree_files));
	if (!sc_tree_files)
		return sc_err(ENOMEM, "out of memory");
	for (size_t i = 0, j; i < t->n_files && !err; i = j) {
		bool crosses = false;
		int fd;

		for (j = i + 1; j < t->n_files && same_file(&t->files[i], &t->files[j]); j++)
			crosses |= t->files[j].member != t->files[i].member;
		if (sc_tree_files_exact ? !t->files[i].desc : !crosses)
			continue;
		if ((fd = open_shared(&t->files[i].f, base)) < 0)
			return fd;
		sc_tree_files[sc_tree_n_files++] = (struct sc_tree_file){
			.dev = t->files[i].f.dev, .inode = t->files[i].f.inode,
			.pos = t->files[i].f.pos, .open_flags = t->files[i].f.open_flags,
			.desc = t->files[i].desc, .fd = fd };
	}
	return err;
}

static int compare_maps(const void *a, const void *b)
{
	const struct shared_map *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->inode != y->inode)
		return x->inode < y->inode ? -1 : 1;
	return x->member < y->member ? -1 : x->member > y->member;
}

/* Shared memory that two processes or more map: one memfd each, as large as any maps it. */
static int make_maps(struct tree *t)
{
	int base = t->max_fd + 1;

	qsort(t->maps, t->n_maps, sizeof(*t->maps), compare_maps);
	sc_tree_maps = calloc(t->n_maps ? t->n_maps : 1, sizeof(*sc_tree_maps));
	if (!sc_tree_maps)
		return sc_err(ENOMEM, "out of memory");
	for (size_t i = 0, j; i < t->n_maps; i = j) {
		uint64_t size = t->maps[i].size;
		bool crosses = false;
		int fd, at;

		for (j = i + 1; j < t->n_maps && t->maps[j].dev == t->maps[i].dev &&
				t->maps[j].inode == t->maps[i].inode; j++) {
			crosses |= t->maps[j].member != t->maps[i].member;
			size = t->maps[j].size > size ? t->maps[j].size : size;
		}
		if (!crosses)
			continue;
		fd = memfd_create("selfckpt-shared", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
		    (at = fcntl(fd, F_DUPFD_CLOEXEC, base)) < 0)
			return sc_err(errno, "cannot make the shared memory of the tree: %s",
				      strerror(errno));
		close(fd);
		sc_tree_maps[sc_tree_n_maps++] = (struct sc_tree_map){
			.dev = t->maps[i].dev, .inode = t->maps[i].inode, .fd = at,
			.owner = t->set.m[t->maps[i].member].pid };
	}
	return 0;
}

static bool socket_shared(const struct tree *t, size_t k)
{
	const struct open_file *o = &t->socks[k];
	uint64_t peer = sc_fd_socket_peer(&o->f);

	for (size_t j = 0; j < t->n_socks; j++) {
		const struct open_file *p = &t->socks[j];

		if (p->member != o->member &&
		    (p->f.inode == o->f.inode || (peer && p->f.inode == peer) ||
		     sc_fd_socket_peer(&p->f) == o->f.inode))
			return true;
	}
	return false;
}

static bool socket_listed(const struct sc_fd *list, size_t n, uint64_t inode)
{
	for (size_t i = 0; i < n; i++)
		if (list[i].inode == inode)
			return true;
	return false;
}

/*
 * The sockets that cross processes - one two processes hold, or the two ends
 * of a pair that two hold one each - made once, here, by the restore of
 * sockets itself, each at a number of its own above every process's, from one
 * record each; both ends of such a pair are made, whoever holds the other.
 */
/* The highest descriptor this process has open, or @floor. */
static int highest_open(int floor)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int top = floor;

	while (d && (e = readdir(d)))
		top = atoi(e->d_name) > top ? atoi(e->d_name) : top;
	if (d)
		closedir(d);
	return top;
}

static void list_socket(struct sc_fd *list, size_t *n, const struct sc_fd *f, int *next)
{
	list[*n] = *f;
	list[(*n)++].fd = (*next)++; /* free: above every descriptor open */
}

static int make_sockets(struct tree *t)
{
	struct sc_fd *list = calloc(t->n_socks ? t->n_socks : 1, sizeof(*list));
	int next = highest_open(t->max_fd) + 1, err = 0;
	size_t n = 0;

	sc_tree_sockets = calloc(t->n_socks ? t->n_socks : 1, sizeof(*sc_tree_sockets));
	if (!list || !sc_tree_sockets)
		err = sc_err(ENOMEM, "out of memory");
	for (size_t k = 0; k < t->n_socks && !err; k++)
		if (!socket_listed(list, n, t->socks[k].f.inode) && socket_shared(t, k))
			list_socket(list, &n, &t->socks[k].f, &next);
	for (size_t k = 0; k < t->n_socks && !err; k++) /* the other end of each pair */
		for (size_t i = 0; i < n; i++)
			if (sc_fd_socket_peer(&list[i]) == t->socks[k].f.inode &&
			    !socket_listed(list, n, t->socks[k].f.inode))
				list_socket(list, &n, &t->socks[k].f, &next);
	if (!err && n && t->in_flight)
		err = sc_err(SELFCKPT_EHOST, "a socket between processes of the tree '%s' has "
			     "descriptors queued in it, which a tree does not bring back yet",
			     t->dir);
	if (!err && n)
		err = sc_fd_sockets_restore(list, n, next);
	for (size_t i = 0; i < n && !err; i++)
		sc_tree_sockets[sc_tree_n_sockets++] = (struct sc_tree_socket){
			.inode = list[i].inode, .fd = list[i].fd };
	free(list);
	return err;
}

/* ---- in the namespaces: the processes ---- */

static bool in_set(const struct tree *t, pid_t pid)
{
	for (size_t i = 0; i < t->set.n; i++)
		if (t->set.m[i].pid == pid)
			return true;
	return false;
}

/* Is @j made by @i: its child, or, for the top, a process whose parent is not of the tree? */
static bool makes(const struct tree *t, size_t i, size_t j)
{
	if (j == 0)
		return false;
	if (t->set.m[j].ppid == t->set.m[i].pid)
		return true;
	return i == 0 && !in_set(t, t->set.m[j].ppid);
}

/* A zombie: ends at once as it ended, and is not waited for. */
static void __attribute__((noreturn)) end_as(int status)
{
	sigset_t none;

	if (WIFSIGNALED(status)) {
		setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });
		signal(WTERMSIG(status), SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		raise(WTERMSIG(status));
	}
	_exit(WEXITSTATUS(status));
}

static int become(struct tree *t, size_t i, const struct sc_restore_opts *o);

/* Make process @j of the tree at its pid; the zombie ends before this returns. */
static int make(struct tree *t, size_t i, size_t j, const struct sc_restore_opts *o)
{
	pid_t want = t->set.m[j].pid;
	struct clone_args ca = { .exit_signal = SIGCHLD, .set_tid = (uint64_t)(uintptr_t)&want,
				 .set_tid_size = 1 };
	long child;
	siginfo_t info;

	if (!in_set(t, t->set.m[j].ppid) && i == 0)
		ca.flags = CLONE_PARENT; /* its parent was no process of the tree: init's */
	child = syscall(SYS_clone3, &ca, sizeof(ca));
	if (child < 0)
		return sc_err(errno, "cannot make process %d of the tree at its pid: %s", (int)want,
			      strerror(errno));
	if (child == 0) {
		if (t->set.m[j].zombie)
			end_as(t->set.m[j].status);
		close(t->go[1]);
		close(t->jump[1]);
		t->self = j;
		become(t, j, o); /* never returns */
	}
	if (t->set.m[j].zombie && !(ca.flags & CLONE_PARENT))
		waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT);
	return 0;
}

/* Its own group or session, where it led one; joining another's waits for "go". */
static void lead(const struct sc_set_member *m)
{
	if (m->sid == m->pid)
		setsid();
	else if (m->pgid == m->pid)
		setpgid(0, 0);
}

/*
 * The restorer's terminal, where it was in the foreground, goes to the top's
 * own group (a shell's job): the job reads it and takes its ^C and ^Z as it
 * did. Its signals are blocked here, so SIGTTOU does not stop it.
 */
static void take_terminal(const struct tree *t, const struct sc_set_member *top)
{
	if (t->foreground && top->pgid == top->pid && top->sid != top->pid &&
	    tcsetpgrp(STDIN_FILENO, getpgrp()) < 0)
		sc_log(SC_LOG_DEBUG, "restore: the terminal stays the restorer's group's: %s",
		       strerror(errno));
}

static void join_group(const struct tree *t, const struct sc_set_member *m)
{
	if (m->pgid != m->pid && m->sid != m->pid && in_set(t, m->pgid) &&
	    setpgid(0, m->pgid) < 0)
		sc_log(SC_LOG_DEBUG, "restore: process %d cannot join the process group %d: %s",
		       (int)m->pid, (int)m->pgid, strerror(errno));
}

/* Signals made by the making of zombies are no part of the image. */
static void drop_sigchld(void)
{
	sigset_t chld;
	struct timespec zero = { 0, 0 };

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	while (sigtimedwait(&chld, NULL, &zero) > 0)
		;
}

/* The processes of the set that run (not zombies). */
static size_t processes(const struct tree *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->set.n; i++)
		n += !t->set.m[i].zombie;
	return n;
}

/* The top, once every process exists: move the pid counter past the tree's ids, then go. */
static void start_all(struct tree *t)
{
	char n[16], c;

	for (size_t got = 0; got < processes(t) && read(t->ready[0], &c, 1) == 1; got++)
		;
	snprintf(n, sizeof(n), "%d", (int)t->max_id);
	if (sc_write_knob("/proc/sys/kernel/ns_last_pid", n) < 0)
		sc_log(SC_LOG_DEBUG, "restore: cannot move the pid counter of the tree's namespace");
	close(t->go[1]);
}

/* The tree this process restores, for staged(). */
static struct tree *the_tree;

/*
 * sc_restore()'s last step before the point of no return, in each process of
 * the tree: no process jumps before every one has staged its image (the
 * shared memory is filled, and a refusal still stops them all). The top
 * hears every verdict: on a refusal it ends the others and returns it.
 */
static int staged(int err)
{
	struct tree *t = the_tree;
	int32_t verdict = err, first = 0;
	char c;

	if (write(t->staged[1], &verdict, sizeof(verdict)) != sizeof(verdict) && !err)
		err = -EPIPE;
	if (t->self != 0) {
		if (err)
			_exit(EXIT_TREE_FAILED); /* the top says why it was refused */
		while (read(t->jump[0], &c, 1) > 0)
			;
		return 0;
	}
	for (size_t got = 0; got < processes(t); got++) {
		if (read(t->staged[0], &verdict, sizeof(verdict)) != sizeof(verdict))
			verdict = -EPIPE;
		if (verdict && !first)
			first = verdict;
	}
	if (first) {
		kill(-1, SIGKILL); /* every process of the tree but the top and its init */
		return first;
	}
	close(t->jump[1]);
	return 0;
}

/*
 * Process @i of the tree, at its pid: its children, then itself from its
 * image. Returns (in the top only) a refusal, once the rest of the tree is
 * ended; else never.
 */
static int become(struct tree *t, size_t i, const struct sc_restore_opts *o)
{
	const struct sc_set_member *m = &t->set.m[i];
	char path[PATH_MAX + SC_SET_FILE_MAX], c;
	struct sc_restore_opts mine = { .threads = o->threads, .in_tree = true,
					.staged = staged };
	int err = 0;

	the_tree = t;
	lead(m);
	if (i == 0)
		take_terminal(t, m);
	for (size_t j = 0; j < t->set.n && !err; j++)
		if (makes(t, i, j))
			err = make(t, i, j, o);
	if (err)
		_exit(EXIT_TREE_FAILED);
	drop_sigchld();
	if (write(t->ready[1], "r", 1) != 1)
		_exit(EXIT_TREE_FAILED);
	if (i == 0)
		start_all(t);
	while (read(t->go[0], &c, 1) > 0)
		;
	close(t->go[0]);
	close(t->ready[0]);
	close(t->ready[1]);
	join_group(t, m);
	mine.path = image_path(t, i, path, sizeof(path));
	err = sc_restore(&mine);
	if (i == 0)
		return err; /* the others are ended; the refusal is the restore's */
	/* refused past the others' staging: none of the tree may go on alone */
	sc_log(SC_LOG_ERROR, "process %d of the tree could not be restored: the tree is ended",
	       (int)m->pid);
	kill(-1, SIGKILL);
	_exit(EXIT_TREE_FAILED);
}

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->n_ends; i++)
		free(t->ends[i].data);
	free(t->ends);
	for (size_t i = 0; i < t->n_files; i++) {
		free(t->files[i].f.path);
		free(t->files[i].f.data);
	}
	free(t->files);
	for (size_t i = 0; i < t->n_socks; i++) {
		free(t->socks[i].f.path);
		free(t->socks[i].f.data);
	}
	free(t->socks);
	free(t->maps);
	sc_sysv_objs_free(t->sysv, t->n_sysv);
	sc_set_free(&t->set);
}

int sc_restore_tree(const struct sc_restore_opts *o)
{
	struct tree t = { .max_fd = 2 };
	int err;

	snprintf(t.dir, sizeof(t.dir), "%s", o->path);
	if ((err = sc_set_read(t.dir, &t.set)) < 0)
		return err;
	sc_tree_files_exact = t.set.files_exact;
	sc_tree_opens = t.set.open;
	sc_tree_n_opens = t.set.n_open;
	for (size_t i = 0; i < t.set.n && !err; i++) {
		if (t.set.m[i].pid > t.max_id)
			t.max_id = t.set.m[i].pid;
		if (!t.set.m[i].zombie)
			err = check_member(&t, i, o);
	}
	if (!err && o->new_ids)
		err = sc_err(SELFCKPT_EHOST, "'%s' is a process tree, which comes back only with "
			     "its own pids (its processes remember each other's): it cannot be "
			     "restored with new ids", t.dir);
	t.foreground = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
	/* System V objects come back with their ids in an IPC namespace of the tree's own */
	if (!err && sc_same_ids_enter(t.set.m[0].pid, -1, t.n_sysv > 0) != 0)
		err = sc_err(t.n_sysv ? SELFCKPT_EIPCNS : SELFCKPT_EHOST, "'%s' is a process "
			     "tree, which comes back only in a pid namespace of its own%s, and "
			     "namespaces are not allowed here: nothing was restored", t.dir,
			     t.n_sysv ? " (and an IPC namespace, for its System V objects)" : "");
	/*
	 * From here on, this is the tree's top at its pid, in the new namespaces.
	 * Its pipes are made here, so that only the tree holds them: "go" ends
	 * when the top closes the last writer.
	 */
	if (!err && (pipe2(t.go, O_CLOEXEC) < 0 || pipe2(t.ready, O_CLOEXEC) < 0 ||
		     pipe2(t.staged, O_CLOEXEC) < 0 || pipe2(t.jump, O_CLOEXEC) < 0 ||
		     sc_sysv_make_all(t.sysv, t.n_sysv) < 0 || make_pipes(&t) < 0 || make_files(&t) < 0 || make_maps(&t) < 0 ||
		     make_sockets(&t) < 0)) {
		sc_log(SC_LOG_ERROR, "the objects the processes of '%s' share could not be made "
		       "(see above): nothing was restored", t.dir);
		_exit(EXIT_TREE_FAILED);
	}
	if (!err)
		err = become(&t, 0, o); /* returns only a refusal */
	tree_free(&t);
	return err;
}
