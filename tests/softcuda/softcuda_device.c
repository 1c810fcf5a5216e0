/* SPDX-License-Identifier: MIT */
/*
 * softcuda_device.c - device queries: count, name, UUID, attributes, memory,
 * peer access capability and the attributes of links between devices.
 *
 * The figures are those of a small Hopper-like part (4 multiprocessors) so
 * that code sizing its launches from them gets plausible answers; the compute
 * capability comes from SOFTCUDA_CC.
 */
#include <stdio.h>
#include <string.h>

#include "softcuda_internal.h"

#define SD_DEVICE_NAME "selfckpt software device"

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!count)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*count = sd.n_devices;
	return sd_leave(CUDA_SUCCESS);
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!device)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_device_check(ordinal);
	if (rc == CUDA_SUCCESS)
		*device = ordinal;
	return sd_leave(rc);
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!name || len <= 0)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_device_check(dev);
	if (rc == CUDA_SUCCESS)
		snprintf(name, (size_t)len, "%s", SD_DEVICE_NAME);
	return sd_leave(rc);
}

/* Stable across processes and runs, distinct per device. */
static CUresult device_uuid(const char *func, CUuuid *uuid, CUdevice dev)
{
	static const char stem[12] = "softcuda-dev";
	CUresult rc = sd_enter(func);

	if (rc)
		return rc;
	if (!uuid)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_device_check(dev);
	if (rc == CUDA_SUCCESS) {
		memset(uuid->bytes, 0, sizeof(uuid->bytes));
		memcpy(uuid->bytes, stem, sizeof(stem));
		uuid->bytes[15] = (char)sd.visible[dev];
	}
	return sd_leave(rc);
}

CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	return device_uuid(__func__, uuid, dev);
}

CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	return device_uuid(__func__, uuid, dev);
}

CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!bytes)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_device_check(dev);
	if (rc == CUDA_SUCCESS)
		*bytes = sd.total_mem;
	return sd_leave(rc);
}

CUresult CUDAAPI cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!major || !minor)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_device_check(dev);
	if (rc == CUDA_SUCCESS) {
		*major = sd.cc_major;
		*minor = sd.cc_minor;
	}
	return sd_leave(rc);
}

CUresult CUDAAPI cuDeviceGetPCIBusId(char *bus_id, int len, CUdevice dev)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!bus_id || len <= 0)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_device_check(dev);
	if (rc == CUDA_SUCCESS)
		snprintf(bus_id, (size_t)len, "0000:%02x:00.0", dev + 1);
	return sd_leave(rc);
}

/* The bus ids cuDeviceGetPCIBusId gives: "0000:BB:00.0" with BB the ordinal plus one. */
CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice *dev, const char *bus_id)
{
	unsigned domain, bus, slot, function;
	char end;
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!dev || !bus_id)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if (sscanf(bus_id, "%x:%x:%x.%x%c", &domain, &bus, &slot, &function, &end) != 4 ||
	    domain || slot || function || !bus || sd_device_check((CUdevice)bus - 1))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	*dev = (CUdevice)bus - 1;
	return sd_leave(CUDA_SUCCESS);
}

/* 2^27 elements, as the GPUs modelled allow, for every valid format and channel count. */
CUresult CUDAAPI cuDeviceGetTexture1DLinearMaxWidth(size_t *width, CUarray_format format,
						    unsigned channels, CUdevice dev)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!width || !sd_format_bytes(format) ||
	    (channels != 1 && channels != 2 && channels != 4))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_device_check(dev);
	if (rc == CUDA_SUCCESS)
		*width = (size_t)1 << 27;
	return sd_leave(rc);
}

/* No execution affinity (green contexts) on the software device. */
CUresult CUDAAPI cuDeviceGetExecAffinitySupport(int *pi, CUexecAffinityType type, CUdevice dev)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!pi || (unsigned)type >= CU_EXEC_AFFINITY_TYPE_MAX)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_device_check(dev);
	if (rc == CUDA_SUCCESS)
		*pi = 0;
	return sd_leave(rc);
}

/* The devices share the host's memory: each reaches every other, none itself. */
int sd_device_can_access_peer(CUdevice dev, CUdevice peer)
{
	return dev != peer;
}

