/* SPDX-License-Identifier: MIT */
/*
 * records.c - encoding and checking the process, thread, signals and segment
 * records (spec §9.3-9.7). Fields are written and read one by one with the
 * little-endian helpers; a decoder checks sizes and reserved fields before it
 * trusts a length.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sc_records.h"
#include "format/sc_log.h"

#define PROCESS_FIXED 200
#define PROCESS_FIXED_1_2 192 /* 1.2 and 1.3: before the login uid of 1.4 */
#define PROCESS_FIXED_1_0 184 /* before the attributes of 1.2 */
#define THREAD_FIXED 128
#define THREAD_FIXED_1_0 120 /* before the parent-death signal of 1.6 */
#define SIGNALS_FIXED 16
#define SEGMENT_FIXED 96
#define SEGMENT_FIXED_1_0 88 /* before the memory flags of 1.3 */
#define RUN_SIZE 16

static int meta_err(struct sc_reader *r, const struct sc_record *rec, int code, const char *fmt,
		    ...) __attribute__((format(printf, 4, 5)));

static int meta_err(struct sc_reader *r, const struct sc_record *rec, int code, const char *fmt,
		    ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return sc_err(code, "bad %s record %u in '%s' at offset %llu: %s",
		      sc_record_type_name(rec->type), rec->seq, sc_reader_name(r),
		      (unsigned long long)rec->offset, why);
}

