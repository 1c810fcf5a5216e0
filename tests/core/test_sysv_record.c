/* SPDX-License-Identifier: MIT */
/*
 * test_sysv_record.c - the sysv-ipc record (spec §9.13): every field of a
 * segment, a semaphore set and a message queue comes back, and a broken
 * record is refused with its error (R-TYP-22).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sc_sysv.h"
#include "format/sc_log.h"
#include "selfckpt_errors.h"

static char path[64];

static void setup(void)
{
	snprintf(path, sizeof(path), "/tmp/sc-sysv-%d.sckpt", (int)getpid());
	sc_log_set_level(SC_LOG_NONE);
}

static void teardown(void)
{
	unlink(path);
}

static struct sc_writer *new_writer(FILE **f)
{
	struct sc_write_opts o;
	struct sc_writer *w;

	*f = fopen(path, "wb");
	cr_assert_not_null(*f);
	sc_write_opts_init(&o);
	o.threads = 1;
	cr_assert_eq(sc_writer_new(&w, fileno(*f), path, &o), 0);
	return w;
}

static void end_writer(struct sc_writer *w, FILE *f)
{
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	fclose(f);
}

/* Decode the first record of the image at path into @o. */
static int decode_first(struct sc_sysv_obj *o)
{
	struct sc_reader *r;
	struct sc_record rec;
	int err;

	cr_assert_eq(sc_reader_open(&r, path, NULL), 0);
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	cr_assert_eq(rec.type, SC_REC_SYSV);
	err = sc_sysv_read(r, &rec, o);
	sc_reader_free(r);
	return err;
}

/* A record of type sysv-ipc with meta @m (@len bytes) and @plen bytes of payload, decoded. */
static int decode(const uint8_t *m, uint32_t len, const void *payload, size_t plen,
		  struct sc_sysv_obj *o)
{
	FILE *f;
	struct sc_writer *w = new_writer(&f);

	cr_assert_eq(sc_writer_record(w, SC_REC_SYSV, SC_RF_REQUIRED, m, len, payload, plen), 0);
	end_writer(w, f);
	return decode_first(o);
}

/* Write @o with sc_sysv_write() and read it back into @got. */
static void round_trip(const struct sc_sysv_obj *o, struct sc_sysv_obj *got)
{
	FILE *f;
	struct sc_writer *w = new_writer(&f);

	cr_assert_eq(sc_sysv_write(w, o), 0);
	end_writer(w, f);
	cr_assert_eq(decode_first(got), 0, "%s", selfckpt_last_error());
}

static void same_fixed(const struct sc_sysv_obj *a, const struct sc_sysv_obj *b)
{
	cr_assert_eq(a->kind, b->kind);
	cr_assert_eq(a->key, b->key);
	cr_assert_eq(a->id, b->id);
	cr_assert_eq(a->mode, b->mode);
	cr_assert_eq(a->uid, b->uid);
	cr_assert_eq(a->gid, b->gid);
	cr_assert_eq(a->flags, b->flags);
	cr_assert_eq(a->count, b->count);
	cr_assert_eq(a->size, b->size);
	cr_assert_eq(a->data_len, b->data_len);
	cr_assert(!a->data_len || !memcmp(a->data, b->data, a->data_len));
}

Test(sysv_record, a_segment_comes_back, .init = setup, .fini = teardown)
{
	uint8_t bytes[5000];
	struct sc_sysv_obj o = { .kind = SC_SYSV_SHM, .key = 0x5c001234, .id = 32769,
				 .mode = 0640, .uid = 1000, .gid = 100, .size = sizeof(bytes),
				 .flags = SC_SYSV_STORED, .data = bytes,
				 .data_len = sizeof(bytes) };
	uint8_t page[4096] = { 1, 2, 3 };
	struct sc_sysv_obj got, rmid = { .kind = SC_SYSV_SHM, .key = 0x1234, .id = 7,
					 .mode = 01600, .size = 4096,
					 .flags = SC_SYSV_RMID | SC_SYSV_STORED, .data = page,
					 .data_len = sizeof(page) };

	for (size_t i = 0; i < sizeof(bytes); i++)
		bytes[i] = (uint8_t)(i * 7);
	round_trip(&o, &got);
	same_fixed(&o, &got);
	sc_sysv_obj_release(&got);
	round_trip(&rmid, &got);
	same_fixed(&rmid, &got);
	sc_sysv_obj_release(&got);
}

