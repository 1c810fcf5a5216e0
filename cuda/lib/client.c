/* SPDX-License-Identifier: MIT */
/*
 * client.c - the application's end of the channel: starting the proxy,
 * sending requests, noticing when the proxy is gone.
 *
 * The proxy is started through a middle process, so it is no child of the
 * application: the program's own wait() and SIGCHLD handling never see it. It gets the application's environment without
 * LD_PRELOAD, so the driver it loads is never shadowed by this library.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/job.h"
#include "core/sc_core.h"
#include "core/sc_handoff.h"
#include "core/sc_settings.h"
#include "cuda/lib/cuda_internal.h"
#include "cuda/lib/driver_mode.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"

#define CHANNEL_TRIES 8
#define SPIN_NS 50000
#define START_TIMEOUT_MS 120000

extern char **environ;

struct sc_cu_client sc_cu = {
	.memfd = -1, .staging_lock = PTHREAD_MUTEX_INITIALIZER };

uint64_t sc_cu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * A memfd as large as the channel may grow; pages cost only once touched. At
 * a restart it must come back at the address it had (@exact): pinned host
 * memory the application holds lives in it.
 */
static int create_channel(uint64_t addr, uint64_t size, bool exact)
{
	int fd = memfd_create("selfckpt-cuda-channel", MFD_CLOEXEC);
	void *p = MAP_FAILED;

	if (fd < 0)
		return sc_err(errno, "cannot create the CUDA channel: %s", strerror(errno));
	if (ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		return sc_err(errno, "cannot size the CUDA channel to %llu bytes: %s",
			      (unsigned long long)size, strerror(errno));
	}
	for (int i = 0; i < (exact ? 1 : CHANNEL_TRIES) && p == MAP_FAILED;
	     i++, addr -= 1ull << 40)
		p = mmap((void *)addr, size, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return sc_err(errno, "cannot map the CUDA channel %s 0x%llx: %s",
			      exact ? "back at" : "near", (unsigned long long)addr,
			      strerror(errno));
	}
	sc_ch_init(p, size);
	sc_skip_add((uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)p + size);
	sc_cu.base = p;
	sc_cu.size = size;
	sc_cu.memfd = fd;
	return 0;
}

struct spawn {
	const char *path;
	char *const *argv, *const *envp;
	int memfd;
	int exec_errno;
	char *stack;       /* the proxy's own until it execs */
	size_t stack_len;
	pid_t proxy;
};

/* Runs on its own stack, sharing our memory until it execs: no libc state. */
static int spawn_child(void *arg)
{
	struct spawn *s = arg;

	if (s->memfd != 3 && dup2(s->memfd, 3) < 0)
		s->exec_errno = errno;
	else if (s->memfd == 3 && fcntl(3, F_SETFD, 0) < 0)
		s->exec_errno = errno;
	else {
		execve(s->path, s->argv, s->envp);
		s->exec_errno = errno;
	}
	_exit(127);
}

/*
 * The proxy is no child of the application: a child that execs becomes an
 * ordinary one, which the program's own wait() could reap and whose death
 * would raise SIGCHLD in the program. This middle process starts the proxy
 * and exits at once; the proxy goes to init (or the nearest subreaper).
 */
static int spawn_middle(void *arg)
{
	struct spawn *s = arg;

	s->proxy = clone(spawn_child, s->stack + s->stack_len, CLONE_VM | CLONE_VFORK | SIGCHLD,
			 s);
	if (s->proxy < 0)
		s->exec_errno = errno;
	_exit(0);
}

/*
 * Scratch memory for starting the proxy, also at a restart: mapped and
 * unmapped, so that the restored process keeps the heap it was saved with.
 */
