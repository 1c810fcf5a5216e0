/* SPDX-License-Identifier: MIT */
/*
 * zero_scan.S - the PTX of cuda/proxy/zero_scan.cu inside the proxy, NUL-terminated
 * as cuModuleLoadData() wants PTX. Assembled with -DZERO_SCAN_PTX='"path"'.
 */
	.section .rodata
	.balign 16
	.globl sc_zero_scan_ptx
	.type sc_zero_scan_ptx, @object
sc_zero_scan_ptx:
	.incbin ZERO_SCAN_PTX
	.byte 0
	.size sc_zero_scan_ptx, . - sc_zero_scan_ptx

	.section .note.GNU-stack, "", @progbits
