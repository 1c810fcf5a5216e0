/* SPDX-License-Identifier: MIT */
/*
 * The names and descriptions of CUresult values and of the proxy's requests.
 * cuGetErrorName() and cuGetErrorString() are answered by the library alone,
 * so they are called here with no cuInit() and no proxy, as an application
 * whose proxy has died would call them.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "cuda/lib/cuda_internal.h"

#define NOT_A_RESULT ((CUresult)12345)

Test(cuda_errors, result_names)
{
	cr_assert_str_eq(sc_cu_result_name(CUDA_SUCCESS), "CUDA_SUCCESS");
	cr_assert_str_eq(sc_cu_result_name(CUDA_ERROR_INVALID_VALUE), "CUDA_ERROR_INVALID_VALUE");
	cr_assert_str_eq(sc_cu_result_name(CUDA_ERROR_NOT_READY), "CUDA_ERROR_NOT_READY");
	cr_assert_str_eq(sc_cu_result_name(CUDA_ERROR_UNKNOWN), "CUDA_ERROR_UNKNOWN");
}

Test(cuda_errors, unknown_result_still_printable)
{
	const char *name = sc_cu_result_name(NOT_A_RESULT);

	cr_assert_not_null(name);
	cr_assert(strncmp(name, "CUDA_", 5) != 0, "'%s' reads like a real result", name);
}

Test(cuda_errors, get_error_name)
{
	const char *s = NULL;

	cr_assert_eq(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
	cr_assert_str_eq(s, "CUDA_ERROR_OUT_OF_MEMORY");
	cr_assert_eq(cuGetErrorName(CUDA_ERROR_INVALID_HANDLE, &s), CUDA_SUCCESS);
	cr_assert_str_eq(s, "CUDA_ERROR_INVALID_HANDLE");
}

Test(cuda_errors, get_error_string)
{
	const char *s = NULL;

	cr_assert_eq(cuGetErrorString(CUDA_SUCCESS, &s), CUDA_SUCCESS);
	cr_assert_str_eq(s, "no error");
	cr_assert_eq(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s), CUDA_SUCCESS);
	cr_assert_str_eq(s, "invalid argument");
}

/* As CUDA: an unknown value is an invalid argument, and the string is cleared. */
Test(cuda_errors, unknown_value_refused)
{
	const char *s = "stale";

	cr_assert_eq(cuGetErrorName(NOT_A_RESULT, &s), CUDA_ERROR_INVALID_VALUE);
	cr_assert_null(s);
	s = "stale";
	cr_assert_eq(cuGetErrorString(NOT_A_RESULT, &s), CUDA_ERROR_INVALID_VALUE);
	cr_assert_null(s);
}

Test(cuda_errors, null_output_refused)
{
	cr_assert_eq(cuGetErrorName(CUDA_SUCCESS, NULL), CUDA_ERROR_INVALID_VALUE);
	cr_assert_eq(cuGetErrorString(CUDA_SUCCESS, NULL), CUDA_ERROR_INVALID_VALUE);
}

/* Every value either function knows, the other knows too, under the same name. */
Test(cuda_errors, name_and_string_agree)
{
	for (int v = 0; v < 1000; v++) {
		const char *name = NULL, *text = NULL;
		CUresult rn = cuGetErrorName((CUresult)v, &name);
		CUresult rs = cuGetErrorString((CUresult)v, &text);

		cr_assert_eq(rn, rs, "value %d: name %d, string %d", v, rn, rs);
		if (rn != CUDA_SUCCESS)
			continue;
		cr_assert_str_eq(sc_cu_result_name((CUresult)v), name);
		cr_assert(strncmp(name, "CUDA_", 5) == 0, "value %d is named '%s'", v, name);
		cr_assert(text && *text, "value %d has no description", v);
	}
}

Test(cuda_errors, every_request_named)
{
	for (unsigned op = 0; op < SC_OP_COUNT; op++)
		cr_assert_str_neq(sc_op_name(op), "unnamed request", "request %u has no name", op);
	cr_assert_str_eq(sc_op_name(SC_OP_MODULE_LOAD), "MODULE_LOAD");
	cr_assert_str_eq(sc_op_name(SC_OP_COUNT), "unnamed request");
}
