/* SPDX-License-Identifier: MIT */
/*
 * proxy_ops_code.c - modules, libraries, functions and kernel launches.
 */
#include <string.h>

#include "cuda/proxy/proxy_internal.h"

/* Names arrive NUL-terminated in data[]; refuse one that is not. */
static const char *request_name(struct sc_ch_slot *s)
{
	if (!s->len || s->len > SC_CH_INLINE || s->data[s->len - 1] != 0)
		return NULL;
	return (const char *)s->data;
}

static CUresult op_module_load(struct sc_ch_slot *s)
{
	const void *image = (const void *)(uintptr_t)s->a[0];

	if (s->a[2] == SC_IMG_LIBRARY) {
		CUlibrary lib = NULL;
		CUresult r = sc_drv.cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0);

		s->a[0] = (uint64_t)(uintptr_t)lib;
		return r;
	}
	CUmodule m = NULL;
	CUresult r = sc_drv.cuModuleLoadData(&m, image);

	s->a[0] = (uint64_t)(uintptr_t)m;
	return r;
}

static CUresult op_module_unload(struct sc_ch_slot *s)
{
	if (s->a[1] == SC_IMG_LIBRARY)
		return sc_drv.cuLibraryUnload((CUlibrary)(uintptr_t)s->a[0]);
	return sc_drv.cuModuleUnload((CUmodule)(uintptr_t)s->a[0]);
}

/* Offsets and sizes of every parameter, so the library can marshal launches. */
static CUresult reply_params(struct sc_ch_slot *s, CUfunction f)
{
	uint32_t *out = (uint32_t *)s->data;
	size_t n = 0;

	for (; n < SC_PROXY_MAX_PARAMS; n++) {
		size_t off = 0, size = 0;

		if (sc_drv.cuFuncGetParamInfo(f, n, &off, &size) != CUDA_SUCCESS)
			break;
		out[2 * n] = (uint32_t)off;
		out[2 * n + 1] = (uint32_t)size;
	}
	s->a[1] = n;
	s->len = (uint32_t)(n * 8);
	return CUDA_SUCCESS;
}

static CUresult op_module_function(struct sc_ch_slot *s)
{
	const char *name = request_name(s);
	CUfunction f = NULL;
	CUresult r;

	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	r = sc_drv.cuModuleGetFunction(&f, (CUmodule)(uintptr_t)s->a[0], name);
	s->a[0] = (uint64_t)(uintptr_t)f;
	return r != CUDA_SUCCESS ? r : reply_params(s, f);
}

static CUresult op_library_kernel(struct sc_ch_slot *s)
{
	const char *name = request_name(s);
	CUkernel k = NULL;
	CUresult r;

	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	r = sc_drv.cuLibraryGetKernel(&k, (CUlibrary)(uintptr_t)s->a[0], name);
	s->a[0] = (uint64_t)(uintptr_t)k;
	return r != CUDA_SUCCESS ? r : reply_params(s, (CUfunction)k);
}

static CUresult op_module_global(struct sc_ch_slot *s)
{
	const char *name = request_name(s);
	CUdeviceptr p = 0;
	size_t size = 0;
	CUresult r;

	if (!name)
		return CUDA_ERROR_INVALID_VALUE;
	if (s->a[1] == SC_IMG_LIBRARY_MANAGED)
		r = sc_drv.cuLibraryGetManaged(&p, &size, (CUlibrary)(uintptr_t)s->a[0], name);
	else if (s->a[1] == SC_IMG_LIBRARY)
		r = sc_drv.cuLibraryGetGlobal(&p, &size, (CUlibrary)(uintptr_t)s->a[0], name);
	else
		r = sc_drv.cuModuleGetGlobal(&p, &size, (CUmodule)(uintptr_t)s->a[0], name);
	s->a[0] = p;
	s->a[1] = size;
	s->a[2] = 0;
	if (r == CUDA_SUCCESS) { /* a __managed__ variable: its memory is the driver's, here */
		unsigned managed = 0;

		if (sc_drv.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p) ==
		    CUDA_SUCCESS)
			s->a[2] = managed;
	}
	return r;
}

static CUresult op_library_module(struct sc_ch_slot *s)
{
	CUmodule m = NULL;
	CUresult r = sc_drv.cuLibraryGetModule(&m, (CUlibrary)(uintptr_t)s->a[0]);

	s->a[0] = (uint64_t)(uintptr_t)m;
	return r;
}

