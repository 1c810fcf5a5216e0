/* SPDX-License-Identifier: MIT */
/*
 * proxy_main.c - selfckpt-gpu-proxy: the one process of a job that loads the
 * CUDA driver. The library starts it at cuInit and talks to it through the
 * channel (channel.h); the application process never holds a GPU descriptor
 * or mapping, so it can be checkpointed as plain memory.
 *
 *   selfckpt-gpu-proxy CHANNEL_FD CHANNEL_ADDRESS APP_PID
 *   selfckpt-gpu-proxy --query
 *   selfckpt-gpu-proxy --help
 *
 * --query prints one line per device, "device ORDINAL MAJOR.MINOR NAME", and
 * exits 0; or the reason on standard error and exits 69 (EX_UNAVAILABLE) where
 * there is no driver or no device. selfckpt-restore asks it before a restart.
 *
 * Its address-space layout is made deterministic (ASLR off, where the system
 * allows it): addresses the driver picks by itself, such as module globals,
 * follow it, and a restarted job must see the same ones. It exits when the
 * application does.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cuda/shared/channel.h"
#include "cuda/proxy/proxy_internal.h"
#include "format/sc_log.h"

#define SPIN_NS 50000 /* how long to poll for the next request before sleeping */

void *sc_proxy_channel;

static void fail_start(struct sc_ch_header *h, int status, const char *why)
{
	fprintf(stderr, "selfckpt-gpu-proxy: %s\n", why);
	if (!h)
		exit(1);
	snprintf(h->proxy_error, sizeof(h->proxy_error), "%s", why);
	__atomic_store_n(&h->proxy_status, status ? status : CUDA_ERROR_UNKNOWN,
			 __ATOMIC_RELEASE);
	__atomic_store_n(&h->proxy_ready, 1, __ATOMIC_RELEASE);
	sc_ch_wake(&h->proxy_ready);
	exit(1);
}

/* Re-run with ASLR off, once; carry on as we are where that is refused. */
static void make_layout_deterministic(char **argv)
{
	int cur = personality(0xffffffff);

	if (cur < 0 || (cur & ADDR_NO_RANDOMIZE) || getenv("SELFCKPT_PROXY_ASLR"))
		return;
	if (personality((unsigned long)cur | ADDR_NO_RANDOMIZE) < 0)
		return;
	execv("/proc/self/exe", argv);
	personality((unsigned long)cur); /* could not re-run: go on with ASLR */
}

static void *map_channel(int fd, uint64_t addr)
{
	struct stat st;
	void *p;

	if (fstat(fd, &st) < 0)
		fail_start(NULL, 0, "cannot read the channel descriptor");
	p = mmap((void *)addr, (size_t)st.st_size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	if (p == MAP_FAILED || p != (void *)addr) {
		fprintf(stderr, "selfckpt-gpu-proxy: cannot map the channel at 0x%llx: %s\n",
			(unsigned long long)addr, strerror(errno));
		exit(1);
	}
	close(fd);
	return p;
}

/* The proxy never outlives its application. */
static void *watch_application(void *arg)
{
	pid_t app = (pid_t)(intptr_t)arg;
	int pidfd = (int)syscall(SYS_pidfd_open, app, 0);

	if (pidfd >= 0) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };

		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	while (kill(app, 0) == 0 || errno == EPERM)
		usleep(200000);
	_exit(0);
}

