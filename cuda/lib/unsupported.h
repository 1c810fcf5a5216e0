/* SPDX-License-Identifier: MIT */
/*
 * unsupported.h - the shape of the generated entry points for the Driver API
 * functions selfckpt does not support (cuda/lib/gen-unsupported.sh). No cuda.h
 * here: each stub is defined without the function's parameters, which it
 * never reads; on x86-64 a caller passes them in registers and cleans up
 * itself, so a stub that takes none and returns an int serves every one.
 */
#ifndef SC_CUDA_UNSUPPORTED_H
#define SC_CUDA_UNSUPPORTED_H

/** sc_cu_unsupported_call() - log @name once and return CUDA_ERROR_NOT_SUPPORTED. */
int sc_cu_unsupported_call(const char *name);

#define SC_UNSUPPORTED(sym)                                       \
	__attribute__((visibility("default"))) int sym(void);     \
	int sym(void)                                             \
	{                                                         \
		return sc_cu_unsupported_call(#sym);              \
	}

/* The generated table of every Driver API entry point the library has. */
struct sc_cu_proc {
	const char *name;
	void *fn;
};

extern const struct sc_cu_proc sc_cu_procs[];
extern const unsigned long sc_cu_procs_n;

#endif /* SC_CUDA_UNSUPPORTED_H */