static char *dup_bytes(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

/* ---- process ---- */

int sc_process_write(struct sc_writer *w, const struct sc_process_info *p)
{
	size_t cwd = strlen(p->cwd), exe = strlen(p->exe);
	size_t size = PROCESS_FIXED + 16 * SC_RLIMITS + cwd + exe + p->auxv_len;
	uint8_t *m = calloc(1, size), *v;
	int err;

	if (!m)
		return sc_err(ENOMEM, "out of memory writing the process record");
	sc_put_le32(m + 0, p->pid);
	sc_put_le32(m + 4, p->ppid);
	sc_put_le32(m + 8, p->uid);
	sc_put_le32(m + 12, p->gid);
	sc_put_le32(m + 16, p->umask);
	sc_put_le64(m + 24, p->start_brk);
	sc_put_le64(m + 32, p->brk);
	sc_put_le64(m + 40, p->start_stack);
	sc_put_le64(m + 48, p->arg_start);
	sc_put_le64(m + 56, p->arg_end);
	sc_put_le64(m + 64, p->env_start);
	sc_put_le64(m + 72, p->env_end);
	sc_put_le64(m + 80, p->vdso_block_start);
	sc_put_le64(m + 88, p->vdso_block_len);
	sc_put_le64(m + 96, p->vdso_offset);
	sc_put_le32(m + 104, SC_RLIMITS);
	sc_put_le32(m + 108, (uint32_t)cwd);
	sc_put_le32(m + 112, (uint32_t)exe);
	sc_put_le32(m + 116, (uint32_t)p->auxv_len);
	sc_put_le64(m + 120, p->start_code);
	sc_put_le64(m + 128, p->end_code);
	sc_put_le64(m + 136, p->start_data);
	sc_put_le64(m + 144, p->end_data);
	sc_put_le64(m + 152, p->vdso_len);
	sc_put_le64(m + 160, p->vdso_hash);
	sc_put_le64(m + 168, p->handoff);
	sc_put_le64(m + 176, p->thread_start);
	sc_put_le32(m + 184, (uint32_t)p->oom_score_adj);
	sc_put_le32(m + 188, p->attrs);
	sc_put_le32(m + 192, p->loginuid);
	v = m + PROCESS_FIXED; /* 196: reserved, 0 */
	for (int i = 0; i < SC_RLIMITS; i++, v += 16) {
		sc_put_le64(v, p->rlim_cur[i]);
		sc_put_le64(v + 8, p->rlim_max[i]);
	}
	memcpy(v, p->cwd, cwd);
	memcpy(v + cwd, p->exe, exe);
	memcpy(v + cwd + exe, p->auxv, p->auxv_len);
	err = sc_writer_record(w, SC_REC_PROCESS, SC_RF_REQUIRED, m, (uint32_t)size, NULL, 0);
	free(m);
	return err;
}

int sc_process_read(struct sc_reader *r, const struct sc_record *rec, struct sc_process_info *p)
{
	const uint8_t *m = rec->meta, *v;
	uint64_t n_rlim, cwd, exe, auxv;

	memset(p, 0, sizeof(*p));
	if (rec->meta_len < PROCESS_FIXED_1_0)
		return meta_err(r, rec, SELFCKPT_ELENGTH, "%u bytes of metadata, at least %d "
				"expected", rec->meta_len, PROCESS_FIXED_1_0);
	if (sc_get_le32(m + 20))
		return meta_err(r, rec, SELFCKPT_ERESERVED, "reserved field at 20 is set");
	n_rlim = sc_get_le32(m + 104);
	cwd = sc_get_le32(m + 108);
	exe = sc_get_le32(m + 112);
	auxv = sc_get_le32(m + 116);
	if (n_rlim > 64 || PROCESS_FIXED_1_0 + 16 * n_rlim + cwd + exe + auxv > rec->meta_len)
		return meta_err(r, rec, SELFCKPT_ELENGTH, "variable part (%llu limits, %llu + "
				"%llu + %llu bytes) exceeds the %u bytes of metadata",
				(unsigned long long)n_rlim, (unsigned long long)cwd,
				(unsigned long long)exe, (unsigned long long)auxv, rec->meta_len);
	p->pid = sc_get_le32(m);
	p->ppid = sc_get_le32(m + 4);
	p->uid = sc_get_le32(m + 8);
	p->gid = sc_get_le32(m + 12);
	p->umask = sc_get_le32(m + 16);
	p->start_brk = sc_get_le64(m + 24);
	p->brk = sc_get_le64(m + 32);
	p->start_stack = sc_get_le64(m + 40);
	p->arg_start = sc_get_le64(m + 48);
	p->arg_end = sc_get_le64(m + 56);
	p->env_start = sc_get_le64(m + 64);
	p->env_end = sc_get_le64(m + 72);
	p->vdso_block_start = sc_get_le64(m + 80);
	p->vdso_block_len = sc_get_le64(m + 88);
	p->vdso_offset = sc_get_le64(m + 96);
	p->start_code = sc_get_le64(m + 120);
	p->end_code = sc_get_le64(m + 128);
	p->start_data = sc_get_le64(m + 136);
	p->end_data = sc_get_le64(m + 144);
	p->vdso_len = sc_get_le64(m + 152);
	p->vdso_hash = sc_get_le64(m + 160);
	p->handoff = sc_get_le64(m + 168);
	p->thread_start = sc_get_le64(m + 176);
	/* The variable part ends the meta: newer minors grow the fixed part. */
	v = m + rec->meta_len - (16 * n_rlim + cwd + exe + auxv);
	if (v >= m + PROCESS_FIXED_1_2) { /* 1.2: the attributes */
		p->oom_score_adj = (int32_t)sc_get_le32(m + 184);
		p->attrs = sc_get_le32(m + 188);
	}
	if (v >= m + PROCESS_FIXED) /* 1.4: the login uid */
		p->loginuid = sc_get_le32(m + 192);
	else
		p->attrs &= ~SC_ATTR_LOGINUID;
	for (uint64_t i = 0; i < n_rlim; i++, v += 16)
		if (i < SC_RLIMITS) {
			p->rlim_cur[i] = sc_get_le64(v);
			p->rlim_max[i] = sc_get_le64(v + 8);
		}
	p->cwd = dup_bytes(v, cwd);
	p->exe = dup_bytes(v + cwd, exe);
	p->auxv = (uint8_t *)dup_bytes(v + cwd + exe, auxv);
	p->auxv_len = auxv;
	if (!p->cwd || !p->exe || !p->auxv) {
		sc_process_free(p);
		return sc_err(ENOMEM, "out of memory reading '%s'", sc_reader_name(r));
	}
	return 0;
}

void sc_process_free(struct sc_process_info *p)
{
	free(p->cwd);
	free(p->exe);
	free(p->auxv);
	p->cwd = p->exe = NULL;
	p->auxv = NULL;
}

/* ---- thread ---- */

int sc_thread_write(struct sc_writer *w, const struct sc_thread_record *t)
{
	uint8_t m[THREAD_FIXED] = { 0 };

	sc_put_le32(m + 0, (uint32_t)t->tid);
	sc_put_le32(m + 4, t->flags);
	sc_put_le64(m + 8, t->fs_base);
	sc_put_le64(m + 16, t->gs_base);
	sc_put_le64(m + 24, t->tid_addr);
	sc_put_le64(m + 32, t->robust_head);
	sc_put_le64(m + 40, t->robust_len);
	sc_put_le64(m + 48, t->rseq_addr);
	sc_put_le32(m + 56, t->rseq_len);
	sc_put_le32(m + 60, t->rseq_sig);
	sc_put_le64(m + 64, t->ss_sp);
	sc_put_le64(m + 72, t->ss_size);
	sc_put_le32(m + 80, t->ss_flags);
	sc_put_le64(m + 88, t->sigmask);
	sc_put_le64(m + 96, t->pending);
	sc_put_le32(m + 104, sizeof(t->ctx));
	sc_put_le64(m + 112, t->state);
	sc_put_le32(m + 120, t->pdeath_sig);
	return sc_writer_record(w, SC_REC_THREAD, SC_RF_REQUIRED, m, sizeof(m), t->ctx,
				sizeof(t->ctx));
}

int sc_thread_read(struct sc_reader *r, const struct sc_record *rec, struct sc_thread_record *t)
{
	const uint8_t *m = rec->meta;

	memset(t, 0, sizeof(*t));
	if (rec->meta_len < THREAD_FIXED_1_0)
		return meta_err(r, rec, SELFCKPT_ELENGTH, "%u bytes of metadata, at least %d "
				"expected", rec->meta_len, THREAD_FIXED_1_0);
	if ((sc_get_le32(m + 4) & ~1u) || sc_get_le32(m + 84) || sc_get_le32(m + 108) ||
	    (rec->meta_len >= THREAD_FIXED && sc_get_le32(m + 124)))
		return meta_err(r, rec, SELFCKPT_ERESERVED, "reserved bits are set");
	if (sc_get_le32(m + 104) != rec->raw_len || rec->raw_len != sizeof(t->ctx))
		return meta_err(r, rec, SELFCKPT_ELENGTH, "context of %llu bytes, expected %zu",
				(unsigned long long)rec->raw_len, sizeof(t->ctx));
	t->tid = (int32_t)sc_get_le32(m);
	t->flags = sc_get_le32(m + 4);
	t->fs_base = sc_get_le64(m + 8);
	t->gs_base = sc_get_le64(m + 16);
	t->tid_addr = sc_get_le64(m + 24);
	t->robust_head = sc_get_le64(m + 32);
	t->robust_len = sc_get_le64(m + 40);
	t->rseq_addr = sc_get_le64(m + 48);
	t->rseq_len = sc_get_le32(m + 56);
	t->rseq_sig = sc_get_le32(m + 60);
	t->ss_sp = sc_get_le64(m + 64);
	t->ss_size = sc_get_le64(m + 72);
	t->ss_flags = sc_get_le32(m + 80);
	t->sigmask = sc_get_le64(m + 88);
	t->pending = sc_get_le64(m + 96);
	t->state = sc_get_le64(m + 112);
	if (rec->meta_len >= THREAD_FIXED) /* 1.6 */
		t->pdeath_sig = sc_get_le32(m + 120);
	return sc_reader_read(r, t->ctx, sizeof(t->ctx));
}

/* ---- signals ---- */

int sc_signals_write(struct sc_writer *w, const struct sc_signals_info *s)
{
	uint8_t m[SIGNALS_FIXED + 32 * SC_SIGNALS] = { 0 };

	sc_put_le32(m, SC_SIGNALS);
	sc_put_le64(m + 8, s->pending);
	for (int i = 0; i < SC_SIGNALS; i++) {
		uint8_t *a = m + SIGNALS_FIXED + 32 * i;

		sc_put_le64(a, s->act[i].handler);
		sc_put_le64(a + 8, s->act[i].flags);
		sc_put_le64(a + 16, s->act[i].restorer);
		sc_put_le64(a + 24, s->act[i].mask);
	}
	return sc_writer_record(w, SC_REC_SIGNALS, SC_RF_REQUIRED, m, sizeof(m), NULL, 0);
}

int sc_signals_read(struct sc_reader *r, const struct sc_record *rec, struct sc_signals_info *s)
{
	const uint8_t *m = rec->meta;
	uint32_t count;

	memset(s, 0, sizeof(*s));
	if (rec->meta_len < SIGNALS_FIXED)
		return meta_err(r, rec, SELFCKPT_ELENGTH, "%u bytes of metadata", rec->meta_len);
	count = sc_get_le32(m);
	if (sc_get_le32(m + 4))
		return meta_err(r, rec, SELFCKPT_ERESERVED, "reserved field at 4 is set");
	if (count > 1024 || 32ull * count > rec->meta_len - SIGNALS_FIXED)
		return meta_err(r, rec, SELFCKPT_ELENGTH, "%u actions do not fit in %u bytes",
				count, rec->meta_len);
	s->pending = sc_get_le64(m + 8);
	for (uint32_t i = 0; i < count && i < SC_SIGNALS; i++) {
		const uint8_t *a = m + rec->meta_len - 32ull * count + 32 * i;

		s->act[i] = (struct sc_sigaction_record){ sc_get_le64(a), sc_get_le64(a + 8),
							  sc_get_le64(a + 16), sc_get_le64(a + 24) };
	}
	return 0;
}

/* ---- segment ---- */

uint64_t sc_segment_stored_pages(const struct sc_segment_info *s)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < s->n_runs; i++)
		n += s->runs[i].kind == SC_RUN_STORED ? s->runs[i].count : 0;
	return n;
}

