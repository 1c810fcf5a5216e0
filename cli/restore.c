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
#include <stdbool.h>
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
	fputs("Usage: " TOOL " [--new-ids] [--threads N] IMAGE\n"
	      "Restore the process saved in IMAGE: it continues in the foreground, from the\n"
	      "instruction after the checkpoint, with this terminal's standard streams.\n"
	      "It gets back its pid and thread ids, inside new user and pid namespaces,\n"
	      "where the system allows them; otherwise it runs with new ids.\n"
	      "\n"
	      "  --new-ids    do not use namespaces: new pid and thread ids\n"
	      "  --threads N  decompress on N threads (default: all online CPUs)\n"
	      "  --help       print this help and exit\n"
	      "  --version    print the version and exit\n"
	      "\n"
	      "Exit status when the restore is refused (nothing was changed):\n"
	      "  64  wrong command line\n"
	      "  65  the image is corrupt or unsupported\n"
	      "  66  IMAGE is missing or cannot be opened\n"
	      "  69  this machine cannot take the image (another kernel's vDSO, a changed file,\n"
	      "      no GPU that can run its CUDA modules)\n"
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

/* The saved pid, from the process record, before anything else is decided. */
static int peek_pid(const char *path, pid_t *pid)
{
	struct sc_read_opts ro = { .threads = 1 };
	struct sc_process_info p;
	struct sc_reader *r;
	struct sc_record rec;
	int err = sc_reader_open(&r, path, &ro);

	*pid = 0;
	while (!err && (err = sc_reader_next(r, &rec)) == 1 && rec.type != SC_REC_PROCESS)
		err = 0;
	if (err == 1 && (err = sc_process_read(r, &rec, &p)) == 0) {
		*pid = (pid_t)p.pid;
		sc_process_free(&p);
	}
	sc_reader_free(r);
	return err < 0 ? err : 0;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct image im;
	struct plan plan;
	bool same_ids = false;
	pid_t pid;
	int ret, err;

	double t[5];

	sc_tool_init(TOOL);
	t[0] = sc_log_seconds();
	ret = parse(argc, argv, &o);
	if (ret >= 0)
		return ret;
	if (!o.new_ids && getenv("SELFCKPT_NEW_IDS"))
		o.new_ids = !strcmp(getenv("SELFCKPT_NEW_IDS"), "1");
	err = peek_pid(o.path, &pid);
	if (!err)
		err = sc_restore_cuda_check(o.path, o.threads);
	if (err < 0)
		return sc_tool_exit_code(err);
	/* From here on, in the same-ids case, this is the process at the saved pid. */
	t[1] = sc_log_seconds();
	if (!o.new_ids && pid > 1)
		same_ids = sc_same_ids_enter(pid) == 0;
	t[2] = sc_log_seconds();
	err = sc_image_load(&im, o.path);
	if (!err)
		err = sc_plan_build(&im, &plan);
	plan.same_ids = same_ids;
	t[3] = sc_log_seconds();
	if (!err)
		err = sc_plan_fill(&im, &plan, o.threads);
	t[4] = sc_log_seconds();
	if (!err) {
		sc_log(SC_LOG_DEBUG, "restore: '%s' checked in %.3f s, ids %.3f s, records loaded and "
		       "mappings planned %.3f s, memory staged %.3f s", o.path, t[1] - t[0],
		       t[2] - t[1], t[3] - t[2], t[4] - t[3]);
		err = sc_restore_jump(&im, &plan);
	}
	/* Only refusals come back here: a restore that succeeds never returns. */
	return sc_tool_exit_code(err);
}
