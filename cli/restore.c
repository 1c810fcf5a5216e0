/* SPDX-License-Identifier: MIT */
/*
 * restore.c - selfckpt-restore: bring a checkpointed process back.
 *
 * Stage 1 (this file and restore_*.c) reads and checks the whole image, stages
 * every mapping's content in a hole of the address space, and refuses with a
 * clear message, before it changes anything, an image that is damaged or that
 * this machine cannot take. Then it sets the descriptors, working directory
 * and limits, and jumps into the restorer blob (restorer_rt.c), which replaces
 * this program with the saved one. The process keeps this program's pid and
 * standard streams.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/restore_internal.h"
#include "cli/tool.h"
#include "format/sc_log.h"
#include "selfckpt.h"

#define TOOL "selfckpt-restore"

static int usage(void)
{
	fputs("Usage: " TOOL " [--threads N] IMAGE\n"
	      "Restore the process saved in IMAGE: it continues in the foreground, from the\n"
	      "instruction after the checkpoint, with this terminal's standard streams.\n"
	      "\n"
	      "  --threads N  decompress on N threads (default: all online CPUs)\n"
	      "  --help       print this help and exit\n"
	      "  --version    print the version and exit\n"
	      "\n"
	      "Exit status when the restore is refused (nothing was changed):\n"
	      "  64  wrong command line\n"
	      "  65  the image is corrupt or unsupported\n"
	      "  66  IMAGE is missing or cannot be opened\n"
	      "  69  this machine cannot take the image (another kernel's vDSO, a changed file)\n"
	      "  74  another input or output error\n"
	      "Once restored, the exit status is the restored program's.\n",
	      stdout);
	return SC_EXIT_OK;
}

static int parse(int argc, char **argv, unsigned *threads, const char **path)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			*threads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'h':
			return usage();
		case 'V':
			printf("%s %s\n", TOOL, SELFCKPT_VERSION_STRING);
			return SC_EXIT_OK;
		default:
			return sc_tool_usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		return sc_tool_usage_error(argc == optind ? "no image named"
							  : "one image at a time");
	*path = argv[optind];
	return -1;
}

int main(int argc, char **argv)
{
	struct image im;
	struct plan plan;
	const char *path = NULL;
	unsigned threads = 0;
	int ret, err;

	sc_tool_init(TOOL);
	ret = parse(argc, argv, &threads, &path);
	if (ret >= 0)
		return ret;
	err = sc_image_load(&im, path, threads);
	if (!err)
		err = sc_plan_build(&im, &plan);
	if (!err)
		err = sc_plan_fill(&im, &plan);
	if (!err)
		err = sc_restore_jump(&im, &plan);
	/* Only refusals come back here: a restore that succeeds never returns. */
	return sc_tool_exit_code(err);
}
