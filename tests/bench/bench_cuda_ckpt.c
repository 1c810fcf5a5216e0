/* SPDX-License-Identifier: MIT */
/*
 * bench_cuda_ckpt.c - checkpoint and restart of a process that holds N GiB of
 * device memory, against a plain write of as many bytes to the same file
 * system, and against NVIDIA's driver checkpoint on the same data, in one run.
 *
 *   bench-cuda-ckpt [--gib N] [--runs R] [--dir D] [--libcuda LIB] [--module F]
 *                   [--no-driver-ckpt]
 *
 * Each run starts this program again as a subject (`bench-cuda-ckpt subject
 * ...`, linked with libselfckpt, which serves its CUDA calls through the GPU
 * proxy) three times, one per kind of device memory:
 *
 *   random  N GiB from cuMemAlloc() in pieces of at most 1 GiB, filled by
 *           bench_fill with noise from a fixed seed (no compressor shrinks it)
 *   zero    the same allocations, cleared with cuMemsetD8
 *   none    no device memory but the 8 bytes of the checksum: the baseline
 *
 * The subject checksums its device memory with a kernel, times the D2H stage
 * (below), then times selfckpt_save() into an image in the chosen directory
 * and exits. This program then runs `selfckpt-restore IMAGE`: the restored
 * subject synchronises its context, prints a CLOCK_REALTIME stamp, checksums
 * its device memory again and says whether it matches. Figures:
 *
 *   D2H stage       what the library does not log, measured the way it does it:
 *                   cuMemcpyDtoH() of the whole device memory in 8 MiB pieces
 *                   into a ring of 8 cuMemAllocHost() buffers of 8 MiB (memory
 *                   of the channel: the checkpoint's staging buffers are 8 such
 *                   buffers), one after the other; device bytes / time.
 *   checkpoint      selfckpt_save() from call to return (image written, synced
 *                   and renamed); device bytes / time.
 *   restart         from just before the spawn of selfckpt-restore to the
 *                   restored subject's stamp; device bytes / time is the upload
 *                   rate. The image is in the page cache: it was just written.
 *                   The spawn waits until the subject's device memory is free
 *                   again; this program holds a context on the GPU throughout
 *                   (see gpu_hold()).
 *   write floor     pwrite() of the device bytes to a fresh file in the same
 *                   directory, one slice per online CPU, 64 MiB per call, then
 *                   fsync() (the checkpoint syncs its image too); measured in
 *                   each run right after the random case.
 *   driver ckpt     bench-cuda-native-target, an ordinary CUDA program, holds the
 *                   same bytes (same kernel, same seed; its checksum must match
 *                   the subject's). This program loads the driver's libcuda
 *                   (dlopen, RTLD_LOCAL | RTLD_DEEPBIND: its own cu* names, not
 *                   libselfckpt's), calls cuInit() (cuCheckpointProcessRestore
 *                   needs it) and times cuCheckpointProcessLock + ...Checkpoint
 *                   (device memory moved into the target's host memory), then
 *                   ...Restore + ...Unlock, on the target's pid; then the target
 *                   checksums its device memory again.
 *
 *   driver mode     selfckpt's driver-assisted mode on the same target: started
 *                   by selfckpt-run --cuda driver --exit-after-save, then
 *                   SIGUSR2; checkpoint is from the signal to the image named
 *                   by DIR/latest (the driver's checkpoint, then the image with
 *                   the device memory now in host memory, synced, renamed).
 *                   Decode: selfckpt-inspect --verify of that image (every
 *                   chunk decompressed and checked). Restart: from the spawn of
 *                   selfckpt-restore to the restored target's "stamp" (its
 *                   first synchronised CUDA call, after the driver's restore);
 *                   then it checksums its device memory. Targets: checkpoint
 *                   <= the driver's lock + checkpoint + 1.1 x the write floor;
 *                   restart <= the driver's restore + unlock + 1.2 x decode.
 *
 * Medians of the runs, each with its target and PASS or MISS. A restored
 * process whose device memory does not match is reported as such, and makes
 * the exit status 1; so does any failed checkpoint or restart. The driver's
 * checkpoint is a comparison only: when it cannot run, its column says why.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "selfckpt.h"
#include "tests/bench/bench_cuda_data.h"
#include "tests/bench/bench_data.h"

#define DEFAULT_GIB 8.0
#define DEFAULT_RUNS 3u
#define MAX_RUNS 100u
#define MAX_THREADS 256
#define PIECE (64ull << 20)        /* bytes per pwrite() of the floor */
#define FLOOR_SRC_MAX (1ull << 30) /* the floor writes from this many bytes, in turn */
#define STAGE_PIECE (8ull << 20)   /* the D2H stage: piece and ring */
#define STAGE_BUFS 8
#define TIMEOUT_MS (300 * 1000)    /* one child, from spawn to exit; one answer */
#define STOP_MS (60 * 1000)        /* the native target, from "quit" to its end */
#define SHM_DIR "/dev/shm"
#define ROOM_SLACK (512ull << 20)  /* room beyond the image for the choice of dir */
#define EXIT_USAGE 64

/* Targets */
#define TARGET_D2H_GBS 20.0      /* D2H stage, GB/s */
#define TARGET_CKPT_FLOOR 0.90   /* checkpoint rate / floor rate */
#define TARGET_RESTART_GBS 10.0  /* upload rate of the restart, GB/s */
#define TARGET_ZERO_SHARE 0.05   /* zero's time over none / random's time over none */
#define TARGET_ZERO_IMAGE (1ull << 20) /* zero's image over none's, bytes */
#define TARGET_ASD_FLOOR 1.1     /* driver-assisted checkpoint: the driver's + this x floor */
#define TARGET_ASD_DECODE 1.2    /* driver-assisted restart: the driver's + this x decode */

#define STR_(x) #x
#define STR(x) STR_(x)

extern char **environ;

enum kind { K_RANDOM, K_ZERO, K_NONE, K_N };
static const char *const kind_names[K_N] = { "random", "zero", "none" };

enum metric { M_CKPT, M_D2H, M_IMAGE, M_RESTART, M_N };

/* The driver checkpoint's four calls. */
enum drv_step { D_LOCK, D_CKPT, D_RESTORE, D_UNLOCK, D_N };

/* The driver-assisted mode: checkpoint, restart, the decode of its image. */
enum asd_metric { A_CKPT, A_RESTART, A_DECODE, A_IMAGE, A_N };

struct opts {
	uint64_t bytes; /* device memory of the random and zero cases */
	unsigned runs;
	bool driver_ckpt;
	const char *dir; /* NULL: /dev/shm if it has room, else $TMPDIR or /tmp */
	char libcuda[PATH_MAX], module[PATH_MAX];
	char self[PATH_MAX], restore[PATH_MAX], target[PATH_MAX];
	char run[PATH_MAX], inspect[PATH_MAX]; /* for the driver-assisted mode */
};

struct results {
	double v[K_N][M_N][MAX_RUNS], med[K_N][M_N];
	double floor[MAX_RUNS], floor_med;
	uint64_t sum;            /* checksum of the random data */
	unsigned checked[K_N];   /* restores whose device memory matched */
	unsigned bad;            /* restores whose device memory did not */
	/* the driver's checkpoint */
	char drv_why[2 * PATH_MAX]; /* why it did not run, or "" */
	double drv[D_N][MAX_RUNS], drv_med[D_N];
	unsigned drv_runs, drv_checked;
	bool drv_same_data;
	/* selfckpt's driver-assisted mode */
	char asd_why[2 * PATH_MAX];
	double asd[A_N][MAX_RUNS], asd_med[A_N];
	unsigned asd_runs, asd_checked;
};

