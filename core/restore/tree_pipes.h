/* SPDX-License-Identifier: MIT */
/*
 * tree_pipes.h - the pipes the processes of a restored tree share (tree_restore.c):
 * each made once, before the processes, with its saved bytes, and inherited
 * by every process of the tree; each process puts the ends it held at their
 * numbers (fds_restore.c) and closes the rest.
 * Stage contract: the restorer, ordinary libc.
 */
#ifndef SC_TREE_PIPES_H
#define SC_TREE_PIPES_H

#include <stddef.h>
#include <stdint.h>

#include "core/sc_fds.h"

struct sc_tree_pipe {
	uint64_t dev, pipe_id;
	int ends[2]; /* read, write: inherited, above every number a process of the tree uses */
};

/* Set in the tree's first process before it starts the others, which inherit it. */
extern struct sc_tree_pipe *sc_tree_pipes;
extern size_t sc_tree_n_pipes;

/** sc_tree_pipe_of() - the shared pipe @f is an end of, or NULL. */
const struct sc_tree_pipe *sc_tree_pipe_of(const struct sc_fd *f);

/** sc_tree_pipes_close() - close the inherited ends, once the descriptors are placed. */
void sc_tree_pipes_close(void);

#endif /* SC_TREE_PIPES_H */
