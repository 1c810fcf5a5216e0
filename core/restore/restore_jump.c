/* SPDX-License-Identifier: MIT */
/*
 * restore_jump.c - the point of no return: the blob and its arguments in the
 * hole, the process-wide state this loader can set itself (descriptors,
 * working directory, umask, limits), then the jump into the blob.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/restore/restore_internal.h"
#include "core/restore/tree_shared.h"
#include "core/sc_core.h"
#include "format/sc_log.h"

#define BLOB_STACK (256u << 10)
#define RSEQ_FLAG_UNREGISTER 1

extern const uint8_t sc_restorer_blob[], sc_restorer_blob_end[];
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

uint64_t sc_plan_take(struct plan *p, uint64_t len);

/* Carve @size bytes, 16-aligned, from the argument area. */
static void *carve(uint8_t **cursor, size_t size)
{
	void *at = *cursor;

	*cursor += (size + 15) & ~(size_t)15;
	return at;
}

/* Everything of the loader goes: code, libc, heap, stack. Built last, after
 * the last allocation, so that no mapping of the loader escapes the list. */
static int build_unmap(struct plan *p, struct sc_restorer_args *a)
{
	struct sc_vma *own;
	size_t n;
	int err = sc_maps_read(0, &own, &n);

	if (err < 0)
		return err;
	for (size_t i = 0; i < n; i++) {
		bool keep = (own[i].start >= p->hole && own[i].end <= p->hole_end) ||
			    own[i].kind == SC_VMA_VVAR || own[i].kind == SC_VMA_VVAR_VCLOCK ||
			    own[i].kind == SC_VMA_VDSO || own[i].kind == SC_VMA_VSYSCALL;

		if (keep)
			continue;
		a->unmap[2 * a->n_unmap] = own[i].start;
		a->unmap[2 * a->n_unmap + 1] = own[i].end - own[i].start;
		a->n_unmap++;
	}
	sc_maps_free(own, n);
	return 0;
}

/*
 * The blob's own thread becomes the thread-group leader of the saved process
 * (its main thread), so the main thread stays the leader; the coordinator when
 * the leader had exited.
 */
static size_t leader_index(const struct image *im)
{
	for (size_t i = 0; i < im->n_threads; i++)
		if ((uint32_t)im->threads[i].tid == im->proc.pid)
			return i;
	return (size_t)(im->coord - im->threads);
}

static void fill_process(const struct image *im, struct sc_restorer_args *a)
{
	const struct sc_process_info *pr = &im->proc;
	const struct sc_thread_record *t = &im->threads[a->self];

	sc_mm_map_fill(pr, &a->mm);
	memcpy(a->auxv, pr->auxv, pr->auxv_len);
	for (int sig = 1; sig <= 64; sig++) {
		const struct sc_sigaction_record *s = &im->sig.act[sig - 1];

		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		a->act[sig - 1] = (struct sc_kernel_sigaction){ s->handler, s->flags, s->restorer,
								s->mask };
		a->act_valid |= 1ull << (sig - 1);
	}
	a->fs_base = t->fs_base;
	a->gs_base = t->gs_base;
	a->tid_addr = t->tid_addr;
	a->robust_head = t->robust_head;
	a->robust_len = t->robust_len;
	a->rseq_addr = t->rseq_addr;
	a->rseq_len = t->rseq_len;
	a->rseq_sig = t->rseq_sig;
	a->pdeath_sig = t->pdeath_sig;
	a->ss_sp = t->ss_sp;
	a->ss_size = t->ss_size;
	a->ss_flags = t->ss_flags;
	memcpy(a->ctx, t->ctx, sizeof(a->ctx));
	a->handoff = pr->handoff;
	if (strcmp(im->path, "-") && !realpath(im->path, a->image))
		a->image[0] = 0;
	a->thread_start = pr->thread_start;
	a->vdso_target = pr->vdso_block_start;
}

extern char **environ;

/*
 * This process's environment, for the restored library: a GPU proxy started
 * at a restart belongs to the job that restores (CUDA_VISIBLE_DEVICES of a new
 * allocation), while the program keeps the environment it was saved with.
 * NUL-separated strings; left out when larger than ENV_MAX.
 */
#define ENV_MAX (1u << 20)

static void carry_environment(struct sc_restorer_args *a, uint8_t **cursor)
{
	size_t len = 0;
	uint8_t *dst;

	for (char **e = environ; *e; e++)
		len += strlen(*e) + 1;
	if (!len || len > ENV_MAX)
		return;
	dst = carve(cursor, len);
	a->env = (uint64_t)(uintptr_t)dst;
	a->env_len = len;
	for (char **e = environ; *e; e++) {
		size_t n = strlen(*e) + 1;

		memcpy(dst, *e, n);
		dst += n;
	}
}