static CUresult op_kernel_function(struct sc_ch_slot *s)
{
	CUfunction f = NULL;
	CUresult r = sc_drv.cuKernelGetFunction(&f, (CUkernel)(uintptr_t)s->a[0]);

	s->a[0] = (uint64_t)(uintptr_t)f;
	return r;
}

static CUresult op_func_get_attr(struct sc_ch_slot *s)
{
	int v = 0;
	CUresult r = sc_drv.cuFuncGetAttribute(&v, (CUfunction_attribute)s->a[0],
					       (CUfunction)(uintptr_t)s->a[1]);

	s->a[0] = (uint64_t)(int64_t)v;
	return r;
}

static CUresult op_func_set_attr(struct sc_ch_slot *s)
{
	return sc_drv.cuFuncSetAttribute((CUfunction)(uintptr_t)s->a[1],
					 (CUfunction_attribute)s->a[0], (int)s->a[2]);
}

static CUresult op_func_set_cache(struct sc_ch_slot *s)
{
	return sc_drv.cuFuncSetCacheConfig((CUfunction)(uintptr_t)s->a[0], (CUfunc_cache)s->a[1]);
}

CUresult sc_proxy_unpack_params(uint8_t *data, uint64_t len, uint64_t n, void **params)
{
	const uint32_t *layout = (const uint32_t *)data;
	uint8_t *buf = data + n * 8;

	if (n > SC_PROXY_MAX_PARAMS || n * 8 > len)
		return CUDA_ERROR_INVALID_VALUE;
	for (uint64_t i = 0; i < n; i++) {
		if ((uint64_t)layout[2 * i] + layout[2 * i + 1] > len - n * 8)
			return CUDA_ERROR_INVALID_VALUE;
		params[i] = buf + layout[2 * i];
	}
	return CUDA_SUCCESS;
}

static CUresult op_launch(struct sc_ch_slot *s)
{
	uint64_t n = s->a[9];
	void *params[SC_PROXY_MAX_PARAMS];
	CUresult r = sc_proxy_unpack_params(s->data, s->len, n, params);

	if (r != CUDA_SUCCESS)
		return r;
	return sc_drv.cuLaunchKernel((CUfunction)(uintptr_t)s->a[0], (unsigned)s->a[1],
				     (unsigned)s->a[2], (unsigned)s->a[3], (unsigned)s->a[4],
				     (unsigned)s->a[5], (unsigned)s->a[6], (unsigned)s->a[7],
				     (CUstream)(uintptr_t)s->a[8], n ? params : NULL, NULL);
}

static CUresult op_launch_ex(struct sc_ch_slot *s)
{
	uint64_t n = s->a[9], attrs_n = s->a[10], attrs_len = attrs_n * sizeof(CUlaunchAttribute);
	CUlaunchAttribute attrs[SC_LAUNCH_ATTRS_MAX];
	CUlaunchConfig c = { (unsigned)s->a[1], (unsigned)s->a[2], (unsigned)s->a[3],
			     (unsigned)s->a[4], (unsigned)s->a[5], (unsigned)s->a[6],
			     (unsigned)s->a[7], (CUstream)(uintptr_t)s->a[8], attrs,
			     (unsigned)attrs_n };
	void *params[SC_PROXY_MAX_PARAMS];
	CUresult r;

	if (attrs_n > SC_LAUNCH_ATTRS_MAX || attrs_len > s->len)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(attrs, s->data, attrs_len); /* aligned for the driver */
	r = sc_proxy_unpack_params(s->data + attrs_len, s->len - attrs_len, n, params);
	if (r != CUDA_SUCCESS)
		return r;
	return sc_drv.cuLaunchKernelEx(&c, (CUfunction)(uintptr_t)s->a[0], n ? params : NULL,
				       NULL);
}

static CUresult op_occ_blocks(struct sc_ch_slot *s)
{
	int n = 0;
	CUresult r = sc_drv.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
		&n, (CUfunction)(uintptr_t)s->a[0], (int)s->a[1], (size_t)s->a[2],
		(unsigned)s->a[3]);

	s->a[0] = (uint64_t)(int64_t)n;
	return r;
}

