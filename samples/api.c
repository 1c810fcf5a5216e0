/* SPDX-License-Identifier: MIT */
/*
 * api.c - the library API: a program that checkpoints itself.
 *
 *   cc api.c $(pkg-config --cflags --libs selfckpt) -o api
 *   ./api job.sckpt          # saves at step 5, goes on to step 10
 *   selfckpt-restore job.sckpt   # comes back at step 5 and finishes again
 */
#include <selfckpt.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	const char *image = argc > 1 ? argv[1] : "api.sckpt";
	unsigned long long state = 1;

	for (int step = 1; step <= 10; step++) {
		state = state * 6364136223846793005ull + 1442695040888963407ull;
		printf("step %d: state %016llx\n", step, state);
		fflush(stdout);
		if (step != 5)
			continue;
		switch (selfckpt_save(image)) {
		case SELFCKPT_SAVED:
			printf("checkpoint written to %s\n", image);
			break;
		case SELFCKPT_RESTORED:
			printf("restored from %s: carrying on\n", image);
			break;
		default:
			fprintf(stderr, "checkpoint failed: %s\n", selfckpt_last_error());
			return 1;
		}
	}
	return 0;
}
