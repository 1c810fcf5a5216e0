/* SPDX-License-Identifier: MIT */
/*
 * embed.S - a fatbin inside the program, for cuModuleLoadData().
 *
 * Assembled with -DFATBIN='"path/to/x.fatbin"'. The driver reads the image's
 * size from its own header, so only the start is exported. Fatbins want
 * 8-byte alignment; 16 costs nothing.
 */
	.section .rodata
	.balign 16
	.globl sample_fatbin
	.type sample_fatbin, @object
sample_fatbin:
	.incbin FATBIN
	.size sample_fatbin, . - sample_fatbin
	.byte 0

	.section .note.GNU-stack, "", @progbits
