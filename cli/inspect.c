/* SPDX-License-Identifier: MIT */
/*
 * inspect.c - selfckpt-inspect: what an image holds, and whether it is intact.
 *
 * Every record is walked with the reader, so every record header and its
 * metadata are checked even without --verify; sizes come from the index. The
 * index does not list the END record (the index itself): it lies between the
 * offset the reader reports for it and the trailer.
 *
 * An image of a CUDA program also gets a CUDA section: its GPU memory, from the
 * cuda-log summary and the devmem records, and every module it loaded, with the
 * architectures it has code for and its kernels (cuda/tools/module_info.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/inspect_chain.h"
#include "cli/tool.h"
#include "core/sc_fds.h"
#include "core/sc_records.h"
#include "core/sc_settings.h"
#include "cuda/tools/module_info.h"
#include "format/sc_array.h"
#include "format/sc_format.h"
#include "format/sc_log.h"
#include "selfckpt.h"

#define TOOL "selfckpt-inspect"
#define THREADS_MAX 4096
#define DEVMEM_KINDS (SC_DEVMEM_ARRAY + 1)
#define DEVICES_MAX 64 /* device ordinals listed; a larger one is only counted */
#define ARCHS_TEXT 1024
#define ARGS_MAX (1u << 20)  /* command-line bytes shown */
#define SKIP_STEP (64u << 10) /* payload bytes read past at a time */
#define KERNEL_O_LARGEFILE 0100000 /* in every fdinfo of x86-64; glibc's O_LARGEFILE is 0 */

struct options {
	bool json, verify;
	unsigned threads; /* 0: all online CPUs */
	const char *path; /* "-": standard input */
};

struct type_stat {
	uint32_t type;
	uint64_t count, raw, stored;
};

/* What the devmem records hold. */
struct devmem_stat {
	uint64_t records;
	uint64_t bytes[DEVMEM_KINDS]; /* by enum sc_devmem_kind */
	uint64_t devices;             /* bit d: device ordinal d holds memory */
	uint64_t other_devices;       /* records of ordinals DEVICES_MAX and above */
	uint64_t parent_records;      /* parent pieces: device memory left to the parent */
	uint64_t parent_bytes;
};

/* What the process, thread and fd records say: what the image is. */
struct process_view {
	bool has_process;
	struct sc_process_info proc;
	char *args;                       /* the command line, NUL-separated; NULL: not found */
	size_t args_len;
	bool args_cut;                    /* longer than ARGS_MAX: the start only */
	struct sc_thread_record *threads;
	size_t threads_n, threads_cap;
	struct sc_fd *fds;                /* without their saved contents */
	size_t fds_n, fds_cap;
};

struct inspection {
	const struct options *opt;
	struct sc_reader *r;
	uint64_t file_size;
	const struct sc_index_entry *idx; /* every record but END */
	size_t n;
	struct sc_index_entry end;        /* the END record */
	struct type_stat *types;          /* by type, END last */
	size_t n_types;
	uint64_t raw, stored;             /* sums over every record, END included */
	bool verified;                    /* every chunk and checksum was checked */
	bool has_cuda;                    /* the image has a cuda-log record */
	struct sc_cuda_log cuda;
	bool has_driver;                  /* the image has a cuda-driver record */
	uint32_t driver_seq;
	struct sc_cuda_driver driver;
	struct devmem_stat devmem;
	struct process_view pv;
	bool has_parent;                  /* an incremental image: its parent record */
	struct sc_parent_info parent;
	struct sc_chain_view chain;       /* and its parents, as found */
};

/* ---- command line ---- */

enum { OPT_JSON = 256, OPT_VERIFY, OPT_THREADS, OPT_VERSION };