/* Temporary files, removed at exit and on SIGINT/SIGTERM. */
static char tmp_dir[4096], image_path[4200], floor_path[4200];
static volatile pid_t child_pgid, target_pgid;

/* ---- time ---- */

static int64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static double now(void)
{
	return (double)clock_ns(CLOCK_MONOTONIC) * 1e-9;
}

static double gbs(uint64_t bytes, double secs)
{
	return secs > 0 ? (double)bytes / secs * 1e-9 : 0;
}

/* "8 GiB", "1.5 GiB", "64 MiB": sizes as --gib gives them. */
static const char *size_str(char *buf, size_t n, uint64_t bytes)
{
	if (bytes % (1ull << 30) == 0)
		snprintf(buf, n, "%llu GiB", (unsigned long long)(bytes >> 30));
	else if (bytes >= 1ull << 30)
		snprintf(buf, n, "%.2f GiB", (double)bytes / (1 << 30));
	else
		snprintf(buf, n, "%llu MiB", (unsigned long long)(bytes >> 20));
	return buf;
}

/* ======== the subject: the process that is checkpointed ======== */

#define SCHECK(call) bench_gpu_check((call), "bench-cuda-ckpt subject", #call, __LINE__)

/*
 * The path the checkpoint takes, timed: device memory in 8 MiB pieces into
 * pinned buffers of the channel, one copy after the other.
 */
static double d2h_stage(const struct bench_gpu_data *d)
{
	void *buf[STAGE_BUFS];
	unsigned k = 0;
	double t0;

	for (int i = 0; i < STAGE_BUFS; i++)
		SCHECK(cuMemAllocHost(&buf[i], STAGE_PIECE));
	if (d->n) /* first use of the path, untimed */
		SCHECK(cuMemcpyDtoH(buf[0], d->piece[0], d->len[0] < STAGE_PIECE ?
							    d->len[0] : STAGE_PIECE));
	t0 = now();
	for (unsigned i = 0; i < d->n; i++) {
		for (uint64_t off = 0; off < d->len[i]; off += STAGE_PIECE, k++) {
			uint64_t n = d->len[i] - off < STAGE_PIECE ? d->len[i] - off : STAGE_PIECE;

			SCHECK(cuMemcpyDtoH(buf[k % STAGE_BUFS], d->piece[i] + off, n));
		}
	}
	t0 = now() - t0;
	/* freed: pinned memory in use would be saved with the image */
	for (int i = 0; i < STAGE_BUFS; i++)
		SCHECK(cuMemFreeHost(buf[i]));
	return t0;
}

/* Back from the image: stamp first, then check the data. */
static int subject_restored(struct bench_gpu_data *d, uint64_t want)
{
	uint64_t got;

	SCHECK(cuCtxSynchronize());
	dprintf(STDOUT_FILENO, "restored %lld\n", (long long)clock_ns(CLOCK_REALTIME));
	SCHECK(bench_gpu_checksum(d, &got));
	if (got != want) {
		dprintf(STDOUT_FILENO, "check bad %016llx expected %016llx\n",
			(unsigned long long)got, (unsigned long long)want);
		return 3;
	}
	dprintf(STDOUT_FILENO, "check ok %016llx\n", (unsigned long long)got);
	return 0;
}

/*
 * bench-cuda-ckpt subject KIND BYTES IMAGE MODULE. Output goes out with
 * write(), never buffered: a buffer would travel in the image.
 */
static int subject_main(int argc, char **argv)
{
	static struct bench_gpu_data d;
	int kind = -1, ret;
	uint64_t bytes, want;
	double d2h = 0, t0;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;

	for (int k = 0; k < K_N && argc == 6; k++)
		if (!strcmp(argv[2], kind_names[k]))
			kind = k;
	if (kind < 0) {
		fprintf(stderr, "usage: bench-cuda-ckpt subject random|zero|none BYTES IMAGE "
				"MODULE\n");
		return EXIT_USAGE;
	}
	bytes = kind == K_NONE ? 0 : strtoull(argv[3], NULL, 10);
	SCHECK(cuInit(0));
	SCHECK(cuDeviceGet(&dev, 0));
	SCHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	SCHECK(cuCtxSetCurrent(ctx));
	SCHECK(cuModuleLoad(&mod, argv[5]));
	SCHECK(bench_gpu_alloc(&d, mod, bytes));
	if (bytes)
		SCHECK(bench_gpu_fill(&d, kind == K_RANDOM));
	SCHECK(bench_gpu_checksum(&d, &want));
	if (bytes)
		d2h = d2h_stage(&d);
	t0 = now();
	ret = selfckpt_save(argv[4]);
	if (ret == SELFCKPT_RESTORED)
		return subject_restored(&d, want);
	if (ret != SELFCKPT_SAVED) {
		fprintf(stderr, "bench-cuda-ckpt subject: cannot checkpoint into '%s': %s\n",
			argv[4], selfckpt_last_error());
		return 1;
	}
	dprintf(STDOUT_FILENO, "saved %.6f %.6f %016llx\n", now() - t0, d2h,
		(unsigned long long)want);
	return 0;
}

/* ======== child processes ======== */

static void kill_children(void)
{
	if (child_pgid > 0)
		kill(-child_pgid, SIGKILL);
	if (target_pgid > 0)
		kill(-target_pgid, SIGKILL);
}

static void remove_tmp(void)
{
	DIR *d;
	struct dirent *e;

	kill_children();
	if (!tmp_dir[0])
		return;
	d = opendir(tmp_dir); /* the image, its temporary name, the floor file */
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' && dirfd(d) >= 0)
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	rmdir(tmp_dir);
}

static void on_signal(int sig)
{
	kill_children();
	unlink(image_path); /* unlink, rmdir and kill are async-signal-safe */
	unlink(floor_path);
	rmdir(tmp_dir);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Until a newline (@line) or the end (!@line), with a time limit. */
static int read_until(int fd, char *out, size_t cap, size_t *len, bool line)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (*len < cap - 1 && !(line && *len && out[*len - 1] == '\n')) {
		int r = poll(&p, 1, TIMEOUT_MS);
		ssize_t k;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -ETIMEDOUT;
		k = read(fd, out + *len, line ? 1 : cap - 1 - *len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		*len += (size_t)k;
	}
	out[*len] = '\0';
	return 0;
}

/*
 * @argv in a process group of its own, standard input from @in_fd (-1:
 * /dev/null), standard output into a pipe whose read end goes to *@out_fd.
 * posix_spawn() copies none of this process's page tables.
 */
static int spawn(char *const argv[], int in_fd, int *out_fd, pid_t *pid, int64_t *start_ns)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int p[2], err;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	if (in_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, in_fd, STDIN_FILENO);
	else
		posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&at, 0);
	if (start_ns)
		*start_ns = clock_ns(CLOCK_REALTIME);
	err = -posix_spawn(pid, argv[0], &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(p[1]);
	if (err < 0) {
		close(p[0]);
		return err;
	}
	*out_fd = p[0];
	return 0;
}

/*
 * Run @argv to its end, its standard input from @in_fd (-1: /dev/null): its
 * output (until every holder of the pipe, the GPU proxy too, is gone) into
 * @out, its status into *@status.
 */
