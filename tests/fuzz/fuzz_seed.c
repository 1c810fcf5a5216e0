/* SPDX-License-Identifier: MIT */
/*
 * fuzz_seed.c - seeds for the record fuzz targets (fuzz_records.c), from real
 * images, in their input layout (fuzz_records.h).
 *
 *   fuzz_seed DIR IMAGE...           DIR/<target>/ gets, for each IMAGE that has
 *                                    records of the target's type, one seed with
 *                                    them all and one seed per record (the first
 *                                    SEEDS_PER_IMAGE)
 *   fuzz_seed --modules DIR FILE...  DIR/cuda_log/ gets one seed: a cuda-log
 *                                    record holding the module images FILE...
 *
 * A damaged image gives the records read before the damage. A segment's
 * payload is not read by the decoders under test, so its seed carries one page
 * of it; a segment with more stored pages than FUZZ_RAW_MAX holds has its
 * stored runs turned into zero runs instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda/shared/gpu_records.h"
#include "format/sc_format.h"
#include "format/sc_log.h"
#include "tests/fuzz/fuzz_records.h"

#define SEEDS_PER_IMAGE 32
#define SEGMENT_FIXED 88
#define RUN_SIZE 16
#define PAGE 4096u

/* A growing buffer: the seed of one target. */
struct buf {
	uint8_t *b;
	size_t n, cap;
};

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "fuzz_seed: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2;
		if (!(b->b = realloc(b->b, b->cap)))
			die("out of memory%s", "");
	}
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put_rec(struct buf *b, const uint8_t *meta, uint32_t meta_len, uint32_t raw_len,
		    const uint8_t *data, uint32_t data_len)
{
	uint8_t h[FUZZ_REC_HEADER];

	fuzz_rec_header(h, meta_len, raw_len, data_len);
	put(b, h, sizeof(h));
	put(b, meta, meta_len);
	put(b, data, data_len);
}

static void save(const char *dir, const char *target, const char *name, const struct buf *b)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, target);
	if (mkdir(path, 0755) && errno != EEXIST)
		die("cannot create '%s'", path);
	snprintf(path, sizeof(path), "%s/%s/%s", dir, target, name);
	f = fopen(path, "wb");
	if (!f || fwrite(b->b, 1, b->n, f) != b->n || fclose(f))
		die("cannot write '%s'", path);
}

static const char *target_of(uint32_t type)
{
	for (size_t i = 0; i < FUZZ_TARGETS_N; i++)
		if (fuzz_targets[i].type == type)
			return fuzz_targets[i].name;
	return NULL;
}

/* A segment whose stored pages do not fit: every stored run becomes a zero run. */
static uint32_t shrink_segment(uint8_t *meta, uint32_t meta_len, uint64_t raw_len)
{
	uint64_t runs, path;

	if (raw_len <= FUZZ_RAW_MAX || meta_len < SEGMENT_FIXED)
		return (uint32_t)raw_len;
	runs = sc_get_le32(meta + 64);
	path = sc_get_le16(meta + 68);
	if (runs * RUN_SIZE + path > meta_len - SEGMENT_FIXED)
		return FUZZ_RAW_MAX;
	for (uint64_t i = 0; i < runs; i++) {
		uint8_t *run = meta + meta_len - path - (runs - i) * RUN_SIZE;

		if (run[12] == 0)
			run[12] = 1;
	}
	return 0;
}

/*
 * The record the reader stands on, appended to @all, and saved alone as seed
 * NAME.SEQ when @alone.
 */
