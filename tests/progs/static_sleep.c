/* SPDX-License-Identifier: MIT */
/*
 * static_sleep - sleep SECONDS, linked statically: a program the preloaded
 * library cannot enter, so a process that escapes the job (tests/cli/trees.sh).
 */
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned s = argc > 1 ? (unsigned)atoi(argv[1]) : 5;

	while ((s = sleep(s)) > 0)
		;
	return 0;
}
