/* SPDX-License-Identifier: MIT */
/* array.c - the growable array (sc_array.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "format/sc_array.h"

#define FIRST_ROOM 16

int sc_grow(void **arr, size_t *cap, size_t need, size_t size)
{
	size_t room = *cap > FIRST_ROOM ? *cap : FIRST_ROOM;
	void *p;

	if (need <= *cap && *arr)
		return 0;
	while (room < need) {
		if (room > SIZE_MAX / 2)
			return -ENOMEM;
		room *= 2;
	}
	if (size && room > SIZE_MAX / size)
		return -ENOMEM;
	p = realloc(*arr, room * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = room;
	return 0;
}
