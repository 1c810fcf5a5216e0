/* SPDX-License-Identifier: MIT */
/*
 * job_set.c - the set directory and its manifest (job_set.h; the format is
 * spec/image-set.md). The manifest is text, one line a process, ended by a
 * line that counts them and carries the XXH64 of every line before it: a
 * manifest cut short or edited is refused, not half read.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "core/job_set.h"
#include "format/sc_log.h"
#include "selfckpt.h"

#define MAGIC_LINE "selfckpt-tree 1\n"
#define MANIFEST_MAX (1u << 20)
#define SET_NUMBER_MAX 100000

static void sync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

int sc_set_begin(const char *dir, const char *prog, pid_t pid, char *tmp, size_t size)
{
	if ((size_t)snprintf(tmp, size, "%s/.%s.%d%s.XXXXXX", dir, prog, (int)pid,
			     SC_SET_SUFFIX) >= size)
		return sc_err(ENAMETOOLONG, "the set directory in '%s' would have too long a name",
			      dir);
	if (!mkdtemp(tmp))
		return sc_err(errno, "cannot make the set directory '%s': %s", tmp,
			      strerror(errno));
	return 0;
}

/* The manifest's text for @s, into a new buffer; its length in *@len. */
static char *manifest_text(const struct sc_set *s, size_t *len)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (!f)
		return NULL;
	fputs(MAGIC_LINE, f);
	for (size_t i = 0; i < s->n; i++) {
		const struct sc_set_member *m = &s->m[i];

		if (m->zombie)
			fprintf(f, "zombie %d %d %d %d %d\n", (int)m->pid, (int)m->ppid,
				(int)m->pgid, (int)m->sid, m->status);
		else
			fprintf(f, "process %d %d %d %d %s\n", (int)m->pid, (int)m->ppid,
				(int)m->pgid, (int)m->sid, m->file);
	}
	if (s->files_exact)
		fputs("files exact\n", f);
	for (size_t i = 0; i < s->n_open; i++)
		fprintf(f, "open %d %d %u\n", (int)s->open[i].pid, s->open[i].fd, s->open[i].desc);
	fflush(f);
	fprintf(f, "end %zu %016" PRIx64 "\n", s->n, (uint64_t)XXH64(buf, size, 0));
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*len = size;
	return buf;
}

static int write_manifest(const char *tmp, const struct sc_set *s)
{
	char path[PATH_MAX];
	size_t len = 0;
	char *text = manifest_text(s, &len);
	int fd, err = 0;

	if (!text)
		return sc_err(ENOMEM, "out of memory");
	snprintf(path, sizeof(path), "%s/%s", tmp, SC_SET_MANIFEST);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len || fsync(fd) < 0)
		err = sc_err(errno ? errno : EIO, "cannot write the set's manifest '%s': %s", path,
			     strerror(errno ? errno : EIO));
	if (fd >= 0)
		close(fd);
	free(text);
	return err;
}

int sc_set_commit(const char *dir, const char *tmp, const char *prog, pid_t pid,
		  const struct sc_set *s, char *name, size_t size)
{
	char path[PATH_MAX];
	int err = write_manifest(tmp, s);

	if (err)
		return err;
	sync_path(tmp);
	for (int n = 1; n < SET_NUMBER_MAX; n++) {
		snprintf(name, size, "%s.%d.%d%s", prog, (int)pid, n, SC_SET_SUFFIX);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (access(path, F_OK) == 0)
			continue; /* rename() would replace an empty directory only */
		if (rename(tmp, path) == 0) {
			sync_path(dir);
			return 0;
		}
		if (errno != EEXIST && errno != ENOTEMPTY)
			break;
	}
	return sc_err(errno, "cannot rename the set directory '%s' into '%s': %s", tmp, dir,
		      strerror(errno));
}