static void *scratch_alloc(size_t len)
{
	void *p = mmap(NULL, len + 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	*(size_t *)p = len + 16;
	return (char *)p + 16;
}

static void scratch_free(void *p)
{
	if (p)
		munmap((char *)p - 16, *(size_t *)((char *)p - 16));
}

/*
 * The proxy's environment: the program's, or at a restart selfckpt-restore's
 * (the GPUs of the job that restores, CUDA_VISIBLE_DEVICES and all); never
 * LD_PRELOAD, for the proxy must load the real driver. The same for
 * selfckpt-driver-ckpt.
 */
char **sc_cu_tool_environment(void)
{
	const char *block = (const char *)(uintptr_t)sc_handoff.env;
	size_t n = 0, k = 0, len = sc_handoff.env_len;
	char **env;

	if (block && len)
		for (size_t i = 0; i < len; i++)
			n += block[i] == 0;
	else
		while (environ[n])
			n++;
	if (!(env = scratch_alloc((n + 1) * sizeof(*env))))
		return NULL;
	for (size_t i = 0, off = 0; i < n; i++) {
		const char *e = block && len ? block + off : environ[i];

		off += strlen(e) + 1;
		if (strncmp(e, "LD_PRELOAD=", 11))
			env[k++] = (char *)e;
	}
	return env;
}

void sc_cu_tool_environment_free(char **env)
{
	scratch_free(env);
}

static int spawn_proxy(void)
{
	static char path[PATH_MAX];
	char fd_arg[16], addr_arg[32], pid_arg[16];
	char *argv[] = { SC_GPU_PROXY, fd_arg, addr_arg, pid_arg, NULL };
	struct spawn s = { .path = path, .argv = argv, .memfd = sc_cu.memfd };
	size_t stack_len = 64 << 10;
	char *stack = NULL, **envp = NULL;
	int err = sc_need_tool(SC_TOOL_GPU_PROXY, path, sizeof(path), 0,
			       "cannot start the GPU proxy");
	pid_t pid;

	if (err < 0)
		return err;
	snprintf(fd_arg, sizeof(fd_arg), "3");
	snprintf(addr_arg, sizeof(addr_arg), "0x%llx", (unsigned long long)(uintptr_t)sc_cu.base);
	snprintf(pid_arg, sizeof(pid_arg), "%d", (int)getpid());
	if (!(envp = sc_cu_tool_environment()) || !(stack = scratch_alloc(2 * stack_len))) {
		scratch_free(envp);
		return sc_err(ENOMEM, "out of memory starting the GPU proxy");
	}
	s.envp = envp;
	s.stack = stack + stack_len;
	s.stack_len = stack_len;
	/* no exit signal: the program never hears of the middle process */
	pid = clone(spawn_middle, stack + stack_len, CLONE_VM | CLONE_VFORK, &s);
	err = errno;
	if (pid > 0)
		waitpid(pid, NULL, __WALL);
	scratch_free(stack);
	scratch_free(envp);
	if (pid < 0)
		return sc_err(err, "cannot start the GPU proxy '%s': %s", path, strerror(err));
	if (s.exec_errno)
		return sc_err(s.exec_errno, "cannot run the GPU proxy '%s': %s", path,
			      strerror(s.exec_errno));
	sc_cu.proxy = s.proxy;
	return 0;
}

/* Gone, or a zombie its new parent has not reaped yet. */
static bool process_ended(pid_t pid)
{
	char path[64], buf[512], *end;
	ssize_t n;
	int fd;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	end = strrchr(buf, ')');
	return end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X');
}

/*
 * Has the proxy exited? Then every later call fails, with one message. No
 * descriptor watches it: a descriptor would be part of the process image.
 */
static bool proxy_gone(void)
{
	if (sc_cu.dead)
		return true;
	if (!process_ended(sc_cu.proxy))
		return false;
	sc_cu.dead = true;
	sc_log(SC_LOG_ERROR, "the GPU proxy (pid %d) ended: every later CUDA call fails",
	       (int)sc_cu.proxy);
	return true;
}

static CUresult wait_ready(void)
{
	struct sc_ch_header *h = sc_ch_header(sc_cu.base);
	uint64_t deadline = sc_cu_now_ns() + (uint64_t)START_TIMEOUT_MS * 1000000ull;

	while (!__atomic_load_n(&h->proxy_ready, __ATOMIC_ACQUIRE)) {
		if (proxy_gone() || sc_cu_now_ns() > deadline) {
			sc_log(SC_LOG_ERROR, "the GPU proxy did not start%s",
			       sc_cu.dead ? "" : " within 120 s");
			return CUDA_ERROR_NOT_INITIALIZED;
		}
		sc_ch_wait(&h->proxy_ready, 0, 100);
	}
	if (h->proxy_status != 0) {
		sc_log(SC_LOG_ERROR, "the GPU proxy could not start: %s", h->proxy_error);
		return (CUresult)h->proxy_status;
	}
	return CUDA_SUCCESS;
}

/* The proxy maps the channel as it starts: our descriptor is not needed after. */
static CUresult start_proxy(void)
{
	CUresult res;

	if (spawn_proxy() < 0) {
		close(sc_cu.memfd);
		sc_cu.memfd = -1;
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	sc_cu.started = true;
	res = wait_ready();
	close(sc_cu.memfd);
	sc_cu.memfd = -1;
	return res;
}

CUresult sc_cu_start(void)
{
	const struct sc_settings *set = sc_settings();
	uint64_t pinned = set->cuda_pinned_mb << 20;

	if (sc_cu.started)
		return sc_cu.dead ? CUDA_ERROR_DEVICE_UNAVAILABLE : CUDA_SUCCESS;
	if (create_channel(set->cuda_channel, SC_CH_HEAP_OFF + pinned, false) < 0)
		return CUDA_ERROR_OPERATING_SYSTEM;
	sc_cu_driver_warn_mixed();
	return start_proxy();
}

CUresult sc_cu_restart_channel(void)
{
	uint64_t addr = (uint64_t)(uintptr_t)sc_cu.base, size = sc_cu.size;

	sc_skip_remove(addr);
	sc_cu_client_reset();
	if (create_channel(addr, size, true) < 0)
		return CUDA_ERROR_OPERATING_SYSTEM;
	return start_proxy();
}

/*
 * A child made by fork() has none of its parent's GPU state, as with the
 * driver itself: the proxy and its channel stay the parent's (the channel is
 * left out of the child's images too), and the child's CUDA calls fail. A
 * job's CPU-only workers (a data loader's) are such children: their
 * checkpoint holds no GPU state, and takes nothing from the proxy.
 */
static void forked_child(void)
{
	sc_cu_lock_forget(); /* a checkpoint of the child takes it (gpu_checkpoint.c) */
	if (!sc_cu.started)
		return;
	sc_job_gpu_copy = 1;
	sc_cu.started = false;
	sc_cu.dead = true;
	sc_cu.proxy = 0;
}

__attribute__((constructor)) static void client_at_load(void)
{
	pthread_atfork(NULL, NULL, forked_child);
}

void sc_cu_client_reset(void)
{
	sc_cu.base = NULL;
	sc_cu.size = 0;
	sc_cu.memfd = -1;
	sc_cu.proxy = 0;
	sc_cu.dead = false;
	sc_cu.started = false;
	sc_cu.staging_pinned = false;
	pthread_mutex_init(&sc_cu.staging_lock, NULL);
}

bool sc_cu_in_channel(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)sc_cu.base;

	return sc_cu.base && a >= b + SC_CH_STAGING_OFF && n <= sc_cu.size &&
	       a - b <= sc_cu.size - n;
}

/* Wait until *word leaves @val, polling first, then sleeping; false if the proxy died. */
static bool wait_word(uint32_t *word, uint32_t val, uint32_t *sleepers)
{
	uint64_t start = sc_cu_now_ns();

	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == val) {
		if (sc_cu_now_ns() - start < SPIN_NS) {
			__builtin_ia32_pause();
			continue;
		}
		__atomic_add_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(word, __ATOMIC_SEQ_CST) == val)
			sc_ch_wait(word, val, 100);
		__atomic_sub_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == val && proxy_gone())
			return false;
	}
	return true;
}

