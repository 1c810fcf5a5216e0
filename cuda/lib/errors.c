/* SPDX-License-Identifier: MIT */
/*
 * errors.c - names and descriptions of CUresult values and of the proxy's
 * requests, for messages and for cuGetErrorName()/cuGetErrorString().
 *
 * Both exported calls are answered here, never by the proxy: an application
 * asks them most when something has gone wrong, which may be that the proxy
 * is gone, or that cuInit() was never called.
 */
#include <stddef.h>

#include "cuda/lib/cuda_internal.h"

struct result_text {
	CUresult code;
	const char *name;
	const char *text;
};

#define R(code, text) { code, #code, text }

/* Every value of cuda.h's CUresult, in the header's order. */
static const struct result_text results[] = {
	R(CUDA_SUCCESS, "no error"),
	R(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
	R(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
	R(CUDA_ERROR_NOT_INITIALIZED, "the driver is not initialised"),
	R(CUDA_ERROR_DEINITIALIZED, "the driver is shutting down"),
	R(CUDA_ERROR_PROFILER_DISABLED, "profiling is disabled"),
	R(CUDA_ERROR_PROFILER_NOT_INITIALIZED, "the profiler is not initialised"),
	R(CUDA_ERROR_PROFILER_ALREADY_STARTED, "the profiler has already started"),
	R(CUDA_ERROR_PROFILER_ALREADY_STOPPED, "the profiler has already stopped"),
	R(CUDA_ERROR_STUB_LIBRARY, "the driver loaded is a stub library"),
	R(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "the call needs a newer driver"),
	R(CUDA_ERROR_DEVICE_UNAVAILABLE, "the device is unavailable"),
	R(CUDA_ERROR_NO_DEVICE, "no CUDA device found"),
	R(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
	R(CUDA_ERROR_DEVICE_NOT_LICENSED, "the device is not licensed for this"),
	R(CUDA_ERROR_INVALID_IMAGE, "invalid kernel image"),
	R(CUDA_ERROR_INVALID_CONTEXT, "invalid context"),
	R(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "the context is already current"),
	R(CUDA_ERROR_MAP_FAILED, "mapping failed"),
	R(CUDA_ERROR_UNMAP_FAILED, "unmapping failed"),
	R(CUDA_ERROR_ARRAY_IS_MAPPED, "the array is mapped"),
	R(CUDA_ERROR_ALREADY_MAPPED, "the resource is already mapped"),
	R(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image for this device"),
	R(CUDA_ERROR_ALREADY_ACQUIRED, "the resource is already acquired"),
	R(CUDA_ERROR_NOT_MAPPED, "the resource is not mapped"),
	R(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "the resource is not mapped as an array"),
	R(CUDA_ERROR_NOT_MAPPED_AS_POINTER, "the resource is not mapped as a pointer"),
	R(CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error"),
	R(CUDA_ERROR_UNSUPPORTED_LIMIT, "limit not supported by the device"),
	R(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "the context is in use by another thread"),
	R(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access not supported between these devices"),
	R(CUDA_ERROR_INVALID_PTX, "PTX compilation failed"),
	R(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "invalid graphics context"),
	R(CUDA_ERROR_NVLINK_UNCORRECTABLE, "uncorrectable NVLink error"),
	R(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "the PTX JIT compiler library was not found"),
	R(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "unsupported PTX version"),
	R(CUDA_ERROR_JIT_COMPILATION_DISABLED, "PTX JIT compilation is disabled"),
	R(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "execution affinity not supported"),
	R(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, "device-side synchronisation not supported"),
	R(CUDA_ERROR_CONTAINED, "a contained error occurred on the device"),
	R(CUDA_ERROR_INVALID_SOURCE, "invalid kernel source"),
	R(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
	R(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "shared object symbol not found"),
	R(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object initialisation failed"),
	R(CUDA_ERROR_OPERATING_SYSTEM, "an operating system call failed"),
	R(CUDA_ERROR_INVALID_HANDLE, "invalid handle"),
	R(CUDA_ERROR_ILLEGAL_STATE, "not possible in the current state"),
	R(CUDA_ERROR_LOSSY_QUERY, "the answer would lose information"),
	R(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
	R(CUDA_ERROR_NOT_READY, "not finished yet"),
	R(CUDA_ERROR_ILLEGAL_ADDRESS, "illegal memory access"),
	R(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "the launch needs more resources than there are"),
	R(CUDA_ERROR_LAUNCH_TIMEOUT, "the kernel ran too long and was stopped"),
	R(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "launch with incompatible texturing"),
	R(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled"),
	R(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access is not enabled"),
	R(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "the primary context is already active"),
	R(CUDA_ERROR_CONTEXT_IS_DESTROYED, "the context has been destroyed"),
	R(CUDA_ERROR_ASSERT, "a device-side assertion failed"),
	R(CUDA_ERROR_TOO_MANY_PEERS, "too many peer devices"),
	R(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "host memory is already registered"),
	R(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "host memory is not registered"),
	R(CUDA_ERROR_HARDWARE_STACK_ERROR, "device stack error"),
	R(CUDA_ERROR_ILLEGAL_INSTRUCTION, "illegal instruction"),
	R(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
	R(CUDA_ERROR_INVALID_ADDRESS_SPACE, "operation on the wrong address space"),
	R(CUDA_ERROR_INVALID_PC, "invalid program counter"),
	R(CUDA_ERROR_LAUNCH_FAILED, "the kernel failed"),
	R(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "cooperative launch grid too large"),
	R(CUDA_ERROR_TENSOR_MEMORY_LEAK, "tensor memory not freed by the kernel"),
	R(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
	R(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
	R(CUDA_ERROR_SYSTEM_NOT_READY, "the system is not ready"),
	R(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "driver and kernel module versions differ"),
	R(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
	  "forward compatibility not supported on this device"),
	R(CUDA_ERROR_MPS_CONNECTION_FAILED, "cannot connect to the MPS server"),
	R(CUDA_ERROR_MPS_RPC_FAILURE, "a call to the MPS server failed"),
	R(CUDA_ERROR_MPS_SERVER_NOT_READY, "the MPS server is not ready"),
	R(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, "the MPS server has too many clients"),
	R(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, "the MPS server has too many connections"),
	R(CUDA_ERROR_MPS_CLIENT_TERMINATED, "the MPS client was terminated"),
	R(CUDA_ERROR_CDP_NOT_SUPPORTED, "dynamic parallelism not supported"),
	R(CUDA_ERROR_CDP_VERSION_MISMATCH, "dynamic parallelism version mismatch"),
	R(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "not allowed while a stream is captured"),
	R(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "the stream capture was invalidated"),
	R(CUDA_ERROR_STREAM_CAPTURE_MERGE, "captures cannot be merged"),
	R(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "the capture was not started in this stream"),
	R(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "the capture forked and was never joined"),
	R(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "the capture would cross its isolation"),
	R(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "implicit dependency on a captured stream"),
	R(CUDA_ERROR_CAPTURED_EVENT, "not allowed on an event of a captured stream"),
	R(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "the capture belongs to another thread"),
	R(CUDA_ERROR_TIMEOUT, "timed out"),
	R(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "the graph update was not allowed"),
	R(CUDA_ERROR_EXTERNAL_DEVICE, "an external device failed"),
	R(CUDA_ERROR_INVALID_CLUSTER_SIZE, "invalid cluster size"),
	R(CUDA_ERROR_FUNCTION_NOT_LOADED, "the function is not loaded"),
	R(CUDA_ERROR_INVALID_RESOURCE_TYPE, "invalid resource type"),
	R(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, "invalid resource configuration"),
	R(CUDA_ERROR_KEY_ROTATION, "an encryption key rotation failed"),
	R(CUDA_ERROR_UNKNOWN, "unknown error"),
};

static const struct result_text *find_result(CUresult r)
{
	for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++)
		if (results[i].code == r)
			return &results[i];
	return NULL;
}

/* A value cuda.h does not know still gets a printable name in a message. */
const char *sc_cu_result_name(CUresult r)
{
	const struct result_text *t = find_result(r);

	return t ? t->name : "unknown CUresult";
}

#define OP(name) [SC_OP_##name] = #name

static const char *const op_names[SC_OP_COUNT] = {
	OP(NOP),
	OP(DRIVER_VERSION), OP(DEVICE_COUNT), OP(DEVICE_GET), OP(DEVICE_NAME),
	OP(DEVICE_ATTR), OP(DEVICE_TOTAL_MEM), OP(DEVICE_UUID), OP(DEVICE_PCI_BUS_ID),
	OP(DEVICE_BY_PCI_BUS_ID), OP(DEVICE_TEX1D_WIDTH), OP(DEVICE_AFFINITY), OP(FLUSH_RDMA),
	OP(DEVICE_P2P_ATTR), OP(CTX_PEER_ENABLE), OP(CTX_PEER_DISABLE), OP(COPY_PEER),
	OP(DEVICE_CAN_PEER),
	OP(PCTX_RETAIN), OP(PCTX_RELEASE), OP(PCTX_RESET), OP(PCTX_SET_FLAGS),
	OP(PCTX_GET_STATE), OP(CTX_CREATE), OP(CTX_DESTROY), OP(CTX_SYNC),
	OP(CTX_SET_LIMIT), OP(CTX_GET_LIMIT), OP(CTX_PRIORITIES), OP(CTX_SET_FLAGS),
	OP(CTX_SET_CACHE), OP(CTX_GET_CACHE), OP(CTX_SET_SHMEM), OP(CTX_GET_SHMEM),
	OP(CTX_RESET_L2), OP(MEM_GET_INFO),
	OP(MODULE_LOAD), OP(MODULE_UNLOAD), OP(MODULE_FUNCTION), OP(MODULE_GLOBAL),
	OP(LIBRARY_KERNEL), OP(LIBRARY_MODULE), OP(KERNEL_FUNCTION), OP(FUNC_GET_ATTR),
	OP(FUNC_SET_ATTR), OP(FUNC_SET_CACHE), OP(FUNC_SET_SHMEM), OP(FUNC_IS_LOADED),
	OP(FUNC_LOAD), OP(LOADING_MODE), OP(KERNEL_GET_ATTR), OP(KERNEL_SET_ATTR),
	OP(KERNEL_SET_CACHE), OP(FUNCTION_COUNT), OP(FUNCTION_NAMES), OP(LAUNCH),
	OP(LAUNCH_EX),
	OP(OCC_BLOCKS), OP(OCC_BLOCK_SIZE), OP(OCC_DYN_SMEM), OP(OCC_CLUSTERS),
	OP(VMM_GRANULARITY), OP(VMM_RESERVE), OP(VMM_MAP), OP(VMM_UNMAP),
	OP(MEM_GRANULARITY), OP(MEM_MAP), OP(MEM_UNMAP), OP(MEM_SET_ACCESS), OP(MEM_GET_ACCESS),
	OP(HEAP_REGISTER), OP(HOST_DEVPTR),
	OP(COPY), OP(COPY_2D), OP(COPY_3D), OP(MEMSET),
	OP(ARRAY_CREATE), OP(ARRAY_DESTROY), OP(TEX_CREATE), OP(TEX_DESTROY),
	OP(SURF_CREATE), OP(SURF_DESTROY),
	OP(STREAM_CREATE), OP(STREAM_DESTROY), OP(STREAM_SYNC), OP(STREAM_QUERY),
	OP(STREAM_WAIT), OP(EVENT_CREATE), OP(EVENT_RECORD), OP(EVENT_SYNC),
	OP(EVENT_QUERY), OP(EVENT_ELAPSED), OP(EVENT_DESTROY),
	OP(GRAPH_CREATE), OP(GRAPH_DESTROY), OP(GRAPH_CLONE), OP(GRAPH_ADD_NODE),
	OP(GRAPH_SET_NODE), OP(GRAPH_DESCRIBE), OP(GRAPH_NODE_TYPE), OP(GRAPH_NODE_ATTR),
	OP(GRAPH_DESTROY_NODE), OP(GRAPH_NODES), OP(GRAPH_EDGES), OP(GRAPH_ADD_EDGES),
	OP(GRAPH_INSTANTIATE), OP(GRAPH_EXEC_DESTROY), OP(GRAPH_EXEC_UPDATE), OP(GRAPH_LAUNCH),
	OP(GRAPH_UPLOAD), OP(CAPTURE_BEGIN), OP(CAPTURE_END), OP(CAPTURE_INFO), OP(CAPTURE_DEPS),
	OP(UPLOAD),
	OP(NONZERO), OP(CAPTURE_AREA), OP(CAPTURE_FREE), OP(PIECE_HASH),
};

/* Indexed by the enum, so a request added to proxy_requests.h without a name here reads as such. */
const char *sc_op_name(unsigned op)
{
	if (op >= SC_OP_COUNT || !op_names[op])
		return "unnamed request";
	return op_names[op];
}

SC_CU_API CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
	const struct result_text *t = find_result(error);

	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	*pStr = t ? t->name : NULL;
	return t ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SC_CU_API CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
	const struct result_text *t = find_result(error);

	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	*pStr = t ? t->text : NULL;
	return t ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