static int place_blob(const struct image *im, struct plan *p, struct sc_restorer_args **out)
{
	size_t code = (size_t)(sc_restorer_blob_end - sc_restorer_blob);
	size_t code_room = (code + 4095) & ~(size_t)4095;
	uint64_t at = sc_plan_take(p, SC_BLOB_ROOM);
	uint8_t *base = mmap((void *)at, SC_BLOB_ROOM, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), *cursor; /* in the hole */
	struct sc_restorer_args *a;
	size_t tables = sizeof(*a) + im->n_threads * sizeof(struct sc_thread_args) +
			p->n_ops * sizeof(struct sc_op) +
			p->n_copies * sizeof(struct sc_copy) + p->n_guards * sizeof(struct sc_range) +
			16 * p->n_map_fds + 4096 + ENV_MAX +
			im->timers.n * sizeof(struct sc_timer_args);

	if (base == MAP_FAILED || (uint64_t)base != at)
		return sc_err(ENOMEM, "cannot place the restorer at 0x%llx", (unsigned long long)at);
	if (code_room + tables + BLOB_STACK + (16u << 20) > SC_BLOB_ROOM || im->proc.auxv_len > 1024)
		return sc_err(ENOMEM, "'%s' needs more restorer room than %llu MiB", im->path,
			      (unsigned long long)(SC_BLOB_ROOM >> 20));
	memcpy(base, sc_restorer_blob, code);
	if (mprotect(base, code_room, PROT_READ | PROT_EXEC) < 0)
		return sc_err(errno, "cannot make the restorer executable: %s", strerror(errno));
	cursor = base + code_room;
	a = carve(&cursor, sizeof(*a));
	memset(a, 0, sizeof(*a));
	a->blob_start = at;
	a->blob_len = SC_BLOB_ROOM;
	a->hole_start = p->hole;
	a->hole_end = p->hole_end;
	a->stack_top = at + SC_BLOB_ROOM - 64;
	a->ops = carve(&cursor, p->n_ops * sizeof(*p->ops));
	memcpy(a->ops, p->ops, p->n_ops * sizeof(*p->ops));
	a->n_ops = (uint32_t)p->n_ops;
	a->copies = carve(&cursor, p->n_copies * sizeof(*p->copies));
	memcpy(a->copies, p->copies, p->n_copies * sizeof(*p->copies));
	a->n_copies = (uint32_t)p->n_copies;
	a->guards = carve(&cursor, p->n_guards * sizeof(*p->guards));
	if (p->n_guards)
		memcpy(a->guards, p->guards, p->n_guards * sizeof(*p->guards));
	a->n_guards = (uint32_t)p->n_guards;
	a->threads = carve(&cursor, im->n_threads * sizeof(*a->threads));
	a->n_threads = (uint32_t)im->n_threads;
	a->same_ids = p->same_ids;
	a->self = (uint32_t)leader_index(im);
	for (size_t i = 0; i < im->n_threads; i++) {
		const struct sc_thread_record *t = &im->threads[i];
		uint64_t rsp;

		memcpy(&rsp, t->ctx + 48, sizeof(rsp)); /* struct sc_ctx: rsp */
		a->threads[i] = (struct sc_thread_args){ .fs_base = t->fs_base,
							 .tid_addr = t->tid_addr, .stack = rsp,
							 .state = t->state, .tid = t->tid };
	}
	a->close_fds = carve(&cursor, p->n_map_fds * sizeof(int32_t));
	for (size_t i = 0; i < p->n_map_fds; i++)
		a->close_fds[i] = p->map_fds[i];
	a->n_close = (uint32_t)p->n_map_fds;
	memcpy(a->vdso_parts, p->vdso_parts, sizeof(a->vdso_parts));
	a->vdso_temp = p->vdso_temp;
	carry_environment(a, &cursor);
	sc_timers_fill(im, a, carve(&cursor, im->timers.n * sizeof(struct sc_timer_args)));
	fill_process(im, a);
	a->mm.exe_fd = p->exe_fd;
	*out = a;
	a->unmap = (uint64_t *)cursor; /* build_unmap() fills it last */
	return 0;
}

/*
 * A POSIX lock is the process's, and closing any descriptor of its file
 * drops it: the restore closes the descriptors it mapped files through once
 * the memory is in place, so a POSIX lock on a mapped file would be lost.
 * Refused, named, rather than restored without it.
 */
