/* SPDX-License-Identifier: MIT */
/*
 * test_cuda_capture.c - a checkpoint copies device memory aside at its
 * instant and lets the program's CUDA calls go on while it writes the image
 * (cuda/lib/gpu_capture.c), on the software device: the calls made during
 * the write finish before the image is in place, the image holds the device
 * memory of the instant however the program changes it meanwhile, and an
 * allocation that finds the device full while the copy is held waits for it.
 * The same with the copy in pinned host memory, where the device has no room
 * or SELFCKPT_CUDA_CAPTURE=host asks for it. With SELFCKPT_CUDA_CAPTURE=off
 * the calls wait for the whole write.
 */
#include <criterion/criterion.h>
#include <cuda.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/sc_settings.h"
#include "selfckpt.h"
#include "tests/cuda/cuda_api_harness.h"

TestSuite(cuda_capture, .init = sc_test_use_software_device, .timeout = 90);

#define PIECE (8u << 20) /* one staging buffer: the checkpoint's unit */
#define PIECES 16
#define WAIT_S 30

static struct {
	const char *image;
	CUcontext ctx;
	CUdeviceptr buf, small;
	size_t alloc_bytes;    /* what the call during the write allocates; 0: a memset */
	CUresult during;       /* the result of the call during the write */
	int image_was_there;   /* the image was in place when that call returned */
	pthread_mutex_t lock;  /* the instant test: the piece being written and its number */
	uint32_t last;         /* the last number written, under lock */
} t = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The checkpoint is writing its image: its temporary file is there. */
static bool writing(const char *image)
{
	char pattern[4200];
	glob_t g;
	bool found;

	snprintf(pattern, sizeof(pattern), "%s.selfckpt-tmp.*", image);
	found = glob(pattern, 0, NULL, &g) == 0;
	if (found)
		globfree(&g);
	return found;
}

static void pause_briefly(void)
{
	nanosleep(&(struct timespec){ 0, 100000 }, NULL);
}

static uint64_t noise(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t fnv(const uint64_t *w, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ w[i]) * 1099511628211ull;
	return h;
}

/* PIECES pieces of noise, which no compressor shrinks: the write takes a while. */
static int fill_with_noise(uint64_t *sum)
{
	size_t n = (size_t)PIECE * PIECES / 8;
	uint64_t *h = malloc(n * 8), s = 88172645463325252ull;
	int err;

	if (!h)
		return 1;
	for (size_t i = 0; i < n; i++)
		h[i] = noise(&s);
	*sum = fnv(h, n);
	err = cuMemAlloc(&t.buf, (size_t)PIECE * PIECES) || cuMemcpyHtoD(t.buf, h, n * 8);
	free(h);
	return err;
}

static int device_sum(uint64_t *sum)
{
	size_t n = (size_t)PIECE * PIECES / 8;
	uint64_t *h = malloc(n * 8);

	if (!h || cuMemcpyDtoH(h, t.buf, n * 8))
		return 1;
	*sum = fnv(h, n);
	free(h);
	return 0;
}

/* Once the image is being written, one CUDA call; was the image in place when it returned? */
static void *call_during_write(void *arg)
{
	CUdeviceptr extra = 0;
	time_t until = time(NULL) + WAIT_S;

	(void)arg;
	cuCtxSetCurrent(t.ctx);
	while (!writing(t.image) && time(NULL) < until)
		pause_briefly();
	if (t.alloc_bytes)
		t.during = cuMemAlloc(&extra, t.alloc_bytes);
	else if ((t.during = cuMemsetD32(t.small, 7, 1)) == CUDA_SUCCESS)
		t.during = cuCtxSynchronize();
	t.image_was_there = access(t.image, F_OK) == 0;
	if (extra)
		cuMemFree(extra);
	return NULL;
}

/* Exit 0 where the call during the write returned before the image was in place, 1 after. */
static int save_with_a_call_during_the_write(const char *image)
{
	pthread_t th;
	uint64_t sum;

	t.image = image;
	t.ctx = sc_test_start();
	if (fill_with_noise(&sum) || cuMemAlloc(&t.small, 4096) ||
	    pthread_create(&th, NULL, call_during_write, NULL))
		return 2;
	if (selfckpt_save(image) != SELFCKPT_SAVED || pthread_join(th, NULL))
		return 3;
	if (t.during != CUDA_SUCCESS)
		return 4;
	return t.image_was_there;
}

