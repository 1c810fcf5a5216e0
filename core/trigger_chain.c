/* SPDX-License-Identifier: MIT */
/*
 * trigger_chain.c - the names of the images the triggers write, and the
 * images they no longer need, when images are incremental (lineage.h).
 *
 * An incremental image needs every image before it back to a full one, so
 * each checkpoint gets a name of its own: DIR/<program>.<pid>.<n>.sckpt, n
 * the first number from the last one up whose name is free (an image of
 * another run of the same pid is never replaced). Once DIR/latest names a new
 * full image, the images this process wrote before it are no longer needed
 * by it, and go. Without SELFCKPT_INCREMENTAL the name is the one image's,
 * DIR/<program>.<pid>.sckpt, replaced each time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/lineage.h"
#include "core/sc_settings.h"
#include "core/trigger_internal.h"
#include "format/sc_log.h"

static struct {
	unsigned seq;     /* the number the last name took */
	char **written;   /* this process's images since its last full one, oldest first */
	size_t n, cap;
} tc;

int sc_trigger_image_path(const char *dir, const char *prog, char *path, size_t size)
{
	struct stat st;
	int n;

	if (!sc_settings()->incremental) {
		n = snprintf(path, size, "%s/%s.%d.sckpt", dir, prog, (int)getpid());
		return n < (int)size ? 0 : -ENAMETOOLONG;
	}
	do {
		n = snprintf(path, size, "%s/%s.%d.%u.sckpt", dir, prog, (int)getpid(), ++tc.seq);
		if (n >= (int)size)
			return -ENAMETOOLONG;
	} while (lstat(path, &st) == 0);
	return 0;
}

static void forget_written(void)
{
	for (size_t i = 0; i < tc.n; i++)
		free(tc.written[i]);
	tc.n = 0;
}

void sc_trigger_chain_saved(const char *path)
{
	char *copy;

	if (!sc_settings()->incremental)
		return;
	if (sc_lineage_last_full()) {
		for (size_t i = 0; i < tc.n; i++)
			if (strcmp(tc.written[i], path) && unlink(tc.written[i]) < 0 &&
			    errno != ENOENT)
				sc_log(SC_LOG_WARN, "cannot remove '%s', which no image needs any "
				       "more: %s", tc.written[i], strerror(errno));
		forget_written();
	}
	if (tc.n == tc.cap) {
		size_t cap = tc.cap ? 2 * tc.cap : 8;
		char **v = realloc(tc.written, cap * sizeof(*v));

		if (!v)
			return; /* only a file left behind */
		tc.written = v;
		tc.cap = cap;
	}
	if ((copy = strdup(path)))
		tc.written[tc.n++] = copy;
}
