/* SPDX-License-Identifier: MIT */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/sc_format.h"
#include "format/sc_log.h"

Test(format, tiny_roundtrip)
{
	char path[] = "/tmp/sc-test-XXXXXX";
	int fd = mkstemp(path);
	struct sc_writer *w;
	struct sc_reader *r;
	struct sc_record rec;
	static uint8_t big[3 << 20];
	uint8_t back[sizeof(big)];

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 / 4096);
	cr_assert_eq(sc_writer_new(&w, fd, path, NULL), 0);
	cr_assert_eq(sc_writer_record(w, SC_REC_PROCESS, SC_RF_REQUIRED, "meta", 4, "hello", 5), 0);
	cr_assert_eq(sc_writer_record(w, SC_REC_SEGMENT, SC_RF_REQUIRED, NULL, 0, big, sizeof(big) - 5), 0);
	cr_assert_eq(sc_writer_finish(w), 0);
	sc_writer_free(w);
	close(fd);
	cr_assert_eq(sc_reader_open(&r, path, NULL), 0, "%s", selfckpt_last_error());
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	char buf[5];
	cr_assert_eq(sc_reader_read(r, buf, 5), 0);
	cr_assert_eq(memcmp(buf, "hello", 5), 0);
	cr_assert_eq(sc_reader_next(r, &rec), 1);
	cr_assert_eq(rec.raw_len, sizeof(big) - 5);
	cr_assert_eq(sc_reader_read(r, back, 100), 0);
	cr_assert_eq(sc_reader_read(r, back + 100, sizeof(big) - 105), 0, "%s", selfckpt_last_error());
	cr_assert_eq(memcmp(back, big, sizeof(big) - 5), 0);
	cr_assert_eq(sc_reader_next(r, &rec), 0);
	cr_assert_eq(sc_reader_verify_file(r), 0);
	sc_reader_free(r);
	unlink(path);
}
