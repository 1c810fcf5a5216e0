/* SPDX-License-Identifier: MIT */
/*
 * softcuda_occupancy.c - cuOccupancy*: how many blocks of a function one
 * multiprocessor holds, from the device's limits (threads, blocks, registers
 * and shared memory per multiprocessor) and the function's (registers,
 * static shared memory); the block size that holds the most threads. A
 * model of the same shape as CUDA's, simpler: registers are counted per
 * thread, without allocation granularity, and the carve-out is the whole.
 */
#include "softcuda_internal.h"

#define SD_WARP 32

struct sm_limits {
	int threads, blocks, regs, smem, reserved_smem, count;
};

static void limits_of(CUdevice dev, struct sm_limits *l)
{
	l->threads = sd_device_attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev);
	l->blocks = sd_device_attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, dev);
	l->regs = sd_device_attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, dev);
	l->smem = sd_device_attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, dev);
	l->reserved_smem = sd_device_attr(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
					  dev);
	l->count = sd_device_attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
}

static int min_int(int a, int b)
{
	return a < b ? a : b;
}

/* How many blocks of @f (@block_size threads, @dyn bytes each) one multiprocessor holds. */
static int blocks_per_sm(const struct sd_func *f, const struct sm_limits *l, int block_size,
			 size_t dyn)
{
	int warps_threads = (int)SD_ROUND_UP((unsigned)block_size, SD_WARP);
	int regs = f->attrs[CU_FUNC_ATTRIBUTE_NUM_REGS] * warps_threads;
	size_t smem = (size_t)f->attrs[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES] + dyn +
		      (size_t)l->reserved_smem;
	int n = min_int(l->blocks, l->threads / warps_threads);

	if (regs > 0)
		n = min_int(n, l->regs / regs);
	return min_int(n, (int)((size_t)l->smem / smem));
}

int sd_co_resident_blocks(const struct sd_func *f, CUdevice dev, int block_size, size_t dyn)
{
	struct sm_limits l;

	limits_of(dev, &l);
	return blocks_per_sm(f, &l, block_size, dyn) * l.count;
}

/* The function @handle (or a kernel) and the limits of the current context's device. */
static CUresult enter(const char *func, CUfunction handle, struct sd_func **f,
		      struct sm_limits *l)
{
	struct sd_ctx *ctx;
	CUresult rc = sd_enter(func);

	if (rc)
		return rc;
	*f = sd_func_or_kernel(handle);
	if (!*f)
		return sd_leave(CUDA_ERROR_INVALID_HANDLE);
	if ((rc = sd_ctx_current(&ctx)) != CUDA_SUCCESS)
		return sd_leave(rc);
	limits_of(ctx->device, l);
	return CUDA_SUCCESS;
}

static int block_size_fits(const struct sd_func *f, int block_size, size_t dyn)
{
	return block_size > 0 && block_size <= f->attrs[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] &&
	       dyn <= (size_t)f->attrs[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES];
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *num_blocks,
								     CUfunction func,
								     int block_size, size_t dyn,
								     unsigned int flags)
{
	struct sd_func *f;
	struct sm_limits l;
	CUresult rc = enter(__func__, func, &f, &l);

	if (rc)
		return rc;
	if (!num_blocks || flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE ||
	    !block_size_fits(f, block_size, dyn))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*num_blocks = blocks_per_sm(f, &l, block_size, dyn);
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *num_blocks, CUfunction func,
							    int block_size, size_t dyn)
{
	return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(num_blocks, func, block_size,
								    dyn, 0);
}

/*
 * Each block size from the largest allowed down, a warp at a time; the one
 * with the most threads resident wins, the larger on a tie. @b2d gives the
 * dynamic shared memory of a block size (called without the lock: it is the
 * program's), else @dyn for all.
 */
CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(int *min_grid, int *block_size,
							   CUfunction func,
							   CUoccupancyB2DSize b2d, size_t dyn,
							   int limit, unsigned int flags)
{
	struct sd_func *found, fc, *f = &fc;
	struct sm_limits l;
	int max, best = 0, best_blocks = 0;
	CUresult rc = enter(__func__, func, &found, &l);

	if (rc)
		return rc;
	fc = *found; /* the callback runs unlocked: a copy, which an unload cannot free */
	sd_leave(CUDA_SUCCESS);
	max = f->attrs[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
	if (!min_grid || !block_size || limit < 0 || flags > CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
		return CUDA_ERROR_INVALID_VALUE;
	if (limit > 0 && limit < max)
		max = limit;
	for (int bs = max; bs > 0; bs = (bs - 1) / SD_WARP * SD_WARP) {
		size_t d = b2d ? b2d(bs) : dyn;
		int n = d <= (size_t)f->attrs[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES]
				? blocks_per_sm(f, &l, bs, d) : 0;

		if (n * bs > best_blocks * best) {
			best = bs;
			best_blocks = n;
		}
	}
	if (!best)
		return CUDA_ERROR_INVALID_VALUE;
	*block_size = best;
	*min_grid = best_blocks * l.count;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block_size,
						 CUfunction func, CUoccupancyB2DSize b2d,
						 size_t dyn, int limit)
{
	return cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid, block_size, func, b2d, dyn,
							 limit, 0);
}

/* The most dynamic shared memory per block that still lets @num_blocks blocks reside. */
CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(size_t *dyn, CUfunction func,
							int num_blocks, int block_size)
{
	struct sd_func *f;
	struct sm_limits l;
	size_t per_block, fixed;
	CUresult rc = enter(__func__, func, &f, &l);

	if (rc)
		return rc;
	if (!dyn || num_blocks <= 0 || !block_size_fits(f, block_size, 0) ||
	    blocks_per_sm(f, &l, block_size, 0) < num_blocks)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	per_block = (size_t)l.smem / (size_t)num_blocks;
	fixed = (size_t)f->attrs[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES] + (size_t)l.reserved_smem;
	per_block = per_block > fixed ? per_block - fixed : 0;
	if (per_block > (size_t)f->attrs[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES])
		per_block = (size_t)f->attrs[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES];
	*dyn = per_block;
	return sd_leave(CUDA_SUCCESS);
}

/* The cluster dimension a launch with @c would have: its attribute, else the function's. */
static int cluster_blocks(const struct sd_func *f, const CUlaunchConfig *c)
{
	for (unsigned i = 0; c->attrs && i < c->numAttrs; i++)
		if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
			return (int)(c->attrs[i].value.clusterDim.x * c->attrs[i].value.clusterDim.y *
				     c->attrs[i].value.clusterDim.z);
	return f->attrs[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] *
	       f->attrs[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT] *
	       f->attrs[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH];
}

/* 8 blocks, as portable code may count on; 16 where the function allows more. */
CUresult CUDAAPI cuOccupancyMaxPotentialClusterSize(int *size, CUfunction handle,
						   const CUlaunchConfig *config)
{
	struct sd_func *f;
	struct sm_limits l;
	CUresult rc = enter(__func__, handle, &f, &l);

	if (rc)
		return rc;
	if (!size || !config)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*size = f->attrs[CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED] ? 16 : 8;
	return sd_leave(CUDA_SUCCESS);
}

/* As many clusters as the device holds whole: its co-resident blocks, a cluster at a time. */
CUresult CUDAAPI cuOccupancyMaxActiveClusters(int *clusters, CUfunction handle,
					     const CUlaunchConfig *config)
{
	struct sd_func *f;
	struct sm_limits l;
	int per_cluster, block;
	CUresult rc = enter(__func__, handle, &f, &l);

	if (rc)
		return rc;
	if (!clusters || !config || (config->numAttrs && !config->attrs))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	per_cluster = cluster_blocks(f, config);
	block = (int)(config->blockDimX * config->blockDimY * config->blockDimZ);
	if (per_cluster < 1 || per_cluster > 16)
		return sd_leave(CUDA_ERROR_INVALID_CLUSTER_SIZE);
	if (block < 1 || block > l.threads)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*clusters = blocks_per_sm(f, &l, block, config->sharedMemBytes) * l.count / per_cluster;
	return sd_leave(CUDA_SUCCESS);
}
