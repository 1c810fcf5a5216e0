/* SPDX-License-Identifier: MIT */
/*
 * api_hostfn.c - host functions in stream order: cuLaunchHostFunc and
 * cuStreamAddCallback.
 *
 * The function must run in the program, after the stream's earlier work and
 * before its later work. The proxy's driver would call it in the proxy, where
 * the program's code does not run; so the call waits for the stream, then
 * runs the function in the calling thread, and returns. Stream order holds;
 * what is lost is that the calling thread waits where the driver's would go
 * on (README: known limitations). In a stream capture, where the stream
 * cannot be waited for, they are refused.
 */
#include "cuda/lib/graph.h"

static CUresult host_func(CUstream stream, CUhostFn fn, void *data, bool per_thread)
{
	CUresult res;

	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_capture_refuse(stream, "cuLaunchHostFunc in a stream capture")) !=
	    CUDA_SUCCESS)
		return res;
	res = cuStreamSynchronize(per_thread && !stream ? CU_STREAM_PER_THREAD : stream);
	if (res == CUDA_SUCCESS) /* as the driver's: not called after an error */
		fn(data);
	return res;
}

static CUresult add_callback(CUstream stream, CUstreamCallback fn, void *data, unsigned flags,
			     bool per_thread)
{
	CUresult res;

	if (!fn || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if ((res = sc_capture_refuse(stream, "cuStreamAddCallback in a stream capture")) !=
	    CUDA_SUCCESS)
		return res;
	res = cuStreamSynchronize(per_thread && !stream ? CU_STREAM_PER_THREAD : stream);
	if (res == CUDA_ERROR_INVALID_HANDLE || res == CUDA_ERROR_INVALID_CONTEXT ||
	    res == CUDA_ERROR_DEINITIALIZED || res == CUDA_ERROR_NOT_INITIALIZED)
		return res; /* no stream to add it to */
	fn(stream, res, data); /* the stream's error, as the driver gives it */
	return CUDA_SUCCESS;
}

SC_CU_API CUresult CUDAAPI cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *data)
{
	return host_func(stream, fn, data, false);
}

SC_CU_API CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream stream, CUhostFn fn, void *data)
{
	return host_func(stream, fn, data, true);
}

SC_CU_API CUresult CUDAAPI cuStreamAddCallback(CUstream stream, CUstreamCallback fn, void *data,
					       unsigned int flags)
{
	return add_callback(stream, fn, data, flags, false);
}

SC_CU_API CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream stream, CUstreamCallback fn,
						    void *data, unsigned int flags)
{
	return add_callback(stream, fn, data, flags, true);
}
