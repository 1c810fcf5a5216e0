/* SPDX-License-Identifier: MIT */
/*
 * merge.c - selfckpt-merge: make an incremental image full, taking the pages
 * it leaves to its parents from them (core/restore/sc_merge.h), so that the
 * parents can be deleted.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/tool.h"
#include "core/restore/sc_merge.h"
#include "core/sc_settings.h"
#include "cuda/tools/sc_devmem_parents.h"
#include "format/sc_format.h"
#include "selfckpt.h"

#define TOOL "selfckpt-merge"
#define THREADS_MAX 4096

static int usage(void)
{
	fputs("Usage: " TOOL " [-o OUTPUT] [--threads N] [--level N] IMAGE\n"
	      "Write IMAGE as a full image: the pages it leaves to its parent images are\n"
	      "read from them and stored in it, so that it no longer needs them and they\n"
	      "can be deleted. The chain is checked as a restore checks it. The new image\n"
	      "replaces IMAGE, or goes to OUTPUT; it is written to a temporary file and\n"
	      "renamed, so a merge that fails leaves every file as it was. Images that name\n"
	      "IMAGE as their parent no longer find it once it is replaced: merge the\n"
	      "newest image of a chain. A full IMAGE is left as it is (or copied to OUTPUT).\n"
	      "\n"
	      "  -o, --output OUTPUT  write the full image there instead of replacing IMAGE\n"
	      "                       (not one of IMAGE's parents)\n"
	      "  --threads N          decompress and compress on N threads (default: all\n"
	      "                       online CPUs)\n"
	      "  --level N            zstd level, 0 to store (default: SELFCKPT_LEVEL, or 1)\n"
	      "  --help               print this help and exit\n"
	      "  --version            print the version and exit\n"
	      "\n"
	      "Exit status:\n"
	      "  0   success\n"
	      "  64  wrong command line, or OUTPUT is a parent of IMAGE\n"
	      "  65  an image of the chain is corrupt or unsupported, or a parent is another\n"
	      "      image than the one its child names\n"
	      "  66  IMAGE or one of its parents is missing or cannot be opened\n"
	      "  74  another input or output error\n",
	      stdout);
	return fflush(stdout) ? SC_EXIT_IOERR : SC_EXIT_OK;
}

/* Return: -1 to go on, or the code to exit with. */
static int parse(int argc, char **argv, struct sc_merge_opts *o)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "threads", required_argument, NULL, 't' },
		{ "level", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c, ret = -1;
	unsigned long v = 0;

	opterr = 0;
	while (ret < 0 && (c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'o': o->output = optarg; break;
		case 't':
			if ((ret = sc_tool_count("thread count", optarg, THREADS_MAX, &v)) < 0)
				o->threads = (unsigned)v;
			break;
		case 'l':
			if ((ret = sc_tool_count("level", optarg, SC_SETTINGS_LEVEL_MAX, &v)) < 0)
				o->level = (int)v;
			break;
		case 'h': return usage();
		case 'V':
			printf("%s %s\n", TOOL, SELFCKPT_VERSION_STRING);
			return fflush(stdout) ? SC_EXIT_IOERR : SC_EXIT_OK;
		case ':':
			return sc_tool_usage_error("option '%s' needs a value", argv[optind - 1]);
		default: return sc_tool_usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (ret >= 0)
		return ret;
	if (argc - optind != 1)
		return sc_tool_usage_error(argc == optind ? "no image named"
							  : "one image at a time");
	o->path = argv[optind];
	return -1;
}

/* The CUDA layer's device memory: its parent pieces made whole, its meta that of a full image. */
static int take_devmem(void *arg, struct sc_reader *src, const struct sc_record *rec,
		       struct sc_writer *out)
{
	int err;

	if (rec->type != SC_REC_DEVMEM)
		return 0;
	err = sc_devmem_merge_record(arg, src, rec, out);
	return err < 0 ? err : 1;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const struct sc_settings *set;
	struct sc_devmem_merge dm = { 0 };
	struct sc_merge_opts o = { .level = -1, .take = take_devmem, .take_arg = &dm };
	struct sc_merge_stats st;
	char given[SC_TOOL_SIZE_BUF], size[SC_TOOL_SIZE_BUF];
	double t0;
	int ret, err;

	sc_tool_init(TOOL);
	set = sc_settings();
	if ((ret = parse(argc, argv, &o)) >= 0)
		return ret;
	if (o.level < 0) /* an option beats its variable */
		o.level = set->level;
	if (!o.threads)
		o.threads = set->threads;
	t0 = now_s();
	dm.path = o.path;
	dm.threads = o.threads;
	err = sc_merge(&o, &st);
	st.chain_bytes += dm.chain_bytes;
	sc_devmem_merge_free(&dm);
	if (err < 0)
		return sc_tool_exit_code(err);
	if (!st.written) {
		printf("'%s' is a full image already: left as it is\n", o.path);
		return fflush(stdout) ? SC_EXIT_IOERR : SC_EXIT_OK;
	}
	printf("%s: a full image of %s, from a chain of %u image%s (%s from the parents), "
	       "in %.2f s\n", o.output ? o.output : o.path, sc_tool_size(size, st.written),
	       st.images, st.images == 1 ? "" : "s", sc_tool_size(given, st.chain_bytes),
	       now_s() - t0);
	return fflush(stdout) ? SC_EXIT_IOERR : SC_EXIT_OK;
}