static int run_child(char *const argv[], int in_fd, char *out, size_t cap, int *status,
		     int64_t *start_ns)
{
	size_t len = 0;
	int fd, err;
	pid_t pid;

	if ((err = spawn(argv, in_fd, &fd, &pid, start_ns)) < 0)
		return err;
	child_pgid = pid;
	err = read_until(fd, out, cap, &len, false);
	close(fd);
	if (err < 0)
		kill(-pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	child_pgid = 0;
	return err;
}

static void describe_status(char *s, size_t n, int status)
{
	if (WIFSIGNALED(status))
		snprintf(s, n, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(s, n, "exit status %d", WEXITSTATUS(status));
}

/* ======== the selfckpt cases ======== */

/* The subject fills its device memory and checkpoints itself. */
static int run_subject(const struct opts *o, int kind, double *m, uint64_t *sum)
{
	char bytes[32], out[4096], st[64];
	char *argv[] = { (char *)o->self, "subject", (char *)kind_names[kind], bytes, image_path,
			 (char *)o->module, NULL };
	unsigned long long s = 0;
	int status = 0, err;

	snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)o->bytes);
	unlink(image_path);
	err = run_child(argv, -1, out, sizeof(out), &status, NULL);
	describe_status(st, sizeof(st), status);
	if (err < 0 || !WIFEXITED(status) || WEXITSTATUS(status) ||
	    sscanf(out, "saved %lf %lf %llx", &m[M_CKPT], &m[M_D2H], &s) != 3) {
		fprintf(stderr, "bench-cuda-ckpt: the checkpoint of %s failed (%s, %s): expected "
				"'saved' and exit status 0, found '%s'\n", kind_names[kind],
			err < 0 ? strerror(-err) : "ran", st, out);
		return -EIO;
	}
	*sum = s;
	return 0;
}

/*
 * From the spawn of selfckpt-restore to the restored subject's stamp. A
 * restore that brings back the wrong data is timed all the same and reported.
 */
static int run_restore(const struct opts *o, int kind, double *secs, bool *data_ok)
{
	char *argv[] = { (char *)o->restore, image_path, NULL };
	char out[4096], st[64];
	const char *bad;
	long long stamp = 0;
	int status = 0, err;
	int64_t t0;

	err = run_child(argv, -1, out, sizeof(out), &status, &t0);
	describe_status(st, sizeof(st), status);
	*data_ok = strstr(out, "\ncheck ok ") != NULL;
	bad = strstr(out, "\ncheck bad ");
	if (bad && sscanf(out, "restored %lld", &stamp) == 1) {
		fprintf(stderr, "bench-cuda-ckpt: WRONG DATA: the restored %s subject's device "
				"memory does not match what was saved: %s", kind_names[kind],
			bad + 1);
		*secs = (double)(stamp - t0) * 1e-9;
		return 0;
	}
	if (err < 0 || !WIFEXITED(status) || WEXITSTATUS(status) ||
	    sscanf(out, "restored %lld", &stamp) != 1 || !*data_ok) {
		fprintf(stderr, "bench-cuda-ckpt: the restart of %s failed (%s, %s): expected "
				"'restored', 'check ok' and exit status 0, found '%s'\n",
			kind_names[kind], err < 0 ? strerror(-err) : "ran", st, out);
		return -EIO;
	}
	*secs = (double)(stamp - t0) * 1e-9;
	return 0;
}

/* ======== the GPU between runs ======== */

/*
 * This program holds a context on device 0 for its whole run, as
 * nvidia-persistenced keeps the GPUs of cluster nodes initialised: without
 * either, a GPU left idle for a second or two is shut down, and the next
 * cuInit() pays for starting it again. And each restart waits until the device
 * memory of the process before it is given back: a process that has just
 * exited holds its memory while the driver frees it, and a GPU proxy started
 * then takes up to twice as long to start. Neither is a cost of the restart.
 */
#define SETTLE_SLACK (256ull << 20) /* free memory that may still be missing */
#define SETTLE_MAX_S 10.0

static struct {
	__typeof__(cuMemGetInfo) *mem_info;
	size_t idle_free;
} gpu;

static void gpu_hold(const struct opts *o)
{
	__typeof__(cuInit) *init;
	__typeof__(cuDeviceGet) *device_get;
	__typeof__(cuDevicePrimaryCtxRetain) *retain;
	__typeof__(cuCtxSetCurrent) *set_current;
	CUdevice dev;
	CUcontext ctx;
	size_t total;
	/* never closed: the context lives as long as this program */
	void *dl = dlopen(o->libcuda, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);

	if (!dl)
		goto fail;
	init = (__typeof__(init))dlsym(dl, STR(cuInit));
	device_get = (__typeof__(device_get))dlsym(dl, STR(cuDeviceGet));
	retain = (__typeof__(retain))dlsym(dl, STR(cuDevicePrimaryCtxRetain));
	set_current = (__typeof__(set_current))dlsym(dl, STR(cuCtxSetCurrent));
	gpu.mem_info = (__typeof__(gpu.mem_info))dlsym(dl, STR(cuMemGetInfo));
	if (init && device_get && retain && set_current && gpu.mem_info && !init(0) &&
	    !device_get(&dev, 0) && !retain(&ctx, dev) && !set_current(ctx) &&
	    !gpu.mem_info(&gpu.idle_free, &total))
		return;
fail:
	fprintf(stderr, "bench-cuda-ckpt: no context of its own on the GPU ('%s'): restarts "
			"are timed without waiting for the GPU to settle\n", o->libcuda);
	gpu.mem_info = NULL;
}

/* Wait until the device memory free when this program started is free again. */
static void gpu_settle(void)
{
	size_t free_now = 0, total;
	double t0 = now();

	while (gpu.mem_info && !gpu.mem_info(&free_now, &total) &&
	       free_now + SETTLE_SLACK < gpu.idle_free) {
		if (now() - t0 > SETTLE_MAX_S) {
			fprintf(stderr, "bench-cuda-ckpt: %.0f s on, %zu MiB of device memory "
					"are still not free; timing the restart all the same\n",
				SETTLE_MAX_S, (gpu.idle_free - free_now) >> 20);
			return;
		}
		usleep(2000);
	}
}

/* One kind, one run: checkpoint, image size, restart. */
static int run_case(const struct opts *o, int kind, unsigned r, struct results *res)
{
	double m[M_N] = { 0 };
	uint64_t sum = 0;
	struct stat st;
	bool ok = false;
	int err;

	if ((err = run_subject(o, kind, m, &sum)) < 0)
		return err;
	if (stat(image_path, &st) < 0) {
		fprintf(stderr, "bench-cuda-ckpt: cannot stat '%s': %s\n", image_path,
			strerror(errno));
		return -errno;
	}
	m[M_IMAGE] = (double)st.st_size;
	gpu_settle();
	err = run_restore(o, kind, &m[M_RESTART], &ok);
	unlink(image_path);
	if (err < 0)
		return err;
	if (kind == K_RANDOM)
		res->sum = sum;
	res->checked[kind] += ok;
	res->bad += !ok;
	for (int k = 0; k < M_N; k++)
		res->v[kind][k][r] = m[k];
	fprintf(stderr, "  %-6s ckpt %.3f s, D2H stage %.3f s, image %.1f MiB, restart %.3f s, "
			"data %s\n", kind_names[kind], m[M_CKPT], m[M_D2H], m[M_IMAGE] / (1 << 20),
		m[M_RESTART], ok ? "ok" : "WRONG");
	return 0;
}

/* ======== the write floor ======== */

struct slice {
	int fd;
	const uint8_t *src;
	uint64_t src_len, from, to;
	int err;
};

/* pwrite() of [from, to), the source taken round and round. */
static void *write_slice(void *arg)
{
	struct slice *s = arg;

	for (uint64_t off = s->from; off < s->to;) {
		uint64_t at = off % s->src_len, n = s->to - off;
		ssize_t k;

		n = n < PIECE ? n : PIECE;
		n = n < s->src_len - at ? n : s->src_len - at;
		k = pwrite(s->fd, s->src + at, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			s->err = -errno;
			break;
		}
		off += (uint64_t)k;
	}
	return NULL;
}

static long floor_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
}

