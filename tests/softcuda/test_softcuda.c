/* SPDX-License-Identifier: MIT */
/*
 * test_softcuda.c - the software CUDA device itself, loaded with dlopen() as
 * the GPU proxy loads it: device queries, contexts, VMM and legacy memory,
 * copies and sets, modules and libraries, launches through kernelParams and
 * extra, deterministic module globals, arrays, textures and surfaces,
 * streams and events, graphs and stream capture, refusals, and fault injection.
 *
 * The device and the kernels come from the plain build (SELFCKPT_BUILD),
 * also under SAN=1. Each test runs in its own process, so a test may set the
 * device's environment variables before its first cuInit().
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda.h>

#include "softcuda.h"

#define MIB (1UL << 20)
#define GRAN (2 * MIB)
#define GLOBAL_BASE 0x6e0000000000ULL

/*
 * Every entry point the tests call, by the name cuda.h gives it: the table
 * is declared and loaded with the macros expanded, so cu.cuMemAlloc is the
 * library's cuMemAlloc_v2, and a missing or misnamed export fails the load.
 */
#define SD_API(X)                                                                          \
	X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet)                 \
	X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDeviceGetUuid)  \
	X(cuDeviceGetPCIBusId) X(cuDeviceCanAccessPeer) X(cuDeviceGetP2PAttribute)         \
	X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxReset) \
	X(cuDevicePrimaryCtxSetFlags) X(cuDevicePrimaryCtxGetState) X(cuCtxCreate)         \
	X(cuCtxDestroy) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxPushCurrent)          \
	X(cuCtxPopCurrent) X(cuCtxGetDevice) X(cuCtxSynchronize) X(cuCtxSetLimit)          \
	X(cuCtxGetLimit) X(cuCtxGetFlags) X(cuCtxGetApiVersion)                            \
	X(cuCtxGetStreamPriorityRange) X(cuCtxEnablePeerAccess) X(cuCtxDisablePeerAccess)  \
	X(cuMemGetAllocationGranularity) X(cuMemAddressReserve) X(cuMemAddressFree)        \
	X(cuMemCreate) X(cuMemRelease) X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess)         \
	X(cuMemGetAllocationPropertiesFromHandle)                                          \
	X(cuMemAlloc) X(cuMemFree) X(cuMemAllocPitch) X(cuMemGetInfo)                      \
	X(cuMemGetAddressRange) X(cuMemAllocHost) X(cuMemFreeHost) X(cuMemHostAlloc)       \
	X(cuMemHostGetDevicePointer) X(cuMemHostRegister) X(cuMemHostUnregister)           \
	X(cuMemHostGetFlags) X(cuPointerGetAttribute)                                      \
	X(cuMemcpy) X(cuMemcpyAsync) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD)       \
	X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemcpy2D)       \
	X(cuMemcpy2DUnaligned) X(cuMemcpy2DAsync) X(cuMemcpy3D) X(cuMemcpy3DAsync)         \
	X(cuMemcpyHtoA) X(cuMemcpyAtoH) X(cuMemcpyDtoA) X(cuMemcpyAtoD) X(cuMemcpyPeer)    \
	X(cuMemcpyPeerAsync)                                                               \
	X(cuMemsetD8) X(cuMemsetD16) X(cuMemsetD32) X(cuMemsetD8Async) X(cuMemsetD16Async) \
	X(cuMemsetD32Async) X(cuMemsetD2D8) X(cuMemsetD2D16) X(cuMemsetD2D32)              \
	X(cuMemsetD2D8Async) X(cuMemsetD2D16Async) X(cuMemsetD2D32Async)                   \
	X(cuArrayCreate) X(cuArray3DCreate) X(cuArrayDestroy) X(cuArrayGetDescriptor)      \
	X(cuArray3DGetDescriptor) X(cuTexObjectCreate) X(cuTexObjectDestroy)               \
	X(cuTexObjectGetResourceDesc) X(cuTexObjectGetTextureDesc) X(cuSurfObjectCreate)   \
	X(cuSurfObjectDestroy)                                                             \
	X(cuModuleLoad) X(cuModuleLoadData) X(cuModuleLoadDataEx) X(cuModuleLoadFatBinary) \
	X(cuModuleUnload) X(cuModuleGetFunction) X(cuModuleGetGlobal) X(cuLibraryLoadData) \
	X(cuLibraryLoadFromFile) X(cuLibraryUnload) X(cuLibraryGetKernel)                  \
	X(cuLibraryGetModule) X(cuLibraryGetGlobal) X(cuKernelGetFunction)                 \
	X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuFuncSetCacheConfig)                \
	X(cuFuncGetParamInfo) X(cuFuncGetName) X(cuLaunchKernel) X(cuLaunchKernelEx)       \
	X(cuStreamCreate) X(cuStreamCreateWithPriority) X(cuStreamDestroy)                 \
	X(cuStreamSynchronize) X(cuStreamQuery) X(cuStreamWaitEvent) X(cuStreamGetPriority) \
	X(cuStreamGetFlags) X(cuEventCreate) X(cuEventRecord) X(cuEventRecordWithFlags)    \
	X(cuEventSynchronize) X(cuEventQuery) X(cuEventElapsedTime) X(cuEventDestroy)      \
	X(cuGraphCreate) X(cuGraphDestroy) X(cuGraphClone) X(cuGraphAddKernelNode)         \
	X(cuGraphAddMemcpyNode) X(cuGraphAddMemsetNode) X(cuGraphAddEmptyNode)             \
	X(cuGraphAddEventRecordNode) X(cuGraphAddEventWaitNode) X(cuGraphAddDependencies)  \
	X(cuGraphGetNodes) X(cuGraphGetRootNodes) X(cuGraphGetEdges) X(cuGraphNodeGetType) \
	X(cuGraphDestroyNode) X(cuGraphKernelNodeGetParams) X(cuGraphKernelNodeSetParams)  \
	X(cuGraphKernelNodeGetAttribute) X(cuGraphKernelNodeSetAttribute)                  \
	X(cuGraphMemcpyNodeGetParams) X(cuGraphMemsetNodeGetParams)                        \
	X(cuGraphEventRecordNodeGetEvent) X(cuGraphEventWaitNodeGetEvent)                  \
	X(cuGraphInstantiate) X(cuGraphLaunch) X(cuGraphUpload) X(cuGraphExecDestroy)      \
	X(cuGraphExecGetFlags) X(cuGraphExecKernelNodeSetParams) X(cuGraphExecUpdate)      \
	X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuStreamIsCapturing)               \
	X(cuStreamGetCaptureInfo)                                                          \
	X(cuGetErrorName) X(cuGetErrorString) X(cuGetProcAddress)                          \
	X(softcuda_tex2d_read) X(softcuda_surf2d_write)

#define SD_STR_(x) #x
#define SD_STR(x) SD_STR_(x)
#define SD_DECLARE(fn) __typeof__(fn) *fn;
#define SD_LOAD(fn)                                                    \
	cu.fn = dlsym(lib, SD_STR(fn));                                \
	cr_assert_not_null(cu.fn, "%s not exported", SD_STR(fn));

static struct {
	SD_API(SD_DECLARE)
} cu;
static void *lib;

#define CU_OK(call)                                                                   \
	do {                                                                          \
		CUresult r_ = (call);                                                 \
		cr_assert_eq(r_, CUDA_SUCCESS, "%s: %d", #call, (int)r_);             \
	} while (0)
#define CU_ERR(call, err)                                                             \
	do {                                                                          \
		CUresult r_ = (call);                                                 \
		cr_assert_eq(r_, err, "%s: %d, expected %s", #call, (int)r_, #err);   \
	} while (0)

/*
 * Forked children must not assert: Criterion reports every assertion to the
 * runner, and a child that shares the parent's channel hangs there. They use
 * the try_ forms, which return -1 instead.
 */
static int try_build_path(char *buf, const char *rel)
{
	const char *build = getenv("SELFCKPT_BUILD");
	char rel_path[PATH_MAX];

	snprintf(rel_path, sizeof(rel_path), "%s/%s", build ? build : "build", rel);
	return realpath(rel_path, buf) ? 0 : -1;
}

static const char *build_path(char *buf, const char *rel)
{
	cr_assert_eq(try_build_path(buf, rel), 0, "no %s", rel);
	return buf;
}

#define SD_TRY_LOAD(fn)                          \
	cu.fn = dlsym(lib, SD_STR(fn));          \
	if (!cu.fn)                              \
		return -1;

static int try_load(void)
{
	char path[PATH_MAX];

	if (try_build_path(path, "tests/libsoftcuda.so.1"))
		return -1;
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return -1;
	SD_API(SD_TRY_LOAD)
	return 0;
}

static void load(void)
{
	char path[PATH_MAX];

	lib = dlopen(build_path(path, "tests/libsoftcuda.so.1"), RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(lib, "dlopen: %s", dlerror());
	SD_API(SD_LOAD)
}

/* Loaded, initialised, the primary context of device 0 current. */
static CUcontext start(void)
{
	CUcontext ctx;
	CUdevice dev;

	load();
	CU_OK(cu.cuInit(0));
	CU_OK(cu.cuDeviceGet(&dev, 0));
	CU_OK(cu.cuDevicePrimaryCtxRetain(&ctx, dev));
	CU_OK(cu.cuCtxSetCurrent(ctx));
	return ctx;
}

/* Two devices, the primary context of device 0 current (*@a), that of device 1 retained (*@b). */
static void start_two(CUcontext *a, CUcontext *b)
{
	setenv("SOFTCUDA_DEVICES", "2", 1);
	*a = start();
	CU_OK(cu.cuDevicePrimaryCtxRetain(b, 1));
}

/* The first lines of every module: PTX, for the device's 9.0 unless a test says otherwise. */
#define PTX_HEAD ".version 8.0\n"
#define PTX_SM90 PTX_HEAD ".target sm_90\n"

#define TEST_KERNELS                                                                       \
	".entry vec_add (8, 8, 8, 4)\n"                                                    \
	".entry add_to (8, 4)\n"                                                           \
	".entry mixed (1, 8, 4, 2, 8)\n"                                                   \
	".entry tex_to_surf (8, 8, 4, 4)\n"                                                \
	".entry add_n (8, 4, 4)\n"                                                         \
	"// softcuda global counter 4\n"

/* A module text naming the test kernel library, then body. */
static char *module_text(char *buf, size_t len, const char *body)
{
	char kernels[PATH_MAX];

	build_path(kernels, "tests/libsoftcuda-testkernels.so");
	snprintf(buf, len, PTX_HEAD "// the tests' kernels\n.target sm_80\n"
		 "// softcuda library %s\n%s", kernels, body);
	return buf;
}

static CUmodule load_module(const char *body)
{
	char text[2 * PATH_MAX];
	CUmodule mod;

	CU_OK(cu.cuModuleLoadData(&mod, module_text(text, sizeof(text), body)));
	return mod;
}

static size_t mem_free(void)
{
	size_t free_bytes, total;

	CU_OK(cu.cuMemGetInfo(&free_bytes, &total));
	return free_bytes;
}

Test(softcuda, init_version_and_device_queries)
{
	char name[64];
	CUuuid a, b;
	size_t total;
	int v, major, minor;

	load();
	CU_OK(cu.cuDriverGetVersion(&v));
	cr_assert_eq(v, 13000);
	CU_ERR(cu.cuDeviceGetCount(&v), CUDA_ERROR_NOT_INITIALIZED);
	CU_ERR(cu.cuInit(1), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuInit(0));
	CU_OK(cu.cuInit(0));
	CU_OK(cu.cuDeviceGetCount(&v));
	cr_assert_eq(v, 1);
	CU_OK(cu.cuDeviceGetName(name, sizeof(name), 0));
	cr_assert_str_eq(name, "selfckpt software device");
	CU_ERR(cu.cuDeviceGetName(name, sizeof(name), 1), CUDA_ERROR_INVALID_DEVICE);
	CU_ERR(cu.cuDeviceGet(&v, 1), CUDA_ERROR_INVALID_DEVICE);
	CU_OK(cu.cuDeviceTotalMem(&total, 0));
	cr_assert_eq(total, 4096 * MIB);
	/* Deprecated in cuda.h, so looked up by hand. */
	CUresult (*compute_capability)(int *, int *, CUdevice) =
		(CUresult (*)(int *, int *, CUdevice))dlsym(lib, "cuDeviceComputeCapability");
	cr_assert_not_null(compute_capability);
	CU_OK(compute_capability(&major, &minor, 0));
	cr_assert(major == 9 && minor == 0);
	CU_OK(cu.cuDeviceGetUuid(&a, 0));
	__typeof__(cuDeviceGetUuid) *uuid_v1 = dlsym(lib, "cuDeviceGetUuid");
	cr_assert_not_null(uuid_v1);
	CU_OK(uuid_v1(&b, 0));
	cr_assert_eq(memcmp(&a, &b, sizeof(a)), 0);
	CU_OK(cu.cuDeviceGetPCIBusId(name, sizeof(name), 0));
	cr_assert_str_eq(name, "0000:01:00.0");
}

Test(softcuda, device_attributes)
{
	static const struct {
		CUdevice_attribute attr;
		int value;
	} want[] = {
		{ CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32 },
		{ CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024 },
		{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64 },
		{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647 },
		{ CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 4 },
		{ CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1 },
		{ CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512 },
		{ CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9 },
		{ CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0 },
		{ CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1 },
		{ CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1 },
	};
	int v;

	load();
	CU_OK(cu.cuInit(0));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		CU_OK(cu.cuDeviceGetAttribute(&v, want[i].attr, 0));
		cr_assert_eq(v, want[i].value, "attribute %d: %d", want[i].attr, v);
	}
	CU_OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0));
	cr_assert_gt(v, 0);
	CU_ERR(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuDeviceGetAttribute(&v, (CUdevice_attribute)0, 0), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 7),
	       CUDA_ERROR_INVALID_DEVICE);
}

Test(softcuda, environment_sets_devices_memory_and_capability)
{
	size_t total;
	int n, v;

	setenv("SOFTCUDA_DEVICES", "2", 1);
	setenv("SOFTCUDA_MEMORY", "64", 1);
	setenv("SOFTCUDA_CC", "8.6", 1);
	load();
	CU_OK(cu.cuInit(0));
	CU_OK(cu.cuDeviceGetCount(&n));
	cr_assert_eq(n, 2);
	CU_OK(cu.cuDeviceTotalMem(&total, 1));
	cr_assert_eq(total, 64 * MIB);
	CU_OK(cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 1));
	cr_assert_eq(v, 6);
}

Test(softcuda, bad_environment_refuses_init)
{
	setenv("SOFTCUDA_CC", "nine", 1);
	load();
	CU_ERR(cu.cuInit(0), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuDeviceGetCount(&(int){ 0 }), CUDA_ERROR_NOT_INITIALIZED);
}