static void start_watcher(pid_t app)
{
	pthread_t t;

	if (pthread_create(&t, NULL, watch_application, (void *)(intptr_t)app) != 0)
		fail_start(NULL, 0, "cannot start the watcher thread");
	pthread_detach(t);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wait until ticket @t is READY: poll a while, then sleep on the doorbell. */
static struct sc_ch_slot *next_request(void *base, uint32_t t)
{
	struct sc_ch_header *h = sc_ch_header(base);
	struct sc_ch_slot *s = sc_ch_slot(base, t);
	uint64_t start = 0;

	for (;;) {
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == SC_SLOT_READY &&
		    __atomic_load_n(&s->ticket, __ATOMIC_RELAXED) == t)
			return s;
		if (!start)
			start = now_ns();
		if (now_ns() - start < SPIN_NS) {
			__builtin_ia32_pause();
			continue;
		}
		uint32_t bell = __atomic_load_n(&h->doorbell, __ATOMIC_ACQUIRE);

		__atomic_store_n(&h->proxy_sleeps, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&s->state, __ATOMIC_SEQ_CST) != SC_SLOT_READY)
			sc_ch_wait(&h->doorbell, bell, 1000);
		__atomic_store_n(&h->proxy_sleeps, 0, __ATOMIC_RELAXED);
		start = 0;
	}
}

static void finish_request(void *base, struct sc_ch_slot *s, uint32_t t)
{
	struct sc_ch_header *h = sc_ch_header(base);

	if (s->flags & SC_MSG_ASYNC) {
		bool drain = s->flags & SC_MSG_DRAIN;
		int32_t *error = drain ? &h->drain_error : &h->sticky_error;

		if (s->result != CUDA_SUCCESS && __atomic_load_n(error, __ATOMIC_RELAXED) == 0) {
			*(drain ? &h->drain_op : &h->sticky_op) = s->op;
			__atomic_store_n(error, s->result, __ATOMIC_RELEASE);
		}
		__atomic_store_n(&s->state, SC_SLOT_FREE, __ATOMIC_RELAXED);
		__atomic_store_n(&s->turn, t + SC_CH_SLOTS, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&h->turn_waiters, __ATOMIC_SEQ_CST))
			sc_ch_wake(&s->turn);
		return;
	}
	__atomic_store_n(&s->state, SC_SLOT_DONE, __ATOMIC_RELEASE);
	if (__atomic_load_n(&s->waiting, __ATOMIC_SEQ_CST))
		sc_ch_wake(&s->state);
}

static void serve(void *base)
{
	struct sc_ch_header *h = sc_ch_header(base);
	uint32_t t = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);

	for (;; t++) {
		struct sc_ch_slot *s = next_request(base, t);

		sc_proxy_handle(s);
		__atomic_store_n(&h->tail, t + 1, __ATOMIC_RELEASE);
		finish_request(base, s, t);
	}
}

#define QUERY_UNAVAILABLE 69

static int query_failed(const char *call, CUresult r)
{
	const char *name = NULL;

	sc_drv.cuGetErrorName(r, &name);
	fprintf(stderr, "selfckpt-gpu-proxy: %s failed: %s\n", call, name ? name : "unknown error");
	return QUERY_UNAVAILABLE;
}

/* The devices and their compute capabilities, for a restart to check its modules. */
static int query_devices(const char *driver)
{
	int n = 0, major, minor;
	char why[512], name[256];
	CUresult r;
	CUdevice d;

	if (sc_driver_load(driver, why, sizeof(why)) < 0) {
		fprintf(stderr, "selfckpt-gpu-proxy: %s\n", why);
		return QUERY_UNAVAILABLE;
	}
	if ((r = sc_drv.cuInit(0)) != CUDA_SUCCESS)
		return query_failed("cuInit", r);
	if ((r = sc_drv.cuDeviceGetCount(&n)) != CUDA_SUCCESS)
		return query_failed("cuDeviceGetCount", r);
	if (n <= 0) {
		fprintf(stderr, "selfckpt-gpu-proxy: the CUDA driver '%s' sees no device\n",
			driver);
		return QUERY_UNAVAILABLE;
	}
	for (int i = 0; i < n; i++) {
		if ((r = sc_drv.cuDeviceGet(&d, i)) != CUDA_SUCCESS ||
		    (r = sc_drv.cuDeviceGetAttribute(&major,
				CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d)) != CUDA_SUCCESS ||
		    (r = sc_drv.cuDeviceGetAttribute(&minor,
				CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d)) != CUDA_SUCCESS ||
		    (r = sc_drv.cuDeviceGetName(name, sizeof(name), d)) != CUDA_SUCCESS)
			return query_failed("reading a device's properties", r);
		printf("device %d %d.%d %s\n", i, major, minor, name);
	}
	return fflush(stdout) ? QUERY_UNAVAILABLE : 0;
}