int sc_set_commit_at(const char *tmp, const char *path, const struct sc_set *s)
{
	char old[PATH_MAX + 16], dir[PATH_MAX], *slash;
	struct stat st;
	int err = write_manifest(tmp, s), had;

	if (err)
		return err;
	sync_path(tmp);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	snprintf(slash ? slash + 1 : dir, sizeof(dir) - (size_t)(slash ? slash + 1 - dir : 0), ".");
	had = lstat(path, &st) == 0;
	/* a directory is replaced by renaming it away first: rename() takes only an empty one */
	snprintf(old, sizeof(old), "%s.old", tmp);
	if (had && S_ISDIR(st.st_mode) && rename(path, old) < 0)
		return sc_err(errno, "cannot move the older set '%s' aside: %s", path,
			      strerror(errno));
	if (rename(tmp, path) < 0) {
		err = sc_err(errno, "cannot rename the set directory '%s' to '%s': %s", tmp, path,
			     strerror(errno));
		if (had && S_ISDIR(st.st_mode))
			rename(old, path);
		return err;
	}
	sync_path(dir);
	if (had && S_ISDIR(st.st_mode))
		sc_set_discard(old);
	return 0;
}

void sc_set_discard(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	rmdir(path);
}

bool sc_set_is_set(const char *path)
{
	char m[PATH_MAX];
	struct stat st;

	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return false;
	snprintf(m, sizeof(m), "%s/%s", path, SC_SET_MANIFEST);
	return access(m, F_OK) == 0;
}

/* The manifest's bytes, into a new buffer ended by a NUL. */
static int read_all(const char *path, char **text, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf = malloc(MANIFEST_MAX + 1);
	ssize_t n = -1;

	if (fd >= 0 && buf)
		n = read(fd, buf, MANIFEST_MAX + 1);
	if (fd >= 0)
		close(fd);
	if (n < 0 || n > MANIFEST_MAX) {
		int err = fd < 0 ? errno : buf ? (n < 0 ? errno : EFBIG) : ENOMEM;

		free(buf);
		return sc_err(err, "cannot read the set's manifest '%s': %s", path,
			      err == EFBIG ? "larger than 1 MiB" : strerror(err));
	}
	buf[n] = '\0';
	*text = buf;
	*len = (size_t)n;
	return 0;
}

/* One process or zombie line into @m; 0, or -1 where it is not one. */
static int parse_member(const char *line, struct sc_set_member *m)
{
	int pid, ppid, pgid, sid, status, used = 0;

	*m = (struct sc_set_member){ 0 };
	if (sscanf(line, "zombie %d %d %d %d %d%n", &pid, &ppid, &pgid, &sid, &status, &used) ==
		    5 && line[used] == '\n') {
		m->zombie = true;
		m->status = status;
	} else if (sscanf(line, "process %d %d %d %d %63[^/\n]%n", &pid, &ppid, &pgid, &sid,
			  m->file, &used) == 5 && line[used] == '\n' && m->file[0] != '.') {
		m->zombie = false;
	} else {
		return -1;
	}
	if (pid <= 0 || ppid < 0)
		return -1;
	m->pid = pid, m->ppid = ppid, m->pgid = pgid, m->sid = sid;
	return 0;
}

static int bad(const char *path, int line, const char *why)
{
	return sc_err(SELFCKPT_EHEADER, "'%s', line %d: %s", path, line, why);
}

/* Every parent named is the set's or outside it, before its child; no pid twice. */
static int check_order(const char *path, const struct sc_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		for (size_t j = i; j < s->n; j++) {
			if (j > i && s->m[j].pid == s->m[i].pid)
				return bad(path, (int)j + 2, "a pid named twice");
			if (j > i && s->m[i].ppid == s->m[j].pid)
				return bad(path, (int)i + 2, "a process listed before its parent");
		}
	if (s->n && s->m[0].zombie)
		return bad(path, 2, "the job's first process is a zombie");
	return 0;
}

