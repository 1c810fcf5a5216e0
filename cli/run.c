/* SPDX-License-Identifier: MIT */
/*
 * run.c - selfckpt-run: start a program with the library preloaded, so that a
 * signal or an interval checkpoints it; or restore its latest image.
 *
 * The tool hands its options to the library through the environment
 * (core/sc_trigger.h; an option beats its variable), checks them and every
 * other SELFCKPT_* variable the program inherits (core/sc_settings.h), puts the
 * library first in LD_PRELOAD and becomes the program with execvp(): the
 * program keeps the tool's pid, its standard streams and its exit status,
 * with the trigger signals held until the library can take them
 * (run_held.c). The library's constructor (core/trigger.c) does the rest. With --resume and
 * an image behind DIR/latest, it becomes selfckpt-restore instead. Either way
 * it first removes from DIR the temporary images of checkpoints that were
 * killed midway (format/atomic_replace.c).
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/run_held.h"
#include "cli/tool.h"
#include "core/sc_settings.h"
#include "core/sc_trigger.h"
#include "format/sc_format.h"
#include "format/sc_log.h"
#include "selfckpt.h"

#define TOOL "selfckpt-run"
#define LIBRARY_NAME "libselfckpt.so.1"
/* --cuda=driver: the same library without the cu* entry points (cuda/driver-mode.map) */
#define LIBRARY_NAME_DRIVER "libselfckpt-driver.so.1"
#define EXIT_CANNOT_EXEC 126 /* as a shell says */
#define EXIT_NOT_FOUND 127

struct run_opts {
	const char *dir, *interval, *signal, *signal_now, *level, *log_level, *cuda;
	bool exit_after_save, resume, embed_files, leave_out;
	int sig_soon, sig_now; /* the trigger signals, once checked */
};

static int usage(void)
{
	fputs("Usage: " TOOL " [OPTIONS] [--] PROGRAM [ARGS...]\n"
	      "Run PROGRAM with the selfckpt library preloaded. On a signal, or every few\n"
	      "seconds, it writes DIR/<program>.<pid>.sckpt and points DIR/latest at it.\n"
	      "\n"
	      "  --dir DIR          images go to DIR, made (mode 0700) when missing (default .)\n"
	      "  --interval S       also checkpoint every S seconds (fractions allowed)\n"
	      "  --signal SIG       checkpoint at the next safe point on SIG (default USR1)\n"
	      "  --signal-now SIG   checkpoint at once on SIG (default USR2)\n"
	      "  --exit-after-save  exit with status 75 after a checkpoint a signal asked for\n"
	      "  --leave-out-escaped  checkpoint the job without the processes the library\n"
	      "                     cannot enter (static programs, environment cleared),\n"
	      "                     named in a warning, instead of refusing it\n"
	      "  --resume           restore DIR/latest when it exists, else start PROGRAM\n"
	      "  --embed-files      store the clean pages of mapped files too, so that a\n"
	      "                     restore does not need them unchanged\n"
	      "  --cuda MODE        how a CUDA program's GPU state is saved: proxy (the\n"
	      "                     library serves the Driver API), driver (the driver's\n"
	      "                     process checkpoint; the Driver API calls reach the\n"
	      "                     driver too: " LIBRARY_NAME_DRIVER " is preloaded),\n"
	      "                     or auto (default: the library serves the Driver API, the\n"
	      "                     driver's checkpoint for a driver the program loads)\n"
	      "  --level N          compression level (0 stores, default 1)\n"
	      "  --log-level L      none, error, warn (default), info or debug\n"
	      "  --help             print this help and exit\n"
	      "  --version          print the version and exit\n"
	      "\n"
	      "SIG is a name (USR1, SIGUSR1, RTMIN+3) or a number. Each option has an\n"
	      "environment variable, which the option beats: SELFCKPT_DIR, SELFCKPT_INTERVAL,\n"
	      "SELFCKPT_SIGNAL, SELFCKPT_SIGNAL_NOW, SELFCKPT_LEVEL, SELFCKPT_LOG_LEVEL,\n"
	      "SELFCKPT_CUDA.\n"
	      "SELFCKPT_LIBRARY names the library to preload (default ../lib/" LIBRARY_NAME "\n"
	      "from this tool's directory). A program that sets its own action for a trigger\n"
	      "signal takes that signal over, with a warning.\n"
	      "\n"
	      "Exit status: PROGRAM's, or the restored program's; 75 after --exit-after-save;\n"
	      "  64  wrong command line\n"
	      "  66  the library or the image behind DIR/latest is missing\n"
	      "  74  DIR cannot be made, or another input or output error\n"
	      "  126 PROGRAM cannot be executed\n"
	      "  127 PROGRAM is not found\n",
	      stdout);
	return SC_EXIT_OK;
}