static int print_help(void)
{
	fputs("Usage: selfckpt-gpu-proxy --query\n"
	      "       selfckpt-gpu-proxy CHANNEL_FD CHANNEL_ADDRESS APP_PID\n"
	      "The GPU proxy of selfckpt: the one process of a CUDA job that loads the CUDA\n"
	      "driver. libselfckpt starts it at cuInit, in the second form, and forwards every\n"
	      "CUDA call of the program to it; that form is not for interactive use.\n"
	      "\n"
	      "  --query  load the driver, initialise it and print one line per GPU it sees,\n"
	      "           \"device ORDINAL MAJOR.MINOR NAME\" (the compute capability), then exit\n"
	      "           0; with no driver, no GPU or a driver error, print the reason on\n"
	      "           standard error and exit 69. It changes nothing on the GPUs.\n"
	      "           selfckpt-restore runs it before it restores a CUDA program, to refuse\n"
	      "           an image whose modules have no code for these GPUs.\n"
	      "  --help   print this help and exit\n"
	      "\n"
	      "SELFCKPT_LIBCUDA names the driver library (default libcuda.so.1);\n"
	      "CUDA_VISIBLE_DEVICES chooses the GPUs the driver shows.\n", stdout);
	return fflush(stdout) ? 74 : 0;
}

int main(int argc, char **argv)
{
	const char *driver = getenv("SELFCKPT_LIBCUDA");
	char why[512];
	struct sc_ch_header *h;
	void *base;
	CUresult r;

	/* Its own program, without the library's settings: the format code logs at this level. */
	sc_log_set_level(sc_log_level_parse(getenv("SELFCKPT_LOG_LEVEL")));
	if (argc == 2 && !strcmp(argv[1], "--query"))
		return query_devices(driver && *driver ? driver : "libcuda.so.1");
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return print_help();
	if (argc != 4) {
		fprintf(stderr, "usage: selfckpt-gpu-proxy CHANNEL_FD CHANNEL_ADDRESS APP_PID\n"
				"(started by libselfckpt at cuInit; not for interactive use)\n"
				"Try 'selfckpt-gpu-proxy --help'.\n");
		return 64;
	}
	make_layout_deterministic(argv);
	signal(SIGPIPE, SIG_IGN);
	base = map_channel(atoi(argv[1]), strtoull(argv[2], NULL, 0));
	sc_proxy_channel = base;
	sc_log_set_prefix("selfckpt-gpu-proxy");
	h = sc_ch_header(base);
	if (h->magic != SC_CH_MAGIC || h->version != SC_CH_VERSION)
		fail_start(h, 0, "the channel has another version than this proxy");
	start_watcher((pid_t)atoi(argv[3]));
	if (sc_driver_load(driver && *driver ? driver : "libcuda.so.1", why, sizeof(why)) < 0)
		fail_start(h, CUDA_ERROR_NO_DEVICE, why);
	if ((r = sc_drv.cuInit(0)) != CUDA_SUCCESS) {
		const char *name = NULL;

		sc_drv.cuGetErrorName(r, &name);
		snprintf(why, sizeof(why), "cuInit failed in the proxy: %s",
			 name ? name : "unknown error");
		fail_start(h, r, why);
	}
	__atomic_store_n(&h->proxy_ready, 1, __ATOMIC_RELEASE);
	sc_ch_wake(&h->proxy_ready);
	serve(base);
	return 0;
}