static const struct option long_opts[] = {
	{ "json", no_argument, NULL, OPT_JSON },
	{ "verify", no_argument, NULL, OPT_VERIFY },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static int print_help(void)
{
	fputs("Usage: " TOOL " [--json] [--verify] [--threads N] FILE\n"
	      "Describe a selfckpt image: its header; the process it holds (program, command\n"
	      "line, pid, working directory), its threads and its open descriptors (number,\n"
	      "kind, offset, flags, path, and what the restore does with each); its records\n"
	      "grouped by type with their payload size (raw) and the bytes they take in the\n"
	      "file (stored); for a CUDA program, its GPU memory and the modules it loaded,\n"
	      "with their kernels and the GPU architectures they have code for.\n"
	      "FILE '-' reads standard input as a stream, which checks every checksum.\n"
	      "\n"
	      "  --json       print one JSON document (schema_version 1) instead of text\n"
	      "  --verify     decode every chunk and check every checksum\n"
	      "  --threads N  decompress on N threads (default: all online CPUs)\n"
	      "  --help       print this help and exit\n"
	      "  --version    print the version and exit\n"
	      "\n"
	      "Exit status:\n"
	      "  0   success\n"
	      "  64  wrong command line\n"
	      "  65  the image (or a CUDA module in it) is corrupt or unsupported\n"
	      "  66  FILE is missing or cannot be opened\n"
	      "  74  another input or output error\n", stdout);
	return fflush(stdout) ? SC_EXIT_IOERR : SC_EXIT_OK;
}

static int bad_option(char **argv, int c)
{
	if (c == ':')
		return sc_tool_usage_error("option '%s' needs a value", argv[optind - 1]);
	if (optopt > 0 && optopt < 256)
		return sc_tool_usage_error("unknown option '-%c'", optopt);
	return sc_tool_usage_error("unknown or misused option '%s'", argv[optind - 1]);
}

/* Return: -1 to go on, or the code to exit with. */
static int parse_args(int argc, char **argv, struct options *opt)
{
	int c, ret = -1;
	unsigned long v = 0;

	opterr = 0;
	while (ret < 0 && (c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON: opt->json = true; break;
		case OPT_VERIFY: opt->verify = true; break;
		case OPT_THREADS:
			if ((ret = sc_tool_count("thread count", optarg, THREADS_MAX, &v)) < 0)
				opt->threads = (unsigned)v;
			break;
		case 'h': return print_help();
		case OPT_VERSION:
			printf("%s %s\n", TOOL, SELFCKPT_VERSION_STRING);
			return fflush(stdout) ? SC_EXIT_IOERR : SC_EXIT_OK;
		default: return bad_option(argv, c);
		}
	}
	if (ret >= 0)
		return ret;
	if (optind == argc)
		return sc_tool_usage_error("no image named");
	if (argc - optind > 1)
		return sc_tool_usage_error("one image at a time; unexpected '%s'",
					   argv[optind + 1]);
	opt->path = argv[optind];
	return -1;
}

/* ---- reading the image ---- */

static int open_input(struct inspection *in)
{
	struct sc_read_opts ro = { .flags = SC_RD_ALL_RECORDS, .threads = in->opt->threads };

	/* Standard input is a stream even when a file is redirected into it. */
	if (!strcmp(in->opt->path, "-"))
		ro.flags |= SC_RD_STREAM;
	return sc_reader_open(&in->r, in->opt->path, &ro);
}

static int add_devmem(struct inspection *in, const struct sc_record *rec)
{
	struct devmem_stat *st = &in->devmem;
	struct sc_devmem d;
	bool incremental = sc_reader_header(in->r)->flags & SC_HF_INCREMENTAL;
	int err = sc_devmem_read(rec, incremental, &d);

	if (err < 0)
		return sc_err(-err, "devmem record %u of '%s' has damaged metadata (%u bytes): %s",
			      rec->seq, sc_reader_name(in->r), rec->meta_len,
			      selfckpt_strerror(err));
	st->records++;
	if (d.flags & SC_DEVMEM_PARENT) {
		st->parent_records++;
		st->parent_bytes += d.len;
	} else if (d.kind < DEVMEM_KINDS)
		st->bytes[d.kind] += d.len;
	if (d.kind == SC_DEVMEM_HOST)
		return 0; /* host memory: its device field means nothing */
	if (d.dev < DEVICES_MAX)
		st->devices |= 1ull << d.dev;
	else
		st->other_devices++;
	return 0;
}

/* The cuda-driver record (R-TYP-21): the driver's process checkpoint is in the image. */
static int take_driver(struct inspection *in, const struct sc_record *rec)
{
	static const char *const why[] = { "a version other than 1", "a length or process id out "
					   "of bounds", "a reserved field that is not 0" };
	int err;

	if (in->has_driver)
		return sc_err(SELFCKPT_ELENGTH, "'%s' has a second cuda-driver record (records %u "
			      "and %u); a process has one", sc_reader_name(in->r), in->driver_seq,
			      rec->seq);
	err = sc_cuda_driver_decode(rec->meta, rec->meta_len, &in->driver);
	if (err < 0) {
		int i = err == -SELFCKPT_EVERSION ? 0 : err == -SELFCKPT_ELENGTH ? 1 : 2;

		return sc_err(-err, "cuda-driver record %u of '%s' at offset %llu has %s", rec->seq,
			      sc_reader_name(in->r), (unsigned long long)rec->offset, why[i]);
	}
	in->has_driver = true;
	in->driver_seq = rec->seq;
	return 0;
}

/* The CUDA records: the log is read now (a stream passes once), devmem counted. */
static int take_cuda(struct inspection *in, const struct sc_record *rec)
{
	int err;

	if (rec->type == SC_REC_CUDA_DRIVER)
		return take_driver(in, rec);
	if (rec->type == SC_REC_DEVMEM)
		return add_devmem(in, rec);
	if (rec->type != SC_REC_CUDA_LOG)
		return 0;
	if (in->has_cuda)
		return sc_err(SELFCKPT_ELENGTH, "'%s' has a second cuda-log record (records %u and "
			      "%u); a process has one", sc_reader_name(in->r), in->cuda.seq,
			      rec->seq);
	err = sc_cuda_log_read(in->r, rec, &in->cuda);
	in->has_cuda = err == 0;
	return err;
}

/* ---- the process, its threads and descriptors ---- */

/* Room for element @n of *@arr. */
static int room_for_one(void **arr, size_t *cap, size_t n, size_t size, struct inspection *in)
{
	if (sc_grow(arr, cap, n + 1, size))
		return sc_err(ENOMEM, "out of memory listing the records of '%s'",
			      sc_reader_name(in->r));
	return 0;
}

static int take_thread(struct inspection *in, const struct sc_record *rec)
{
	struct process_view *pv = &in->pv;
	int err = room_for_one((void **)&pv->threads, &pv->threads_cap, pv->threads_n,
		       sizeof(*pv->threads), in);

	if (!err)
		err = sc_thread_read(in->r, rec, &pv->threads[pv->threads_n]);
	pv->threads_n += !err;
	return err;
}

/* A descriptor without its saved contents: those are counted, not shown. */
static int take_fd(struct inspection *in, const struct sc_record *rec)
{
	struct process_view *pv = &in->pv;
	int err = room_for_one((void **)&pv->fds, &pv->fds_cap, pv->fds_n, sizeof(*pv->fds), in);
	struct sc_fd *f = &pv->fds[pv->fds_n];

	if (!err)
		err = sc_fd_read_record(in->r, rec, f);
	if (err)
		return err;
	free(f->data);
	f->data = NULL;
	pv->fds_n++;
	return 0;
}

/* Read and drop the next @n payload bytes. */
static int skip_payload(struct sc_reader *r, uint64_t n, uint8_t *buf)
{
	int err = 0;

	while (!err && n) {
		size_t step = n < SKIP_STEP ? (size_t)n : SKIP_STEP;

		err = sc_reader_read(r, buf, step);
		n -= step;
	}
	return err;
}

/*
 * [@lo, @hi) of the window @s into @out, from its payload (the stored pages, run by
 * run): 1 when done, 0 when part of it is a file run (not in the image).
 */
static int read_range(struct inspection *in, const struct sc_segment_info *s, uint64_t lo,
		      uint64_t hi, uint8_t *out, uint8_t *buf)
{
	uint64_t page = sc_reader_header(in->r)->page_size, at = 0, stored = 0;

	for (uint32_t i = 0; i < s->n_runs; i++) {
		const struct sc_run *run = &s->runs[i];
		uint64_t start = s->start + run->first * page, len = (uint64_t)run->count * page;
		uint64_t a = lo > start ? lo : start, b = hi < start + len ? hi : start + len;
		int err;

		if (a < b && (run->kind == SC_RUN_FILE || run->kind == SC_RUN_GUARD ||
			      run->kind == SC_RUN_PARENT))
			return 0;
		if (a < b && run->kind == SC_RUN_ZERO)
			memset(out + (a - lo), 0, b - a);
		if (a < b && run->kind == SC_RUN_STORED) {
			if ((err = skip_payload(in->r, stored + (a - start) - at, buf)) < 0 ||
			    (err = sc_reader_read(in->r, out + (a - lo), b - a)) < 0)
				return err;
			at = stored + (b - start);
		}
		if (run->kind == SC_RUN_STORED)
			stored += len;
	}
	return 1;
}

/* The command line, [@lo, @hi) of the window @s (the start of it when @cut). */
static int read_args(struct inspection *in, const struct sc_segment_info *s, uint64_t lo,
		     uint64_t hi, bool cut)
{
	struct process_view *pv = &in->pv;
	uint8_t *buf = malloc(SKIP_STEP);
	int ret;

	pv->args = malloc(hi - lo + 1);
	if (!buf || !pv->args) {
		free(buf);
		return sc_err(ENOMEM, "out of memory reading the command line in '%s'",
			      sc_reader_name(in->r));
	}
	ret = read_range(in, s, lo, hi, (uint8_t *)pv->args, buf);
	free(buf);
	if (ret == 1) {
		pv->args[hi - lo] = '\0';
		pv->args_len = hi - lo;
		pv->args_cut = cut;
		return 0;
	}
	free(pv->args); /* in a file's pages: not in the image */
	pv->args = NULL;
	return ret;
}

/* The window that holds arg_start (of the process record before it) holds the command line. */
static int take_segment(struct inspection *in, const struct sc_record *rec)
{
	const struct sc_process_info *p = &in->pv.proc;
	struct sc_segment_info s;
	uint64_t hi, end;
	int err;

	if (!in->pv.has_process || in->pv.args || p->arg_end <= p->arg_start)
		return 0;
	err = sc_segment_read(in->r, rec, sc_reader_header(in->r)->page_size, &s);
	if (err < 0)
		return err;
	end = s.start + s.length;
	if (p->arg_start >= s.start && p->arg_start < end) {
		hi = p->arg_end - p->arg_start > ARGS_MAX ? p->arg_start + ARGS_MAX : p->arg_end;
		hi = hi < end ? hi : end;
		err = read_args(in, &s, p->arg_start, hi, hi < p->arg_end);
	}
	sc_segment_free(&s);
	return err;
}

/* As for the restorer, the last process record counts. */
static int take_process(struct inspection *in, const struct sc_record *rec)
{
	struct process_view *pv = &in->pv;
	int err;

	sc_process_free(&pv->proc);
	free(pv->args);
	pv->args = NULL;
	err = sc_process_read(in->r, rec, &pv->proc);
	pv->has_process = !err;
	return err;
}

static int take_parent(struct inspection *in, const struct sc_record *rec)
{
	sc_parent_free(&in->parent);
	in->has_parent = sc_parent_read(in->r, rec, &in->parent) == 0;
	return in->has_parent ? 0 : -SELFCKPT_ELENGTH;
}

static int take_record(struct inspection *in, const struct sc_record *rec)
{
	switch (rec->type) {
	case SC_REC_PROCESS: return take_process(in, rec);
	case SC_REC_THREAD: return take_thread(in, rec);
	case SC_REC_FD: return take_fd(in, rec);
	case SC_REC_SEGMENT: return take_segment(in, rec);
	case SC_REC_PARENT: return take_parent(in, rec);
	default: return take_cuda(in, rec);
	}
}

static int walk_records(struct inspection *in)
{
	struct sc_record rec;
	int ret;

	while ((ret = sc_reader_next(in->r, &rec)) == 1) {
		if ((ret = take_record(in, &rec)) < 0)
			return ret;
		if (in->opt->verify && (ret = sc_reader_skip(in->r, true)) < 0)
			return ret;
	}
	if (ret < 0)
		return ret;
	if (sc_reader_seekable(in->r)) {
		in->verified = in->opt->verify;
		return in->verified ? sc_reader_verify_file(in->r) : 0;
	}
	in->verified = true; /* a stream decodes and checks everything as it passes */
	return 0;
}

/* The END record: from the offset the reader found it at to the trailer. */
static int locate_end(struct inspection *in)
{
	uint64_t off = sc_reader_end_offset(in->r);
	int err = sc_reader_index(in->r, &in->idx, &in->n);

	if (err < 0)
		return err;
	in->file_size = sc_reader_size(in->r);
	in->end = (struct sc_index_entry){
		.offset = off, .raw_len = (uint64_t)in->n * SC_INDEX_ENTRY_SIZE,
		.stored_len = in->file_size - SC_TRAILER_SIZE - off,
		.type = SC_REC_END, .flags = SC_RF_REQUIRED };
	return 0;
}

static int cmp_type(const void *a, const void *b)
{
	uint32_t x = ((const struct type_stat *)a)->type, y = ((const struct type_stat *)b)->type;

	return (x > y) - (x < y);
}

static void add_stat(struct type_stat *t, const struct sc_index_entry *e)
{
	t->count++;
	t->raw += e->raw_len;
	t->stored += e->stored_len;
}

/* Sort one entry per record by type, then fold each run of a type into one. */
static int group_types(struct inspection *in)
{
	struct type_stat *t = calloc(in->n + 1, sizeof(*t));
	size_t k = 0;

	if (!t)
		return sc_err(ENOMEM, "out of memory listing the records of '%s'",
			      sc_reader_name(in->r));
	for (size_t i = 0; i < in->n; i++) {
		t[i].type = in->idx[i].type;
		add_stat(&t[i], &in->idx[i]);
	}
	qsort(t, in->n, sizeof(*t), cmp_type);
	for (size_t i = 0; i < in->n; i++) {
		if (k && t[k - 1].type == t[i].type) {
			t[k - 1].count++;
			t[k - 1].raw += t[i].raw;
			t[k - 1].stored += t[i].stored;
		} else {
			t[k++] = t[i];
		}
	}
	t[k] = (struct type_stat){ .type = SC_REC_END };
	add_stat(&t[k++], &in->end);
	for (size_t i = 0; i < k; i++) {
		in->raw += t[i].raw;
		in->stored += t[i].stored;
	}
	in->types = t;
	in->n_types = k;
	return 0;
}

/* ---- text output: the process ---- */

/* One argument as a shell would need it: bare when safe, else in single quotes. */
static void print_arg(const char *a)
{
	const char *p;

	if (*a && strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			    "0123456789_@%+=:,./-") == strlen(a)) {
		sc_tool_print_text(stdout, a);
		return;
	}
	putchar('\'');
	for (p = a; *p; p++) {
		char c[2] = { *p, '\0' };

		if (*p == '\'')
			fputs("'\\''", stdout);
		else
			sc_tool_print_text(stdout, c);
	}
	putchar('\'');
}

