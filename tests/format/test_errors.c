/* SPDX-License-Identifier: MIT */
/*
 * The error codes are ABI: a program built against one version reads the
 * codes of every later one, and a number in a log means one thing forever.
 * Each value is fixed here; a new code is added after the last one, and
 * SELFCKPT_ELAST moves up.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "selfckpt_errors.h"

Test(errors, codes_keep_their_numbers)
{
	static const struct {
		int code, value;
	} fixed[] = {
		{ SELFCKPT_EFIRST, 4096 },   { SELFCKPT_EMAGIC, 4096 },    { SELFCKPT_EEMPTY, 4097 },
		{ SELFCKPT_EVERSION, 4098 }, { SELFCKPT_EARCH, 4099 },     { SELFCKPT_ETRUNCATED, 4100 },
		{ SELFCKPT_EHEADER, 4101 },  { SELFCKPT_ERECORD, 4102 },   { SELFCKPT_ECHUNK, 4103 },
		{ SELFCKPT_ECODEC, 4104 },   { SELFCKPT_EINDEX, 4105 },    { SELFCKPT_ETRAILER, 4106 },
		{ SELFCKPT_EFILESUM, 4107 }, { SELFCKPT_ELENGTH, 4108 },   { SELFCKPT_EUNKNOWN, 4109 },
		{ SELFCKPT_ERESERVED, 4110 }, { SELFCKPT_EUSAGE, 4111 },   { SELFCKPT_EHOST, 4112 },
		{ SELFCKPT_ECUDA, 4113 },    { SELFCKPT_EDRIVER, 4114 },   { SELFCKPT_EIPCNS, 4115 },
		{ SELFCKPT_ENOPARENT, 4116 }, { SELFCKPT_EPARENT, 4117 },  { SELFCKPT_ELAST, 4118 },
	};

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		cr_assert_eq(fixed[i].code, fixed[i].value, "code %zu is %d: it was %d", i,
			     fixed[i].code, fixed[i].value);
}

Test(errors, every_code_has_its_own_description)
{
	for (int code = SELFCKPT_EFIRST; code < SELFCKPT_ELAST; code++) {
		const char *text = selfckpt_strerror(-code);

		cr_assert(text && *text, "code %d has no description", code);
		for (int other = SELFCKPT_EFIRST; other < code; other++)
			cr_assert(strcmp(text, selfckpt_strerror(-other)),
				  "codes %d and %d have one description: '%s'", other, code, text);
	}
}
