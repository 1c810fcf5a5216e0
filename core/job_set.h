/* SPDX-License-Identifier: MIT */
/*
 * job_set.h - the image set of one checkpoint of a job: a directory that
 * holds an image per process and a manifest (spec/image-set.md) naming each
 * process, its parent, group and session, and the zombies not yet waited for.
 * A set is written under a temporary name and renamed into place whole, so a
 * set that has a name is complete; a restore refuses one missing a member.
 */
#ifndef SC_JOB_SET_H
#define SC_JOB_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SC_SET_MANIFEST "manifest"
#define SC_SET_SUFFIX ".tree"
#define SC_SET_FILE_MAX 64

struct sc_set_member {
	pid_t pid, ppid, pgid, sid;
	bool zombie;
	int status;                 /* a zombie's wait status */
	char file[SC_SET_FILE_MAX]; /* a process's image, in the set's directory */
};

/* A descriptor of a process of the set and its open file description (R-SET-10). */
struct sc_set_open {
	pid_t pid;
	int fd;
	unsigned desc; /* the same number in two processes: one description */
};

struct sc_set {
	struct sc_set_member *m; /* parents before their children; m[0] is the job's top */
	size_t n;
	bool files_exact;        /* the descriptions of files held by two processes are known */
	struct sc_set_open *open; /* then: every descriptor of such a description */
	size_t n_open;
};

/**
 * sc_set_begin() - make the temporary directory of a new set in @dir, for the
 * job of @prog at @pid, into @tmp. Return: 0 or a refusal (reported).
 */
int sc_set_begin(const char *dir, const char *prog, pid_t pid, char *tmp, size_t size);

/**
 * sc_set_commit() - write @s's manifest into @tmp, sync it, and rename @tmp to
 * the set's name in @dir (the first of <prog>.<pid>.<N>.tree not taken), into
 * @name (its name in @dir). Return: 0 or a refusal (reported); @tmp is left
 * for sc_set_discard().
 */
int sc_set_commit(const char *dir, const char *tmp, const char *prog, pid_t pid,
		  const struct sc_set *s, char *name, size_t size);

/**
 * sc_set_commit_at() - as sc_set_commit(), but the set's name is @path (made
 * by sc_set_begin() in @path's folder): whatever @path was (an image, an
 * older set) is replaced only once the new set is complete.
 */
int sc_set_commit_at(const char *tmp, const char *path, const struct sc_set *s);

/** sc_set_discard() - remove the set directory @path and what it holds (best effort). */
void sc_set_discard(const char *path);

/** sc_set_is_set() - is @path a directory that holds a set's manifest? */
bool sc_set_is_set(const char *path);

/**
 * sc_set_read() - read and check the manifest of the set at @path (its
 * directory) into @s (free with sc_set_free()). Return: 0 or a refusal
 * (reported) naming the file and the place.
 */
int sc_set_read(const char *path, struct sc_set *s);
void sc_set_free(struct sc_set *s);

#endif /* SC_JOB_SET_H */