enum { OPT_DIR = 256, OPT_INTERVAL, OPT_SIGNAL, OPT_SIGNAL_NOW, OPT_LEVEL, OPT_LOG_LEVEL,
       OPT_EXIT, OPT_RESUME, OPT_EMBED, OPT_CUDA, OPT_VERSION, OPT_LEAVE_OUT };

static const struct option long_opts[] = {
	{ "dir", required_argument, NULL, OPT_DIR },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "signal", required_argument, NULL, OPT_SIGNAL },
	{ "signal-now", required_argument, NULL, OPT_SIGNAL_NOW },
	{ "level", required_argument, NULL, OPT_LEVEL },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "exit-after-save", no_argument, NULL, OPT_EXIT },
	{ "leave-out-escaped", no_argument, NULL, OPT_LEAVE_OUT },
	{ "embed-files", no_argument, NULL, OPT_EMBED },
	{ "cuda", required_argument, NULL, OPT_CUDA },
	{ "resume", no_argument, NULL, OPT_RESUME },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* Return: -1 to go on, or the exit status. "+": what follows PROGRAM is its own. */
static int parse(int argc, char **argv, struct run_opts *o)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_DIR: o->dir = optarg; break;
		case OPT_INTERVAL: o->interval = optarg; break;
		case OPT_SIGNAL: o->signal = optarg; break;
		case OPT_SIGNAL_NOW: o->signal_now = optarg; break;
		case OPT_LEVEL: o->level = optarg; break;
		case OPT_LOG_LEVEL: o->log_level = optarg; break;
		case OPT_EXIT: o->exit_after_save = true; break;
		case OPT_LEAVE_OUT: o->leave_out = true; break;
		case OPT_EMBED: o->embed_files = true; break;
		case OPT_CUDA: o->cuda = optarg; break;
		case OPT_RESUME: o->resume = true; break;
		case 'h': return usage();
		case OPT_VERSION:
			printf("%s %s\n", TOOL, SELFCKPT_VERSION_STRING);
			return SC_EXIT_OK;
		case ':':
			return sc_tool_usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			return sc_tool_usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind == argc)
		return sc_tool_usage_error("no program named");
	return -1;
}

/* The option, else its variable; NULL when neither is set. */
static const char *pick(const char *opt, const char *var)
{
	const char *v = opt ? opt : getenv(var);

	return v && *v ? v : NULL;
}

/* An option and the variable it stands for: the option beats the variable. */
struct stand_in {
	const char *var;
	const char *value; /* the option's; NULL: not given */
};

#define STAND_INS 10

static void stand_ins(const struct run_opts *o, struct stand_in s[STAND_INS])
{
	const struct stand_in all[STAND_INS] = {
		{ SC_ENV_DIR, o->dir }, { SC_ENV_INTERVAL, o->interval },
		{ SC_ENV_SIGNAL, o->signal }, { SC_ENV_SIGNAL_NOW, o->signal_now },
		{ SC_ENV_LEVEL, o->level }, { SC_ENV_LOG_LEVEL, o->log_level },
		{ "SELFCKPT_CUDA", o->cuda },
		{ SC_ENV_EXIT_AFTER_SAVE, o->exit_after_save ? "1" : NULL },
		{ SC_ENV_LEAVE_OUT_ESCAPED, o->leave_out ? "1" : NULL },
		{ "SELFCKPT_EMBED_FILES", o->embed_files ? "1" : NULL },
	};

	memcpy(s, all, sizeof(all));
}

/* The options given, for inherited(), which the settings' parser calls with a name only. */
static const struct run_opts *given;

/* The environment less the variables an option replaces: those are the options' to check. */
static const char *inherited(const char *var)
{
	struct stand_in s[STAND_INS];

	stand_ins(given, s);
	for (size_t i = 0; i < STAND_INS; i++)
		if (s[i].value && !strcmp(var, s[i].var))
			return NULL;
	return getenv(var);
}

/*
 * Every other variable the program inherits, checked now: the library would
 * only warn and use its default, in a program already running.
 */
static int check_env(const struct run_opts *o)
{
	struct sc_settings s;
	int ret = -1;

	given = o;
	if (sc_settings_parse(&s, inherited) < 0)
		return sc_tool_exit_code(sc_err(ENOMEM, "out of memory"));
	if (s.bad_n)
		ret = sc_tool_usage_error("%s", s.bad[0].problem);
	sc_settings_release(&s);
	return ret;
}

/*
 * The options into the environment first: the settings this tool reads itself
 * (the stop signal, its own log level) are then the program's.
 */