/* @bytes from @src, one slice per online CPU, to a fresh file, then fsync(). */
static int time_floor(const uint8_t *src, uint64_t src_len, uint64_t bytes, double *secs)
{
	struct slice s[MAX_THREADS];
	pthread_t th[MAX_THREADS];
	bool started[MAX_THREADS];
	long n = floor_threads();
	uint64_t per = (bytes / (uint64_t)n + 4095) & ~4095ull;
	double t0;
	int fd, err = 0;

	unlink(floor_path);
	t0 = now();
	fd = open(floor_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	for (long i = 0; i < n; i++) {
		uint64_t from = per * (uint64_t)i < bytes ? per * (uint64_t)i : bytes;

		s[i] = (struct slice){ fd, src, src_len, from,
				       from + per < bytes ? from + per : bytes, 0 };
		started[i] = !pthread_create(&th[i], NULL, write_slice, &s[i]);
		if (!started[i])
			write_slice(&s[i]); /* no thread: this one writes it */
	}
	for (long i = 0; i < n; i++) {
		if (started[i])
			pthread_join(th[i], NULL);
		if (s[i].err && !err)
			err = s[i].err;
	}
	if (!err && fsync(fd) < 0)
		err = -errno;
	close(fd);
	*secs = now() - t0;
	unlink(floor_path);
	if (err < 0)
		fprintf(stderr, "bench-cuda-ckpt: writing '%s' failed: %s\n", floor_path,
			strerror(-err));
	return err;
}

/* ======== NVIDIA's driver checkpoint ======== */

struct driver_api {
	void *dl;
	__typeof__(cuInit) *init;
	__typeof__(cuGetErrorName) *error_name;
	__typeof__(cuCheckpointProcessLock) *lock;
	__typeof__(cuCheckpointProcessCheckpoint) *checkpoint;
	__typeof__(cuCheckpointProcessRestore) *restore;
	__typeof__(cuCheckpointProcessUnlock) *unlock;
};

/* The driver's own library, its names bound to itself, and cuInit(). */
static int load_driver_api(const struct opts *o, struct driver_api *a, char *why, size_t n)
{
	static const char *const names[] = { STR(cuInit), STR(cuGetErrorName),
		STR(cuCheckpointProcessLock), STR(cuCheckpointProcessCheckpoint),
		STR(cuCheckpointProcessRestore), STR(cuCheckpointProcessUnlock) };
	void **fns[] = { (void **)&a->init, (void **)&a->error_name, (void **)&a->lock,
			 (void **)&a->checkpoint, (void **)&a->restore, (void **)&a->unlock };
	CUresult res;

	a->dl = dlopen(o->libcuda, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	if (!a->dl) {
		snprintf(why, n, "cannot load '%s': %s", o->libcuda, dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		*fns[i] = dlsym(a->dl, names[i]);
		if (!*fns[i]) {
			snprintf(why, n, "'%s' has no %s", o->libcuda, names[i]);
			return -1;
		}
	}
	if ((res = a->init(0)) != CUDA_SUCCESS) {
		const char *name = NULL;

		a->error_name(res, &name);
		snprintf(why, n, "cuInit of '%s' failed: %s", o->libcuda, name ? name : "?");
		return -1;
	}
	return 0;
}

struct target {
	pid_t pid;
	int in, out; /* its standard input and output */
};

/* One answer of the target, a line. */
static int target_line(struct target *t, char *line, size_t cap)
{
	size_t len = 0;
	int err = read_until(t->out, line, cap, &len, true);

	return err < 0 ? err : len ? 0 : -EPIPE;
}

/* @argv, the native target or a program that starts it, until it says "ready". */
static int start_target(char *const argv[], struct target *t, uint64_t *sum, char *why, size_t n)
{
	char line[256];
	unsigned long long s;
	int p[2], err;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	err = spawn(argv, p[0], &t->out, &t->pid, NULL);
	close(p[0]);
	t->in = p[1];
	if (err < 0) {
		close(p[1]);
		snprintf(why, n, "cannot start '%s': %s", argv[0], strerror(-err));
		return err;
	}
	target_pgid = t->pid;
	if ((err = target_line(t, line, sizeof(line))) < 0 ||
	    sscanf(line, "ready %llx", &s) != 1) {
		snprintf(why, n, "'%s' did not get ready (%s): '%s'", argv[0],
			 err < 0 ? strerror(-err) : "bad answer", line);
		return -EIO;
	}
	*sum = s;
	return 0;
}

/* How a target is ended. */
enum stop_how {
	STOP_QUIT,  /* asked to, with "quit" */
	STOP_KILL,  /* at once: one the driver left locked or checkpointed would block */
	STOP_AWAIT, /* it ends by itself (selfckpt-run --exit-after-save) */
};

/* The target ended @how, and the end of its output within STOP_MS: its wait status. */
static int stop_target(struct target *t, enum stop_how how)
{
	struct pollfd p = { .fd = t->out, .events = POLLIN };
	char buf[256];
	int status = 0;

	if (how == STOP_KILL || (how == STOP_QUIT && write(t->in, "quit\n", 5) != 5))
		kill(-t->pid, SIGKILL);
	close(t->in);
	while (poll(&p, 1, STOP_MS) > 0 && read(t->out, buf, sizeof(buf)) > 0)
		;
	kill(-t->pid, SIGKILL); /* gone by now, unless stuck */
	while (waitpid(t->pid, &status, 0) < 0 && errno == EINTR)
		;
	close(t->out);
	target_pgid = 0;
	return status;
}

/* Its device memory checksummed again: true when it matches. */
static int verify_target(struct target *t, bool *ok, char *line, size_t cap)
{
	int err;

	if (write(t->in, "verify\n", 7) != 7)
		return -EPIPE;
	if ((err = target_line(t, line, cap)) < 0)
		return err;
	*ok = !strncmp(line, "ok ", 3);
	return 0;
}

/* Time one call into d[@step]; on failure say which and why, and return. */
#define DRV_CALL(step, fn, call)                                                           \
	do {                                                                               \
		double t_ = now();                                                         \
		CUresult r_ = (call);                                                      \
		d[step] = now() - t_;                                                      \
		if (r_ != CUDA_SUCCESS) {                                                  \
			a->error_name(r_, &name);                                          \
			snprintf(why, n, "%s(%d) failed: %s (%d)", fn, (int)pid,           \
				 name ? name : "unknown error", (int)r_);                  \
			return -EIO;                                                       \
		}                                                                          \
	} while (0)

/* One round: lock, checkpoint, restore, unlock, each timed into @d. */
static int driver_round(struct driver_api *a, pid_t pid, double *d, char *why, size_t n)
{
	CUcheckpointLockArgs lock = { .timeoutMs = 0 }; /* no time limit */
	const char *name = NULL;

	DRV_CALL(D_LOCK, "cuCheckpointProcessLock", a->lock(pid, &lock));
	DRV_CALL(D_CKPT, "cuCheckpointProcessCheckpoint", a->checkpoint(pid, NULL));
	DRV_CALL(D_RESTORE, "cuCheckpointProcessRestore", a->restore(pid, NULL));
	DRV_CALL(D_UNLOCK, "cuCheckpointProcessUnlock", a->unlock(pid, NULL));
	return 0;
}

static void run_driver_ckpt(const struct opts *o, struct results *res)
{
	struct driver_api a = { 0 };
	struct target t = { .in = -1, .out = -1 };
	char line[256], bytes[32];
	char *argv[] = { (char *)o->target, bytes, (char *)o->module, NULL };
	uint64_t sum = 0;

	snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)o->bytes);
	if (load_driver_api(o, &a, res->drv_why, sizeof(res->drv_why)) < 0 ||
	    start_target(argv, &t, &sum, res->drv_why, sizeof(res->drv_why)) < 0)
		goto out;
	res->drv_same_data = sum == res->sum;
	for (unsigned r = 0; r < o->runs; r++) {
		bool ok = false;
		double d[D_N] = { 0 };

		fprintf(stderr, "driver checkpoint, run %u/%u\n", r + 1, o->runs);
		if (driver_round(&a, t.pid, d, res->drv_why, sizeof(res->drv_why)) < 0)
			break;
		if (verify_target(&t, &ok, line, sizeof(line)) < 0) {
			snprintf(res->drv_why, sizeof(res->drv_why), "the target did not answer "
				 "after the restore");
			break;
		}
		if (!ok)
			fprintf(stderr, "bench-cuda-ckpt: the driver-restored target's device "
					"memory does not match: %s", line);
		res->drv_checked += ok;
		for (int k = 0; k < D_N; k++)
			res->drv[k][res->drv_runs] = d[k];
		res->drv_runs++;
		fprintf(stderr, "  lock %.3f s, checkpoint %.3f s, restore %.3f s, unlock %.3f s, "
				"data %s\n", d[D_LOCK], d[D_CKPT], d[D_RESTORE], d[D_UNLOCK],
			ok ? "ok" : "WRONG");
	}
	if (res->drv_why[0] && res->drv_runs)
		fprintf(stderr, "bench-cuda-ckpt: driver checkpoint: %s\n", res->drv_why);
out:
	if (t.pid > 0)
		stop_target(&t, res->drv_why[0] ? STOP_KILL : STOP_QUIT);
	if (a.dl)
		dlclose(a.dl);
}

/* ======== selfckpt's driver-assisted mode ======== */

#define EXIT_AFTER_SAVE 75 /* selfckpt-run --exit-after-save, after the checkpoint */

static void tmp_file(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%.4000s/%s", tmp_dir, name);
}

/* The image DIR/latest names, and DIR/latest. */
static void remove_assisted_image(void)
{
	char latest[4200], name[PATH_MAX], image[4200 + PATH_MAX];
	ssize_t k;

	tmp_file(latest, sizeof(latest), "latest");
	k = readlink(latest, name, sizeof(name) - 1);
	if (k > 0) {
		name[k] = '\0';
		if (name[0] == '/')
			snprintf(image, sizeof(image), "%s", name);
		else
			snprintf(image, sizeof(image), "%s/%s", tmp_dir, name);
		unlink(image);
	}
	unlink(latest);
}

/* Until DIR/latest exists: 1 ms polls, while the target lives. */
static int wait_for_latest(pid_t pid, char *why, size_t n)
{
	char latest[4200];
	struct stat st;
	double t0 = now();

	tmp_file(latest, sizeof(latest), "latest");
	while (lstat(latest, &st) < 0) {
		if (waitpid(pid, NULL, WNOHANG) != 0) { /* ended, or no child of ours */
			snprintf(why, n, "the target ended without an image");
			return -EIO;
		}
		if (now() - t0 > TIMEOUT_MS / 1000.0) {
			snprintf(why, n, "no image within %d s of SIGUSR2", TIMEOUT_MS / 1000);
			return -ETIMEDOUT;
		}
		usleep(1000);
	}
	return 0;
}

/*
 * The native target under selfckpt-run --cuda driver --exit-after-save, with
 * the same bytes as the subject; SIGUSR2 once it is ready. Checkpoint: from
 * the signal to DIR/latest (the image written, synced and renamed).
 */
static int assisted_checkpoint(const struct opts *o, struct results *res, double *m)
{
	char bytes[32], st[64], *why = res->asd_why;
	char *argv[] = { (char *)o->run, "--cuda", "driver", "--dir", tmp_dir, "--exit-after-save",
			 "--", (char *)o->target, bytes, (char *)o->module, NULL };
	struct target t = { .in = -1, .out = -1 };
	size_t n = sizeof(res->asd_why);
	uint64_t sum = 0;
	double t0;
	int err, status;

	snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)o->bytes);
	remove_assisted_image();
	if ((err = start_target(argv, &t, &sum, why, n)) < 0) {
		if (t.pid > 0)
			stop_target(&t, STOP_KILL);
		return err;
	}
	if (sum != res->sum) {
		snprintf(why, n, "the target's data differ from the subject's (%016llx, not %016llx)",
			 (unsigned long long)sum, (unsigned long long)res->sum);
		stop_target(&t, STOP_KILL);
		return -EIO;
	}
	t0 = now();
	kill(t.pid, SIGUSR2);
	if ((err = wait_for_latest(t.pid, why, n)) < 0) {
		stop_target(&t, STOP_KILL);
		return err;
	}
	m[A_CKPT] = now() - t0;
	status = stop_target(&t, STOP_AWAIT);
	if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_AFTER_SAVE)
		return 0;
	describe_status(st, sizeof(st), status);
	snprintf(why, n, "the checkpointed target ended with %s, not exit status %d", st,
		 EXIT_AFTER_SAVE);
	return -EIO;
}

