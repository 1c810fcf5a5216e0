/* SPDX-License-Identifier: MIT */
/*
 * tree_pipes.c - the table of the pipes a restored tree shares (tree_pipes.h).
 */
#include <unistd.h>

#include "core/restore/tree_pipes.h"

struct sc_tree_pipe *sc_tree_pipes;
size_t sc_tree_n_pipes;

const struct sc_tree_pipe *sc_tree_pipe_of(const struct sc_fd *f)
{
	if (f->kind != SC_FD_PIPE_R && f->kind != SC_FD_PIPE_W)
		return NULL;
	for (size_t i = 0; i < sc_tree_n_pipes; i++)
		if (sc_tree_pipes[i].pipe_id == f->pipe_id && sc_tree_pipes[i].dev == f->dev)
			return &sc_tree_pipes[i];
	return NULL;
}

void sc_tree_pipes_close(void)
{
	for (size_t i = 0; i < sc_tree_n_pipes; i++) {
		close(sc_tree_pipes[i].ends[0]);
		close(sc_tree_pipes[i].ends[1]);
	}
	sc_tree_n_pipes = 0;
}