static int put_opts(const struct run_opts *o)
{
	struct stand_in s[STAND_INS];

	stand_ins(o, s);
	for (size_t i = 0; i < STAND_INS; i++)
		if (s[i].value && setenv(s[i].var, s[i].value, 1))
			return sc_tool_exit_code(sc_err(errno, "cannot set the environment: %s",
							strerror(errno)));
	return -1;
}

static int check_signal(const char *var, const char *v, int *sig)
{
	char name[SC_SIGNAL_NAME_MAX];
	const char *why;

	*sig = sc_signal_parse(v);
	if (*sig < 0)
		return sc_tool_usage_error("%s '%s' is not a signal name or number", var, v);
	if ((why = sc_trigger_signal_check(*sig)))
		return sc_tool_usage_error("%s '%s': %s %s", var, v, sc_signal_name(*sig, name),
					   why);
	return -1;
}

static bool is_level(const char *v)
{
	char *end;
	long n = strtol(v, &end, 10);

	return *v && !*end && n >= -7 && n <= 22;
}

static bool is_log_level(const char *v)
{
	static const char *const names[] = { "none", "error", "warn", "info", "debug" };

	for (int i = 0; i < 5; i++)
		if (!strcasecmp(v, names[i]) || (v[0] == '0' + i && !v[1]))
			return true;
	return false;
}

/* --cuda, else SELFCKPT_CUDA: checked here, read by the library (cuda/lib/driver_ckpt.c). */
static int check_cuda(const struct run_opts *o)
{
	const char *mode = pick(o->cuda, "SELFCKPT_CUDA");

	if (mode && strcmp(mode, "auto") && strcmp(mode, "driver") && strcmp(mode, "proxy"))
		return sc_tool_usage_error("CUDA mode '%s' is none of auto, driver, proxy", mode);
	return -1;
}

/* Check the options' values, and the variables they stand for (put_opts() exported them). */
static int check_opts(struct run_opts *o)
{
	const char *interval = pick(o->interval, SC_ENV_INTERVAL);
	const char *soon = pick(o->signal, SC_ENV_SIGNAL), *now = pick(o->signal_now,
									 SC_ENV_SIGNAL_NOW);
	const char *level = pick(o->level, SC_ENV_LEVEL);
	const char *log_level = pick(o->log_level, SC_ENV_LOG_LEVEL);
	int sig_soon = SC_TRIGGER_SIGNAL_DEFAULT, sig_now = SC_TRIGGER_SIGNAL_NOW_DEFAULT, ret;
	char name[SC_SIGNAL_NAME_MAX];
	int64_t ns;

	if (interval && sc_interval_parse(interval, &ns) < 0)
		return sc_tool_usage_error("interval '%s' is not a number of seconds from %g to "
					   "%.0f", interval, SC_INTERVAL_MIN, SC_INTERVAL_MAX);
	if (soon && (ret = check_signal("signal", soon, &sig_soon)) >= 0)
		return ret;
	if (now && (ret = check_signal("signal-now", now, &sig_now)) >= 0)
		return ret;
	if (sig_soon == sig_now)
		return sc_tool_usage_error("signal and signal-now are both %s",
					   sc_signal_name(sig_now, name));
	if (level && !is_level(level))
		return sc_tool_usage_error("level '%s' is not a whole number from -7 to 22", level);
	if (log_level && !is_log_level(log_level))
		return sc_tool_usage_error("log level '%s' is none of none, error, warn, info, "
					   "debug, 0-4", log_level);
	o->sig_soon = sig_soon;
	o->sig_now = sig_now;
	return check_cuda(o);
}

/* mkdir -p, with mode 0700 for what it makes. */
static int make_dir(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return sc_err(ENAMETOOLONG, "checkpoint directory '%s' is too long", dir);
	for (char *p = path + 1;; p++) {
		if (*p && *p != '/')
			continue;
		if (p[-1] != '/') {
			char c = *p;

			*p = '\0';
			if (mkdir(path, 0700) < 0 && errno != EEXIST)
				return sc_err(errno, "cannot make the checkpoint directory "
					      "'%s': %s", path, strerror(errno));
			*p = c;
		}
		if (!*p)
			break;
	}
	if (stat(dir, &st) < 0)
		return sc_err(errno, "cannot use the checkpoint directory '%s': %s", dir,
			      strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return sc_err(ENOTDIR, "checkpoint directory '%s' is not a directory", dir);
	return 0;
}

/* Make DIR and export it as an absolute path: the program may change directory. */
static int export_dir(const struct run_opts *o, char *abs)
{
	const char *dir = pick(o->dir, SC_ENV_DIR);
	int err;

	if (!dir)
		dir = ".";
	if ((err = make_dir(dir)) < 0)
		return SC_EXIT_IOERR;
	if (!realpath(dir, abs))
		return sc_tool_exit_code(sc_err(errno, "cannot resolve the checkpoint directory "
						"'%s': %s", dir, strerror(errno)));
	if (setenv(SC_ENV_DIR, abs, 1))
		return sc_tool_exit_code(sc_err(errno, "cannot set the environment: %s",
						strerror(errno)));
	return -1;
}

/* The directory this tool lives in: the library and selfckpt-restore are found from it. */
static int tool_dir(char *dir)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n < 0)
		return sc_err(errno, "cannot read '/proc/self/exe' to find the library: %s",
			      strerror(errno));
	exe[n] = '\0';
	snprintf(dir, PATH_MAX, "%s", dirname(exe));
	return 0;
}