int sc_segment_begin(struct sc_writer *w, const struct sc_segment_info *s, uint64_t page_size)
{
	size_t path = strlen(s->path), size = SEGMENT_FIXED + RUN_SIZE * (size_t)s->n_runs + path;
	uint8_t *m = calloc(1, size), *v;
	int err;

	if (!m)
		return sc_err(ENOMEM, "out of memory writing a segment record");
	sc_put_le64(m + 0, s->start);
	sc_put_le64(m + 8, s->length);
	sc_put_le32(m + 16, s->prot);
	sc_put_le32(m + 20, s->flags);
	sc_put_le64(m + 24, s->offset);
	sc_put_le64(m + 32, s->dev);
	sc_put_le64(m + 40, s->inode);
	sc_put_le64(m + 48, s->file_size);
	sc_put_le64(m + 56, s->mtime_ns);
	sc_put_le32(m + 64, s->n_runs);
	sc_put_le16(m + 68, (uint16_t)path);
	sc_put_le64(m + 72, s->vma_start);
	sc_put_le64(m + 80, s->vma_end);
	sc_put_le32(m + 88, s->vmflags);
	v = m + SEGMENT_FIXED;
	for (uint32_t i = 0; i < s->n_runs; i++, v += RUN_SIZE) {
		sc_put_le64(v, s->runs[i].first);
		sc_put_le32(v + 8, s->runs[i].count);
		v[12] = s->runs[i].kind;
	}
	memcpy(v, s->path, path);
	err = sc_writer_begin(w, SC_REC_SEGMENT, SC_RF_REQUIRED, m, (uint32_t)size,
			      sc_segment_stored_pages(s) * page_size);
	free(m);
	return err;
}

