/* SPDX-License-Identifier: MIT */
/*
 * resumable.c - a long kernel a checkpoint does not wait for: each iteration
 * is one resumable launch (selfckpt_kernel.h) over the rows of a 1024 x 1024
 * grid of words, each word mixed RESUMABLE_ROUNDS times (default 4096: about
 * a quarter of a second a launch on an H100), the output the next input.
 *
 * A checkpoint asked for during a launch (a signal, or --save-at's
 * selfckpt_save() between launches) stops the kernel at its next row; the
 * launch goes on from there once the checkpoint is taken, and again in a
 * process restored from that image: the checksums are those of a run never
 * interrupted. The native twin launches the same kernel plainly, once: with
 * no flag to read, it does every row in one go.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "selfckpt_kernel.h"

#define W 1024
#define H 1024
#define DEFAULT_ROUNDS 4096

static int rounds_wanted(void)
{
	const char *v = getenv("RESUMABLE_ROUNDS");
	long r = v ? strtol(v, NULL, 10) : DEFAULT_ROUNDS;

	if (r < 1 || r > 1 << 30) {
		fprintf(stderr, "resumable: RESUMABLE_ROUNDS wants 1 to %d, not '%s'\n", 1 << 30, v);
		exit(64);
	}
	return (int)r;
}

/* Every row of @params' grid, the work counter in @work. */
static void launch_rows(CUfunction fn, unsigned blocks, CUstream st, void **params,
			CUdeviceptr work)
{
#ifdef SAMPLE_NATIVE
	struct selfckpt_work w = { 0, H, NULL, 0 };

	CHECK(cuMemcpyHtoD(work, &w, sizeof(w)));
	CHECK(cuLaunchKernel(fn, blocks, 1, 1, 256, 1, 1, 0, st, params, NULL));
	CHECK(cuStreamSynchronize(st));
#else
	CHECK(selfckpt_launch_resumable(fn, blocks, 1, 1, 256, 1, 1, 0, st, params, work, H));
#endif
}

int main(int argc, char **argv)
{
	struct sample s;
	CUmodule mod;
	CUfunction fn;
	CUstream st;
	CUdeviceptr in, out, work;
	size_t bytes = (size_t)W * H * 4;
	unsigned *host = malloc(bytes);
	int w = W, h = H, rounds = rounds_wanted(), sms = 0;

	if (!host) {
		fprintf(stderr, "resumable: out of memory\n");
		return 1;
	}
	sample_init(&s, argc, argv, "resumable", 0);
	mod = sample_load_module(&s);
	CHECK(cuModuleGetFunction(&fn, mod, "mix_rows"));
	CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, s.dev));
	for (size_t i = 0; i < (size_t)W * H; i++)
		host[i] = (unsigned)(i * 2654435761u);
	CHECK(cuMemAlloc(&in, bytes));
	CHECK(cuMemAlloc(&out, bytes));
	CHECK(cuMemAlloc(&work, SELFCKPT_WORK_BYTES));
	CHECK(cuMemcpyHtoD(in, host, bytes));
	CHECK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));

	for (long it = 1; it <= s.iters; it++) {
		void *params[] = { &in, &out, &w, &h, &rounds, &work };
		CUdeviceptr t;

		launch_rows(fn, (unsigned)(sms > 0 ? sms * 2 : 1), st, params, work);
		CHECK(cuMemcpyDtoH(host, out, bytes));
		t = in; /* the output is the next iteration's input */
		in = out;
		out = t;
		sample_iteration_done(&s, it, sample_hash(SAMPLE_HASH_INIT, host, bytes));
	}

	CHECK(cuMemFree(in));
	CHECK(cuMemFree(out));
	CHECK(cuMemFree(work));
	free(host);
	return sample_finish(&s);
}
