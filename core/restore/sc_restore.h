/* SPDX-License-Identifier: MIT */
/*
 * sc_restore.h - the restore engine: a process brought back from its image in
 * place of the program that calls it (selfckpt-restore, cli/restore.c).
 */
#ifndef SC_RESTORE_H
#define SC_RESTORE_H

#include <stdbool.h>

struct sc_restore_opts {
	const char *path;   /* the image */
	unsigned threads;   /* threads that decompress; 0: every online CPU */
	bool new_ids;       /* no namespaces: new pid and thread ids */
	bool in_tree;       /* already at its pid, in the namespaces of a tree's restore */
	/*
	 * Called once the image is checked and staged, with that verdict (0 or a
	 * refusal), just before the point of no return: 0 to go on, else the
	 * refusal to return. NULL: none (a tree's restore waits for all its
	 * processes there).
	 */
	int (*staged)(int err);
	/*
	 * What this machine must have beyond what the engine checks itself (the
	 * GPUs a CUDA program's modules run on): called on the image open at @fd
	 * before anything is changed; 0, or a refusal (reported). NULL: none.
	 */
	int (*check_machine)(int fd, const char *path, unsigned threads);
};

/**
 * sc_restore() - become the process saved in @o->path (or, where @o->path is
 * the directory of a job's image set, the tree of processes it holds): it goes on from its
 * checkpoint with this process's pid (or its own, in new namespaces) and
 * standard streams. Every check is made before the point of no return.
 *
 * Return: never, once the process is restored; a refusal (< 0, reported),
 * with nothing of this process or the system changed.
 */
int sc_restore(const struct sc_restore_opts *o);

#endif /* SC_RESTORE_H */
