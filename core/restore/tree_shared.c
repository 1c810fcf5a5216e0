/* SPDX-License-Identifier: MIT */
/*
 * tree_shared.c - the table of what a restored tree shares (tree_shared.h).
 */
#include <fcntl.h>
#include <unistd.h>

#include "core/restore/tree_shared.h"

struct sc_tree_pipe *sc_tree_pipes;
size_t sc_tree_n_pipes;
struct sc_tree_file *sc_tree_files;
size_t sc_tree_n_files;
struct sc_tree_map *sc_tree_maps;
size_t sc_tree_n_maps;
struct sc_tree_socket *sc_tree_sockets;
size_t sc_tree_n_sockets;
struct sc_tree_shm *sc_tree_shms;
size_t sc_tree_n_shms;
bool sc_tree_files_exact;
const struct sc_set_open *sc_tree_opens;
size_t sc_tree_n_opens;

unsigned sc_tree_description(pid_t pid, int fd)
{
	for (size_t i = 0; i < sc_tree_n_opens; i++)
		if (sc_tree_opens[i].pid == pid && sc_tree_opens[i].fd == fd)
			return sc_tree_opens[i].desc;
	return 0;
}

uint32_t sc_tree_shm_attaches(int32_t id)
{
	for (size_t i = 0; i < sc_tree_n_shms; i++)
		if (sc_tree_shms[i].id == id)
			return sc_tree_shms[i].attaches;
	return 0;
}

const struct sc_tree_socket *sc_tree_socket_of(const struct sc_fd *f)
{
	if (f->kind != SC_FD_UNIX && f->kind != SC_FD_INET)
		return NULL;
	for (size_t i = 0; i < sc_tree_n_sockets; i++)
		if (sc_tree_sockets[i].inode == f->inode)
			return &sc_tree_sockets[i];
	return NULL;
}

const struct sc_tree_map *sc_tree_map_of(uint64_t dev, uint64_t inode)
{
	for (size_t i = 0; i < sc_tree_n_maps; i++)
		if (sc_tree_maps[i].dev == dev && sc_tree_maps[i].inode == inode)
			return &sc_tree_maps[i];
	return NULL;
}

const struct sc_tree_pipe *sc_tree_pipe_of(const struct sc_fd *f)
{
	if (f->kind != SC_FD_PIPE_R && f->kind != SC_FD_PIPE_W)
		return NULL;
	for (size_t i = 0; i < sc_tree_n_pipes; i++)
		if (sc_tree_pipes[i].pipe_id == f->pipe_id && sc_tree_pipes[i].dev == f->dev)
			return &sc_tree_pipes[i];
	return NULL;
}

bool sc_tree_file_key(const struct sc_fd *f)
{
	return f->kind == SC_FD_REGULAR || f->kind == SC_FD_DELETED || f->kind == SC_FD_MEMFD;
}

/*
 * Asked in the process being restored, at its own pid. Where the set does not
 * know the descriptions, one file at one position with the same flags is
 * taken as one.
 */
const struct sc_tree_file *sc_tree_file_of(const struct sc_fd *f)
{
	unsigned desc = 0;

	if (!sc_tree_file_key(f))
		return NULL;
	if (sc_tree_files_exact && !(desc = sc_tree_description(getpid(), f->fd)))
		return NULL;
	for (size_t i = 0; i < sc_tree_n_files; i++) {
		const struct sc_tree_file *t = &sc_tree_files[i];

		if (sc_tree_files_exact ? t->desc == desc
					: t->dev == f->dev && t->inode == f->inode &&
					  t->pos == f->pos && t->open_flags == f->open_flags)
			return t;
	}
	return NULL;
}

size_t sc_tree_shared_count(void)
{
	return 2 * sc_tree_n_pipes + sc_tree_n_files + sc_tree_n_maps + sc_tree_n_sockets;
}

size_t sc_tree_shared_fds(int *out)
{
	size_t n = 0;

	for (size_t i = 0; i < sc_tree_n_pipes; i++) {
		out[n++] = sc_tree_pipes[i].ends[0];
		out[n++] = sc_tree_pipes[i].ends[1];
	}
	for (size_t i = 0; i < sc_tree_n_files; i++)
		out[n++] = sc_tree_files[i].fd;
	for (size_t i = 0; i < sc_tree_n_maps; i++)
		out[n++] = sc_tree_maps[i].fd;
	for (size_t i = 0; i < sc_tree_n_sockets; i++)
		out[n++] = sc_tree_sockets[i].fd;
	return n;
}

void sc_tree_shared_close(void)
{
	for (size_t i = 0; i < sc_tree_n_pipes; i++) {
		close(sc_tree_pipes[i].ends[0]);
		close(sc_tree_pipes[i].ends[1]);
	}
	for (size_t i = 0; i < sc_tree_n_files; i++)
		close(sc_tree_files[i].fd);
	for (size_t i = 0; i < sc_tree_n_maps; i++)
		close(sc_tree_maps[i].fd);
	for (size_t i = 0; i < sc_tree_n_sockets; i++)
		close(sc_tree_sockets[i].fd);
	sc_tree_n_pipes = sc_tree_n_files = sc_tree_n_maps = sc_tree_n_sockets = 0;
}