static int find_library(const char *bin, char *lib)
{
	const struct sc_settings *set = sc_settings();
	const char *v = set->library;
	const char *name = set->cuda == SC_CUDA_DRIVER ? LIBRARY_NAME_DRIVER : LIBRARY_NAME;
	char path[PATH_MAX];
	int n = v && *v ? snprintf(path, sizeof(path), "%s", v)
			: snprintf(path, sizeof(path), "%s/../lib/%s", bin, name);

	if (n >= (int)sizeof(path))
		return sc_err(ENAMETOOLONG, "the library path '%s...' is too long", bin);
	if (!realpath(path, lib))
		return sc_err(errno, "cannot find the library '%s'%s: %s", path,
			      v && *v ? " (SELFCKPT_LIBRARY)" : ", set SELFCKPT_LIBRARY",
			      strerror(errno));
	return 0;
}

static int export_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	char *v;
	int n = old && *old ? asprintf(&v, "%s:%s", lib, old) : asprintf(&v, "%s", lib);

	if (n < 0 || setenv("LD_PRELOAD", v, 1))
		return sc_tool_exit_code(sc_err(ENOMEM, "cannot set LD_PRELOAD: out of memory"));
	free(v);
	return -1;
}

static int exec_failed(const char *prog)
{
	int err = errno;

	if (err == ENOENT) {
		sc_err(err, "cannot find the program '%s'", prog);
		return EXIT_NOT_FOUND;
	}
	sc_err(err, "cannot execute '%s': %s", prog, strerror(err));
	return EXIT_CANNOT_EXEC;
}

/* With --resume: become selfckpt-restore DIR/latest; -1 when there is no DIR/latest. */
static int resume(const char *bin, const char *dir)
{
	char latest[PATH_MAX], restore[PATH_MAX];
	char *args[] = { restore, latest, NULL };
	struct stat st;

	if (snprintf(latest, sizeof(latest), "%s/%s", dir, SC_TRIGGER_LATEST) >= PATH_MAX ||
	    snprintf(restore, sizeof(restore), "%s/selfckpt-restore", bin) >= PATH_MAX)
		return sc_tool_exit_code(sc_err(ENAMETOOLONG, "the path of '%s' or of '%s' is too "
						"long", dir, bin));
	if (lstat(latest, &st) < 0)
		return -1;
	if (stat(latest, &st) < 0)
		return sc_tool_exit_code(sc_err(errno, "cannot resume from '%s': %s (remove it to "
						"start afresh)", latest, strerror(errno)));
	execv(restore, args);
	return exec_failed(restore);
}

int main(int argc, char **argv)
{
	struct run_opts o = { 0 };
	char bin[PATH_MAX], lib[PATH_MAX], dir[PATH_MAX];
	int ret;

	sc_tool_init(TOOL);
	if ((ret = parse(argc, argv, &o)) >= 0 || (ret = put_opts(&o)) >= 0 ||
	    (ret = check_env(&o)) >= 0 || (ret = check_opts(&o)) >= 0 ||
	    (ret = export_dir(&o, dir)) >= 0)
		return ret;
	sc_settings(); /* this tool's own log level: the program's */
	if (tool_dir(bin) < 0)
		return SC_EXIT_IOERR;
	/* Before anything runs: what a checkpoint that was killed midway left in DIR. */
	if ((ret = sc_atomic_clean_dir(dir)) < 0)
		sc_log(SC_LOG_DEBUG, "cannot look for stale temporary images in '%s': %s", dir,
		       strerror(-ret));
	if (o.resume && (ret = resume(bin, dir)) >= 0)
		return ret;
	if (find_library(bin, lib) < 0)
		return SC_EXIT_NOINPUT;
	if ((ret = export_preload(lib)) >= 0)
		return ret;
	sc_run_hold_triggers(argv[optind], o.sig_soon, o.sig_now);
	execvp(argv[optind], argv + optind);
	return exec_failed(argv[optind]);
}
