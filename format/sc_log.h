/* SPDX-License-Identifier: MIT */
/*
 * sc_log.h - reporting errors once, where they are detected, and logging.
 *
 * sc_err() formats the message, keeps it for selfckpt_last_error() and prints
 * it to standard error when the log level allows, then returns the negative
 * code for the caller to pass up unchanged. Not async-signal-safe: code in
 * *_rt.c files has its own formatter.
 */
#ifndef SC_LOG_H
#define SC_LOG_H

enum sc_log_level {
	SC_LOG_NONE = 0,
	SC_LOG_ERROR = 1,
	SC_LOG_WARN = 2,
	SC_LOG_INFO = 3,
	SC_LOG_DEBUG = 4,
};

/**
 * sc_err() - report an error and return it negated.
 * @code: a positive errno or SELFCKPT_E* value.
 * Return: -@code.
 */
int sc_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * sc_err_quiet() - as sc_err(), without printing: for an error another thread
 * reported already, handed over to the thread that returns it.
 */
int sc_err_quiet(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** sc_log() - print a message at @level when the log level allows it. */
void sc_log(enum sc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * sc_log_set_level() - the level messages are printed up to (default warn). This
 * code never reads the environment: whoever reads SELFCKPT_LOG_LEVEL sets it.
 */
void sc_log_set_level(enum sc_log_level level);

/** sc_log_level_parse() - a SELFCKPT_LOG_LEVEL value as a level; warn when unset or unknown. */
enum sc_log_level sc_log_level_parse(const char *v);

/** sc_log_set_prefix() - the name messages start with (default "selfckpt"). */
void sc_log_set_prefix(const char *prefix);

/** sc_log_seconds() - CLOCK_MONOTONIC in seconds, for the durations debug messages give. */
double sc_log_seconds(void);

#endif /* SC_LOG_H */