/* Take a ticket and the slot it owns. */
static struct sc_ch_slot *acquire(uint32_t *ticket)
{
	struct sc_ch_header *h = sc_ch_header(sc_cu.base);
	uint32_t t = __atomic_fetch_add(&h->head, 1, __ATOMIC_ACQ_REL);
	struct sc_ch_slot *s = sc_ch_slot(sc_cu.base, t);

	for (;;) {
		uint32_t turn = __atomic_load_n(&s->turn, __ATOMIC_ACQUIRE);

		if (turn == t)
			break;
		if (!wait_word(&s->turn, turn, &h->turn_waiters))
			return NULL;
	}
	*ticket = t;
	return s;
}

static void submit(struct sc_ch_slot *s, struct sc_req *r, uint32_t t)
{
	struct sc_ch_header *h = sc_ch_header(sc_cu.base);

	s->op = r->op;
	s->flags = r->flags;
	s->ctx = r->ctx;
	s->result = 0;
	s->waiting = 0;
	s->ticket = t;
	memcpy(s->a, r->a, sizeof(s->a));
	if (r->in_len)
		memcpy(s->data, r->in, r->in_len);
	if (r->in2_len)
		memcpy(s->data + r->in_len, r->in2, r->in2_len);
	s->len = r->in_len + r->in2_len;
	__atomic_store_n(&s->state, SC_SLOT_READY, __ATOMIC_SEQ_CST);
	/* The proxy re-checks the slot after it says it sleeps: ring only then. */
	if (__atomic_load_n(&h->proxy_sleeps, __ATOMIC_SEQ_CST)) {
		__atomic_add_fetch(&h->doorbell, 1, __ATOMIC_SEQ_CST);
		sc_ch_wake(&h->doorbell);
	}
}