static int take(struct sc_reader *r, const struct sc_record *rec, const char *dir,
		const char *name, struct buf *all, uint8_t *data, bool alone)
{
	const char *target = target_of(rec->type);
	uint8_t *meta = malloc(rec->meta_len ? rec->meta_len : 1);
	uint32_t raw_len = (uint32_t)rec->raw_len, data_len;
	struct buf one = { 0 };
	char seed[512];
	int err = 0;

	if (!meta)
		die("out of memory%s", "");
	memcpy(meta, rec->meta, rec->meta_len);
	if (rec->type == SC_REC_SEGMENT)
		raw_len = shrink_segment(meta, rec->meta_len, rec->raw_len);
	else if (rec->raw_len > FUZZ_RAW_MAX)
		raw_len = FUZZ_RAW_MAX;
	data_len = rec->type == SC_REC_SEGMENT && raw_len > PAGE ? PAGE : raw_len;
	err = sc_reader_read(r, data, data_len);
	if (!err) {
		put_rec(all, meta, rec->meta_len, raw_len, data, data_len);
		put_rec(&one, meta, rec->meta_len, raw_len, data, data_len);
		if (alone) {
			snprintf(seed, sizeof(seed), "%s.%u", name, rec->seq);
			save(dir, target, seed, &one);
		}
	}
	free(one.b);
	free(meta);
	return err;
}

static void from_image(const char *dir, const char *path, uint8_t *data)
{
	struct sc_read_opts o = { .flags = SC_RD_ALL_RECORDS, .threads = 1 };
	struct buf all[FUZZ_TARGETS_N] = { 0 };
	unsigned taken[FUZZ_TARGETS_N] = { 0 };
	char *copy = strdup(path), *name = copy ? basename(copy) : NULL;
	struct sc_reader *r;
	struct sc_record rec;

	if (!name)
		die("out of memory%s", "");
	if (sc_reader_open(&r, path, &o) == 0) {
		while (sc_reader_next(r, &rec) == 1) {
			size_t t = 0;

			while (t < FUZZ_TARGETS_N && fuzz_targets[t].type != rec.type)
				t++;
			if (t < FUZZ_TARGETS_N && take(r, &rec, dir, name, &all[t], data,
							 taken[t]++ < SEEDS_PER_IMAGE) < 0)
				break;
		}
		sc_reader_free(r);
	}
	for (size_t t = 0; t < FUZZ_TARGETS_N; t++) {
		if (all[t].n)
			save(dir, fuzz_targets[t].name, name, &all[t]);
		free(all[t].b);
	}
	free(copy);
}

/* A cuda-log record of the module images @files (spec §9.8). */
static void from_modules(const char *dir, char **files, int n)
{
	uint8_t meta[SC_CUDA_LOG_META], h[SC_CUDA_IMAGE_HEADER], zero[8] = { 0 };
	struct sc_cuda_summary sum = { .modules = (uint32_t)n, .device_bytes = 4u << 20,
				       .blocks = 1, .channel = 0x7f0000000000ull };
	struct buf payload = { 0 }, seed = { 0 };

	for (int i = 0; i < n; i++) {
		struct buf img = { 0 };
		uint8_t chunk[4096];
		FILE *f = fopen(files[i], "rb");
		size_t k;

		if (!f)
			die("cannot open '%s'", files[i]);
		while ((k = fread(chunk, 1, sizeof(chunk), f)) > 0)
			put(&img, chunk, k);
		fclose(f);
		sc_cuda_image_header(h, i & 1, img.n);
		put(&payload, h, sizeof(h));
		put(&payload, img.b, img.n);
		put(&payload, zero, sc_cuda_pad8(img.n) - img.n);
		free(img.b);
	}
	if (payload.n > FUZZ_RAW_MAX)
		die("modules of more than %s", "FUZZ_RAW_MAX bytes");
	sc_cuda_summary_encode(&sum, meta);
	put_rec(&seed, meta, sizeof(meta), (uint32_t)payload.n, payload.b, (uint32_t)payload.n);
	save(dir, "cuda_log", "modules", &seed);
	free(payload.b);
	free(seed.b);
}

int main(int argc, char **argv)
{
	uint8_t *data = malloc(FUZZ_RAW_MAX);

	sc_log_set_level(SC_LOG_NONE);
	if (!data)
		die("out of memory%s", "");
	if (argc >= 4 && !strcmp(argv[1], "--modules")) {
		from_modules(argv[2], argv + 3, argc - 3);
		free(data);
		return 0;
	}
	if (argc < 2)
		die("usage: fuzz_seed DIR IMAGE... | fuzz_seed --modules DIR FILE...%s", "");
	for (int i = 2; i < argc; i++)
		from_image(argv[1], argv[i], data);
	free(data);
	return 0;
}
