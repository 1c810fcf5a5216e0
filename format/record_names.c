/* SPDX-License-Identifier: MIT */
/*
 * record_names.c - names of the record types this version knows.
 */
#include "format/sc_format.h"

const char *sc_record_type_name(uint32_t type)
{
	switch (type) {
	case SC_REC_PROCESS: return "process";
	case SC_REC_THREAD: return "thread";
	case SC_REC_SEGMENT: return "segment";
	case SC_REC_FD: return "fd";
	case SC_REC_SIGNALS: return "signals";
	case SC_REC_CUDA_LOG: return "cuda-log";
	case SC_REC_DEVMEM: return "devmem";
	case SC_REC_TIMERS: return "timers";
	case SC_REC_LOCKS: return "locks";
	case SC_REC_CUDA_DRIVER: return "cuda-driver";
	case SC_REC_SYSV: return "sysv-ipc";
	case SC_REC_PARENT: return "parent";
	case SC_REC_END: return "end";
	default: return NULL;
	}
}
