/* SPDX-License-Identifier: MIT */
/*
 * restore.c - selfckpt-restore: bring a checkpointed process back. The
 * command line over the restore engine (core/restore/sc_restore.h), which
 * asks here whether this machine's GPUs can run a CUDA program's modules.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/tool.h"
#include "core/restore/sc_restore.h"
#include "core/sc_settings.h"
#include "cuda/tools/sc_gpu_check.h"
#include "format/sc_log.h"
#include "selfckpt.h"

#define TOOL "selfckpt-restore"

static int usage(void)
{
	fputs("Usage: " TOOL " [--new-ids] [--threads N] IMAGE\n"
	      "Restore the process saved in IMAGE: it continues in the foreground, from the\n"
	      "instruction after the checkpoint, with this terminal's standard streams.\n"
	      "It gets back its pid and thread ids, inside new user and pid namespaces,\n"
	      "where the system allows them; otherwise it runs with new ids. It runs with\n"
	      "the rights of the user who restores it (a warning says so when IMAGE belongs\n"
	      "to another user), and dies when selfckpt-restore is killed.\n"
	      "\n"
	      "  --new-ids    do not use namespaces: new pid and thread ids\n"
	      "  --threads N  decompress on N threads (default: all online CPUs)\n"
	      "  --help       print this help and exit\n"
	      "  --version    print the version and exit\n"
	      "\n"
	      "Exit status when the restore is refused (nothing was changed):\n"
	      "  64  wrong command line\n"
	      "  65  the image is corrupt or unsupported\n"
	      "  66  IMAGE is missing or cannot be opened, or users other than its owner\n"
	      "      may write it\n"
	      "  69  this machine cannot take the image (another kernel's vDSO, a changed file,\n"
	      "      a system that refuses what the restore needs, no GPU that can run its\n"
	      "      CUDA modules)\n"
	      "  74  another input or output error\n"
	      "Once restored, the exit status is the restored program's.\n",
	      stdout);
	return SC_EXIT_OK;
}

struct options {
	unsigned threads;
	bool new_ids;
	const char *path;
};

static int parse(int argc, char **argv, struct options *o)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "new-ids", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			o->threads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'n':
			o->new_ids = true;
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
	o->path = argv[optind];
	return -1;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	const struct sc_settings *set;
	int ret;

	sc_tool_init(TOOL);
	set = sc_settings();
	ret = parse(argc, argv, &o);
	if (ret >= 0)
		return ret;
	/* an option beats its variable */
	o.new_ids = o.new_ids || set->new_ids;
	if (!o.threads)
		o.threads = set->threads;
	return sc_tool_exit_code(sc_restore(&(struct sc_restore_opts){
		.path = o.path, .threads = o.threads, .new_ids = o.new_ids,
		.check_machine = sc_gpu_check_fd }));
}
