/* SPDX-License-Identifier: MIT */
/*
 * common.c - options, checks and output shared by the CUDA samples.
 *
 * Built twice: linked with libselfckpt (which provides the cu* entry points
 * and selfckpt_save()), and with -DSAMPLE_NATIVE against the driver's
 * libcuda, as an ordinary CUDA program that knows nothing of selfckpt.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#ifndef SAMPLE_NATIVE
#include "selfckpt.h"
#endif

#define EXIT_USAGE 64
#define DEFAULT_ITERS 100
#define DEFAULT_SLEEP_MS 20

void sample_check(CUresult res, const char *call, const char *file, int line)
{
	const char *name = NULL;

	if (res == CUDA_SUCCESS)
		return;
	if (cuGetErrorName(res, &name) != CUDA_SUCCESS || !name)
		name = "unknown error";
	fprintf(stderr, "%s failed: %s (%d) at %s:%d\n", call, name, (int)res, file, line);
	exit(1);
}

static void __attribute__((noreturn)) usage(const char *name, unsigned extra)
{
	fprintf(stderr, "usage: %s [--iters N] [--save-at I FILE] [--module PATH] "
		"[--sleep-ms M]%s\n", name, extra & SAMPLE_OPT_EMBEDDED ? " [--embedded]" : "");
	exit(EXIT_USAGE);
}

static long parse_long(const struct sample *s, const char *opt, const char *arg, long min,
		       long max)
{
	char *end;
	long v;

	errno = 0;
	v = arg ? strtol(arg, &end, 10) : 0;
	if (!arg || errno || end == arg || *end || v < min || v > max) {
		fprintf(stderr, "%s: %s wants a number from %ld to %ld, not '%s'\n", s->name, opt,
			min, max, arg ? arg : "");
		exit(EXIT_USAGE);
	}
	return v;
}

/*
 * The default module lies next to the executable. Resolve it now: a restored
 * process's /proc/self/exe names selfckpt-restore, not this program.
 */
static void default_module(struct sample *s)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n < 0) {
		fprintf(stderr, "%s: cannot read /proc/self/exe: %s\n", s->name, strerror(errno));
		exit(1);
	}
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	if (snprintf(s->module, sizeof(s->module), "%s/%s.fatbin", slash ? exe : ".",
		     s->name) >= (int)sizeof(s->module)) {
		fprintf(stderr, "%s: the module path under '%s' is too long\n", s->name, exe);
		exit(1);
	}
}

static void parse_args(struct sample *s, int argc, char **argv, unsigned extra)
{
	const char *module = NULL;

	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i], *arg = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(opt, "--iters")) {
			s->iters = parse_long(s, opt, arg, 1, 1000000000);
			i++;
		} else if (!strcmp(opt, "--save-at")) {
			s->save_at = parse_long(s, opt, arg, 1, 1000000000);
			if (i + 2 >= argc)
				usage(s->name, extra);
			s->save_path = argv[i + 2];
			i += 2;
		} else if (!strcmp(opt, "--module") && arg) {
			module = arg;
			i++;
		} else if (!strcmp(opt, "--sleep-ms")) {
			s->sleep_ms = (unsigned)parse_long(s, opt, arg, 0, 3600 * 1000);
			i++;
		} else if (!strcmp(opt, "--embedded") && (extra & SAMPLE_OPT_EMBEDDED)) {
			s->embedded = true;
		} else {
			usage(s->name, extra);
		}
	}
	if (module && strlen(module) >= sizeof(s->module)) {
		fprintf(stderr, "%s: --module path too long\n", s->name);
		exit(EXIT_USAGE);
	}
	if (module)
		strcpy(s->module, module);
	else
		default_module(s);
	if (module && s->embedded) {
		fprintf(stderr, "%s: --module and --embedded exclude each other\n", s->name);
		exit(EXIT_USAGE);
	}
}

static void check_save_at(const struct sample *s)
{
	if (!s->save_at)
		return;
#ifdef SAMPLE_NATIVE
	fprintf(stderr, "%s: this build is not linked with libselfckpt: no --save-at\n", s->name);
	exit(EXIT_USAGE);
#endif
	if (s->save_at > s->iters) {
		fprintf(stderr, "%s: --save-at %ld is past the last iteration (%ld)\n", s->name,
			s->save_at, s->iters);
		exit(EXIT_USAGE);
	}
}

void sample_init(struct sample *s, int argc, char **argv, const char *name, unsigned extra)
{
	memset(s, 0, sizeof(*s));
	s->name = name;
	s->iters = DEFAULT_ITERS;
	s->sleep_ms = DEFAULT_SLEEP_MS;
	s->total = SAMPLE_HASH_INIT;
	parse_args(s, argc, argv, extra);
	check_save_at(s);

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&s->dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&s->ctx, s->dev));
	CHECK(cuCtxSetCurrent(s->ctx));
}

CUmodule sample_load_module(const struct sample *s)
{
	CUmodule mod;
	CUresult res = cuModuleLoad(&mod, s->module);
	const char *name = NULL;

	if (res == CUDA_SUCCESS)
		return mod;
	cuGetErrorName(res, &name);
	fprintf(stderr, "%s: cannot load the module '%s': %s\n", s->name, s->module,
		name ? name : "unknown error");
	exit(1);
}

uint64_t sample_hash(uint64_t h, const void *buf, size_t n)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull; /* FNV prime */
	}
	return h;
}

static void checkpoint(const struct sample *s)
{
#ifdef SAMPLE_NATIVE
	(void)s; /* check_save_at() refused --save-at */
#else
	int ret = selfckpt_save(s->save_path);

	if (ret == SELFCKPT_SAVED) {
		fprintf(stderr, "saved\n");
	} else if (ret == SELFCKPT_RESTORED) {
		fprintf(stderr, "restored\n");
	} else {
		fprintf(stderr, "%s: cannot checkpoint into '%s': %s\n", s->name, s->save_path,
			selfckpt_last_error());
		exit(1);
	}
#endif
}

/* A signal (a checkpoint trigger) cuts nanosleep() short: sleep the rest. */
static void pause_ms(unsigned ms)
{
	struct timespec left = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&left, &left) < 0 && errno == EINTR)
		;
}

void sample_iteration_done(struct sample *s, long i, uint64_t sum)
{
	unsigned char le[8];

	printf("iter %ld %016llx\n", i, (unsigned long long)sum);
	fflush(stdout);
	for (int b = 0; b < 8; b++)
		le[b] = (unsigned char)(sum >> (8 * b));
	s->total = sample_hash(s->total, le, sizeof(le));
	if (i == s->save_at)
		checkpoint(s);
	pause_ms(s->sleep_ms);
}

int sample_finish(struct sample *s)
{
	printf("done %016llx\n", (unsigned long long)s->total);
	fflush(stdout);
	CHECK(cuDevicePrimaryCtxRelease(s->dev));
	return 0;
}
