/* SPDX-License-Identifier: MIT */
/*
 * api_proc.c - cuGetProcAddress: the library's own entry points, by the base
 * names the CUDA runtime and newer programs ask for ("cuMemAlloc" for
 * cuMemAlloc_v2). Unsupported functions resolve to their generated entry
 * points (unsupported.h), which say so when called.
 *
 * A base name maps to the newest versioned symbol this library exports
 * (name_v4, _v3, _v2, then the name itself), except where the newest one
 * needs a CUDA version the caller did not ask for; with per-thread default
 * streams, the _ptsz/_ptds variant comes first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/lib/cuda_internal.h"
#include "cuda/lib/unsupported.h"
#include "format/sc_log.h"

/* Versioned symbols whose parameters changed: the caller must ask for that version. */
static const struct {
	const char *name;
	int since;
} newer[] = {
	{ "cuCtxCreate_v4", 12050 },
	{ "cuEventElapsedTime_v2", 12080 },
};

static int by_name(const void *key, const void *entry)
{
	return strcmp(key, ((const struct sc_cu_proc *)entry)->name);
}

static void *find(const char *sym)
{
	const struct sc_cu_proc *p = bsearch(sym, sc_cu_procs, sc_cu_procs_n, sizeof(*p), by_name);

	return p ? p->fn : NULL;
}

static bool version_ok(const char *sym, int version)
{
	for (size_t i = 0; i < sizeof(newer) / sizeof(newer[0]); i++)
		if (!strcmp(newer[i].name, sym))
			return version >= newer[i].since;
	return true;
}

/* The newest of @name's symbols we have; too new for @version sets *too_new. */
static void *lookup(const char *name, int version, bool per_thread, bool *too_new)
{
	static const char *const versions[] = { "_v4", "_v3", "_v2", "" };
	static const char *const streams[] = { "_ptsz", "_ptds" };
	char sym[256];
	void *fn;

	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		for (size_t s = 0; per_thread && s < 2; s++) {
			snprintf(sym, sizeof(sym), "%s%s%s", name, versions[v], streams[s]);
			if ((fn = find(sym)) && version_ok(sym, version))
				return fn;
		}
		snprintf(sym, sizeof(sym), "%s%s", name, versions[v]);
		if (!(fn = find(sym)))
			continue;
		if (version_ok(sym, version))
			return fn;
		*too_new = true;
	}
	return NULL;
}

SC_CU_API CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int version,
					    cuuint64_t flags,
					    CUdriverProcAddressQueryResult *status)
{
	bool too_new = false;
	void *fn;

	if (!symbol || !pfn || strncmp(symbol, "cu", 2) || strlen(symbol) > 200)
		return CUDA_ERROR_INVALID_VALUE;
	fn = lookup(symbol, version, flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
		    &too_new);
	*pfn = fn;
	if (status)
		*status = fn ? CU_GET_PROC_ADDRESS_SUCCESS :
		       too_new ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT :
				 CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	if (!fn)
		sc_log(SC_LOG_DEBUG, "cuGetProcAddress: no %s for CUDA %d", symbol, version);
	return fn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* The first cuGetProcAddress, without the status. */
#undef cuGetProcAddress
SC_CU_API CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int version,
					    cuuint64_t flags)
{
	return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
