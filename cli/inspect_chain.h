/* SPDX-License-Identifier: MIT */
/*
 * inspect_chain.h - the chain of an incremental image, as selfckpt-inspect
 * shows it: each parent in turn, and whether it is there and the image named.
 */
#ifndef SC_INSPECT_CHAIN_H
#define SC_INSPECT_CHAIN_H

#include <stdbool.h>
#include <stdio.h>

#include "core/sc_records.h"

enum sc_link_state { SC_LINK_OK, SC_LINK_MISSING, SC_LINK_OTHER, SC_LINK_DAMAGED };

struct sc_chain_link {
	char *path;               /* where the child says the parent is */
	uint32_t depth;           /* as its child names it: 1, the full image */
	enum sc_link_state state;
};

struct sc_chain_view {
	struct sc_chain_link link[SC_CHAIN_MAX];
	size_t n;
	int err; /* the first broken link's error (SELFCKPT_ENOPARENT, _EPARENT), 0 */
};

/**
 * sc_chain_view() - follow the chain from the image at @path, whose parent
 * record is @p, to its full image or to a broken link; with @verify each
 * parent's whole file is checked too. Return: 0, or -ENOMEM.
 */
int sc_chain_view(const char *path, const struct sc_parent_info *p, bool verify,
		  struct sc_chain_view *v);
void sc_chain_view_print(const struct sc_chain_view *v, FILE *f);
void sc_chain_view_json(const struct sc_chain_view *v, FILE *f);
void sc_chain_view_free(struct sc_chain_view *v);

#endif /* SC_INSPECT_CHAIN_H */