/* selfckpt-inspect --verify IMAGE: every chunk decoded; it must say driver-assisted. */
static int assisted_decode(const struct opts *o, struct results *res, double *m)
{
	char latest[4200], out[16384], st[64];
	char *argv[] = { (char *)o->inspect, "--verify", latest, NULL };
	int status = 0, err;
	int64_t t0;
	struct stat sb;

	tmp_file(latest, sizeof(latest), "latest");
	if (stat(latest, &sb) == 0)
		m[A_IMAGE] = (double)sb.st_size;
	err = run_child(argv, -1, out, sizeof(out), &status, &t0);
	m[A_DECODE] = (double)(clock_ns(CLOCK_REALTIME) - t0) * 1e-9;
	if (err < 0 || !WIFEXITED(status) || WEXITSTATUS(status) ||
	    !strstr(out, "driver-assisted")) {
		describe_status(st, sizeof(st), status);
		snprintf(res->asd_why, sizeof(res->asd_why), "selfckpt-inspect --verify of the "
			 "image: %s, %s%s", err < 0 ? strerror(-err) : "ran", st,
			 strstr(out, "driver-assisted") ? "" : ", not a driver-assisted image");
		return -EIO;
	}
	return 0;
}

/*
 * selfckpt-restore DIR/latest, its standard input holding "stamp", "verify"
 * and "quit" for the restored target. Restart: from the spawn to the stamp
 * (the restored process's first synchronised CUDA call).
 */
static int assisted_restart(const struct opts *o, struct results *res, double *m, bool *ok)
{
	static const char cmds[] = "stamp\nverify\nquit\n";
	char latest[4200], out[4096], st[64];
	char *argv[] = { (char *)o->restore, latest, NULL };
	long long stamp = 0;
	unsigned long long got = 0;
	int p[2], status = 0, err;
	int64_t t0;

	tmp_file(latest, sizeof(latest), "latest");
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	if (write(p[1], cmds, sizeof(cmds) - 1) != (ssize_t)sizeof(cmds) - 1) {
		close(p[0]);
		close(p[1]);
		return -EIO;
	}
	close(p[1]);
	gpu_settle();
	err = run_child(argv, p[0], out, sizeof(out), &status, &t0);
	close(p[0]);
	if (err < 0 || !WIFEXITED(status) || WEXITSTATUS(status) ||
	    sscanf(out, "stamp %lld\n%*s %llx", &stamp, &got) != 2) {
		describe_status(st, sizeof(st), status);
		snprintf(res->asd_why, sizeof(res->asd_why), "the restart failed (%s, %s): expected "
			 "'stamp', 'ok' and exit status 0, found '%s'", err < 0 ? strerror(-err) :
			 "ran", st, out);
		return -EIO;
	}
	*ok = strstr(out, "\nok ") && got == res->sum;
	if (!*ok)
		fprintf(stderr, "bench-cuda-ckpt: WRONG DATA: the driver-assisted restore's device "
				"memory does not match what was saved: %s", out);
	m[A_RESTART] = (double)(stamp - t0) * 1e-9;
	return 0;
}