Test(sysv_record, a_semaphore_set_comes_back, .init = setup, .fini = teardown)
{
	uint16_t val[3] = { 0, 7, 32767 };
	int32_t pid[3] = { 0, 4242, 1 };
	struct sc_sysv_obj o = { .kind = SC_SYSV_SEM, .key = -5, .id = 98765, .mode = 0600,
				 .count = 3, .semval = val, .sempid = pid };
	struct sc_sysv_obj got;

	round_trip(&o, &got);
	same_fixed(&o, &got);
	cr_assert(!memcmp(got.semval, val, sizeof(val)));
	cr_assert(!memcmp(got.sempid, pid, sizeof(pid)));
	sc_sysv_obj_release(&got);
}

Test(sysv_record, a_queue_comes_back_in_order, .init = setup, .fini = teardown)
{
	struct sc_sysv_msg msgs[3] = { { 5, 5 }, { 1, 0 }, { 3, 2 } };
	uint8_t text[] = "helloab";
	struct sc_sysv_obj o = { .kind = SC_SYSV_MSG, .id = 65539, .mode = 0620, .count = 3,
				 .size = 16384, .msgs = msgs, .data = text, .data_len = 7 };
	struct sc_sysv_obj got, empty = { .kind = SC_SYSV_MSG, .id = 1, .size = 16384 };

	round_trip(&o, &got);
	same_fixed(&o, &got);
	cr_assert(!memcmp(got.msgs, msgs, sizeof(msgs)));
	sc_sysv_obj_release(&got);
	round_trip(&empty, &got);
	same_fixed(&empty, &got);
	sc_sysv_obj_release(&got);
}

/* A meta of a set of one semaphore or a queue of one message: 48 + 8 or 48 + 16 bytes. */
static void meta_one(uint8_t *m, uint32_t kind)
{
	memset(m, 0, 64);
	sc_put_le32(m, kind);
	sc_put_le32(m + 8, 3);
	sc_put_le32(m + 28, 1);
	if (kind == SC_SYSV_MSG) {
		sc_put_le64(m + 32, 16384);
		sc_put_le64(m + 48, 2);
		sc_put_le64(m + 56, 4);
	} else {
		sc_put_le16(m + 48, 9);
	}
}