static void print_command_line(const struct process_view *pv)
{
	fputs("command line  ", stdout);
	if (!pv->args) {
		puts("(not in the image)");
		return;
	}
	for (size_t i = 0; i < pv->args_len; i += strlen(pv->args + i) + 1) {
		fputs(i ? " " : "", stdout);
		print_arg(pv->args + i);
	}
	puts(pv->args_cut ? " ..." : "");
}

static void print_process(const struct process_view *pv)
{
	const struct sc_process_info *p = &pv->proc;

	fputs("program       ", stdout);
	sc_tool_print_text(stdout, *p->exe ? p->exe : "(unknown)");
	putchar('\n');
	print_command_line(pv);
	printf("pid           %u (parent %u), uid %u, gid %u, umask %04o\n", p->pid, p->ppid,
	       p->uid, p->gid, p->umask);
	fputs("directory     ", stdout);
	sc_tool_print_text(stdout, p->cwd);
	putchar('\n');
}

static const char *signal_set(char *buf, size_t n, uint64_t set)
{
	if (!set)
		return "none";
	snprintf(buf, n, "0x%016llx", (unsigned long long)set);
	return buf;
}

static void print_threads(const struct process_view *pv)
{
	char blocked[24], pending[24];

	printf("\nthreads       %zu\n", pv->threads_n);
	if (pv->threads_n)
		printf("  %-10s %-18s  %-18s  %s\n", "tid", "fs base", "blocked signals",
		       "pending signals");
	for (size_t i = 0; i < pv->threads_n; i++) {
		const struct sc_thread_record *t = &pv->threads[i];

		printf("  %-10d 0x%016llx  %-18s  %s%s\n", t->tid, (unsigned long long)t->fs_base,
		       signal_set(blocked, sizeof(blocked), t->sigmask),
		       signal_set(pending, sizeof(pending), t->pending),
		       t->flags & 1 ? "  (made the checkpoint)" : "");
	}
}