/* Each run: checkpoint, decode, restart; the first failure ends them, and says why. */
static void run_assisted(const struct opts *o, struct results *res)
{
	for (unsigned r = 0; r < o->runs; r++) {
		double m[A_N] = { 0 };
		bool ok = false;

		fprintf(stderr, "driver-assisted mode, run %u/%u\n", r + 1, o->runs);
		if (assisted_checkpoint(o, res, m) < 0 || assisted_decode(o, res, m) < 0 ||
		    assisted_restart(o, res, m, &ok) < 0)
			break;
		res->asd_checked += ok;
		res->bad += !ok;
		for (int k = 0; k < A_N; k++)
			res->asd[k][res->asd_runs] = m[k];
		res->asd_runs++;
		fprintf(stderr, "  checkpoint %.3f s, image %.1f MiB, decode %.3f s, restart %.3f s, "
				"data %s\n", m[A_CKPT], m[A_IMAGE] / (1 << 20), m[A_DECODE],
			m[A_RESTART], ok ? "ok" : "WRONG");
	}
	remove_assisted_image();
	if (res->asd_why[0])
		fprintf(stderr, "bench-cuda-ckpt: driver-assisted mode: %s\n", res->asd_why);
}

/* ======== report ======== */

static const char *mark(bool ok)
{
	return ok ? "PASS" : "MISS";
}

static void medians(const struct opts *o, struct results *res)
{
	for (int k = 0; k < K_N; k++)
		for (int m = 0; m < M_N; m++)
			res->med[k][m] = bench_median(res->v[k][m], o->runs);
	res->floor_med = bench_median(res->floor, o->runs);
	for (int s = 0; s < D_N && res->drv_runs; s++)
		res->drv_med[s] = bench_median(res->drv[s], res->drv_runs);
	for (int a = 0; a < A_N && res->asd_runs; a++)
		res->asd_med[a] = bench_median(res->asd[a], res->asd_runs);
}

/* @v formatted, or "-" when there is no figure. */
static const char *cell(char *buf, size_t n, bool have, const char *fmt, double v)
{
	if (have)
		snprintf(buf, n, fmt, v);
	else
		snprintf(buf, n, "-");
	return buf;
}

static void print_cases(const struct opts *o, const struct results *res)
{
	char size[32], rate[32];

	printf("\n%-8s %10s %9s %12s %10s %9s  %s\n", "memory", "device", "ckpt s",
	       "image MiB", "restart s", "GB/s", "restored data");
	for (int k = 0; k < K_N; k++) {
		uint64_t dev = k == K_NONE ? 0 : o->bytes;

		printf("%-8s %10s %9.3f %12.1f %10.3f %9s  %u/%u ok\n", kind_names[k],
		       size_str(size, sizeof(size), dev), res->med[k][M_CKPT],
		       res->med[k][M_IMAGE] / (1 << 20), res->med[k][M_RESTART],
		       cell(rate, sizeof(rate), dev, "%.2f", gbs(dev, res->med[k][M_RESTART])),
		       res->checked[k], o->runs);
	}
	printf("write floor: %s by pwrite() on %ld threads, then fsync(): %.3f s (%.2f GB/s)\n",
	       size_str(size, sizeof(size), o->bytes), floor_threads(), res->floor_med,
	       gbs(o->bytes, res->floor_med));
}

static void print_targets(const struct opts *o, const struct results *res)
{
	const double *rnd = res->med[K_RANDOM], *zero = res->med[K_ZERO], *none = res->med[K_NONE];
	double d2h = gbs(o->bytes, rnd[M_D2H]), ckpt = gbs(o->bytes, rnd[M_CKPT]);
	double flr = gbs(o->bytes, res->floor_med), up = gbs(o->bytes, rnd[M_RESTART]);
	double zc = zero[M_CKPT] - none[M_CKPT], rc = rnd[M_CKPT] - none[M_CKPT];
	double zr = zero[M_RESTART] - none[M_RESTART], rr = rnd[M_RESTART] - none[M_RESTART];
	double zi = zero[M_IMAGE] - none[M_IMAGE];
	char f[64];

	printf("\n%-40s %-34s %-14s %s\n", "target", "measured", "wanted", "");
	snprintf(f, sizeof(f), "%.2f GB/s (%.3f s)", d2h, rnd[M_D2H]);
	printf("%-40s %-34s >= %-11.0f %s\n", "D2H stage, GB/s", f, TARGET_D2H_GBS,
	       mark(d2h >= TARGET_D2H_GBS));
	snprintf(f, sizeof(f), "x%.3f (%.2f vs %.2f GB/s)", ckpt / flr, ckpt, flr);
	printf("%-40s %-34s >= x%-10.2f %s\n", "whole checkpoint / write floor", f,
	       TARGET_CKPT_FLOOR, mark(ckpt >= TARGET_CKPT_FLOOR * flr));
	/* The upload is the restart's time beyond that of the same program with no
	 * device memory (process restore, proxy start, cuInit): that one is printed too. */
	snprintf(f, sizeof(f), "%.2f GB/s (%.3f s)", gbs(o->bytes, rr), rr);
	printf("%-40s %-34s >= %-11.0f %s\n", "restart upload, GB/s", f, TARGET_RESTART_GBS,
	       mark(rr > 0 && gbs(o->bytes, rr) >= TARGET_RESTART_GBS));
	snprintf(f, sizeof(f), "%.2f GB/s (%.3f s)", up, rnd[M_RESTART]);
	printf("%-40s %-34s    %-11s %s\n", "  whole restart, device bytes / time", f, "", "");
	snprintf(f, sizeof(f), "%+.3f s = %.1f%% of random's", zc, rc > 0 ? 100 * zc / rc : 0);
	printf("%-40s %-34s <= %-11s %s\n", "all-zero: checkpoint time over none", f, "5%",
	       mark(rc > 0 && zc <= TARGET_ZERO_SHARE * rc));
	snprintf(f, sizeof(f), "%+.1f KiB", zi / 1024);
	printf("%-40s %-34s <  %-11s %s\n", "all-zero: image size over none", f, "1 MiB",
	       mark(zi < (double)TARGET_ZERO_IMAGE));
	snprintf(f, sizeof(f), "%+.3f s = %.1f%% of random's", zr, rr > 0 ? 100 * zr / rr : 0);
	printf("%-40s %-34s <= %-11s %s\n", "all-zero: restart time over none", f, "5%",
	       mark(rr > 0 && zr <= TARGET_ZERO_SHARE * rr));
}

/* The driver-assisted mode against the driver's own checkpoint and restore, same run. */
static void print_assisted_targets(const struct results *res)
{
	const double *asd = res->asd_med;
	double dc = res->drv_med[D_LOCK] + res->drv_med[D_CKPT];
	double dr = res->drv_med[D_RESTORE] + res->drv_med[D_UNLOCK];
	double want_ckpt = dc + TARGET_ASD_FLOOR * res->floor_med;
	double want_restart = dr + TARGET_ASD_DECODE * asd[A_DECODE];
	char f[64], w[64];

	if (!res->asd_runs || !res->drv_runs)
		return;
	printf("\n%-40s %-12s %-36s %s\n", "driver mode target", "measured", "wanted", "");
	snprintf(w, sizeof(w), "<= %.3f s = %.3f + %.1f x floor %.3f", want_ckpt, dc,
		 TARGET_ASD_FLOOR, res->floor_med);
	snprintf(f, sizeof(f), "%.3f s", asd[A_CKPT]);
	printf("%-40s %-12s %-36s %s\n", "checkpoint <= driver's + 1.1 x floor", f, w,
	       mark(asd[A_CKPT] <= want_ckpt));
	snprintf(w, sizeof(w), "<= %.3f s = %.3f + %.1f x decode %.3f", want_restart, dr,
		 TARGET_ASD_DECODE, asd[A_DECODE]);
	snprintf(f, sizeof(f), "%.3f s", asd[A_RESTART]);
	printf("%-40s %-12s %-36s %s\n", "restart <= driver's + 1.2 x decode", f, w,
	       mark(asd[A_RESTART] <= want_restart));
}

