/* The restorer blob's bytes, for selfckpt-restore to copy into place. */
	.section .rodata
	.balign 64
	.globl sc_restorer_blob
	.hidden sc_restorer_blob
sc_restorer_blob:
	.incbin SC_BLOB_BIN
	.globl sc_restorer_blob_end
	.hidden sc_restorer_blob_end
sc_restorer_blob_end:
	.section .note.GNU-stack,"",@progbits