static const char *fd_kind_name(enum sc_fd_kind k)
{
	static const char *const names[] = {
		[SC_FD_REGULAR] = "file", [SC_FD_DIR] = "directory",
		[SC_FD_PIPE_R] = "pipe-read", [SC_FD_PIPE_W] = "pipe-write",
		[SC_FD_MEMFD] = "memfd", [SC_FD_DELETED] = "deleted", [SC_FD_SOCKET] = "socket",
		[SC_FD_CHAR] = "device", [SC_FD_OTHER] = "other", [SC_FD_EVENTFD] = "eventfd",
		[SC_FD_TIMERFD] = "timerfd", [SC_FD_SIGNALFD] = "signalfd",
		[SC_FD_INOTIFY] = "inotify", [SC_FD_EPOLL] = "epoll", [SC_FD_UNIX] = "unix-socket",
		[SC_FD_INET] = "inet-socket", [SC_FD_PIDFD] = "pidfd",
	};

	return (unsigned)k <= SC_FD_KIND_LAST ? names[k] : "unknown";
}

/* O_ACCMODE and the status flags, as names; O_LARGEFILE (always set) left out. */
static const char *open_flags_text(char *buf, size_t n, const struct sc_fd *f)
{
	static const struct { int flag; const char *name; } names[] = {
		{ O_APPEND, "O_APPEND" }, { O_NONBLOCK, "O_NONBLOCK" },
		{ O_SYNC, "O_SYNC" }, { O_DSYNC, "O_DSYNC" }, /* O_SYNC includes O_DSYNC */
		{ O_DIRECT, "O_DIRECT" }, { O_NOATIME, "O_NOATIME" }, { O_PATH, "O_PATH" },
		{ O_ASYNC, "O_ASYNC" },
	};
	static const char *const modes[] = { "O_RDONLY", "O_WRONLY", "O_RDWR", "O_ACCMODE" };
	int rest = f->open_flags & ~(O_ACCMODE | KERNEL_O_LARGEFILE);
	size_t len = (size_t)snprintf(buf, n, "%s", modes[f->open_flags & O_ACCMODE]);

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if ((rest & names[i].flag) == names[i].flag && len < n) {
			len += (size_t)snprintf(buf + len, n - len, "|%s", names[i].name);
			rest &= ~names[i].flag;
		}
	}
	if (rest && len < n)
		len += (size_t)snprintf(buf + len, n - len, "|0%o", (unsigned)rest);
	if ((f->fd_flags & FD_CLOEXEC) && len < n)
		snprintf(buf + len, n - len, "|O_CLOEXEC");
	return buf;
}