static void print_side_by_side(const struct opts *o, const struct results *res)
{
	const double *rnd = res->med[K_RANDOM], *asd = res->asd_med;
	double dc = res->drv_med[D_LOCK] + res->drv_med[D_CKPT];
	double dr = res->drv_med[D_RESTORE] + res->drv_med[D_UNLOCK];
	bool drv = res->drv_runs > 0, as = res->asd_runs > 0;
	char a[32], b[32], c[32], title[64];

	snprintf(title, sizeof(title), "%s of random device memory", size_str(a, sizeof(a),
									       o->bytes));
	printf("\n%-31s %12s %21s %21s %21s\n", title, "selfckpt D2H", "selfckpt proxy mode",
	       "cuCheckpointProcess", "selfckpt driver mode");
	printf("%-31s %12.3f %21.3f %21s %21s\n", "checkpoint, s", rnd[M_D2H], rnd[M_CKPT],
	       cell(a, sizeof(a), drv, "%.3f", dc), cell(b, sizeof(b), as, "%.3f", asd[A_CKPT]));
	printf("%-31s %12.2f %21.2f %21s %21s\n", "checkpoint, GB/s", gbs(o->bytes, rnd[M_D2H]),
	       gbs(o->bytes, rnd[M_CKPT]), cell(a, sizeof(a), drv, "%.2f", gbs(o->bytes, dc)),
	       cell(b, sizeof(b), as, "%.2f", gbs(o->bytes, asd[A_CKPT])));
	printf("%-31s %12s %21.3f %21s %21s\n", "restore, s", "-", rnd[M_RESTART],
	       cell(a, sizeof(a), drv, "%.3f", dr), cell(b, sizeof(b), as, "%.3f", asd[A_RESTART]));
	printf("%-31s %12s %21.2f %21s %21s\n", "restore, GB/s", "-", gbs(o->bytes, rnd[M_RESTART]),
	       cell(a, sizeof(a), drv, "%.2f", gbs(o->bytes, dr)),
	       cell(b, sizeof(b), as, "%.2f", gbs(o->bytes, asd[A_RESTART])));
	printf("%-31s %12s %21.1f %21s %21s\n", "image, MiB", "-", rnd[M_IMAGE] / (1 << 20), "-",
	       cell(b, sizeof(b), as, "%.1f", asd[A_IMAGE] / (1 << 20)));
	snprintf(a, sizeof(a), "%u/%u", res->checked[K_RANDOM], o->runs);
	snprintf(b, sizeof(b), "%u/%u", res->drv_checked, res->drv_runs);
	snprintf(c, sizeof(c), "%u/%u", res->asd_checked, res->asd_runs);
	printf("%-31s %12s %21s %21s %21s\n", "restored data matches", "-", a, drv ? b : "-",
	       as ? c : "-");
	if (drv)
		printf("cuCheckpointProcess: checkpoint = lock %.3f + checkpoint %.3f s (device "
		       "memory into the target's\nhost memory); restore = restore %.3f + unlock "
		       "%.3f s; same data as the subject's: %s\n", res->drv_med[D_LOCK],
		       res->drv_med[D_CKPT], res->drv_med[D_RESTORE], res->drv_med[D_UNLOCK],
		       res->drv_same_data ? "yes (checksums match)" : "NO (checksums differ)");
	if (res->drv_why[0])
		printf("cuCheckpointProcess: %s%s\n", drv ? "stopped early: " : "not measured: ",
		       res->drv_why);
	if (res->asd_why[0])
		printf("driver mode: %s%s\n", as ? "stopped early: " : "not measured: ",
		       res->asd_why);
	print_assisted_targets(res);
}

static void print_notes(const struct opts *o)
{
	printf("\nmedians of the runs (%u). D2H stage: measured in the subject, not by the library: "
	       "cuMemcpyDtoH of its\ndevice memory in %llu MiB pieces into %d cuMemAllocHost "
	       "buffers in turn (the path and piece\nsize of the checkpoint's download). "
	       "Checkpoint: selfckpt_save(), image written, synced, renamed.\nRestart: spawn "
	       "of selfckpt-restore to the restored process's first synchronised CUDA call.\n"
	       "GB/s: device bytes (10^9) per second; net: over the time the restart of the "
	       "no-memory baseline\ntakes less. all-zero targets: what zeroed memory adds "
	       "to the no-memory baseline, against\nwhat random memory adds.\nThis program holds a "
	       "context on the GPU throughout (as nvidia-persistenced would), and starts\neach "
	       "restart once the device memory of the process before it is free again.\n", o->runs,
	       STAGE_PIECE >> 20, STAGE_BUFS);
}

/* ======== setup ======== */

static void usage(FILE *f)
{
	fprintf(f, "usage: bench-cuda-ckpt [--gib N] [--runs N] [--dir D] [--libcuda LIB] "
		   "[--module FILE]\n                       [--no-driver-ckpt]\n"
		   "  --gib N           GiB of device memory, may be fractional (default %.0f)\n"
		   "  --runs N          runs of each case, median printed (default %u)\n"
		   "  --dir D           where the image and the floor file go (default %s if it "
		   "has room,\n"
		   "                    else $TMPDIR or /tmp)\n"
		   "  --libcuda LIB     the driver's library, for cuCheckpointProcess* (default "
		   "libcuda.so.1)\n"
		   "  --module FILE     the kernels (default bench_kernels.fatbin next to this "
		   "program)\n"
		   "  --no-driver-ckpt  leave out the driver's process checkpoint: "
		   "cuCheckpointProcess* alone\n"
		   "                    and selfckpt's driver-assisted mode\n"
		   "Needs ../bin/selfckpt-restore and ../bin/selfckpt-gpu-proxy, and "
		   "bench-cuda-native-target next\nto this program (make bench-cuda-progs); the "
		   "driver-assisted mode also ../bin/selfckpt-run\nand ../bin/selfckpt-inspect.\n",
		DEFAULT_GIB, DEFAULT_RUNS, SHM_DIR);
}

static void bad_option(const char *opt, const char *s, const char *want)
{
	fprintf(stderr, "bench-cuda-ckpt: bad %s '%s': expected %s\n", opt, s, want);
	exit(EXIT_USAGE);
}

static uint64_t parse_gib(const char *s)
{
	char *end;
	double g;

	errno = 0;
	g = strtod(s, &end);
	if (errno || end == s || *end || !(g >= 1.0 / 1024) || g > 1024)
		bad_option("--gib", s, "a number from 1/1024 to 1024");
	return (uint64_t)(g * 1024) << 20; /* whole MiB */
}

static void copy_path(char *dst, const char *src)
{
	if (strlen(src) >= PATH_MAX)
		bad_option("path", src, "a shorter one");
	strcpy(dst, src);
}