Test(cuda_capture, the_programs_calls_go_on_while_the_image_is_written)
{
	char dir[] = "/tmp/sc-capture-XXXXXX", image[64];
	int status;

	status = sc_test_exit_in_dir(save_with_a_call_during_the_write, dir, image, sizeof(image));

	cr_assert_eq(status, 0, "exit %d (1: the call waited for the image, 2-4: see the "
		     "program)", status);
	sc_test_remove_dir(dir);
}

static void capture(const char *where)
{
	setenv("SELFCKPT_CUDA_CAPTURE", where, 1);
	sc_settings_reload();
}

static int save_with_capture_off(const char *image)
{
	capture("off");
	return save_with_a_call_during_the_write(image);
}

static int save_with_capture_to_host(const char *image)
{
	capture("host");
	return save_with_a_call_during_the_write(image);
}

Test(cuda_capture, the_calls_go_on_with_the_copy_in_host_memory)
{
	char dir[] = "/tmp/sc-capture-XXXXXX", image[64];
	int status;

	status = sc_test_exit_in_dir(save_with_capture_to_host, dir, image, sizeof(image));

	cr_assert_eq(status, 0, "exit %d (1: the call waited for the image, 2-4: see the "
		     "program)", status);
	sc_test_remove_dir(dir);
}