static void release(struct sc_ch_slot *s, uint32_t t)
{
	struct sc_ch_header *h = sc_ch_header(sc_cu.base);

	__atomic_store_n(&s->state, SC_SLOT_FREE, __ATOMIC_RELAXED);
	__atomic_store_n(&s->turn, t + SC_CH_SLOTS, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&h->turn_waiters, __ATOMIC_SEQ_CST))
		sc_ch_wake(&s->turn);
}

static CUresult check_request(const struct sc_req *r)
{
	if (r->in_len + (uint64_t)r->in2_len > SC_CH_INLINE)
		return CUDA_ERROR_INVALID_VALUE;
	if (sc_cu.dead || !sc_cu.started)
		return sc_cu.started ? CUDA_ERROR_DEVICE_UNAVAILABLE : CUDA_ERROR_NOT_INITIALIZED;
	return CUDA_SUCCESS;
}

CUresult sc_cu_call(struct sc_req *r)
{
	CUresult res = check_request(r);
	struct sc_ch_slot *s;
	uint32_t t;

	if (res != CUDA_SUCCESS)
		return res;
	if (!(s = acquire(&t)))
		return CUDA_ERROR_DEVICE_UNAVAILABLE;
	r->flags &= ~SC_MSG_ASYNC;
	submit(s, r, t);
	/* a dead proxy leaves the slot taken: nothing will use the channel again */
	if (!wait_word(&s->state, SC_SLOT_READY, &s->waiting))
		return CUDA_ERROR_DEVICE_UNAVAILABLE;
	res = (CUresult)s->result;
	memcpy(r->a, s->a, sizeof(r->a));
	r->out_len = 0;
	if (r->out && r->out_cap) {
		r->out_len = s->len < r->out_cap ? s->len : r->out_cap;
		memcpy(r->out, s->data, r->out_len);
	}
	r->ticket = t;
	release(s, t);
	return res;
}

CUresult sc_cu_post(struct sc_req *r)
{
	CUresult res = check_request(r);
	struct sc_ch_slot *s;
	uint32_t t;

	if (res != CUDA_SUCCESS)
		return res;
	if (!(s = acquire(&t)))
		return CUDA_ERROR_DEVICE_UNAVAILABLE;
	r->flags |= SC_MSG_ASYNC;
	submit(s, r, t);
	r->ticket = t;
	return CUDA_SUCCESS;
}

/* Done when the proxy's tail has passed @ticket (tickets wrap: compare the distance). */
CUresult sc_cu_wait_ticket_for(uint32_t ticket, uint64_t ns)
{
	struct sc_ch_header *h = sc_ch_header(sc_cu.base);
	uint64_t start = sc_cu_now_ns();

	while ((int32_t)(__atomic_load_n(&h->tail, __ATOMIC_ACQUIRE) - ticket) <= 0) {
		if (sc_cu_now_ns() - start < SPIN_NS) {
			__builtin_ia32_pause();
			continue;
		}
		if (proxy_gone())
			return CUDA_ERROR_DEVICE_UNAVAILABLE;
		if (sc_cu_now_ns() - start >= ns)
			return CUDA_ERROR_NOT_READY;
		struct timespec ts = { 0, 20000 };

		nanosleep(&ts, NULL);
	}
	return CUDA_SUCCESS;
}

CUresult sc_cu_wait_ticket(uint32_t ticket)
{
	return sc_cu_wait_ticket_for(ticket, UINT64_MAX);
}

CUresult sc_cu_take_sticky(void)
{
	struct sc_ch_header *h;
	int32_t e;

	if (!sc_cu.base)
		return CUDA_SUCCESS;
	h = sc_ch_header(sc_cu.base);
	e = __atomic_exchange_n(&h->sticky_error, 0, __ATOMIC_ACQ_REL);
	if (e)
		sc_log(SC_LOG_DEBUG, "an asynchronous %s failed earlier: %s",
		       sc_op_name(h->sticky_op), sc_cu_result_name((CUresult)e));
	return (CUresult)e;
}
