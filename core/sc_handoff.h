/* SPDX-License-Identifier: MIT */
/*
 * sc_handoff.h - what the restore loader leaves for the restored library. The
 * image records where this structure lives (process record), and the loader's
 * last stage fills it in before it resumes the coordinator.
 */
#ifndef SC_HANDOFF_H
#define SC_HANDOFF_H

#include <stdint.h>

struct sc_handoff {
	uint64_t blob_start, blob_len; /* the loader's last stage, to unmap */
	uint64_t restores;             /* how many times this image came back */
	char image[4096];              /* absolute path of the image restored, "" if a stream */
	uint64_t env, env_len;         /* selfckpt-restore's environment (NUL-separated):
					* in the loader's last stage, then in a copy of its
					* own until the restart's hooks are done */
};

extern struct sc_handoff sc_handoff;

/**
 * sc_restart_getenv() - a variable of selfckpt-restore's environment, or NULL;
 * valid until sc_restart_env_release().
 */
const char *sc_restart_getenv(const char *name);

/** sc_restart_env_release() - drop the restorer's environment (after the hooks ran). */
void sc_restart_env_release(void);

#endif /* SC_HANDOFF_H */
