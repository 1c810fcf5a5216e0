/* SPDX-License-Identifier: MIT */
/*
 * maps.c - the memory map of a process, parsed from /proc/<pid>/maps.
 *
 * A line reads
 *   7fe9dfe7f000-7fe9dfe80000 r-xp 00001000 fe:00 332383      /usr/lib/ld.so
 * and the path, when there is one, runs to the end of the line: it may hold
 * spaces, and the kernel escapes a newline in it as "\012", so lines never
 * split. The whole file is read into one buffer first (a process may have
 * tens of thousands of mappings) and parsed from there, so no line length
 * or mapping count is assumed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/sc_core.h"
#include "format/sc_log.h"

#define DELETED_SUFFIX " (deleted)"

static const char *const kind_names[] = {
	[SC_VMA_ANON] = "anon",
	[SC_VMA_FILE] = "file",
	[SC_VMA_DELETED] = "deleted",
	[SC_VMA_HEAP] = "heap",
	[SC_VMA_STACK] = "stack",
	[SC_VMA_VDSO] = "vdso",
	[SC_VMA_VVAR] = "vvar",
	[SC_VMA_VVAR_VCLOCK] = "vvar_vclock",
	[SC_VMA_VSYSCALL] = "vsyscall",
	[SC_VMA_DEVICE] = "device",
	[SC_VMA_SPECIAL] = "special",
};

const char *sc_vma_kind_name(enum sc_vma_kind kind)
{
	if ((unsigned int)kind >= sizeof(kind_names) / sizeof(kind_names[0]))
		return "unknown";
	return kind_names[kind];
}

/* Reads all of @fd into a NUL-terminated malloc'd buffer. */
static int read_all(int fd, const char *name, char **out, size_t *len)
{
	size_t cap = 64 * 1024, n = 0;
	char *buf = malloc(cap), *nb;
	ssize_t r;

	if (!buf)
		return sc_err(ENOMEM, "out of memory reading '%s'", name);
	for (;;) {
		if (cap - n < 4096 + 1) {
			nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return sc_err(ENOMEM, "out of memory reading '%s' (%zu bytes so far)",
					      name, n);
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			free(buf);
			return sc_err(e, "cannot read '%s' at offset %zu: %s", name, n, strerror(e));
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* Parses an unsigned number in @base at *@s, which must be followed by @stop. */
static int parse_num(const char **s, int base, char stop, uint64_t *v)
{
	const char *p = *s;
	char *e;

	if (!((*p >= '0' && *p <= '9') || (base == 16 && ((*p >= 'a' && *p <= 'f') ||
							   (*p >= 'A' && *p <= 'F')))))
		return -1;
	errno = 0;
	*v = strtoull(p, &e, base);
	if (errno || *e != stop)
		return -1;
	*s = e + 1;
	return 0;
}

static int parse_perms(const char **s, struct sc_vma *v)
{
	const char *p = *s;

	if ((p[0] != 'r' && p[0] != '-') || (p[1] != 'w' && p[1] != '-') ||
	    (p[2] != 'x' && p[2] != '-') || (p[3] != 's' && p[3] != 'p') || p[4] != ' ')
		return -1;
	v->prot = (p[0] == 'r' ? PROT_READ : 0) | (p[1] == 'w' ? PROT_WRITE : 0) |
		  (p[2] == 'x' ? PROT_EXEC : 0);
	v->flags = p[3] == 's' ? SC_VMA_SHARED : 0;
	*s = p + 5;
	return 0;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static enum sc_vma_kind bracket_kind(const char *name)
{
	static const struct {
		const char *name;
		enum sc_vma_kind kind;
	} names[] = {
		{ "[heap]", SC_VMA_HEAP },	   { "[stack]", SC_VMA_STACK },
		{ "[vdso]", SC_VMA_VDSO },	   { "[vvar]", SC_VMA_VVAR },
		{ "[vvar_vclock]", SC_VMA_VVAR_VCLOCK }, { "[vsyscall]", SC_VMA_VSYSCALL },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i].name) == 0)
			return names[i].kind;
	/*
	 * Names given with prctl(PR_SET_VMA_ANON_NAME) ("[anon:x]", and
	 * "[anon_shmem:x]" for shared ones) and the thread stacks that kernels
	 * before 4.5 showed as "[stack:tid]" are ordinary anonymous memory.
	 */
	if (has_prefix(name, "[anon:") || has_prefix(name, "[anon_shmem:") ||
	    has_prefix(name, "[stack:"))
		return SC_VMA_ANON;
	return SC_VMA_SPECIAL;
}

/*
 * A file named "x (deleted)" that really exists looks like a deleted "x":
 * the kernel's word is only trusted when no such file with this inode exists.
 */
static bool really_deleted(const char *full, const struct sc_vma *v)
{
	struct stat st;

	return stat(full, &st) != 0 || (uint64_t)st.st_ino != v->inode;
}

/* Sets v->kind and v->path from the path field (@path, NUL-terminated, may be ""). */
static int classify(struct sc_vma *v, char *path)
{
	size_t len = strlen(path), sl = strlen(DELETED_SUFFIX);
	bool deleted = false;

	if (len == 0) {
		v->kind = SC_VMA_ANON;
	} else if (path[0] == '[') {
		v->kind = bracket_kind(path);
	} else if (path[0] != '/') {
		/* anon_inode:[perf_event], anon_inode:dmabuf...: kernel objects. */
		v->kind = SC_VMA_SPECIAL;
	} else {
		if (len > sl && strcmp(path + len - sl, DELETED_SUFFIX) == 0 &&
		    really_deleted(path, v)) {
			deleted = true;
			path[len - sl] = '\0';
		}
		/*
		 * Shared anonymous memory is a deleted /dev/zero; SysV segments
		 * are deleted /SYSV<key> files; anonymous hugetlb memory is a
		 * deleted /anon_hugepage. A private mapping of /dev/zero is
		 * plain anonymous memory that keeps the path.
		 */
		if (deleted && has_prefix(path, "/SYSV"))
			v->flags |= SC_VMA_SYSV;
		if (strcmp(path, "/dev/zero") == 0 || (v->flags & SC_VMA_SYSV) ||
		    (deleted && strcmp(path, "/anon_hugepage") == 0))
			v->kind = SC_VMA_ANON;
		else if (deleted)
			v->kind = SC_VMA_DELETED;
		else if (has_prefix(path, "/dev/") && !has_prefix(path, "/dev/shm/"))
			v->kind = SC_VMA_DEVICE;
		else
			v->kind = SC_VMA_FILE;
	}
	v->path = strdup(path);
	return v->path ? 0 : -ENOMEM;
}

/* Parses one line (NUL-terminated, no newline) into @v; -1 when it does not parse. */
static int parse_line(char *line, struct sc_vma *v)
{
	const char *s = line;
	uint64_t major, minor;
	char *e;

	memset(v, 0, sizeof(*v));
	if (parse_num(&s, 16, '-', &v->start) || parse_num(&s, 16, ' ', &v->end) ||
	    v->end < v->start || parse_perms(&s, v) || parse_num(&s, 16, ' ', &v->offset) ||
	    parse_num(&s, 16, ':', &major) || parse_num(&s, 16, ' ', &minor) ||
	    major > 0xfff || minor > 0xfffff)
		return -1;
	/* The inode is followed by padding and the path, or by the end of the line. */
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v->inode = strtoull(s, &e, 10);
	if (errno || (*e != ' ' && *e != '\0'))
		return -1;
	while (*e == ' ')
		e++;
	v->dev = makedev((unsigned int)major, (unsigned int)minor);
	return classify(v, e) ? -2 : 0;
}

void sc_maps_free(struct sc_vma *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
}

int sc_maps_parse(char *buf, size_t len, const char *name, struct sc_vma **out, size_t *n)
{
	size_t lines = 0, i = 0, lineno = 0;
	struct sc_vma *v;
	char *p = buf, *nl;
	int r;

	for (size_t k = 0; k < len; k++)
		lines += buf[k] == '\n';
	v = calloc(lines + 1, sizeof(*v));
	if (!v)
		return sc_err(ENOMEM, "out of memory parsing '%s' (%zu lines)", name, lines);
	while (*p) {
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		lineno++;
		r = parse_line(p, &v[i]);
		if (r == -2) {
			sc_maps_free(v, i);
			return sc_err(ENOMEM, "out of memory parsing '%s' line %zu", name, lineno);
		}
		if (r < 0) {
			sc_maps_free(v, i);
			return sc_err(EPROTO, "cannot parse '%s' line %zu: '%s'", name, lineno, p);
		}
		i++;
		if (!nl)
			break;
		p = nl + 1;
	}
	*out = v;
	*n = i;
	return 0;
}

int sc_maps_read(pid_t pid, struct sc_vma **out, size_t *n)
{
	char name[64], *buf = NULL;
	size_t len = 0;
	int fd, err;

	*out = NULL;
	*n = 0;
	if (pid)
		snprintf(name, sizeof(name), "/proc/%d/maps", (int)pid);
	else
		snprintf(name, sizeof(name), "/proc/self/maps");
	fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		return sc_err(err, "cannot open '%s': %s", name, strerror(err));
	}
	err = read_all(fd, name, &buf, &len);
	close(fd);
	if (err)
		return err;
	err = sc_maps_parse(buf, len, name, out, n);
	free(buf);
	return err;
}
