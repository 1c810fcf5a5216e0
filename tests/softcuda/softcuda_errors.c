/* SPDX-License-Identifier: MIT */
/*
 * softcuda_errors.c - cuGetErrorName() and cuGetErrorString(): every result
 * the device returns, and the common ones of a real device it never does.
 * Both work before cuInit(), as in CUDA.
 */
#include <stddef.h>

#include "softcuda_internal.h"

#define SD_ERROR(code, text) { code, #code, text }

static const struct {
	CUresult code;
	const char *name;
	const char *text;
} sd_errors[] = {
	SD_ERROR(CUDA_SUCCESS, "no error"),
	SD_ERROR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
	SD_ERROR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
	SD_ERROR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
	SD_ERROR(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
	SD_ERROR(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
	SD_ERROR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
	SD_ERROR(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
	SD_ERROR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
	SD_ERROR(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
	SD_ERROR(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"),
	SD_ERROR(CUDA_ERROR_UNMAP_FAILED, "unmapping of buffer object failed"),
	SD_ERROR(CUDA_ERROR_NO_BINARY_FOR_GPU,
		 "no kernel image is available for execution on the device"),
	SD_ERROR(CUDA_ERROR_UNSUPPORTED_LIMIT,
		 "limit is not supported on this architecture"),
	SD_ERROR(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
	SD_ERROR(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"),
	SD_ERROR(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
	SD_ERROR(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND,
		 "shared object symbol not found"),
	SD_ERROR(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED,
		 "shared object initialization failed"),
	SD_ERROR(CUDA_ERROR_OPERATING_SYSTEM,
		 "OS call failed or operation not supported on this OS"),
	SD_ERROR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
	SD_ERROR(CUDA_ERROR_ILLEGAL_STATE,
		 "the operation cannot be performed in the present state"),
	SD_ERROR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
	SD_ERROR(CUDA_ERROR_NOT_READY, "device not ready"),
	SD_ERROR(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
	SD_ERROR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
		 "too many resources requested for launch"),
	SD_ERROR(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"),
	SD_ERROR(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "primary context active"),
	SD_ERROR(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
	SD_ERROR(CUDA_ERROR_ASSERT, "device-side assert triggered"),
	SD_ERROR(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
		 "part or all of the requested memory range is already mapped"),
	SD_ERROR(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
		 "pointer does not correspond to a registered memory region"),
	SD_ERROR(CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"),
	SD_ERROR(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
	SD_ERROR(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
	SD_ERROR(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
	SD_ERROR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
	SD_ERROR(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized"),
	SD_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
		 "operation not permitted when stream is capturing"),
	SD_ERROR(CUDA_ERROR_TIMEOUT, "wait operation timed out"),
	SD_ERROR(CUDA_ERROR_UNKNOWN, "unknown error"),
};

static int error_index(CUresult code)
{
	size_t i;

	for (i = 0; i < sizeof(sd_errors) / sizeof(sd_errors[0]); i++)
		if (sd_errors[i].code == code)
			return (int)i;
	return -1;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **str)
{
	int i = error_index(error);

	if (!str)
		return CUDA_ERROR_INVALID_VALUE;
	*str = i < 0 ? NULL : sd_errors[i].name;
	return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **str)
{
	int i = error_index(error);

	if (!str)
		return CUDA_ERROR_INVALID_VALUE;
	*str = i < 0 ? NULL : sd_errors[i].text;
	return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