Test(softcuda, p2p_attributes_of_two_devices)
{
	static const struct {
		CUdevice_P2PAttribute attr;
		int value;
	} want[] = {
		{ CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, 0 },
		{ CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 1 },
		{ CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, 1 },
		{ CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED, 1 },
		{ CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED, 0 },
	};
	int v, can;

	setenv("SOFTCUDA_DEVICES", "2", 1);
	load();
	CU_ERR(cu.cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1),
	       CUDA_ERROR_NOT_INITIALIZED);
	CU_OK(cu.cuInit(0));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		for (CUdevice src = 0; src < 2; src++) {
			v = -1;
			CU_OK(cu.cuDeviceGetP2PAttribute(&v, want[i].attr, src, 1 - src));
			cr_assert_eq(v, want[i].value, "attribute %d from %d: %d", want[i].attr,
				     src, v);
		}
	}
	/* Access as cuDeviceCanAccessPeer answers it. */
	CU_OK(cu.cuDeviceCanAccessPeer(&can, 0, 1));
	cr_assert_eq(can, 1);
	CU_OK(cu.cuDeviceCanAccessPeer(&can, 1, 1));
	cr_assert_eq(can, 0);
	CU_ERR(cu.cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 1, 1),
	       CUDA_ERROR_INVALID_DEVICE);
	CU_ERR(cu.cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 2),
	       CUDA_ERROR_INVALID_DEVICE);
	CU_ERR(cu.cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, -1, 0),
	       CUDA_ERROR_INVALID_DEVICE);
	CU_ERR(cu.cuDeviceGetP2PAttribute(&v, (CUdevice_P2PAttribute)0, 0, 1),
	       CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuDeviceGetP2PAttribute(&v, (CUdevice_P2PAttribute)6, 0, 1),
	       CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuDeviceGetP2PAttribute(NULL, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1),
	       CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, primary_context_lifecycle)
{
	CUcontext a, b, cur;
	CUdeviceptr p;
	unsigned flags;
	int active;
	CUdevice dev;

	load();
	CU_OK(cu.cuInit(0));
	CU_ERR(cu.cuMemAlloc(&p, 64), CUDA_ERROR_INVALID_CONTEXT);
	CU_OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
	cr_assert_eq(active, 0);
	CU_OK(cu.cuDevicePrimaryCtxSetFlags(0, CU_CTX_SCHED_BLOCKING_SYNC));
	CU_ERR(cu.cuDevicePrimaryCtxSetFlags(0, 0x3), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuDevicePrimaryCtxRetain(&a, 0));
	CU_OK(cu.cuDevicePrimaryCtxRetain(&b, 0));
	cr_assert_eq(a, b);
	CU_OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
	cr_assert(active == 1 && flags == CU_CTX_SCHED_BLOCKING_SYNC);
	CU_OK(cu.cuCtxSetCurrent(a));
	CU_OK(cu.cuCtxGetCurrent(&cur));
	cr_assert_eq(cur, a);
	CU_OK(cu.cuCtxGetDevice(&dev));
	cr_assert_eq(dev, 0);
	CU_OK(cu.cuCtxGetFlags(&flags));
	cr_assert_eq(flags, CU_CTX_SCHED_BLOCKING_SYNC);
	CU_OK(cu.cuMemAlloc(&p, 64));
	CU_OK(cu.cuDevicePrimaryCtxRelease(0));
	CU_OK(cu.cuMemFree(p));
	CU_OK(cu.cuMemAlloc(&p, 64));
	/* The last release frees what the context owns and makes it inactive. */
	CU_OK(cu.cuDevicePrimaryCtxRelease(0));
	CU_ERR(cu.cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
	CU_OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
	cr_assert_eq(active, 0);
	CU_ERR(cu.cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
	CU_OK(cu.cuDevicePrimaryCtxRetain(&a, 0));
	CU_OK(cu.cuCtxSynchronize());
	CU_ERR(cu.cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
	/* A reset frees everything but keeps the context retained and usable. */
	CU_OK(cu.cuMemAlloc(&p, 64));
	CU_OK(cu.cuDevicePrimaryCtxReset(0));
	CU_OK(cu.cuDevicePrimaryCtxGetState(0, &flags, &active));
	cr_assert(active == 1 && flags == 0);
	CU_ERR(cu.cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuDevicePrimaryCtxRelease(0));
}

Test(softcuda, created_contexts_push_and_pop)
{
	CUcontext primary = start(), c1, c2, cur;

	CU_OK(cu.cuCtxCreate(&c1, NULL, 0, 0));
	CU_OK(cu.cuCtxGetCurrent(&cur));
	cr_assert_eq(cur, c1);
	CU_OK(cu.cuCtxCreate(&c2, &(CUctxCreateParams){ 0 }, CU_CTX_SCHED_SPIN, 0));
	cr_assert_neq(c1, c2);
	CU_OK(cu.cuCtxPopCurrent(&cur));
	cr_assert_eq(cur, c2);
	CU_OK(cu.cuCtxPushCurrent(primary));
	CU_OK(cu.cuCtxGetCurrent(&cur));
	cr_assert_eq(cur, primary);
	/* c1 is below the top of the stack: destroyed there, it stays, dead. */
	CU_OK(cu.cuCtxDestroy(c1));
	CU_ERR(cu.cuCtxDestroy(c1), CUDA_ERROR_INVALID_CONTEXT);
	CU_OK(cu.cuCtxPopCurrent(&cur));
	cr_assert_eq(cur, primary);
	CU_ERR(cu.cuCtxSynchronize(), CUDA_ERROR_CONTEXT_IS_DESTROYED);
	CU_ERR(cu.cuCtxPushCurrent(c1), CUDA_ERROR_INVALID_CONTEXT);
	CU_OK(cu.cuCtxPopCurrent(NULL));
	CU_OK(cu.cuCtxPopCurrent(&cur));
	cr_assert_eq(cur, primary);
	CU_ERR(cu.cuCtxPopCurrent(&cur), CUDA_ERROR_INVALID_CONTEXT);
	CU_OK(cu.cuCtxGetCurrent(&cur));
	cr_assert_null(cur);
	CU_ERR(cu.cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
	CU_OK(cu.cuCtxSetCurrent(c2));
	CU_OK(cu.cuCtxDestroy(c2));
	CU_OK(cu.cuCtxGetCurrent(&cur));
	cr_assert_null(cur);
	CU_ERR(cu.cuCtxCreate(&c1, NULL, 0, 3), CUDA_ERROR_INVALID_DEVICE);
	CU_ERR(cu.cuCtxCreate(&c1, NULL, 0x1000, 0), CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, destroying_a_context_frees_what_it_owns)
{
	CUcontext primary = start(), c;
	size_t before = mem_free();
	CUdeviceptr p;
	CUstream s;

	CU_OK(cu.cuCtxCreate(&c, NULL, 0, 0));
	CU_OK(cu.cuMemAlloc(&p, 64 * MIB));
	CU_OK(cu.cuStreamCreate(&s, 0));
	cr_assert_eq(mem_free(), before - 64 * MIB);
	CU_OK(cu.cuCtxDestroy(c));
	CU_OK(cu.cuCtxSetCurrent(primary));
	cr_assert_eq(mem_free(), before);
	CU_ERR(cu.cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, peer_access_enable_disable_and_refusals)
{
	CUcontext a, b, c, cur;
	int junk;

	setenv("SOFTCUDA_DEVICES", "2", 1);
	load();
	CU_OK(cu.cuInit(0));
	CU_OK(cu.cuDevicePrimaryCtxRetain(&a, 0));
	CU_OK(cu.cuDevicePrimaryCtxRetain(&b, 1));
	CU_ERR(cu.cuCtxEnablePeerAccess(b, 0), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cu.cuCtxDisablePeerAccess(b), CUDA_ERROR_INVALID_CONTEXT);
	CU_OK(cu.cuCtxSetCurrent(a));
	CU_ERR(cu.cuCtxEnablePeerAccess(NULL, 0), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cu.cuCtxEnablePeerAccess((CUcontext)&junk, 0), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cu.cuCtxEnablePeerAccess(a, 0), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cu.cuCtxEnablePeerAccess(b, 1), CUDA_ERROR_INVALID_VALUE);
	/* Another context of the current context's device. */
	CU_OK(cu.cuCtxCreate(&c, NULL, 0, 0));
	CU_OK(cu.cuCtxPopCurrent(&cur));
	cr_assert_eq(cur, c);
	CU_ERR(cu.cuCtxEnablePeerAccess(c, 0), CUDA_ERROR_INVALID_DEVICE);
	CU_ERR(cu.cuCtxDisablePeerAccess(b), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
	CU_OK(cu.cuCtxEnablePeerAccess(b, 0));
	CU_ERR(cu.cuCtxEnablePeerAccess(b, 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
	/* One way only: b reaches a only once it asks. */
	CU_OK(cu.cuCtxSetCurrent(b));
	CU_ERR(cu.cuCtxDisablePeerAccess(a), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
	CU_ERR(cu.cuCtxDisablePeerAccess(b), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
	CU_OK(cu.cuCtxEnablePeerAccess(a, 0));
	CU_OK(cu.cuCtxDisablePeerAccess(a));
	CU_OK(cu.cuCtxSetCurrent(a));
	CU_OK(cu.cuCtxDisablePeerAccess(b));
	CU_ERR(cu.cuCtxDisablePeerAccess(b), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
	CU_ERR(cu.cuCtxDisablePeerAccess(NULL), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cu.cuCtxDisablePeerAccess((CUcontext)&junk), CUDA_ERROR_INVALID_CONTEXT);
	CU_OK(cu.cuCtxEnablePeerAccess(b, 0));
}

/* Access goes with either context of a pair: destroyed, released for the last time, reset. */
Test(softcuda, peer_access_goes_with_its_contexts)
{
	CUcontext a, c, d;

	setenv("SOFTCUDA_DEVICES", "2", 1);
	a = start();
	CU_OK(cu.cuCtxCreate(&c, NULL, 0, 1));
	CU_OK(cu.cuCtxEnablePeerAccess(a, 0));
	CU_OK(cu.cuCtxPopCurrent(NULL));
	CU_OK(cu.cuCtxEnablePeerAccess(c, 0));
	CU_OK(cu.cuCtxDestroy(c));
	CU_ERR(cu.cuCtxDisablePeerAccess(c), CUDA_ERROR_INVALID_CONTEXT);
	CU_OK(cu.cuCtxCreate(&d, NULL, 0, 1));
	cr_assert_neq(d, c);
	CU_ERR(cu.cuCtxDisablePeerAccess(a), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
	CU_OK(cu.cuCtxEnablePeerAccess(a, 0));
	/* The primary context keeps its handle, but not its peers, past its last release. */
	CU_OK(cu.cuDevicePrimaryCtxRelease(0));
	CU_ERR(cu.cuCtxEnablePeerAccess(a, 0), CUDA_ERROR_INVALID_CONTEXT);
	CU_OK(cu.cuDevicePrimaryCtxRetain(&c, 0));
	cr_assert_eq(c, a);
	CU_ERR(cu.cuCtxDisablePeerAccess(a), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
	CU_OK(cu.cuCtxEnablePeerAccess(a, 0));
	CU_OK(cu.cuDevicePrimaryCtxReset(0));
	CU_ERR(cu.cuCtxDisablePeerAccess(a), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
	/* And from the primary context to a created one that goes. */
	CU_OK(cu.cuCtxEnablePeerAccess(a, 0));
	CU_OK(cu.cuCtxSetCurrent(a));
	CU_OK(cu.cuCtxEnablePeerAccess(d, 0));
	CU_OK(cu.cuCtxDestroy(d));
	CU_OK(cu.cuCtxCreate(&c, NULL, 0, 1));
	CU_OK(cu.cuCtxPopCurrent(NULL));
	CU_ERR(cu.cuCtxDisablePeerAccess(c), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
}

Test(softcuda, limits_priorities_and_api_version)
{
	unsigned version;
	int least, greatest;
	size_t v;

	start();
	CU_OK(cu.cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE));
	cr_assert_eq(v, 1024);
	CU_OK(cu.cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 64 * MIB));
	CU_OK(cu.cuCtxGetLimit(&v, CU_LIMIT_MALLOC_HEAP_SIZE));
	cr_assert_eq(v, 64 * MIB);
	CU_ERR(cu.cuCtxSetLimit(CU_LIMIT_MAX, 1), CUDA_ERROR_UNSUPPORTED_LIMIT);
	CU_ERR(cu.cuCtxSetLimit(CU_LIMIT_SHMEM_SIZE, 1), CUDA_ERROR_UNSUPPORTED_LIMIT);
	CU_OK(cu.cuCtxGetStreamPriorityRange(&least, &greatest));
	cr_assert(least == 0 && greatest == -5);
	CU_OK(cu.cuCtxGetApiVersion(NULL, &version));
	cr_assert_gt(version, 0);
}

static const CUmemAllocationProp vmm_prop = {
	.type = CU_MEM_ALLOCATION_TYPE_PINNED,
	.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
};

static const CUmemAccessDesc vmm_rw = {
	.location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 },
	.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
};

Test(softcuda, vmm_reservation_honours_a_free_hint)
{
	const CUdeviceptr hint = 0x5a0000000000ULL;
	CUdeviceptr a, b, c;
	size_t gran;

	start();
	CU_OK(cu.cuMemGetAllocationGranularity(&gran, &vmm_prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	cr_assert_eq(gran, GRAN);
	CU_OK(cu.cuMemGetAllocationGranularity(&gran, &vmm_prop,
					       CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	cr_assert_eq(gran, GRAN);
	CU_OK(cu.cuMemAddressReserve(&a, 8 * GRAN, 0, hint, 0));
	cr_assert_eq(a, hint);
	/* Taken now: the hint is only a hint, the reservation lands elsewhere. */
	CU_OK(cu.cuMemAddressReserve(&b, 2 * GRAN, 0, hint, 0));
	cr_assert_neq(b, hint);
	cr_assert_eq(b % GRAN, 0);
	CU_OK(cu.cuMemAddressReserve(&c, GRAN, 16 * GRAN, 0, 0));
	cr_assert_eq(c % (16 * GRAN), 0);
	CU_ERR(cu.cuMemAddressReserve(&c, GRAN + 4096, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemAddressFree(a, 4 * GRAN), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuMemAddressFree(a, 8 * GRAN));
	CU_OK(cu.cuMemAddressFree(b, 2 * GRAN));
	CU_OK(cu.cuMemAddressFree(c, GRAN));
}

Test(softcuda, vmm_create_map_access_unmap_release)
{
	CUmemGenericAllocationHandle h;
	CUmemAllocationProp prop;
	CUdeviceptr base, start_addr;
	unsigned type, mapped;
	size_t size;
	char buf[16];

	start();
	CU_OK(cu.cuMemCreate(&h, 2 * GRAN, &vmm_prop, 0));
	CU_OK(cu.cuMemGetAllocationPropertiesFromHandle(&prop, h));
	cr_assert_eq(prop.location.id, 0);
	CU_OK(cu.cuMemAddressReserve(&base, 8 * GRAN, 0, 0, 0));
	CU_OK(cu.cuMemMap(base + 2 * GRAN, 2 * GRAN, 0, h, 0));
	/* Mapped but not yet accessible: the device refuses to copy there. */
	CU_ERR(cu.cuMemcpyHtoD(base + 2 * GRAN, "x", 1), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuMemSetAccess(base + 2 * GRAN, 2 * GRAN, &vmm_rw, 1));
	CU_OK(cu.cuMemcpyHtoD(base + 3 * GRAN, "softcuda", 9));
	CU_OK(cu.cuMemcpyDtoH(buf, base + 3 * GRAN, 9));
	cr_assert_str_eq(buf, "softcuda");
	cr_assert_str_eq((char *)(uintptr_t)(base + 3 * GRAN), "softcuda");
	CU_OK(cu.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, base + 3 * GRAN));
	cr_assert_eq(type, CU_MEMORYTYPE_DEVICE);
	CU_OK(cu.cuPointerGetAttribute(&start_addr, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
				       base + 3 * GRAN));
	CU_OK(cu.cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, base + 3 * GRAN));
	cr_assert(start_addr == base && size == 8 * GRAN);
	CU_OK(cu.cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_MAPPING_SIZE, base + 3 * GRAN));
	cr_assert_eq(size, 2 * GRAN);
	CU_OK(cu.cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_MAPPED, base));
	cr_assert_eq(mapped, 0);
	CU_OK(cu.cuMemGetAddressRange(&start_addr, &size, base + 3 * GRAN));
	cr_assert(start_addr == base + 2 * GRAN && size == 2 * GRAN);
	CU_ERR(cu.cuMemUnmap(base + 2 * GRAN, GRAN), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemAddressFree(base, 8 * GRAN), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuMemUnmap(base + 2 * GRAN, 2 * GRAN));
	CU_OK(cu.cuMemRelease(h));
	CU_ERR(cu.cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuMemAddressFree(base, 8 * GRAN));
}

Test(softcuda, vmm_refuses_mappings_outside_reservations)
{
	CUmemGenericAllocationHandle h, h2;
	CUmemAllocationProp bad = vmm_prop;
	CUdeviceptr base;

	start();
	CU_OK(cu.cuMemCreate(&h, 2 * GRAN, &vmm_prop, 0));
	CU_OK(cu.cuMemCreate(&h2, 2 * GRAN, &vmm_prop, 0));
	CU_ERR(cu.cuMemCreate(&h2, GRAN + 4096, &vmm_prop, 0), CUDA_ERROR_INVALID_VALUE);
	bad.type = CU_MEM_ALLOCATION_TYPE_MANAGED;
	CU_ERR(cu.cuMemCreate(&h2, GRAN, &bad, 0), CUDA_ERROR_INVALID_VALUE);
	bad = vmm_prop;
	bad.location.id = 5;
	CU_ERR(cu.cuMemCreate(&h2, GRAN, &bad, 0), CUDA_ERROR_INVALID_DEVICE);
	CU_OK(cu.cuMemAddressReserve(&base, 3 * GRAN, 0, 0, 0));
	CU_ERR(cu.cuMemMap(base + 64 * GRAN, 2 * GRAN, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemMap(base + 2 * GRAN, 2 * GRAN, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemMap(base, 2 * GRAN, GRAN, h, 0), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemMap(base, 2 * GRAN, 0, h + 8, 0), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuMemMap(base, 2 * GRAN, 0, h, 0));
	CU_ERR(cu.cuMemMap(base + GRAN, 2 * GRAN, 0, h2, 0), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemSetAccess(base, 3 * GRAN, &vmm_rw, 1), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemSetAccess(base, 2 * GRAN, &vmm_rw, 0), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemUnmap(base + 2 * GRAN, GRAN), CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, vmm_memory_freed_only_when_released_and_unmapped)
{
	CUmemGenericAllocationHandle h;
	CUdeviceptr base;
	size_t before;

	start();
	before = mem_free();
	CU_OK(cu.cuMemCreate(&h, 32 * GRAN, &vmm_prop, 0));
	cr_assert_eq(mem_free(), before - 64 * MIB);
	CU_OK(cu.cuMemAddressReserve(&base, 32 * GRAN, 0, 0, 0));
	CU_OK(cu.cuMemMap(base, 32 * GRAN, 0, h, 0));
	CU_OK(cu.cuMemSetAccess(base, 32 * GRAN, &vmm_rw, 1));
	CU_OK(cu.cuMemsetD32(base, 0xfeedf00d, 4096));
	CU_OK(cu.cuMemRelease(h));
	/* Released but mapped: still there, still counted. */
	cr_assert_eq(mem_free(), before - 64 * MIB);
	cr_assert_eq(((uint32_t *)(uintptr_t)base)[1000], 0xfeedf00d);
	CU_ERR(cu.cuMemMap(base, 32 * GRAN, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuMemUnmap(base, 32 * GRAN));
	cr_assert_eq(mem_free(), before);
	CU_OK(cu.cuMemAddressFree(base, 32 * GRAN));
	CU_ERR(cu.cuMemCreate(&h, 4096 * MIB + GRAN, &vmm_prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
}

Test(softcuda, legacy_allocations)
{
	CUdeviceptr p, q, base;
	size_t pitch, size, before;
	CUcontext ctx = start(), owner;
	int ordinal;

	before = mem_free();
	CU_OK(cu.cuMemAlloc(&p, 1000));
	cr_assert_eq(p % 256, 0);
	cr_assert_eq(mem_free(), before - 1000);
	CU_OK(cu.cuMemGetAddressRange(&base, &size, p + 10));
	cr_assert(base == p && size == 1000);
	CU_OK(cu.cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, p));
	cr_assert_eq(owner, ctx);
	CU_OK(cu.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
	cr_assert_eq(ordinal, 0);
	CU_ERR(cu.cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_HOST_POINTER, p),
	       CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
					(CUdeviceptr)(uintptr_t)&base), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)&base),
	       CUDA_ERROR_NOT_FOUND);
	CU_ERR(cu.cuMemFree(p + 8), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuMemFree(p));
	CU_ERR(cu.cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
	cr_assert_eq(mem_free(), before);
	CU_OK(cu.cuMemAllocPitch(&q, &pitch, 100, 10, 4));
	cr_assert(pitch >= 100 && pitch % 512 == 0);
	CU_ERR(cu.cuMemAllocPitch(&q, &pitch, 100, 10, 3), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemAlloc(&p, 8192 * MIB), CUDA_ERROR_OUT_OF_MEMORY);
	CU_ERR(cu.cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, page_locked_host_memory)
{
	CUdeviceptr d;
	unsigned flags, type;
	void *h, *h2;
	char *own;

	start();
	CU_OK(cu.cuMemAllocHost(&h, 4096));
	CU_OK(cu.cuMemHostAlloc(&h2, 100, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
	CU_ERR(cu.cuMemHostAlloc(&h2, 100, 0x100), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuMemHostGetDevicePointer(&d, h2, 0));
	cr_assert_eq((void *)(uintptr_t)d, h2);
	CU_OK(cu.cuMemHostGetFlags(&flags, h2));
	cr_assert_eq(flags, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
	CU_OK(cu.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				       (CUdeviceptr)(uintptr_t)h));
	cr_assert_eq(type, CU_MEMORYTYPE_HOST);
	own = mmap(NULL, 16384, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(own, MAP_FAILED);
	CU_OK(cu.cuMemHostRegister(own, 8192, CU_MEMHOSTREGISTER_PORTABLE));
	CU_ERR(cu.cuMemHostRegister(own + 4096, 8192, 0),
	       CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	CU_ERR(cu.cuMemHostRegister(h, 16, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	CU_OK(cu.cuMemHostGetDevicePointer(&d, own + 100, 0));
	CU_OK(cu.cuMemcpyHtoD(d, "abc", 4));
	cr_assert_str_eq(own + 100, "abc");
	CU_ERR(cu.cuMemHostUnregister(own + 4096), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	CU_OK(cu.cuMemHostUnregister(own));
	CU_ERR(cu.cuMemHostUnregister(own), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	munmap(own + 8192, 8192);
	CU_ERR(cu.cuMemHostRegister(own + 4096, 8192, 0), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuMemFreeHost(h));
	CU_ERR(cu.cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, linear_copies)
{
	char in[64] = "device memory", out[64] = { 0 };
	CUdeviceptr a, b;
	CUstream s;

	start();
	CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CU_OK(cu.cuMemAlloc(&a, 64));
	CU_OK(cu.cuMemAlloc(&b, 64));
	CU_OK(cu.cuMemcpyHtoD(a, in, sizeof(in)));
	CU_OK(cu.cuMemcpyDtoD(b, a, sizeof(in)));
	CU_OK(cu.cuMemcpyDtoH(out, b, sizeof(out)));
	cr_assert_str_eq(out, in);
	CU_OK(cu.cuMemcpyHtoDAsync(a, "stream", 7, s));
	CU_OK(cu.cuMemcpyDtoDAsync(b, a, 7, CU_STREAM_LEGACY));
	CU_OK(cu.cuMemcpyDtoHAsync(out, b, 7, CU_STREAM_PER_THREAD));
	cr_assert_str_eq(out, "stream");
	CU_OK(cu.cuMemcpy((CUdeviceptr)(uintptr_t)out, a, 3));
	CU_OK(cu.cuMemcpyAsync(b, (CUdeviceptr)(uintptr_t)"xyz", 3, s));
	CU_ERR(cu.cuMemcpyHtoD(a + 1, in, 64), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemcpyHtoD((CUdeviceptr)(uintptr_t)out, in, 8), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemcpyDtoH(out, (CUdeviceptr)(uintptr_t)in, 8), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemcpyHtoDAsync(a, in, 8, (CUstream)&s), CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cu.cuStreamDestroy(s));
	CU_ERR(cu.cuMemcpyHtoDAsync(a, in, 8, s), CUDA_ERROR_INVALID_HANDLE);
}

Test(softcuda, peer_copies_between_two_devices)
{
	char in[64] = "from device 0 to device 1", out[64] = { 0 }, host[64];
	CUdeviceptr x, y, z, pinned;
	CUcontext a, b, c;
	CUstream s;
	void *p;

	start_two(&a, &b);
	CU_OK(cu.cuMemAlloc(&x, 64));
	CU_OK(cu.cuMemAllocHost(&p, 64));
	pinned = (CUdeviceptr)(uintptr_t)p;
	CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CU_OK(cu.cuCtxSetCurrent(b));
	CU_OK(cu.cuMemAlloc(&y, 64));
	CU_OK(cu.cuCtxSetCurrent(a));
	CU_OK(cu.cuMemcpyHtoD(x, in, sizeof(in)));
	/* Without peer access, as the real driver copies. */
	CU_OK(cu.cuMemcpyPeer(y, b, x, a, sizeof(in)));
	cr_assert_str_eq((const char *)(uintptr_t)y, in);
	CU_OK(cu.cuMemcpyHtoD(x, "stream", 7));
	CU_OK(cu.cuMemcpyPeerAsync(y, b, x, a, 7, s));
	cr_assert_str_eq((const char *)(uintptr_t)y, "stream");
	CU_OK(cu.cuMemcpyPeerAsync(x + 8, a, y, b, 7, NULL));
	CU_OK(cu.cuMemcpyDtoH(out, x + 8, 7));
	cr_assert_str_eq(out, "stream");
	CU_OK(cu.cuMemcpyPeer(y, b, x, a, 0));
	/* Contexts: each named, valid. */
	CU_ERR(cu.cuMemcpyPeer(y, NULL, x, a, 8), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cu.cuMemcpyPeer(y, b, x, (CUcontext)&s, 8), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cu.cuMemcpyPeerAsync(y, b, x, NULL, 8, s), CUDA_ERROR_INVALID_CONTEXT);
	/* Each side device memory of its context's device, within one allocation. */
	CU_ERR(cu.cuMemcpyPeer(y, a, x, a, 8), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemcpyPeer(y, b, x, b, 8), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemcpyPeer((CUdeviceptr)(uintptr_t)host, b, x, a, 8),
	       CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemcpyPeer(y, b, pinned, a, 8), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemcpyPeer(y, b, 0, a, 8), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemcpyPeer(y + 1, b, x, a, 64), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemcpyPeerAsync(y, b, x + 60, a, 8, s), CUDA_ERROR_INVALID_VALUE);
	/* The stream, as the other asynchronous copies check it. */
	CU_ERR(cu.cuMemcpyPeerAsync(y, b, x, a, 8, (CUstream)&s), CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cu.cuStreamDestroy(s));
	CU_ERR(cu.cuMemcpyPeerAsync(y, b, x, a, 8, s), CUDA_ERROR_INVALID_HANDLE);
	/* A destroyed context, and its memory with it. */
	CU_OK(cu.cuCtxCreate(&c, NULL, 0, 1));
	CU_OK(cu.cuMemAlloc(&z, 64));
	CU_OK(cu.cuMemcpyPeer(z, c, x, a, 8));
	CU_OK(cu.cuCtxDestroy(c));
	CU_ERR(cu.cuMemcpyPeer(z, c, x, a, 8), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cu.cuMemcpyPeer(z, b, x, a, 8), CUDA_ERROR_INVALID_VALUE);
}

enum { W = 10, H = 6, D = 3 };

static void fill(float host[D][H][W])
{
	for (int i = 0; i < D * H * W; i++)
		(&host[0][0][0])[i] = (float)i;
}

Test(softcuda, pitched_2d_copies)
{
	float host[D][H][W], back[D][H][W] = { 0 };
	CUDA_MEMCPY2D c2 = { 0 };
	CUdeviceptr dev;
	size_t pitch;

	start();
	fill(host);
	CU_OK(cu.cuMemAllocPitch(&dev, &pitch, W * sizeof(float), H, 4));
	c2.srcMemoryType = CU_MEMORYTYPE_HOST;
	c2.srcHost = host[1];
	c2.srcPitch = W * sizeof(float);
	c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c2.dstDevice = dev;
	c2.dstPitch = pitch;
	c2.WidthInBytes = W * sizeof(float);
	c2.Height = H;
	CU_OK(cu.cuMemcpy2D(&c2));
	cr_assert_eq(((float *)(uintptr_t)(dev + 2 * pitch))[3], host[1][2][3]);
	c2.dstPitch = W;
	CU_ERR(cu.cuMemcpy2D(&c2), CUDA_ERROR_INVALID_VALUE);
	c2.dstPitch = pitch;
	c2.Height = H + 1;
	CU_ERR(cu.cuMemcpy2D(&c2), CUDA_ERROR_INVALID_VALUE);
	/* Back, a sub-rectangle, through the unaligned and asynchronous forms. */
	c2 = (CUDA_MEMCPY2D){ .srcXInBytes = 4, .srcY = 1, .srcMemoryType = CU_MEMORYTYPE_DEVICE,
			      .srcDevice = dev, .srcPitch = pitch,
			      .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = back[0],
			      .dstPitch = W * sizeof(float), .WidthInBytes = 8, .Height = 2 };
	CU_OK(cu.cuMemcpy2DUnaligned(&c2));
	cr_assert(back[0][0][0] == host[1][1][1] && back[0][1][1] == host[1][2][2]);
	c2.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
	c2.dstDevice = (CUdeviceptr)(uintptr_t)back[2];
	CU_OK(cu.cuMemcpy2DAsync(&c2, NULL));
	cr_assert_eq(back[2][1][0], host[1][2][1]);
	c2.dstMemoryType = (CUmemorytype)9;
	CU_ERR(cu.cuMemcpy2D(&c2), CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, copies_3d_through_arrays_and_pitched_memory)
{
	float host[D][H][W], back[D][H][W] = { 0 };
	CUDA_ARRAY3D_DESCRIPTOR ad = { W, H, D, CU_AD_FORMAT_FLOAT, 1, 0 };
	CUDA_MEMCPY3D c3 = { 0 };
	CUdeviceptr dev;
	CUarray arr;

	start();
	fill(host);
	CU_OK(cu.cuArray3DCreate(&arr, &ad));
	CU_OK(cu.cuMemAlloc(&dev, 512 * H * D));
	/* Host to a pitched device volume (512-byte rows), then to the array. */
	c3 = (CUDA_MEMCPY3D){ .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host,
			      .srcPitch = W * sizeof(float), .srcHeight = H,
			      .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dev,
			      .dstPitch = 512, .dstHeight = H,
			      .WidthInBytes = W * sizeof(float), .Height = H, .Depth = D };
	CU_OK(cu.cuMemcpy3D(&c3));
	cr_assert_eq(((float *)(uintptr_t)(dev + (2 * H + 5) * 512))[7], host[2][5][7]);
	c3 = (CUDA_MEMCPY3D){ .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = dev,
			      .srcPitch = 512, .srcHeight = H,
			      .dstMemoryType = CU_MEMORYTYPE_ARRAY, .dstArray = arr,
			      .WidthInBytes = W * sizeof(float), .Height = H, .Depth = D };
	CU_OK(cu.cuMemcpy3D(&c3));
	c3 = (CUDA_MEMCPY3D){ .srcMemoryType = CU_MEMORYTYPE_ARRAY, .srcArray = arr,
			      .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = back,
			      .dstPitch = W * sizeof(float), .dstHeight = H,
			      .WidthInBytes = W * sizeof(float), .Height = H, .Depth = D };
	CU_OK(cu.cuMemcpy3DAsync(&c3, NULL));
	cr_assert_eq(memcmp(host, back, sizeof(host)), 0);
	/* One element from the middle of the volume, by its coordinates. */
	c3.srcXInBytes = 4 * sizeof(float);
	c3.srcY = 3;
	c3.srcZ = 1;
	c3.WidthInBytes = sizeof(float);
	c3.Height = c3.Depth = 1;
	CU_OK(cu.cuMemcpy3D(&c3));
	cr_assert_eq(back[0][0][0], host[1][3][4]);
	c3.srcZ = D;
	CU_ERR(cu.cuMemcpy3D(&c3), CUDA_ERROR_INVALID_VALUE);
	c3.srcZ = 0;
	c3.srcArray = (CUarray)&c3;
	CU_ERR(cu.cuMemcpy3D(&c3), CUDA_ERROR_INVALID_HANDLE);
	c3.srcArray = arr;
	c3.reserved0 = &c3;
	CU_ERR(cu.cuMemcpy3D(&c3), CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, array_linear_copies)
{
	CUDA_ARRAY_DESCRIPTOR ad = { 16, 4, CU_AD_FORMAT_UNSIGNED_INT8, 4 };
	CUDA_ARRAY_DESCRIPTOR got;
	char out[16] = { 0 };
	CUdeviceptr d;
	CUarray arr;

	start();
	CU_OK(cu.cuArrayCreate(&arr, &ad));
	CU_OK(cu.cuArrayGetDescriptor(&got, arr));
	cr_assert(got.Width == 16 && got.Height == 4 && got.NumChannels == 4);
	CU_OK(cu.cuMemAlloc(&d, 16));
	CU_OK(cu.cuMemcpyHtoA(arr, 100, "array", 6));
	CU_OK(cu.cuMemcpyAtoD(d, arr, 100, 6));
	CU_OK(cu.cuMemcpyDtoA(arr, 200, d, 6));
	CU_OK(cu.cuMemcpyAtoH(out, arr, 200, 6));
	cr_assert_str_eq(out, "array");
	CU_ERR(cu.cuMemcpyHtoA(arr, 16 * 4 * 4 - 2, "array", 6), CUDA_ERROR_INVALID_VALUE);
	ad.NumChannels = 3;
	CU_ERR(cu.cuArrayCreate(&arr, &ad), CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, memsets)
{
	CUdeviceptr p, q;
	size_t pitch;
	uint16_t *h16;
	uint32_t *h32;
	uint8_t *h8;

	start();
	CU_OK(cu.cuMemAlloc(&p, 4096));
	h8 = (uint8_t *)(uintptr_t)p;
	h16 = (uint16_t *)(uintptr_t)p;
	h32 = (uint32_t *)(uintptr_t)p;
	CU_OK(cu.cuMemsetD8(p, 0xab, 4096));
	cr_assert(h8[0] == 0xab && h8[4095] == 0xab);
	CU_OK(cu.cuMemsetD16(p, 0x1234, 2048));
	cr_assert(h16[0] == 0x1234 && h16[2047] == 0x1234);
	CU_OK(cu.cuMemsetD32(p, 0xdeadbeef, 1024));
	cr_assert(h32[0] == 0xdeadbeef && h32[1023] == 0xdeadbeef);
	CU_OK(cu.cuMemsetD8Async(p, 1, 1, NULL));
	CU_OK(cu.cuMemsetD16Async(p + 2, 2, 1, NULL));
	CU_OK(cu.cuMemsetD32Async(p + 4, 3, 1, NULL));
	cr_assert(h8[0] == 1 && h16[1] == 2 && h32[1] == 3);
	CU_ERR(cu.cuMemsetD32(p + 2, 0, 1), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemsetD16(p + 1, 0, 1), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemsetD32(p, 0, 1025), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuMemAllocPitch(&q, &pitch, 64, 8, 4));
	CU_OK(cu.cuMemsetD8(q, 0, pitch * 8));
	CU_OK(cu.cuMemsetD2D32(q, pitch, 7, 4, 8));
	cr_assert_eq(((uint32_t *)(uintptr_t)(q + 7 * pitch))[3], 7);
	cr_assert_eq(((uint32_t *)(uintptr_t)(q + 7 * pitch))[4], 0);
	CU_OK(cu.cuMemsetD2D16(q, pitch, 9, 2, 2));
	CU_OK(cu.cuMemsetD2D8(q, pitch, 5, 1, 3));
	cr_assert_eq(((uint8_t *)(uintptr_t)(q + 2 * pitch))[0], 5);
	CU_OK(cu.cuMemsetD2D8Async(q, pitch, 1, 1, 1, NULL));
	CU_OK(cu.cuMemsetD2D16Async(q, pitch, 1, 1, 1, NULL));
	CU_OK(cu.cuMemsetD2D32Async(q, pitch, 1, 1, 1, NULL));
	CU_ERR(cu.cuMemsetD2D32(q, 8, 0, 4, 2), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuMemsetD2D8(q, pitch, 0, 64, 9), CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, modules_from_data_and_file)
{
	char text[2 * PATH_MAX], path[] = "/tmp/softcuda-module-XXXXXX";
	CUmodule m1, m2, m3, m4;
	CUfunction f;
	CUdeviceptr g;
	size_t bytes;
	FILE *fp;
	int fd;

	start();
	m1 = load_module(TEST_KERNELS);
	CU_OK(cu.cuModuleGetFunction(&f, m1, "vec_add"));
	CU_ERR(cu.cuModuleGetFunction(&f, m1, "vec_sub"), CUDA_ERROR_NOT_FOUND);
	CU_OK(cu.cuModuleGetGlobal(&g, &bytes, m1, "counter"));
	cr_assert_eq(bytes, 4);
	cr_assert_eq(*(unsigned *)(uintptr_t)g, 0);
	CU_ERR(cu.cuModuleGetGlobal(&g, &bytes, m1, "nothing"), CUDA_ERROR_NOT_FOUND);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	fp = fdopen(fd, "w");
	fputs(module_text(text, sizeof(text), TEST_KERNELS), fp);
	fclose(fp);
	CU_OK(cu.cuModuleLoad(&m2, path));
	unlink(path);
	CU_ERR(cu.cuModuleLoad(&m3, path), CUDA_ERROR_FILE_NOT_FOUND);
	CU_OK(cu.cuModuleLoadDataEx(&m3, text, 0, NULL, NULL));
	CU_OK(cu.cuModuleLoadFatBinary(&m4, text));
	CU_OK(cu.cuModuleUnload(m1));
	CU_ERR(cu.cuModuleUnload(m1), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuFuncGetName(&(const char *){ NULL }, f), CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cu.cuModuleUnload(m2));
	CU_OK(cu.cuModuleUnload(m3));
	CU_OK(cu.cuModuleUnload(m4));
}

Test(softcuda, launch_with_kernel_params)
{
	enum { N = 1000 };
	float a[N], b[N], c[N];
	CUdeviceptr da, db, dc, counter;
	CUmodule mod;
	CUfunction vec_add, add_to;
	unsigned amount = 3;
	int n = N;

	start();
	mod = load_module(TEST_KERNELS);
	CU_OK(cu.cuModuleGetFunction(&vec_add, mod, "vec_add"));
	CU_OK(cu.cuModuleGetFunction(&add_to, mod, "add_to"));
	for (int i = 0; i < N; i++) {
		a[i] = (float)i;
		b[i] = 2.0f * (float)i;
	}
	CU_OK(cu.cuMemAlloc(&da, sizeof(a)));
	CU_OK(cu.cuMemAlloc(&db, sizeof(b)));
	CU_OK(cu.cuMemAlloc(&dc, sizeof(c)));
	CU_OK(cu.cuMemcpyHtoD(da, a, sizeof(a)));
	CU_OK(cu.cuMemcpyHtoD(db, b, sizeof(b)));
	void *args[] = { &da, &db, &dc, &n };
	CU_OK(cu.cuLaunchKernel(vec_add, 4, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
	CU_OK(cu.cuMemcpyDtoH(c, dc, sizeof(c)));
	for (int i = 0; i < N; i++)
		cr_assert_float_eq(c[i], 3.0f * (float)i, 1e-6, "c[%d] = %f", i, c[i]);
	CU_OK(cu.cuModuleGetGlobal(&counter, NULL, mod, "counter"));
	void *inc[] = { &counter, &amount };
	CU_OK(cu.cuLaunchKernel(add_to, 1, 1, 1, 1, 1, 1, 0, NULL, inc, NULL));
	CU_OK(cu.cuLaunchKernel(add_to, 2, 1, 1, 2, 1, 1, 0, NULL, inc, NULL));
	CU_OK(cu.cuMemcpyDtoH(&amount, counter, sizeof(amount)));
	cr_assert_eq(amount, 15);
	CU_ERR(cu.cuLaunchKernel(vec_add, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
	       CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuLaunchKernel(vec_add, 1, 1, 1, 1025, 1, 1, 0, NULL, args, NULL),
	       CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuLaunchKernel(vec_add, 1, 1, 1, 32, 32, 2, 0, NULL, args, NULL),
	       CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuLaunchKernel(vec_add, 0, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
	       CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuLaunchKernel((CUfunction)&mod, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
	       CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuLaunchKernel(vec_add, 1, 1, 1, 1, 1, 1, 0, (CUstream)&mod, args, NULL),
	       CUDA_ERROR_INVALID_HANDLE);
}

Test(softcuda, launch_with_extra_and_param_info)
{
	static const size_t offsets[] = { 0, 8, 16, 20, 24 }, sizes[] = { 1, 8, 4, 2, 8 };
	unsigned char buf[32] = { 0 };
	int64_t out[4] = { 0 };
	int64_t *dout;
	size_t size = sizeof(buf), off, sz;
	const char *name;
	CUfunction mixed;
	CUmodule mod;

	start();
	mod = load_module(TEST_KERNELS);
	CU_OK(cu.cuModuleGetFunction(&mixed, mod, "mixed"));
	CU_OK(cu.cuFuncGetName(&name, mixed));
	cr_assert_str_eq(name, "mixed");
	for (size_t i = 0; i < 5; i++) {
		CU_OK(cu.cuFuncGetParamInfo(mixed, i, &off, &sz));
		cr_assert(off == offsets[i] && sz == sizes[i], "param %zu: %zu %zu", i, off, sz);
	}
	CU_ERR(cu.cuFuncGetParamInfo(mixed, 5, &off, &sz), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuMemAlloc((CUdeviceptr *)&dout, sizeof(out)));
	buf[0] = (unsigned char)-7;
	*(double *)(buf + 8) = 42.0;
	*(int *)(buf + 16) = 123456;
	*(short *)(buf + 20) = -300;
	memcpy(buf + 24, &dout, sizeof(dout));
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
			  CU_LAUNCH_PARAM_END };
	CU_OK(cu.cuLaunchKernel(mixed, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
	CU_OK(cu.cuMemcpyDtoH(out, (CUdeviceptr)dout, sizeof(out)));
	cr_assert(out[0] == -7 && out[1] == 42 && out[2] == 123456 && out[3] == -300);
	size = 31;
	CU_ERR(cu.cuLaunchKernel(mixed, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra),
	       CUDA_ERROR_INVALID_VALUE);
	void *params[5] = { buf, buf + 8, buf + 16, buf + 20, buf + 24 };
	CU_ERR(cu.cuLaunchKernel(mixed, 1, 1, 1, 1, 1, 1, 0, NULL, params, extra),
	       CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, function_attributes)
{
	CUfunction f;
	CUmodule mod;
	int v;

	start();
	mod = load_module(TEST_KERNELS);
	CU_OK(cu.cuModuleGetFunction(&f, mod, "vec_add"));
	CU_OK(cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
	cr_assert_eq(v, 1024);
	CU_OK(cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
	cr_assert_gt(v, 0);
	CU_OK(cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_BINARY_VERSION, f));
	cr_assert_eq(v, 80);
	CU_ERR(cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX, f), CUDA_ERROR_INVALID_VALUE);
	void *args[] = { &(CUdeviceptr){ 0 }, &(CUdeviceptr){ 0 }, &(CUdeviceptr){ 0 },
			 &(int){ 0 } };
	CU_ERR(cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 64 << 10, NULL, args, NULL),
	       CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 96 << 10));
	CU_OK(cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 64 << 10, NULL, args, NULL));
	CU_ERR(cu.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NUM_REGS, 8), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 20),
	       CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuFuncSetCacheConfig(f, CU_FUNC_CACHE_PREFER_L1));
	CU_ERR(cu.cuFuncSetCacheConfig(f, (CUfunc_cache)9), CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, libraries_and_kernels)
{
	char text[2 * PATH_MAX];
	CUdeviceptr counter;
	unsigned amount = 5, got;
	CUlibrary libh;
	CUkernel k;
	CUfunction f;
	CUmodule m;
	size_t bytes;

	load();
	CU_OK(cu.cuInit(0));
	/* Libraries need no context; what they hand to a context does. */
	CU_OK(cu.cuLibraryLoadData(&libh, module_text(text, sizeof(text), TEST_KERNELS), NULL,
				   NULL, 0, NULL, NULL, 0));
	CU_OK(cu.cuLibraryGetKernel(&k, libh, "add_to"));
	CU_ERR(cu.cuLibraryGetKernel(&k, libh, "none"), CUDA_ERROR_NOT_FOUND);
	CU_ERR(cu.cuKernelGetFunction(&f, k), CUDA_ERROR_INVALID_CONTEXT);
	start();
	CU_OK(cu.cuKernelGetFunction(&f, k));
	cr_assert_neq((void *)f, (void *)k);
	CU_OK(cu.cuLibraryGetGlobal(&counter, &bytes, libh, "counter"));
	cr_assert_eq(bytes, 4);
	void *args[] = { &counter, &amount };
	CU_OK(cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CU_OK(cu.cuLaunchKernel((CUfunction)k, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CU_OK(cu.cuMemcpyDtoH(&got, counter, sizeof(got)));
	cr_assert_eq(got, 10);
	CU_OK(cu.cuLibraryGetModule(&m, libh));
	CU_ERR(cu.cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cu.cuLibraryUnload(libh));
	CU_ERR(cu.cuLibraryUnload(libh), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuKernelGetFunction(&f, k), CUDA_ERROR_INVALID_HANDLE);
}

/* In a fresh child: load the device, load two modules of globals, report the addresses. */
static void globals_child(int fd, const char *shift)
{
	static const char text[] = PTX_SM90 "// softcuda global a 4\n// softcuda global b 1000\n";
	CUdeviceptr addr[4] = { 0 };
	CUcontext ctx;
	CUmodule m;

	if (shift)
		setenv("SOFTCUDA_GLOBAL_SHIFT", shift, 1);
	if (try_load() || cu.cuInit(0) || cu.cuDevicePrimaryCtxRetain(&ctx, 0) ||
	    cu.cuCtxSetCurrent(ctx))
		_exit(1);
	for (int i = 0; i < 2; i++) {
		if (cu.cuModuleLoadData(&m, text) ||
		    cu.cuModuleGetGlobal(&addr[2 * i], NULL, m, "a") ||
		    cu.cuModuleGetGlobal(&addr[2 * i + 1], NULL, m, "b"))
			_exit(2);
		if (i == 0 && cu.cuModuleUnload(m))
			_exit(3);
	}
	_exit(write(fd, addr, sizeof(addr)) == sizeof(addr) ? 0 : 4);
}

static void globals_in_child(const char *shift, CUdeviceptr addr[4])
{
	int fds[2], status;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid)
		globals_child(fds[1], shift);
	close(fds[1]);
	cr_assert_eq(read(fds[0], addr, 4 * sizeof(*addr)), (ssize_t)(4 * sizeof(*addr)));
	close(fds[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
}

Test(softcuda, module_globals_are_deterministic_across_processes, .timeout = 30)
{
	CUdeviceptr first[4], second[4], shifted[4];

	globals_in_child(NULL, first);
	globals_in_child(NULL, second);
	cr_assert_eq(memcmp(first, second, sizeof(first)), 0);
	/* 256-byte steps from the base, an unloaded module's addresses not reused. */
	cr_assert_eq(first[0], GLOBAL_BASE);
	cr_assert_eq(first[1], GLOBAL_BASE + 256);
	cr_assert_eq(first[2], GLOBAL_BASE + 256 + 1024);
	cr_assert_eq(first[3], GLOBAL_BASE + 2 * 256 + 1024);
	globals_in_child("4096", shifted);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(shifted[i], first[i] + 4096);
}

#define AW 4
#define AH 3

static const CUDA_TEXTURE_DESC point_clamp = {
	.addressMode = { CU_TR_ADDRESS_MODE_CLAMP, CU_TR_ADDRESS_MODE_CLAMP },
	.filterMode = CU_TR_FILTER_MODE_POINT,
};

/* A float array of AW x AH holding 0, 1, 2, ... (with SURFACE_LDST: a surface can use it). */
static CUarray float_array(int surface)
{
	CUDA_ARRAY3D_DESCRIPTOR desc = { AW, AH, 0, CU_AD_FORMAT_FLOAT, 1,
					 surface ? CUDA_ARRAY3D_SURFACE_LDST : 0 };
	float in[AW * AH];
	CUarray arr;

	for (int i = 0; i < AW * AH; i++)
		in[i] = (float)i;
	CU_OK(cu.cuArray3DCreate(&arr, &desc));
	CU_OK(cu.cuMemcpyHtoA(arr, 0, in, sizeof(in)));
	return arr;
}

static CUDA_RESOURCE_DESC array_res(CUarray arr)
{
	return (CUDA_RESOURCE_DESC){ .resType = CU_RESOURCE_TYPE_ARRAY, .res.array.hArray = arr };
}

Test(softcuda, texture_and_surface_objects_count_from_one)
{
	CUDA_RESOURCE_DESC res, got_res;
	CUDA_TEXTURE_DESC got_desc;
	CUDA_ARRAY3D_DESCRIPTOR got3;
	CUtexObject tex, tex2, tex3;
	CUsurfObject surf, surf2;
	CUarray plain, lds;

	start();
	plain = float_array(0);
	lds = float_array(1);
	CU_OK(cu.cuArray3DGetDescriptor(&got3, lds));
	cr_assert(got3.Flags == CUDA_ARRAY3D_SURFACE_LDST && got3.Height == AH && !got3.Depth);
	res = array_res(plain);
	CU_OK(cu.cuTexObjectCreate(&tex, &res, &point_clamp, NULL));
	CU_OK(cu.cuTexObjectCreate(&tex2, &res, &point_clamp, NULL));
	cr_assert(tex == 1 && tex2 == 2, "texture objects %llu %llu", tex, tex2);
	CU_ERR(cu.cuSurfObjectCreate(&surf, &res), CUDA_ERROR_INVALID_VALUE);
	res = array_res(lds);
	CU_OK(cu.cuSurfObjectCreate(&surf, &res));
	CU_OK(cu.cuSurfObjectCreate(&surf2, &res));
	cr_assert(surf == 1 && surf2 == 2, "surface objects %llu %llu", surf, surf2);
	CU_OK(cu.cuTexObjectGetResourceDesc(&got_res, tex));
	cr_assert(got_res.resType == CU_RESOURCE_TYPE_ARRAY && got_res.res.array.hArray == plain);
	CU_OK(cu.cuTexObjectGetTextureDesc(&got_desc, tex));
	cr_assert_eq(got_desc.filterMode, CU_TR_FILTER_MODE_POINT);
	/* A destroyed object's number is not handed out again. */
	CU_OK(cu.cuTexObjectDestroy(tex));
	CU_ERR(cu.cuTexObjectDestroy(tex), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuTexObjectGetTextureDesc(&got_desc, tex), CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cu.cuTexObjectCreate(&tex3, &res, &point_clamp, NULL));
	cr_assert_eq(tex3, 3);
	CU_OK(cu.cuSurfObjectDestroy(surf));
	CU_ERR(cu.cuSurfObjectDestroy(surf), CUDA_ERROR_INVALID_HANDLE);
}

Test(softcuda, kernels_read_textures_and_write_surfaces)
{
	CUDA_RESOURCE_DESC res;
	CUtexObject tex;
	CUsurfObject surf;
	CUarray src, dst;
	CUfunction f;
	float out[AW * AH], v;
	int w = AW, h = AH;

	start();
	src = float_array(0);
	dst = float_array(1);
	res = array_res(src);
	CU_OK(cu.cuTexObjectCreate(&tex, &res, &point_clamp, NULL));
	res = array_res(dst);
	CU_OK(cu.cuSurfObjectCreate(&surf, &res));
	CU_OK(cu.cuModuleGetFunction(&f, load_module(TEST_KERNELS), "tex_to_surf"));
	void *args[] = { &tex, &surf, &w, &h };
	CU_OK(cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CU_OK(cu.cuMemcpyAtoH(out, dst, 0, sizeof(out)));
	for (int i = 0; i < AW * AH; i++)
		cr_assert_float_eq(out[i], (float)i + 1.0f, 1e-6);
	/* Reads clamp to the edge; a wrong element size or a write outside fails. */
	cr_assert_eq(cu.softcuda_tex2d_read(tex, 99, -5, &v, sizeof(v)), 0);
	cr_assert_float_eq(v, (float)(AW - 1), 1e-6);
	cr_assert_eq(cu.softcuda_tex2d_read(tex, 0, 0, &v, 2), -1);
	cr_assert_eq(cu.softcuda_tex2d_read(77, 0, 0, &v, sizeof(v)), -1);
	cr_assert_eq(cu.softcuda_surf2d_write(surf, AW, 0, &v, sizeof(v)), -1);
	cr_assert_eq(cu.softcuda_surf2d_write(surf, 0, -1, &v, sizeof(v)), -1);
	CU_OK(cu.cuArrayDestroy(src));
	CU_ERR(cu.cuArrayDestroy(src), CUDA_ERROR_INVALID_HANDLE);
	cr_assert_eq(cu.softcuda_tex2d_read(tex, 0, 0, &v, sizeof(v)), -1);
}

Test(softcuda, pitch2d_and_linear_textures)
{
	CUDA_TEXTURE_DESC tdesc = { .filterMode = CU_TR_FILTER_MODE_POINT };
	CUDA_RESOURCE_DESC res = { .resType = CU_RESOURCE_TYPE_PITCH2D };
	CUtexObject tex;
	CUdeviceptr p;
	size_t pitch;
	uint32_t v;

	start();
	CU_OK(cu.cuMemAllocPitch(&p, &pitch, 8 * sizeof(uint32_t), 4, 4));
	for (uint32_t y = 0; y < 4; y++)
		for (uint32_t x = 0; x < 8; x++)
			((uint32_t *)(uintptr_t)(p + y * pitch))[x] = 10 * y + x;
	res.res.pitch2D.devPtr = p;
	res.res.pitch2D.format = CU_AD_FORMAT_UNSIGNED_INT32;
	res.res.pitch2D.numChannels = 1;
	res.res.pitch2D.width = 8;
	res.res.pitch2D.height = 4;
	res.res.pitch2D.pitchInBytes = pitch;
	CU_OK(cu.cuTexObjectCreate(&tex, &res, &tdesc, NULL));
	cr_assert_eq(cu.softcuda_tex2d_read(tex, 5, 3, &v, sizeof(v)), 0);
	cr_assert_eq(v, 35);
	res.res.pitch2D.pitchInBytes = 33;
	CU_ERR(cu.cuTexObjectCreate(&tex, &res, &tdesc, NULL), CUDA_ERROR_INVALID_VALUE);
	res = (CUDA_RESOURCE_DESC){ .resType = CU_RESOURCE_TYPE_LINEAR };
	res.res.linear.devPtr = p;
	res.res.linear.format = CU_AD_FORMAT_UNSIGNED_INT32;
	res.res.linear.numChannels = 1;
	res.res.linear.sizeInBytes = 8 * sizeof(uint32_t);
	CU_OK(cu.cuTexObjectCreate(&tex, &res, &tdesc, NULL));
	cr_assert_eq(cu.softcuda_tex2d_read(tex, 100, 0, &v, sizeof(v)), 0);
	cr_assert_eq(v, 7);
	res.res.linear.devPtr = p + 4;
	CU_ERR(cu.cuTexObjectCreate(&tex, &res, &tdesc, NULL), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuTexObjectCreate(&tex, &res, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, streams)
{
	unsigned flags;
	int prio;
	CUstream s, t;
	CUevent e;

	start();
	CU_OK(cu.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, -10));
	CU_OK(cu.cuStreamGetPriority(s, &prio));
	cr_assert_eq(prio, -5);
	CU_OK(cu.cuStreamGetFlags(s, &flags));
	cr_assert_eq(flags, CU_STREAM_NON_BLOCKING);
	CU_OK(cu.cuStreamCreateWithPriority(&t, 0, 3));
	CU_OK(cu.cuStreamGetPriority(t, &prio));
	cr_assert_eq(prio, 0);
	CU_ERR(cu.cuStreamCreate(&t, 0x10), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuStreamQuery(s));
	CU_OK(cu.cuStreamSynchronize(s));
	CU_OK(cu.cuStreamSynchronize(NULL));
	CU_OK(cu.cuStreamSynchronize(CU_STREAM_LEGACY));
	CU_OK(cu.cuStreamQuery(CU_STREAM_PER_THREAD));
	CU_OK(cu.cuStreamGetPriority(NULL, &prio));
	CU_OK(cu.cuEventCreate(&e, 0));
	CU_OK(cu.cuEventRecord(e, s));
	CU_OK(cu.cuStreamWaitEvent(t, e, 0));
	CU_ERR(cu.cuStreamWaitEvent(t, (CUevent)&e, 0), CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cu.cuStreamDestroy(s));
	CU_ERR(cu.cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuStreamDestroy(NULL), CUDA_ERROR_INVALID_HANDLE);
}

Test(softcuda, events_and_elapsed_time)
{
	__typeof__(cuEventElapsedTime) *elapsed_v1;
	CUevent a, b, notime, never;
	float ms = -1.0f;

	start();
	CU_OK(cu.cuEventCreate(&a, CU_EVENT_DEFAULT));
	CU_OK(cu.cuEventCreate(&b, CU_EVENT_BLOCKING_SYNC));
	CU_OK(cu.cuEventCreate(&notime, CU_EVENT_DISABLE_TIMING));
	CU_OK(cu.cuEventCreate(&never, 0));
	CU_ERR(cu.cuEventCreate(&never, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuEventCreate(&never, 0x40), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuEventRecord(a, NULL));
	usleep(2000);
	CU_OK(cu.cuEventRecordWithFlags(b, NULL, CU_EVENT_RECORD_DEFAULT));
	CU_OK(cu.cuEventRecord(notime, NULL));
	CU_OK(cu.cuEventSynchronize(b));
	CU_OK(cu.cuEventQuery(b));
	CU_OK(cu.cuEventQuery(never));
	CU_OK(cu.cuEventElapsedTime(&ms, a, b));
	cr_assert(ms >= 1.0f && ms < 10000.0f, "elapsed %f ms", ms);
	elapsed_v1 = dlsym(lib, "cuEventElapsedTime");
	cr_assert_not_null(elapsed_v1);
	CU_OK(elapsed_v1(&ms, a, a));
	cr_assert_float_eq(ms, 0.0f, 1e-9);
	CU_ERR(cu.cuEventElapsedTime(&ms, a, notime), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuEventElapsedTime(&ms, a, never), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuEventRecord(a, (CUstream)&a), CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cu.cuEventDestroy(a));
	CU_ERR(cu.cuEventQuery(a), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuEventDestroy(a), CUDA_ERROR_INVALID_HANDLE);
}

/* Graphs: memset -> add_n -> copy to host, over a buffer of GN counters. */
enum { GN = 64 };

static CUfunction add_n_func(void)
{
	CUfunction f;

	CU_OK(cu.cuModuleGetFunction(&f, load_module(TEST_KERNELS), "add_n"));
	return f;
}

static CUDA_KERNEL_NODE_PARAMS add_n_params(CUfunction f, void **args)
{
	return (CUDA_KERNEL_NODE_PARAMS){ .func = f, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
					  .blockDimX = GN, .blockDimY = 1, .blockDimZ = 1,
					  .kernelParams = args };
}

static CUDA_MEMCPY3D copy_to_host(void *dst, CUdeviceptr src)
{
	return (CUDA_MEMCPY3D){ .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = src,
				.dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = dst,
				.WidthInBytes = GN * sizeof(unsigned), .Height = 1, .Depth = 1 };
}

/* A chain of three nodes; the kernel's arguments live only during the call. */
static void add_chain(CUgraph g, CUfunction f, CUdeviceptr buf, unsigned value, unsigned amount,
		      unsigned *host, CUgraphNode node[3])
{
	CUDA_MEMSET_NODE_PARAMS set = { .dst = buf, .value = value, .elementSize = 4,
					.width = GN, .height = 1 };
	CUDA_MEMCPY3D copy = copy_to_host(host, buf);
	int n = GN;
	void *args[] = { &buf, &amount, &n };
	CUDA_KERNEL_NODE_PARAMS kp = add_n_params(f, args);

	CU_OK(cu.cuGraphAddMemsetNode(&node[0], g, NULL, 0, &set, NULL));
	CU_OK(cu.cuGraphAddKernelNode(&node[1], g, &node[0], 1, &kp));
	CU_OK(cu.cuGraphAddMemcpyNode(&node[2], g, &node[1], 1, &copy, NULL));
}

static void expect_all(const unsigned *v, unsigned want)
{
	for (int i = 0; i < GN; i++)
		cr_assert_eq(v[i], want, "[%d] = %u, expected %u", i, v[i], want);
}

/* Launches @exec with the host buffer and the device buffer scribbled over first. */
static void launch_expect(CUgraphExec exec, CUstream s, CUdeviceptr buf, unsigned *host,
			  unsigned want)
{
	memset(host, 0xee, GN * sizeof(*host));
	CU_OK(cu.cuMemsetD32(buf, 0xdddddddd, GN));
	CU_OK(cu.cuGraphLaunch(exec, s));
	expect_all(host, want);
}

Test(softcuda, graph_built_node_by_node_runs_at_each_launch)
{
	unsigned host[GN];
	CUDA_MEMSET_NODE_PARAMS set;
	CUDA_KERNEL_NODE_PARAMS kp;
	CUgraphNodeType type;
	CUDA_MEMCPY3D copy;
	CUgraphNode node[3];
	CUgraphExec exec;
	cuuint64_t flags;
	CUdeviceptr buf;
	CUfunction f;
	CUstream s;
	CUgraph g;

	start();
	f = add_n_func();
	CU_OK(cu.cuMemAlloc(&buf, GN * sizeof(unsigned)));
	CU_OK(cu.cuStreamCreate(&s, 0));
	CU_ERR(cu.cuGraphCreate(&g, 1), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuGraphCreate(&g, 0));
	add_chain(g, f, buf, 7, 3, host, node);
	CU_OK(cu.cuGraphNodeGetType(node[1], &type));
	cr_assert_eq(type, CU_GRAPH_NODE_TYPE_KERNEL);
	CU_OK(cu.cuGraphMemsetNodeGetParams(node[0], &set));
	cr_assert(set.dst == buf && set.value == 7 && set.width == GN);
	CU_OK(cu.cuGraphMemcpyNodeGetParams(node[2], &copy));
	cr_assert(copy.dstHost == host && copy.srcDevice == buf);
	/* The node keeps the values, not the caller's pointers to them. */
	CU_OK(cu.cuGraphKernelNodeGetParams(node[1], &kp));
	cr_assert(kp.func == f && !kp.kern && !kp.ctx && !kp.extra && kp.blockDimX == GN);
	cr_assert_eq(*(CUdeviceptr *)kp.kernelParams[0], buf);
	cr_assert_eq(*(unsigned *)kp.kernelParams[1], 3);
	CU_ERR(cu.cuGraphMemsetNodeGetParams(node[1], &set), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuGraphInstantiate(&exec, g, CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD),
	       CUDA_ERROR_INVALID_VALUE);
	flags = CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
		CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH;
	CU_ERR(cu.cuGraphInstantiate(&exec, g, flags), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuGraphInstantiate(&exec, g, CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY));
	CU_OK(cu.cuGraphExecGetFlags(exec, &flags));
	cr_assert_eq(flags, CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY);
	/* The executable graph is a copy: the graph may go. */
	CU_OK(cu.cuGraphDestroy(g));
	CU_ERR(cu.cuGraphDestroy(g), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuGraphNodeGetType(node[1], &type), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuGraphUpload(exec, s));
	launch_expect(exec, s, buf, host, 10);
	launch_expect(exec, NULL, buf, host, 10);
	CU_ERR(cu.cuGraphLaunch(exec, (CUstream)&s), CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cu.cuGraphExecDestroy(exec));
	CU_ERR(cu.cuGraphLaunch(exec, s), CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, exec_kernel_node_set_params_changes_only_the_exec)
{
	unsigned host[GN], amount = 5;
	int n = GN;
	void *args[] = { NULL, &amount, &n };
	CUDA_KERNEL_NODE_PARAMS kp;
	CUgraphNode node[3], other[3];
	CUgraphExec e1, e2;
	CUdeviceptr buf;
	CUfunction f;
	CUgraph g, g2;

	start();
	f = add_n_func();
	CU_OK(cu.cuMemAlloc(&buf, GN * sizeof(unsigned)));
	args[0] = &buf;
	CU_OK(cu.cuGraphCreate(&g, 0));
	add_chain(g, f, buf, 7, 3, host, node);
	CU_OK(cu.cuGraphInstantiate(&e1, g, 0));
	kp = add_n_params(f, args);
	CU_OK(cu.cuGraphExecKernelNodeSetParams(e1, node[1], &kp));
	launch_expect(e1, NULL, buf, host, 12);
	CU_OK(cu.cuGraphKernelNodeGetParams(node[1], &kp));
	cr_assert_eq(*(unsigned *)kp.kernelParams[1], 3);
	CU_OK(cu.cuGraphInstantiate(&e2, g, 0));
	launch_expect(e2, NULL, buf, host, 10);
	/* The other way round: the graph's node changes, the executable graphs do not. */
	amount = 4;
	kp = add_n_params(f, args);
	CU_OK(cu.cuGraphKernelNodeSetParams(node[1], &kp));
	launch_expect(e1, NULL, buf, host, 12);
	launch_expect(e2, NULL, buf, host, 10);
	CU_ERR(cu.cuGraphExecKernelNodeSetParams(e1, node[0], &kp), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuGraphCreate(&g2, 0));
	add_chain(g2, f, buf, 7, 3, host, other);
	CU_ERR(cu.cuGraphExecKernelNodeSetParams(e1, other[1], &kp), CUDA_ERROR_INVALID_VALUE);
	kp.blockDimX = 2048;
	CU_ERR(cu.cuGraphExecKernelNodeSetParams(e1, node[1], &kp), CUDA_ERROR_INVALID_VALUE);
	launch_expect(e1, NULL, buf, host, 12);
}

Test(softcuda, exec_update_needs_the_same_topology)
{
	CUgraphExecUpdateResultInfo info;
	CUgraphNode node[3], more[3], extra;
	CUDA_MEMCPY3D copy;
	unsigned host[GN];
	CUgraphExec exec;
	CUdeviceptr buf;
	CUfunction f;
	CUgraph g, same, bigger, loose, retyped;

	start();
	f = add_n_func();
	CU_OK(cu.cuMemAlloc(&buf, GN * sizeof(unsigned)));
	CU_OK(cu.cuGraphCreate(&g, 0));
	add_chain(g, f, buf, 7, 3, host, node);
	CU_OK(cu.cuGraphInstantiate(&exec, g, 0));
	CU_OK(cu.cuGraphCreate(&same, 0));
	add_chain(same, f, buf, 1, 8, host, more);
	CU_OK(cu.cuGraphExecUpdate(exec, same, &info));
	cr_assert_eq(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
	launch_expect(exec, NULL, buf, host, 9);
	CU_OK(cu.cuGraphDestroy(same));
	launch_expect(exec, NULL, buf, host, 9);
	/* One node more: the counts differ, no node to blame. */
	CU_OK(cu.cuGraphCreate(&bigger, 0));
	add_chain(bigger, f, buf, 7, 3, host, more);
	CU_OK(cu.cuGraphAddEmptyNode(&extra, bigger, &more[2], 1));
	CU_ERR(cu.cuGraphExecUpdate(exec, bigger, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
	cr_assert(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED && !info.errorNode);
	/* The copy depends on the memset, not on the kernel: that edge is to blame. */
	CU_OK(cu.cuGraphClone(&loose, g));
	CU_OK(cu.cuGraphGetNodes(loose, more, &(size_t){ 3 }));
	CU_OK(cu.cuGraphDestroyNode(more[2]));
	copy = copy_to_host(host, buf);
	CU_OK(cu.cuGraphAddMemcpyNode(&more[2], loose, &more[0], 1, &copy, NULL));
	CU_ERR(cu.cuGraphExecUpdate(exec, loose, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
	cr_assert_eq(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
	cr_assert(info.errorNode == more[2] && info.errorFromNode == more[0]);
	/* An empty node where the copy was. */
	CU_OK(cu.cuGraphCreate(&retyped, 0));
	add_chain(retyped, f, buf, 7, 3, host, more);
	CU_OK(cu.cuGraphDestroyNode(more[2]));
	CU_OK(cu.cuGraphAddEmptyNode(&more[2], retyped, &more[1], 1));
	CU_ERR(cu.cuGraphExecUpdate(exec, retyped, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
	cr_assert(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED &&
		  info.errorNode == more[2]);
	CU_ERR(cu.cuGraphExecUpdate(exec, retyped, NULL), CUDA_ERROR_INVALID_VALUE);
	launch_expect(exec, NULL, buf, host, 9);
}

Test(softcuda, clone_is_deep_and_destroy_node_takes_its_edges)
{
	CUgraphNode node[3], cloned[4], from[2], to[2];
	CUgraphNodeType type;
	unsigned host[GN];
	CUgraphExec exec;
	CUdeviceptr buf;
	size_t n;
	CUgraph g, clone;

	start();
	CU_OK(cu.cuMemAlloc(&buf, GN * sizeof(unsigned)));
	CU_OK(cu.cuGraphCreate(&g, 0));
	add_chain(g, add_n_func(), buf, 7, 3, host, node);
	CU_OK(cu.cuGraphClone(&clone, g));
	n = 4;
	CU_OK(cu.cuGraphGetNodes(clone, cloned, &n));
	cr_assert_eq(n, 3);
	for (int i = 0; i < 3; i++) {
		cr_assert_neq(cloned[i], node[i]);
		CU_OK(cu.cuGraphNodeGetType(cloned[i], &type));
		cr_assert_eq(type, i == 0 ? CU_GRAPH_NODE_TYPE_MEMSET :
			     i == 1 ? CU_GRAPH_NODE_TYPE_KERNEL : CU_GRAPH_NODE_TYPE_MEMCPY);
	}
	CU_OK(cu.cuGraphDestroyNode(cloned[1]));
	CU_ERR(cu.cuGraphDestroyNode(cloned[1]), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuGraphNodeGetType(cloned[1], &type), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuGraphGetNodes(clone, NULL, &n));
	cr_assert_eq(n, 2);
	CU_OK(cu.cuGraphGetEdges(clone, NULL, NULL, NULL, &n));
	cr_assert_eq(n, 0);
	/* The original is untouched. */
	n = 2;
	CU_OK(cu.cuGraphGetEdges(g, from, to, NULL, &n));
	cr_assert(n == 2 && from[0] == node[0] && to[0] == node[1] && from[1] == node[1] &&
		  to[1] == node[2]);
	CU_OK(cu.cuGraphDestroy(g));
	/* Without the kernel: the memset, then the copy, in the order they were added. */
	CU_OK(cu.cuGraphInstantiate(&exec, clone, 0));
	launch_expect(exec, NULL, buf, host, 7);
}

Test(softcuda, graph_nodes_edges_and_roots_in_order)
{
	CUgraphNode a, b, c, d, e, w, got[7], from[6], to[6];
	CUgraphEdgeData data[6], programmatic = { .type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC };
	CUDA_MEMSET_NODE_PARAMS set = { .value = 1, .elementSize = 1, .width = 16, .height = 1 };
	CUgraphExec exec;
	CUdeviceptr buf;
	CUevent ev, got_ev;
	size_t n;
	CUgraph g, other;

	start();
	CU_OK(cu.cuMemAlloc(&buf, 16));
	set.dst = buf;
	CU_OK(cu.cuEventCreate(&ev, 0));
	CU_OK(cu.cuGraphCreate(&g, 0));
	CU_OK(cu.cuGraphAddEmptyNode(&a, g, NULL, 0));
	CU_OK(cu.cuGraphAddEmptyNode(&b, g, &a, 1));
	CU_OK(cu.cuGraphAddMemsetNode(&c, g, &a, 1, &set, NULL));
	CU_OK(cu.cuGraphAddEmptyNode(&d, g, (CUgraphNode[]){ b, c }, 2));
	CU_OK(cu.cuGraphAddEventRecordNode(&e, g, NULL, 0, ev));
	CU_OK(cu.cuGraphAddEventWaitNode(&w, g, NULL, 0, ev));
	CU_OK(cu.cuGraphAddDependencies(g, &e, &d, NULL, 1));
	CU_OK(cu.cuGraphEventRecordNodeGetEvent(e, &got_ev));
	cr_assert_eq(got_ev, ev);
	CU_OK(cu.cuGraphEventWaitNodeGetEvent(w, &got_ev));
	cr_assert_eq(got_ev, ev);
	CU_ERR(cu.cuGraphEventWaitNodeGetEvent(e, &got_ev), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuGraphGetNodes(g, NULL, &n));
	cr_assert_eq(n, 6);
	n = 7;
	CU_OK(cu.cuGraphGetNodes(g, got, &n));
	cr_assert(n == 6 && got[0] == a && got[1] == b && got[2] == c && got[3] == d &&
		  got[4] == e && got[5] == w && got[6] == NULL);
	n = 2;
	CU_OK(cu.cuGraphGetNodes(g, got, &n));
	cr_assert(n == 2 && got[0] == a && got[1] == b);
	n = 4;
	CU_OK(cu.cuGraphGetRootNodes(g, got, &n));
	cr_assert(n == 3 && got[0] == a && got[1] == e && got[2] == w && got[3] == NULL);
	n = 6;
	CU_OK(cu.cuGraphGetEdges(g, from, to, data, &n));
	cr_assert_eq(n, 5);
	cr_assert(from[0] == a && to[0] == b && from[1] == a && to[1] == c && from[2] == b &&
		  to[2] == d && from[3] == c && to[3] == d && from[4] == e && to[4] == d &&
		  from[5] == NULL && to[5] == NULL);
	cr_assert(!data[0].type && !data[4].from_port);
	CU_ERR(cu.cuGraphGetEdges(g, from, NULL, NULL, &n), CUDA_ERROR_INVALID_VALUE);
	/* Refusals leave the graph as it was. */
	CU_ERR(cu.cuGraphAddDependencies(g, &a, &b, NULL, 1), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuGraphAddDependencies(g, &a, &a, NULL, 1), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuGraphAddDependencies(g, (CUgraphNode[]){ w, w }, (CUgraphNode[]){ d, d }, NULL,
					 2), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuGraphAddDependencies(g, &w, &d, &programmatic, 1), CUDA_ERROR_NOT_SUPPORTED);
	CU_ERR(cu.cuGraphAddEmptyNode(got, g, (CUgraphNode[]){ a, a }, 2),
	       CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuGraphCreate(&other, 0));
	CU_ERR(cu.cuGraphAddEmptyNode(got, other, &a, 1), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuGraphAddDependencies(other, &a, &b, NULL, 1), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuGraphAddEventRecordNode(got, g, NULL, 0, (CUevent)&ev),
	       CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cu.cuGraphGetEdges(g, NULL, NULL, NULL, &n));
	cr_assert_eq(n, 5);
	CU_OK(cu.cuGraphInstantiate(&exec, g, 0));
	CU_OK(cu.cuGraphLaunch(exec, NULL));
	cr_assert_eq(*(unsigned char *)(uintptr_t)buf, 1);
	CU_OK(cu.cuEventQuery(ev));
	/* A cycle is refused when the graph is instantiated. */
	CU_OK(cu.cuGraphAddDependencies(g, &d, &a, NULL, 1));
	CU_ERR(cu.cuGraphInstantiate(&exec, g, 0), CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, kernel_node_attributes_round_trip)
{
	CUkernelNodeAttrValue v = { 0 };
	CUgraphNode node[3], cloned[3];
	unsigned host[GN];
	CUgraphExec exec;
	CUdeviceptr buf;
	CUgraph g, clone;

	start();
	CU_OK(cu.cuMemAlloc(&buf, GN * sizeof(unsigned)));
	CU_OK(cu.cuGraphCreate(&g, 0));
	add_chain(g, add_n_func(), buf, 7, 3, host, node);
	CU_OK(cu.cuGraphKernelNodeGetAttribute(node[1], CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &v));
	cr_assert_eq(v.priority, 0);
	v.priority = -3;
	CU_OK(cu.cuGraphKernelNodeSetAttribute(node[1], CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &v));
	v = (CUkernelNodeAttrValue){ .cooperative = 1 };
	CU_OK(cu.cuGraphKernelNodeSetAttribute(node[1], CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE, &v));
	v = (CUkernelNodeAttrValue){ .clusterDim = { 1, 1, 1 } };
	CU_OK(cu.cuGraphKernelNodeSetAttribute(node[1], CU_KERNEL_NODE_ATTRIBUTE_CLUSTER_DIMENSION,
					       &v));
	CU_OK(cu.cuGraphKernelNodeGetAttribute(node[1], CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &v));
	cr_assert_eq(v.priority, -3);
	CU_OK(cu.cuGraphKernelNodeGetAttribute(node[1], CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE, &v));
	cr_assert_eq(v.cooperative, 1);
	CU_OK(cu.cuGraphKernelNodeGetAttribute(node[1], CU_KERNEL_NODE_ATTRIBUTE_MEM_SYNC_DOMAIN,
					       &v));
	cr_assert_eq(v.memSyncDomain, 0);
	v = (CUkernelNodeAttrValue){ .sharedMemCarveout = 50 };
	CU_OK(cu.cuGraphKernelNodeSetAttribute(
		node[1], CU_KERNEL_NODE_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, &v));
	v.sharedMemCarveout = 0;
	CU_OK(cu.cuGraphKernelNodeGetAttribute(
		node[1], CU_KERNEL_NODE_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, &v));
	cr_assert_eq(v.sharedMemCarveout, 50);
	CU_ERR(cu.cuGraphKernelNodeGetAttribute(node[1], CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT,
						&v), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuGraphKernelNodeGetAttribute(node[0], CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &v),
	       CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuGraphClone(&clone, g));
	CU_OK(cu.cuGraphGetNodes(clone, cloned, &(size_t){ 3 }));
	CU_OK(cu.cuGraphKernelNodeGetAttribute(cloned[1],
					       CU_KERNEL_NODE_ATTRIBUTE_CLUSTER_DIMENSION, &v));
	cr_assert(v.clusterDim.x == 1 && v.clusterDim.y == 1 && v.clusterDim.z == 1);
	CU_OK(cu.cuGraphInstantiate(&exec, g, 0));
	launch_expect(exec, NULL, buf, host, 10);
	/* Checked against the grid when instantiated: 2 blocks do not divide 1. */
	v = (CUkernelNodeAttrValue){ .clusterDim = { 2, 1, 1 } };
	CU_OK(cu.cuGraphKernelNodeSetAttribute(node[1], CU_KERNEL_NODE_ATTRIBUTE_CLUSTER_DIMENSION,
					       &v));
	CU_ERR(cu.cuGraphInstantiate(&exec, g, 0), CUDA_ERROR_INVALID_CLUSTER_SIZE);
}

/*
 * Stream capture. The fork/join of CUDA's samples: s1 sets a, s2 (forked)
 * sets b, each adds to its own, s1 joins s2 and copies both to the host.
 */
Test(softcuda, capture_of_a_fork_and_join_builds_the_graph)
{
	unsigned host[2 * GN], amount1 = 10, amount2 = 20;
	int n = GN;
	CUdeviceptr a, b;
	void *args1[] = { &a, &amount1, &n }, *args2[] = { &b, &amount2, &n };
	CUlaunchAttribute prio = { .id = CU_LAUNCH_ATTRIBUTE_PRIORITY, .value.priority = -2 };
	CUlaunchConfig cfg = { 1, 1, 1, GN, 1, 1, 0, NULL, &prio, 1 };
	CUstreamCaptureStatus status;
	CUkernelNodeAttrValue v;
	const CUgraphNode *deps;
	CUgraphNodeType type;
	CUgraphNode node[6], from[6], to[6];
	cuuint64_t id, id2;
	CUgraphExec exec;
	CUgraph g, building;
	CUevent e1, e2;
	CUstream s1, s2;
	CUfunction f;
	size_t count;

	start();
	f = add_n_func();
	CU_OK(cu.cuMemAlloc(&a, GN * sizeof(unsigned)));
	CU_OK(cu.cuMemAlloc(&b, GN * sizeof(unsigned)));
	CU_OK(cu.cuMemsetD32(a, 0xdead, GN));
	CU_OK(cu.cuMemsetD32(b, 0xdead, GN));
	memset(host, 0xee, sizeof(host));
	CU_OK(cu.cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CU_OK(cu.cuStreamCreateWithPriority(&s2, CU_STREAM_NON_BLOCKING, -1));
	CU_OK(cu.cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING));
	CU_OK(cu.cuEventCreate(&e2, CU_EVENT_DISABLE_TIMING));
	cfg.hStream = s2;
	CU_OK(cu.cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CU_OK(cu.cuMemsetD32Async(a, 1, GN, s1));
	CU_OK(cu.cuEventRecord(e1, s1));
	CU_OK(cu.cuStreamWaitEvent(s2, e1, 0));
	CU_OK(cu.cuMemsetD32Async(b, 2, GN, s2));
	CU_OK(cu.cuLaunchKernel(f, 1, 1, 1, GN, 1, 1, 0, s1, args1, NULL));
	CU_OK(cu.cuLaunchKernelEx(&cfg, f, args2, NULL));
	CU_OK(cu.cuEventRecord(e2, s2));
	CU_OK(cu.cuStreamWaitEvent(s1, e2, 0));
	CU_OK(cu.cuStreamIsCapturing(s2, &status));
	cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
	CU_OK(cu.cuStreamGetCaptureInfo(s1, &status, &id, &building, &deps, NULL, &count));
	cr_assert(status == CU_STREAM_CAPTURE_STATUS_ACTIVE && count == 2 && building);
	CU_OK(cu.cuStreamGetCaptureInfo(s2, &status, &id2, NULL, NULL, NULL, NULL));
	cr_assert_eq(id, id2);
	CU_OK(cu.cuMemcpyDtoHAsync(host, a, GN * sizeof(unsigned), s1));
	CU_OK(cu.cuMemcpyDtoHAsync(host + GN, b, GN * sizeof(unsigned), s1));
	/* Nothing ran. */
	cr_assert_eq(((unsigned *)(uintptr_t)a)[0], 0xdead);
	cr_assert_eq(((unsigned *)(uintptr_t)b)[5], 0xdead);
	cr_assert_eq(host[0], 0xeeeeeeee);
	CU_OK(cu.cuStreamEndCapture(s1, &g));
	cr_assert_eq(g, building);
	CU_OK(cu.cuStreamIsCapturing(s2, &status));
	cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_NONE);
	count = 6;
	CU_OK(cu.cuGraphGetNodes(g, node, &count));
	cr_assert_eq(count, 6);
	for (int i = 0; i < 6; i++) {
		CU_OK(cu.cuGraphNodeGetType(node[i], &type));
		cr_assert_eq(type, i < 2 ? CU_GRAPH_NODE_TYPE_MEMSET :
			     i < 4 ? CU_GRAPH_NODE_TYPE_KERNEL : CU_GRAPH_NODE_TYPE_MEMCPY);
	}
	count = 6;
	CU_OK(cu.cuGraphGetEdges(g, from, to, NULL, &count));
	cr_assert_eq(count, 6);
	cr_assert(from[0] == node[0] && to[0] == node[1]);	/* the fork */
	cr_assert(from[1] == node[0] && to[1] == node[2]);
	cr_assert(from[2] == node[1] && to[2] == node[3]);
	cr_assert(from[3] == node[2] && to[3] == node[4]);	/* the join */
	cr_assert(from[4] == node[3] && to[4] == node[4]);
	cr_assert(from[5] == node[4] && to[5] == node[5]);
	/* The launch's attributes, over the stream's priority. */
	CU_OK(cu.cuGraphKernelNodeGetAttribute(node[3], CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &v));
	cr_assert_eq(v.priority, -2);
	CU_OK(cu.cuGraphInstantiate(&exec, g, 0));
	CU_OK(cu.cuGraphLaunch(exec, s1));
	for (int i = 0; i < GN; i++)
		cr_assert(host[i] == 11 && host[GN + i] == 22, "%u %u", host[i], host[GN + i]);
	CU_OK(cu.cuMemsetD32Async(a, 5, GN, s1));
	cr_assert_eq(((unsigned *)(uintptr_t)a)[0], 5);
}

Test(softcuda, capture_of_external_event_nodes)
{
	CUgraphNode node[3];
	CUgraphNodeType type;
	CUgraphExec exec;
	CUevent e, w;
	CUstream s;
	size_t n = 3;
	CUgraph g;

	start();
	CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CU_OK(cu.cuEventCreate(&e, 0));
	CU_OK(cu.cuEventCreate(&w, 0));
	CU_ERR(cu.cuEventRecordWithFlags(e, s, CU_EVENT_RECORD_EXTERNAL), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuStreamWaitEvent(s, w, CU_EVENT_WAIT_EXTERNAL), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	CU_OK(cu.cuStreamWaitEvent(s, w, CU_EVENT_WAIT_EXTERNAL));
	CU_OK(cu.cuEventRecordWithFlags(e, s, CU_EVENT_RECORD_EXTERNAL));
	CU_OK(cu.cuStreamEndCapture(s, &g));
	CU_OK(cu.cuGraphGetNodes(g, node, &n));
	cr_assert_eq(n, 2);
	CU_OK(cu.cuGraphNodeGetType(node[0], &type));
	cr_assert_eq(type, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
	CU_OK(cu.cuGraphNodeGetType(node[1], &type));
	cr_assert_eq(type, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
	CU_OK(cu.cuGraphInstantiate(&exec, g, 0));
	CU_OK(cu.cuEventRecord(w, s));
	CU_OK(cu.cuGraphLaunch(exec, s));
	CU_OK(cu.cuEventElapsedTime(&(float){ 0 }, w, e));
}

Test(softcuda, captured_peer_copy_becomes_a_memcpy_node)
{
	static const char in[] = "captured";
	CUDA_MEMCPY3D c;
	CUgraphNodeType type;
	CUgraphExec exec;
	CUdeviceptr x, y;
	CUcontext a, b;
	CUgraphNode node;
	CUgraph g;
	CUstream s;
	size_t count = 1;

	start_two(&a, &b);
	CU_OK(cu.cuMemAlloc(&x, 64));
	CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CU_OK(cu.cuCtxSetCurrent(b));
	CU_OK(cu.cuMemAlloc(&y, 64));
	CU_OK(cu.cuMemsetD8(y, 0, 64));
	CU_OK(cu.cuCtxSetCurrent(a));
	CU_OK(cu.cuMemcpyHtoD(x, in, sizeof(in)));
	CU_OK(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CU_OK(cu.cuMemcpyPeerAsync(y, b, x, a, sizeof(in), s));
	cr_assert_eq(((const char *)(uintptr_t)y)[0], 0);	/* nothing ran */
	CU_OK(cu.cuStreamEndCapture(s, &g));
	CU_OK(cu.cuGraphGetNodes(g, &node, &count));
	cr_assert_eq(count, 1);
	CU_OK(cu.cuGraphNodeGetType(node, &type));
	cr_assert_eq(type, CU_GRAPH_NODE_TYPE_MEMCPY);
	CU_OK(cu.cuGraphMemcpyNodeGetParams(node, &c));
	cr_assert(c.srcMemoryType == CU_MEMORYTYPE_DEVICE && c.srcDevice == x);
	cr_assert(c.dstMemoryType == CU_MEMORYTYPE_DEVICE && c.dstDevice == y);
	cr_assert(c.WidthInBytes == sizeof(in) && c.Height == 1 && c.Depth == 1);
	CU_OK(cu.cuGraphInstantiate(&exec, g, 0));
	CU_OK(cu.cuGraphLaunch(exec, s));
	cr_assert_str_eq((const char *)(uintptr_t)y, in);
	/* The synchronous form is refused during a global capture, which it invalidates. */
	CU_OK(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CU_ERR(cu.cuMemcpyPeer(y, b, x, a, 8), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CU_ERR(cu.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

Test(softcuda, synchronising_during_capture_invalidates_it)
{
	CUstreamCaptureStatus status;
	CUdeviceptr p;
	CUstream s;
	CUevent e;
	CUgraph g;

	start();
	CU_OK(cu.cuMemAlloc(&p, 64));
	CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CU_OK(cu.cuEventCreate(&e, 0));
	CU_OK(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CU_OK(cu.cuMemsetD8Async(p, 1, 64, s));
	CU_ERR(cu.cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CU_OK(cu.cuStreamIsCapturing(s, &status));
	cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
	CU_ERR(cu.cuMemsetD8Async(p, 2, 64, s), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	g = (CUgraph)&g;
	CU_ERR(cu.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	cr_assert_null(g);
	CU_OK(cu.cuStreamIsCapturing(s, &status));
	cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_NONE);
	CU_OK(cu.cuMemsetD8Async(p, 3, 64, s));
	cr_assert_eq(*(unsigned char *)(uintptr_t)p, 3);
	/* An event recorded in the capture: not while it runs, nor after it. */
	CU_OK(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	CU_OK(cu.cuEventRecord(e, s));
	CU_ERR(cu.cuEventQuery(e), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CU_ERR(cu.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	CU_ERR(cu.cuEventSynchronize(e), CUDA_ERROR_CAPTURED_EVENT);
	CU_OK(cu.cuEventRecord(e, s));
	CU_OK(cu.cuEventSynchronize(e));
	/* The context, and synchronous copies while a global capture runs. */
	CU_OK(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	CU_ERR(cu.cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CU_ERR(cu.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	CU_OK(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	CU_OK(cu.cuMemcpyHtoD(p, "relaxed", 8));
	CU_OK(cu.cuStreamEndCapture(s, &g));
	CU_OK(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CU_ERR(cu.cuMemcpyHtoD(p, "global", 7), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CU_ERR(cu.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	cr_assert_str_eq((char *)(uintptr_t)p, "relaxed");
}

Test(softcuda, capture_with_an_unjoined_fork_fails)
{
	CUstreamCaptureStatus status;
	CUdeviceptr p;
	CUstream s1, s2;
	CUevent e;
	CUgraph g;

	start();
	CU_OK(cu.cuMemAlloc(&p, 64));
	CU_OK(cu.cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CU_OK(cu.cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CU_OK(cu.cuEventCreate(&e, 0));
	CU_OK(cu.cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CU_OK(cu.cuMemsetD8Async(p, 1, 32, s1));
	CU_OK(cu.cuEventRecord(e, s1));
	CU_OK(cu.cuStreamWaitEvent(s2, e, 0));
	CU_OK(cu.cuMemsetD8Async(p + 32, 2, 32, s2));
	CU_ERR(cu.cuStreamEndCapture(s2, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
	CU_ERR(cu.cuStreamDestroy(s2), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CU_OK(cu.cuStreamIsCapturing(s1, &status));
	cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
	CU_ERR(cu.cuStreamEndCapture(s1, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	/* Again, the stream left alone this time. */
	CU_OK(cu.cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CU_OK(cu.cuMemsetD8Async(p, 1, 32, s1));
	CU_OK(cu.cuEventRecord(e, s1));
	CU_OK(cu.cuStreamWaitEvent(s2, e, 0));
	CU_OK(cu.cuMemsetD8Async(p + 32, 2, 32, s2));
	CU_ERR(cu.cuStreamEndCapture(s1, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
	cr_assert_null(g);
	CU_OK(cu.cuStreamIsCapturing(s2, &status));
	cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_NONE);
	CU_OK(cu.cuStreamDestroy(s2));
}

Test(softcuda, destroying_a_context_ends_its_captures_and_graphs)
{
	CUcontext primary = start(), c;
	CUstreamCaptureStatus status;
	CUgraph g, building;
	CUgraphExec exec;
	CUdeviceptr p;
	CUstream s;
	CUevent e;

	CU_OK(cu.cuCtxCreate(&c, NULL, 0, 0));
	CU_OK(cu.cuMemAlloc(&p, 64));
	CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CU_OK(cu.cuEventCreate(&e, 0));
	CU_OK(cu.cuGraphCreate(&g, 0));
	CU_OK(cu.cuGraphInstantiate(&exec, g, 0));
	CU_OK(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CU_OK(cu.cuMemsetD8Async(p, 1, 64, s));
	CU_OK(cu.cuEventRecord(e, s));
	CU_OK(cu.cuStreamGetCaptureInfo(s, &status, NULL, &building, NULL, NULL, NULL));
	CU_ERR(cu.cuGraphDestroy(building), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cu.cuCtxDestroy(c));
	CU_OK(cu.cuCtxSetCurrent(primary));
	CU_ERR(cu.cuStreamIsCapturing(s, &status), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuGraphDestroy(building), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuGraphDestroy(g), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuGraphLaunch(exec, NULL), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuEventQuery(e), CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cu.cuCtxSynchronize());
	CU_ERR(cu.cuMemsetD8(p, 0, 1), CUDA_ERROR_INVALID_VALUE);
}

Test(softcuda, capture_refusals)
{
	CUstreamCaptureStatus status;
	const CUgraphEdgeData *edges;
	CUgraphExec exec;
	CUstream s, blocking;
	CUdeviceptr p;
	CUevent e;
	CUgraph g;

	start();
	CU_OK(cu.cuMemAlloc(&p, 64));
	CU_OK(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CU_OK(cu.cuStreamCreate(&blocking, 0));
	CU_OK(cu.cuEventCreate(&e, 0));
	CU_ERR(cu.cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
	       CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CU_ERR(cu.cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL),
	       CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CU_ERR(cu.cuStreamBeginCapture(s, (CUstreamCaptureMode)7), CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
	CU_OK(cu.cuGraphCreate(&g, 0));
	CU_OK(cu.cuGraphInstantiate(&exec, g, 0));
	CU_OK(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CU_ERR(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
	CU_ERR(cu.cuStreamGetCaptureInfo(s, &status, NULL, NULL, NULL, &edges, NULL),
	       CUDA_ERROR_INVALID_VALUE);
	CU_ERR(cu.cuGraphLaunch(exec, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CU_ERR(cu.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	/* Dependencies on work outside the capture. */
	CU_OK(cu.cuEventRecord(e, NULL));
	CU_OK(cu.cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CU_ERR(cu.cuStreamWaitEvent(s, e, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
	CU_ERR(cu.cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	/* The legacy stream would wait for a blocking stream that captures. */
	CU_OK(cu.cuStreamBeginCapture(blocking, CU_STREAM_CAPTURE_MODE_RELAXED));
	CU_ERR(cu.cuStreamIsCapturing(NULL, &status), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
	CU_OK(cu.cuStreamIsCapturing(blocking, &status));
	cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
	CU_ERR(cu.cuMemsetD8Async(p, 1, 8, NULL), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
	CU_ERR(cu.cuStreamEndCapture(blocking, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	CU_OK(cu.cuMemsetD8Async(p, 1, 8, NULL));
	CU_OK(cu.cuStreamIsCapturing(NULL, &status));
	cr_assert_eq(status, CU_STREAM_CAPTURE_STATUS_NONE);
}

static CUresult load_text(const char *text)
{
	CUmodule m;

	return cu.cuModuleLoadData(&m, text);
}

Test(softcuda, bad_module_images)
{
	char text[2 * PATH_MAX];

	start();
	CU_ERR(load_text(""), CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text("\x7f" "ELF"), CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text(".version 8\n.target sm_90\n"), CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text("// comment first\n" PTX_SM90), CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text(PTX_HEAD), CUDA_ERROR_INVALID_IMAGE);              /* no .target */
	CU_OK(load_text(PTX_SM90 "\n// nothing\n//softcuda global g 0\n"));
	CU_ERR(load_text(PTX_SM90 ".func f (4)\n"), CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text(PTX_SM90 "// softcuda kernel f 4\n"), CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text(PTX_SM90 "// softcuda global g 0\n"), CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text(PTX_SM90 "// softcuda global g 4x\n"), CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text(PTX_SM90 "// softcuda global g 4\n// softcuda global g 8\n"),
	       CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text(PTX_SM90 "// softcuda global 9g 4\n"), CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text(PTX_SM90 ".entry vec_add (8, 8, 8, 4)\n"), CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text(PTX_SM90 "// softcuda library relative.so\n"), CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text(PTX_SM90 "// softcuda library /nonexistent/k.so\n"),
	       CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text(PTX_HEAD ".target 90\n"), CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text(PTX_SM90 ".target sm_90\n"), CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text(module_text(text, sizeof(text), ".entry vec_sub (8)\n")),
	       CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(load_text(module_text(text, sizeof(text), ".entry vec_add (8, 0)\n")),
	       CUDA_ERROR_INVALID_IMAGE);
	CU_ERR(cu.cuModuleLoadData(NULL, PTX_SM90), CUDA_ERROR_INVALID_VALUE);
}

/* The driver's rules for PTX: its target and later devices, 'f' the later minors, 'a' one. */
Test(softcuda, ptx_target_rules)
{
	start();
	CU_OK(load_text(PTX_HEAD ".target sm_80\n"));
	CU_OK(load_text(PTX_HEAD ".target sm_90a\n"));
	CU_OK(load_text(PTX_HEAD ".target sm_90f\n"));
	CU_ERR(load_text(PTX_HEAD ".target sm_100\n"), CUDA_ERROR_NO_BINARY_FOR_GPU);
	CU_ERR(load_text(PTX_HEAD ".target sm_80a\n"), CUDA_ERROR_NO_BINARY_FOR_GPU);
	CU_ERR(load_text(PTX_HEAD ".target sm_80f\n"), CUDA_ERROR_NO_BINARY_FOR_GPU);
}

Test(softcuda, newer_device_runs_newer_arch)
{
	setenv("SOFTCUDA_CC", "10.0", 1);
	start();
	CU_OK(load_text(PTX_HEAD ".target sm_100\r\n// softcuda global g 8\r\n"));
	CU_OK(load_text(PTX_HEAD ".target sm_90\n"));
	CU_ERR(load_text(PTX_HEAD ".target sm_90a\n"), CUDA_ERROR_NO_BINARY_FOR_GPU);
	CU_ERR(load_text(PTX_HEAD ".target sm_120\n"), CUDA_ERROR_NO_BINARY_FOR_GPU);
}

Test(softcuda, invalid_handles_and_missing_context)
{
	CUdeviceptr p;
	CUfunction f;
	CUstream s;
	CUevent e;
	CUarray a;
	int junk;

	start();
	CU_ERR(cu.cuModuleGetFunction(&f, (CUmodule)&junk, "vec_add"), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuModuleUnload(NULL), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuFuncGetAttribute(&junk, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUfunction)&junk),
	       CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuStreamSynchronize((CUstream)&junk), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuEventSynchronize((CUevent)&junk), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuArrayDestroy((CUarray)&junk), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuTexObjectDestroy(12345), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuLibraryUnload((CUlibrary)&junk), CUDA_ERROR_INVALID_HANDLE);
	CU_ERR(cu.cuCtxPushCurrent((CUcontext)&junk), CUDA_ERROR_INVALID_CONTEXT);
	CU_OK(cu.cuCtxSetCurrent(NULL));
	CU_ERR(cu.cuMemAlloc(&p, 8), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cu.cuStreamCreate(&s, 0), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cu.cuEventCreate(&e, 0), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cu.cuArrayCreate(&a, &(CUDA_ARRAY_DESCRIPTOR){ 1, 1, CU_AD_FORMAT_FLOAT, 1 }),
	       CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(load_text(PTX_SM90), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cu.cuStreamSynchronize(NULL), CUDA_ERROR_INVALID_CONTEXT);
	CU_ERR(cu.cuMemcpyHtoD(0, &junk, 0), CUDA_ERROR_INVALID_CONTEXT);
}

Test(softcuda, error_names_and_strings)
{
	static const CUresult known[] = {
		CUDA_SUCCESS, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_MEMORY,
		CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_INVALID_CONTEXT,
		CUDA_ERROR_NO_BINARY_FOR_GPU, CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_NOT_FOUND,
		CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_ILLEGAL_ADDRESS,
		CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, CUDA_ERROR_CONTEXT_IS_DESTROYED,
		CUDA_ERROR_UNSUPPORTED_LIMIT, CUDA_ERROR_FILE_NOT_FOUND, CUDA_ERROR_UNKNOWN,
	};
	const char *s;

	load();
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		CU_OK(cu.cuGetErrorName(known[i], &s));
		cr_assert(s && !strncmp(s, "CUDA_", 5));
		CU_OK(cu.cuGetErrorString(known[i], &s));
		cr_assert(s && *s);
	}
	CU_OK(cu.cuGetErrorName(CUDA_ERROR_INVALID_HANDLE, &s));
	cr_assert_str_eq(s, "CUDA_ERROR_INVALID_HANDLE");
	s = "x";
	CU_ERR(cu.cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
	cr_assert_null(s);
	s = "x";
	CU_ERR(cu.cuGetErrorString((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
	cr_assert_null(s);
}

Test(softcuda, get_proc_address)
{
	CUdriverProcAddressQueryResult status;
	void *fn;

	load();
	CU_OK(cu.cuGetProcAddress("cuMemAlloc", &fn, 13000, 0, &status));
	cr_assert(fn == (void *)cu.cuMemAlloc && status == CU_GET_PROC_ADDRESS_SUCCESS);
	CU_OK(cu.cuGetProcAddress("cuCtxCreate", &fn, 13000, 0, &status));
	cr_assert_eq(fn, (void *)cu.cuCtxCreate);
	CU_OK(cu.cuGetProcAddress("cuInit", &fn, 12000,
				  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status));
	cr_assert_eq(fn, (void *)cu.cuInit);
	CU_ERR(cu.cuGetProcAddress("cuCtxCreate", &fn, 12000, 0, &status), CUDA_ERROR_NOT_FOUND);
	cr_assert(fn == NULL && status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	CU_OK(cu.cuGetProcAddress("cuGraphAddKernelNode", &fn, 12000, 0, &status));
	cr_assert_eq(fn, (void *)cu.cuGraphAddKernelNode);
	CU_ERR(cu.cuGetProcAddress("cuStreamGetCaptureInfo", &fn, 12020, 0, &status),
	       CUDA_ERROR_NOT_FOUND);
	cr_assert_eq(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	CU_ERR(cu.cuGetProcAddress("cuNoSuchCall", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
	cr_assert_eq(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	CU_ERR(cu.cuGetProcAddress("sd_enter", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
	CU_ERR(cu.cuGetProcAddress("malloc", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
}

Test(softcuda, fault_injection)
{
	CUmemGenericAllocationHandle h;
	CUdeviceptr p;

	setenv("SOFTCUDA_FAIL", "cuMemCreate:2,cuMemAlloc:1", 1);
	start();
	CU_ERR(cu.cuMemAlloc(&p, 8), CUDA_ERROR_UNKNOWN);
	CU_OK(cu.cuMemAlloc(&p, 8));
	CU_OK(cu.cuMemCreate(&h, GRAN, &vmm_prop, 0));
	CU_ERR(cu.cuMemCreate(&h, GRAN, &vmm_prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
	CU_OK(cu.cuMemCreate(&h, GRAN, &vmm_prop, 0));
}

/* In a fresh child: the second launch aborts the process; returning is a failure. */
static void crash_child(void)
{
	char kernels[PATH_MAX], text[2 * PATH_MAX];
	CUdeviceptr counter;
	unsigned one = 1;
	void *args[] = { &counter, &one };
	CUcontext ctx;
	CUfunction f;
	CUmodule m;

	setenv("SOFTCUDA_CRASH", "cuLaunchKernel:2", 1);
	if (try_load() || try_build_path(kernels, "tests/libsoftcuda-testkernels.so"))
		_exit(1);
	snprintf(text, sizeof(text), PTX_SM90 "// softcuda library %s\n%s", kernels, TEST_KERNELS);
	if (cu.cuInit(0) || cu.cuDevicePrimaryCtxRetain(&ctx, 0) || cu.cuCtxSetCurrent(ctx) ||
	    cu.cuModuleLoadData(&m, text) || cu.cuModuleGetFunction(&f, m, "add_to") ||
	    cu.cuMemAlloc(&counter, sizeof(unsigned)))
		_exit(2);
	if (cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL))
		_exit(3);
	cu.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
	_exit(4);
}

Test(softcuda, crash_injection, .timeout = 30)
{
	int status;
	pid_t pid;

	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid)
		crash_child();
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "status %#x", status);
}