/* What a restore does with the descriptor, when that is not "opened again as it was". */
static const char *fd_fate(const struct sc_fd *f)
{
	if (f->fd <= 2 && !(f->fd_flags & SC_FD_OWN_STDIO))
		return "the restorer's own";
	if (f->fd_flags & SC_FD_IN_FLIGHT)
		return "in flight in a socket's queue only";
	if (f->kind == SC_FD_SOCKET || f->kind == SC_FD_OTHER)
		return "comes back closed";
	return NULL;
}

/* The other descriptors that share @f's open file description, as "shares with 1, 5". */
static void print_sharers(const struct process_view *pv, const struct sc_fd *f)
{
	bool first = true;

	if (!f->share_id)
		return;
	if (fd_fate(f) || f->data_len)
		fputs("; ", stdout);
	for (size_t i = 0; i < pv->fds_n; i++) {
		if (pv->fds[i].share_id != f->share_id || pv->fds[i].fd == f->fd)
			continue;
		printf("%s%d", first ? "shares its file description with " : ", ", pv->fds[i].fd);
		first = false;
	}
}

static void print_fd(const struct process_view *pv, const struct sc_fd *f)
{
	char flags[160], off[24], size[SC_TOOL_SIZE_BUF];
	const char *fate = fd_fate(f);
	bool pipe = f->kind == SC_FD_PIPE_R || f->kind == SC_FD_PIPE_W;

	snprintf(off, sizeof(off), "%llu", (unsigned long long)f->pos);
	printf("  %-5d %-10s %12s  %-28s ", f->fd, fd_kind_name(f->kind),
	       pipe || f->kind == SC_FD_SOCKET ? "-" : off,
	       open_flags_text(flags, sizeof(flags), f));
	sc_tool_print_text(stdout, f->path);
	if (fate || f->share_id || f->data_len) {
		fputs("  (", stdout);
		if (fate)
			fputs(fate, stdout);
		else if (f->data_len)
			printf("%s of contents saved", sc_tool_size(size, f->data_len));
		print_sharers(pv, f);
		putchar(')');
	}
	putchar('\n');
}

static void print_fds(const struct process_view *pv)
{
	printf("\ndescriptors   %zu\n", pv->fds_n);
	if (pv->fds_n)
		printf("  %-5s %-10s %12s  %-28s %s\n", "fd", "kind", "offset", "flags", "path");
	for (size_t i = 0; i < pv->fds_n; i++)
		print_fd(pv, &pv->fds[i]);
	putchar('\n');
}

/* ---- text output ---- */

static const char *time_utc(char *buf, size_t n, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, n, "(out of range)");
	return buf;
}

static const char *type_label(char *buf, size_t n, uint32_t type)
{
	const char *name = sc_record_type_name(type);

	if (type == SC_REC_END)
		return "end (index)";
	if (name)
		return name;
	snprintf(buf, n, "unknown 0x%x", type);
	return buf;
}

static void print_ratio(uint64_t stored, uint64_t raw)
{
	if (raw)
		printf("  %10.3f\n", (double)stored / (double)raw);
	else
		printf("  %10s\n", "-");
}

static void print_header(const struct inspection *in)
{
	const struct sc_header *h = sc_reader_header(in->r);
	char when[64];

	fputs("file          ", stdout);
	sc_tool_print_text(stdout, strcmp(in->opt->path, "-") ? in->opt->path : "(standard input)");
	printf("\nformat        %u.%u (header %u bytes)\nproducer      ", h->major, h->minor,
	       h->header_size);
	sc_tool_print_text(stdout, h->producer);
	if (h->arch == SC_ARCH_X86_64)
		printf("\narchitecture  x86-64\n");
	else
		printf("\narchitecture  %u\n", h->arch);
	printf("page size     %u\nkernel        ", h->page_size);
	sc_tool_print_text(stdout, h->kernel);
	printf("\ncreated       %s\n", time_utc(when, sizeof(when), h->created_ns));
	printf("flags         0x%llx%s\n", (unsigned long long)h->flags,
	       h->flags & SC_HF_INCREMENTAL ? " (incremental: it needs the images below)" : "");
	if (in->has_parent)
		sc_chain_view_print(&in->chain, stdout);
	putchar('\n');
}

static void print_devices(const struct devmem_stat *st)
{
	bool first = true;

	fputs("devices       ", stdout);
	for (unsigned d = 0; d < DEVICES_MAX; d++) {
		if (st->devices & 1ull << d) {
			printf("%s%u", first ? "" : ", ", d);
			first = false;
		}
	}
	if (st->other_devices)
		printf("%s%llu records on devices %d and above", first ? "" : "; ",
		       (unsigned long long)st->other_devices, DEVICES_MAX);
	else if (first)
		fputs("none in the devmem records", stdout);
	putchar('\n');
}

static void print_kernels(const struct sc_module_info *mi)
{
	fputs("       kernels  ", stdout);
	if (!mi->kernels_n)
		fputs(mi->kernels_partial ? "unknown (code compressed in a way not read here)"
					  : "none", stdout);
	for (size_t i = 0; i < mi->kernels_n; i++) {
		fputs(i ? ", " : "", stdout);
		sc_tool_print_text(stdout, mi->kernels[i]);
	}
	if (mi->kernels_n && mi->kernels_partial)
		fputs(" (maybe more: some code is compressed in a way not read here)", stdout);
	putchar('\n');
}

static void print_module(size_t i, const struct sc_cuda_module *m)
{
	char size[SC_TOOL_SIZE_BUF], archs[ARCHS_TEXT];

	printf("  %-4zu %-8s %-7s %11s  ", i, m->library ? "library" : "module",
	       sc_module_format_name(m->info.format), sc_tool_size(size, m->len));
	if (m->err) {
		fputs("damaged: ", stdout);
		sc_tool_print_text(stdout, m->why);
		putchar('\n');
		return;
	}
	puts(sc_module_archs_text(&m->info, archs, sizeof(archs)));
	if (m->info.format != SC_MODULE_UNKNOWN)
		print_kernels(&m->info);
}

