/* SPDX-License-Identifier: MIT */
#include "selfckpt.h"

SELFCKPT_API const char *selfckpt_version(void)
{
	return SELFCKPT_VERSION_STRING;
}
