/* SPDX-License-Identifier: MIT */
/*
 * proxy_driver.h - the driver entry points the GPU proxy calls, looked up by
 * name in the libcuda it loads (the real one, or the software device in tests).
 *
 * cuda.h maps most names to versioned symbols (cuMemcpyHtoD is
 * cuMemcpyHtoD_v2): the fields below are spelled with the plain names, which
 * the header rewrites in the field names and the symbol strings alike.
 */
#ifndef SC_PROXY_DRIVER_H
#define SC_PROXY_DRIVER_H

#include <cuda.h>

#define SC_DRIVER_CALLS(X) \
	X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuDeviceGetCount) X(cuDeviceGet) \
	X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDeviceGetUuid) \
	X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxReset) \
	X(cuDevicePrimaryCtxSetFlags) X(cuDevicePrimaryCtxGetState) X(cuCtxCreate) \
	X(cuCtxDestroy) X(cuCtxSetCurrent) X(cuCtxPopCurrent) X(cuCtxSynchronize) X(cuCtxSetLimit) \
	X(cuCtxGetLimit) X(cuCtxGetStreamPriorityRange) X(cuMemGetInfo) \
	X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuModuleGetGlobal) \
	X(cuLibraryLoadData) X(cuLibraryUnload) X(cuLibraryGetKernel) X(cuLibraryGetModule) \
	X(cuLibraryGetGlobal) X(cuKernelGetFunction) X(cuFuncGetParamInfo) \
	X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuFuncSetCacheConfig) X(cuLaunchKernel) \
	X(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags) \
	X(cuOccupancyMaxPotentialBlockSizeWithFlags) X(cuOccupancyAvailableDynamicSMemPerBlock) \
	X(cuMemGetAllocationGranularity) X(cuMemAddressReserve) X(cuMemCreate) X(cuMemMap) \
	X(cuMemSetAccess) X(cuMemUnmap) X(cuMemRelease) X(cuMemHostRegister) \
	X(cuMemHostGetDevicePointer) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD) \
	X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemcpy2DAsync) \
	X(cuMemcpy3DAsync) X(cuMemsetD8Async) X(cuMemsetD16Async) X(cuMemsetD32Async) \
	X(cuMemsetD2D8Async) X(cuMemsetD2D16Async) X(cuMemsetD2D32Async) X(cuArray3DCreate) \
	X(cuArrayDestroy) X(cuTexObjectCreate) X(cuTexObjectDestroy) X(cuSurfObjectCreate) \
	X(cuSurfObjectDestroy) X(cuStreamCreateWithPriority) X(cuStreamDestroy) \
	X(cuStreamSynchronize) X(cuStreamQuery) X(cuStreamWaitEvent) X(cuEventCreate) \
	X(cuEventRecordWithFlags) X(cuEventSynchronize) X(cuEventQuery) X(cuEventElapsedTime) \
	X(cuEventDestroy) X(cuEventRecord) X(cuArray3DGetDescriptor) \
	X(cuMemAlloc) X(cuMemFree) X(cuMemFreeAsync) X(cuDeviceGetPCIBusId) X(cuDeviceGetByPCIBusId) \
	X(cuDeviceGetTexture1DLinearMaxWidth) X(cuDeviceGetExecAffinitySupport) \
	X(cuFlushGPUDirectRDMAWrites) X(cuCtxSetFlags) X(cuCtxSetCacheConfig) \
	X(cuCtxGetCacheConfig) X(cuCtxSetSharedMemConfig) X(cuCtxGetSharedMemConfig) \
	X(cuCtxResetPersistingL2Cache) X(cuFuncSetSharedMemConfig) X(cuFuncIsLoaded) \
	X(cuFuncLoad) X(cuModuleGetLoadingMode) X(cuKernelGetAttribute) \
	X(cuKernelSetAttribute) X(cuKernelSetCacheConfig) X(cuModuleGetFunctionCount) \
	X(cuModuleEnumerateFunctions) X(cuLibraryGetKernelCount) X(cuLibraryEnumerateKernels) \
	X(cuFuncGetName) X(cuKernelGetName) X(cuLaunchKernelEx) \
	X(cuMemGetAccess) X(cuDeviceCanAccessPeer) X(cuOccupancyMaxActiveClusters) \
	X(cuOccupancyMaxPotentialClusterSize) \
	X(cuGraphCreate) X(cuGraphDestroy) X(cuGraphClone) X(cuGraphAddKernelNode) \
	X(cuGraphAddMemcpyNode) X(cuGraphAddMemsetNode) X(cuGraphAddEmptyNode) \
	X(cuGraphAddEventRecordNode) X(cuGraphAddEventWaitNode) X(cuGraphKernelNodeSetParams) \
	X(cuGraphKernelNodeGetParams) X(cuGraphKernelNodeSetAttribute) \
	X(cuGraphKernelNodeGetAttribute) X(cuGraphMemcpyNodeGetParams) \
	X(cuGraphMemsetNodeGetParams) X(cuGraphEventRecordNodeGetEvent) \
	X(cuGraphEventWaitNodeGetEvent) X(cuGraphNodeGetType) X(cuGraphDestroyNode) \
	X(cuGraphGetNodes) X(cuGraphGetRootNodes) X(cuGraphGetEdges) X(cuGraphAddDependencies) \
	X(cuGraphInstantiate) X(cuGraphExecDestroy) X(cuGraphExecUpdate) X(cuGraphLaunch) \
	X(cuGraphUpload) X(cuGraphExecKernelNodeSetParams) X(cuStreamBeginCapture) \
	X(cuStreamEndCapture) X(cuStreamIsCapturing) X(cuStreamGetCaptureInfo) \
	X(cuStreamUpdateCaptureDependencies) X(cuPointerGetAttribute) X(cuLibraryGetManaged) \
	X(cuCtxEnablePeerAccess) X(cuCtxDisablePeerAccess) X(cuDeviceGetP2PAttribute) \
	X(cuMemcpyPeerAsync)

#define SC_DRIVER_FIELD(name) __typeof__(&name) name;

/* The shared memory bank calls are deprecated, not gone: programs still make them. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
struct sc_driver {
	SC_DRIVER_CALLS(SC_DRIVER_FIELD)
};
#pragma GCC diagnostic pop

extern struct sc_driver sc_drv;

/**
 * sc_driver_load() - dlopen @path and look every call up.
 * Return: 0, or -1 with a message in @why (@why_len bytes).
 */
int sc_driver_load(const char *path, char *why, size_t why_len);

#endif /* SC_PROXY_DRIVER_H */
