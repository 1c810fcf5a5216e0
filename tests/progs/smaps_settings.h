/* SPDX-License-Identifier: MIT */
/*
 * smaps_settings.h - what the test programs print of a mapping's settings:
 * the two-letter VmFlags of /proc/self/smaps they look for, in their order.
 */
#ifndef SC_TEST_SMAPS_SETTINGS_H
#define SC_TEST_SMAPS_SETTINGS_H

#include <stdio.h>
#include <string.h>

/*
 * Those of the @n settings @shown that the mapping holding @addr has, each
 * after a space, into @out ("not found" where no mapping holds it).
 */
static void smaps_settings(const void *addr, const char *const *shown, size_t n, char *out,
			   size_t size)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	unsigned long start = 0, end = 0, a = (unsigned long)addr;
	char line[1024];
	int inside = 0;

	snprintf(out, size, "not found");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 && strchr(line, '-') < strchr(line, ' '))
			inside = start <= a && a < end;
		if (!inside || strncmp(line, "VmFlags:", 8))
			continue;
		out[0] = '\0';
		for (size_t i = 0; i < n; i++) {
			char tok[5];

			snprintf(tok, sizeof(tok), " %s", shown[i]);
			if (strstr(line + 8, tok) && strlen(out) + 4 < size)
				strcat(strcat(out, " "), shown[i]);
		}
		break;
	}
	if (f)
		fclose(f);
}

#endif /* SC_TEST_SMAPS_SETTINGS_H */