/*
 * The program's block-size-to-shared-memory function cannot run here: the
 * library ran it for every block size the driver may ask about and sent the
 * answers, which this thread's callback reads (the driver calls it in the
 * calling thread, with no argument of ours).
 */
static __thread const uint64_t *dyn_by_size;
static __thread uint64_t dyn_sizes;

static size_t dyn_of_block_size(int block_size)
{
	if (block_size < 1)
		return dyn_by_size[0];
	if ((uint64_t)block_size > dyn_sizes)
		return dyn_by_size[dyn_sizes - 1];
	return dyn_by_size[block_size - 1];
}

static CUresult op_occ_block_size(struct sc_ch_slot *s)
{
	int grid = 0, block = 0;
	uint64_t n = s->a[4];
	CUresult r;

	if (n * 8 > s->len)
		return CUDA_ERROR_INVALID_VALUE;
	dyn_by_size = (const uint64_t *)s->data;
	dyn_sizes = n;
	r = sc_drv.cuOccupancyMaxPotentialBlockSizeWithFlags(
		&grid, &block, (CUfunction)(uintptr_t)s->a[0], n ? dyn_of_block_size : NULL,
		(size_t)s->a[1], (int)s->a[2], (unsigned)s->a[3]);
	dyn_by_size = NULL;
	s->a[0] = (uint64_t)(int64_t)grid;
	s->a[1] = (uint64_t)(int64_t)block;
	return r;
}

static CUresult op_occ_dyn_smem(struct sc_ch_slot *s)
{
	size_t bytes = 0;
	CUresult r = sc_drv.cuOccupancyAvailableDynamicSMemPerBlock(
		&bytes, (CUfunction)(uintptr_t)s->a[0], (int)s->a[1], (int)s->a[2]);

	s->a[0] = bytes;
	return r;
}

static CUresult op_occ_clusters(struct sc_ch_slot *s)
{
	uint64_t attrs_n = s->a[10], attrs_len = attrs_n * sizeof(CUlaunchAttribute);
	CUlaunchAttribute attrs[SC_LAUNCH_ATTRS_MAX];
	CUlaunchConfig c = { (unsigned)s->a[1], (unsigned)s->a[2], (unsigned)s->a[3],
			     (unsigned)s->a[4], (unsigned)s->a[5], (unsigned)s->a[6],
			     (unsigned)s->a[7], (CUstream)(uintptr_t)s->a[8], attrs,
			     (unsigned)attrs_n };
	CUfunction f = (CUfunction)(uintptr_t)s->a[0];
	int v = 0;
	CUresult r;

	if (attrs_n > SC_LAUNCH_ATTRS_MAX || attrs_len != s->len)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(attrs, s->data, attrs_len);
	r = s->a[9] == SC_OCC_CLUSTER_SIZE ? sc_drv.cuOccupancyMaxPotentialClusterSize(&v, f, &c)
					   : sc_drv.cuOccupancyMaxActiveClusters(&v, f, &c);
	s->a[0] = (uint64_t)v;
	return r;
}

void sc_proxy_ops_code(sc_proxy_op_fn *t)
{
	t[SC_OP_MODULE_LOAD] = op_module_load;
	t[SC_OP_MODULE_UNLOAD] = op_module_unload;
	t[SC_OP_MODULE_FUNCTION] = op_module_function;
	t[SC_OP_MODULE_GLOBAL] = op_module_global;
	t[SC_OP_LIBRARY_KERNEL] = op_library_kernel;
	t[SC_OP_LIBRARY_MODULE] = op_library_module;
	t[SC_OP_KERNEL_FUNCTION] = op_kernel_function;
	t[SC_OP_FUNC_GET_ATTR] = op_func_get_attr;
	t[SC_OP_FUNC_SET_ATTR] = op_func_set_attr;
	t[SC_OP_FUNC_SET_CACHE] = op_func_set_cache;
	t[SC_OP_LAUNCH] = op_launch;
	t[SC_OP_LAUNCH_EX] = op_launch_ex;
	t[SC_OP_OCC_BLOCKS] = op_occ_blocks;
	t[SC_OP_OCC_BLOCK_SIZE] = op_occ_block_size;
	t[SC_OP_OCC_DYN_SMEM] = op_occ_dyn_smem;
	t[SC_OP_OCC_CLUSTERS] = op_occ_clusters;
}
