/* SPDX-License-Identifier: MIT */
/*
 * sc_exiting.h - no checkpoint starts once the program is exiting.
 */
#ifndef SC_EXITING_H
#define SC_EXITING_H

#include <stdbool.h>

/**
 * sc_exiting_watch() - from the first call on, exit() marks the process as
 * exiting, then calls @wait_idle, which must return once no checkpoint is
 * under way. Call it before each checkpoint begins; later calls change nothing.
 */
void sc_exiting_watch(void (*wait_idle)(void));

/** sc_exiting() - has the process begun to exit? */
bool sc_exiting(void);

/**
 * sc_exiting_refuse() - for a checkpoint to @path that has just begun (it
 * holds the one-checkpoint-at-a-time token): 0, or an error when the process
 * is exiting. The error is kept for selfckpt_last_error() and logged at info
 * level only: a trigger that fires during exit is no failure of the program.
 * Return: 0 or -ECANCELED.
 */
int sc_exiting_refuse(const char *path);

#endif /* SC_EXITING_H */
