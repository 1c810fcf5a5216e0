/* SPDX-License-Identifier: MIT */
/*
 * The CUDA samples (samples/cuda) on the software CUDA device: each checkpointed
 * by selfckpt_save(), by SIGUSR1 and by SIGUSR2 (unmodified, -lcuda builds
 * under selfckpt-run), killed, restored twice, checkpointed again once
 * restored - samples/cuda/gpu-test.sh --soft, one sample per test. On a GPU
 * the same script runs as `make gpu-test`; here the device is a test double.
 * The samples need nvcc to build; without it these tests are skipped, saying so.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* gpu-test.sh --soft of sample @name, with @env (VAR=value ..., or "") set for it. */
static void run_sample_in(const char *name, const char *env)
{
	const char *build = getenv("SELFCKPT_BUILD") ? getenv("SELFCKPT_BUILD") : "build";
	char prog[4096], cmd[8192];
	FILE *p;
	int status;

	snprintf(prog, sizeof(prog), "%s/samples/cuda/%s", build, name);
	if (access(prog, X_OK) != 0)
		cr_skip_test("%s is not built (no nvcc?): make cuda-samples cuda-soft-samples",
			     prog);
	cr_assert_eq(access("samples/cuda/gpu-test.sh", R_OK), 0,
		     "samples/cuda/gpu-test.sh not found: run the tests from the source tree "
		     "(make test does)");
	snprintf(cmd, sizeof(cmd), "%s GPU_TEST_SAMPLES=%s sh samples/cuda/gpu-test.sh %s --soft 2>&1",
		 env, name, build);
	p = popen(cmd, "r");
	cr_assert(p, "cannot run %s", cmd);
	{
		static char out[1 << 16];
		size_t n = fread(out, 1, sizeof(out) - 1, p);

		out[n] = 0;
		status = pclose(p);
		cr_assert_eq(status, 0, "gpu-test.sh --soft for %s failed:\n%s", name, out);
	}
}

static void run_sample(const char *name)
{
	run_sample_in(name, "");
}

TestSuite(cuda_samples, .timeout = 300);

Test(cuda_samples, vecadd)
{
	run_sample("vecadd");
}

Test(cuda_samples, matmul)
{
	run_sample("matmul");
}

Test(cuda_samples, texrotate)
{
	run_sample("texrotate");
}

Test(cuda_samples, solver)
{
	run_sample("solver");
}

/* A GPU process and the two CPU-only workers it forks: a job, checkpointed by the signals. */
Test(cuda_samples, loader)
{
	run_sample("loader");
}

/* Memory the program reserves, creates, maps twice and gives access to itself. */
Test(cuda_samples, vmm)
{
	run_sample("vmm");
}

/* A graph built node by node, one captured from two streams, and an executable graph changed. */
Test(cuda_samples, graph)
{
	run_sample("graph");
}

/* Two devices of the software device, peer access both ways, kernels and copies across them. */
Test(cuda_samples, peer)
{
	run_sample_in("peer", "SOFTCUDA_DEVICES=2");
}

/* Managed memory the CPU and the kernels take turns at, with advice and prefetches. */
Test(cuda_samples, managed)
{
	run_sample("managed");
}

/* A few rounds a word: the software device runs the kernel on the CPU. */
Test(cuda_samples, resumable)
{
	run_sample_in("resumable", "RESUMABLE_ROUNDS=4");
}
