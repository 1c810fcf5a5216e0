/* SPDX-License-Identifier: MIT */
/*
 * gpu_check.c - before a CUDA program is restarted: can this machine's GPUs
 * run the modules it loaded? A restart on a device without code for them would
 * fail only once the program runs again and its modules are loaded anew, past
 * the point where the restore can be refused cleanly; so stage 1 asks first.
 *
 * The GPU proxy answers (selfckpt-gpu-proxy --query: it is the one program that
 * loads the driver), one line per device: "device ORDINAL MAJOR.MINOR NAME".
 * Which module went to which device is not recorded: every module must run on
 * every device the image used, device 0 and those its devmem records name.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/sc_core.h"
#include "cuda/tools/module_info.h"
#include "cuda/tools/sc_devmem_parents.h"
#include "cuda/tools/sc_gpu_check.h"
#include "format/sc_log.h"

#define QUERY_TIMEOUT_MS 60000
#define QUERY_OUT_MAX 16384 /* of the proxy's answer; the rest is read and dropped */
#define DEVICES_MAX 64
#define WHY_MAX 1024

/* What the image needs of the GPUs. */
struct need {
	bool has_cuda;
	struct sc_cuda_log log;
	uint64_t devices;   /* bit d: device ordinal d was used */
	uint32_t far_device; /* a used ordinal of DEVICES_MAX or above, or 0 */
};

struct gpu {
	int major, minor;
	char name[128];
};

/* What the machine has. */
struct gpus {
	char proxy[PATH_MAX];
	struct gpu dev[DEVICES_MAX];
	size_t n;
};

/* ---- what the image needs ---- */

static int take_record(struct sc_reader *r, const struct sc_record *rec, struct need *n)
{
	struct sc_devmem d;
	int err;

	if (rec->type == SC_REC_CUDA_LOG) {
		if (n->has_cuda)
			return sc_err(SELFCKPT_ELENGTH, "'%s' has a second cuda-log record "
				      "(records %u and %u); a process has one",
				      sc_reader_name(r), n->log.seq, rec->seq);
		err = sc_cuda_log_read(r, rec, &n->log);
		n->has_cuda = err == 0;
		return err;
	}
	if (rec->type != SC_REC_DEVMEM)
		return 0;
	if ((err = sc_devmem_read(rec, sc_reader_header(r)->flags & SC_HF_INCREMENTAL, &d)) < 0)
		return sc_err(-err, "devmem record %u of '%s' has damaged metadata: %s", rec->seq,
			      sc_reader_name(r), selfckpt_strerror(err));
	if (d.kind == SC_DEVMEM_HOST)
		return 0; /* host memory: its device field means nothing */
	if (d.dev < DEVICES_MAX)
		n->devices |= 1ull << d.dev;
	else
		n->far_device = d.dev;
	return 0;
}

/* From @fd when it is one (the reader does not own it), else from @path. */
static int read_need(const char *path, int fd, unsigned threads, struct need *n)
{
	struct sc_read_opts ro = { .threads = threads };
	struct sc_reader *r = NULL;
	struct sc_record rec;
	int err = fd >= 0 ? sc_reader_open_fd(&r, fd, path, &ro) : sc_reader_open(&r, path, &ro);

	n->devices = 1; /* device 0: where a program that never picks one runs */
	while (!err && (err = sc_reader_next(r, &rec)) == 1)
		err = take_record(r, &rec, n);
	sc_reader_free(r);
	return err < 0 ? err : 0;
}

/* ---- asking the proxy ---- */

static long ms_left(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return QUERY_TIMEOUT_MS - ((now.tv_sec - start->tv_sec) * 1000 +
				   (now.tv_nsec - start->tv_nsec) / 1000000);
}

