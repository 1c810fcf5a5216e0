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
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/restore_internal.h"
#include "cli/tool.h"
#include "core/sc_settings.h"
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

/*
 * An image with System V objects comes back only where they get their ids
 * again, in an IPC namespace of the restore's own: never under other ids, or
 * among another program's objects.
 */
static int no_ipc_namespace(const struct options *o, const char *why)
{
	return sc_err(SELFCKPT_EIPCNS, "'%s' holds System V IPC objects (shared memory, "
		      "semaphores or message queues), which come back with their ids only in an "
		      "IPC namespace of the restore's own; %s: nothing was restored", o->path, why);
}

/* Stage 1, before the point of no return: every refusal comes back from here. */
static int prepare(struct options *o, struct image *im, struct plan *plan)
{
	bool same_ids = false;
	struct sc_peek peek;
	int fd, err, verdict;
	double t[5];

	t[0] = sc_log_seconds();
	if (sc_probe_clone3() == -EPERM) {
		/* glibc falls back to clone only on ENOSYS: no thread would start */
		sc_log(SC_LOG_DEBUG, "restore: clone3 is refused with EPERM: reading on this "
		       "thread only");
		o->threads = 1;
	}
	err = sc_image_open(o->path, &fd);
	if (!err)
		err = sc_image_peek(fd, o->path, &peek);
	if (!err)
		err = sc_restore_cuda_check_fd(fd, o->path, o->threads);
	if (err < 0)
		return err;
	/* From here on, in the same-ids case, this is the process at the saved pid. */
	t[1] = sc_log_seconds();
	if (peek.sysv && (o->new_ids || peek.pid <= 1))
		return no_ipc_namespace(o, "it restores with new ids (--new-ids or "
				       "SELFCKPT_NEW_IDS=1), and System V objects come back only "
				       "in the same-ids mode's namespaces");
	sc_loginuid_restore(&peek);
	if (!o->new_ids && peek.pid > 1)
		same_ids = sc_same_ids_enter(peek.pid, fd, peek.sysv) == 0;
	if (peek.sysv && !same_ids)
		return no_ipc_namespace(o, "the namespaces of the same-ids mode are not allowed "
				       "here (see the warning above)");
	if (same_ids)
		sc_loginuid_check_namespace(&peek);
	t[2] = sc_log_seconds();
	err = sc_image_load_fd(im, fd, o->path);
	if (!err)
		err = sc_sysv_restore(im);
	if (!err)
		err = sc_plan_build(im, plan);
	plan->same_ids = same_ids;
	if (!err)
		err = sc_probe_mm_map(im, false);
	t[3] = sc_log_seconds();
	if (!err)
		err = sc_image_verify_start(im);
	if (!err)
		err = sc_plan_fill(im, plan, o->threads);
	verdict = sc_image_verify_finish(im);
	t[4] = sc_log_seconds();
	if (!err)
		err = verdict;
	if (!err)
		sc_log(SC_LOG_DEBUG, "restore: '%s' checked in %.3f s, ids %.3f s, records "
		       "loaded and mappings planned %.3f s, memory staged and the file verified "
		       "%.3f s", o->path, t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3]);
	return err;
}

/*
 * A signal sent while the process is being restored (a checkpoint trigger,
 * a batch system's SIGTERM) waits, pending, until the restored program runs
 * with its own handlers and mask: delivered now, it would find the
 * restorer's default actions and end the restore. The processes that only
 * pass signals on in same-ids mode take them again (restore_ids.c); a
 * refused restore exits, and they go with it.
 */
static void block_signals(void)
{
	sigset_t all;

	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	const struct sc_settings *set;
	struct image im;
	struct plan plan;
	int ret, err;

	sc_tool_init(TOOL);
	set = sc_settings();
	ret = parse(argc, argv, &o);
	if (ret >= 0)
		return ret;
	block_signals();
	/* an option beats its variable */
	o.new_ids = o.new_ids || set->new_ids;
	if (!o.threads)
		o.threads = set->threads;
	err = prepare(&o, &im, &plan);
	if (!err)
		err = sc_restore_jump(&im, &plan);
	/* Only refusals come back here: a restore that succeeds never returns. */
	return sc_tool_exit_code(err);
}