CUresult CUDAAPI cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!can)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if ((rc = sd_device_check(dev)) == CUDA_SUCCESS && (rc = sd_device_check(peer)) ==
	    CUDA_SUCCESS)
		*can = sd_device_can_access_peer(dev, peer);
	return sd_leave(rc);
}

/*
 * Every link is as good as another (rank 0). Over it a device that may reach
 * its peer reaches all of it: arrays, and every atomic (so never only some).
 */
static CUresult p2p_attr(int *value, CUdevice_P2PAttribute attr, int access)
{
	switch (attr) {
	case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
	case CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED:
		*value = 0;
		return CUDA_SUCCESS;
	case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
	case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
	case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
		*value = access;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult CUDAAPI cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib,
					 CUdevice srcDevice, CUdevice dstDevice)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!value)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	if ((rc = sd_device_check(srcDevice)) || (rc = sd_device_check(dstDevice)))
		return sd_leave(rc);
	if (srcDevice == dstDevice)
		return sd_leave(CUDA_ERROR_INVALID_DEVICE);
	return sd_leave(p2p_attr(value, attrib,
				 sd_device_can_access_peer(srcDevice, dstDevice)));
}

/* Nothing writes to it from outside: a flush has nothing to order. */
CUresult CUDAAPI cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target,
					    CUflushGPUDirectRDMAWritesScope scope)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (target != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TARGET_CURRENT_CTX ||
	    (scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_OWNER &&
	     scope != CU_FLUSH_GPU_DIRECT_RDMA_WRITES_TO_ALL_DEVICES))
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	return sd_leave(CUDA_SUCCESS);
}

/*
 * Fixed attributes; every valid attribute not listed is 0 (a feature the
 * device does not have, such as managed memory or memory pools).
 */
static const struct {
	CUdevice_attribute attr;
	int value;
} attr_table[] = {
	{ CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64 },
	{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647 },
	{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535 },
	{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535 },
	{ CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, SD_SHARED_PER_BLOCK },
	{ CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536 },
	{ CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32 },
	{ CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647 },
	{ CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536 },
	{ CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, SD_TEXTURE_ALIGN },
	{ CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT, SD_TEXTURE_ALIGN },
	{ CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, SD_TEXTURE_PITCH_ALIGN },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH, 131072 },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH, 131072 },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT, 65536 },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH, 16384 },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT, 16384 },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH, 16384 },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH, 268435456 },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH, 131072 },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT, 65000 },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH, 2097120 },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH, 32768 },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH, 131072 },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT, 65536 },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH, 16384 },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT, 16384 },
	{ CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH, 16384 },
	{ CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, SD_SHARED_PER_BLOCK_OPTIN },
	{ CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024 },
	{ CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 4 },
	{ CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1755000 },
	{ CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000 },
	{ CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120 },
	{ CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 52428800 },
	{ CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048 },
	{ CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472 },
	{ CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32 },
	{ CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 2 },
	{ CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2 },
	{ CU_DEVICE_ATTRIBUTE_NUMA_ID, -1 },
	{ CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, -1 },
	{ CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT, 4 },
	{ CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1 },
	{ CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1 },
	{ CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1 },
	{ CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1 },
	{ CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 1 },
	{ CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1 }, /* the process's own memory (softcuda_mem.c) */
};

int sd_device_attr(CUdevice_attribute attr, CUdevice dev)
{
	size_t i;

	switch (attr) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		return sd.cc_major;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
		return sd.cc_minor;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
		return dev + 1;
	default:
		break;
	}
	for (i = 0; i < sizeof(attr_table) / sizeof(attr_table[0]); i++)
		if (attr_table[i].attr == attr)
			return attr_table[i].value;
	return 0;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice dev)
{
	CUresult rc = sd_enter(__func__);

	if (rc)
		return rc;
	if (!value || (int)attr < 1 || attr >= CU_DEVICE_ATTRIBUTE_MAX)
		return sd_leave(CUDA_ERROR_INVALID_VALUE);
	rc = sd_device_check(dev);
	if (rc)
		return sd_leave(rc);
	*value = sd_device_attr(attr, dev);
	return sd_leave(CUDA_SUCCESS);
}
