/* SPDX-License-Identifier: MIT */
/*
 * rt_common.h - what the Runtime API samples share: the checksum of their
 * output, a pause between iterations, and --save-at, which finds
 * selfckpt_save() among the loaded symbols (the samples know nothing of
 * selfckpt; under selfckpt-run the library is preloaded).
 */
#ifndef RT_COMMON_H
#define RT_COMMON_H

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* FNV-1a over @n bytes, from @h: the first call takes 0xcbf29ce484222325. */
static inline uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = (const unsigned char *)p;

	for (size_t k = 0; k < n; k++)
		h = (h ^ b[k]) * 0x100000001b3ull;
	return h;
}

/* selfckpt_save(@path): says "saved" or "restored" on standard error; exits on failure. */
static inline void checkpoint(const char *prog, const char *path)
{
	int (*save)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "selfckpt_save");
	int ret;

	if (!save) {
		fprintf(stderr, "%s: --save-at needs selfckpt (run under selfckpt-run)\n", prog);
		exit(64);
	}
	ret = save(path);
	if (ret == 1)
		fprintf(stderr, "saved\n");
	else if (ret == 2)
		fprintf(stderr, "restored\n");
	else {
		fprintf(stderr, "%s: cannot checkpoint into '%s': %d\n", prog, path, ret);
		exit(1);
	}
}

static inline void pause_ms(unsigned ms)
{
	struct timespec left = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&left, &left) < 0 && errno == EINTR)
		;
}

#endif /* RT_COMMON_H */
