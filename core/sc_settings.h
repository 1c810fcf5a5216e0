/* SPDX-License-Identifier: MIT */
/*
 * sc_settings.h - the SELFCKPT_* environment variables, read once.
 *
 * The library reads the environment in one place, the first time a setting is
 * needed (in a preloaded library, its constructor), and hands the values down:
 * format/ and compress/ never read the environment; they receive the values
 * as options (the writer's level, threads, writers and writeback) or through
 * a setter (the log level). A value that cannot be used is said once, naming
 * the variable, the value and what is used instead; selfckpt-run refuses it
 * before it starts the program.
 *
 * The checkpoint triggers' values (directory, interval, signals) are kept as
 * given: core/trigger.c checks them, and turns the triggers off with an error
 * that names the variable when one is wrong, as selfckpt-run refuses it.
 */
#ifndef SC_SETTINGS_H
#define SC_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "format/sc_log.h"

#define SC_SETTINGS_LEVEL_MIN (-131072) /* zstd's ZSTD_minCLevel() */
#define SC_SETTINGS_LEVEL_MAX 22        /* zstd's ZSTD_maxCLevel() */
#define SC_SETTINGS_THREADS_MAX 4096u   /* more is taken for a mistake */
#define SC_SETTINGS_LOCK_MS_MAX 3600000u
#define SC_SETTINGS_LOCK_MS_DEFAULT 10000u
#define SC_SETTINGS_ARENA_DEFAULT 0x40000000000ull    /* 4 TiB: free in any usual layout */
#define SC_SETTINGS_CHANNEL_DEFAULT 0x6f0000000000ull /* free in any usual layout */
#define SC_SETTINGS_PINNED_MB_DEFAULT 16384ull
#define SC_SETTINGS_PINNED_MB_MAX (UINT64_MAX >> 20) /* the bytes must fit 64 bits */

/* SELFCKPT_CUDA */
enum sc_cuda_mode {
	SC_CUDA_AUTO,   /* the driver's process checkpoint when the driver is in use */
	SC_CUDA_DRIVER, /* the same, asked for by name */
	SC_CUDA_PROXY,  /* never the driver's */
};

/* SELFCKPT_CUDA_CAPTURE: where a checkpoint copies device memory at its instant */
enum sc_cuda_capture {
	SC_CUDA_CAPTURE_AUTO,   /* spare device memory where there is room, else pinned host memory */
	SC_CUDA_CAPTURE_DEVICE, /* spare device memory only */
	SC_CUDA_CAPTURE_HOST,   /* pinned host memory only */
	SC_CUDA_CAPTURE_OFF,    /* none: the program's CUDA calls wait for the whole write */
};

/* One variable whose value cannot be used. */
struct sc_setting_bad {
	const char *name;   /* "SELFCKPT_LEVEL" */
	char problem[224];  /* "SELFCKPT_LEVEL='x' is not a whole number from ... to 22" */
	char instead[40];   /* what the library uses in its place: "1" */
};

#define SC_SETTINGS_BAD_MAX 24 /* at least one per variable read */

struct sc_settings {
	/* checkpoint triggers, as given (NULL: unset or empty); core/trigger.c checks them */
	char *dir;                /* SELFCKPT_DIR */
	char *interval;           /* SELFCKPT_INTERVAL */
	char *signal;             /* SELFCKPT_SIGNAL */
	char *signal_now;         /* SELFCKPT_SIGNAL_NOW */
	bool exit_after_save;     /* SELFCKPT_EXIT_AFTER_SAVE=1 */
	bool leave_out_escaped;   /* SELFCKPT_LEAVE_OUT_ESCAPED=1 */
	int stop_signal;          /* SELFCKPT_STOP_SIGNAL, default SIGRTMAX-2 */

	/* checkpoints */
	int level;                /* SELFCKPT_LEVEL, default 1; 0 stores */
	unsigned threads;         /* SELFCKPT_THREADS; 0: online CPUs */
	unsigned writers;         /* SELFCKPT_WRITERS, default 1 */
	bool writeback;           /* SELFCKPT_WRITEBACK, default on */
	bool embed_files;         /* SELFCKPT_EMBED_FILES=1 */
	bool fork;                /* SELFCKPT_FORK=1 */
	bool no_pagemap_scan;     /* SELFCKPT_NO_PAGEMAP_SCAN=1 */
	unsigned incremental;     /* SELFCKPT_INCREMENTAL: incremental images after a full one, 0-64 */
	enum sc_log_level log_level; /* SELFCKPT_LOG_LEVEL, default warn */

	/* CUDA */
	enum sc_cuda_mode cuda;   /* SELFCKPT_CUDA, default auto */
	unsigned cuda_lock_ms;    /* SELFCKPT_CUDA_LOCK_MS, 1 to 3600000, default 10000 */
	uint64_t cuda_arena;      /* SELFCKPT_CUDA_ARENA: device address of device 0's arena */
	uint64_t cuda_channel;    /* SELFCKPT_CUDA_CHANNEL: host address of the proxy channel */
	uint64_t cuda_pinned_mb;  /* SELFCKPT_CUDA_PINNED_MB */
	enum sc_cuda_capture cuda_capture; /* SELFCKPT_CUDA_CAPTURE, default auto */
	char *proxy;              /* SELFCKPT_PROXY: the GPU proxy program, or NULL */
	char *driver_ckpt;        /* SELFCKPT_DRIVER_CKPT: selfckpt-driver-ckpt, or NULL */

	/* the tools */
	bool new_ids;             /* SELFCKPT_NEW_IDS=1: selfckpt-restore --new-ids */
	char *library;            /* SELFCKPT_LIBRARY: what selfckpt-run preloads, or NULL */

	/* the values that could not be used, in the order read */
	struct sc_setting_bad bad[SC_SETTINGS_BAD_MAX];
	unsigned bad_n;
};

/* Where sc_settings_parse() finds a variable: getenv(), or a test's table. */
typedef const char *(*sc_settings_lookup_fn)(const char *name);

/**
 * sc_settings() - the settings of this process, read from the environment the
 * first time (thread-safe); that first read also sets the log level and warns,
 * once, about each value it cannot use.
 *
 * Return: the settings; never NULL.
 */
const struct sc_settings *sc_settings(void);

/**
 * sc_settings_parse() - read every variable through @lookup into @s, with the
 * defaults for those unset or empty; print nothing.
 * @s: filled; each value that cannot be used is in @s->bad, and its default
 *     in the field. Release with sc_settings_release().
 *
 * Return: 0, or -ENOMEM (@s then holds the defaults only).
 */
int sc_settings_parse(struct sc_settings *s, sc_settings_lookup_fn lookup);

/** sc_settings_release() - free what sc_settings_parse() copied; the fields are zeroed. */
void sc_settings_release(struct sc_settings *s);

/**
 * sc_settings_warn() - one warning for each value of @s that cannot be used,
 * naming the variable, the value and what is used instead.
 */
void sc_settings_warn(const struct sc_settings *s);

/**
 * sc_settings_reload() - read the environment again, for a test that changed it
 * in its own process. Not safe while another thread uses the settings.
 */
void sc_settings_reload(void);

/**
 * sc_settings_follow_restorer() - in a process just restored: take the log
 * level of selfckpt-restore's environment, when it has one (the restart is the
 * restorer's to watch). The other settings stay those of the saved process.
 * Call before sc_restart_env_release().
 */
void sc_settings_follow_restorer(void);

#endif /* SC_SETTINGS_H */
