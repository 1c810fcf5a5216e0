/* SPDX-License-Identifier: MIT */
/*
 * api_occupancy.c - cuOccupancy*: how many blocks of a function a
 * multiprocessor holds, the block size that holds the most, the dynamic
 * shared memory left per block. The driver answers them in the GPU proxy, for
 * the proxy's function; they hold no state, so a restart changes nothing but
 * the handle the request carries.
 *
 * cuOccupancyMaxPotentialBlockSize may take the program's function from block
 * size to dynamic shared memory, which only the program can run: it is run
 * here for every block size the driver may try (1 to the limit, at most
 * MAX_BLOCK), and the proxy's callback answers from that table, so that the
 * driver's own search decides, as it would without selfckpt. Such a function
 * is pure by CUDA's contract; it is called up to MAX_BLOCK times instead of
 * the few the driver asks for.
 */
#include "cuda/lib/cuda_internal.h"

#define MAX_BLOCK 1024 /* threads per block, the most any CUDA device has */

/* Send @r, whose a[0] is @func's proxy function, in the current context. */
static CUresult call_for(CUfunction func, struct sc_req *r)
{
	struct sc_cu_func *f = sc_cu_function_of(func);

	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!sc_ctx_current())
		return sc_ctx_missing();
	return sc_cu_function_ask(f, r, 0);
}

SC_CU_API CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
	int *num_blocks, CUfunction func, int block_size, size_t dyn, unsigned int flags)
{
	struct sc_req r = { .op = SC_OP_OCC_BLOCKS,
			    .a = { 0, (uint64_t)(int64_t)block_size, dyn, flags } };
	CUresult res;

	if (!num_blocks)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = call_for(func, &r)) == CUDA_SUCCESS)
		*num_blocks = (int)(int64_t)r.a[0];
	return res;
}

SC_CU_API CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *num_blocks,
								      CUfunction func,
								      int block_size, size_t dyn)
{
	return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(num_blocks, func, block_size,
								    dyn, 0);
}

SC_CU_API CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(
	int *min_grid, int *block_size, CUfunction func, CUoccupancyB2DSize b2d, size_t dyn,
	int limit, unsigned int flags)
{
	uint64_t table[MAX_BLOCK];
	struct sc_req r = { .op = SC_OP_OCC_BLOCK_SIZE,
			    .a = { 0, dyn, (uint64_t)(int64_t)limit, flags, 0 } };
	CUresult res;

	if (!min_grid || !block_size || limit < 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (b2d) {
		int n = limit > 0 && limit < MAX_BLOCK ? limit : MAX_BLOCK;

		/* before the lock: the program's function may call CUDA itself */
		for (int bs = 1; bs <= n; bs++)
			table[bs - 1] = b2d(bs);
		r.a[4] = (uint64_t)n;
		r.in = table;
		r.in_len = (uint32_t)n * sizeof(table[0]);
	}
	if ((res = call_for(func, &r)) == CUDA_SUCCESS) {
		*min_grid = (int)(int64_t)r.a[0];
		*block_size = (int)(int64_t)r.a[1];
	}
	return res;
}

SC_CU_API CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block_size,
							   CUfunction func,
							   CUoccupancyB2DSize b2d, size_t dyn,
							   int limit)
{
	return cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid, block_size, func, b2d, dyn,
							 limit, 0);
}

SC_CU_API CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(size_t *dyn, CUfunction func,
								  int num_blocks, int block_size)
{
	struct sc_req r = { .op = SC_OP_OCC_DYN_SMEM,
			    .a = { 0, (uint64_t)(int64_t)num_blocks,
				   (uint64_t)(int64_t)block_size } };
	CUresult res;

	if (!dyn)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = call_for(func, &r)) == CUDA_SUCCESS)
		*dyn = (size_t)r.a[0];
	return res;
}

/* A cluster query on @config: its stream and the events its attributes name go as the proxy's. */
static CUresult cluster_query(int *out, CUfunction func, const CUlaunchConfig *config,
			      enum sc_occ_cluster what)
{
	struct sc_cu_func *f = sc_cu_function_of(func);
	CUlaunchAttribute attrs[SC_LAUNCH_ATTRS_MAX];
	struct sc_req r = { .op = SC_OP_OCC_CLUSTERS };
	CUresult res;

	if (!out || !config || (config->numAttrs && !config->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if (config->numAttrs > SC_LAUNCH_ATTRS_MAX)
		return sc_cu_unsupported("an occupancy query with more than 32 attributes");
	r.a[1] = config->gridDimX;
	r.a[2] = config->gridDimY;
	r.a[3] = config->gridDimZ;
	r.a[4] = config->blockDimX;
	r.a[5] = config->blockDimY;
	r.a[6] = config->blockDimZ;
	r.a[7] = config->sharedMemBytes;
	r.a[9] = what;
	r.a[10] = config->numAttrs;
	r.in = attrs;
	r.in_len = config->numAttrs * (uint32_t)sizeof(*attrs);
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	for (unsigned i = 0; res == CUDA_SUCCESS && i < config->numAttrs; i++)
		res = sc_cu_launch_attribute(&config->attrs[i], &attrs[i]);
	if (res == CUDA_SUCCESS && config->hStream)
		r.a[8] = sc_stream_real(config->hStream, &res);
	if (res == CUDA_SUCCESS && !(r.ctx = sc_ctx_real()))
		res = sc_ctx_missing();
	if (res == CUDA_SUCCESS)
		res = sc_cu_function_real(f, &r.a[0]);
	if (res == CUDA_SUCCESS)
		res = sc_cu_call(&r);
	sc_cu_leave();
	if (res == CUDA_SUCCESS)
		*out = (int)(int64_t)r.a[0];
	return res;
}

SC_CU_API CUresult CUDAAPI cuOccupancyMaxPotentialClusterSize(int *size, CUfunction func,
							     const CUlaunchConfig *config)
{
	return cluster_query(size, func, config, SC_OCC_CLUSTER_SIZE);
}

SC_CU_API CUresult CUDAAPI cuOccupancyMaxActiveClusters(int *clusters, CUfunction func,
						       const CUlaunchConfig *config)
{
	return cluster_query(clusters, func, config, SC_OCC_ACTIVE_CLUSTERS);
}