static void print_cuda(const struct inspection *in)
{
	const struct sc_cuda_summary *s = &in->cuda.sum;
	const uint64_t *b = in->devmem.bytes;
	char t[5][SC_TOOL_SIZE_BUF];

	printf("\nCUDA (cuda-log record %u, log version %u)\n", in->cuda.seq, s->version);
	printf("device memory %s mapped, %s stored (device %s, globals %s, arrays %s)\n",
	       sc_tool_size(t[0], s->device_bytes),
	       sc_tool_size(t[1], b[SC_DEVMEM_DEVICE] + b[SC_DEVMEM_GLOBAL] + b[SC_DEVMEM_ARRAY]),
	       sc_tool_size(t[2], b[SC_DEVMEM_DEVICE]), sc_tool_size(t[3], b[SC_DEVMEM_GLOBAL]),
	       sc_tool_size(t[4], b[SC_DEVMEM_ARRAY]));
	printf("pinned host   %s, %s stored\n", sc_tool_size(t[0], s->host_bytes),
	       sc_tool_size(t[1], b[SC_DEVMEM_HOST]));
	printf("arena blocks  %u\ndevmem        %llu records\n", s->blocks,
	       (unsigned long long)in->devmem.records);
	if (in->devmem.parent_records)
		printf("left to the parent %llu pieces, %s of device memory\n",
		       (unsigned long long)in->devmem.parent_records,
		       sc_tool_size(t[0], in->devmem.parent_bytes));
	print_devices(&in->devmem);
	printf("modules       %zu\n", in->cuda.mods_n);
	if (in->cuda.mods_n)
		printf("  %-4s %-8s %-7s %11s  %s\n", "#", "kind", "format", "size",
		       "architectures");
	for (size_t i = 0; i < in->cuda.mods_n; i++)
		print_module(i, &in->cuda.mods[i]);
}

/* Which of the two CUDA modes made the image (README, "CUDA programs"). */
static void print_cuda_mode(const struct inspection *in)
{
	const struct sc_cuda_driver *d = &in->driver;

	if (in->has_driver) {
		printf("CUDA mode     driver-assisted (cuda-driver record %u): the CUDA driver's "
		       "process checkpoint of process %u", in->driver_seq, d->pid);
		if (d->driver_version)
			printf(", driver API %u.%u", d->driver_version / 1000,
			       d->driver_version % 1000 / 10);
		printf(", %u thread names; a restart needs process id %u\n", d->threads, d->pid);
	}
	if (in->has_cuda)
		printf("CUDA mode     proxy (cuda-log record %u)\n", in->cuda.seq);
}

static void print_text(const struct inspection *in)
{
	char a[SC_TOOL_SIZE_BUF], b[SC_TOOL_SIZE_BUF], label[32];

	print_header(in);
	if (in->pv.has_process)
		print_process(&in->pv);
	if (in->pv.has_process || in->pv.threads_n)
		print_threads(&in->pv);
	if (in->pv.has_process || in->pv.fds_n)
		print_fds(&in->pv);
	printf("%-18s %8s %12s %12s  %10s\n", "type", "count", "raw", "stored", "stored/raw");
	for (size_t i = 0; i < in->n_types; i++) {
		const struct type_stat *t = &in->types[i];

		printf("%-18s %8llu %12s %12s", type_label(label, sizeof(label), t->type),
		       (unsigned long long)t->count, sc_tool_size(a, t->raw),
		       sc_tool_size(b, t->stored));
		print_ratio(t->stored, t->raw);
	}
	printf("%-18s %8llu %12s %12s", "total", (unsigned long long)in->n + 1,
	       sc_tool_size(a, in->raw), sc_tool_size(b, in->stored));
	print_ratio(in->stored, in->raw);
	printf("file size     %s (%llu bytes: header %u, records %llu, trailer %u)\n",
	       sc_tool_size(a, in->file_size), (unsigned long long)in->file_size,
	       sc_reader_header(in->r)->header_size, (unsigned long long)in->stored,
	       SC_TRAILER_SIZE);
	if (in->verified)
		printf("verified: every checksum matches\n");
	print_cuda_mode(in);
	if (in->has_cuda)
		print_cuda(in);
}

/* ---- JSON output ---- */

static void json_header(const struct inspection *in)
{
	const struct sc_header *h = sc_reader_header(in->r);
	char when[64];

	printf("  \"header\": {\"format_major\": %u, \"format_minor\": %u, \"header_size\": %u, "
	       "\"producer\": ", h->major, h->minor, h->header_size);
	sc_tool_print_json_string(stdout, h->producer);
	printf(", \"arch\": %u, \"arch_name\": %s, \"page_size\": %u, \"kernel\": ", h->arch,
	       h->arch == SC_ARCH_X86_64 ? "\"x86-64\"" : "null", h->page_size);
	sc_tool_print_json_string(stdout, h->kernel);
	printf(", \"created_ns\": %llu, \"created\": \"%s\", \"flags\": %llu},\n",
	       (unsigned long long)h->created_ns, time_utc(when, sizeof(when), h->created_ns),
	       (unsigned long long)h->flags);
	sc_chain_view_json(&in->chain, stdout);
}

static void json_args(const struct process_view *pv)
{
	fputs(", \"argv\": ", stdout);
	if (!pv->args) {
		fputs("null", stdout);
		return;
	}
	putchar('[');
	for (size_t i = 0; i < pv->args_len; i += strlen(pv->args + i) + 1) {
		fputs(i ? ", " : "", stdout);
		sc_tool_print_json_string(stdout, pv->args + i);
	}
	printf("], \"argv_complete\": %s", pv->args_cut ? "false" : "true");
}

