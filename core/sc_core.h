/* SPDX-License-Identifier: MIT */
/*
 * sc_core.h - the process side of selfckpt, as other modules (cli/, cuda/)
 * use it: the memory map, page residency, file descriptors.
 */
#ifndef SC_CORE_H
#define SC_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- the memory map (/proc/<pid>/maps) ---- */

enum sc_vma_kind {
	SC_VMA_ANON,        /* anonymous private or shared memory: no path, /dev/zero,
			     * /SYSV<key> (SysV shm), /anon_hugepage, [anon:name] */
	SC_VMA_FILE,        /* mapping of a regular file that exists */
	SC_VMA_DELETED,     /* mapping of a file that was unlinked (or a memfd) */
	SC_VMA_HEAP,        /* [heap] */
	SC_VMA_STACK,       /* [stack] */
	SC_VMA_VDSO,        /* [vdso] */
	SC_VMA_VVAR,        /* [vvar] */
	SC_VMA_VVAR_VCLOCK, /* [vvar_vclock] */
	SC_VMA_VSYSCALL,    /* [vsyscall] */
	SC_VMA_DEVICE,      /* a mapping of a file under /dev (not /dev/zero or /dev/shm) */
	SC_VMA_SPECIAL,     /* any other [name] the kernel shows, e.g. [uprobes], or a
			     * path that is not absolute (anon_inode:[perf_event]) */
};

#define SC_VMA_SHARED 0x1u /* 's' in maps: MAP_SHARED */
#define SC_VMA_HELD 0x2u   /* a memfd or removed file a descriptor holds (set by a checkpoint) */
#define SC_VMA_SYSV 0x4u   /* an attach of a System V shared memory segment: a deleted
			    * /SYSV<key>, whose inode is the segment's id */

struct sc_vma {
	uint64_t start, end; /* [start, end) */
	uint32_t prot;       /* PROT_READ | PROT_WRITE | PROT_EXEC */
	uint32_t flags;      /* SC_VMA_* */
	uint64_t offset;     /* file offset */
	uint64_t dev;        /* makedev(major, minor) as shown in maps */
	uint64_t inode;
	enum sc_vma_kind kind;
	char *path;          /* file path or [name], " (deleted)" removed; "" for anon */
	uint32_t vmflags;    /* SC_VMF_* of the segment records, where a checkpoint set them */
};

/* Is @v an attach of System V shared memory segment @id? */
static inline bool sc_vma_attaches(const struct sc_vma *v, int32_t id)
{
	return (v->flags & SC_VMA_SYSV) && v->inode == (uint64_t)id;
}

/**
 * sc_maps_read() - parse /proc/<pid>/maps (pid 0: /proc/self/maps).
 * @out: receives an array of @n entries, in address order; free with sc_maps_free().
 * Return: 0 or -errno; a line that does not parse is -EPROTO with a message
 * quoting the line.
 */
int sc_maps_read(pid_t pid, struct sc_vma **out, size_t *n);
/**
 * sc_maps_parse() - as sc_maps_read(), of the @len bytes of maps text @buf
 * (NUL-terminated; modified in place), which messages call @name.
 */
int sc_maps_parse(char *buf, size_t len, const char *name, struct sc_vma **out, size_t *n);

void sc_maps_free(struct sc_vma *v, size_t n);

/** sc_vma_kind_name() - "anon", "file", "heap", ... for messages and inspect. */
const char *sc_vma_kind_name(enum sc_vma_kind kind);

/* ---- page residency (/proc/<pid>/pagemap) ---- */

enum sc_page_state {
	SC_PAGE_ABSENT = 0,  /* never touched (or swapped out: see below) */
	SC_PAGE_PRESENT = 1, /* has contents of its own: anonymous, or a private copy */
	SC_PAGE_FILE = 2,    /* present, but still the backing file's page */
	SC_PAGE_GUARD = 3,   /* a guard page (MADV_GUARD_INSTALL): faults on any access */
};
/*
 * For shared mappings the page tables say little: a page of a MAP_SHARED
 * anonymous (shmem) mapping is a file page to the kernel and comes back as
 * SC_PAGE_FILE (callers treat it as SC_PAGE_PRESENT there), and a page that
 * is in the page cache but not mapped into this process, or a shmem page in
 * swap, is SC_PAGE_ABSENT. A read-only touched anonymous page (the shared
 * zero page) is SC_PAGE_PRESENT.
 */

