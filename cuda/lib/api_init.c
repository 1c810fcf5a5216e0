/* SPDX-License-Identifier: MIT */
/*
 * api_init.c - cuInit, the driver version and device queries, and what every
 * entry point does on the way in and out.
 */
#include <stdio.h>
#include <string.h>

#include "cuda/lib/cuda_internal.h"
#include "cuda/lib/managed.h"
#include "format/sc_log.h"

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static bool initialised;

bool sc_cu_initialised(void)
{
	return initialised;
}

CUresult sc_ctx_missing(void)
{
	return initialised ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult sc_cu_enter(void)
{
	if (!initialised)
		return CUDA_ERROR_NOT_INITIALIZED;
	sc_cu_lock_read();
	if (sc_cu.dead) {
		sc_cu_unlock_read();
		return CUDA_ERROR_DEVICE_UNAVAILABLE;
	}
	return CUDA_SUCCESS;
}

void sc_cu_leave(void)
{
	sc_cu_unlock_read();
}

CUresult sc_cu_unsupported(const char *name)
{
	sc_log(SC_LOG_WARN, "%s is not supported: returning CUDA_ERROR_NOT_SUPPORTED", name);
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* The generated entry points (unsupported.h): a Driver API function not implemented. */
int sc_cu_unsupported_call(const char *name)
{
	return (int)sc_cu_unsupported(name);
}

SC_CU_API CUresult CUDAAPI cuInit(unsigned int flags)
{
	CUresult r = CUDA_SUCCESS;

	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&init_lock);
	if (!initialised && sc_cu.init_error == CUDA_SUCCESS) {
		/* a call in flight: a checkpoint waits until the proxy has started */
		sc_cu_lock_read();
		r = sc_cu_start();
		sc_cu_unlock_read();
		if (r == CUDA_SUCCESS) {
			initialised = true;
			sc_cuda_hooks_install();
		}
		else
			sc_cu.init_error = r; /* as CUDA: a failed cuInit keeps failing */
	} else if (!initialised) {
		r = sc_cu.init_error;
	}
	pthread_mutex_unlock(&init_lock);
	return r;
}

/* One request with a0 in, a0 out; the common shape of the queries below. */
static CUresult query(unsigned op, uint64_t a0, uint64_t a1, uint64_t *out)
{
	struct sc_req r = { .op = op, .a = { a0, a1 } };
	CUresult res = sc_cu_enter();

	if (res != CUDA_SUCCESS)
		return res;
	res = sc_cu_call(&r);
	sc_cu_leave();
	if (res == CUDA_SUCCESS && out)
		*out = r.a[0];
	return res;
}

SC_CU_API CUresult CUDAAPI cuDriverGetVersion(int *version)
{
	uint64_t v = CUDA_VERSION;

	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	if (initialised && query(SC_OP_DRIVER_VERSION, 0, 0, &v) != CUDA_SUCCESS)
		v = CUDA_VERSION;
	*version = (int)v;
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuDeviceGetCount(int *count)
{
	uint64_t v = 0;
	CUresult r;

	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = query(SC_OP_DEVICE_COUNT, 0, 0, &v)) == CUDA_SUCCESS)
		*count = (int)v;
	return r;
}

SC_CU_API CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
	uint64_t v = 0;
	CUresult r;

	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = query(SC_OP_DEVICE_GET, (uint64_t)ordinal, 0, &v)) == CUDA_SUCCESS)
		*device = (CUdevice)v;
	return r;
}

SC_CU_API CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
	char buf[256];
	struct sc_req r = { .op = SC_OP_DEVICE_NAME, .a = { (uint64_t)dev },
			    .out = buf, .out_cap = sizeof(buf) };
	CUresult res;

	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = sc_cu_call(&r);
	sc_cu_leave();
	if (res == CUDA_SUCCESS) {
		buf[sizeof(buf) - 1] = 0;
		snprintf(name, (size_t)len, "%s", buf);
	}
	return res;
}

SC_CU_API CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib,
					       CUdevice dev)
{
	uint64_t v = 0;
	CUresult r;

	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = query(SC_OP_DEVICE_ATTR, (uint64_t)attrib, (uint64_t)dev, &v)) !=
	    CUDA_SUCCESS)
		return r;
	*pi = (int)(int64_t)v;
	sc_managed_device_attribute(attrib, pi);
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
	uint64_t v = 0;
	CUresult r;

	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = query(SC_OP_DEVICE_TOTAL_MEM, (uint64_t)dev, 0, &v)) == CUDA_SUCCESS)
		*bytes = (size_t)v;
	return r;
}

SC_CU_API CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	struct sc_req r = { .op = SC_OP_DEVICE_UUID, .a = { (uint64_t)dev },
			    .out = uuid ? uuid->bytes : NULL, .out_cap = 16 };
	CUresult res;

	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_cu_enter()) != CUDA_SUCCESS)
		return res;
	res = sc_cu_call(&r);
	sc_cu_leave();
	return res;
}

/* The first cuDeviceGetUuid, still exported under its own name. */
#undef cuDeviceGetUuid
SC_CU_API CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	return cuDeviceGetUuid_v2(uuid, dev);
}

SC_CU_API CUresult CUDAAPI cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
	CUresult r;

	if (!major || !minor)
		return CUDA_ERROR_INVALID_VALUE;
	r = cuDeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	if (r == CUDA_SUCCESS)
		r = cuDeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
	return r;
}