/* Read @fd to its end into @out (NUL-terminated); -ETIMEDOUT past the time limit. */
static int read_answer(int fd, char *out, size_t cap)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timespec start;
	size_t used = 0;
	char drop[512];

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		long left = ms_left(&start);
		int ready = left > 0 ? poll(&p, 1, (int)left) : 0;
		ssize_t n;

		if (ready < 0 && errno == EINTR)
			continue;
		if (ready <= 0)
			return ready < 0 ? -errno : -ETIMEDOUT;
		if (used + 1 < cap)
			n = read(fd, out + used, cap - 1 - used);
		else
			n = read(fd, drop, sizeof(drop));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (used + 1 < cap)
			used += (size_t)n;
	}
	out[used] = '\0';
	return 0;
}

static pid_t start_query(const char *proxy, int out_fd)
{
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		if (null < 0 || dup2(null, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0)
			_exit(127);
		execl(proxy, proxy, "--query", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Run "@proxy --query", its standard output and error into @out; *@status: how it ended. */
static int run_query(const char *proxy, char *out, size_t cap, int *status)
{
	int fds[2], err;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return sc_err(errno, "cannot make a pipe to ask '%s' for the GPUs: %s", proxy,
			      strerror(errno));
	pid = start_query(proxy, fds[1]);
	err = pid < 0 ? -errno : 0;
	close(fds[1]);
	if (!err)
		err = read_answer(fds[0], out, cap);
	close(fds[0]);
	if (pid < 0)
		return sc_err(-err, "cannot start '%s --query': %s", proxy, strerror(-err));
	if (err == -ETIMEDOUT)
		kill(pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	if (err == -ETIMEDOUT)
		return sc_err(SELFCKPT_EHOST, "'%s --query' did not answer within %d s: cannot "
			      "check this machine's GPUs", proxy, QUERY_TIMEOUT_MS / 1000);
	return err < 0 ? sc_err(-err, "cannot read the answer of '%s --query': %s", proxy,
				strerror(-err)) : 0;
}

/* "device 0 9.0 NVIDIA H100 80GB HBM3": 1 when @line is one, 0 otherwise. */
static int parse_device(const char *line, struct gpus *g)
{
	int ord, major, minor, name_at = 0;

	if (sscanf(line, "device %d %d.%d %n", &ord, &major, &minor, &name_at) != 3 ||
	    !name_at || ord < 0 || major < 0 || minor < 0)
		return 0;
	if (ord < DEVICES_MAX && (size_t)ord == g->n) {
		g->dev[g->n] = (struct gpu){ major, minor, "" };
		snprintf(g->dev[g->n].name, sizeof(g->dev[0].name), "%s", line + name_at);
		g->n++;
	}
	return 1;
}

/* The devices in @out; the other lines, the proxy's reasons, into @why. */
static void parse_answer(char *out, struct gpus *g, char *why, size_t why_len)
{
	size_t used = 0;

	*why = '\0';
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		if (parse_device(line, g) || !*line)
			continue;
		if (!strncmp(line, SC_GPU_PROXY ": ", strlen(SC_GPU_PROXY ": ")))
			line += strlen(SC_GPU_PROXY ": ");
		if (used < why_len)
			used += (size_t)snprintf(why + used, why_len - used, "%s%s",
						 used ? "; " : "", line);
	}
}

static int query_gpus(const char *path, struct gpus *g)
{
	char *out = malloc(QUERY_OUT_MAX), why[WHY_MAX];
	int status = 0, err;

	if (!out)
		return sc_err(ENOMEM, "out of memory asking for the GPUs");
	err = sc_need_tool(SC_TOOL_GPU_PROXY, g->proxy, sizeof(g->proxy), SELFCKPT_EHOST,
			    "cannot check this machine's GPUs");
	if (!err)
		err = run_query(g->proxy, out, QUERY_OUT_MAX, &status);
	if (!err)
		parse_answer(out, g, why, sizeof(why));
	free(out);
	if (err || (WIFEXITED(status) && !WEXITSTATUS(status) && g->n))
		return err;
	if (!*why)
		snprintf(why, sizeof(why), "%s", WIFEXITED(status) ? "no device listed"
							     : "killed by a signal");
	return sc_err(SELFCKPT_EHOST, "cannot restart '%s', a CUDA program: no usable GPU here "
		      "('%s --query' exited with status %d: %s)", path, g->proxy,
		      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), why);
}

/* ---- checking ---- */

/* The first kernels of @m, printable whatever bytes the image holds. */
static const char *kernels_text(const struct sc_module_info *m, char *buf, size_t n)
{
	size_t used = 0;

	*buf = '\0';
	for (size_t i = 0; i < m->kernels_n && i < 3 && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "",
					 m->kernels[i]);
	if (m->kernels_n > 3 && used < n)
		snprintf(buf + used, n - used, ", ...");
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return *buf ? buf : "none known";
}

static int refuse_module(const char *path, const struct need *n, size_t mod, unsigned dev,
			 const struct gpu *g, const char *why, size_t more)
{
	const struct sc_cuda_module *m = &n->log.mods[mod];
	char kernels[256];

	return sc_err(SELFCKPT_EHOST, "cannot restart '%s' here: %s %zu (%s; kernels %s) "
		      "cannot run on GPU %u ('%s', compute capability %d.%d): %s%s", path,
		      m->library ? "library" : "module", mod, sc_module_format_name(m->info.format),
		      kernels_text(&m->info, kernels, sizeof(kernels)), dev, g->name, g->major,
		      g->minor, why, more ? " (and more modules cannot either)" : "");
}

/* Every module on device @dev; a module that could not be read is let through. */
static int check_device(const char *path, const struct need *n, unsigned dev,
			const struct gpu *g)
{
	char why[WHY_MAX], first_why[WHY_MAX];
	size_t bad = 0, first = 0;

	for (size_t i = 0; i < n->log.mods_n; i++) {
		const struct sc_cuda_module *m = &n->log.mods[i];

		if (m->err || sc_module_runs_on(&m->info, g->major, g->minor, why, sizeof(why)))
			continue;
		if (!bad++) {
			first = i;
			memcpy(first_why, why, sizeof(why));
		}
	}
	return bad ? refuse_module(path, n, first, dev, g, first_why, bad - 1) : 0;
}

static void warn_unreadable(const char *path, const struct need *n)
{
	for (size_t i = 0; i < n->log.mods_n; i++)
		if (n->log.mods[i].err)
			sc_log(SC_LOG_WARN, "module %zu of '%s' cannot be checked against the GPU: "
			       "%s", i, path, n->log.mods[i].why);
}

static int check_gpus(const char *path, const struct need *n, const struct gpus *g)
{
	int err = 0;

	if (n->far_device)
		return sc_err(SELFCKPT_EHOST, "cannot restart '%s' here: it used GPU %u, this "
			      "machine has %zu", path, n->far_device, g->n);
	for (unsigned d = 0; !err && d < DEVICES_MAX; d++) {
		if (!(n->devices & 1ull << d))
			continue;
		if (d >= g->n)
			return sc_err(SELFCKPT_EHOST, "cannot restart '%s' here: it used GPU %u, "
				      "this machine has %zu", path, d, g->n);
		err = check_device(path, n, d, &g->dev[d]);
	}
	if (!err)
		warn_unreadable(path, n);
	return err;
}

int sc_gpu_check(const char *path, unsigned threads)
{
	return sc_gpu_check_fd(-1, path, threads);
}

int sc_gpu_check_fd(int fd, const char *path, unsigned threads)
{
	struct need n = { 0 };
	struct gpus *g = NULL;
	int err = read_need(path, fd, threads, &n);

	if (!err && n.has_cuda && !(g = calloc(1, sizeof(*g))))
		err = sc_err(ENOMEM, "out of memory checking the GPUs");
	if (!err && n.has_cuda)
		err = query_gpus(path, g);
	if (!err && n.has_cuda)
		err = check_gpus(path, &n, g);
	if (!err && n.has_cuda) /* the device memory left to parents, read at the restart */
		err = sc_devmem_parents_check(path, fd, threads);
	free(g);
	sc_cuda_log_release(&n.log);
	return err;
}
