/* SPDX-License-Identifier: MIT */
/*
 * sc_trigger.h - checkpoint triggers as selfckpt-run and the library share
 * them: the environment variables that carry the options from the tool to the
 * preloaded library, and signal names.
 *
 * selfckpt-run checks every value before it starts the program, so the
 * library, which reads them again in its constructor, only has to refuse what
 * someone set by hand.
 */
#ifndef SC_TRIGGER_H
#define SC_TRIGGER_H

#include <signal.h>
#include <stdint.h>

/* Options, each a mirror of a selfckpt-run option; the option wins. */
#define SC_ENV_DIR "SELFCKPT_DIR"               /* where images and 'latest' go */
#define SC_ENV_INTERVAL "SELFCKPT_INTERVAL"     /* seconds between checkpoints */
#define SC_ENV_SIGNAL "SELFCKPT_SIGNAL"         /* checkpoint at the next safe point */
#define SC_ENV_SIGNAL_NOW "SELFCKPT_SIGNAL_NOW" /* checkpoint at once */
#define SC_ENV_LEVEL "SELFCKPT_LEVEL"           /* compression level */
#define SC_ENV_LOG_LEVEL "SELFCKPT_LOG_LEVEL"
/* Set by selfckpt-run only. */
#define SC_ENV_EXIT_AFTER_SAVE "SELFCKPT_EXIT_AFTER_SAVE" /* "1": exit 75 after a signal */
/* "1": a process of the job the library cannot enter is left out of its checkpoint */
#define SC_ENV_LEAVE_OUT_ESCAPED "SELFCKPT_LEAVE_OUT_ESCAPED"
#define SC_ENV_LIBRARY "SELFCKPT_LIBRARY"  /* the library selfckpt-run preloads */
/* The trigger signals selfckpt-run blocked across its exec, "N[,M]": the library unblocks them */
#define SC_ENV_HELD_SIGNALS "SELFCKPT_HELD_SIGNALS"

#define SC_TRIGGER_SIGNAL_DEFAULT SIGUSR1
#define SC_TRIGGER_SIGNAL_NOW_DEFAULT SIGUSR2
#define SC_TRIGGER_EXIT_SAVED 75 /* exit status after --exit-after-save */
#define SC_TRIGGER_LATEST "latest"

#define SC_INTERVAL_MIN 0.001 /* seconds */
#define SC_INTERVAL_MAX 1e9

#define SC_SIGNAL_NAME_MAX 16 /* enough for any sc_signal_name() result */

/**
 * sc_signal_parse() - read a signal given by a user: a name with or without
 * "SIG" in any case ("USR1", "sigusr1"), "RTMIN+N" or "RTMAX-N", or a number.
 *
 * Return: the signal number, or -EINVAL when @s names none.
 */
int sc_signal_parse(const char *s);

/**
 * sc_signal_name() - "SIGUSR1", "SIGRTMIN+3", or the number for others.
 * @buf: at least SC_SIGNAL_NAME_MAX bytes.
 *
 * Return: @buf.
 */
const char *sc_signal_name(int sig, char *buf);

/**
 * sc_stop_signal() - the signal that stops the threads for a checkpoint:
 * SELFCKPT_STOP_SIGNAL when it names a real-time signal, else SIGRTMAX-2.
 */
int sc_stop_signal(void);

/**
 * sc_trigger_signal_check() - may @sig trigger checkpoints?
 *
 * Return: NULL, or why not ("cannot be caught", ...), for a message.
 */
const char *sc_trigger_signal_check(int sig);

/**
 * sc_interval_parse() - read a number of seconds, from SC_INTERVAL_MIN to
 * SC_INTERVAL_MAX, fractions allowed ("600", "0.5").
 * @ns: receives it in nanoseconds.
 *
 * Return: 0, or -EINVAL.
 */
int sc_interval_parse(const char *s, int64_t *ns);

#endif /* SC_TRIGGER_H */