static void parse_opts(struct opts *o, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "help", no_argument, NULL, 'h' }, { "gib", required_argument, NULL, 'g' },
		{ "runs", required_argument, NULL, 'r' }, { "dir", required_argument, NULL, 'd' },
		{ "libcuda", required_argument, NULL, 'c' },
		{ "module", required_argument, NULL, 'k' },
		{ "no-driver-ckpt", no_argument, NULL, 'n' }, { NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	o->bytes = (uint64_t)(DEFAULT_GIB * 1024) << 20;
	o->runs = DEFAULT_RUNS;
	o->driver_ckpt = true;
	strcpy(o->libcuda, "libcuda.so.1");
	while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		switch (c) {
		case 'h': usage(stdout); exit(0);
		case 'g': o->bytes = parse_gib(optarg); break;
		case 'r':
			errno = 0;
			o->runs = (unsigned)strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || !o->runs || o->runs > MAX_RUNS)
				bad_option("--runs", optarg, "1..100");
			break;
		case 'd': o->dir = optarg; break;
		case 'c': copy_path(o->libcuda, optarg); break;
		case 'k': copy_path(o->module, optarg); break;
		case 'n': o->driver_ckpt = false; break;
		default: usage(stderr); exit(EXIT_USAGE);
		}
	}
	if (optind < argc) {
		usage(stderr);
		exit(EXIT_USAGE);
	}
}

/* This program, selfckpt-restore in ../bin, the native target and the module next to it. */
static int find_programs(struct opts *o)
{
	char self[PATH_MAX], proxy[PATH_MAX + 64], *dir;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0) {
		fprintf(stderr, "bench-cuda-ckpt: cannot read /proc/self/exe: %s\n", strerror(errno));
		return -1;
	}
	self[n] = '\0';
	strcpy(o->self, self);
	dir = dirname(self);
	snprintf(o->restore, sizeof(o->restore), "%.4000s/../bin/selfckpt-restore", dir);
	snprintf(o->run, sizeof(o->run), "%.4000s/../bin/selfckpt-run", dir);
	snprintf(o->inspect, sizeof(o->inspect), "%.4000s/../bin/selfckpt-inspect", dir);
	snprintf(proxy, sizeof(proxy), "%.4000s/../bin/selfckpt-gpu-proxy", dir);
	snprintf(o->target, sizeof(o->target), "%.4000s/bench-cuda-native-target", dir);
	if (!o->module[0])
		snprintf(o->module, sizeof(o->module), "%.4000s/bench_kernels.fatbin", dir);
	if (access(o->restore, X_OK) || (access(proxy, X_OK) && !getenv("SELFCKPT_PROXY")) ||
	    access(o->module, R_OK)) {
		fprintf(stderr, "bench-cuda-ckpt: expected '%s', '%s' and '%s': build them with "
				"make bench-cuda-progs\n", o->restore, proxy, o->module);
		return -1;
	}
	if (o->driver_ckpt && (access(o->target, X_OK) || access(o->run, X_OK) ||
			       access(o->inspect, X_OK))) {
		fprintf(stderr, "bench-cuda-ckpt: expected '%s', '%s' and '%s' (or --no-driver-ckpt): "
				"build them with make bench-cuda-progs tools\n", o->target, o->run,
			o->inspect);
		return -1;
	}
	return 0;
}

static double free_gib(const char *dir)
{
	struct statvfs sv;

	if (statvfs(dir, &sv) < 0)
		return -1;
	return (double)sv.f_bavail * (double)sv.f_frsize / (1 << 30);
}

/* /dev/shm when the image fits there, else $TMPDIR or /tmp; says which and why. */
static const char *pick_dir(const struct opts *o)
{
	double need = (double)(o->bytes + o->bytes / 32 + ROOM_SLACK) / (1 << 30);
	const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	double shm = free_gib(SHM_DIR), other;

	if (o->dir) {
		printf("files in '%s' (--dir: %.1f GiB free)\n", o->dir, free_gib(o->dir));
		return o->dir;
	}
	if (shm >= need) {
		printf("files in %s (%.1f GiB free, %.1f needed)\n", SHM_DIR, shm, need);
		return SHM_DIR;
	}
	other = free_gib(tmp);
	printf("files in %s: %s has %.1f GiB free, %.1f needed (%s: %.1f GiB free%s)\n", tmp,
	       SHM_DIR, shm < 0 ? 0 : shm, need, tmp, other,
	       other < need ? ", NOT ENOUGH" : "");
	return tmp;
}

/* A private directory for the image and the floor file, removed at exit. */
static int make_tmp(const char *dir)
{
	if ((size_t)snprintf(tmp_dir, sizeof(tmp_dir), "%s/bench-cuda-ckpt-XXXXXX", dir) >=
		    sizeof(tmp_dir) ||
	    !mkdtemp(tmp_dir)) {
		fprintf(stderr, "bench-cuda-ckpt: cannot create a directory in '%s': %s\n", dir,
			strerror(errno));
		tmp_dir[0] = 0;
		return -1;
	}
	snprintf(image_path, sizeof(image_path), "%s/image.sckpt", tmp_dir);
	snprintf(floor_path, sizeof(floor_path), "%s/floor", tmp_dir);
	atexit(remove_tmp);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	return 0;
}

/* What the floor writes, round and round: at most 1 GiB of noise, faulted in. */
static uint8_t *floor_source(uint64_t bytes, uint64_t *len)
{
	void *p;

	*len = bytes < FLOOR_SRC_MAX ? bytes : FLOOR_SRC_MAX;
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		 -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "bench-cuda-ckpt: out of memory for %llu MiB\n",
			(unsigned long long)(*len >> 20));
		return NULL;
	}
	bench_gen_random(p, *len);
	return p;
}

static void print_header(const struct opts *o)
{
	const char *level = getenv("SELFCKPT_LEVEL");

	char size[32];

	printf("bench-cuda-ckpt: %s of device memory, runs: %u, online CPUs: %ld, "
	       "SELFCKPT_LEVEL=%s\n", size_str(size, sizeof(size), o->bytes), o->runs,
	       floor_threads(), level && *level ? level : "1 (default)");
}

static int run_all(const struct opts *o, struct results *res)
{
	uint64_t src_len;
	uint8_t *src = floor_source(o->bytes, &src_len);

	if (!src)
		return -1;
	gpu_hold(o);
	for (unsigned r = 0; r < o->runs; r++) {
		fprintf(stderr, "run %u/%u\n", r + 1, o->runs);
		if (run_case(o, K_RANDOM, r, res) < 0 ||
		    time_floor(src, src_len, o->bytes, &res->floor[r]) < 0)
			return -1;
		fprintf(stderr, "  floor  %.3f s\n", res->floor[r]);
		if (run_case(o, K_ZERO, r, res) < 0 || run_case(o, K_NONE, r, res) < 0)
			return -1;
	}
	munmap(src, src_len);
	if (o->driver_ckpt) {
		run_driver_ckpt(o, res);
		if (res->drv_runs)
			run_assisted(o, res);
		else
			snprintf(res->asd_why, sizeof(res->asd_why), "needs the driver's process "
				 "checkpoint, which did not run");
	} else {
		snprintf(res->drv_why, sizeof(res->drv_why), "--no-driver-ckpt");
		snprintf(res->asd_why, sizeof(res->asd_why), "--no-driver-ckpt");
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct results res;
	struct opts o = { 0 };

	if (argc > 1 && !strcmp(argv[1], "subject"))
		return subject_main(argc, argv);
	parse_opts(&o, argc, argv);
	if (find_programs(&o) < 0)
		return 1;
	print_header(&o);
	if (make_tmp(pick_dir(&o)) < 0)
		return 1;
	fflush(stdout);
	unsetenv("SELFCKPT_FORK"); /* the whole checkpoint within selfckpt_save() */
	if (run_all(&o, &res) < 0)
		return 1;
	medians(&o, &res);
	print_cases(&o, &res);
	print_targets(&o, &res);
	print_side_by_side(&o, &res);
	print_notes(&o);
	if (res.bad)
		printf("\nWRONG DATA: %u restored process%s found device memory that does not "
		       "match what was saved\n", res.bad, res.bad > 1 ? "es" : "");
	return res.bad ? 1 : 0;
}
