/* SPDX-License-Identifier: MIT */
/*
 * unix_flight.h - connections to a listening unix socket of the processes
 * being checkpointed that were not accepted yet: what their clients sent is
 * in no process's hands, so no image can hold it (unix_flight_rt.c).
 */
#ifndef SC_UNIX_FLIGHT_H
#define SC_UNIX_FLIGHT_H

#include <stdint.h>

#define SC_FLIGHT_UNKNOWN (-1) /* the kernel's socket diagnostics did not answer */

struct sc_unix_flight {
	int32_t server; /* the process whose listening socket holds them */
	int32_t count;  /* connections queued at the listening sockets of the processes */
};

/**
 * sc_unix_in_flight() - is a connection queued, not accepted yet, at a
 * listening unix socket that one of the processes @pids (@n) holds? Raw:
 * for stopped processes. Return: 1 (which process, how many, in @out), 0, or
 * SC_FLIGHT_UNKNOWN where the kernel did not say (the instant is then taken
 * as it is, and a restore connects such a client again).
 */
int sc_unix_in_flight(const int32_t *pids, int n, struct sc_unix_flight *out);

#endif /* SC_UNIX_FLIGHT_H */