static void segment_fields(struct sc_segment_info *s, const uint8_t *m)
{
	s->start = sc_get_le64(m);
	s->length = sc_get_le64(m + 8);
	s->prot = sc_get_le32(m + 16);
	s->flags = sc_get_le32(m + 20);
	s->offset = sc_get_le64(m + 24);
	s->dev = sc_get_le64(m + 32);
	s->inode = sc_get_le64(m + 40);
	s->file_size = sc_get_le64(m + 48);
	s->mtime_ns = sc_get_le64(m + 56);
	s->n_runs = sc_get_le32(m + 64);
	s->vma_start = sc_get_le64(m + 72);
	s->vma_end = sc_get_le64(m + 80);
}

static int check_segment_shape(struct sc_reader *r, const struct sc_record *rec,
			       const struct sc_segment_info *s, uint64_t page)
{
	if (s->start % page || s->length == 0 || s->length % page || s->start + s->length < s->start ||
	    s->vma_start > s->start || s->vma_end < s->start + s->length || s->vma_start % page ||
	    s->vma_end % page)
		return meta_err(r, rec, SELFCKPT_ELENGTH,
				"window 0x%llx+0x%llx of mapping 0x%llx-0x%llx is not page-aligned "
				"or lies outside it", (unsigned long long)s->start,
				(unsigned long long)s->length, (unsigned long long)s->vma_start,
				(unsigned long long)s->vma_end);
	if ((s->flags & ~SC_SEG_KNOWN) || (s->prot & ~7u) || (s->vmflags & ~SC_VMF_DEFINED))
		return meta_err(r, rec, SELFCKPT_ERESERVED, "unknown flags 0x%x, prot 0x%x or "
				"memory flags 0x%x", s->flags, s->prot, s->vmflags);
	return 0;
}

/* [R-SEG-1] 1.3: the memory flags, where the fixed part reaches them. */
static int segment_vmflags(struct sc_reader *r, const struct sc_record *rec,
			   struct sc_segment_info *s, uint64_t fixed)
{
	const uint8_t *m = rec->meta;

	if (fixed < SEGMENT_FIXED)
		return 0;
	s->vmflags = sc_get_le32(m + 88);
	if (sc_get_le32(m + 92))
		return meta_err(r, rec, SELFCKPT_ERESERVED, "reserved field at 92 is set");
	return 0;
}