static int check_locked_maps(const struct image *im, const struct plan *p)
{
	for (size_t i = 0; i < im->n_locks; i++) {
		struct stat locked, mapped;

		if (im->locks[i].kind != SC_LOCK_POSIX || fstat(im->locks[i].fd, &locked) < 0)
			continue;
		for (size_t j = 0; j < p->n_map_fds; j++)
			if (fstat(p->map_fds[j], &mapped) == 0 && mapped.st_ino == locked.st_ino &&
			    mapped.st_dev == locked.st_dev)
				return sc_err(SELFCKPT_EHOST, "'%s' holds a POSIX lock on the file of "
					      "descriptor %d, which it also maps: the restore cannot "
					      "keep that lock", im->path, im->locks[i].fd);
	}
	return 0;
}

static int compare_fd(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Close [@from, @to]: one close_range(), or a close() each where it is refused. */
static void close_between(int from, int to)
{
	if (from > to || syscall(SYS_close_range, (unsigned)from, (unsigned)to, 0) == 0)
		return;
	for (int fd = from; fd <= to; fd++)
		close(fd);
}

static bool kept(const int *keep, size_t n, int fd)
{
	for (size_t i = 0; i < n; i++)
		if (keep[i] == fd)
			return true;
	return false;
}

/*
 * Close every descriptor above 2 but @keep's: the gaps between them, in
 * order. The mappings' descriptors sit above every recorded number, so a
 * close() per number below them was 10,000 calls for 10,000 descriptors.
 */
static void close_all_but(const int *keep, size_t n)
{
	int *sorted = malloc((n ? n : 1) * sizeof(*sorted)), from = 3;

	if (!sorted) { /* out of memory: a close() per number */
		for (size_t i = 0; i < n; i++)
			from = keep[i] + 1 > from ? keep[i] + 1 : from;
		for (int fd = 3; fd < from; fd++)
			if (!kept(keep, n, fd))
				close(fd);
	} else {
		memcpy(sorted, keep, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), compare_fd);
		for (size_t i = 0; i < n; i++) {
			close_between(from, sorted[i] - 1);
			from = sorted[i] + 1 > from ? sorted[i] + 1 : from;
		}
	}
	free(sorted);
	syscall(SYS_close_range, (unsigned)from, ~0u, 0);
}

/* close_all_but(), keeping what a tree being restored shares too (tree_shared.h). */
static void close_all_but_tree(const int *keep, size_t n)
{
	size_t shared = sc_tree_shared_count();
	int *all;

	if (!shared || !(all = malloc((n + shared) * sizeof(*all)))) {
		close_all_but(keep, n);
		return;
	}
	memcpy(all, keep, n * sizeof(*all));
	close_all_but(all, n + sc_tree_shared_fds(all + n));
	free(all);
}

/* Leave open exactly the descriptors the image had, plus the blob's own. */
static int restore_descriptors(const struct image *im, const struct plan *p)
{
	int err;

	close_all_but_tree(p->map_fds, p->n_map_fds);
	err = sc_fds_restore(im->fds, im->n_fds);
	if (!err)
		sc_fd_owners_restore(im->fds, im->n_fds, (pid_t)im->proc.pid);
	sc_tree_shared_close(); /* what this process held of the tree's is in place */
	if (!err)
		err = check_locked_maps(im, p);
	return err ? err : sc_locks_restore(im->locks, im->n_locks);
}

/* /proc/self/loginuid's text into @now (ended): its length, or <= 0 where it cannot be read. */
static ssize_t read_loginuid(char now[16])
{
	int fd = open("/proc/self/loginuid", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, now, 15);

	if (fd >= 0)
		close(fd);
	now[n > 0 ? n : 0] = '\0';
	return n;
}

/*
 * The audit login uid, where this process's differs. Setting one that is
 * not set needs no privilege; changing one that is needs CAP_AUDIT_CONTROL:
 * without it the restored process keeps the restorer's, and is told.
 */
