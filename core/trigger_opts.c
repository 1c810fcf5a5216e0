/* SPDX-License-Identifier: MIT */
/*
 * trigger_opts.c - reading the trigger options: signal names, which signals
 * the library keeps for itself, intervals.
 *
 * Apart from trigger.c, so that selfckpt-run can check its options without
 * linking the trigger constructor into itself.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/sc_settings.h"
#include "core/sc_trigger.h"

/* Linux x86-64 numbering; the C library has no portable table before glibc 2.32. */
static const char *const names[] = {
	[SIGHUP] = "HUP",   [SIGINT] = "INT",       [SIGQUIT] = "QUIT", [SIGILL] = "ILL",
	[SIGTRAP] = "TRAP", [SIGABRT] = "ABRT",     [SIGBUS] = "BUS",   [SIGFPE] = "FPE",
	[SIGKILL] = "KILL", [SIGUSR1] = "USR1",     [SIGSEGV] = "SEGV", [SIGUSR2] = "USR2",
	[SIGPIPE] = "PIPE", [SIGALRM] = "ALRM",     [SIGTERM] = "TERM", [SIGSTKFLT] = "STKFLT",
	[SIGCHLD] = "CHLD", [SIGCONT] = "CONT",     [SIGSTOP] = "STOP", [SIGTSTP] = "TSTP",
	[SIGTTIN] = "TTIN", [SIGTTOU] = "TTOU",     [SIGURG] = "URG",   [SIGXCPU] = "XCPU",
	[SIGXFSZ] = "XFSZ", [SIGVTALRM] = "VTALRM", [SIGPROF] = "PROF", [SIGWINCH] = "WINCH",
	[SIGIO] = "IO",     [SIGPWR] = "PWR",       [SIGSYS] = "SYS",
};

/* "N" in 0..@max with nothing after it, or -1. */
static int small_number(const char *s, int max)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	return *end || errno || v > max ? -1 : (int)v;
}

static int parse_realtime(const char *s)
{
	int span = SIGRTMAX - SIGRTMIN, n;

	if (!strcasecmp(s, "RTMIN"))
		return SIGRTMIN;
	if (!strcasecmp(s, "RTMAX"))
		return SIGRTMAX;
	if (!strncasecmp(s, "RTMIN+", 6) && (n = small_number(s + 6, span)) >= 0)
		return SIGRTMIN + n;
	if (!strncasecmp(s, "RTMAX-", 6) && (n = small_number(s + 6, span)) >= 0)
		return SIGRTMAX - n;
	return -EINVAL;
}

int sc_signal_parse(const char *s)
{
	int n;

	if (!s || !*s)
		return -EINVAL;
	if ((n = small_number(s, SIGRTMAX)) >= 0)
		return n ? n : -EINVAL;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (int sig = 1; sig < (int)(sizeof(names) / sizeof(names[0])); sig++)
		if (names[sig] && !strcasecmp(s, names[sig]))
			return sig;
	if (!strcasecmp(s, "IOT"))
		return SIGABRT;
	if (!strcasecmp(s, "POLL"))
		return SIGIO;
	return parse_realtime(s);
}

const char *sc_signal_name(int sig, char *buf)
{
	if (sig > 0 && sig < (int)(sizeof(names) / sizeof(names[0])) && names[sig])
		snprintf(buf, SC_SIGNAL_NAME_MAX, "SIG%s", names[sig]);
	else if (sig >= SIGRTMIN && sig - SIGRTMIN <= SIGRTMAX - sig)
		snprintf(buf, SC_SIGNAL_NAME_MAX, "SIGRTMIN+%d", sig - SIGRTMIN);
	else if (sig >= SIGRTMIN && sig <= SIGRTMAX)
		snprintf(buf, SC_SIGNAL_NAME_MAX, "SIGRTMAX-%d", SIGRTMAX - sig);
	else
		snprintf(buf, SC_SIGNAL_NAME_MAX, "%d", sig);
	return buf;
}

int sc_stop_signal(void)
{
	return sc_settings()->stop_signal;
}

const char *sc_trigger_signal_check(int sig)
{
	if (sig <= 0 || sig > SIGRTMAX)
		return "is not a signal";
	if (sig == SIGKILL || sig == SIGSTOP)
		return "cannot be caught";
	if (sig > SIGSYS && sig < SIGRTMIN)
		return "is reserved by the C library";
	if (sig == sc_stop_signal())
		return "stops the threads for a checkpoint (see SELFCKPT_STOP_SIGNAL)";
	if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP)
		return "reports faults";
	return NULL;
}

int sc_interval_parse(const char *s, int64_t *ns)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end || errno || !isfinite(v) || v < SC_INTERVAL_MIN || v > SC_INTERVAL_MAX)
		return -EINVAL;
	*ns = (int64_t)(v * 1e9);
	return 0;
}