struct sc_page_run {
	uint64_t first;  /* page index from the start of the range scanned */
	uint64_t count;
	enum sc_page_state state;
};

/**
 * sc_pages_scan() - residency of the pages of [start, end) in process @pid
 * (0: this process).
 * @runs: receives runs that cover the range exactly, in order, adjacent runs of
 *        different states; free() it.
 *
 * @start, @end: page-aligned, @start <= @end; an empty range gives no runs.
 *
 * Swapped-out pages count as SC_PAGE_PRESENT: their contents must be saved.
 * Guard pages are SC_PAGE_GUARD where the kernel tells them (Linux 6.15+;
 * before, they read as swapped out, and reading them faults).
 * Uses the PAGEMAP_SCAN ioctl (Linux 6.7+), so a huge sparse reservation costs
 * only its touched ranges, and falls back to reading pagemap entries (8 bytes
 * a page) on older kernels, or when SELFCKPT_NO_PAGEMAP_SCAN=1 was in the
 * environment at the first call. Another process needs ptrace read access.
 * Return: 0 or -errno (-EINVAL for a misaligned range).
 */
int sc_pages_scan(pid_t pid, uint64_t start, uint64_t end, struct sc_page_run **runs,
		  size_t *n);

struct sc_pool;
/**
 * sc_pages_scan_pool() - as sc_pages_scan(), a large range walked in parts at
 * once on @pool; for a process whose page tables do not change
 * meanwhile (a stopped snapshot). A failed part's message is said again here.
 */
int sc_pages_scan_pool(struct sc_pool *pool, pid_t pid, uint64_t start, uint64_t end,
		       struct sc_page_run **runs, size_t *n);

/** sc_page_is_zero() - true when the @len bytes at @p (a multiple of 64) are all zero. */
bool sc_page_is_zero(const void *p, size_t len);

/* ---- selfckpt's own mappings, never saved (skip.c) ---- */

/** sc_skip_add() - leave [start, end) out of every image; -1 when the table is full. */
int sc_skip_add(uint64_t start, uint64_t end);
void sc_skip_remove(uint64_t start);
/** sc_skip_covers() - is [start, end) inside a range left out? */
bool sc_skip_covers(uint64_t start, uint64_t end);

/* nvidia_devices.c */

/**
 * sc_nvidia_devices_used() - the process's open descriptors (*@fds) and
 * mappings (*@maps) of /dev/nvidia*: true if any, when a CUDA driver works in
 * the process.
 */
bool sc_nvidia_devices_used(unsigned *fds, unsigned *maps);
/** sc_nvidia_device_maps() - the mappings of /dev/nvidia* alone (no descriptor is read). */
unsigned sc_nvidia_device_maps(void);

/* tool_path.c */
/** sc_find_on_path() - the first executable @name in a folder of PATH, into @out. */
bool sc_find_on_path(const char *name, char *out, size_t len);

/**
 * sc_find_tool() - the program @name of selfckpt's: @env, the value of the
 * variable @env_name (core/sc_settings.h; NULL or "" when unset), else next
 * to the file this code was loaded from (the shared library's lib/ and its
 * ../bin; the program's folder where it is linked in, as in the tools), else
 * on PATH; its path into @out.
 * Return: 0, or -ENOENT with the message kept, not printed: the caller says
 * what it needed the program for.
 */
int sc_find_tool(const char *name, const char *env_name, const char *env, char *out,
		 size_t len);

/* selfckpt's programs that the library and the tools start. */
#define SC_GPU_PROXY "selfckpt-gpu-proxy"
enum sc_tool {
	SC_TOOL_GPU_PROXY,   /* selfckpt-gpu-proxy, or SELFCKPT_PROXY */
	SC_TOOL_DRIVER_CKPT, /* selfckpt-driver-ckpt, or SELFCKPT_DRIVER_CKPT */
};

/**
 * sc_need_tool() - sc_find_tool() for @tool, with the user's variable from the
 * settings, for a step that cannot do without it: where it is missing, the
 * error is reported (sc_err()) as "@purpose: " and the search's reason, with
 * @code (0: the search's -ENOENT).
 */
int sc_need_tool(enum sc_tool tool, char *out, size_t len, int code, const char *purpose);

#endif /* SC_CORE_H */