void sc_loginuid_restore(const struct sc_peek *pr)
{
	char now[16], want[16];
	ssize_t n = read_loginuid(now);
	int fd, len;

	if (!(pr->attrs & SC_ATTR_LOGINUID) || n <= 0 ||
	    (uint32_t)strtoul(now, NULL, 10) == pr->loginuid)
		return;
	len = snprintf(want, sizeof(want), "%u", pr->loginuid);
	fd = open("/proc/self/loginuid", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, want, (size_t)len) != len)
		sc_log(SC_LOG_WARN, "cannot set the audit login uid %u again (this session's is "
		       "%.*s): %s", pr->loginuid, (int)strcspn(now, "\n"), now, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/* This process's audit login uid as it reads it now; 4294967295 where unknown. */
static uint32_t loginuid_now(void)
{
	char now[16];

	return read_loginuid(now) > 0 ? (uint32_t)strtoul(now, NULL, 10) : 4294967295u;
}

/*
 * Inside the user namespace that gives the process its ids back, a login
 * uid that the namespace does not map reads as unset: said, since only
 * --new-ids (no namespace) shows it to the program as it was.
 */
void sc_loginuid_check_namespace(const struct sc_peek *pr)
{
	uint32_t now = loginuid_now();

	if ((pr->attrs & SC_ATTR_LOGINUID) && pr->loginuid != 4294967295u && now != pr->loginuid)
		sc_log(SC_LOG_WARN, "the audit login uid %u is not mapped in the user namespace "
		       "that gives the process its ids back: the program reads it as %u "
		       "(--new-ids keeps it, with new process ids)", pr->loginuid, now);
}

/* The membarrier() registrations of the process: of its memory, which is this one's now. */
static void restore_membarrier(uint32_t attrs)
{
	static const struct {
		uint32_t attr;
		int cmd;
		const char *what;
	} kinds[] = {
		{ SC_ATTR_MEMBARRIER, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, "" },
		{ SC_ATTR_MEMBARRIER_SYNC_CORE, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE,
		  " sync-core" },
		{ SC_ATTR_MEMBARRIER_RSEQ, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, " rseq" },
		{ SC_ATTR_MEMBARRIER_GLOBAL, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, "" },
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if ((attrs & kinds[i].attr) && syscall(SYS_membarrier, kinds[i].cmd, 0, 0) < 0)
			sc_log(SC_LOG_WARN, "cannot register for %s expedited%s membarrier() "
			       "again: %s", kinds[i].attr == SC_ATTR_MEMBARRIER_GLOBAL ? "global" :
			       "private", kinds[i].what, strerror(errno));
}

/*
 * What the program had set on itself. A lower OOM score adjustment than the
 * restorer's needs a privilege: without it the restored process keeps the
 * restorer's, and is told.
 */
static void restore_attrs(const struct sc_process_info *pr)
{
	char v[16];
	int fd, len;

	if (!(pr->attrs & SC_ATTR_KNOWN))
		return;
	if ((pr->attrs & SC_ATTR_THP_DISABLE) && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0)
		sc_log(SC_LOG_WARN, "cannot disable transparent huge pages again: %s",
		       strerror(errno));
	if ((pr->attrs & SC_ATTR_SUBREAPER) && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		sc_log(SC_LOG_WARN, "cannot become a child subreaper again: %s", strerror(errno));
	restore_membarrier(pr->attrs);
	len = snprintf(v, sizeof(v), "%d", (int)pr->oom_score_adj);
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, v, (size_t)len) != len)
		sc_log(SC_LOG_WARN, "cannot set the OOM score adjustment %d again: %s",
		       (int)pr->oom_score_adj, strerror(errno));
	if (fd >= 0)
		close(fd);
}

static int restore_process_state(const struct image *im)
{
	const struct sc_process_info *pr = &im->proc;

	if (chdir(pr->cwd) < 0)
		return sc_err(SELFCKPT_EHOST, "cannot enter the working directory '%s' of '%s': %s",
			      pr->cwd, im->path, strerror(errno));
	umask(pr->umask);
	restore_attrs(pr);
	for (int i = 0; i < SC_RLIMITS; i++) {
		struct rlimit rl = { pr->rlim_cur[i], pr->rlim_max[i] };

		if (setrlimit((__rlimit_resource_t)i, &rl) < 0)
			sc_log(SC_LOG_WARN, "cannot restore resource limit %d (%llu/%llu): %s", i,
			       (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
			       strerror(errno));
	}
	return 0;
}

/* The loader's own rseq area is about to be unmapped: the kernel must forget it. */
static void drop_rseq(void)
{
	uint64_t tp;

	if (!&__rseq_size || !__rseq_size)
		return;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	syscall(SYS_rseq, (void *)(tp + (uint64_t)__rseq_offset), 32, RSEQ_FLAG_UNREGISTER,
		0x53053053);
}

int sc_restore_jump(struct image *im, struct plan *p)
{
	struct sc_restorer_args *a = NULL;
	sc_restorer_entry_fn entry;
	sigset_t all;
	bool restore_ids;
	int err = sc_timers_probe(im, &restore_ids);

	if (!err)
		err = place_blob(im, p, &a);
	if (err < 0)
		return err;
	a->timer_restore_ids = restore_ids;
	sc_reader_free(im->r);
	im->r = NULL;
	/* The limits are the restored process's now: the blob's PR_SET_MM_MAP must pass. */
	if ((err = restore_descriptors(im, p)) < 0 || (err = restore_process_state(im)) < 0 ||
	    (err = sc_probe_mm_map(im, true)) < 0)
		return err;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	if ((err = build_unmap(p, a)) < 0)
		return err;
	entry = (sc_restorer_entry_fn)a->blob_start;
	drop_rseq();
	entry(a);
	__builtin_unreachable();
}