/* An "open" line of a process of @s into @o; 0, or -1 where it is not one (R-SET-10). */
static int parse_open(const char *line, const struct sc_set *s, struct sc_set_open *o)
{
	int pid, fd, used = 0;
	unsigned desc;

	if (sscanf(line, "open %d %d %u%n", &pid, &fd, &desc, &used) != 3 || line[used] != '\n' ||
	    fd < 0 || !desc)
		return -1;
	for (size_t i = 0; i < s->n; i++)
		if (s->m[i].pid == pid && !s->m[i].zombie) {
			*o = (struct sc_set_open){ pid, fd, desc };
			return 0;
		}
	return -1;
}

/* The lines after the processes: "files exact", then its "open" lines. */
static int parse_files(const char *path, const char *line, int no, struct sc_set *s,
		       size_t *cap)
{
	if (!strncmp(line, "files exact\n", 12)) {
		if (s->files_exact || s->n_open)
			return bad(path, no, "a second files line");
		s->files_exact = true;
		return 0;
	}
	if (!s->files_exact)
		return bad(path, no, "not a process or zombie line");
	if (s->n_open == *cap) {
		void *m = realloc(s->open, (*cap = *cap ? 2 * *cap : 16) * sizeof(*s->open));

		if (!m)
			return sc_err(ENOMEM, "out of memory");
		s->open = m;
	}
	if (parse_open(line, s, &s->open[s->n_open]) < 0)
		return bad(path, no, "not an open line of a process of the set");
	s->n_open++;
	return 0;
}

static int parse(const char *path, char *text, size_t len, struct sc_set *s)
{
	char *line = text, *nl;
	size_t count = 0, cap = 0, open_cap = 0;
	int err;
	unsigned long long sum;
	int no = 1;

	if (strncmp(text, MAGIC_LINE, strlen(MAGIC_LINE)) != 0)
		return sc_err(SELFCKPT_EMAGIC, "'%s' is not the manifest of a selfckpt image set "
			      "(version 1)", path);
	for (line = text + strlen(MAGIC_LINE), no = 2; (nl = strchr(line, '\n')); line = nl + 1,
	     no++) {
		if (!strncmp(line, "end ", 4))
			break;
		if (!strncmp(line, "files ", 6) || !strncmp(line, "open ", 5) || s->files_exact) {
			if ((err = parse_files(path, line, no, s, &open_cap)) < 0)
				return err;
			continue;
		}
		if (count == cap) {
			void *m = realloc(s->m, (cap = cap ? 2 * cap : 16) * sizeof(*s->m));

			if (!m)
				return sc_err(ENOMEM, "out of memory");
			s->m = m;
		}
		if (parse_member(line, &s->m[count]) < 0)
			return bad(path, no, "not a process or zombie line");
		s->n = ++count;
	}
	if (!nl || sscanf(line, "end %zu %llx", &count, &sum) != 2 || nl[1] != '\0' ||
	    (size_t)(nl + 1 - text) != len)
		return bad(path, no, "the manifest does not end as it should (cut short?)");
	if (count != s->n || !s->n)
		return bad(path, no, "the count of processes is wrong");
	if (sum != XXH64(text, (size_t)(line - text), 0))
		return sc_err(SELFCKPT_EFILESUM, "'%s': the checksum of the manifest does not "
			      "match: it was changed or damaged", path);
	return check_order(path, s);
}

int sc_set_read(const char *path, struct sc_set *s)
{
	char mpath[PATH_MAX], *text = NULL;
	size_t len = 0;
	int err;

	*s = (struct sc_set){ 0 };
	snprintf(mpath, sizeof(mpath), "%s/%s", path, SC_SET_MANIFEST);
	err = read_all(mpath, &text, &len);
	if (!err)
		err = parse(mpath, text, len, s);
	free(text);
	if (err)
		sc_set_free(s);
	return err;
}

void sc_set_free(struct sc_set *s)
{
	free(s->m);
	free(s->open);
	*s = (struct sc_set){ 0 };
}