/* R-TYP-22, R-VER-9: each broken field of a set and a queue, with its error. */
Test(sysv_record, broken_sets_and_queues_are_refused, .init = setup, .fini = teardown)
{
	static const struct {
		uint32_t kind, off, width;
		uint64_t value;
		int err;
	} cases[] = {
		{ SC_SYSV_SEM, 0, 4, 4, -SELFCKPT_EUNKNOWN },        /* kind */
		{ SC_SYSV_SEM, 0, 4, 0, -SELFCKPT_EUNKNOWN },
		{ SC_SYSV_SEM, 8, 4, 0x80000000u, -SELFCKPT_ELENGTH }, /* id */
		{ SC_SYSV_SEM, 24, 4, 1, -SELFCKPT_ERESERVED },      /* flags of a set */
		{ SC_SYSV_SEM, 40, 8, 1, -SELFCKPT_ERESERVED },      /* reserved */
		{ SC_SYSV_SEM, 28, 4, 0, -SELFCKPT_ELENGTH },        /* no semaphore */
		{ SC_SYSV_SEM, 28, 4, 2, -SELFCKPT_ELENGTH },        /* more than fit */
		{ SC_SYSV_SEM, 28, 4, 65537, -SELFCKPT_ELENGTH },
		{ SC_SYSV_SEM, 32, 8, 1, -SELFCKPT_ELENGTH },        /* size of a set */
		{ SC_SYSV_SEM, 48, 2, 32768, -SELFCKPT_ELENGTH },    /* value above SEMVMX */
		{ SC_SYSV_SEM, 50, 2, 1, -SELFCKPT_ERESERVED },      /* entry's reserved */
		{ SC_SYSV_SEM, 52, 4, 0x80000000u, -SELFCKPT_ELENGTH }, /* pid */
		{ SC_SYSV_MSG, 24, 4, 2, -SELFCKPT_ERESERVED },      /* flags of a queue */
		{ SC_SYSV_MSG, 28, 4, 2, -SELFCKPT_ELENGTH },        /* more than fit */
		{ SC_SYSV_MSG, 28, 4, (1u << 20) + 1, -SELFCKPT_ELENGTH },
		{ SC_SYSV_MSG, 32, 8, 1ull << 31, -SELFCKPT_ELENGTH }, /* queue limit */
		{ SC_SYSV_MSG, 48, 8, 0, -SELFCKPT_ELENGTH },        /* type 0 */
		{ SC_SYSV_MSG, 48, 8, (uint64_t)-1, -SELFCKPT_ELENGTH }, /* type < 0 */
		{ SC_SYSV_MSG, 56, 8, 5, -SELFCKPT_ELENGTH },        /* length ≠ payload */
	};
	uint8_t m[64];
	struct sc_sysv_obj got;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t len = cases[i].kind == SC_SYSV_MSG ? 64 : 56;

		meta_one(m, cases[i].kind);
		if (cases[i].width == 2)
			sc_put_le16(m + cases[i].off, (uint16_t)cases[i].value);
		else if (cases[i].width == 4)
			sc_put_le32(m + cases[i].off, (uint32_t)cases[i].value);
		else
			sc_put_le64(m + cases[i].off, cases[i].value);
		cr_assert_eq(decode(m, len, "text", cases[i].kind == SC_SYSV_MSG ? 4 : 0, &got),
			     cases[i].err, "case %zu: %s", i, selfckpt_last_error());
	}
	meta_one(m, SC_SYSV_SEM);
	cr_assert_eq(decode(m, 47, NULL, 0, &got), -SELFCKPT_ELENGTH, "short meta");
	cr_assert_eq(decode(m, 56, "x", 1, &got), -SELFCKPT_ELENGTH, "payload of a set");
	/* a longer fixed part of a newer minor: the entries end the meta (R-VER-9) */
	uint8_t longer[72] = { 0 };

	memcpy(longer, m, 48);
	memcpy(longer + 64, m + 48, 8);
	cr_assert_eq(decode(longer, 72, NULL, 0, &got), 0, "%s", selfckpt_last_error());
	cr_assert_eq(got.semval[0], 9);
	sc_sysv_obj_release(&got);
}

/* R-TYP-22: a segment's size, count, flags and payload. */
Test(sysv_record, broken_segments_are_refused, .init = setup, .fini = teardown)
{
	static const struct {
		uint32_t off;
		uint64_t value;
		size_t payload;
		int err;
	} cases[] = {
		{ 32, 0, 0, -SELFCKPT_ELENGTH },                  /* size 0 */
		{ 32, (1ull << 40) + 1, 0, -SELFCKPT_ELENGTH },   /* too large */
		{ 28, 1, 0, -SELFCKPT_ELENGTH },                  /* a count */
		{ 24, 4, 0, -SELFCKPT_ERESERVED },                /* unknown flag */
		{ 24, SC_SYSV_STORED | SC_SYSV_RMID, 16, 0 },
		{ 24, SC_SYSV_STORED, 15, -SELFCKPT_ELENGTH },    /* payload ≠ size */
		{ 24, 0, 16, -SELFCKPT_ELENGTH },                 /* payload of an attached one */
		{ 24, SC_SYSV_STORED, 16, 0 },
	};
	uint8_t m[48], bytes[16] = "0123456789abcdef";
	struct sc_sysv_obj got;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(m, 0, sizeof(m));
		sc_put_le32(m, SC_SYSV_SHM);
		sc_put_le64(m + 32, 16);
		if (cases[i].off == 32)
			sc_put_le64(m + 32, cases[i].value);
		else
			sc_put_le32(m + cases[i].off, (uint32_t)cases[i].value);
		cr_assert_eq(decode(m, 48, bytes, cases[i].payload, &got), cases[i].err,
			     "case %zu: %s", i, selfckpt_last_error());
		if (!cases[i].err) {
			cr_assert(!memcmp(got.data, bytes, 16));
			sc_sysv_obj_release(&got);
		}
	}
}
