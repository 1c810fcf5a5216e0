/* SPDX-License-Identifier: MIT */
/*
 * tree_shared.h - what the processes of a restored tree share (tree_restore.c):
 * the pipes between them, and the files they hold open at one position (a
 * parent's file its children inherited: one offset for all; a removed file
 * or memfd: one file, with the contents one image holds).
 * Each is made once, before the processes, and inherited by every process of
 * the tree; each process puts what it held at its numbers (fds_restore.c)
 * and closes the rest.
 * Stage contract: the restorer, ordinary libc.
 */
#ifndef SC_TREE_SHARED_H
#define SC_TREE_SHARED_H

#include <stddef.h>
#include <stdint.h>

#include "core/job_set.h"
#include "core/sc_fds.h"

struct sc_tree_pipe {
	uint64_t dev, pipe_id;
	int ends[2]; /* read, write: inherited, above every number a process of the tree uses */
};

struct sc_tree_file {
	uint64_t dev, inode, pos;
	int open_flags;
	unsigned desc; /* where the set knows its descriptions (R-SET-10): which; else 0 */
	int fd; /* inherited, as the ends of a pipe */
};

/*
 * Shared memory two processes or more map (MAP_SHARED anonymous memory or a
 * memfd inherited across fork()): one memfd, filled by the process @owner
 * from its image as it stages its memory, mapped by the others as it is.
 */
struct sc_tree_map {
	uint64_t dev, inode;
	int fd;
	pid_t owner;
};

/* A unix or IP socket held by two processes, or one end of a pair split between two. */
struct sc_tree_socket {
	uint64_t inode;
	int fd;
};

/* A System V segment of the tree: how many attaches its processes make of it. */
struct sc_tree_shm {
	int32_t id;
	uint32_t attaches;
};

/* Set in the tree's first process before it starts the others, which inherit them. */
extern struct sc_tree_pipe *sc_tree_pipes;
extern size_t sc_tree_n_pipes;
extern struct sc_tree_file *sc_tree_files;
extern size_t sc_tree_n_files;
extern struct sc_tree_map *sc_tree_maps;
extern size_t sc_tree_n_maps;
extern struct sc_tree_socket *sc_tree_sockets;
extern size_t sc_tree_n_sockets;
extern struct sc_tree_shm *sc_tree_shms;
extern size_t sc_tree_n_shms;
/* Where the set knows which descriptors are one open file description (R-SET-10): its list. */
extern bool sc_tree_files_exact;
extern const struct sc_set_open *sc_tree_opens;
extern size_t sc_tree_n_opens;

/** sc_tree_description() - the description descriptor @fd of process @pid is of (R-SET-10), or 0. */
unsigned sc_tree_description(pid_t pid, int fd);

/**
 * sc_tree_shm_attaches() - the attaches the processes of the tree make of
 * System V segment @id; 0 outside a tree. A segment marked for removal is
 * marked again by the process whose attach makes them all: sooner, the
 * first to detach would destroy it before the others attach.
 */
uint32_t sc_tree_shm_attaches(int32_t id);

/** sc_tree_socket_of() - the socket the tree shares that @f is, or NULL. */
const struct sc_tree_socket *sc_tree_socket_of(const struct sc_fd *f);

/** sc_tree_map_of() - the shared memory of identity @dev, @inode the tree shares, or NULL. */
const struct sc_tree_map *sc_tree_map_of(uint64_t dev, uint64_t inode);

/** sc_tree_pipe_of() - the shared pipe @f is an end of, or NULL. */
const struct sc_tree_pipe *sc_tree_pipe_of(const struct sc_fd *f);

/** sc_tree_file_of() - the shared open file @f is a descriptor of, or NULL. */
const struct sc_tree_file *sc_tree_file_of(const struct sc_fd *f);

/** sc_tree_file_key() - is @f a regular file a tree may share ("one file at one position")? */
bool sc_tree_file_key(const struct sc_fd *f);

/** sc_tree_shared_close() - close what was inherited, once the descriptors are placed. */
void sc_tree_shared_close(void);

/** sc_tree_shared_fds() - the inherited descriptors, into @out (room for all); their count. */
size_t sc_tree_shared_fds(int *out);

/** sc_tree_shared_count() - how many descriptors sc_tree_shared_fds() gives. */
size_t sc_tree_shared_count(void);

#endif /* SC_TREE_SHARED_H */