/* "process": null for an image without a process record. */
static void json_process(const struct process_view *pv)
{
	const struct sc_process_info *p = &pv->proc;

	if (!pv->has_process) {
		printf("  \"process\": null,\n");
		return;
	}
	printf("  \"process\": {\"pid\": %u, \"ppid\": %u, \"uid\": %u, \"gid\": %u, "
	       "\"umask\": %u, \"exe\": ", p->pid, p->ppid, p->uid, p->gid, p->umask);
	sc_tool_print_json_string(stdout, p->exe);
	fputs(", \"cwd\": ", stdout);
	sc_tool_print_json_string(stdout, p->cwd);
	json_args(pv);
	printf("},\n");
}

static void json_threads(const struct process_view *pv)
{
	printf("  \"threads\": [\n");
	for (size_t i = 0; i < pv->threads_n; i++) {
		const struct sc_thread_record *t = &pv->threads[i];

		printf("    {\"tid\": %d, \"made_checkpoint\": %s, \"fs_base\": %llu, "
		       "\"blocked\": %llu, \"pending\": %llu}%s\n", t->tid,
		       t->flags & 1 ? "true" : "false", (unsigned long long)t->fs_base,
		       (unsigned long long)t->sigmask, (unsigned long long)t->pending,
		       i + 1 < pv->threads_n ? "," : "");
	}
	printf("  ],\n");
}

static void json_fd(const struct sc_fd *f, bool last)
{
	char flags[160];
	const char *fate = fd_fate(f);

	printf("    {\"fd\": %d, \"kind\": \"%s\", \"offset\": %llu, \"open_flags\": %d, "
	       "\"flags\": \"%s\", \"cloexec\": %s, \"path\": ", f->fd, fd_kind_name(f->kind),
	       (unsigned long long)f->pos, f->open_flags, open_flags_text(flags, sizeof(flags), f),
	       f->fd_flags & FD_CLOEXEC ? "true" : "false");
	sc_tool_print_json_string(stdout, f->path);
	printf(", \"share_id\": %llu, \"saved_bytes\": %zu, \"at_restore\": \"%s\"}%s\n",
	       (unsigned long long)f->share_id, f->data_len,
	       !fate ? "restored" : f->fd <= 2 ? "restorer" :
	       f->fd_flags & SC_FD_IN_FLIGHT ? "in_flight" : "closed", last ? "" : ",");
}

static void json_fds(const struct process_view *pv)
{
	printf("  \"descriptors\": [\n");
	for (size_t i = 0; i < pv->fds_n; i++)
		json_fd(&pv->fds[i], i + 1 == pv->fds_n);
	printf("  ],\n");
}

static void json_type_name(uint32_t type)
{
	const char *name = sc_record_type_name(type);

	if (name)
		printf("\"%s\"", name);
	else
		fputs("null", stdout);
}

static void json_record(size_t seq, const struct sc_index_entry *e, bool last)
{
	printf("    {\"seq\": %zu, \"type\": %u, \"type_name\": ", seq, e->type);
	json_type_name(e->type);
	printf(", \"flags\": %u, \"required\": %s, \"offset\": %llu, \"raw_len\": %llu, "
	       "\"stored_len\": %llu, \"meta_len\": %u}%s\n", e->flags,
	       e->flags & SC_RF_REQUIRED ? "true" : "false", (unsigned long long)e->offset,
	       (unsigned long long)e->raw_len, (unsigned long long)e->stored_len, e->meta_len,
	       last ? "" : ",");
}

static void json_totals(const struct inspection *in)
{
	printf("  \"totals\": {\n    \"by_type\": [\n");
	for (size_t i = 0; i < in->n_types; i++) {
		const struct type_stat *t = &in->types[i];

		printf("      {\"type\": %u, \"type_name\": ", t->type);
		json_type_name(t->type);
		printf(", \"count\": %llu, \"raw\": %llu, \"stored\": %llu}%s\n",
		       (unsigned long long)t->count, (unsigned long long)t->raw,
		       (unsigned long long)t->stored, i + 1 < in->n_types ? "," : "");
	}
	printf("    ],\n    \"raw\": %llu, \"stored\": %llu, \"file_size\": %llu\n  },\n",
	       (unsigned long long)in->raw, (unsigned long long)in->stored,
	       (unsigned long long)in->file_size);
}

static void json_archs(const struct sc_module_info *mi)
{
	char name[SC_MODULE_ARCH_NAME];

	fputs("\"archs\": [", stdout);
	for (size_t i = 0; i < mi->archs_n; i++) {
		const struct sc_module_arch *a = &mi->archs[i];

		printf("%s{\"name\": \"%s\", \"code\": \"%s\", \"major\": %u, \"minor\": %u, "
		       "\"variant\": ", i ? ", " : "", sc_module_arch_name(a, name, sizeof(name)),
		       sc_code_kind_name(a->code), a->major, a->minor);
		if (a->variant)
			printf("\"%c\"", a->variant);
		else
			fputs("null", stdout);
		printf(", \"compressed\": %s}", a->compressed ? "true" : "false");
	}
	fputs("]", stdout);
}

static void json_module(size_t i, const struct sc_cuda_module *m, bool last)
{
	const struct sc_module_info *mi = &m->info;

	printf("      {\"index\": %zu, \"kind\": \"%s\", \"format\": \"%s\", \"size\": %llu, ", i,
	       m->library ? "library" : "module", sc_module_format_name(mi->format),
	       (unsigned long long)m->len);
	json_archs(mi);
	fputs(", \"kernels\": [", stdout);
	for (size_t k = 0; k < mi->kernels_n; k++) {
		fputs(k ? ", " : "", stdout);
		sc_tool_print_json_string(stdout, mi->kernels[k]);
	}
	printf("], \"kernels_complete\": %s, \"error\": ",
	       !m->err && !mi->kernels_partial && mi->format != SC_MODULE_UNKNOWN ? "true"
										    : "false");
	if (m->err)
		sc_tool_print_json_string(stdout, m->why);
	else
		fputs("null", stdout);
	printf("}%s\n", last ? "" : ",");
}

