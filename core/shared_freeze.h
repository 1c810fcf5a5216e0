/* SPDX-License-Identifier: MIT */
/*
 * shared_freeze.h - shared memory as it was at the instant of the snapshot.
 *
 * The snapshot is a copy-on-write clone, but a shared mapping is the same
 * memory in the snapshot and in the process that goes on: read after the
 * release, it would hold what the program wrote later. So the shared
 * mappings an image stores are copied while every thread is stopped
 * (shared_freeze_rt.c) into a private staging area that the snapshot keeps;
 * the image is written from the copies.
 */
#ifndef SC_SHARED_FREEZE_H
#define SC_SHARED_FREEZE_H

#include <stdbool.h>
#include <stdint.h>

/* One shared mapping and where its copy is (in the snapshot's memory). */
struct sc_shared_copy {
	uint64_t start, end;
	uint64_t copy; /* its copy; 0: not copied (read from the live mapping) */
};

struct sc_shared_frozen {
	struct sc_shared_copy *c; /* room for cap */
	int cap, n;
	char *maps;               /* a buffer for /proc/self/maps */
	long maps_size;
	uint64_t stage, stage_len, used; /* the staging area */
	uint8_t *pagemap_buf;     /* a buffer for /proc/self/pagemap entries */
	long missed;              /* shared mappings that did not fit or could not be read */
	bool measuring;           /* sc_shared_measure(): count, copy nothing */
};

/* shared_freeze.c */
/**
 * sc_shared_prepare() - reserve, before the freeze, a table and a staging area
 * for the shared mappings this process has now, with room to spare.
 * Return: 0 or a negative error (reported).
 */
int sc_shared_prepare(struct sc_shared_frozen *z);
/** sc_shared_free() - unmap what sc_shared_prepare() mapped; no-op when nothing was. */
void sc_shared_free(struct sc_shared_frozen *z);
/**
 * sc_shared_forget() - in a process restored from an image: the staging area
 * was left out of it, and its place may hold the restorer's own by now.
 */
void sc_shared_forget(struct sc_shared_frozen *z);
/**
 * sc_shared_copy_of() - where the snapshot holds the copy of the shared
 * mapping [start, end) at the instant; 0 where it was not copied.
 */
uint64_t sc_shared_copy_of(const struct sc_shared_frozen *z, uint64_t start, uint64_t end);

/* shared_freeze_rt.c: raw, while every other thread is stopped */
/**
 * sc_shared_freeze() - copy every shared mapping an image stores (shared
 * anonymous memory, memfds and deleted files, files on a temporary file
 * system or of at most SC_SHARED_FILE_KEEP bytes) into the staging area.
 */
void sc_shared_freeze(struct sc_shared_frozen *z);
/**
 * sc_shared_measure() - what sc_shared_freeze() would copy now: z->n mappings
 * of z->used bytes. Needs z->maps only.
 */
void sc_shared_measure(struct sc_shared_frozen *z);
/**
 * sc_shared_stores_file() - is a shared mapping of the file at @path, @len
 * bytes from @offset, one an image stores? (It may be gone at restore.)
 * Raw system calls only.
 */
bool sc_shared_stores_file(const char *path, uint64_t offset, uint64_t len);

#define SC_SHARED_FILE_KEEP (1ull << 20)

#endif /* SC_SHARED_FREEZE_H */