/* [R-INC-5] parent runs: in an incremental image, in private memory of no file. */
static bool parent_runs_allowed(struct sc_reader *r, const struct sc_segment_info *s)
{
	return (sc_reader_header(r)->flags & SC_HF_INCREMENTAL) &&
	       !(s->flags & (SC_SEG_SHARED | SC_SEG_FILE | SC_SEG_SYSV | SC_SEG_HELD));
}

static const char *parent_runs_where(struct sc_reader *r, const struct sc_segment_info *s)
{
	if (!(sc_reader_header(r)->flags & SC_HF_INCREMENTAL))
		return "an image that is not incremental";
	return s->flags & SC_SEG_SHARED ? "a shared mapping" : "a mapping of a file";
}

/* [R-SEG-3] runs tile the window; [R-SEG-4] the payload holds the stored pages. */
static int parse_runs(struct sc_reader *r, const struct sc_record *rec, struct sc_segment_info *s,
		      const uint8_t *v, uint64_t page)
{
	uint64_t next = 0;

	s->runs = calloc(s->n_runs ? s->n_runs : 1, sizeof(*s->runs));
	if (!s->runs)
		return sc_err(ENOMEM, "out of memory reading '%s'", sc_reader_name(r));
	for (uint32_t i = 0; i < s->n_runs; i++, v += RUN_SIZE) {
		struct sc_run *run = &s->runs[i];

		run->first = sc_get_le64(v);
		run->count = sc_get_le32(v + 8);
		run->kind = v[12];
		if (v[13] | v[14] | v[15])
			return meta_err(r, rec, SELFCKPT_ERESERVED, "run %u has reserved bytes", i);
		if (run->kind > SC_RUN_PARENT)
			return meta_err(r, rec, SELFCKPT_EUNKNOWN, "run %u has unknown kind %u", i,
					run->kind);
		if (run->kind == SC_RUN_PARENT && !parent_runs_allowed(r, s))
			return meta_err(r, rec, SELFCKPT_ELENGTH, "run %u leaves its pages to a parent "
					"image, in %s", i, parent_runs_where(r, s));
		if (run->first != next || run->count == 0)
			return meta_err(r, rec, SELFCKPT_ELENGTH, "run %u starts at page %llu, "
					"expected %llu", i, (unsigned long long)run->first,
					(unsigned long long)next);
		next += run->count;
	}
	if (next != s->length / page || sc_segment_stored_pages(s) * page != rec->raw_len)
		return meta_err(r, rec, SELFCKPT_ELENGTH, "runs cover %llu pages of %llu, or the "
				"payload (%llu bytes) is not their stored pages",
				(unsigned long long)next, (unsigned long long)(s->length / page),
				(unsigned long long)rec->raw_len);
	return 0;
}

int sc_segment_read(struct sc_reader *r, const struct sc_record *rec, uint64_t page_size,
		    struct sc_segment_info *s)
{
	const uint8_t *m = rec->meta;
	uint64_t var;
	uint16_t path;
	int err;

	memset(s, 0, sizeof(*s));
	if (rec->meta_len < SEGMENT_FIXED_1_0)
		return meta_err(r, rec, SELFCKPT_ELENGTH, "%u bytes of metadata, at least %d "
				"expected", rec->meta_len, SEGMENT_FIXED_1_0);
	segment_fields(s, m);
	path = sc_get_le16(m + 68);
	if (sc_get_le16(m + 70))
		return meta_err(r, rec, SELFCKPT_ERESERVED, "reserved field at 70 is set");
	var = RUN_SIZE * (uint64_t)s->n_runs + path;
	if (var > rec->meta_len - SEGMENT_FIXED_1_0)
		return meta_err(r, rec, SELFCKPT_ELENGTH, "%u runs and a %u-byte path do not fit "
				"in %u bytes", s->n_runs, path, rec->meta_len);
	/* The variable part ends the meta: newer minors grow the fixed part. */
	if ((err = segment_vmflags(r, rec, s, rec->meta_len - var)) < 0 ||
	    (err = check_segment_shape(r, rec, s, page_size)) < 0)
		return err;
	err = parse_runs(r, rec, s, m + rec->meta_len - var, page_size);
	if (!err && !(s->path = dup_bytes(m + rec->meta_len - path, path)))
		err = sc_err(ENOMEM, "out of memory reading '%s'", sc_reader_name(r));
	if (err)
		sc_segment_free(s);
	return err;
}

void sc_segment_free(struct sc_segment_info *s)
{
	free(s->runs);
	free(s->path);
	s->runs = NULL;
	s->path = NULL;
}
