/* SPDX-License-Identifier: MIT */
/*
 * inspect_chain.c - the chain of an incremental image (inspect_chain.h), with
 * the checks a restore makes of it (spec R-INC-4), each told apart.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/inspect_chain.h"
#include "cli/tool.h"
#include "format/sc_format.h"
#include "format/sc_log.h"

/* One link: its state, and the next parent record where there is one (1). */
static int follow(struct sc_chain_link *l, const struct sc_parent_info *want, bool verify,
		  struct sc_parent_info *next)
{
	struct sc_reader *r;
	int fd = open(l->path, O_RDONLY | O_CLOEXEC), found = 0;

	memset(next, 0, sizeof(*next));
	if (fd < 0) {
		l->state = SC_LINK_MISSING;
		return 0;
	}
	close(fd);
	if (sc_reader_open(&r, l->path, NULL) < 0) {
		l->state = SC_LINK_DAMAGED;
		return 0;
	}
	if (!sc_parent_is(r, want))
		l->state = SC_LINK_OTHER;
	else if (verify && sc_reader_verify_file(r) < 0)
		l->state = SC_LINK_DAMAGED;
	else if ((found = sc_parent_find(r, next)) < 0)
		l->state = SC_LINK_DAMAGED;
	else if ((found == 1) != (want->depth > 1))
		l->state = SC_LINK_OTHER; /* [R-INC-3] not the depth its child names */
	sc_reader_free(r);
	return l->state == SC_LINK_OK ? found : 0;
}

int sc_chain_view(const char *path, const struct sc_parent_info *p, bool verify,
		  struct sc_chain_view *v)
{
	struct sc_parent_info want = *p, next;
	const char *child = path;
	int more = 1;

	memset(v, 0, sizeof(*v));
	while (more == 1 && v->n < SC_CHAIN_MAX) {
		struct sc_chain_link *l = &v->link[v->n];

		if (!(l->path = sc_parent_path(child, want.path)))
			return -ENOMEM;
		l->depth = want.depth;
		v->n++;
		more = follow(l, &want, verify, &next);
		if (v->n > 1)
			sc_parent_free(&want); /* the records read here, not the caller's */
		want = next;
		child = l->path;
		if (l->state != SC_LINK_OK)
			v->err = l->state == SC_LINK_MISSING ? -SELFCKPT_ENOPARENT : -SELFCKPT_EPARENT;
	}
	if (more == 1)
		sc_parent_free(&want);
	return 0;
}

static const char *const state_text[] = {
	[SC_LINK_OK] = "there, the image named",
	[SC_LINK_MISSING] = "MISSING: the image cannot be restored",
	[SC_LINK_OTHER] = "ANOTHER IMAGE than the one named: the image cannot be restored",
	[SC_LINK_DAMAGED] = "DAMAGED: the image cannot be restored",
};

static const char *const state_json[] = {
	[SC_LINK_OK] = "ok", [SC_LINK_MISSING] = "missing", [SC_LINK_OTHER] = "other",
	[SC_LINK_DAMAGED] = "damaged",
};

void sc_chain_view_print(const struct sc_chain_view *v, FILE *f)
{
	for (size_t i = 0; i < v->n; i++) {
		const struct sc_chain_link *l = &v->link[i];

		fputs(i ? "              " : "chain         ", f);
		sc_tool_print_text(f, l->path);
		fprintf(f, " (%s): %s\n", l->depth == 1 ? "full" : "incremental",
			state_text[l->state]);
	}
}

void sc_chain_view_json(const struct sc_chain_view *v, FILE *f)
{
	fputs("  \"chain\": [", f);
	for (size_t i = 0; i < v->n; i++) {
		fputs(i ? ", {\"path\": " : "{\"path\": ", f);
		sc_tool_print_json_string(f, v->link[i].path);
		fprintf(f, ", \"full\": %s, \"state\": \"%s\"}", v->link[i].depth == 1 ? "true"
			: "false", state_json[v->link[i].state]);
	}
	fputs("],\n", f);
}

void sc_chain_view_free(struct sc_chain_view *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->link[i].path);
	v->n = 0;
}