static void json_devmem(const struct devmem_stat *st)
{
	bool first = true;

	printf("    \"devmem\": {\"records\": %llu, \"device\": %llu, \"global\": %llu, "
	       "\"array\": %llu, \"host\": %llu, \"devices\": [", (unsigned long long)st->records,
	       (unsigned long long)st->bytes[SC_DEVMEM_DEVICE],
	       (unsigned long long)st->bytes[SC_DEVMEM_GLOBAL],
	       (unsigned long long)st->bytes[SC_DEVMEM_ARRAY],
	       (unsigned long long)st->bytes[SC_DEVMEM_HOST]);
	for (unsigned d = 0; d < DEVICES_MAX; d++) {
		if (st->devices & 1ull << d) {
			printf("%s%u", first ? "" : ", ", d);
			first = false;
		}
	}
	printf("], \"records_on_other_devices\": %llu, \"parent_pieces\": %llu, "
	       "\"parent_bytes\": %llu},\n", (unsigned long long)st->other_devices,
	       (unsigned long long)st->parent_records, (unsigned long long)st->parent_bytes);
}

/* "cuda_mode": "proxy", "driver", "proxy+driver" or null; "cuda_driver": its record or null. */
static void json_cuda_mode(const struct inspection *in)
{
	const struct sc_cuda_driver *d = &in->driver;

	if (!in->has_cuda && !in->has_driver)
		printf("  \"cuda_mode\": null,\n");
	else
		printf("  \"cuda_mode\": \"%s\",\n", !in->has_driver ? "proxy" :
		       in->has_cuda ? "proxy+driver" : "driver");
	if (!in->has_driver)
		printf("  \"cuda_driver\": null,\n");
	else
		printf("  \"cuda_driver\": {\"record\": %u, \"pid\": %u, \"driver_version\": "
		       "%u, \"threads\": %u},\n", in->driver_seq, d->pid, d->driver_version,
		       d->threads);
}

/* "cuda": null for an image without a cuda-log record. */
static void json_cuda(const struct inspection *in)
{
	const struct sc_cuda_summary *s = &in->cuda.sum;

	if (!in->has_cuda) {
		printf("  \"cuda\": null,\n");
		return;
	}
	printf("  \"cuda\": {\n    \"record\": %u, \"log_version\": %u, \"device_bytes\": %llu, "
	       "\"host_bytes\": %llu, \"blocks\": %u, \"channel\": %llu,\n", in->cuda.seq,
	       s->version, (unsigned long long)s->device_bytes,
	       (unsigned long long)s->host_bytes, s->blocks, (unsigned long long)s->channel);
	json_devmem(&in->devmem);
	printf("    \"modules\": [\n");
	for (size_t i = 0; i < in->cuda.mods_n; i++)
		json_module(i, &in->cuda.mods[i], i + 1 == in->cuda.mods_n);
	printf("    ]\n  },\n");
}

static void print_json(const struct inspection *in)
{
	printf("{\n  \"schema_version\": 1,\n  \"file\": ");
	sc_tool_print_json_string(stdout, in->opt->path);
	printf(",\n");
	json_header(in);
	json_process(&in->pv);
	json_threads(&in->pv);
	json_fds(&in->pv);
	printf("  \"records\": [\n");
	for (size_t i = 0; i < in->n; i++)
		json_record(i, &in->idx[i], false);
	json_record(in->n, &in->end, true);
	printf("  ],\n");
	json_totals(in);
	json_cuda_mode(in);
	json_cuda(in);
	printf("  \"verified\": %s\n}\n", in->verified ? "true" : "false");
}

/* ---- main ---- */

static int flush_stdout(void)
{
	int e;

	errno = 0;
	if (!fflush(stdout) && !ferror(stdout))
		return 0;
	e = errno ? errno : EIO;
	return sc_err(e, "cannot write to standard output: %s", strerror(e));
}

static void close_input(struct inspection *in)
{
	sc_reader_free(in->r);
	free(in->types);
	sc_cuda_log_release(&in->cuda);
	sc_process_free(&in->pv.proc);
	free(in->pv.args);
	free(in->pv.threads);
	sc_fds_free(in->pv.fds, in->pv.fds_n);
}

/* A module that could not be described makes the image damaged, once it is shown. */
static int cuda_damage(const struct inspection *in)
{
	for (size_t i = 0; i < in->cuda.mods_n; i++) {
		const struct sc_cuda_module *m = &in->cuda.mods[i];

		if (m->err)
			return sc_err(-m->err, "module %zu (%s) in cuda-log record %u of '%s' is "
				      "damaged: %s", i, sc_module_format_name(m->info.format),
				      in->cuda.seq, sc_reader_name(in->r), m->why);
	}
	return 0;
}

static int inspect(const struct options *opt)
{
	struct inspection in = { .opt = opt };
	int err;

	err = open_input(&in);
	if (!err)
		err = walk_records(&in);
	if (!err)
		err = locate_end(&in);
	if (!err)
		err = group_types(&in);
	if (!err && in.has_parent && strcmp(opt->path, "-"))
		err = sc_chain_view(opt->path, &in.parent, opt->verify, &in.chain);
	if (!err) {
		if (opt->json)
			print_json(&in);
		else
			print_text(&in);
		err = flush_stdout();
	}
	if (!err)
		err = cuda_damage(&in);
	if (!err && opt->verify && in.chain.err) /* the image cannot be restored as it is */
		err = sc_err(-in.chain.err, "'%s' is incremental, and its chain is broken (see "
			     "above)", opt->path);
	sc_chain_view_free(&in.chain);
	sc_parent_free(&in.parent);
	close_input(&in);
	return err;
}

int main(int argc, char **argv)
{
	struct options opt = { 0 };
	const struct sc_settings *set;
	int ret;

	sc_tool_init(TOOL);
	set = sc_settings();
	ret = parse_args(argc, argv, &opt);
	if (ret >= 0)
		return ret;
	if (!opt.threads) /* --threads beats SELFCKPT_THREADS */
		opt.threads = set->threads;
	return sc_tool_exit_code(inspect(&opt));
}