/* 400 MiB: 128 MiB in use, and the copy would leave less than the 256 MiB spare. */
static int save_with_no_room_on_the_device(const char *image)
{
	char log[4200];
	int fd;

	snprintf(log, sizeof(log), "%s.log", image);
	if ((fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0 || dup2(fd, 2) < 0)
		return 5;
	setenv("SOFTCUDA_MEMORY", "400", 1);
	setenv("SELFCKPT_LOG_LEVEL", "debug", 1);
	sc_settings_reload();
	return save_with_a_call_during_the_write(image);
}

/* Whether @file holds @text. */
static bool file_says(const char *file, const char *text)
{
	static char buf[1 << 20];
	FILE *f = fopen(file, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = 0;
	return strstr(buf, text) != NULL;
}

Test(cuda_capture, without_room_on_the_device_the_copy_goes_to_host_memory)
{
	char dir[] = "/tmp/sc-capture-XXXXXX", image[64], log[80];
	int status;

	status = sc_test_exit_in_dir(save_with_no_room_on_the_device, dir, image, sizeof(image));
	snprintf(log, sizeof(log), "%s.log", image);

	cr_assert_eq(status, 0, "exit %d (1: the call waited for the image, 2-4: see the "
		     "program)", status);
	cr_assert(file_says(log, "copied aside, to host memory"), "see %s", log);
	sc_test_remove_dir(dir);
}

Test(cuda_capture, with_capture_off_the_calls_wait_for_the_image)
{
	char dir[] = "/tmp/sc-capture-XXXXXX", image[64];
	int status;

	status = sc_test_exit_in_dir(save_with_capture_off, dir, image, sizeof(image));

	cr_assert_eq(status, 1, "exit %d (0: the call went on during the write, 2-4: see the "
		     "program)", status);
	sc_test_remove_dir(dir);
}

/* 1200 MiB: the copy of 128 MiB leaves room; an allocation of 1000 MiB fits only without it. */
static int save_while_the_device_is_full(const char *image)
{
	setenv("SOFTCUDA_MEMORY", "1200", 1);
	t.alloc_bytes = 1000u << 20;
	return save_with_a_call_during_the_write(image);
}

Test(cuda_capture, an_allocation_that_finds_the_device_full_waits_for_the_copy)
{
	char dir[] = "/tmp/sc-capture-XXXXXX", image[64];
	int status;

	status = sc_test_exit_in_dir(save_while_the_device_is_full, dir, image, sizeof(image));

	cr_assert_eq(status, 1, "exit %d (0: the allocation did not wait for the copy to be "
		     "freed, 4: it failed, 2-3: see the program)", status);
	sc_test_remove_dir(dir);
}

static int restored_noise(const char *image)
{
	uint64_t sum, now;
	int r;

	t.image = image;
	t.ctx = sc_test_start();
	if (fill_with_noise(&sum) || cuMemAlloc(&t.small, 4096))
		return 2;
	r = selfckpt_save(image);
	if (r == SELFCKPT_SAVED)
		return 0;
	if (r != SELFCKPT_RESTORED || device_sum(&now))
		return 3;
	return now == sum ? 42 : 4;
}

static int restored_noise_from_host(const char *image)
{
	capture("host");
	return restored_noise(image);
}

Test(cuda_capture, device_memory_written_from_its_copy_in_host_memory_comes_back)
{
	char dir[] = "/tmp/sc-capture-XXXXXX";
	int status = sc_test_exit_after_restore(restored_noise_from_host, dir);

	cr_assert_eq(status, 42, "restored: exit %d (4: the device memory differs; see %s/out)",
		     status, dir);
	sc_test_remove_dir(dir);
}

Test(cuda_capture, device_memory_written_from_its_copy_comes_back)
{
	char dir[] = "/tmp/sc-capture-XXXXXX";
	int status = sc_test_exit_after_restore(restored_noise, dir);

	cr_assert_eq(status, 42, "restored: exit %d (4: the device memory differs; see %s/out)",
		     status, dir);
	sc_test_remove_dir(dir);
}

/*
 * Until the image is in place, write number k into piece k % PIECES, then
 * note k: at any instant the thread is not inside that pair, piece p holds
 * the last number written to it. An image that read a piece after the
 * instant holds a number larger than the one noted.
 */
static void *number_pieces(void *arg)
{
	(void)arg;
	cuCtxSetCurrent(t.ctx);
	for (uint32_t k = 1; access(t.image, F_OK) != 0; k++) {
		pthread_mutex_lock(&t.lock);
		if (cuMemsetD32(t.buf + (size_t)(k % PIECES) * PIECE, k, PIECE / 4) ||
		    cuCtxSynchronize()) {
			pthread_mutex_unlock(&t.lock);
			return NULL;
		}
		t.last = k;
		pthread_mutex_unlock(&t.lock);
	}
	return NULL;
}

/* Every piece holds the last number written to it, by t.last (0: none yet). */
static bool pieces_agree(void)
{
	uint32_t *h = malloc(PIECE);
	bool ok = h != NULL;

	for (uint32_t p = 0; p < PIECES && ok; p++) {
		uint32_t want = t.last >= p ? t.last - (t.last - p) % PIECES : 0;
		size_t i = 0;

		ok = cuMemcpyDtoH(h, t.buf + (size_t)p * PIECE, PIECE) == CUDA_SUCCESS;
		while (ok && i < PIECE / 4 && h[i] == want)
			i++;
		if (ok && i < PIECE / 4) {
			fprintf(stderr, "piece %u holds %u at word %zu, not %u (the last number "
				"%u)\n", p, h[i], i, want, t.last);
			ok = false;
		}
	}
	free(h);
	return ok;
}

static int restored_as_at_the_instant(const char *image)
{
	pthread_t th;
	int r;

	t.image = image;
	t.ctx = sc_test_start();
	if (cuMemAlloc(&t.buf, (size_t)PIECE * PIECES) ||
	    cuMemsetD32(t.buf, 0, (size_t)PIECE * PIECES / 4) || cuCtxSynchronize() ||
	    pthread_create(&th, NULL, number_pieces, NULL))
		return 2;
	while (t.last < 2 * PIECES) /* every piece numbered, and going on */
		pause_briefly();
	r = selfckpt_save(image);
	if (r == SELFCKPT_SAVED)
		return pthread_join(th, NULL) ? 3 : 0;
	/* restored: the thread writes one number more at most, then sees the image */
	if (r != SELFCKPT_RESTORED || pthread_join(th, NULL))
		return 3;
	return pieces_agree() ? 42 : 4;
}

Test(cuda_capture, the_image_holds_device_memory_as_it_was_at_the_instant)
{
	char dir[] = "/tmp/sc-capture-XXXXXX";
	int status = sc_test_exit_after_restore(restored_as_at_the_instant, dir);

	cr_assert_eq(status, 42, "restored: exit %d (4: a piece was read after the instant; "
		     "see %s/out)", status, dir);
	sc_test_remove_dir(dir);
}

static int restored_as_at_the_instant_from_host(const char *image)
{
	capture("host");
	return restored_as_at_the_instant(image);
}

Test(cuda_capture, the_image_holds_device_memory_as_it_was_at_the_instant_from_host_memory)
{
	char dir[] = "/tmp/sc-capture-XXXXXX";
	int status = sc_test_exit_after_restore(restored_as_at_the_instant_from_host, dir);

	cr_assert_eq(status, 42, "restored: exit %d (4: a piece was read after the instant; "
		     "see %s/out)", status, dir);
	sc_test_remove_dir(dir);
}
