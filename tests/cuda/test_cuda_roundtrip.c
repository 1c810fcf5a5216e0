/* SPDX-License-Identifier: MIT */
/*
 * CUDA round trips on the software CUDA device (tests/softcuda), zdtm style
 * (tests/core/roundtrip_harness.h): tests/progs/cuda_state runs for a
 * reference, checkpoints and kills itself, is restored twice and checkpointed
 * again once restored; its output, which digests every piece of GPU state,
 * must equal the reference bit for bit. The library, the proxy, the arena, the
 * handles, the replay and the device-memory records all run for real; the
 * device is a test double and proves nothing about GPUs (make gpu-test does).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/core/roundtrip_harness.h"

static char kernels[4096];

/* The proxy and the device it loads come from the build under test. */
static void use_software_device(void)
{
	const char *build = getenv("SELFCKPT_BUILD") ? getenv("SELFCKPT_BUILD") : "build";
	char path[4096];

	snprintf(path, sizeof(path), "%s/tests/libsoftcuda.so.1", build);
	cr_assert(realpath(path, kernels), "no software device at %s: run make test-progs", path);
	setenv("SELFCKPT_LIBCUDA", kernels, 1);
	snprintf(path, sizeof(path), "%s/bin/selfckpt-gpu-proxy", build);
	cr_assert(realpath(path, kernels), "no GPU proxy at %s", path);
	setenv("SELFCKPT_PROXY", kernels, 1);
	snprintf(path, sizeof(path), "%s/tests/progs/libcuda-kernels.so", build);
	cr_assert(realpath(path, kernels), "no kernel library at %s", path);
	unsetenv("SOFTCUDA_GLOBAL_SHIFT");
}

Test(roundtrip, cuda_state)
{
	use_software_device();
	roundtrip("cuda_state", (const char *[]){ kernels, NULL });
}

Test(roundtrip, cuda_state_new_ids)
{
	use_software_device();
	roundtrip_ids("cuda_state", (const char *[]){ kernels, NULL }, true);
}

/* An image the tests below restore under changed conditions. */
static void make_image(void)
{
	const char *argv[MAX_ARGS];
	struct run r;

	prog_argv(argv, "cuda_state", in_base("ck/img.sckpt"), in_base("ck"),
		  (const char *[]){ kernels, NULL });
	run(argv, &r);
	expect_killed(&r, "cuda_state checkpoint");
	run_free(&r);
}

/* A module global the driver puts elsewhere: pointers to it would be wrong. */
Test(roundtrip, cuda_global_moved_is_refused)
{
	use_software_device();
	make_image();
	setenv("SOFTCUDA_GLOBAL_SHIFT", "4096", 1);
	expect_refused(in_base("ck/img.sckpt"), 69, "'counter'", "moved module global");
}

/* No GPU where the image is restored: the restart fails with the reason. */
Test(roundtrip, cuda_no_device_is_refused)
{
	use_software_device();
	make_image();
	setenv("SOFTCUDA_DEVICES", "0", 1);
	expect_refused(in_base("ck/img.sckpt"), 69, "GPU", "no device");
}

/*
 * cuda_state freed 192 MiB of pinned host memory before its checkpoint; what it
 * still holds (64 KiB) lies in the heap's first 64 MiB piece. A restart pins
 * the staging buffers and that piece: two cuMemHostRegister calls. A third,
 * which would pin freed memory again, fails the restart.
 */
Test(roundtrip, cuda_freed_pinned_memory_is_not_pinned_again)
{
	const char *argv[] = { restorer(), in_base("ck/img.sckpt"), NULL };
	struct run r;

	use_software_device();
	make_image();
	setenv("SOFTCUDA_FAIL", "cuMemHostRegister:3", 1);
	run(argv, &r);
	unsetenv("SOFTCUDA_FAIL");
	expect_exit(&r, 0, "the restored cuda_state");
	cr_assert(strstr(r.out, "step 6:"), "the restored cuda_state did not finish:\n%s", r.out);
	run_free(&r);
}

/*
 * Allocated bytes only: cuda_state's 3 MiB block (a 4 MiB block of the arena),
 * and of its slabs the slots in use that hold data: b (1000 bytes: a 1024-byte
 * slot), p (16 bytes) and out (256 bytes), 256-byte slots. Not the block's
 * padding, not the freed slot that still held data, not the slabs' free slots.
 */
Test(roundtrip, cuda_image_holds_allocated_bytes_only)
{
	const char *build = getenv("SELFCKPT_BUILD") ? getenv("SELFCKPT_BUILD") : "build";
	const unsigned long long want = (3ull << 20) + 1024 + 256 + 256;
	unsigned long long got = 0;
	char cmd[8192];
	FILE *f;

	use_software_device();
	make_image();
	snprintf(cmd, sizeof(cmd), "%s/bin/selfckpt-inspect --json %s | python3 -c "
		 "'import json,sys; print(json.load(sys.stdin)[\"cuda\"][\"devmem\"][\"device\"])'",
		 build, in_base("ck/img.sckpt"));
	f = popen(cmd, "r");
	cr_assert(f, "cannot run: %s", cmd);
	cr_assert_eq(fscanf(f, "%llu", &got), 1, "no device byte count from: %s", cmd);
	cr_assert_eq(pclose(f), 0, "%s failed", cmd);
	cr_assert_eq(got, want, "the image holds %llu bytes of device memory, the live "
		     "allocations %llu", got, want);
}
