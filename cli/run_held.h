/* SPDX-License-Identifier: MIT */
/*
 * run_held.h - the trigger signals held blocked from selfckpt-run's exec of
 * the program until the library, loaded in it, can take them.
 */
#ifndef SC_RUN_HELD_H
#define SC_RUN_HELD_H

/**
 * sc_run_hold_triggers() - block @sig_soon and @sig_now (where they are not
 * blocked already) and name them in SELFCKPT_HELD_SIGNALS, for a dynamically
 * linked @prog (as execvp() finds it): a signal sent before the library's
 * start then waits for it instead of ending the program. A program the
 * library cannot enter (static, or not found) is left as it is.
 */
void sc_run_hold_triggers(const char *prog, int sig_soon, int sig_now);

#endif /* SC_RUN_HELD_H */
